"""Small ordering helpers shared by actions: heaps ordered by the session's tiered orders (as sort keys)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable
from operator import itemgetter
from typing import Any

from volsched.actions import kept
from volsched.framework.session import Session
from volsched.model.cluster import Job
from volsched.model.vocabulary import QueueSpec, Task


class _QueueItem:
    __slots__ = ("queue", "session")

    def __init__(self, session: Session, queue: QueueSpec) -> None:
        self.session = session
        self.queue = queue

    def __lt__(self, other: _QueueItem) -> bool:
        return self.session.queue_less(self.queue, other.queue)


def in_queue_order(session: Session, names: Iterable[str]) -> list[str]:
    """Queue ``names`` in the session's queue order as it stands now, sorted once (O(Q log Q)
    comparisons). ``queue_less`` breaks the plugins' ties by creation time, then name, so the order is
    total and the same every run."""
    return sorted(names, key=lambda name: _QueueItem(session, session.queues[name]))


class JobQueue:
    """Jobs in the session's job order. A job's order may change only while it is out of the queue, or
    it must be handed to :meth:`requeue` before the next ``pop`` (preempt and reclaim take pods of jobs
    still waiting their turn, which lowers their share and so moves them up).

    Each job's sort key (``Session.job_key``) is computed once: for the jobs it starts with, when the
    first is taken, for the others when they enter or are requeued. Keyed at the first pop, the jobs
    it starts with have the keys they had when it was made: a job's key reads only the job's own
    tasks (``add_job_key_fn``'s contract, which priority, gang and drf keep: a priority, a count of
    members, a share of what the job holds of the cluster's fixed total), and no action changes a
    waiting job's tasks without requeueing it (allocate and backfill place the job just taken; preempt
    and reclaim requeue the jobs they take pods from). Allocate makes one
    queue per namespace of a backlog and takes from one of them first: its first bind waits for one
    namespace's jobs to be keyed and sorted, not every namespace's. The jobs it starts with are
    sorted once (jobs mostly come in creation order, which the sort takes in about one comparison a
    job) and taken from the front; jobs pushed back go into a heap, and ``pop`` takes the lesser of
    the two heads: the order a heap of them all gives."""

    def __init__(self, session: Session, jobs: Iterable[Job] = ()) -> None:
        self._session = session
        self._made_key: Callable[[Job], Any] | None = None
        #: The jobs it started with, until the first is taken (then keyed and sorted into ``_sorted``).
        self._start = list(jobs)
        self._sorted: list[tuple[Any, Job]] = []
        self._heap: list[tuple[Any, Job]] = []

    def _key(self, job: Job) -> Any:
        key = self._made_key
        if key is None:
            key = self._made_key = self._session.job_key()
        return key(job)

    def _sort(self) -> None:
        listed, self._start = self._start, []
        if len(listed) == 1:  # alone, it is first whatever its key: keyed only if another job comes
            self._sorted = [(_UNKEYED, listed[0])]
            return
        # the least last (keys computed over the list at once, as ``self._key`` makes them one by one)
        keys = kept.job_keys(self._session)(listed)
        self._sorted = sorted(zip(keys, listed, strict=True), key=_FIRST, reverse=True)

    def _keyed(self) -> None:
        """The one job the queue started with keyed, now that it is compared with another."""
        if self._sorted and self._sorted[-1][0] is _UNKEYED:
            job = self._sorted[-1][1]
            self._sorted[-1] = (self._key(job), job)

    def __len__(self) -> int:
        return len(self._start) + len(self._sorted) + len(self._heap)

    def push(self, job: Job) -> None:
        heapq.heappush(self._heap, (self._key(job), job))

    def requeue(self, jobs: Iterable[Job]) -> None:
        """Put the queued ones of ``jobs`` where their order puts them now (it changed while they were
        queued). Linear in the queue's length, once per call with jobs (none: nothing is done): each heap
        is rebuilt without them (a heap whose items changed order is no heap any more) and they are
        pushed again."""
        if self._start:
            self._sort()
        keys = {job.key for job in jobs}
        if not keys:  # (preempt's every job that gave nothing: the queue is not walked)
            return
        moved = [job for _, job in (*self._sorted, *self._heap) if job.key in keys]
        if not moved:
            return
        self._sorted = [item for item in self._sorted if item[1].key not in keys]  # still sorted
        self._heap = [item for item in self._heap if item[1].key not in keys]
        heapq.heapify(self._heap)
        for job in moved:
            self.push(job)

    def pop(self) -> Job:
        if self._start:
            self._sort()
        if self._heap:
            self._keyed()
        if self._heap and (not self._sorted or self._heap[0][0] < self._sorted[-1][0]):
            return heapq.heappop(self._heap)[1]
        return self._sorted.pop()[1]

    def pop_all(self) -> list[Job]:
        """Every job left, in the order ``pop`` would hand them out one by one; the queue is empty after."""
        if self._start:
            self._sort()
        if not self._heap:
            out = [job for _, job in reversed(self._sorted)]
            self._sorted = []
            return out
        return [self.pop() for _ in range(len(self))]


class TaskQueue:
    """Tasks in the session's task order, each task's key computed once."""

    def __init__(self, session: Session, tasks: Iterable[Task] = ()) -> None:
        self._session = session
        self._made_key: Callable[[Task], Any] | None = None
        listed = list(tasks)
        if len(listed) == 1:  # alone, it is first whatever its key: keyed only if another task comes
            self._heap: list[tuple[Any, Task]] = [(_UNKEYED, listed[0])]
            return
        key = self._key
        self._heap = [(key(t), t) for t in listed]
        heapq.heapify(self._heap)

    def _key(self, task: Task) -> Any:
        key = self._made_key
        if key is None:
            key = self._made_key = self._session.task_key()
        return key(task)

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, task: Task) -> None:
        heap = self._heap
        if heap and heap[0][0] is _UNKEYED:  # (the one task it started with, alone until now)
            heap[0] = (self._key(heap[0][1]), heap[0][1])
        heapq.heappush(heap, (self._key(task), task))

    def pop(self) -> Task:
        return heapq.heappop(self._heap)[1]


class NamespaceOrder:
    """Namespaces in the session's namespace order as it stands now, for a loop that takes the first one
    turn after turn: a heap of their keys, refreshed with the namespaces whose tasks took or gave back
    resources since the last look (``Session.namespaces_changed``: the only keys that change), instead
    of every namespace's key read every turn. ``first`` answers what :func:`first_namespace` answers
    (keys of distinct namespaces differ, so the least is one namespace). Where a plugin orders
    namespaces by comparator, whose answer may change with any placement, ``first`` asks every key as
    :func:`first_namespace` does."""

    def __init__(self, session: Session, names: Iterable[str] = ()) -> None:
        self.session = session
        self._hold = session.namespace_keys_hold()
        _, self._seen = session.namespaces_changed()
        #: The key each namespace in the order has now (a heap entry with another key is stale), or
        #: ``_UNKEYED``: not asked yet (one namespace alone is first whatever its key).
        self._keys: dict[str, Any] = {}
        self._heap: list[tuple[Any, str]] = []
        for ns in names:
            self.add(ns)

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, ns: str) -> None:
        if ns not in self._keys:
            self._keys[ns] = _UNKEYED

    def discard(self, ns: str) -> None:
        """``ns`` leaves the order (its heap entries are dropped when they come up)."""
        self._keys.pop(ns, None)

    def first(self) -> str:
        keys = self._keys
        if not self._hold or len(keys) == 1:
            return first_namespace(self.session, keys)
        for ns, key in keys.items():
            if key is _UNKEYED:
                key = keys[ns] = self.session.namespace_key(ns)
                heapq.heappush(self._heap, (key, ns))
        changed, self._seen = self.session.namespaces_changed(self._seen)
        for ns in changed:
            held = keys.get(ns, _GONE)
            if held is not _GONE:
                key = self.session.namespace_key(ns)
                if key is not held:
                    keys[ns] = key
                    heapq.heappush(self._heap, (key, ns))
        heap = self._heap
        while keys.get(heap[0][1], _GONE) is not heap[0][0]:
            heapq.heappop(heap)
        return heap[0][1]


#: Not a key.
_GONE = object()
#: A key not asked for yet (the queue's only job, or the order's only namespace: first whatever it is).
_UNKEYED = object()


#: The first of a pair (a sort key called by C, not a Python function per item).
_FIRST = itemgetter(0)


def first_queue(session: Session, names: Collection[str]) -> str:
    """The queue of ``names`` that comes first in the session's queue order now (``queue_less``, whose
    tie-break by creation time, then name, tells distinct queues apart). One queue is first without
    asking (a backlog in one queue asks once a job otherwise)."""
    if len(names) == 1:
        return next(iter(names))
    return min(names, key=lambda name: _QueueItem(session, session.queues[name]))


def first_namespace(session: Session, namespaces: Collection[str]) -> str:
    """The namespace that comes first in the session's namespace order now (stable: the earliest of
    equals wins; the order's tie-break by name makes keys of distinct namespaces differ). One
    namespace is first without asking."""
    if len(namespaces) == 1:
        return next(iter(namespaces))
    return min(namespaces, key=session.namespace_key)
