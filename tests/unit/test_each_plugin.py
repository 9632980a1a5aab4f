"""Each plugin on a small snapshot: the tiers hold the plugin under test and only what the case needs
besides, one session runs, and its binds, evictions and PodGroup phases are compared with the case's.
Where the plugin's answer is what decides, a failure names the plugin (tests/sim has the scenarios)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, priority_class, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import SessionResult
from volsched.framework.registry import load_config, make_actions
from volsched.framework.runner import close_session, open_session
from volsched.model.usage import NodeUsage

Obj = dict[str, Any]
NO_SCHEDULE = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def run(
    actions: str, plugins: str, objects: list[Obj], usage: dict[str, tuple[float, float]] | None = None
) -> SessionResult:
    """One session with ``actions`` over a single tier of ``plugins`` (YAML flow list entries); ``usage``
    is measured (cpu %, memory %) per node, measured as the session opens."""
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    state.set_usage({n: NodeUsage(cpu=c, memory=m, measured_at=1.0) for n, (c, m) in (usage or {}).items()})
    config = load_config(text=f'actions: "{actions}"\ntiers:\n- plugins: [{plugins}]\n')
    session = open_session(state.snapshot(now=1.0), config)
    for action in make_actions(config):
        action.execute(session)
    return close_session(session)


def group(name: str, *, q: str = "q", phase: str = "Inqueue", **kw: Any) -> Obj:
    return podgroup(name, ns="ns", queue=q, phase=phase, **kw)


def member(name: str, grp: str, *, cpu: str = "1", **kw: Any) -> Obj:
    return pod(name, ns="ns", cpu=cpu, group=grp, **kw)


def held(
    name: str, *, on: str, size: int, q: str = "q", prio: str | None = None, ns: str = "ns"
) -> list[Obj]:
    """A running PodGroup (minMember 1) with ``size`` pods of 1 cpu on ``on``."""
    return [
        podgroup(name, ns=ns, queue=q, min_member=1, phase="Running", priority_class=prio),
        *(pod(f"{name}-{i}", ns=ns, cpu="1", group=name, node=on, priority_class=prio, owner=f"ReplicaSet/{name}")
          for i in range(size)),
    ]  # fmt: skip


CASES = [
    pytest.param(
        "allocate", "{name: predicates}",
        [node("n1", taints=[NO_SCHEDULE]), node("n2"), queue("q"), group("g"), member("g-0", "g")],
        {"ns/g-0": "n2"}, set(), {},
        id="predicates-keeps-a-pod-off-a-node-whose-taint-it-does-not-tolerate",
    ),
    pytest.param(
        "allocate", "{name: predicates}",
        [node("n1"), node("n2", labels={"zone": "west"}), queue("q"), group("g"),
         member("g-0", "g", node_selector={"zone": "west"})],
        {"ns/g-0": "n2"}, set(), {},
        id="predicates-honours-the-node-selector",
    ),
    pytest.param(
        "allocate", "{name: nodeorder}",
        [node("n1", cpu="4"), node("n2", cpu="4"), queue("q"), *held("busy", on="n1", size=3),
         group("g"), member("g-0", "g")],
        {"ns/g-0": "n2"}, set(), {},
        id="nodeorder-prefers-the-least-requested-node",
    ),
    pytest.param(
        "allocate", "{name: binpack}",
        [node("n1", cpu="4"), node("n2", cpu="4"), queue("q"), *held("busy", on="n2", size=2),
         group("g"), member("g-0", "g")],
        {"ns/g-0": "n2"}, set(), {},
        id="binpack-prefers-the-fuller-node",
    ),
    pytest.param(
        "allocate", "{name: priority}",
        [node("n1", cpu="1"), queue("q"), priority_class("low", 1), priority_class("high", 100),
         group("a", priority_class="low"), member("a-0", "a", priority_class="low"),
         group("b", priority_class="high"), member("b-0", "b", priority_class="high")],
        {"ns/b-0": "n1"}, set(), {},
        id="priority-places-the-higher-priority-job-first",
    ),
    pytest.param(
        "allocate", "{name: drf}",
        [node("n1", cpu="3"), node("n2", cpu="1"), queue("q"), *held("a", on="n1", size=3),
         member("a-3", "a"), group("b"), member("b-0", "b")],
        {"ns/b-0": "n2"}, set(), {},
        id="drf-places-the-job-with-the-smaller-dominant-share-first",
    ),
    pytest.param(
        "allocate", "{name: proportion}",
        [node("n1", cpu="8"), queue("q", capability={"cpu": "2"}), group("g", min_member=1),
         *(member(f"g-{i}", "g") for i in range(4))],
        {"ns/g-0": "n1", "ns/g-1": "n1"}, set(), {},
        id="proportion-stops-a-queue-at-its-capability",
    ),
    pytest.param(
        "allocate", "{name: gang}",
        [node("n1", cpu="2"), queue("q"), group("g", min_member=3), *(member(f"g-{i}", "g") for i in range(3))],
        {}, set(), {"ns/g": "Inqueue"},
        id="gang-refuses-a-gang-short-of-its-min-member",
    ),
    pytest.param(
        "enqueue", "{name: overcommit}",
        [node("n1", cpu="4"), queue("q"), group("g", phase="Pending", min_resources={"cpu": "4.5"}),
         member("g-0", "g")],
        {}, set(), {"ns/g": "Inqueue"},
        id="overcommit-admits-up-to-the-factor-times-the-cluster",
    ),
    pytest.param(
        "enqueue", "{name: overcommit}",
        [node("n1", cpu="4"), queue("q"), group("g", phase="Pending", min_resources={"cpu": "5"}),
         member("g-0", "g")],
        {}, set(), {"ns/g": "Pending"},
        id="overcommit-holds-back-beyond-the-factor-times-the-cluster",
    ),
    pytest.param(
        "preempt", "{name: priority}, {name: gang}, {name: conformance}, {name: drf}",
        [node("n1", cpu="4"), queue("q"), priority_class("low", 1), priority_class("high", 100),
         *held("sys", on="n1", size=4, prio="low", ns="kube-system"),
         podgroup("hi", ns="ns", queue="q", phase="Inqueue", priority_class="high"),
         member("hi-0", "hi", cpu="2", priority_class="high")],
        {}, set(), {},
        id="conformance-never-evicts-a-kube-system-pod",
    ),
    pytest.param(
        "shuffle", "{name: rescheduling, arguments: {interval: 0s, strategies: [{name: removeFailedPods}]}}",
        [node("n1", cpu="4"), pod("ok", node="n1", owner="ReplicaSet/ok"),
         pod("failed", node="n1", phase="Failed", owner="ReplicaSet/failed"),
         pod("standalone", node="n1", phase="Failed")],
        {}, {"default/failed"}, {},
        id="rescheduling-names-a-failed-pod-with-a-controller-and-nothing-else",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("actions", "plugins", "objects", "binds", "evicted", "phases"), CASES)
def test_the_plugin_under_test_decides_these_binds_and_evictions(
    actions: str,
    plugins: str,
    objects: list[Obj],
    binds: dict[str, str],
    evicted: set[str],
    phases: dict[str, str],
) -> None:
    result = run(actions, plugins, objects)
    assert {b.pod: b.node for b in result.binds} == binds
    assert {e.pod for e in result.evictions} == evicted
    for key, phase in phases.items():
        assert result.podgroups[key].phase == phase, result.podgroups[key]


@pytest.mark.parametrize(
    ("arguments", "usage", "bound_to"),
    [
        pytest.param("{}", {"n1": (85, 20), "n2": (10, 20)}, "n2", id="usage-prefers-the-node-with-lower-measured-load"),
        pytest.param("{thresholds: {cpu: 80}}", {"n1": (85, 20), "n2": (85, 20)}, None,
                     id="usage-keeps-pods-off-nodes-over-the-cpu-threshold"),
        pytest.param("{thresholds: {cpu: 80}}", {"n1": (85, 20), "n2": (79, 20)}, "n2",
                     id="usage-places-on-a-node-under-the-cpu-threshold"),
    ],
)  # fmt: skip
def test_the_usage_plugin_places_by_measured_load(
    arguments: str, usage: dict[str, tuple[float, float]], bound_to: str | None
) -> None:
    objects = [node("n1"), node("n2"), queue("q"), group("g"), member("g-0", "g")]
    result = run("allocate", f"{{name: usage, arguments: {arguments}}}", objects, usage)
    assert {b.pod: b.node for b in result.binds} == ({"ns/g-0": bound_to} if bound_to else {})
