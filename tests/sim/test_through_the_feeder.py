"""The simulator reaches its cache only through the Feeder, as the operator's watches do: every object
carries a resourceVersion, a stale event is dropped, and each bind is assumed before the port carries
it out, so the simulator tests exercise the operator's cache rules too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.builders import node, pod, podgroup
from volsched.cycle import BindOutcome
from volsched.framework.decisions import Bind
from volsched.simulate import Document, Simulator


def simulator(*objects: dict[str, Any]) -> Simulator:
    return Simulator([Document(f"test: document {i + 1}", o) for i, o in enumerate(objects)])


def test_every_object_reaches_the_cache_with_a_resource_version_and_stale_events_are_dropped() -> None:
    sim = simulator(
        node("n1", cpu="4"), podgroup("g", min_member=2), pod("a", group="g"), pod("b", group="g")
    )
    sim.run(5)
    versions = [int(raw["metadata"]["resourceVersion"]) for raw in sim.state.raw_pods.values()]
    assert len(set(versions)) == 2 and all(v > 0 for v in versions)
    bound = sim.state.raw_pods["default/a"]
    stale = {**bound, "spec": {k: v for k, v in bound["spec"].items() if k != "nodeName"}}
    stale["metadata"] = {**bound["metadata"], "resourceVersion": str(min(versions) - 1)}
    assert not sim.feeder.apply("Pod", stale)  # older than what the cache holds: dropped
    assert sim.state.tasks["default/a"].node_name == "n1"


def test_each_bind_is_assumed_in_the_cache_before_the_port_carries_it_out() -> None:
    sim = simulator(node("n1", cpu="4"), pod("a"), pod("b"))
    seen: dict[str, tuple[bool, str | None]] = {}
    carry_out = sim.port.bind

    def bind(binds: Sequence[Bind], pods: Mapping[str, Any], *, lone: bool = False) -> list[BindOutcome]:
        for b in binds:
            seen[b.pod] = (sim.feeder.is_assumed(b.pod), sim.state.tasks[b.pod].node_name)
        return carry_out(binds, pods, lone=lone)

    sim.port.bind = bind  # type: ignore[method-assign]
    sim.run(5)
    assert seen == {"default/a": (True, "n1"), "default/b": (True, "n1")}
    assert not sim.feeder.is_assumed("default/a")  # the kubelet's update confirmed it
    assert {k: t.node_name for k, t in sim.state.tasks.items()} == {"default/a": "n1", "default/b": "n1"}
