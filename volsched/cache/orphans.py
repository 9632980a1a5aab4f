"""Pods of ours on a node whose PodGroup is gone (deleted while they ran), carrying the record their bind
wrote (``admitted.BOUND_UNDER``): orphans. A snapshot takes each as a pod standing alone in the queue
it was bound under, at that priority and class: its queue counts it (fair share, quotas), and reclaim
and preempt may evict it as they may any pod standing alone (a job of one pod is no gang). A stray
without a record (bound before records existed, or by someone else) stays foreign: it holds its room
and nothing counts or evicts it.

The record is asked what a PodGroup is asked (:func:`standing`): the rules of the queue it names for the
pod's namespace (``namespaceSelector``, ``priorityClasses``, ``maxPriority``), and whether its priority is
one its class gives. One they refuse (forged where no admission policy fixes records, or a rule changed
since the bind), or one not signed by the scheduler's key (``Task.record_unverified``), is not taken: the pod counts in its namespace's default queue at its own priority and
class, and is told why. Design: docs/tenancy.md "A PodGroup deleted and not made again". Pure: no I/O, no
cache state.
"""

from __future__ import annotations

from collections.abc import Mapping

from volsched.model.admitted import BOUND_UNDER, NOT_VERIFIED_WHY, BoundUnder, read_bound
from volsched.model.cluster import absent_object, copy_task
from volsched.model.tenancy import queue_refusal
from volsched.model.vocabulary import DEFAULT_QUEUE, NODE_HOLDING_STATUSES, QueueSpec, Task
from volsched.records import dataclass

#: The reason of the event on an orphan (a snapshot problem of a pod on a node: told, not refused).
REASON = "PodGroupGone"


@dataclass(frozen=True, slots=True)
class Standing:
    """Where an orphan counts, and at what priority and class: its record's (``refusal`` empty), or,
    the record refused (``refusal`` says why), its namespace's default queue at the pod's own."""

    record: BoundUnder
    queue: str
    priority: int
    priority_class: str
    refusal: str = ""


def record_of(t: Task) -> BoundUnder | None:
    """What stray ``t`` (a pod of ours on a node, its group missing) was bound under, when it holds its
    node and carries a record volsched writes; else None (it stays foreign)."""
    if t.status not in NODE_HOLDING_STATUSES or not t.annotations:
        return None
    text = t.annotations.get(BOUND_UNDER)
    return read_bound(text) if text else None


def record_refusal(
    t: Task,
    record: BoundUnder,
    *,
    queues: Mapping[str, QueueSpec],
    labels: Mapping[str, str],
    priority_classes: Mapping[str, int],
) -> str | None:
    """Why ``record`` does not hold for pod ``t`` (its own priority as its spec gives it), or None: its
    queue does not exist, or its rules refuse the pod's namespace, the record's class or priority (as
    they would a PodGroup's, ``queue_refusal``), or its priority is above what its class gives (what a
    PodGroup of that class gets; for no class, or one that does not exist, the pod's own, or 0)."""
    return refusal(
        record,
        namespace=t.namespace,
        own_priority=t.priority,
        queues=queues,
        labels=labels,
        priority_classes=priority_classes,
    )


def refusal(
    record: BoundUnder,
    *,
    namespace: str,
    own_priority: int,
    queues: Mapping[str, QueueSpec],
    labels: Mapping[str, str],
    priority_classes: Mapping[str, int],
) -> str | None:
    """:func:`record_refusal` of pods of ``namespace`` whose own priority is ``own_priority`` (the
    highest of a group's pods that hold the record a PodGroup made again is held to)."""
    queue = queues.get(record.queue)
    if queue is None:
        return f"queue {record.queue} does not exist"
    why = queue_refusal(
        queue,
        namespace=namespace,
        namespace_labels=labels,
        classes=(record.priority_class,),
        priority=record.priority,
    )
    if why is not None:
        return why
    cls = record.priority_class
    given = priority_classes.get(cls) if cls else None
    if given is not None:
        if record.priority > given:
            return f"priority {record.priority} is above the {given} its priority class {cls} gives"
        return None
    own = max(own_priority, 0)
    if record.priority > own:
        named = f"priority class {cls} does not exist" if cls else "it names no priority class"
        return f"priority {record.priority} is above the pod's own ({own}), and {named}"
    return None


def standing(
    t: Task,
    record: BoundUnder,
    *,
    queues: Mapping[str, QueueSpec],
    labels: Mapping[str, Mapping[str, str]],
    priority_classes: Mapping[str, int],
    namespace_queues: Mapping[str, str],
) -> Standing:
    """Where orphan ``t`` (bound under ``record``) counts: see :func:`record_refusal`; ``labels`` and
    ``namespace_queues``: each namespace's labels and default queue (where it counts when the record is
    refused), as the cache holds them. The snapshot builder and the cache's Queue delete check both ask
    this, with the same tables."""
    ns = t.namespace
    why = record_refusal(
        t, record, queues=queues, labels=labels.get(ns) or {}, priority_classes=priority_classes
    )
    if why is None and t.record_unverified:
        why = NOT_VERIFIED_WHY
    if why is None:
        return Standing(record, record.queue, record.priority, record.priority_class)
    return Standing(record, namespace_queues.get(ns, DEFAULT_QUEUE), t.priority, t.priority_class, why)


def orphan_task(t: Task, where: Standing) -> Task:
    """``t`` (a snapshot's shared task) as a pod standing alone (its own job key) at the priority and
    class it counts at (a copy; ``t`` itself is left as it is)."""
    out = copy_task(t)
    out.job_key = t.key
    out.priority = where.priority
    out.priority_class = where.priority_class
    return out


def problem(key: str, group: str, where: Standing, refused: Mapping[str, str]) -> tuple[str, str, str]:
    """The snapshot problem (object, reason, message) that tells orphan ``key`` (of group ``group``)
    where it counts now; ``refused``: see ``ClusterSnapshot.refused``."""
    record = where.record
    if not where.refusal:
        counts = (
            f"it counts in queue {where.queue}, the one it was bound under (priority {where.priority}), "
            "as a pod standing alone"
        )
    else:
        counts = (
            f"it counts in queue {where.queue}, its namespace's default queue, at its own priority "
            f"{where.priority}, as a pod standing alone (not in queue {record.queue} at priority "
            f"{record.priority}, as the record of its bind says: {where.refusal})"
        )
    return (
        f"Pod {key}",
        REASON,
        f"{absent_object('PodGroup', group, refused)}, and this pod runs: {counts}, which reclaim and "
        "preempt may evict (without its PodGroup, no gang of its pods is kept whole)",
    )
