"""proportion's two per-turn answers, asked by allocate for every job turn and every task: whether a queue
is overused (at its limit in every share dimension where it has a limit or holds something) and whether
it may take one more task (within its limit and every realCapability on its path), with the reason in
numbers when not."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.session import Session

Obj = dict[str, Any]
CONFIG = 'actions: "allocate"\ntiers:\n- plugins: [{name: gang}, {name: proportion}]\n'


def session_of(objects: list[Obj]) -> Session:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    return open_session(state.snapshot(now=1.0), load_config(text=CONFIG))


def work(q: str, *, running: int, pending: int, cpu: str = "1", memory: str | None = None) -> list[Obj]:
    """``running`` pods of queue ``q`` on n1 and ``pending`` more, each asking ``cpu`` (and ``memory``)."""
    return [
        *(pod(f"{q}-r{i}", queue=q, node="n1", cpu=cpu, memory=memory) for i in range(running)),
        *(pod(f"{q}-p{i}", queue=q, cpu=cpu, memory=memory) for i in range(pending)),
    ]


OVERUSED = [
    pytest.param(
        [node("n1", cpu="8"), queue("q", capability={"cpu": "2"}), *work("q", running=2, pending=2)],
        "proportion: queue q holds its deserved share (cpu allocated 2 >= deserved 2)",
        id="at-its-capability-in-the-only-dimension-it-uses",
    ),
    pytest.param(
        [node("n1", cpu="8"), queue("q", capability={"cpu": "2"}), *work("q", running=1, pending=3)],
        None,
        id="below-its-capability",
    ),
    pytest.param(
        [node("n1", cpu="8", memory="8Gi"), queue("q", capability={"cpu": "2"}),
         *work("q", running=2, pending=2, memory="1Gi")],
        None,
        id="at-its-cpu-capability-but-below-its-deserved-memory",
    ),
    pytest.param(
        [node("n1", cpu="8", memory="8Gi"), queue("q", capability={"cpu": "2", "memory": "2Gi"}),
         *work("q", running=2, pending=2, memory="1Gi")],
        "proportion: queue q holds its deserved share (cpu allocated 2 >= deserved 2)",
        id="at-its-limit-in-every-dimension-names-the-first",
    ),
    pytest.param(
        [node("n1", cpu="8"), queue("q"), *work("q", running=0, pending=0)],
        None,
        id="nothing-deserved-nothing-held",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("objects", "reason"), OVERUSED)
def test_a_queue_is_overused_only_at_its_limit_in_every_dimension_that_counts(
    objects: list[Obj], reason: str | None
) -> None:
    session = session_of(objects)
    status = session.overused(session.queues["q"])
    assert (status.render() if status else None) == reason


def short_gang(q: str) -> list[Obj]:
    """PodGroup g of queue ``q``, minMember 3, with 2 pods running on n1 and none pending: admitted and
    short of minMember, so proportion completes it, and a job no session changes (the settled run's)."""
    return [
        podgroup("g", queue=q, min_member=3, phase="Running"),
        *(pod(f"g-{i}", group="g", node="n1", phase="Running") for i in range(2)),
    ]


@pytest.mark.parametrize(
    ("objects", "reason"),
    [
        pytest.param(
            [node("n1", cpu="8"), queue("q", capability={"cpu": "2"}), *short_gang("q"), pod("p", queue="q")],
            None,
            id="its-own-gang-is-completed",
        ),
        pytest.param(
            [node("n1", cpu="8"), queue("q", capability={"cpu": "2"}), queue("q2"), *short_gang("q2"),
             *work("q", running=2, pending=1)],
            "proportion: queue q holds its deserved share (cpu allocated 2 >= deserved 2)",
            id="another-queues-gang-is-not-its-own",
        ),
    ],
)  # fmt: skip
def test_a_queue_at_its_share_is_not_overused_while_a_gang_of_the_settled_run_is_short_of_min_member(
    objects: list[Obj], reason: str | None
) -> None:
    """An admitted gang short of minMember keeps its queue open for it (it is completed past the
    queue's share), found among the settled run's jobs as among the others."""
    session = session_of(objects)
    assert [j.key for j in session.ledger.settled().committed] == ["default/g"]
    status = session.overused(session.queues["q"])
    assert (status.render() if status else None) == reason


ALLOCATABLE = [
    pytest.param(
        [node("n1", cpu="8"), queue("q", capability={"cpu": "3"}), *work("q", running=2, pending=2)],
        None,
        id="one-more-fits-the-capability",
    ),
    pytest.param(
        [node("n1", cpu="8"), queue("q", capability={"cpu": "2.5"}), *work("q", running=2, pending=2)],
        "proportion: queue q would exceed deserved cpu 2.5 (allocated 2 + request 1)",
        id="one-more-would-pass-the-capability",
    ),
    pytest.param(
        [node("n1", cpu="8", memory="8Gi"), queue("q", capability={"memory": "2Gi"}),
         *work("q", running=2, pending=2, memory="1Gi")],
        "proportion: queue q would exceed deserved memory 2Gi (allocated 2Gi + request 1Gi)",
        id="memory-refuses-when-cpu-would-fit",
    ),
    pytest.param(
        [node("n1", cpu="8"), queue("parent", capability={"cpu": "2"}), queue("q", parent="parent"),
         *work("q", running=2, pending=2)],
        "proportion: queue q would exceed deserved cpu 2 (allocated 2 + request 1)",
        id="the-parents-capability-bounds-the-leaf",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("objects", "reason"), ALLOCATABLE)
def test_a_queue_takes_a_task_only_within_its_limit_and_capabilities(
    objects: list[Obj], reason: str | None
) -> None:
    session = session_of(objects)
    task = session.jobs["default/q-p0"].tasks["default/q-p0"]
    status = session.allocatable(session.queues["q"], task)
    assert (status.render() if status else None) == reason
