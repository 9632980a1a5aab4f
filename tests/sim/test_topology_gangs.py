"""Topology-aware gangs (PodGroup spec.topology): the gang's pods share one domain of a node label."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import Obj, node, pod, pod_affinity, pod_term, podgroup, run
from volsched.model.errors import InputError

RACK = "topology.example.com/rack"
WORKER = {"app": "worker"}


def racks(sizes: dict[str, int], *, cpu: str = "8") -> list[Obj]:
    return [node(f"{r}-{i}", cpu=cpu, labels={RACK: r}) for r, n in sizes.items() for i in range(n)]


def gang(
    name: str, size: int, *, cpu: str = "4", mode: str | None = "Required", one_per_node: bool = False
) -> list[Obj]:
    affinity = pod_affinity(anti=[pod_term(match={"gang": name})]) if one_per_node else None
    return [
        podgroup(name, min_member=size, topology=(RACK, mode) if mode else None),
        *[
            pod(f"{name}-{i}", group=name, cpu=cpu, labels={"gang": name}, affinity=affinity)
            for i in range(size)
        ],
    ]


def racks_of(data: dict[str, Any], prefix: str) -> set[str | None]:
    return {
        v["node"].rsplit("-", 1)[0] if v["node"] else None
        for k, v in data["pods"].items()
        if k.startswith(f"default/{prefix}-")
    }


def gang_reason(data: dict[str, Any], name: str) -> str:
    return next(e["message"] for e in data["events"] if e["object"] == f"PodGroup default/{name}")


CASES: list[tuple[str, list[Obj], dict[str, set[str | None]]]] = [
    # Without topology, one pod per node scatters the gang over both racks; with it, one rack.
    (
        "without_topology_the_gang_scatters",
        racks({"r1": 2, "r2": 3}) + gang("g", 3, cpu="1", one_per_node=True, mode=None),
        {"g": {"r1", "r2"}},
    ),
    ("required_keeps_the_gang_in_one_rack", racks({"r1": 3, "r2": 3}) + gang("g", 4), {"g": {"r1"}}),
    # Best fit: r2 already runs something, so it is the tighter rack that still holds the gang.
    (
        "the_tightest_rack_that_fits_wins",
        [*racks({"r1": 3, "r2": 3}), pod("busy", node="r2-0", cpu="4", scheduler="other"), *gang("g", 4)],
        {"g": {"r2"}},
    ),
    # One per node, all in one rack: r1 is tighter (two nodes, 16 cpu) but cannot hold three pods one
    # per node; the allocator undoes the try and takes r2.
    ("one_per_node_all_in_one_rack", racks({"r1": 2, "r2": 3}) + gang("g", 3, cpu="1", one_per_node=True), {"g": {"r2"}}),
    # No rack has four nodes: Required stays pending, Preferred spreads over racks.
    ("required_with_no_rack_that_fits_stays_pending", racks({"r1": 3, "r2": 3}) + gang("g", 4, cpu="1", one_per_node=True), {"g": {None}}),
    (
        "preferred_falls_back_across_racks",
        racks({"r1": 3, "r2": 3}) + gang("g", 4, cpu="1", one_per_node=True, mode="Preferred"),
        {"g": {"r1", "r2"}},
    ),
    # Two gangs that each fill a rack land in different racks.
    ("two_gangs_two_racks", racks({"r1": 2, "r2": 2}) + gang("a", 4) + gang("b", 4), {"a": {"r1"}, "b": {"r2"}}),
]  # fmt: skip


@pytest.mark.parametrize(("objs", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_topology_gangs(objs: list[Obj], expected: dict[str, set[str | None]]) -> None:
    data = run(objs)
    for name, where in expected.items():
        assert racks_of(data, name) == where, data["pods"]


def test_one_per_node_gang_is_on_distinct_nodes() -> None:
    data = run(racks({"r1": 2, "r2": 3}) + gang("g", 3, cpu="1", one_per_node=True))
    nodes = [v["node"] for k, v in data["pods"].items() if k.startswith("default/g-")]
    assert len(set(nodes)) == 3


def test_gang_with_a_running_pod_stays_in_its_rack() -> None:
    objs = racks({"r1": 3, "r2": 3})
    objs += [podgroup("g", min_member=2, topology=(RACK, "Required"))]
    objs += [pod("g-0", group="g", cpu="4", node="r2-0"), pod("g-1", group="g", cpu="4")]
    objs += [
        pod("filler", node="r2-1", cpu="6", scheduler="other"),
        pod("filler2", node="r2-2", cpu="6", scheduler="other"),
    ]
    data = run(objs)
    assert data["pods"]["default/g-1"]["node"] == "r2-0"


def test_why_no_rack_fits_in_numbers() -> None:
    objs = [*racks({"r1": 3, "r2": 3}, cpu="4"), pod("busy", node="r2-0", cpu="4", scheduler="other")]
    objs += gang("g", 4, cpu="3")  # 12 cpu: r1 has 12 idle but only 3 nodes of 4; r2 has 8 idle
    data = run(objs)
    assert gang_reason(data, "g") == (
        "gang g: 0/4 tasks could be placed (minMember 4): no topology.example.com/rack domain fits the gang "
        "(Required): topology.example.com/rack=r1: 3/4 placed (task g-3: 0/6 nodes fit: 3 insufficient cpu "
        "(needs 3, most idle 1), 3 node(s) outside the gang's topology.example.com/rack=r1); "
        "1 domain(s) too small in total: topology.example.com/rack=r2 idle cpu 8 < 12"
    )


@pytest.mark.parametrize(
    ("topology", "error"),
    [
        ({"mode": "Required"}, "spec.topology.key is required"),
        (
            {"key": RACK, "mode": "Sometimes"},
            "spec.topology.mode must be Required or Preferred, got 'Sometimes'",
        ),
    ],
)
def test_invalid_topology_is_reported(topology: dict[str, str], error: str) -> None:
    pg = podgroup("g", min_member=1)
    pg["spec"]["topology"] = topology
    with pytest.raises(InputError) as exc:
        run([node("n"), pg, pod("g-0", group="g")])
    assert error in str(exc.value)
