"""The cases of namespace-fair-share.md, and the 30-GPU realCapability table of
queue-guarantee-reservation.md, through the whole engine (1-cpu pods, one job per namespace)."""

from __future__ import annotations

import pytest

from tests.builders import count_placed, node, podgroup, pods, queue, quota, run


def _cluster_16cpu() -> list[dict]:
    return [node("n1", cpu="8"), node("n2", cpu="8")]


def _workload(spec: dict[str, tuple[str, int]]) -> list[dict]:
    """{namespace: (queue, pods)} -> one PodGroup of 1-cpu pods per namespace."""
    objs: list[dict] = []
    for ns, (q, n) in spec.items():
        objs.append(podgroup("job", ns=ns, queue=q, min_member=1))
        objs += pods("p", n, ns=ns, group="job", cpu="1")
    return objs


CASES = [
    pytest.param(
        {"q1": 1, "q2": 1},
        {},
        {"ns1": ("q1", 5), "ns2": ("q1", 10), "ns3": ("q2", 10), "ns4": ("q2", 2)},
        {"q1": 8, "q2": 8},
        {"ns1": 4, "ns2": 4, "ns3": 6, "ns4": 2},
        id="case1-default-weights",
    ),
    pytest.param(
        {"q1": 1, "q2": 3},
        {"ns1": 3, "ns2": 1, "ns3": 2, "ns4": 6},
        {"ns1": ("q1", 5), "ns2": ("q1", 10), "ns3": ("q2", 10), "ns4": ("q2", 2)},
        {"q1": 4, "q2": 12},
        {"ns1": 3, "ns2": 1, "ns3": 10, "ns4": 2},
        id="case2-queue-and-namespace-weights",
    ),
    pytest.param(
        # Case 3 of the document keeps q1's 4 cpu idle although q1 asks for nothing; idle capacity is
        # lent, so q2 gets all 16 (ns1 4, ns2 12: shares 4/2 == 12/6).
        {"q1": 1, "q2": 3},
        {"ns1": 2, "ns2": 6},
        {"ns1": ("q2", 5), "ns2": ("q2", 20)},
        {"q1": 0, "q2": 16},
        {"ns1": 4, "ns2": 12},
        id="case3-idle-queue-lends-everything",
    ),
]


@pytest.mark.parametrize(("queues", "ns_weights", "workload", "queue_cpu", "ns_cpu"), CASES)
def test_fair_share_cases_of_the_design_document(queues, ns_weights, workload, queue_cpu, ns_cpu):
    objs = _cluster_16cpu()
    objs += [queue(q, weight=w) for q, w in queues.items()]
    objs += [quota(ns, w) for ns, w in ns_weights.items()]
    objs += _workload(workload)
    data = run(objs)
    for q, cpu in queue_cpu.items():
        assert data["queues"][q]["allocated"].get("cpu", 0) == cpu, q
    for ns, cpu in ns_cpu.items():
        assert count_placed(data, f"{ns}/") == cpu, ns
        assert data["namespaces"][ns]["weight"] == ns_weights.get(ns, 1)


def test_a_queue_that_asks_nothing_deserves_nothing():
    objs = [*_cluster_16cpu(), queue("q1"), queue("q2"), *_workload({"ns1": ("q2", 30)})]
    data = run(objs)
    assert data["queues"]["q1"]["deserved"] == {}
    assert data["queues"]["q2"]["deserved"]["cpu"] == 16
    assert count_placed(data, "ns1/") == 16


def test_deserved_is_capped_by_capability_and_the_rest_is_lent():
    objs = [*_cluster_16cpu(), queue("q1", capability={"cpu": "3"}), queue("q2")]
    objs += _workload({"ns1": ("q1", 10), "ns2": ("q2", 20)})
    data = run(objs)
    assert data["queues"]["q1"]["deserved"]["cpu"] == 3
    assert data["queues"]["q1"]["allocated"]["cpu"] == 3
    assert data["queues"]["q2"]["allocated"]["cpu"] == 13


def test_guarantee_reserves_capacity_for_a_queue_without_demand():
    objs = [*_cluster_16cpu(), queue("q1", guarantee={"cpu": "4"}), queue("q2")]
    objs += _workload({"ns2": ("q2", 20)})
    data = run(objs)
    assert data["queues"]["q1"]["deserved"]["cpu"] == 4
    assert data["queues"]["q2"]["realCapability"]["cpu"] == 12
    assert data["queues"]["q2"]["allocated"]["cpu"] == 12
    assert count_placed(data, "ns2/") == 12


def _gpu_nodes() -> list[dict]:
    return [node(f"g{i}", cpu="32", memory="128Gi", gpu="10") for i in range(3)]


def test_real_capability_columns_of_the_30_gpu_example():
    objs = [
        *_gpu_nodes(),
        queue("queue1", guarantee={"nvidia.com/gpu": "5"}),
        queue("queue2"),
        queue("queue3", capability={"nvidia.com/gpu": "10"}),
    ]
    data = run(objs)
    real = {q: data["queues"][q]["realCapability"]["nvidia.com/gpu"] for q in ("queue1", "queue2", "queue3")}
    assert real == {"queue1": 30, "queue2": 25, "queue3": 10}


def test_real_capability_after_queue4_with_a_guarantee_appears():
    objs = [
        *_gpu_nodes(),
        queue("queue1", guarantee={"nvidia.com/gpu": "5"}),
        queue("queue2"),
        queue("queue3", capability={"nvidia.com/gpu": "10"}),
        queue("queue4", weight=2, guarantee={"nvidia.com/gpu": "10"}),
    ]
    data = run(objs)
    real = {
        q: data["queues"][q]["realCapability"]["nvidia.com/gpu"]
        for q in ("queue1", "queue2", "queue3", "queue4")
    }
    assert real == {"queue1": 20, "queue2": 15, "queue3": 10, "queue4": 25}


def test_many_small_jobs_share_by_queue_weight():
    """One single-pod PodGroup per pod: admission must not let one queue's parked jobs use up the
    overcommit room the other queue is owed (light 2, heavy 6 of 8 cpu)."""
    objs = [node("n1", cpu="8"), queue("light", weight=1), queue("heavy", weight=3)]
    for q in ("light", "heavy"):
        for i in range(8):
            objs += [podgroup(f"{q}{i}", queue=q), *pods(f"{q}{i}", 1, group=f"{q}{i}", cpu="1")]
    data = run(objs)
    assert data["queues"]["light"]["allocated"]["cpu"] == 2
    assert data["queues"]["heavy"]["allocated"]["cpu"] == 6
    assert any(
        "> deserved 2" in e["message"]
        for e in data["events"]
        if e["object"].startswith("PodGroup default/light")
    )
