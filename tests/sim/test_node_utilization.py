"""low- and highNodeUtilization as the descheduler computes them: utilization by requests or by measured
usage, only the resources the thresholds name (extended ones too), thresholds relative to the mean,
namespaces that never give pods up, pods moved only where a node takes them, and BestEffort before
Burstable among pods of one priority."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import Obj, first_evictions, node, pod, resched_config, rescheduling_refused


def measured(name: str, cpu: float, memory: float = 10, **kw: Any) -> Obj:
    return node(
        name, cpu="10", annotations={"volsched.io/usage": json.dumps({"cpu": cpu, "memory": memory})}, **kw
    )


def owned(name: str, node_name: str, **kw: Any) -> Obj:
    return pod(name, node=node_name, owner=f"ReplicaSet/{name}", **kw)


def low(thresholds: dict[str, float], targets: dict[str, float], **params: Any) -> dict[str, Any]:
    return {
        "name": "lowNodeUtilization",
        "params": {"thresholds": thresholds, "targetThresholds": targets, **params},
    }


def evicted(objs: list[Obj], *strategies: dict[str, Any]) -> list[str]:
    return sorted(first_evictions(objs, resched_config(*strategies, interval="0s", limit=20)))


CPU_LOW = low({"cpu": 20}, {"cpu": 50}, utilization="requests")


@pytest.mark.parametrize(
    ("hot_pods", "expected"),
    [
        (4, 2),  # 4 of 5 cpu requested (80%): two leave (80 -> 60 -> 40, not over 50)
        (2, 0),  # 40%: not over target
    ],
)
def test_utilization_by_requests_needs_no_measurement(hot_pods: int, expected: int):
    objs = [node("hot", cpu="5"), node("cold", cpu="5"), *(owned(f"w{i}", "hot") for i in range(hot_pods))]
    assert len(evicted(objs, CPU_LOW)) == expected


def test_by_requests_other_schedulers_pods_count_too():
    # The cold node is full by a pod volsched does not place: it is not underutilized.
    objs = [
        node("hot", cpu="5"),
        node("cold", cpu="5"),
        *(owned(f"w{i}", "hot") for i in range(4)),
        pod("other", node="cold", cpu="4", scheduler="default-scheduler"),
    ]
    assert evicted(objs, CPU_LOW) == []


def test_a_resource_without_a_threshold_is_not_looked_at():
    # cold's memory is 100% used, but the thresholds name cpu only: cold is underutilized. Read as a
    # threshold of 100%, the memory kept cold from being underutilized and nothing moved.
    objs = [
        measured("hot", 90),
        measured("cold", 5, memory=100),
        *(owned(f"w{i}", "hot", cpu="2") for i in range(4)),
    ]
    assert len(evicted(objs, low({"cpu": 20}, {"cpu": 50}))) == 2


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, 0),  # nothing at or below 5%
        ({"useDeviationThresholds": True}, 1),  # mean 50: under 45 (a), over 80 (c): 90% -> 80%
    ],
)
def test_deviation_thresholds_are_distances_from_the_mean(params: dict[str, Any], expected: int):
    objs = [
        measured("a", 10),
        measured("b", 50),
        measured("c", 90),
        *(owned(f"w{i}", "c", cpu="1") for i in range(4)),
    ]
    got = evicted(objs, low({"cpu": 5}, {"cpu": 30}, **params))
    assert len(got) == expected
    assert all(name.startswith("default/w") for name in got)


def test_evictable_namespaces_keep_their_pods():
    pods = [owned(f"w{i}", "hot", cpu="2", ns="keep" if i < 3 else "default") for i in range(4)]
    strategy = low({"cpu": 20}, {"cpu": 50}, evictableNamespaces={"exclude": ["keep"]})
    assert evicted([measured("hot", 90), measured("cold", 5), *pods], strategy) == ["default/w3"]


def test_extended_resources_have_thresholds_of_their_own():
    objs = [
        node("hot", gpu="4"),
        node("cold", gpu="4"),
        *(owned(f"g{i}", "hot", cpu="100m", gpu="1") for i in range(4)),
    ]
    strategy = low({"nvidia.com/gpu": 20}, {"nvidia.com/gpu": 50}, utilization="requests")
    assert len(evicted(objs, strategy)) == 2  # 100% -> 75% -> 50%


@pytest.mark.parametrize(
    ("cold", "expected"),
    [
        (measured("cold", 5), 2),
        # The underutilized node takes none of them now: evicted, they would only come back.
        (measured("cold", 5, taints=[{"key": "k", "effect": "NoSchedule"}]), 0),
        (node("cold", cpu="3", annotations={"volsched.io/usage": '{"cpu": 5, "memory": 5}'}), 1),
    ],
)
def test_low_node_utilization_moves_only_pods_an_underutilized_node_takes(cold: Obj, expected: int):
    objs = [measured("hot", 90), cold, *(owned(f"w{i}", "hot", cpu="2") for i in range(4))]
    assert len(evicted(objs, low({"cpu": 20}, {"cpu": 50}))) == expected


def test_among_pods_of_one_priority_best_effort_goes_first_then_burstable():
    guaranteed = owned("a-guaranteed", "hot", cpu=None)
    guaranteed["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2", "memory": "1Gi"}}
    objs = [
        measured("hot", 90),
        measured("cold", 5),
        guaranteed,
        owned("b-burstable", "hot", cpu="2"),
        owned("c-best-effort", "hot", cpu=None),
    ]
    conf = resched_config(low({"cpu": 20}, {"cpu": 50}), interval="0s", limit=20)
    # In eviction order: best effort (frees no request, so hot stays over), then burstable.
    assert first_evictions(objs, conf)[:2] == ["default/c-best-effort", "default/b-burstable"]


def test_high_node_utilization_by_requests_packs_onto_the_fullest_node_that_takes_the_pod():
    objs = [
        node("sparse", cpu="10"),
        node("busy", cpu="10"),
        owned("s0", "sparse"),
        owned("b0", "busy", cpu="6"),
    ]
    high = {"name": "highNodeUtilization", "params": {"thresholds": {"cpu": 20}, "utilization": "requests"}}
    assert evicted(objs, high) == ["default/s0"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"utilization": "real"}, "params.utilization: expected one of requests, usage"),
        (
            {"evictableNamespaces": {"include": ["a"]}},
            "evictableNamespaces: expected {exclude: [namespaces]}",
        ),
        (
            {"metricsUtilization": {"source": "Prometheus", "prometheus": {"query": "x"}}},
            "metricsUtilization: only {metricsServer: true} or {source: KubernetesMetrics}",
        ),
        ({"thresholds": {"cpu": 20, "my gpu": 5}}, "'my gpu' is not a resource name"),
        ({"thresholds": {"cpu": 20, "pods": 5}}, "must name the same resources"),
        ({"useDeviationThresholds": "yes"}, "useDeviationThresholds: expected true or false"),
    ],
)
def test_bad_utilization_params_fail_at_load(params: dict[str, Any], message: str):
    entry = low({"cpu": 20}, {"cpu": 50})
    entry["params"].update(params)
    assert message in rescheduling_refused({"strategies": [entry]})


def test_metrics_utilization_reads_real_usage():
    # By requests hot is empty; measured, it is at 90%.
    objs = [measured("hot", 90), measured("cold", 5), *(owned(f"w{i}", "hot", cpu="100m") for i in range(4))]
    by_requests = low({"cpu": 20}, {"cpu": 50}, utilization="requests")
    by_usage = low({"cpu": 20}, {"cpu": 50}, metricsUtilization={"metricsServer": True})
    assert evicted(objs, by_requests) == []
    assert len(evicted(objs, by_usage)) == 4
