"""The session's cached node views: refreshed one changed node at a time (with the scalar fast path of
the scoring plugins), they must agree exactly with a fresh evaluation over all nodes, or placements
would depend on the order tasks happened to be placed in."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from tests.builders import node, pod, pod_term, snapshot_of
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.statement import Statement
from volsched.model.vocabulary import (
    NodeSpec,
    PodGroupPhase,
    PodGroupSpec,
    QueueSpec,
    QueueState,
    Task,
    TaskStatus,
)

CONFIGS = {
    "default": None,
    "most-requested": """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: gang}, {name: predicates}, {name: proportion},
            {name: nodeorder, arguments: {mostrequested.weight: 2, balancedresource.weight: 0}},
            {name: binpack, arguments: {binpack.resources: nvidia.com/gpu, binpack.resources.nvidia.com/gpu: 3}}]
""",
    # Three scored resources (balanced by standard deviation), unequal weights, pods without requests.
    "weighted-extended": """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: gang}, {name: predicates}, {name: proportion},
            {name: nodeorder, arguments: {mostrequested.weight: 1, nodeorder.cpu: 3,
                                          nodeorder.resources: nvidia.com/gpu,
                                          nodeorder.resources.nvidia.com/gpu: 2}}]
""",
}


def _snapshot(seed: int):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    nodes = [
        NodeSpec(
            name=f"n{i:03d}",
            allocatable={
                "cpu": float(rng.choice([4, 8, 16])),
                "memory": rng.choice([8, 32, 64]) * 2.0**30,
                "pods": 110.0,
                **({"nvidia.com/gpu": 4.0} if i % 5 == 0 else {}),
            },
            labels={},
            taints=(),
            unschedulable=False,
            ready=i % 17 != 0,
        )
        for i in range(60)
    ]
    tasks = []
    for j in range(300):
        gpu = {"nvidia.com/gpu": 1.0} if j % 7 == 0 else {}
        cpu = rng.choice([0.25, 0.5, 1.0, 2.0, 3.0])
        tasks.append(
            Task(namespace="ns", name=f"t{j:03d}", uid=f"t{j}", job_key="ns/g", priority=0,
                 request_map={"cpu": cpu, "memory": cpu * 2.0**30 * rng.choice([1, 3]), "pods": 1.0, **gpu},
                 status=TaskStatus.PENDING, node_name=None, scheduler_name="volsched", creation=float(j),
                 # every third pod has a container without requests (scores count it 100m and 200Mi)
                 score_extra=(0.1, 200.0 * 2**20) if j % 3 == 0 else None)
        )  # fmt: skip
    pg = PodGroupSpec(namespace="ns", name="g", min_member=1, min_resources=None, queue="default",
                      priority_class_name="", phase=PodGroupPhase.INQUEUE)  # fmt: skip
    q = QueueSpec("default", weight=1, capability=None, guarantee={}, reclaimable=True, state=QueueState.OPEN)
    return snapshot_of(nodes=nodes, tasks=tasks, podgroups=[pg], queues=[q])


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_node_views_match_a_fresh_evaluation(config, seed):
    text = CONFIGS[config]
    session = open_session(_snapshot(seed), load_config(text=text) if text else load_config())
    tasks = list(session.jobs["ns/g"].tasks.values())
    placed = 0
    for task in tasks:
        choice = session.choose_node(task)
        if choice.node is None:
            continue
        statement = Statement(session)
        statement.allocate(task, choice.node)
        statement.commit()
        placed += 1
        if placed % 25 == 0:
            for probe in tasks[:40]:
                cached = session._view(probe)
                fresh = session._evaluate(probe, session._all_nodes, None)
                for name in ("predicate", "fits_idle", "fits_future", "score", "ready_score"):
                    assert np.array_equal(getattr(cached, name), getattr(fresh, name)), (name, probe.key)
    assert placed > 100


def _web_session(*extra: dict[str, Any]) -> tuple[Any, dict[str, Task], list[str]]:
    """Three 4-cpu nodes (and ``extra``), a web pod running on n1, pending web pods p (anti-affinity
    against web pods by hostname) and q; returns the session, its tasks by key, and the keys of the
    tasks the constraint filters are asked about, in order."""
    away = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [pod_term(match={"app": "web"})]
        }
    }
    state = ClusterState()
    for obj in [
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        node("n3", cpu="4"),
        *extra,
        pod("web-1", node="n1", labels={"app": "web"}),
        pod("p", labels={"app": "web"}, affinity=away),
        pod("q", labels={"app": "web"}),
    ]:
        state.apply(obj)
    session = open_session(state.snapshot(now=5.0), load_config())
    tasks = {k: t for job in session.jobs.values() for k, t in job.tasks.items()}
    asked: list[str] = []
    flat = session._flat("constraint")

    def counted(name: str, fn: Any) -> Any:
        return lambda task: (asked.append(task.key), fn(task))[1]

    flat[:] = [(name, counted(name, fn)) for name, fn in flat]
    return session, tasks, asked


def test_the_pod_filters_are_asked_once_per_task_until_a_node_changes() -> None:
    """choose_node, feasible_nodes and blocked_by_pods ask about one task in a row: the filters that
    depend on other pods answer once; a placement changes their answer and they are asked again."""
    session, tasks, asked = _web_session()
    p, q = tasks["default/p"], tasks["default/q"]
    session.choose_node(p)
    assert session.feasible_nodes(p).tolist() == [False, True, True]
    assert session.blocked_by_pods(p).tolist() == [True, False, False]
    assert asked == ["default/p"]
    statement = Statement(session)
    statement.allocate(q, 1)  # another web pod on n2: p is kept off it now
    statement.commit()
    assert session.feasible_nodes(p).tolist() == [False, False, True]
    assert session.blocked_by_pods(p).tolist() == [True, True, False]
    assert asked.count("default/p") == 2


def test_one_nodes_feasibility_is_the_all_nodes_answer_there() -> None:
    """feasible_at (what preempt and reclaim ask of the one node they try) says what feasible_nodes
    says there, through the node filters, the pod filters and a placement limit, and asks the pod
    filters no more often (pod_filter_reasons neither)."""
    session, tasks, asked = _web_session(node("n4", cpu="4", ready=False), node("n5", cpu="4"))
    p, q = tasks["default/p"], tasks["default/q"]

    def each() -> list[bool]:
        return [session.feasible_at(p, i) for i in range(len(session.nodes))]

    assert each() == session.feasible_nodes(p).tolist() == [False, True, True, False, True]
    assert session.pod_filter_reasons(p, 0) == ["pod anti-affinity (app=web, kubernetes.io/hostname)"]
    assert session.pod_filter_reasons(p, 1) == []
    assert asked == ["default/p"]
    statement = Statement(session)
    statement.allocate(q, 1)
    assert each() == session.feasible_nodes(p).tolist() == [False, False, True, False, True]
    assert asked.count("default/p") == 2
    session.node_limit = np.array([True, True, True, True, False])
    assert each() == session.feasible_nodes(p).tolist() == [False, False, True, False, False]
    statement.discard()
    assert each() == session.feasible_nodes(p).tolist() == [False, True, True, False, False]


def test_tasks_alike_are_explained_unfit_once_until_a_node_changes() -> None:
    """Why a pod fits no node is worked out once for the pods like it (fifty that ask too much, as
    scheduler_perf's Unschedulable leaves in the way, each its own job) while no node changes; a
    placement changes the numbers, and the next one is worked out again with them."""
    state = ClusterState()
    for obj in [
        node("n1", cpu="4"),
        node("n2", cpu="2"),
        *(pod(f"big-{i}", cpu="9") for i in range(5)),
        pod("small", cpu="3"),
    ]:
        state.apply(obj)
    session = open_session(state.snapshot(now=5.0), load_config())
    tasks = {k: t for job in session.jobs.values() for k, t in job.tasks.items()}
    explained: list[str] = []
    real = session._explain_unfit
    session._explain_unfit = lambda task: (explained.append(task.key), real(task))[1]  # type: ignore[method-assign]
    reasons = {session.choose_node(tasks[f"default/big-{i}"]).reason for i in range(5)}
    assert reasons == {"0/2 nodes fit: 2 insufficient cpu (needs 9, most idle 4)"}
    assert explained == ["default/big-0"]
    statement = Statement(session)
    statement.allocate(tasks["default/small"], 0)
    statement.commit()
    assert session.choose_node(tasks["default/big-1"]).reason == (
        "0/2 nodes fit: 2 insufficient cpu (needs 9, most idle 2)"
    )
    assert explained == ["default/big-0", "default/big-1"]
