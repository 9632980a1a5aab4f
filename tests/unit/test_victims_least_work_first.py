"""preempt and reclaim take, of the victims the plugins name and their task order does not tell apart
(same queue, same priority), the pod whose eviction throws away least work first: what it has run times
its size; then the youngest. One preempt session at a known clock: n1 (2 cpu) runs two low-priority
pods of one queue, a high-priority pod needs one cpu of it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, priority_class, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config, make_actions
from volsched.framework.runner import close_session, open_session
from volsched.simulate.documents import iso

Obj = dict[str, Any]
NOW = 1_000_000.0
MIN = 60.0


def low(name: str, *, created: float, ran: float | None) -> Obj:
    """A low-priority 1-cpu pod on n1, created ``created`` ago, that has run ``ran`` (None: not started)."""
    obj = pod(name, ns="ns", cpu="1", node="n1", queue="q", priority_class="low", created=iso(NOW - created))
    if ran is not None:
        obj["status"]["startTime"] = iso(NOW - ran)
    return obj


def victims(first: Obj, second: Obj) -> list[str]:
    objects = [
        node("n1", cpu="2"),
        queue("q"),
        priority_class("low", 1),
        priority_class("high", 100),
        first,
        second,
        pod("hi", ns="ns", cpu="1", queue="q", priority_class="high", created=iso(NOW)),
    ]
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    config = load_config(
        text='actions: "enqueue, allocate, preempt"\ntiers:\n- plugins: [{name: priority}, {name: gang, enablePreemptable: false}, {name: predicates}]\n'
    )
    session = open_session(state.snapshot(now=NOW), config)
    for action in make_actions(config):
        action.execute(session)
    return [e.pod for e in close_session(session).evictions]


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        pytest.param(low("older", created=60 * MIN, ran=2 * MIN), low("younger", created=30 * MIN, ran=30 * MIN),
                     ["ns/older"], id="the-one-that-ran-least-goes-though-created-first"),
        pytest.param(low("older", created=60 * MIN, ran=20 * MIN), low("younger", created=30 * MIN, ran=20 * MIN),
                     ["ns/younger"], id="equal-work-the-youngest-goes"),
        pytest.param(low("older", created=60 * MIN, ran=None), low("younger", created=30 * MIN, ran=30 * MIN),
                     ["ns/older"], id="a-pod-not-started-throws-away-nothing"),
    ],
)  # fmt: skip
def test_the_victim_is_the_pod_whose_eviction_throws_away_least_work(
    first: Obj, second: Obj, expected: list[str]
) -> None:
    assert victims(first, second) == expected
