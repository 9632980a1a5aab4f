"""A pod of ours on a node whose PodGroup does not exist (deleted while it runs, or never made) still
holds its room (real apiserver): the operator took such a pod for one in no job, holding nothing, and
bound a second pod into its room, past the node's allocatable. Now it is foreign to the session (no
queue counts it, nothing evicts it) and a pod that would fit only in its room waits, told why."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.operator_fixtures import (
    GROUP,
    VERSION,
    Kube,
    OperatorProcess,
    Start,
    node,
    node_usage,
    pod,
    podgroup,
    queue,
    wait_for,
)

pytestmark = pytest.mark.cluster


def _queue_cpu(k: Kube, name: str) -> str:
    return str(((k.get_queue(name).get("status") or {}).get("allocated") or {}).get("cpu") or "0")


def _scheduled(k: Kube, ns: str, name: str) -> Any:
    conds = {c.type: c for c in k.core.read_namespaced_pod(name, ns).status.conditions or []}
    return conds.get("PodScheduled")


def _waits_for_room(k: Kube, op: OperatorProcess, ns: str, name: str) -> None:
    """``name`` is told it does not fit (its condition: the room the pod on the node uses counted), and
    stays unbound for more sessions."""
    cond = wait_for(
        lambda: (c := _scheduled(k, ns, name)) is not None and c.status == "False" and c,
        30,
        what=f"{name}'s PodScheduled condition",
        operator=op,
    )
    assert cond.reason == "Unschedulable" and "used 3" in cond.message, cond.message
    sessions = op.cycles()
    wait_for(lambda: op.cycles() >= sessions + 5, 30, what="five more cycles", operator=op)
    assert f"{ns}/{name}" not in k.bound(ns)
    for used, alloc in node_usage(k).values():
        assert used <= alloc + 1e-9


def test_a_podgroup_deleted_while_its_pod_runs_leaves_the_pods_room_held(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("group-gone")
    k.queue(queue("q"))
    k.podgroup(ns, podgroup("g", 1, queue="q"))
    k.pods(ns, pod("g-0", cpu="3", group="g"))
    op = start_operator()
    wait_for(lambda: k.bound(ns).get(f"{ns}/g-0"), 30, what="g-0 bound", operator=op)
    k.core.patch_namespaced_pod_status("g-0", ns, {"status": {"phase": "Running"}})
    wait_for(lambda: _queue_cpu(k, "q") == "3", 30, what="queue q holding g-0", operator=op)

    k.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, "podgroups", "g")
    # The queue no longer counts the pod: the operator's sessions see the group gone.
    wait_for(lambda: _queue_cpu(k, "q") == "0", 30, what="queue q holding nothing", operator=op)
    k.pods(ns, pod("new-0", cpu="3"))
    _waits_for_room(k, op, ns, "new-0")
    assert k.bound(ns)[f"{ns}/g-0"] == "n1"  # (not evicted either)


def test_a_pod_of_ours_bound_at_creation_to_a_group_never_made_holds_its_room(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("group-never")
    stray = pod("stray-0", cpu="3", group="never")
    stray["spec"]["nodeName"] = "n1"  # bound by someone else, at creation
    k.pods(ns, stray)
    op = start_operator()
    k.pods(ns, pod("new-0", cpu="3"))
    _waits_for_room(k, op, ns, "new-0")
