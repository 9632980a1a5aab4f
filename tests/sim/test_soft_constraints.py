"""nodeorder's soft placement scores (preferred node affinity, PreferNoSchedule taints, preferred pod
affinity and anti-affinity, ScheduleAnyway spread) and their weights, through the simulator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import Obj, config, node, pod, pod_affinity, pod_term, run, spread
from volsched.framework.config import SchedulerConfig
from volsched.model.errors import InputError

WEB = {"app": "web"}


def nodeorder_config(**weights: float) -> SchedulerConfig:
    args = json.dumps({f"{k}.weight": v for k, v in weights.items()})
    return config(
        'actions: "enqueue, allocate"\n'
        "tiers:\n- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, "
        f"{{name: nodeorder, arguments: {args}}}]\n"
    )


def prefer_zone(zone: str) -> Obj:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": [zone]}]},
                }
            ]
        }
    }


SOFT_TAINT = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]
TOLERATE_SPOT = [{"key": "spot", "operator": "Exists"}]

# (name, objects, nodeorder weights (None: defaults), where the pod named "p" goes)
CASES: list[tuple[str, list[Obj], dict[str, float] | None, str]] = [
    ("preferred_node_affinity", [node("a", labels={"zone": "a"}), node("b", labels={"zone": "b"}), pod("p", affinity=prefer_zone("b"))], None, "b"),
    (
        "preferred_node_affinity_weight_zero",
        [node("a", labels={"zone": "a"}), node("b", labels={"zone": "b"}), pod("p", affinity=prefer_zone("b"))],
        {"nodeaffinity": 0},
        "a",
    ),
    ("prefer_no_schedule_taint_avoided", [node("a", taints=SOFT_TAINT), node("b"), pod("p")], None, "b"),
    ("prefer_no_schedule_taint_tolerated", [node("a", taints=SOFT_TAINT), node("b"), pod("p", tolerations=TOLERATE_SPOT)], None, "a"),
    ("prefer_no_schedule_weight_zero", [node("a", taints=SOFT_TAINT), node("b"), pod("p")], {"tainttoleration": 0}, "a"),
    # b is busier (least requested prefers a), but the pod wants to be near the database.
    (
        "preferred_pod_affinity",
        [node("a"), node("b"), pod("db", node="b", cpu="2", labels={"app": "db"}), pod("p", affinity=pod_affinity(preferred=[(50, pod_term(match={"app": "db"}))]))],
        None,
        "b",
    ),
    (
        "preferred_pod_anti_affinity",
        [node("a"), node("b"), pod("w", node="a", cpu="0", memory="0", labels=WEB), pod("p", labels=WEB, affinity=pod_affinity(preferred_anti=[(50, pod_term(match=WEB))]))],
        None,
        "b",
    ),
    (
        "preferred_pod_anti_affinity_weight_zero",
        [node("a"), node("b"), pod("w", node="a", cpu="0", memory="0", labels=WEB), pod("p", labels=WEB, affinity=pod_affinity(preferred_anti=[(50, pod_term(match=WEB))]))],
        {"podaffinity": 0},
        "a",
    ),
    # A placed pod's preferred affinity draws a matching new pod (the rule is symmetric in scoring).
    (
        "placed_pods_preferred_affinity_attracts",
        [node("a"), node("b"), pod("cache", node="b", cpu="2", affinity=pod_affinity(preferred=[(80, pod_term(match=WEB))])), pod("p", labels=WEB)],
        None,
        "b",
    ),
    # ScheduleAnyway: the emptier zone wins, and a full skew never blocks.
    (
        "schedule_anyway_spread_prefers_the_emptier_zone",
        [node("a", labels={"zone": "a"}), node("b", labels={"zone": "b"}), pod("o1", node="a", cpu="0", memory="0", labels=WEB), pod("o2", node="a", cpu="0", memory="0", labels=WEB), pod("p", labels=WEB, spread=[spread("zone", match=WEB, hard=False)])],
        None,
        "b",
    ),
    (
        "schedule_anyway_spread_never_blocks",
        [node("a", labels={"zone": "a"}), node("b", labels={"zone": "b"}, cpu="0.5"), pod("o1", node="a", cpu="0", memory="0", labels=WEB), pod("o2", node="a", cpu="0", memory="0", labels=WEB), pod("p", labels=WEB, spread=[spread("zone", match=WEB, hard=False)])],
        None,
        "a",
    ),
    (
        "schedule_anyway_spread_weight_zero",
        [node("a", labels={"zone": "a"}), node("b", labels={"zone": "b"}), pod("o1", node="a", cpu="0", memory="0", labels=WEB), pod("o2", node="a", cpu="0", memory="0", labels=WEB), pod("p", labels=WEB, spread=[spread("zone", match=WEB, hard=False)])],
        {"podtopologyspread": 0},
        "a",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("objs", "weights", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_soft_constraints_steer_the_choice(
    objs: list[Obj], weights: dict[str, float] | None, expected: str
) -> None:
    conf = nodeorder_config(**weights) if weights is not None else nodeorder_config()
    data: dict[str, Any] = run(objs, conf=conf)
    assert data["pods"]["default/p"]["node"] == expected


def test_unknown_nodeorder_argument_lists_the_known_ones() -> None:
    with pytest.raises(InputError) as exc:
        run([node("a"), pod("p")], conf=nodeorder_config(podafinity=1))
    message = str(exc.value)
    assert "plugin nodeorder: unknown argument(s) podafinity.weight; known: " in message
    for name in ("nodeaffinity", "podaffinity", "podtopologyspread", "tainttoleration", "leastrequested"):
        assert f"{name}.weight" in message
