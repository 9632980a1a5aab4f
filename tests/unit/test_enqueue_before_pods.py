"""A PodGroup made before its pods (Volcano's job flow: its controller makes the pods only once the
scheduler moved the group to Inqueue) is admitted on its minResources, as Volcano's enqueue admits it,
or told why not; and once admitted, the pods its controller makes then are placed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import SessionResult, render
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session

Obj = dict[str, Any]
TIERS = (Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml").read_text()
#: Enqueue alone, with the example's tiers (gang, overcommit and proportion all vote on admission).
ENQUEUE = load_config(text=re.sub(r"^actions: .*$", 'actions: "enqueue"', TIERS, flags=re.M))


def _session(objects: list[Obj], conf: Any = ENQUEUE) -> SessionResult:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    return run_session(state.snapshot(now=1.0), conf)


def _group(name: str, *, q: str = "q", cpu: str | None = "2", min_member: int = 3) -> Obj:
    """A PodGroup of queue ``q`` in namespace ns, phase Pending, with no pod yet."""
    return podgroup(
        name,
        ns="ns",
        queue=q,
        min_member=min_member,
        phase="Pending",
        min_resources={"cpu": cpu} if cpu is not None else None,
    )


def _running(name: str, *, q: str, cpu: int, on: str) -> list[Obj]:
    return [
        podgroup(name, ns="ns", queue=q, min_member=1, phase="Running"),
        *(pod(f"{name}-{i}", ns="ns", cpu="1", group=name, node=on) for i in range(cpu)),
    ]


ADMITTED = [
    pytest.param([node("n1", cpu="4"), queue("q"), _group("g")], id="its-min-resources-fit"),
    pytest.param([node("n1", cpu="4"), queue("q"), _group("g", cpu=None)], id="no-min-resources-asks-nothing"),
    pytest.param(
        [node("n1", cpu="8"), queue("qa"), queue("qb"), *_running("a", q="qa", cpu=2, on="n1"),
         _group("g", q="qb", cpu="4")],
        id="its-queue-deserves-what-its-min-resources-ask",
    ),
    pytest.param(
        [node("n1", cpu="4"), queue("q"), _group("g", min_member=1),
         podgroup("other", ns="ns", queue="q", min_member=2, phase="Pending"),
         pod("other-0", ns="ns", cpu="1", group="other"), pod("other-1", ns="ns", cpu="1", group="other")],
        id="beside-a-group-whose-pods-are-there",
    ),
]  # fmt: skip


@pytest.mark.parametrize("objects", ADMITTED)
def test_a_podgroup_with_no_pod_yet_is_admitted_on_its_min_resources(objects: list[Obj]) -> None:
    result = _session(objects)
    assert "ns/g" in {a.job for a in result.admits}
    assert result.podgroups["ns/g"].phase == "Inqueue"
    assert not result.podgroups["ns/g"].unschedulable


REFUSED = [
    pytest.param(
        [node("n1", cpu="4"), queue("q"), _group("g", cpu="40")],
        "can never run as it stands: its minResources ask cpu 40, more than all the ready nodes have (cpu 4); "
        "not admitted to queue q: overcommit: minResources cpu 40 > room 4.8 (cluster 4 x 1.2 - used 0 - admitted 0)",
        id="its-min-resources-exceed-the-cluster",
    ),
    pytest.param(
        [node("n1", cpu="8"), queue("qa"), queue("qb", capability={"cpu": "2"}), _group("g", q="qb", cpu="4")],
        "can never run as it stands: its minResources ask cpu 4, more than queue qb may ever hold (capability "
        "cpu 2); not admitted to queue qb: proportion: queue qb: minResources cpu 4 + allocated 0 + admitted 0 > "
        "realCapability 2",
        id="its-queue-capability-is-smaller",
    ),
    pytest.param(
        [node("n1", cpu="4"), _group("g", q="missing")],
        "queue missing does not exist",
        id="its-queue-does-not-exist",
    ),
    pytest.param(
        [node("n1", cpu="4"), queue("q", state="Closed"), _group("g")],
        "queue q is closed and admits no new jobs",
        id="its-queue-is-closed",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("objects", "why"), REFUSED)
def test_a_podgroup_with_no_pod_yet_that_is_not_admitted_says_why(objects: list[Obj], why: str) -> None:
    result = _session(objects)
    assert "ns/g" not in {a.job for a in result.admits}
    assert result.podgroups["ns/g"].phase == "Pending"
    assert render(result.rejections["PodGroup ns/g"]).startswith(why)
    assert [e.reason for e in result.events if e.object == "PodGroup ns/g"] == ["Unschedulable"]


def test_the_pods_made_once_it_is_admitted_are_placed_whole() -> None:
    """Volcano's flow over two sessions of the default config: the first admits the group (no pod
    yet), its controller then makes the pods, and the next session binds the gang."""
    state = ClusterState()
    for obj in (node("n1", cpu="4"), queue("q"), _group("g", min_member=2)):
        state.apply(obj)
    first = run_session(state.snapshot(now=1.0), load_config())
    assert [a.job for a in first.admits] == ["ns/g"]
    assert not first.binds
    state.apply(podgroup("g", ns="ns", queue="q", min_member=2, phase="Inqueue", min_resources={"cpu": "2"}))
    for i in range(2):
        state.apply(pod(f"g-{i}", ns="ns", cpu="1", group="g"))
    second = run_session(state.snapshot(now=2.0), load_config())
    assert sorted(b.pod for b in second.binds) == ["ns/g-0", "ns/g-1"]
    assert second.podgroups["ns/g"].phase == "Running"
