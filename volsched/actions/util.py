"""Small ordering helpers shared by actions: heaps ordered by the session's tiered orders (as sort keys)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

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

    Each job's sort key (``Session.job_key``) is computed once when it enters (and again when it is
    requeued). The jobs it starts with are sorted once (jobs mostly come in creation order, which the
    sort takes in about one comparison a job) and taken from the front; jobs pushed back go into a
    heap, and ``pop`` takes the lesser of the two heads: the order a heap of them all gives."""

    def __init__(self, session: Session, jobs: Iterable[Job] = ()) -> None:
        self._key = session.job_key()
        key = self._key
        self._sorted = sorted([(key(j), j) for j in jobs], key=_first, reverse=True)  # the least last
        self._heap: list[tuple[Any, Job]] = []

    def __len__(self) -> int:
        return len(self._sorted) + len(self._heap)

    def push(self, job: Job) -> None:
        heapq.heappush(self._heap, (self._key(job), job))

    def requeue(self, jobs: Iterable[Job]) -> None:
        """Put the queued ones of ``jobs`` where their order puts them now (it changed while they were
        queued). Linear in the queue's length, once per call: each heap is rebuilt without them (a
        heap whose items changed order is no heap any more) and they are pushed again."""
        keys = {job.key for job in jobs}
        moved = [job for _, job in (*self._sorted, *self._heap) if job.key in keys]
        if not moved:
            return
        self._sorted = [item for item in self._sorted if item[1].key not in keys]  # still sorted
        self._heap = [item for item in self._heap if item[1].key not in keys]
        heapq.heapify(self._heap)
        for job in moved:
            self.push(job)

    def pop(self) -> Job:
        if self._heap and (not self._sorted or self._heap[0][0] < self._sorted[-1][0]):
            return heapq.heappop(self._heap)[1]
        return self._sorted.pop()[1]


class TaskQueue:
    """Tasks in the session's task order, each task's key computed once."""

    def __init__(self, session: Session, tasks: Iterable[Task] = ()) -> None:
        self._key = session.task_key()
        key = self._key
        self._heap = [(key(t), t) for t in tasks]
        heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, task: Task) -> None:
        heapq.heappush(self._heap, (self._key(task), task))

    def pop(self) -> Task:
        return heapq.heappop(self._heap)[1]


def _first(item: tuple[Any, Any]) -> Any:
    return item[0]


def first_queue(session: Session, names: Iterable[str]) -> str:
    """The queue of ``names`` that comes first in the session's queue order now (``queue_less``, whose
    tie-break by creation time, then name, tells distinct queues apart)."""
    return min(names, key=lambda name: _QueueItem(session, session.queues[name]))


def first_namespace(session: Session, namespaces: Iterable[str]) -> str:
    """The namespace that comes first in the session's namespace order now (stable: the earliest of
    equals wins; the order's tie-break by name makes keys of distinct namespaces differ)."""
    return min(namespaces, key=session.namespace_key)
