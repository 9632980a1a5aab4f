"""Pods of ours on a node whose PodGroup is gone (deleted while they ran), carrying the record their bind
wrote (``admitted.BOUND_UNDER``): orphans. A snapshot takes each as a pod standing alone in the queue
it was bound under, at that priority and class: its queue counts it (fair share, quotas), and reclaim
and preempt may evict it as they may any pod standing alone (a job of one pod is no gang). A stray
without a record (bound before records existed, or by someone else) stays foreign: it holds its room
and nothing counts or evicts it. Design: docs/tenancy.md "A PodGroup deleted and not made again".
Pure: no I/O, no cache state.
"""

from __future__ import annotations

from collections.abc import Mapping

from volsched.model.admitted import BOUND_UNDER, BoundUnder, read_bound
from volsched.model.cluster import absent_object, copy_task
from volsched.model.vocabulary import NODE_HOLDING_STATUSES, Task

#: The reason of the event on an orphan (a snapshot problem of a pod on a node: told, not refused).
REASON = "PodGroupGone"


def record_of(t: Task) -> BoundUnder | None:
    """What stray ``t`` (a pod of ours on a node, its group missing) was bound under, when it holds its
    node and carries a record volsched writes; else None (it stays foreign)."""
    if t.status not in NODE_HOLDING_STATUSES or not t.annotations:
        return None
    text = t.annotations.get(BOUND_UNDER)
    return read_bound(text) if text else None


def orphan_task(t: Task, record: BoundUnder) -> Task:
    """``t`` (a snapshot's shared task) as a pod standing alone (its own job key) at the priority and
    class it was bound under (a copy; ``t`` itself is left as it is)."""
    out = copy_task(t)
    out.job_key = t.key
    out.priority = record.priority
    out.priority_class = record.priority_class
    return out


def problem(key: str, group: str, record: BoundUnder, refused: Mapping[str, str]) -> tuple[str, str, str]:
    """The snapshot problem (object, reason, message) that tells orphan ``key`` (of group ``group``,
    bound under ``record``) what it is now; ``refused``: see ``ClusterSnapshot.refused``."""
    return (
        f"Pod {key}",
        REASON,
        f"{absent_object('PodGroup', group, refused)}, and this pod runs: it counts in queue "
        f"{record.queue}, the one it was bound under (priority {record.priority}), as a pod standing alone, "
        "which reclaim and preempt may evict (without its PodGroup, no gang of its pods is kept whole)",
    )
