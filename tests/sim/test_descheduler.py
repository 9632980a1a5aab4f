"""The descheduler's strategies on the rescheduling plugin (through the simulator): each picks the pods
its rule names, with the descheduler's parameters, and nothing else; the shuffle plumbing (limit,
gangs, no move-back) applies to all of them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import (
    Obj,
    first_evictions,
    node,
    pod,
    pod_affinity,
    pod_term,
    podgroup,
    resched_config,
    rescheduling_refused,
    simulate_objects,
    spread,
)
from volsched.framework.messages import render_eviction
from volsched.simulate import EPOCH, iso


def usage_node(name: str, cpu: float, *, alloc_cpu: str = "10", **kw: Any) -> Obj:
    return node(
        name,
        cpu=alloc_cpu,
        annotations={"volsched.io/usage": json.dumps({"cpu": cpu, "memory": cpu})},
        **kw,
    )


def rs_pod(name: str, node_name: str, *, owner: str | None = None, cpu: str = "1", **kw: Any) -> Obj:
    """A running pod of a ReplicaSet (one per pod unless ``owner`` is given)."""
    return pod(name, cpu=cpu, node=node_name, owner=owner or f"ReplicaSet/{name}", **kw)


def status(obj: Obj, **fields: Any) -> Obj:
    obj["status"] = {**obj.get("status", {}), **fields}
    return obj


def strategy(name: str, **params: Any) -> dict[str, Any]:
    return {"name": name, "params": params} if params else {"name": name}


def evicted(objs: list[Obj], *strategies: dict[str, Any], **kw: Any) -> list[str]:
    return sorted(first_evictions(objs, resched_config(*strategies, interval="0s", limit=20, **kw)))


# --- highNodeUtilization --------------------------------------------------------------------------------


HIGH = strategy("highNodeUtilization", thresholds={"cpu": 20, "memory": 20, "pods": 20})


@pytest.mark.parametrize(
    ("nodes", "expected", "why"),
    [
        (
            [usage_node("sparse", 5), usage_node("busy", 60)],
            ["default/s0", "default/s1"],
            "pods leave the underutilized node",
        ),
        (
            [usage_node("sparse", 5), usage_node("busy", 60, alloc_cpu="3")],
            ["default/s0"],
            "only as many as the other nodes' free capacity by requests takes (busy has 1 cpu free)",
        ),
        ([usage_node("sparse", 5), usage_node("busy", 10)], [], "no appropriately utilized node"),
        ([usage_node("sparse", 5), node("busy", cpu="10")], [], "the other node has no usage data"),
        (
            [usage_node("sparse", 5), usage_node("busy", 60, unschedulable=True)],
            [],
            "a cordoned node takes nothing",
        ),
    ],
)
def test_high_node_utilization_empties_underutilized_nodes(nodes: list[Obj], expected: list[str], why: str):
    objs = [*nodes, rs_pod("s0", "sparse"), rs_pod("s1", "sparse"), rs_pod("b0", "busy", cpu="2")]
    assert evicted(objs, HIGH) == expected, why


def test_high_node_utilization_needs_more_underutilized_nodes_than_number_of_nodes():
    objs = [usage_node("sparse", 5), usage_node("busy", 60), rs_pod("s0", "sparse")]
    params = {"thresholds": {"cpu": 20}, "numberOfNodes": 1}
    assert evicted(objs, strategy("highNodeUtilization", **params)) == []
    params["numberOfNodes"] = 0
    assert evicted(objs, strategy("highNodeUtilization", **params)) == ["default/s0"]


def test_high_node_utilization_packs_the_moved_pods_onto_the_busy_node():
    objs = [usage_node("sparse", 5), usage_node("busy", 60), rs_pod("s0", "sparse"), rs_pod("s1", "sparse")]
    result = simulate_objects(objs, conf=resched_config(HIGH, limit=5), sessions=5)
    nodes = {k: v["spec"].get("nodeName") for k, v in result.state.raw_pods.items()}
    assert nodes == {"default/s0-moved-1": "busy", "default/s1-moved-1": "busy"}
    assert "node sparse is underutilized (" in render_eviction(result.evictions[0])


# --- removeDuplicates -----------------------------------------------------------------------------------


def three_nodes(**kw: Any) -> list[Obj]:
    return [node("n1"), node("n2", **kw), node("n3", **kw)]


def test_remove_duplicates_spreads_replicas_of_one_owner():
    web = [rs_pod(f"web-{i}", "n1", owner="ReplicaSet/web") for i in range(3)]
    # 3 replicas, 3 nodes they could use: at most one per node, so two leave n1.
    assert evicted([*three_nodes(), *web], strategy("removeDuplicates")) == ["default/web-0", "default/web-1"]
    # 4 replicas over 3 nodes: at most 2 per node.
    web4 = [rs_pod(f"web-{i}", "n1", owner="ReplicaSet/web") for i in range(4)]
    assert evicted([*three_nodes(), *web4], strategy("removeDuplicates")) == [
        "default/web-0",
        "default/web-1",
    ]


@pytest.mark.parametrize(
    ("params", "nodes_kw", "images", "expected"),
    [
        ({"excludeOwnerKinds": ["ReplicaSet"]}, {}, ("busybox", "busybox"), []),
        ({}, {}, ("busybox", "nginx"), []),  # different images: not duplicates
        ({}, {"unschedulable": True}, ("busybox", "busybox"), []),  # nowhere else to go
        ({"namespaces": {"exclude": ["default"]}}, {}, ("busybox", "busybox"), []),
        ({"namespaces": {"include": ["default"]}}, {}, ("busybox", "busybox"), ["default/web-0"]),
    ],
)
def test_remove_duplicates_leaves_alone(
    params: dict[str, Any], nodes_kw: dict[str, Any], images: tuple[str, str], expected: list[str]
):
    web = [rs_pod(f"web-{i}", "n1", owner="ReplicaSet/web") for i in range(2)]
    for obj, image in zip(web, images, strict=True):
        obj["spec"]["containers"][0]["image"] = image
    assert evicted([*three_nodes(**nodes_kw), *web], strategy("removeDuplicates", **params)) == expected


# --- removePodsViolatingNodeAffinity ----------------------------------------------------------------------


SSD_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
            ]
        }
    }
}


@pytest.mark.parametrize(
    ("placement", "other_labels", "expected"),
    [
        ({"node_selector": {"disk": "ssd"}}, {"disk": "ssd"}, ["default/p"]),
        ({"affinity": SSD_AFFINITY}, {"disk": "ssd"}, ["default/p"]),
        ({"affinity": SSD_AFFINITY}, {"disk": "hdd"}, []),  # no other node matches: it stays
        ({}, {}, []),  # nothing asked, nothing violated
    ],
)
def test_a_pod_whose_node_no_longer_matches_its_affinity_moves_when_another_node_does(
    placement: dict[str, Any], other_labels: dict[str, str], expected: list[str]
):
    objs = [
        node("old", labels={"disk": "hdd"}),
        node("new", labels=other_labels),
        rs_pod("p", "old", **placement),
    ]
    kept = rs_pod("q", "new", **placement)
    assert evicted([*objs, kept], strategy("removePodsViolatingNodeAffinity")) == expected


def test_the_eviction_reason_names_the_node_and_the_rule():
    objs = [
        node("old"),
        node("new", labels={"disk": "ssd"}),
        rs_pod("p", "old", node_selector={"disk": "ssd"}),
    ]
    result = simulate_objects(
        objs, conf=resched_config(strategy("removePodsViolatingNodeAffinity")), sessions=3
    )
    assert result.evictions[0].reason.detail == (
        "rescheduling (removePodsViolatingNodeAffinity): node old no longer matches the pod's node selector"
    )
    assert result.state.raw_pods["default/p-moved-1"]["spec"]["nodeName"] == "new"


PREFER_SSD = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
            }
        ]
    }
}


@pytest.mark.parametrize(
    ("kinds", "new_cpu", "expected"),
    [
        (["preferredDuringSchedulingIgnoredDuringExecution"], "8", ["default/p"]),
        (["preferredDuringSchedulingIgnoredDuringExecution"], "500m", []),  # the better node has no room
        (["requiredDuringSchedulingIgnoredDuringExecution"], "8", []),  # preferred terms not asked about
        (
            [
                "requiredDuringSchedulingIgnoredDuringExecution",
                "preferredDuringSchedulingIgnoredDuringExecution",
            ],
            "8",
            ["default/p"],
        ),
    ],
)
def test_preferred_node_affinity_moves_a_pod_to_a_node_it_prefers_with_room(
    kinds: list[str], new_cpu: str, expected: list[str]
):
    objs = [node("old", labels={"disk": "hdd"}), node("new", cpu=new_cpu, labels={"disk": "ssd"})]
    objs.append(rs_pod("p", "old", affinity=PREFER_SSD))
    assert evicted(objs, strategy("removePodsViolatingNodeAffinity", nodeAffinityType=kinds)) == expected


# --- removePodsViolatingNodeTaints ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("effect", "params", "tolerations", "expected"),
    [
        ("NoSchedule", {}, None, ["default/p"]),
        ("NoSchedule", {}, [{"key": "dedicated", "operator": "Exists"}], []),
        ("NoSchedule", {"excludedTaints": ["dedicated"]}, None, []),
        ("NoSchedule", {"excludedTaints": ["dedicated=gpu"]}, None, []),
        ("NoSchedule", {"excludedTaints": ["dedicated=other"]}, None, ["default/p"]),
        ("PreferNoSchedule", {}, None, []),
        ("PreferNoSchedule", {"includePreferNoSchedule": True}, None, ["default/p"]),
    ],
)
def test_a_pod_on_a_node_with_a_taint_it_does_not_tolerate_is_moved(
    effect: str, params: dict[str, Any], tolerations: list[dict[str, str]] | None, expected: list[str]
):
    taint = {"key": "dedicated", "value": "gpu", "effect": effect}
    objs = [node("tainted", taints=[taint]), node("free"), rs_pod("p", "tainted", tolerations=tolerations)]
    assert evicted(objs, strategy("removePodsViolatingNodeTaints", **params)) == expected


# --- podLifeTime ----------------------------------------------------------------------------------------


def test_pod_life_time_moves_pods_older_than_the_limit():
    # The first session runs at EPOCH + 10001; pods without a creation time are created at EPOCH + i.
    young = rs_pod("young", "n1", created=iso(EPOCH + 9_500))
    objs = [node("n1"), node("n2"), rs_pod("old", "n1"), young]
    assert evicted(objs, strategy("podLifeTime", maxPodLifeTimeSeconds=1000)) == ["default/old"]
    assert evicted(objs, strategy("podLifeTime", maxPodLifeTimeSeconds=100)) == [
        "default/old",
        "default/young",
    ]


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        (["Running"], ["default/running"]),
        (["Pending"], ["default/creating", "default/starting"]),
        (["ContainerCreating"], ["default/creating"]),
        ([], ["default/creating", "default/running", "default/starting"]),
    ],
)
def test_pod_life_time_states_narrow_by_phase_or_waiting_reason(states: list[str], expected: list[str]):
    creating = status(
        rs_pod("creating", "n1", phase="Pending"),
        containerStatuses=[{"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}],
    )
    objs = [
        node("n1"),
        node("n2"),
        rs_pod("running", "n1"),
        rs_pod("starting", "n1", phase="Pending"),
        creating,
    ]
    params: dict[str, Any] = {"maxPodLifeTimeSeconds": 60}
    if states:
        params["states"] = states
    assert evicted(objs, strategy("podLifeTime", **params)) == expected


# --- removePodsHavingTooManyRestarts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("restarts", "init_restarts", "including_init", "expected"),
    [
        ([3, 2], 0, False, ["default/p"]),  # summed over containers: 5 >= 5
        ([4], 0, False, []),
        ([2], 3, False, []),
        ([2], 3, True, ["default/p"]),
    ],
)
def test_pods_with_too_many_restarts_are_moved(
    restarts: list[int], init_restarts: int, including_init: bool, expected: list[str]
):
    p = status(
        rs_pod("p", "n1"),
        containerStatuses=[{"name": f"c{i}", "restartCount": r} for i, r in enumerate(restarts)],
        initContainerStatuses=[{"name": "init", "restartCount": init_restarts}],
    )
    params = {"podRestartThreshold": 5, "includingInitContainers": including_init}
    assert (
        evicted([node("n1"), node("n2"), p], strategy("removePodsHavingTooManyRestarts", **params))
        == expected
    )


def test_restarts_never_take_a_gang_below_min_member():
    crashing = [{"name": "main", "restartCount": 50}]
    gang = [
        status(pod(f"g-{i}", node="n1", group="g", owner="Job/g"), containerStatuses=crashing)
        for i in range(3)
    ]
    objs = [node("n1"), node("n2"), podgroup("g", min_member=2), *gang]
    assert evicted(objs, strategy("removePodsHavingTooManyRestarts", podRestartThreshold=10)) == [
        "default/g-0"
    ]


# --- removeFailedPods -----------------------------------------------------------------------------------


def failed(name: str, reason: str = "", *, owner: str | None = None, **kw: Any) -> Obj:
    obj = status(rs_pod(name, "n1", owner=owner, **kw), phase="Failed")
    if reason:
        obj["status"]["reason"] = reason
    return obj


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, ["default/affinity", "default/evicted", "default/job", "default/oom"]),
        ({"reasons": ["NodeAffinity"]}, ["default/affinity"]),
        ({"reasons": ["OOMKilled"]}, ["default/oom"]),
        ({"excludeOwnerKinds": ["Job"]}, ["default/affinity", "default/evicted", "default/oom"]),
        ({"minPodLifetimeSeconds": 5000}, ["default/affinity", "default/evicted", "default/oom"]),
    ],
)
def test_failed_pods_are_removed_by_reason_owner_and_age(params: dict[str, Any], expected: list[str]):
    oom = failed("oom")
    oom["status"]["containerStatuses"] = [{"name": "main", "state": {"terminated": {"reason": "OOMKilled"}}}]
    objs = [
        node("n1"),
        node("n2"),
        failed("affinity", "NodeAffinity"),
        failed("evicted", "Evicted"),
        oom,
        failed("job", owner="Job/job", created=iso(EPOCH + 9_000)),
        rs_pod("healthy", "n1"),
    ]
    bare = status(pod("bare", node="n1"), phase="Failed")
    assert evicted([*objs, bare], strategy("removeFailedPods", **params)) == expected


def test_removing_a_failed_pod_frees_nothing_it_did_not_hold():
    # n1 is full with r (2 cpu); the failed pod f held nothing, so its removal makes no room for p.
    objs = [
        node("n1", cpu="2"),
        rs_pod("r", "n1", cpu="2"),
        failed("f", "Evicted", cpu="2"),
        pod("p", cpu="2"),
    ]
    result = simulate_objects(
        objs, conf=resched_config(strategy("removeFailedPods"), interval="0s"), sessions=4
    )
    assert [e.pod for e in result.evictions] == ["default/f"]
    assert all(not h.binds for h in result.history)
    assert "default/f-moved-1" not in result.state.raw_pods  # its controller replaced it when it failed


# --- arguments ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategies", "message"),
    [
        ([strategy("podLifeTime")], "(podLifeTime): params.maxPodLifeTimeSeconds is required"),
        ([strategy("removePodsHavingTooManyRestarts")], "params.podRestartThreshold is required"),
        (
            [strategy("removePodsHavingTooManyRestarts", podRestartThreshold=0)],
            "podRestartThreshold: expected a number >= 1",
        ),
        ([strategy("highNodeUtilization")], "params.thresholds: expected a map"),
        (
            [strategy("removeDuplicates", excludeOwnerKinds="Job")],
            "excludeOwnerKinds: expected a list of strings",
        ),
        (
            [strategy("removeDuplicates", namespaces={"include": ["a"], "exclude": ["b"]})],
            "namespaces: give include or exclude, not both",
        ),
        (
            [
                strategy(
                    "removePodsViolatingNodeAffinity",
                    nodeAffinityType=["requiredDuringExecution"],
                )
            ],
            "nodeAffinityType: unknown requiredDuringExecution; known:",
        ),
        ([strategy("removeFailedPods", reason=["x"])], "unknown param(s) reason; known:"),
        (
            [
                strategy(
                    "podLifeTime", maxPodLifeTimeSeconds=5, labelSelector={"matchExpressions": [{"key": "a"}]}
                )
            ],
            "labelSelector.matchExpressions[0]: needs a key and an operator",
        ),
    ],
)
def test_bad_strategy_params_fail_at_load_naming_the_param(strategies: list[dict[str, Any]], message: str):
    assert message in rescheduling_refused({"strategies": strategies})


def test_the_descheduler_spelling_and_a_label_selector_are_accepted():
    objs = [node("n1"), node("n2"), rs_pod("a", "n1", labels={"tier": "batch"}), rs_pod("b", "n1")]
    life = strategy(
        "PodLifeTime",
        maxPodLifeTimeSeconds=10,
        labelSelector={"matchExpressions": [{"key": "tier", "operator": "In", "values": ["batch"]}]},
    )
    assert evicted(objs, life) == ["default/a"]


# --- removePodsViolatingInterPodAntiAffinity ---------------------------------------------------------------


def repels(app: str, key: str = "kubernetes.io/hostname") -> Obj:
    return pod_affinity(anti=[pod_term(key, match={"app": app})])


def test_the_pod_in_most_anti_affinity_violations_leaves_first():
    # b and c (added later with anti-affinity to app=a) share n1 with a: evicting a settles both.
    objs = [
        node("n1"),
        node("n2"),
        rs_pod("a", "n1", labels={"app": "a"}),
        rs_pod("b", "n1", labels={"app": "b"}, affinity=repels("a")),
        rs_pod("c", "n1", labels={"app": "c"}, affinity=repels("a")),
        rs_pod("d", "n2", labels={"app": "d"}, affinity=repels("a")),  # a is not on n2: fine
    ]
    assert evicted(objs, strategy("removePodsViolatingInterPodAntiAffinity")) == ["default/a"]


def test_when_the_repelled_pod_may_not_move_the_pods_with_the_rule_leave():
    objs = [
        node("n1"),
        node("n2"),
        pod("a", node="n1", labels={"app": "a"}),  # no owner: never moved
        rs_pod("b", "n1", labels={"app": "b"}, affinity=repels("a")),
        rs_pod("c", "n1", labels={"app": "c"}, affinity=repels("a")),
    ]
    assert evicted(objs, strategy("removePodsViolatingInterPodAntiAffinity")) == ["default/b", "default/c"]


@pytest.mark.parametrize(
    ("b_zone", "key", "expected"),
    [
        ("z1", "zone", ["default/a"]),  # same zone: a zone-wide rule is broken
        ("z2", "zone", []),
        ("z2", "kubernetes.io/hostname", []),
    ],
)
def test_anti_affinity_is_judged_per_topology_domain(b_zone: str, key: str, expected: list[str]):
    objs = [
        node("n1", labels={"zone": "z1"}),
        node("n2", labels={"zone": b_zone}),
        rs_pod("a", "n1", labels={"app": "a"}),
        rs_pod("b", "n2", labels={"app": "b"}, affinity=repels("a", key)),
    ]
    # b's rule is symmetric: a is the one in a violation, and, with equal counts, first in eviction order.
    assert evicted(objs, strategy("removePodsViolatingInterPodAntiAffinity")) == expected


def test_the_evicted_pods_replacement_respects_the_anti_affinity():
    objs = [
        node("n1"),
        node("n2"),
        rs_pod("a", "n1", labels={"app": "a"}),
        rs_pod("b", "n1", labels={"app": "b"}, affinity=repels("a")),
    ]
    result = simulate_objects(
        objs, conf=resched_config(strategy("removePodsViolatingInterPodAntiAffinity")), sessions=4
    )
    moved = {k: v["spec"].get("nodeName") for k, v in result.state.raw_pods.items() if "-moved-" in k}
    assert moved == {"default/a-moved-1": "n2"}
    assert "repel it" in render_eviction(result.evictions[0])


# --- removePodsViolatingTopologySpreadConstraint -----------------------------------------------------------


def web(count: int, *, node_name: str = "n1", **spread_kw: Any) -> list[Obj]:
    constraint = spread("zone", match={"app": "web"}, **spread_kw)
    return [
        rs_pod(f"web-{i}", node_name, owner="ReplicaSet/web", labels={"app": "web"}, spread=[constraint])
        for i in range(count)
    ]


ZONES = [node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b"})]
SPREAD = strategy("removePodsViolatingTopologySpreadConstraint")


@pytest.mark.parametrize(
    ("count", "spread_kw", "params", "expected"),
    [
        (4, {}, {}, 2),  # 4/0 -> 2/2
        (5, {}, {}, 2),  # 5/0 -> 3/2
        (4, {"max_skew": 2}, {}, 1),  # 4/0 -> 3/1
        (4, {"max_skew": 4}, {}, 0),
        (4, {"hard": False}, {}, 0),  # ScheduleAnyway: only with includeSoftConstraints
        (4, {"hard": False}, {"includeSoftConstraints": True}, 2),
        (4, {"hard": False}, {"constraints": ["DoNotSchedule", "ScheduleAnyway"]}, 2),  # the newer form
        (4, {"hard": False}, {"constraints": ["ScheduleAnyway"]}, 2),
        (4, {}, {"constraints": ["ScheduleAnyway"]}, 0),  # DoNotSchedule not named
        (4, {"min_domains": 3}, {}, 0),  # fewer domains than minDomains: moving cannot help
    ],
)
def test_pods_leave_the_fullest_domain_until_the_skew_is_within_max_skew(
    count: int, spread_kw: dict[str, Any], params: dict[str, Any], expected: int
):
    got = evicted([*ZONES, *web(count, **spread_kw)], strategy(SPREAD["name"], **params))
    assert len(got) == expected


def test_spread_counts_every_matching_pod_but_moves_only_the_selected():
    pods = web(4)
    pods[0]["metadata"]["labels"]["movable"] = "yes"
    params = {"labelSelector": {"matchLabels": {"movable": "yes"}}}
    assert evicted([*ZONES, *pods], strategy(SPREAD["name"], **params)) == ["default/web-0"]


def test_spread_is_rebalanced_end_to_end():
    result = simulate_objects([*ZONES, *web(4)], conf=resched_config(SPREAD, limit=5), sessions=5)
    nodes = sorted(v["spec"].get("nodeName") for v in result.state.raw_pods.values())
    assert nodes == ["n1", "n1", "n2", "n2"]
    assert "zone=a has 4 pods matching" in render_eviction(result.evictions[0])


def test_every_move_leaves_an_event_on_the_pod_saying_why():
    objs = [node("n1"), node("n2"), status(rs_pod("p", "n1"), containerStatuses=[{"restartCount": 7}])]
    conf = resched_config(strategy("removePodsHavingTooManyRestarts", podRestartThreshold=5), interval="0s")
    result = simulate_objects(objs, conf=conf, sessions=1)
    events = [
        (e.object, e.reason, e.message) for e in result.history[0].events if e.object == "Pod default/p"
    ]
    assert events == [
        (
            "Pod default/p",
            "Rescheduled",
            "shuffle: default/p evicted on n1; rescheduling (removePodsHavingTooManyRestarts): 7 restarts,"
            " threshold 5",
        )
    ]


@pytest.mark.parametrize(
    ("other", "params", "expected"),
    [
        (node("n2", labels={"zone": "b"}), {}, 2),
        # The emptier zone's node does not take the pods: evicted, they would come straight back.
        (node("n2", labels={"zone": "b"}, taints=[{"key": "k", "effect": "NoSchedule"}]), {}, 0),
        (node("n2", cpu="500m", labels={"zone": "b"}), {}, 0),
        (node("n2", cpu="1", labels={"zone": "b"}), {}, 1),  # room for one
        (node("n2", labels={"zone": "b"}, unschedulable=True), {}, 0),
        # Without topologyBalanceNodeFit, as the descheduler: evicted whether they fit or not.
        (node("n2", cpu="500m", labels={"zone": "b"}), {"topologyBalanceNodeFit": False}, 2),
    ],
)
def test_spread_moves_only_pods_that_fit_a_node_of_a_domain_below_the_ideal(
    other: Obj, params: dict[str, Any], expected: int
):
    objs = [node("n1", labels={"zone": "a"}), other, *web(4)]
    assert len(evicted(objs, strategy(SPREAD["name"], **params))) == expected


def test_spread_counts_domains_by_each_pods_own_node_selector_whatever_the_input_order():
    # x-pods may run anywhere (zones a, b, c: 2/1/0, over maxSkew 1); y-pods only on pool=x nodes (zones
    # a, b: 2/1, balanced). The constraint is judged for each: x0 leaves a for c. Which pod came first
    # decided it before (x first: x0 evicted; y first: nothing).
    nodes = [
        node("n1", labels={"zone": "a", "pool": "x"}),
        node("n2", labels={"zone": "b", "pool": "x"}),
        node("n3", labels={"zone": "c"}),
    ]
    constraint = spread("zone", match={"app": "web"})

    def member(name: str, node_name: str, **kw: Any) -> Obj:
        return rs_pod(name, node_name, labels={"app": "web"}, spread=[constraint], **kw)

    x0 = member("x0", "n1")
    y0, y1 = member("y0", "n1", node_selector={"pool": "x"}), member("y1", "n2", node_selector={"pool": "x"})
    for pods in ([x0, y0, y1], [y0, y1, x0]):
        assert evicted([*nodes, *pods], SPREAD) == ["default/x0"], [p["metadata"]["name"] for p in pods]


def test_remove_duplicates_counts_the_nodes_any_of_the_owners_pods_could_use():
    # web-0 may only run on n1 (pool=a); its siblings anywhere: 4 replicas over 3 nodes, at most 2 per
    # node. Before, the nodes were web-0's alone (one: nothing to spread over). web-0 itself stays, as
    # evicted it would come back to n1.
    nodes = [node("n1", labels={"pool": "a"}), node("n2"), node("n3")]
    web = [rs_pod(f"web-{i}", "n1", owner="ReplicaSet/web") for i in range(4)]
    web[0]["spec"]["nodeSelector"] = {"pool": "a"}
    assert evicted([*nodes, *web], strategy("removeDuplicates")) == ["default/web-1", "default/web-2"]


# --- states, exit codes, included taints ---------------------------------------------------------------


def lifetime_pods() -> list[Obj]:
    lost = status(rs_pod("lost", "n1"), phase="Failed", reason="NodeLost")
    unknown = status(rs_pod("unknown", "n1"), phase="Unknown")
    init = status(
        rs_pod("init", "n1", phase="Pending"),
        initContainerStatuses=[{"name": "i", "state": {"waiting": {"reason": "ImagePullBackOff"}}}],
    )
    debug = status(
        rs_pod("debug", "n1"),
        ephemeralContainerStatuses=[{"name": "d", "state": {"waiting": {"reason": "ErrImagePull"}}}],
    )
    return [node("n1"), node("n2"), lost, unknown, init, debug, rs_pod("running", "n1")]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, ["debug", "init", "running", "unknown"]),  # without states: live pods, not failed ones
        ({"states": ["NodeLost"]}, ["lost"]),  # the pod's reason
        ({"states": ["Unknown"]}, ["unknown"]),  # the phase (volsched reads the pod as bound)
        ({"states": ["Failed"]}, ["lost"]),
        ({"states": ["ImagePullBackOff"]}, []),
        ({"states": ["ImagePullBackOff"], "includingInitContainers": True}, ["init"]),
        ({"states": ["ErrImagePull"]}, []),
        ({"states": ["ErrImagePull"], "includingEphemeralContainers": True}, ["debug"]),
    ],
)
def test_pod_life_time_states_match_phases_pod_reasons_and_every_kind_of_container(
    params: dict[str, Any], expected: list[str]
):
    got = evicted(lifetime_pods(), strategy("podLifeTime", maxPodLifeTimeSeconds=60, **params))
    assert got == [f"default/{name}" for name in expected]


def exited(name: str, code: int, *, init: bool = False) -> Obj:
    key = "initContainerStatuses" if init else "containerStatuses"
    obj = failed(name)
    obj["status"][key] = [{"name": "c", "state": {"terminated": {"reason": "Error", "exitCode": code}}}]
    return obj


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, ["default/one", "default/seven", "default/seven-init"]),
        ({"exitCodes": [7]}, ["default/seven"]),
        ({"exitCodes": [7], "includingInitContainers": True}, ["default/seven", "default/seven-init"]),
        ({"exitCodes": [7], "reasons": ["OOMKilled"]}, []),  # both must match
        ({"exitCodes": [1, 7], "reasons": ["Error"]}, ["default/one", "default/seven"]),
    ],
)
def test_failed_pods_are_removed_by_exit_code(params: dict[str, Any], expected: list[str]):
    objs = [node("n1"), node("n2"), exited("one", 1), exited("seven", 7), exited("seven-init", 7, init=True)]
    assert evicted(objs, strategy("removeFailedPods", **params)) == expected


def test_the_reason_names_the_exit_code():
    objs = [node("n1"), node("n2"), exited("seven", 7)]
    result = simulate_objects(
        objs, conf=resched_config(strategy("removeFailedPods", exitCodes=[7])), sessions=1
    )
    assert result.evictions[0].reason.detail == (
        "rescheduling (removeFailedPods): pod failed (Error, exit code 7) on node n1"
    )


@pytest.mark.parametrize(
    ("states", "including_init", "expected"),
    [
        ([], False, ["default/looping", "default/running", "default/starting"]),  # init restarts not counted
        (["Running"], False, ["default/running"]),
        (["CrashLoopBackOff"], False, ["default/looping"]),
        (["CrashLoopBackOff"], True, ["default/looping", "default/looping-init"]),
    ],
)
def test_too_many_restarts_states_narrow_by_phase_or_crash_loop(
    states: list[str], including_init: bool, expected: list[str]
):
    def restarted(name: str, phase: str, waiting: str = "", *, init: bool = False) -> Obj:
        state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
        key = "initContainerStatuses" if init else "containerStatuses"
        return status(
            rs_pod(name, "n1", phase=phase), **{key: [{"name": "c", "restartCount": 9, "state": state}]}
        )

    objs = [
        node("n1"),
        node("n2"),
        restarted("running", "Running"),
        restarted("looping", "Pending", "CrashLoopBackOff"),
        restarted("looping-init", "Pending", "CrashLoopBackOff", init=True),
        restarted("starting", "Pending", "ContainerCreating"),
    ]
    params: dict[str, Any] = {"podRestartThreshold": 5, "includingInitContainers": including_init}
    if states:
        params["states"] = states
    assert evicted(objs, strategy("removePodsHavingTooManyRestarts", **params)) == expected


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, ["default/a", "default/b"]),
        ({"includedTaints": ["dedicated"]}, ["default/a"]),
        ({"includedTaints": ["dedicated=gpu"]}, ["default/a"]),
        ({"includedTaints": ["dedicated=cpu"]}, []),
        ({"includedTaints": ["maintenance"], "excludedTaints": ["maintenance"]}, []),
        ({"includedTaints": []}, []),  # named, but none: no taint counts (as in the descheduler)
    ],
)
def test_included_taints_name_the_only_taints_that_count(params: dict[str, Any], expected: list[str]):
    objs = [
        node("gpu", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        node("old", taints=[{"key": "maintenance", "effect": "NoSchedule"}]),
        node("free"),
        rs_pod("a", "gpu"),
        rs_pod("b", "old"),
    ]
    assert evicted(objs, strategy("removePodsViolatingNodeTaints", **params)) == expected


def test_required_during_execution_node_affinity_is_accepted_and_moves_nothing():
    objs = [
        node("old"),
        node("new", labels={"disk": "ssd"}),
        rs_pod("p", "old", node_selector={"disk": "ssd"}),
    ]
    kinds = ["requiredDuringSchedulingRequiredDuringExecution"]
    assert evicted(objs, strategy("removePodsViolatingNodeAffinity", nodeAffinityType=kinds)) == []
    both = [*kinds, "requiredDuringSchedulingIgnoredDuringExecution"]
    assert evicted(objs, strategy("removePodsViolatingNodeAffinity", nodeAffinityType=both)) == ["default/p"]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            strategy("podLifeTime", maxPodLifeTimeSeconds=5, states=["Runing"]),
            "states: unknown Runing; known:",
        ),
        (
            strategy("removePodsHavingTooManyRestarts", podRestartThreshold=5, states=["Pending"]),
            "states: unknown",
        ),
        (strategy("removeFailedPods", exitCodes=["1"]), "exitCodes: expected a list of integers"),
        (
            strategy("removePodsViolatingTopologySpreadConstraint", constraints=["Soft"]),
            "constraints: unknown Soft; known: DoNotSchedule, ScheduleAnyway",
        ),
        (
            strategy(
                "removePodsViolatingTopologySpreadConstraint",
                constraints=["DoNotSchedule"],
                includeSoftConstraints=True,
            ),
            "give constraints or includeSoftConstraints",
        ),
        (strategy("removePodsViolatingNodeTaints", includedTaints="a"), "includedTaints: expected a list"),
        (
            strategy("podLifeTime", maxPodLifeTimeSeconds=5, includingEphemeralContainers="yes"),
            "expected true",
        ),
    ],
)
def test_bad_state_and_exit_code_params_fail_at_load(entry: dict[str, Any], message: str):
    assert message in rescheduling_refused({"strategies": [entry]})


def test_the_pod_in_most_anti_affinity_violations_leaves_first_whatever_its_name():
    # b and c hold one identical rule against app=z: z is in two violations, b and c in one each. Counted
    # per rule, all three had one and the names decided: b and c were evicted, z stayed.
    objs = [
        node("n1"),
        node("n2"),
        rs_pod("z", "n1", labels={"app": "z"}),
        rs_pod("b", "n1", labels={"app": "b"}, affinity=repels("z")),
        rs_pod("c", "n1", labels={"app": "c"}, affinity=repels("z")),
    ]
    assert evicted(objs, strategy("removePodsViolatingInterPodAntiAffinity")) == ["default/z"]
