"""JobQueue hands jobs out in the session's job order, computing each job's sort key once; a job whose
order changed while it waited (preempt and reclaim take pods of queued jobs) comes out where its order
puts it once requeued."""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import pytest

from volsched.actions.util import JobQueue, TaskQueue
from volsched.framework.session import Session
from volsched.model.cluster import Job


class _Order:
    """A session stand-in: job order is the number's order; counts the keys computed."""

    def __init__(self) -> None:
        self.keyed = 0

    def job_key(self) -> Callable[[int], int]:
        def key(job: int) -> int:
            self.keyed += 1
            return job

        return key

    def job_keys(self) -> Callable[[list[int]], list[int]]:
        key = self.job_key()

        def keys(jobs: list[int]) -> list[int]:
            return [key(job) for job in jobs]

        return keys


def _queue(order: _Order, jobs: list[int]) -> JobQueue:
    return JobQueue(cast(Session, order), cast(Any, jobs))


@pytest.mark.parametrize(
    ("start", "steps"),
    [
        pytest.param([3, 1, 2], ["pop", "pop", "pop"], id="only-the-start"),
        pytest.param([], [5, 2, "pop", 9, "pop", "pop"], id="only-pushed"),
        pytest.param(
            [10, 20, 30], ["pop", 15, "pop", 25, 5, "pop", "pop", "pop"], id="pushed-between-the-start"
        ),
        pytest.param([4, 8], [1, 2, 3, "pop", "pop", "pop", "pop", "pop"], id="pushed-ahead-of-the-start"),
        pytest.param([7], [3, "pop", 9, "pop", "pop"], id="one-start-pushed-ahead"),
        pytest.param([7], [9, "pop", 8, "pop", "pop"], id="one-start-pushed-behind"),
        pytest.param([7], ["pop", 2, "pop"], id="one-start-alone"),
    ],
)
def test_pops_come_in_order_as_from_one_heap(start: list[int], steps: list[int | str]) -> None:
    q = _queue(_Order(), start)
    heap = list(start)
    heapq.heapify(heap)
    got, want = [], []
    for step in steps:
        if step == "pop":
            got.append(q.pop())
            want.append(heapq.heappop(heap))
        else:
            q.push(cast(Any, step))
            heapq.heappush(heap, cast(int, step))
        assert len(q) == len(heap)
    assert got == want


@pytest.mark.parametrize("shuffled", [False, True], ids=["creation-order", "shuffled"])
def test_popping_every_job_computes_each_key_once(shuffled: bool) -> None:
    jobs = list(range(5000))
    if shuffled:
        random.Random(7).shuffle(jobs)
    order = _Order()
    q = _queue(order, jobs)
    assert [q.pop() for _ in range(len(jobs))] == sorted(jobs)
    assert order.keyed == len(jobs)


def test_a_queue_keys_the_jobs_it_starts_with_only_when_the_first_is_taken() -> None:
    """Allocate makes a queue per namespace of a backlog and takes from one first: the others' jobs
    are not keyed before the first bind."""
    order = _Order()
    q = _queue(order, [3, 1, 2])
    q.push(cast(Any, 0))
    assert order.keyed == 1 and len(q) == 4
    assert q.pop() == 0 and order.keyed == 4
    assert [q.pop() for _ in range(3)] == [1, 2, 3] and order.keyed == 4


@dataclass(frozen=True)
class Named:
    key: str


class ShareOrder:
    """Stands in for the session: jobs in order of a share the test changes, then by key."""

    def __init__(self, shares: dict[str, float]) -> None:
        self.shares = shares

    def job_key(self) -> Callable[[Any], Any]:
        return lambda job: (self.shares[job.key], job.key)

    def job_keys(self) -> Callable[[list[Any]], list[Any]]:
        key = self.job_key()
        return lambda jobs: [key(job) for job in jobs]


CASES = [
    pytest.param({}, ["a", "b", "c", "d", "e", "f"], id="nothing-changed"),
    pytest.param({"e": 0.05}, ["e", "a", "b", "c", "d", "f"], id="a-sorted-job-moves-up"),
    pytest.param({"d": 0.05, "b": 0.9}, ["d", "a", "c", "e", "f", "b"], id="a-pushed-job-moves-up-another-down"),
    pytest.param({"a": 0.7, "c": 0.0}, ["c", "b", "d", "e", "a", "f"], id="the-heads-change-places"),
]  # fmt: skip


@pytest.mark.parametrize(("changed", "order"), CASES)
def test_requeued_jobs_come_out_where_their_order_puts_them_now(
    changed: dict[str, float], order: list[str]
) -> None:
    shares = {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "e": 0.5, "f": 0.8}
    session = ShareOrder(shares)
    jobs = {k: Named(k) for k in shares}
    queue = JobQueue(cast(Session, session), cast(list[Job], [jobs[k] for k in "face"]))  # sorted once
    for k in "db":
        queue.push(cast(Job, jobs[k]))  # pushed back: the heap
    shares.update(changed)
    queue.requeue(cast(list[Job], [jobs[k] for k in changed]))
    assert [queue.pop().key for _ in range(len(queue))] == order


@pytest.mark.parametrize(
    ("start", "steps"),
    [
        pytest.param([3, 1, 2], [], id="only-the-start"),
        pytest.param([], [5, 2, 9], id="only-pushed"),
        pytest.param([10, 20, 30], ["pop", 15, 5, 25], id="pushed-among-the-start"),
        pytest.param([], [], id="empty"),
    ],
)
def test_pop_all_hands_out_what_pops_one_by_one_would(start: list[int], steps: list[int | str]) -> None:
    q, twin = _queue(_Order(), start), _queue(_Order(), start)
    for step in steps:
        for queue in (q, twin):
            if step == "pop":
                queue.pop()
            else:
                queue.push(cast(Any, step))
    want = [twin.pop() for _ in range(len(twin))]
    assert q.pop_all() == want
    assert len(q) == 0


def test_a_queue_of_one_job_hands_it_out_without_asking_its_key() -> None:
    order = _Order()
    q = _queue(order, [7])
    assert q.pop_all() == [7] and order.keyed == 0
    q = _queue(order, [7])
    assert q.pop() == 7 and order.keyed == 0
    q = _queue(order, [7])
    q.push(3)  # another to compare with: both keyed
    assert [q.pop(), q.pop()] == [3, 7] and order.keyed == 2


class _TaskOrder:
    """A session stand-in for tasks: the task order is the number's order; counts the keys computed."""

    def __init__(self) -> None:
        self.keyed = 0

    def task_key(self) -> Callable[[int], int]:
        def key(task: int) -> int:
            self.keyed += 1
            return task

        return key


@pytest.mark.parametrize(
    ("start", "pushed", "want", "keyed"),
    [
        ([7], [], [7], 0),
        ([7], [3], [3, 7], 2),
        ([7], [9, 1], [1, 7, 9], 3),
        ([5, 2], [4], [2, 4, 5], 3),
        ([], [6, 2], [2, 6], 2),
    ],
)
def test_a_task_queue_of_one_task_hands_it_out_without_asking_its_key(
    start: list[int], pushed: list[int], want: list[int], keyed: int
) -> None:
    order = _TaskOrder()
    q = TaskQueue(cast(Session, order), cast(Any, start))
    for t in pushed:
        q.push(cast(Any, t))
    assert [q.pop() for _ in range(len(q))] == want and order.keyed == keyed
