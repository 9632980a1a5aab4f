"""Pods of ours on a node whose PodGroup is gone (deleted while they ran): orphans. One carrying the record
its bind wrote (``admitted.BOUND_UNDER``) counts as a pod standing alone in the queue it was bound under,
at that priority and class: its queue counts it (fair share, quotas), and reclaim and preempt may evict it
as they may any pod standing alone (a job of one pod is no gang).

The record is asked what a PodGroup is asked (:func:`standing`): the rules of the queue it names for the
pod's namespace (``namespaceSelector``, ``priorityClasses``, ``maxPriority``), and whether its priority is
one its class gives. One they refuse (forged where no admission policy fixes records, or a rule changed
since the bind), one not signed by the scheduler's key (``Task.record_unverified``), and a pod holding its
node with no record the cache took (:data:`NO_RECORD`: its record removed, a pod made on a node, or bound
before records existed) are not taken: the pod counts in its namespace's default queue at its own priority
and class, and is told why. Pods of other schedulers stay foreign. Design: docs/tenancy.md "A PodGroup
deleted and not made again". Pure: no I/O, no cache state.
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


#: What :func:`record_of` gives a stray that holds its node with no record the cache took: none (removed
#: by its tenant, or never written: a pod made on a node, or bound before records existed), or one that is
#: not what volsched writes. It counts as one whose record is refused (:data:`NO_RECORD_WHY`). No record
#: read is this one (a record names a queue).
NO_RECORD = BoundUnder(queue="", priority_class="", priority=0, min_member=1, uid="")
#: Why such a stray counts in its namespace's default queue.
NO_RECORD_WHY = (
    "it carries no record of a bind by volsched: removed, or never written, as on a pod made on its node "
    "or bound before records existed"
)


def bound_record(t: Task) -> BoundUnder | None:
    """The record a stray ``t`` (a pod of ours on a node, its group missing) was bound under, when it
    holds its node and carries one volsched writes; else None."""
    if t.status not in NODE_HOLDING_STATUSES or not t.annotations:
        return None
    text = t.annotations.get(BOUND_UNDER)
    return read_bound(text) if text else None


def record_of(t: Task) -> BoundUnder | None:
    """Where stray ``t`` is an orphan: its :func:`bound_record`, or :data:`NO_RECORD` when it holds its
    node without one (it counts in its namespace's default queue all the same); None when it holds no
    node (finished: it holds nothing, and stays foreign). Before (a pod with its record removed, or made
    on its node), such a pod was foreign: it held its room, no queue counted it, nothing evicted it."""
    if t.status not in NODE_HOLDING_STATUSES:
        return None
    record = bound_record(t)
    return NO_RECORD if record is None else record


def unproven(t: Task, record: BoundUnder) -> bool:
    """Whether orphan ``t``'s ``record`` (:func:`record_of`) proves no bind by volsched: none
    (:data:`NO_RECORD`), or one not verified (``Task.record_unverified``). Such an orphan takes no PodGroup's
    name (``volsched.cache.names``), nor joins one named like it: while a PodGroup of its own key is in
    force it stays foreign, as it was before it counted (a pod joins a PodGroup by naming it)."""
    return t.record_unverified or record == NO_RECORD


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
    if record == NO_RECORD:
        why: str | None = NO_RECORD_WHY
    else:
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
    elif record == NO_RECORD:
        counts = (
            f"it counts in queue {where.queue}, its namespace's default queue, at its own priority "
            f"{where.priority}, as a pod standing alone ({where.refusal})"
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
