"""Pods of ours on a node whose job the snapshot cannot make: their PodGroup deleted while they run, or
never made. Such a pod holds its room on its node. With no record of its bind (removed by its tenant, a
pod made on its node, or bound before records existed: those with one, tests/unit/test_orphan_pods.py)
it was foreign to the session, as a pod of another scheduler is: no queue counted it, no action evicted
it, so deleting the PodGroup, or removing the record, or making a pod on a node took that room outside
every share. It now counts in its namespace's default queue at its own priority, as a pod standing alone
that reclaim and preempt may take, and is told why (docs/tenancy.md "A PodGroup deleted and not made
again"). When its group appears it is one of the group's members again. The neighbours, which were
never defects, are held to it too: a bound pod whose Queue is gone, pods of ours bound by someone else
at creation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.builders import node, pod, podgroup, preempting_cluster, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session
from volsched.model.cluster import ClusterSnapshot

PREEMPT = load_config(
    text=(Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml").read_text()
)


def _state(*objs: dict[str, Any]) -> ClusterState:
    state = ClusterState()
    for obj in objs:
        state.apply(obj)
    return state


def _held(snap: ClusterSnapshot, name: str) -> list[str]:
    return list(snap.nodes.tasks[snap.nodes.index[name]])


def _idle_cpu(snap: ClusterSnapshot, name: str) -> float:
    return float(snap.nodes.idle[snap.nodes.index[name], snap.space.index("cpu")])


@pytest.mark.parametrize("kept", [True, False], ids=["incremental", "from-scratch"])
def test_a_podgroup_deleted_under_its_running_pods_without_a_record_counts_them_in_the_default_queue(
    kept: bool,
) -> None:
    objs = [
        node("n1", cpu="4"),
        podgroup("g", ns="ns", min_member=2),
        pod("g-0", ns="ns", cpu="1", group="g", node="n1"),
        pod("g-1", ns="ns", cpu="2", group="g", node="n1", phase="Pending"),  # bound, not running yet
        pod("g-2", ns="ns", cpu="1", group="g"),  # pending
    ]
    state = _state(*objs)
    snap = state.snapshot(now=1.0)
    assert sorted(snap.jobs["ns/g"].tasks) == ["ns/g-0", "ns/g-1", "ns/g-2"]
    if not kept:
        state = _state(*objs)
    state.delete("PodGroup", "ns", "g")
    snap = state.snapshot(now=2.0)
    assert "ns/g" not in snap.jobs
    assert _held(snap, "n1") == ["ns/g-0", "ns/g-1"] and _idle_cpu(snap, "n1") == 1.0
    assert snap.foreign_tasks == []  # before: both, counted by no queue
    assert {k: (snap.jobs[k].queue, list(snap.jobs[k].tasks)) for k in ("ns/g-0", "ns/g-1")} == {
        "ns/g-0": ("default", ["ns/g-0"]),
        "ns/g-1": ("default", ["ns/g-1"]),
    }
    told = {obj: (reason, message) for obj, reason, message in snap.problems}
    assert told.pop("Pod ns/g-2") == ("PodGroupNotFound", "pod group g does not exist")
    assert told == {
        f"Pod ns/g-{i}": (
            "PodGroupGone",
            "pod group g does not exist, and this pod runs: it counts in queue default, its namespace's "
            "default queue, at its own priority 0, as a pod standing alone (it carries no record of a bind "
            "by volsched: removed, or never written, as on a pod made on its node or bound before records "
            "existed), which reclaim and preempt may evict (without its PodGroup, no gang of its pods is "
            "kept whole)",
        )
        for i in range(2)
    }
    result = run_session(snap, PREEMPT)
    assert result.binds == [] and result.evictions == []
    assert list(result.rejections) == ["Pod ns/g-2"]  # the bound pods are not told they cannot be placed

    state.apply(podgroup("g", ns="ns", min_member=2))  # made again: its members again
    snap = state.snapshot(now=3.0)
    assert sorted(snap.jobs["ns/g"].tasks) == ["ns/g-0", "ns/g-1", "ns/g-2"]
    assert snap.foreign_tasks == [] and snap.problems == []
    assert _held(snap, "n1") == ["ns/g-0", "ns/g-1"] and _idle_cpu(snap, "n1") == 1.0


def test_a_pod_whose_group_goes_and_comes_back_across_sessions_never_leaves_its_node_over_allocatable() -> (
    None
):
    state = _state(node("n1", cpu="4"), podgroup("g"), pod("g-0", cpu="3", group="g", node="n1"))
    for step in range(6):
        if step % 2:
            state.apply(podgroup("g"))
        else:
            state.delete("PodGroup", "default", "g")
        state.apply(pod(f"new-{step}", cpu="3"))
        snap = state.snapshot(now=1.0 + step)
        assert _idle_cpu(snap, "n1") == 1.0
        snap.thaw()  # (every task on a node is the snapshot's own: a session may evict)
        assert run_session(snap, PREEMPT).binds == []


def test_a_pod_whose_group_is_gone_without_a_record_is_taken_back_in_its_namespaces_default_queue() -> None:
    """Before, no action took lo's four pods once their PodGroup was gone (foreign): hi waited for ever.
    Without a record they count in their namespace's default queue (not q, their PodGroup's): q's hi
    reclaims its share from it."""
    state = preempting_cluster()  # (the control: four low-priority pods of group lo, two preempted)
    assert [e.pod for e in run_session(state.snapshot(now=1.0), PREEMPT).evictions] == ["ns/lo-3", "ns/lo-2"]
    state = preempting_cluster()
    state.snapshot(now=1.0)
    state.delete("PodGroup", "ns", "lo")
    snap = state.snapshot(now=2.0)
    assert {snap.jobs[f"ns/lo-{i}"].queue for i in range(4)} == {"default"}
    result = run_session(snap, PREEMPT)
    assert [(e.pod, e.reason.action) for e in result.evictions] == [
        ("ns/lo-3", "reclaim"),
        ("ns/lo-2", "reclaim"),
    ]


def _reclaiming(*, drop_queue: bool) -> ClusterState:
    state = _state(
        node("n1", cpu="4"),
        queue("q"),
        queue("q2"),
        podgroup("lo", ns="ns", queue="q", phase="Running"),
        *[pod(f"lo-{i}", ns="ns", group="lo", node="n1") for i in range(4)],
        podgroup("hi", ns="ns", queue="q2", phase="Inqueue"),
        pod("hi-0", ns="ns", cpu="2", group="hi"),
    )
    state.snapshot(now=1.0)
    if drop_queue:
        state.delete("Queue", None, "q")
    return state


def test_a_bound_pod_whose_queue_is_gone_holds_its_room_and_is_not_reclaimed() -> None:
    control = run_session(_reclaiming(drop_queue=False).snapshot(now=2.0), PREEMPT)
    assert [e.pod for e in control.evictions] == ["ns/lo-3", "ns/lo-2"]
    snap = _reclaiming(drop_queue=True).snapshot(now=2.0)
    assert _idle_cpu(snap, "n1") == 0.0
    result = run_session(snap, PREEMPT)
    assert result.evictions == [] and result.binds == []


@pytest.mark.parametrize(
    "bound",
    [
        [podgroup("g", min_member=2), pod("g-0", cpu="3", group="g", node="n1", phase="Pending")],
        [pod("j-0", cpu="3", owner="Job/j", node="n1", phase="Pending")],
        [
            pod(
                "j-0",
                cpu="3",
                owner="Job/j",
                node="n1",
                annotations={"scheduling.volsched.io/min-member": "x"},
            )
        ],
        [pod("lone", cpu="3", node="n1", phase="Pending")],
        [pod("g-0", cpu="3", group="never", node="n1", phase="Pending")],
    ],
    ids=["pending-group", "owner-group", "owner-bad-min-member", "alone", "group-never-made"],
)
def test_a_pod_of_ours_bound_by_someone_else_at_creation_holds_its_room(bound: list[dict[str, Any]]) -> None:
    state = _state(node("n1", cpu="4"), *bound, pod("new-0", cpu="3"))
    snap = state.snapshot(now=1.0)
    assert _idle_cpu(snap, "n1") == 1.0
    result = run_session(snap, PREEMPT)
    assert result.binds == [] and result.evictions == []
    assert np.all(snap.nodes.idle >= -1e-9)


@pytest.mark.parametrize("kept", [True, False], ids=["incremental", "from-scratch"])
def test_a_pod_without_a_record_joins_no_podgroup_of_its_name_and_takes_none(kept: bool) -> None:
    """Pod x, made on n1 naming group g that does not exist, with no record: it counts in its namespace's
    default queue. A PodGroup x (of its name, not the group it names) neither takes it as a member nor is
    taken by it: while PodGroup x is in force, pod x holds its room as foreign, as before it counted (a
    pod joins a PodGroup by naming it; one that proves no bind keeps no name). Gone again, x counts."""
    objs = [node("n1", cpu="4"), queue("q"), pod("x", ns="ns", cpu="1", group="g", node="n1")]
    state = _state(*objs)
    snap = state.snapshot(now=1.0)
    assert snap.jobs["ns/x"].queue == "default" and state.orphan_queues() == ["default"]
    x = podgroup("x", ns="ns", queue="q", min_member=2)
    if kept:
        state.apply(x)
    else:
        state = _state(*objs, x)
    snap = state.snapshot(now=2.0)
    assert snap.jobs["ns/x"].podgroup is not None and snap.jobs["ns/x"].tasks == {}
    assert [t.key for t in snap.foreign_tasks] == ["ns/x"] and state.orphan_queues() == []
    assert "PodGroup ns/x" not in {obj for obj, _, _ in snap.problems}
    assert _held(snap, "n1") == ["ns/x"] and _idle_cpu(snap, "n1") == 3.0
    state.delete("PodGroup", "ns", "x")
    snap = state.snapshot(now=3.0)
    assert snap.jobs["ns/x"].podgroup is None and snap.jobs["ns/x"].queue == "default"
    assert snap.foreign_tasks == [] and state.orphan_queues() == ["default"]
