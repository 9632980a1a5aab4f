"""Filters that depend on other pods (inter-pod affinity, anti-affinity, topology spread), host ports and
volume node affinity, against the Kubernetes rules, through the simulator (the real engine)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    Obj,
    namespace,
    node,
    pod,
    pod_affinity,
    pod_term,
    podgroup,
    pv,
    pvc,
    run,
    spread,
)

WORKER = {"app": "worker"}


def zone_nodes(zones: dict[str, int], *, cpu: str = "8", taint_zone: str | None = None) -> list[Obj]:
    out = []
    for z, count in zones.items():
        for i in range(count):
            taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if z == taint_zone else None
            out.append(node(f"{z}-{i}", cpu=cpu, labels={"zone": z}, taints=taints))
    return out


def reason(data: dict[str, Any], key: str) -> str:
    return next(
        e["message"]
        for e in data["events"]
        if e["object"] == f"Pod {key}" and e["reason"] == "FailedScheduling"
    )


def anti(**kwargs: Any) -> Obj:
    return pod_affinity(anti=[pod_term(**kwargs)])


CASES: list[tuple[str, list[Obj], dict[str, str | None]]] = [
    # One worker per node: the third has nowhere to go.
    (
        "anti_affinity_one_per_node",
        [node("n1"), node("n2")]
        + [pod(f"w{i}", labels=WORKER, affinity=anti(match=WORKER)) for i in range(3)],
        {"w0": "*", "w1": "*", "w2": None},
    ),
    # A running pod's anti-affinity repels a new pod that matches it, though the new pod says nothing
    # (n1 is emptier and would win on score otherwise).
    (
        "existing_anti_affinity_is_symmetric",
        [
            node("n1", cpu="16"),
            node("n2", cpu="4"),
            pod("guard", node="n1", cpu="1", affinity=anti(match={"app": "web"})),
            pod("web", labels={"app": "web"}),
        ],
        {"web": "n2"},
    ),
    # Anti-affinity over zones: zone a already runs a worker.
    (
        "anti_affinity_by_zone",
        [
            *zone_nodes({"a": 2, "b": 1}),
            pod("old", node="a-0", labels=WORKER),
            pod("new", labels=WORKER, affinity=anti(key="zone", match=WORKER)),
        ],
        {"new": "b-0"},
    ),
    # Terms see the pod's own namespace only, unless they name namespaces or select them.
    (
        "anti_affinity_own_namespace_only",
        [
            node("n1"),
            pod("other", ns="team-b", node="n1", labels=WORKER),
            pod("w", labels=WORKER, affinity=anti(match=WORKER)),
        ],
        {"w": "n1"},
    ),
    (
        "anti_affinity_named_namespaces",
        [
            node("n1"),
            pod("other", ns="team-b", node="n1", labels=WORKER),
            pod("w", labels=WORKER, affinity=anti(match=WORKER, namespaces=["team-b"])),
        ],
        {"w": None},
    ),
    (
        "anti_affinity_all_namespaces_by_empty_selector",
        [
            node("n1"),
            node("n2"),
            pod("other", ns="team-b", node="n1", labels=WORKER),
            pod("w", labels=WORKER, affinity=anti(match=WORKER, namespace_selector={})),
        ],
        {"w": "n2"},
    ),
    (
        "anti_affinity_namespaces_by_label",
        [
            namespace("team-b", labels={"tier": "batch"}),
            namespace("team-c"),
            node("n1"),
            node("n2"),
            node("n3"),
            pod("b", ns="team-b", node="n1", labels=WORKER),
            pod("c", ns="team-c", node="n2", labels=WORKER),
            pod(
                "w",
                labels=WORKER,
                affinity=anti(match=WORKER, namespace_selector={"matchLabels": {"tier": "batch"}}),
            ),
        ],
        # n1 is taken by team-b's worker (selected); team-c's worker on n2 does not count: n2 or n3.
        {"w": "!n1"},
    ),
    # matchLabelKeys: workers of one job keep apart, workers of different jobs may share a node.
    (
        "match_label_keys_scope_anti_affinity_to_own_job",
        [
            node("n1"),
            pod("a0", node="n1", labels={**WORKER, "job": "a"}),
            pod("b0", labels={**WORKER, "job": "b"}, affinity=anti(match=WORKER, match_label_keys=["job"])),
            pod("a1", labels={**WORKER, "job": "a"}, affinity=anti(match=WORKER, match_label_keys=["job"])),
        ],
        {"b0": "n1", "a1": None},
    ),
    # mismatchLabelKeys: keep away from workers of other tenants only.
    (
        "mismatch_label_keys_repel_other_tenants",
        [
            node("n1"),
            node("n2"),
            pod("x", node="n1", labels={**WORKER, "tenant": "x"}),
            pod("y", node="n2", labels={**WORKER, "tenant": "y"}),
            pod(
                "x1",
                labels={**WORKER, "tenant": "x"},
                affinity=anti(match=WORKER, mismatch_label_keys=["tenant"]),
            ),
        ],
        {"x1": "n1"},
    ),
    # Required affinity: next to the database's zone.
    (
        "affinity_follows_the_selected_pods_domain",
        [
            *zone_nodes({"a": 2, "b": 2}),
            pod("db", node="b-1", labels={"app": "db"}),
            pod("api", affinity=pod_affinity(required=[pod_term("zone", match={"app": "db"})])),
        ],
        {"api": "b-*"},
    ),
    (
        "affinity_without_any_match_is_unschedulable",
        [
            *zone_nodes({"a": 1}),
            pod("api", affinity=pod_affinity(required=[pod_term("zone", match={"app": "db"})])),
        ],
        {"api": None},
    ),
    # The first pod of a group with affinity to itself may go anywhere; the rest follow it.
    (
        "self_affinity_first_pod_goes_anywhere",
        zone_nodes({"a": 1, "b": 1})
        + [
            pod(
                f"p{i}",
                labels={"app": "p"},
                affinity=pod_affinity(required=[pod_term("zone", match={"app": "p"})]),
            )
            for i in range(3)
        ],
        {"p0": "=p1", "p1": "=p2", "p2": "*"},
    ),
    # Spread over zones with maxSkew 1: four pods, two zones, two each.
    (
        "spread_evens_zones",
        zone_nodes({"a": 2, "b": 2})
        + [pod(f"s{i}", labels=WORKER, spread=[spread("zone", match=WORKER)]) for i in range(4)],
        {"zone-count:a": "2", "zone-count:b": "2"},
    ),
    # Zone a already has two: the next pods go to b until it catches up.
    (
        "spread_fills_the_emptier_zone",
        zone_nodes({"a": 1, "b": 1})
        + [pod(f"old{i}", node="a-0", labels=WORKER) for i in range(2)]
        + [pod(f"s{i}", labels=WORKER, spread=[spread("zone", match=WORKER)]) for i in range(2)],
        {"s0": "b-0", "s1": "b-0"},
    ),
    # The API reference's example: zones at 2/2/1 with maxSkew 1 take the next pod only in zone c
    # (though c's node is the busiest); with maxSkew 2 any zone will do, and the scores avoid c.
    (
        "spread_reference_example_max_skew_1",
        [
            *zone_nodes({"a": 1, "b": 1, "c": 1}),
            *[
                pod(f"o{z}{i}", node=f"{z}-0", labels=WORKER)
                for z, k in (("a", 2), ("b", 2), ("c", 1))
                for i in range(k)
            ],
            pod("s", labels=WORKER, spread=[spread("zone", match=WORKER)]),
        ],
        {"s": "c-0"},
    ),
    (
        "spread_reference_example_max_skew_2",
        [
            *zone_nodes({"a": 1, "b": 1, "c": 1}),
            *[
                pod(f"o{z}{i}", node=f"{z}-0", labels=WORKER)
                for z, k in (("a", 2), ("b", 2), ("c", 1))
                for i in range(k)
            ],
            pod("s", labels=WORKER, cpu="0", spread=[spread("zone", match=WORKER, max_skew=2)]),
        ],
        {"s": "*"},
    ),
    # minDomains 3 with two zones: the global minimum counts as 0, so each zone takes one pod.
    (
        "spread_min_domains_caps_each_zone",
        zone_nodes({"a": 1, "b": 1})
        + [
            pod(f"s{i}", labels=WORKER, spread=[spread("zone", match=WORKER, min_domains=3)])
            for i in range(3)
        ],
        {"zone-count:a": "1", "zone-count:b": "1"},
    ),
    # nodeAffinityPolicy: zone c (which the pod cannot use) is empty; Honor leaves it out of the minimum.
    (
        "spread_node_affinity_policy_honor",
        [
            *zone_nodes({"a": 1, "b": 1, "c": 1}),
            pod("oa", node="a-0", labels=WORKER),
            pod("ob", node="b-0", labels=WORKER),
            pod(
                "s",
                labels=WORKER,
                node_selector=None,
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "In", "values": ["a", "b"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
                spread=[spread("zone", match=WORKER)],
            ),
        ],
        {"s": "*"},
    ),
    (
        "spread_node_affinity_policy_ignore",
        [
            *zone_nodes({"a": 1, "b": 1, "c": 1}),
            pod("oa", node="a-0", labels=WORKER),
            pod("ob", node="b-0", labels=WORKER),
            pod(
                "s",
                labels=WORKER,
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "In", "values": ["a", "b"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
                spread=[spread("zone", match=WORKER, node_affinity_policy="Ignore")],
            ),
        ],
        {"s": None},
    ),
    # nodeTaintsPolicy: zone c is tainted; Ignore (the default) counts it (min 0: a and b are at skew),
    # Honor leaves it out (min 1).
    (
        "spread_node_taints_policy_ignore",
        [
            *zone_nodes({"a": 1, "b": 1, "c": 1}, taint_zone="c"),
            pod("oa", node="a-0", labels=WORKER),
            pod("ob", node="b-0", labels=WORKER),
            pod("s", labels=WORKER, spread=[spread("zone", match=WORKER)]),
        ],
        {"s": None},
    ),
    (
        "spread_node_taints_policy_honor",
        [
            *zone_nodes({"a": 1, "b": 1, "c": 1}, taint_zone="c"),
            pod("oa", node="a-0", labels=WORKER),
            pod("ob", node="b-0", labels=WORKER),
            pod("s", labels=WORKER, spread=[spread("zone", match=WORKER, node_taints_policy="Honor")]),
        ],
        {"s": "*"},
    ),
    # A node without the topology key is never a spread candidate.
    (
        "spread_skips_nodes_without_the_key",
        [node("bare"), pod("s", labels=WORKER, spread=[spread("zone", match=WORKER)])],
        {"s": None},
    ),
    # Host ports: the same port once per node; different host IPs do not clash; 0.0.0.0 clashes with all.
    (
        "host_port_once_per_node",
        [
            node("n1"),
            pod("h1", host_ports=[8080]),
            pod("h2", host_ports=[8080]),
            pod("h3", host_ports=[9090]),
        ],
        {"h1": "n1", "h2": None, "h3": "n1"},
    ),
    (
        "host_port_distinct_ips_share",
        [node("n1"), pod("h1", host_ports=[(8080, "10.0.0.1")]), pod("h2", host_ports=[(8080, "10.0.0.2")])],
        {"h1": "n1", "h2": "n1"},
    ),
    (
        "host_port_wildcard_clashes_with_an_ip",
        [node("n1"), pod("run", node="n1", host_ports=[(8080, "10.0.0.1")]), pod("h", host_ports=[8080])],
        {"h": None},
    ),
    # A bound volume's node affinity pins the pod; a missing claim keeps it pending.
    (
        "volume_node_affinity",
        [
            node("n1", cpu="16"),
            node("n2", cpu="4"),
            pvc("data", volume="pv-1"),
            pv("pv-1", nodes=["n2"]),
            pod("db", claims=["data"]),
        ],
        {"db": "n2"},
    ),
    # An unbound claim of no WaitForFirstConsumer class keeps it pending too, as in kube-scheduler: its
    # volume comes from the PersistentVolume controller, where the pod's node may not reach it (claims of
    # a WaitForFirstConsumer class: tests/sim/test_volume_binding.py).
    (
        "unbound_claim_waits_until_bound",
        [node("n1"), pvc("data"), pod("db", claims=["data"])],
        {"db": None},
    ),
    ("missing_claim_is_unschedulable", [node("n1"), pod("db", claims=["nope"])], {"db": None}),
]


@pytest.mark.parametrize(("objs", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_constraint_filters_follow_kubernetes(objs: list[Obj], expected: dict[str, str | None]) -> None:
    data = run(objs)
    where = {k.split("/", 1)[1]: v["node"] for k, v in data["pods"].items()}
    for name, want in expected.items():
        if name.startswith("zone-count:"):
            zone = name.split(":", 1)[1]
            assert sum(1 for n in where.values() if n and n.startswith(f"{zone}-")) == int(str(want)), where
        elif want is None:
            assert where[name] is None, where
        elif want == "*":
            assert where[name] is not None, where
        elif want.startswith("!"):
            assert where[name] is not None and where[name] != want[1:], where
        elif want.startswith("="):
            other = where[want[1:]]
            assert where[name] is not None and other is not None and where[name][0] == other[0], where
        elif want.endswith("*"):
            assert where[name] is not None and where[name].startswith(want[:-1]), where
        else:
            assert where[name] == want, where


def test_pending_reason_counts_anti_affinity_and_capacity() -> None:
    objs = [node(f"n{i}", cpu="4") for i in range(6)]
    objs += [pod(f"run{i}", node=f"n{i}", labels=WORKER, cpu="1") for i in range(4)]
    objs += [pod(f"busy{i}", node=f"n{i}", cpu="2") for i in (4, 5)]
    objs.append(pod("new", cpu="4", labels=WORKER, affinity=anti(match=WORKER)))
    data = run(objs)
    assert reason(data, "default/new") == (
        "0/6 nodes fit: 4 pod anti-affinity (app=worker, kubernetes.io/hostname), "
        "2 insufficient cpu (needs 4, most idle 2)"
    )


def test_pending_reason_names_the_domain_at_its_skew() -> None:
    objs = zone_nodes({"a": 1, "b": 1}, cpu="4")
    objs += [pod("oa0", node="a-0", labels=WORKER), pod("oa1", node="a-0", labels=WORKER)]
    objs += [pod("hog", node="b-0", cpu="4")]
    objs.append(pod("s", labels=WORKER, cpu="1", spread=[spread("zone", match=WORKER)]))
    data = run(objs)
    assert reason(data, "default/s") == (
        "0/2 nodes fit: 1 insufficient cpu (needs 1, most idle 0), 1 pod topology spread (app=worker, zone): "
        "zone=a has 2 matching pod(s), at maxSkew 1 over the least (0)"
    )


def test_discarded_gang_gives_its_anti_affinity_back() -> None:
    # The gang of three cannot be placed one per node on two nodes: the Statement is discarded, and the
    # lone worker after it must see both nodes free of workers again.
    objs: list[Obj] = [node("n1"), node("n2"), podgroup("gang", min_member=3)]
    objs += [
        pod(
            f"g{i}",
            group="gang",
            labels=WORKER,
            affinity=anti(match=WORKER),
            created=f"2026-01-01T00:00:0{i}Z",
        )
        for i in range(3)
    ]
    objs.append(pod("solo", labels=WORKER, affinity=anti(match=WORKER), created="2026-01-01T00:01:00Z"))
    data = run(objs)
    assert data["pods"]["default/solo"]["node"] is not None
    assert [data["pods"][f"default/g{i}"]["node"] for i in range(3)] == [None, None, None]


def test_a_repelled_task_does_not_stop_its_sibling_with_other_labels() -> None:
    # Same request and node spec, but only web is repelled by the guard's anti-affinity: the allocator
    # must not take db's fit from web's.
    objs: list[Obj] = [node("n1"), podgroup("job", min_member=1)]
    objs.append(pod("guard", node="n1", affinity=anti(match={"app": "web"})))
    objs.append(pod("web", group="job", labels={"app": "web"}, created="2026-01-01T00:00:00Z"))
    objs.append(pod("db", group="job", labels={"app": "db"}, created="2026-01-01T00:00:01Z"))
    data = run(objs)
    assert data["pods"]["default/web"]["node"] is None
    assert data["pods"]["default/db"]["node"] == "n1"


def test_a_node_rejected_both_ways_is_counted_once() -> None:
    # The placed workers repel the new one (their own term) and the new one repels them (its term):
    # one reason per node, as kube-scheduler reports it.
    objs: list[Obj] = [node("n1"), node("n2")]
    objs += [pod(f"run{i}", node=f"n{i}", labels=WORKER, affinity=anti(match=WORKER)) for i in (1, 2)]
    objs.append(pod("new", labels=WORKER, affinity=anti(match=WORKER)))
    data = run(objs)
    assert (
        reason(data, "default/new")
        == "0/2 nodes fit: 2 pod anti-affinity (app=worker, kubernetes.io/hostname)"
    )


def test_a_pod_on_an_unbound_claim_is_told_it_waits_for_the_claim() -> None:
    data = run(
        [node("n1"), node("n2"), pvc("data"), pvc("logs", volume="pv-2"), pod("db", claims=["data", "logs"])]
    )
    assert reason(data, "default/db") == (
        "0/2 nodes fit: 2 persistentvolumeclaim(s) data not bound yet (not of a WaitForFirstConsumer "
        "StorageClass: the PersistentVolume controller binds it)"
    )


def test_host_network_pods_take_their_container_ports_on_the_host() -> None:
    # The apiserver defaults a hostNetwork pod's hostPort to its containerPort; the simulator read the
    # ports without one as none, and put two such pods on one node, where they clash.
    objs: list[Obj] = [node("n1")]
    for name in ("a", "b"):
        p = pod(name)
        p["spec"]["hostNetwork"] = True
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 8080}]
        objs.append(p)
    data = run(objs)
    assert sorted(v["node"] or "" for v in data["pods"].values()) == ["", "n1"]
