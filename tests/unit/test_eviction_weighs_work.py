"""minruntime's ``weighWork`` alone: a running pod is a victim only if the work its eviction throws away
(what it ran times its size; for a pod whose gang then breaks, what the whole gang ran) is no more than
the wait it saves the pending pod (until room frees by itself, by expected ends, times its size). One
preempt session each, at a known clock, with the minimum run time and protectFinishing off."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, priority_class, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config, make_actions
from volsched.framework.runner import close_session, open_session
from volsched.simulate.documents import iso

Obj = dict[str, Any]
NOW = 1_000_000.0
MIN = 60.0
EXPECTED = "scheduling.volsched.io/expected-runtime"


def running(
    name: str, *, node_name: str, cpu: str, ran: float, expected: str | None, cls: str, group: str
) -> Obj:
    obj = pod(
        name, ns="ns", cpu=cpu, group=group, node=node_name, priority_class=cls,
        annotations={EXPECTED: expected} if expected else None,
    )  # fmt: skip
    obj["status"]["startTime"] = iso(NOW - ran)
    return obj


def evicted(
    *,
    ran: float,
    victim_cpu: str = "2",
    actor_cpu: str = "2",
    victim_expected: str | None = "10h",
    other_ends_in: float | None = 5 * MIN,
    other_expected: str | None = None,
    gang: int = 1,
    weigh: bool = True,
) -> list[str]:
    """Evictions of a session where a high-priority pod needs room. Node n1 (2 cpu) runs the low-priority
    victim ``lo-0`` (and, for a gang, its other members on n3, n4...); node n2 (2 cpu) runs a
    high-priority pod (no victim) that ends ``other_ends_in`` from now by its expected run time (None:
    it says none), or that says ``other_expected`` having run an hour."""
    args = f"{{protectFinishing: false, weighWork: {str(weigh).lower()}}}"
    plugins = f"{{name: priority}}, {{name: gang, enablePreemptable: false}}, {{name: predicates}}, {{name: minruntime, arguments: {args}}}"
    objects = [
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        queue("q"),
        priority_class("low", 1),
        priority_class("high", 100),
        podgroup("lo", ns="ns", queue="q", min_member=gang, phase="Running", priority_class="low"),
        running("lo-0", node_name="n1", cpu=victim_cpu, ran=ran, expected=victim_expected, cls="low", group="lo"),
        podgroup("busy", ns="ns", queue="q", min_member=1, phase="Running", priority_class="high"),
        podgroup("hi", ns="ns", queue="q", phase="Inqueue", priority_class="high"),
        pod("hi-0", ns="ns", cpu=actor_cpu, group="hi", priority_class="high", created=iso(NOW)),
    ]  # fmt: skip
    for i in range(1, gang):
        objects += [
            node(f"n{i + 2}", cpu="2"),
            running(f"lo-{i}", node_name=f"n{i + 2}", cpu="2", ran=ran, expected=victim_expected, cls="low",
                    group="lo"),
        ]  # fmt: skip
    if other_expected is None and other_ends_in is not None:
        other_expected = f"{round(other_ends_in + 3600)}s"
    objects.append(
        running(
            "busy-0", node_name="n2", cpu="2", ran=3600.0, expected=other_expected, cls="high", group="busy"
        )
    )
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    config = load_config(text=f'actions: "preempt"\ntiers:\n- plugins: [{plugins}]\n')
    session = open_session(state.snapshot(now=NOW), config)
    for action in make_actions(config):
        action.execute(session)
    return [e.pod for e in close_session(session).evictions]


CASES: list[tuple[dict[str, Any], bool, str]] = [
    ({"ran": 20 * MIN}, False, "twenty-minutes-of-work-are-not-thrown-away-to-save-a-five-minute-wait"),
    ({"ran": 3 * MIN}, True, "three-minutes-of-work-are-thrown-away-to-save-a-five-minute-wait"),
    ({"ran": 20 * MIN, "other_ends_in": 30 * MIN}, True, "twenty-minutes-go-to-save-half-an-hour"),
    ({"ran": 8 * MIN, "victim_cpu": "1", "actor_cpu": "2"}, True,
     "a-half-size-victim-throws-away-half-the-work: 8m x 1 cpu <= 5m x 2 cpu"),
    ({"ran": 8 * MIN, "victim_cpu": "2", "actor_cpu": "1"}, False,
     "a-double-size-victim-throws-away-twice-the-work: 8m x 2 cpu > 5m x 1 cpu"),
    ({"ran": 20 * MIN, "other_ends_in": None}, True, "no-pod-ends-by-itself-so-the-wait-is-unbounded"),
    ({"ran": 20 * MIN, "other_ends_in": None, "other_expected": "30m"}, True,
     "a-pod-past-its-expected-end-is-not-counted-as-ending"),
    ({"ran": 4 * MIN}, True, "a-pod-alone-counts-its-own-work"),
    ({"ran": 4 * MIN, "gang": 2}, False, "a-pod-that-breaks-its-gang-counts-the-whole-gang's-work: 2 x 4m > 5m"),
    ({"ran": 20 * MIN, "weigh": False}, True, "weigh-work-off-takes-it"),
]  # fmt: skip


@pytest.mark.parametrize(("kw", "goes"), [c[:2] for c in CASES], ids=[c[2] for c in CASES])
def test_a_victim_goes_only_if_its_work_is_worth_the_wait_it_saves(kw: dict[str, Any], goes: bool) -> None:
    assert evicted(**kw) == (["ns/lo-0"] if goes else [])
