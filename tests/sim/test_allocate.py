"""allocate, backfill and the predicates, nodeorder and binpack plugins through the simulator."""

from __future__ import annotations

import pytest

from tests.builders import (
    config,
    count_placed,
    node,
    placed,
    pod,
    podgroup,
    pods,
    priority_class,
    queue,
    run,
)


def test_a_gang_starts_all_at_once_or_not_at_all():
    # 9 cpu in three nodes of 3 (8 cpu would fit), but only three 2-cpu pods fit at a time: it can never
    # run, so it asks its queue for no share and is not admitted (it takes no room from other gangs).
    objs = [node(f"n{i}", cpu="3") for i in range(3)]
    objs += [podgroup("big", min_member=4), *pods("w", 4, group="big", cpu="2")]
    data = run(objs)
    assert placed(data) == {}
    assert data["podgroups"]["default/big"]["phase"] == "Pending"
    group_event = next(e["message"] for e in data["events"] if e["object"] == "PodGroup default/big")
    assert data["podgroups"]["default/big"]["reason"] in group_event  # -o json says why it waits too
    assert group_event.startswith(  # one 2-cpu pod per 3-cpu node: three, never four
        "can never run as it stands: at most 3 of its pods fit on the 3 ready node(s), even were they empty"
        " (minMember 4; each pod asks at least cpu 2); not admitted to queue default"
    )


def test_a_gang_that_fits_starts_and_its_extra_members_fill_in():
    objs = [node("n1", cpu="4"), podgroup("g", min_member=2), *pods("w", 6, group="g", cpu="1")]
    data = run(objs)
    assert count_placed(data, "default/w-") == 4
    assert data["podgroups"]["default/g"] == {
        "phase": "Running",
        "queue": "default",
        "minMember": 2,
        "scheduled": 4,
        "reason": None,  # running: nothing to say
        "owner": None,  # a PodGroup object, not one standing for a controller owner
    }


def test_a_gang_with_too_few_pods_is_invalid_and_says_so():
    objs = [node("n1"), podgroup("g", min_member=3), *pods("w", 2, group="g")]
    data = run(objs)
    assert placed(data) == {}
    assert any("2 pod(s) exist, minMember is 3" in e["message"] for e in data["events"])


def test_pods_of_other_schedulers_are_not_placed_but_their_usage_counts():
    objs = [
        node("n1", cpu="4"),
        pod("theirs", cpu="3", node="n1", scheduler="default-scheduler"),
        pod("unbound", cpu="1", scheduler="default-scheduler"),
        pod("a", cpu="1"),
        pod("b", cpu="1"),
    ]
    data = run(objs)
    assert data["pods"]["default/unbound"]["node"] is None
    assert count_placed(data, "default/a") + count_placed(data, "default/b") == 1


def test_pending_reason_is_in_numbers():
    objs = [node(f"n{i}", cpu="1") for i in range(4)] + [pod("big", cpu="2")]
    data = run(objs)
    msg = next(e["message"] for e in data["events"] if e["object"] == "Pod default/big")
    assert msg == (
        "can never run as it stands: none of the 4 ready node(s) could hold it, even were they empty (it asks"
        " cpu 2); 0/4 nodes fit: 4 insufficient cpu (needs 2, most idle 1); set aside, as the nodes could not hold it"
        " even empty: tried again once a node joins, leaves or changes, the pod or its queue changes, or in"
        " 5m; the figures here are those of its last try"
    )


