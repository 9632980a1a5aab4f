"""Small ordering helpers shared by actions: heaps ordered by the session's tiered compare functions."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from volsched.framework.session import Session
from volsched.model.cluster import Job
from volsched.model.vocabulary import QueueSpec, Task


class _JobItem:
    __slots__ = ("job", "session")

    def __init__(self, session: Session, job: Job) -> None:
        self.session = session
        self.job = job

    def __lt__(self, other: _JobItem) -> bool:
        return self.session.job_less(self.job, other.job)


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


class _TaskItem:
    __slots__ = ("session", "task")

    def __init__(self, session: Session, task: Task) -> None:
        self.session = session
        self.task = task

    def __lt__(self, other: _TaskItem) -> bool:
        return self.session.task_less(self.task, other.task)


class JobQueue:
    """Jobs in the session's job order. A job's order may change only while it is out of the queue, or
    it must be handed to :meth:`requeue` before the next ``pop`` (preempt and reclaim take pods of jobs
    still waiting their turn, which lowers their share and so moves them up).

    The jobs it starts with are sorted once (jobs mostly come in creation order, which the sort takes
    in about one comparison a job) and taken from the front; jobs pushed back go into a heap, and ``pop``
    takes the lesser of the two heads: the order a heap of them all gives, with one comparison a pop
    instead of a heap's log2(n) (a session with 50,000 standalone pods spent a third of its time in
    those comparisons)."""

    def __init__(self, session: Session, jobs: Iterable[Job] = ()) -> None:
        self.session = session
        self._sorted = sorted(_JobItem(session, j) for j in jobs)
        self._sorted.reverse()  # the least last: popped from the end
        self._heap: list[_JobItem] = []

    def __len__(self) -> int:
        return len(self._sorted) + len(self._heap)

    def push(self, job: Job) -> None:
        heapq.heappush(self._heap, _JobItem(self.session, job))

    def requeue(self, jobs: Iterable[Job]) -> None:
        """Put the queued ones of ``jobs`` where their order puts them now (it changed while they were
        queued). Linear in the queue's length, once per call: each heap is rebuilt without them (a
        heap whose items changed order is no heap any more) and they are pushed again."""
        keys = {job.key for job in jobs}
        moved = [item for item in (*self._sorted, *self._heap) if item.job.key in keys]
        if not moved:
            return
        self._sorted = [item for item in self._sorted if item.job.key not in keys]  # still sorted
        self._heap = [item for item in self._heap if item.job.key not in keys]
        heapq.heapify(self._heap)
        for item in moved:
            heapq.heappush(self._heap, item)

    def pop(self) -> Job:
        if self._heap and (not self._sorted or self._heap[0] < self._sorted[-1]):
            return heapq.heappop(self._heap).job
        return self._sorted.pop().job


class TaskQueue:
    def __init__(self, session: Session, tasks: Iterable[Task] = ()) -> None:
        self.session = session
        self._heap = [_TaskItem(session, t) for t in tasks]
        heapq.heapify(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, task: Task) -> None:
        heapq.heappush(self._heap, _TaskItem(self.session, task))

    def pop(self) -> Task:
        return heapq.heappop(self._heap).task


def first(items: Iterable[Any], less: Any) -> Any:
    """The least item under a ``less(a, b)`` function (stable: the earliest of equals wins)."""
    best = None
    for item in items:
        if best is None or less(item, best):
            best = item
    return best
