"""The descheduler's strategies through the operator on a real apiserver: the pods they name are evicted
through the Eviction API (a failed pod is deleted at once), each with a Rescheduled event saying why,
and the healthy ones are left alone, as are the pods the default evictor protects (a DaemonSet's, one
with an emptyDir), read from what the operator keeps of them. A PodDisruptionBudget keeps the pod it
covers from the moves (voluntary) until its status allows a disruption, and that watch event alone wakes a
session."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import DESCHEDULE_CONFIG, Kube, Start, node, pod, wait_for

pytestmark = pytest.mark.cluster

WEB = {"app": "web"}


def owned_pod(name: str, node_name: str, *, kind: str = "ReplicaSet") -> dict[str, Any]:
    obj = pod(name)
    obj["spec"]["nodeName"] = node_name
    obj["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "name": name,
            "uid": f"uid-{name}",
            "controller": True,
        }
    ]
    return obj


def test_failed_and_crash_looping_pods_are_evicted_with_a_reason(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="8"), node("n2", cpu="8"))
    k.set_config(DESCHEDULE_CONFIG)
    ns = k.namespace("deschedule")
    scratch = owned_pod("scratch", "n1")
    scratch["spec"]["volumes"] = [{"name": "tmp", "emptyDir": {}}]
    agent = owned_pod("agent", "n1", kind="DaemonSet")
    k.pods(
        ns, owned_pod("failed", "n1"), owned_pod("crashing", "n1"), owned_pod("healthy", "n1"), scratch, agent
    )
    k.core.patch_namespaced_pod_status("failed", ns, {"status": {"phase": "Failed", "reason": "Evicted"}})
    restarts = [{"name": "main", "image": "busybox", "imageID": "", "ready": False, "restartCount": 12}]
    # scratch and agent crash too, but the evictor protects them: had it not, the answer that names
    # crashing would have named them (every pod fits one session's limit).
    for name, count in (("crashing", 12), ("healthy", 0), ("scratch", 12), ("agent", 12)):
        statuses = [{**restarts[0], "restartCount": count, "state": {"running": {}}}]
        k.core.patch_namespaced_pod_status(
            name, ns, {"status": {"phase": "Running", "containerStatuses": statuses}}
        )
    op = start_operator()

    def gone() -> bool:
        left = set(k.placements(ns))
        return "deschedule/failed" not in left and "deschedule/crashing" not in left

    wait_for(gone, 30, what=f"the failed and the crash-looping pod evicted (log: {op.log_path})")
    assert set(k.placements(ns)) == {"deschedule/healthy", "deschedule/scratch", "deschedule/agent"}

    def rescheduled() -> dict[str, str]:
        return {
            e.involved_object.name: e.message
            for e in k.core.list_namespaced_event(ns).items
            if e.reason == "Rescheduled"
        }

    # A pod the eviction deletes at once gets its event with the session's status writes, after it is gone.
    wait_for(lambda: len(rescheduled()) >= 2, 30, what=f"both evictions' events (log: {op.log_path})")
    assert rescheduled() == {
        "failed": "shuffle: deschedule/failed evicted on n1; rescheduling (removeFailedPods): pod failed"
        " (Evicted) on node n1",
        "crashing": "shuffle: deschedule/crashing evicted on n1; rescheduling (removePodsHavingTooManyRestarts):"
        " 12 restarts, threshold 10",
    }


def test_a_tenants_pod_calling_itself_static_moves_and_a_kubelets_mirror_does_not(
    k: Kube, start_operator: Start
) -> None:
    """A tenant may write kubernetes.io/config.source: file (or config.mirror, on a pod it creates bound)
    on its own pods: that exempted them from every move. Only the kubelet's mirror of a static pod, its
    controller owner its own Node, is protected now."""
    k.nodes(node("n1", cpu="8"), node("n2", cpu="8"))
    n1 = k.core.read_node("n1").metadata.uid
    k.set_config(DESCHEDULE_CONFIG)
    ns = k.namespace("static")
    posing = owned_pod("posing", "n1")
    posing["metadata"]["annotations"] = {"kubernetes.io/config.source": "file"}
    mirror = pod("mirror")
    mirror["spec"]["nodeName"] = "n1"
    mirror["metadata"]["annotations"] = {
        "kubernetes.io/config.mirror": "h",
        "kubernetes.io/config.source": "file",
    }
    mirror["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": n1, "controller": True}
    ]
    k.pods(ns, posing, mirror)
    for name in ("posing", "mirror"):
        statuses = [{"name": "main", "image": "busybox", "imageID": "", "ready": False, "restartCount": 12}]
        statuses[0]["state"] = {"running": {}}
        k.core.patch_namespaced_pod_status(
            name, ns, {"status": {"phase": "Running", "containerStatuses": statuses}}
        )
    op = start_operator()
    # One session's answer names every crash-looping pod the evictor lets through (within its limit):
    # the mirror left standing when the other goes was not named.
    wait_for(
        lambda: "static/posing" not in k.placements(ns), 30, what=f"the posing pod evicted ({op.log_path})"
    )
    assert set(k.placements(ns)) == {"static/mirror"}


def test_a_budget_that_comes_to_allow_a_disruption_wakes_a_session_and_the_move_goes(
    k: Kube, start_operator: Start
) -> None:
    """With an hour between periodic sessions, a budget allowing no disruption keeps a crash-looping pod
    from shuffle's moves (reclaim and preempt may go past a budget, never shuffle: d68466f); once the
    disruption controller's status lets one go (none runs here: the test writes it), the budget's watch
    event alone must wake a session, and the pod is evicted. A pod of ours waits meanwhile (1 cpu short on
    n1, though n1 empty would hold it), so freed room is worth a session."""
    k.nodes(node("n1", cpu="2"))
    k.set_config(DESCHEDULE_CONFIG)
    ns = k.namespace("budgetwake")
    policy = client.PolicyV1Api(k.api)
    body = {"metadata": {"name": "keep"}, "spec": {"maxUnavailable": 0, "selector": {"matchLabels": WEB}}}
    policy.create_namespaced_pod_disruption_budget(ns, body)
    crashing = owned_pod("crashing", "n1")
    crashing["metadata"]["labels"] = WEB
    k.pods(ns, crashing, owned_pod("healthy", "n1"), pod("big", cpu="2"))
    statuses = [{"name": "main", "image": "busybox", "imageID": "", "ready": False, "restartCount": 12}]
    statuses[0]["state"] = {"running": {}}
    k.core.patch_namespaced_pod_status(
        "crashing", ns, {"status": {"phase": "Running", "containerStatuses": statuses}}
    )
    op = start_operator("--period", "3600")
    # A session ran with the budget (made before the start: in the first listing) and told big why it waits.
    wait_for(lambda: _unschedulable(k, ns, "big"), 40, what="big told it waits", operator=op)
    assert f"{ns}/crashing" in k.placements(ns)
    generation = policy.read_namespaced_pod_disruption_budget("keep", ns).metadata.generation
    status = {"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 1}
    policy.patch_namespaced_pod_disruption_budget_status(
        "keep", ns, {"status": {**status, "observedGeneration": generation}}
    )
    wait_for(
        lambda: f"{ns}/crashing" not in k.placements(ns),
        40,
        what="crashing evicted once its budget allows it",
        operator=op,
    )
    assert set(k.placements(ns)) == {f"{ns}/healthy", f"{ns}/big"}
    assert "blocked by a PodDisruptionBudget" not in op.log()
    op.check_running()


def _unschedulable(k: Kube, ns: str, name: str) -> bool:
    conditions = k.core.read_namespaced_pod(name, ns).status.conditions or []
    return any(c.type == "PodScheduled" and c.status == "False" for c in conditions)
