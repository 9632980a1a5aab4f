"""Preempt visits queues in the session's queue order, sorted once: smaller share first, ties by
creation time, then name, in O(Q log Q) comparisons (not one rank count per queue, O(Q^2))."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.actions.preempt import Preempt
from volsched.actions.util import in_queue_order
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.session import Session
from volsched.model.vocabulary import QueueSpec

PREEMPT = 'actions: "preempt"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: proportion\n'


def created_queue(name: str, created: str) -> dict[str, Any]:
    out = queue(name)
    out["metadata"]["creationTimestamp"] = created
    return out


def session_of(objects: list[dict[str, Any]]) -> Session:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    return open_session(state.snapshot(now=1.0), load_config(text=PREEMPT))


def queue_with_work(
    name: str, *, running: int, created: str = "2024-01-01T00:00:00Z"
) -> list[dict[str, Any]]:
    """A queue asking for more than a third of a 12-cpu cluster (so each deserves 4 cpu), holding
    ``running`` cpu."""
    objs = [created_queue(name, created), podgroup(name, queue=name, min_member=1)]
    objs += [pod(f"{name}-r{i}", group=name, node="n1") for i in range(running)]
    objs += [pod(f"{name}-p{i}", group=name) for i in range(8)]
    return objs


T1, T2 = "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"
CASES = [
    pytest.param(
        [node("n1", cpu="12"), created_queue("z", T1), created_queue("a", T2), created_queue("m", T1)],
        ["m", "z", "a"],
        id="equal-shares-by-creation-then-name",
    ),
    pytest.param(
        [node("n1", cpu="12"), *queue_with_work("a", running=3), *queue_with_work("b", running=1),
         *queue_with_work("c", running=0)],
        ["c", "b", "a"],
        id="smaller-share-first",
    ),
    pytest.param(
        [node("n1", cpu="12"), *queue_with_work("b", running=2, created=T2),
         *queue_with_work("c", running=2, created=T1), *queue_with_work("a", running=2, created=T2)],
        ["c", "a", "b"],
        id="equal-shares-older-first-then-by-name",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("objects", "order"), CASES)
def test_queues_go_by_share_then_creation_then_name(objects: list[dict[str, Any]], order: list[str]) -> None:
    session = session_of(objects)
    for names in (sorted(order), sorted(order, reverse=True), order):
        assert in_queue_order(session, names) == order


def count_queue_less(session: Session) -> list[int]:
    calls = [0]
    less = session.queue_less

    def counted(left: QueueSpec, right: QueueSpec) -> bool:
        calls[0] += 1
        return less(left, right)

    session.queue_less = counted  # type: ignore[method-assign]
    return calls


def test_preempt_orders_its_queues_in_q_log_q_comparisons() -> None:
    n = 128
    names = [f"q{i:03d}" for i in range(n)]
    random.Random(7).shuffle(names)
    objects: list[dict[str, Any]] = [node("n1", cpu="1")]
    for name in names:  # each queue has a starving job; nobody runs, so nothing is evicted
        objects += [queue(name), podgroup(name, queue=name), pod(f"{name}-0", group=name, cpu="2")]
    session = session_of(objects)
    calls = count_queue_less(session)
    Preempt().execute(session)
    assert 0 < calls[0] <= n * math.ceil(math.log2(n))  # a rank count per queue takes n * (n - 1)
    assert session.result.evictions == []