@pytest.mark.parametrize(
    ("pod_kwargs", "expected_node", "reason"),
    [
        ({"node_selector": {"disk": "ssd"}}, "n2", "didn't match the pod's node selector"),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                            ]
                        }
                    }
                }
            },
            "n2",
            "didn't match the pod's node affinity",
        ),
        (
            {
                "cpu": "2",
                "tolerations": [
                    {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
                ],
            },
            "n3",
            None,
        ),
        ({}, "n1", None),
    ],
    ids=["node-selector", "required-affinity", "toleration-opens-tainted-node", "plain"],
)
def test_node_filters(pod_kwargs, expected_node, reason):
    objs = [
        node("n1", cpu="1", labels={"zone": "a"}),
        node("n2", cpu="1", labels={"zone": "b", "disk": "ssd"}),
        node("n3", cpu="16", taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]),
        node("n4", cpu="16", unschedulable=True),
        node("n5", cpu="16", ready=False),
        pod("p", **{"cpu": "1", **pod_kwargs}),
    ]
    if expected_node == "n1":
        objs = [o for o in objs if o["metadata"]["name"] not in ("n2",)]
    data = run(objs)
    assert data["pods"]["default/p"]["node"] == expected_node
    if reason:
        objs.append(pod("q", **{"cpu": "1", **pod_kwargs}))
        data = run(objs)
        msg = next(
            e["message"]
            for e in data["events"]
            if e["object"] == "Pod default/q" and e["reason"] == "FailedScheduling"
        )
        assert reason in msg
        assert "1 node(s) were unschedulable (cordoned)" in msg
        assert "1 node(s) not ready" in msg
        assert "had untolerated taint {dedicated: ml}" in msg


def test_max_pods_is_respected():
    objs = [node("n1", cpu="16", pods="3"), *pods("p", 5, cpu="1")]
    data = run(objs)
    assert count_placed(data, "default/p") == 3
    assert any("insufficient pods (max pods reached)" in e["message"] for e in data["events"])


def test_best_effort_pods_are_backfilled_and_count_against_max_pods():
    objs = [node("n1", cpu="1", pods="2"), pod("busy", cpu="1"), *pods("be", 3, cpu=None)]
    data = run(objs)
    assert data["pods"]["default/busy"]["node"] == "n1"
    assert count_placed(data, "default/be") == 1


def test_higher_priority_job_goes_first_when_capacity_is_short():
    objs = [
        node("n1", cpu="2"),
        priority_class("high", 100),
        pod("low", cpu="2", created="2026-01-01T00:00:00Z"),
        pod("high", cpu="2", priority_class="high", created="2026-01-02T00:00:00Z"),
    ]
    data = run(objs)
    assert data["pods"]["default/high"]["node"] == "n1"
    assert data["pods"]["default/low"]["node"] is None


def test_older_job_goes_first_among_equals():
    objs = [
        node("n1", cpu="2"),
        pod("young", cpu="2", created="2026-01-02T00:00:00Z"),
        pod("old", cpu="2", created="2026-01-01T00:00:00Z"),
    ]
    assert placed(run(objs)) == {"default/old": "n1"}


SPREAD = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: gang}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
PACK = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: gang}, {name: predicates}, {name: proportion}, {name: binpack}]
"""


@pytest.mark.parametrize(
    ("conf", "distinct_nodes"), [(SPREAD, 4), (PACK, 1)], ids=["nodeorder-spreads", "binpack-packs"]
)
def test_scoring_spreads_or_packs(conf, distinct_nodes):
    objs = [node(f"n{i}", cpu="8") for i in range(4)] + pods("p", 4, cpu="1")
    data = run(objs, conf=config(conf))
    assert len(set(placed(data).values())) == distinct_nodes


def test_closed_queue_admits_no_new_jobs():
    objs = [node("n1"), queue("shut", state="Closed"), podgroup("g", queue="shut"), pod("p", group="g")]
    data = run(objs)
    assert placed(data) == {}
    assert any("queue shut is closed" in e["message"] for e in data["events"])


def test_overcommit_holds_back_jobs_beyond_the_factor():
    objs = [
        node("n1", cpu="10"),
        podgroup("a", min_member=8, created=None) if False else podgroup("a", min_member=8),
        *pods("a", 8, group="a", cpu="1"),
        podgroup("b", min_member=5),
        *pods("b", 5, group="b", cpu="1"),
    ]
    data = run(objs, sessions=1)
    assert data["podgroups"]["default/a"]["phase"] == "Running"
    assert data["podgroups"]["default/b"]["phase"] == "Pending"
    assert any("overcommit: minResources cpu 5 > room 4" in e["message"] for e in data["events"])


def test_sessions_are_reproducible():
    objs = [node(f"n{i}", cpu="4") for i in range(5)]
    for j in range(6):
        objs += [
            podgroup(f"g{j}", ns=f"ns{j % 3}", min_member=2),
            *pods(f"g{j}", 3, ns=f"ns{j % 3}", group=f"g{j}", cpu="1"),
        ]
    assert run(objs) == run(objs)
