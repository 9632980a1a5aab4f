"""Pods of ours on a node whose job the snapshot cannot make: their PodGroup deleted while they run, or
never made. Such a pod is foreign to the session (as a pod of another scheduler is): it holds its room
on its node, no queue counts it, no action evicts it, and it is not told its group is missing (a
pending pod of the same group is). When its group appears it is one of the group's members again. The
neighbours, which were never defects, are held to it too: a bound pod whose Queue is gone, pods of
ours bound by someone else at creation."""

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
def test_a_podgroup_deleted_under_its_running_pods_leaves_them_holding_their_room_as_foreign(
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
    foreign = {t.key: t for t in snap.foreign_tasks}
    assert sorted(foreign) == ["ns/g-0", "ns/g-1"]
    assert not any(t.schedulable_by_us for t in foreign.values())
    assert snap.problems == [("Pod ns/g-2", "PodGroupNotFound", "pod group g does not exist")]
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


def test_preempt_never_takes_a_pod_whose_group_is_gone_for_a_gangs() -> None:
    state = preempting_cluster()  # (the control: four low-priority pods of group lo, two preempted)
    assert [e.pod for e in run_session(state.snapshot(now=1.0), PREEMPT).evictions] == ["ns/lo-3", "ns/lo-2"]
    state = preempting_cluster()
    state.snapshot(now=1.0)
    state.delete("PodGroup", "ns", "lo")
    result = run_session(state.snapshot(now=2.0), PREEMPT)
    assert result.evictions == [] and result.binds == [] and result.pipelined == 0
    [message] = [e.message for e in result.events if e.name == "hi-0" and e.reason == "FailedScheduling"]
    assert "insufficient cpu" in message


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
