"""JobQueue hands jobs out in the session's job order, with about one comparison a job."""

from __future__ import annotations

import heapq
import random
from typing import Any, cast

import pytest

from volsched.actions.util import JobQueue
from volsched.framework.session import Session


class _Order:
    """A session stand-in: job order is the number's order; counts the comparisons."""

    def __init__(self) -> None:
        self.compared = 0

    def job_less(self, left: int, right: int) -> bool:
        self.compared += 1
        return left < right


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
def test_popping_every_job_compares_each_about_once(shuffled: bool) -> None:
    jobs = list(range(5000))
    if shuffled:
        random.Random(7).shuffle(jobs)
    order = _Order()
    q = _queue(order, jobs)
    assert [q.pop() for _ in range(len(jobs))] == sorted(jobs)
    # A heap takes about log2(n) = 12 comparisons a pop here; sorted input costs one a job.
    limit = 2 * len(jobs) if not shuffled else 14 * len(jobs)
    assert order.compared <= limit
