"""A pod of ours on a node whose PodGroup does not exist (deleted while it runs, or never made) still
holds its room (real apiserver): the operator took such a pod for one in no job, holding nothing, and
bound a second pod into its room, past the node's allocatable. One volsched bound carries its bind's
record (``scheduling.volsched.io/bound-under``): it counts in the queue it was bound under, as a pod
standing alone, which reclaim may take back (docs/tenancy.md "A PodGroup deleted and not made again");
before, a tenant who deleted its running gang's PodGroup held that room outside every queue's share.
One with no record (bound by someone else at creation) counts in its namespace's default queue at its own
priority (tests/e2e/test_operator_record_removed.py). A pod that would fit only in either's room waits,
told why."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import (
    DEFAULT_QUEUE,
    GROUP,
    VERSION,
    Kube,
    OperatorProcess,
    Start,
    a_later_session,
    node,
    node_usage,
    pod,
    podgroup,
    qa_gang_running,
    queue,
    queue_cpu,
    team_b_reclaims,
    told_gone,
    two_teams,
    wait_for,
)
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster


def _scheduled(k: Kube, ns: str, name: str) -> Any:
    conds = {c.type: c for c in k.core.read_namespaced_pod(name, ns).status.conditions or []}
    return conds.get("PodScheduled")


def _waits_for_room(k: Kube, op: OperatorProcess, ns: str, name: str) -> None:
    """``name`` is told it does not fit, the room the pod on the node uses counted: its PodScheduled
    condition, the word of the session that would have bound it (bound, the condition is True)."""
    cond = wait_for(lambda: _scheduled(k, ns, name), 30, what=f"{name}'s PodScheduled condition", operator=op)
    assert (cond.status, cond.reason) == ("False", "Unschedulable"), cond
    assert "used 3" in cond.message, cond.message
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
    wait_for(lambda: queue_cpu(k, "q") == "3", 30, what="queue q holding g-0", operator=op)

    k.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, "podgroups", "g")
    # The operator's sessions see the group gone and tell the pod; its queue still counts it (before:
    # queue q held nothing).
    _told_gone(k, op, ns, "g-0", "it counts in queue q, the one it was bound under")
    assert _allocated_cpu(op, "q") == 3
    assert queue_cpu(k, "q") == "3"
    k.pods(ns, pod("new-0", cpu="3"))
    _waits_for_room(k, op, ns, "new-0")
    assert k.bound(ns)[f"{ns}/g-0"] == "n1"  # (the default config reclaims nothing: not evicted)
    assert queue_cpu(k, "q") == "3"


def _told_gone(k: Kube, op: OperatorProcess, ns: str, name: str, text: str) -> None:
    """``name`` is told its group is gone and what it is now (its PodGroupGone event), and a session
    after the one that told it has run and written everything (the queues' status included)."""
    told_gone(k, op, ns, name, text)
    a_later_session(k, op, ns)


def _allocated_cpu(op: OperatorProcess, queue_name: str) -> float:
    """The cpu the last session counted as allocated in queue ``queue_name`` (its figure in /metrics)."""
    return op.metric_now("volsched_queue_allocated", queue=queue_name, parent="root", resource="cpu")


def test_a_tenant_who_deletes_its_running_gangs_podgroup_still_pays_for_it_and_gives_it_back(
    k: Kube, cluster: LocalControlPlane, start_operator: Start
) -> None:
    """A tenant allowed to delete its PodGroups deletes its running gang's (minMember 4, the 4 pods
    running, all the node): before, its queue stopped counting them and nothing could take them back,
    the gang's minMember no more protecting them than any share did."""
    ns_a, ns_b = two_teams(k, "orphans")
    # (team a's namespace without a default queue, as before two_teams: then qa counts the orphans only
    # if their records are taken, not because their namespace falls back on it)
    k.core.patch_namespace(ns_a, {"metadata": {"labels": {DEFAULT_QUEUE: None}}})
    assert DEFAULT_QUEUE not in (k.core.read_namespace(ns_a).metadata.labels or {})
    rbac = client.RbacAuthorizationV1Api(k.api)
    rules = [{"apiGroups": [GROUP], "resources": ["podgroups"], "verbs": ["get", "list", "delete"]}]
    rbac.create_namespaced_role(ns_a, {"metadata": {"name": "tenant"}, "rules": rules})
    subject = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "tenant-a"}
    role = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant"}
    rbac.create_namespaced_role_binding(
        ns_a, {"metadata": {"name": "tenant"}, "roleRef": role, "subjects": [subject]}
    )
    op = qa_gang_running(k, ns_a, start_operator)

    with cluster.api_client() as api:
        api.set_default_header("Impersonate-User", "tenant-a")
        client.CustomObjectsApi(api).delete_namespaced_custom_object(GROUP, VERSION, ns_a, "podgroups", "a")
    _told_gone(k, op, ns_a, "a-0", "it counts in queue qa, the one it was bound under")
    assert _allocated_cpu(op, "qa") == 4
    assert queue_cpu(k, "qa") == "4"  # before: 0

    # qb deserves half the node: reclaim takes two of the four back (before: none, foreign to sessions).
    team_b_reclaims(k, ns_b, op, pods=2, cpu="1")
    assert len(k.bound(ns_a)) == 2
    op.check_running()


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
