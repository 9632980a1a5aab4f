"""The RBAC in manifests/ is sufficient for the operator and no wider (real apiserver)."""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.e2e.operator_fixtures import (
    PLACE_NONE,
    RECLAIM_CONFIG,
    ROOT,
    Kube,
    Start,
    a_later_session,
    apply_file,
    failed_scheduling,
    install_volcano_crds,
    node,
    pod,
    podgroup,
    volcano_podgroup,
    wait_for,
)
from volsched.framework.config import DEFAULT_CONFIG_YAML
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

SA = "system:serviceaccount:volsched-system:volsched"
NS = "volsched-system"
G = "scheduling.volsched.io"
V = "scheduling.volcano.sh"
R = "resource.k8s.io"

# (verb, group, resource, subresource, namespace, name)
USED = [
    ("list", "", "pods", "", "", ""), ("watch", "", "pods", "", "", ""), ("get", "", "pods", "", "team", "p"),
    ("list", "", "nodes", "", "", ""), ("watch", "", "nodes", "", "", ""),
    ("list", "", "namespaces", "", "", ""), ("watch", "", "namespaces", "", "", ""),
    ("list", "", "resourcequotas", "", "", ""), ("watch", "", "resourcequotas", "", "", ""),
    ("list", "", "persistentvolumeclaims", "", "", ""), ("watch", "", "persistentvolumeclaims", "", "", ""),
    ("list", "", "persistentvolumes", "", "", ""), ("watch", "", "persistentvolumes", "", "", ""),
    ("get", "", "persistentvolumeclaims", "", "team", "c"), ("update", "", "persistentvolumeclaims", "", "team", "c"),
    ("get", "", "persistentvolumes", "", "", "v"), ("update", "", "persistentvolumes", "", "", "v"),
    ("list", "storage.k8s.io", "storageclasses", "", "", ""), ("watch", "storage.k8s.io", "storageclasses", "", "", ""),
    ("list", "storage.k8s.io", "csinodes", "", "", ""), ("watch", "storage.k8s.io", "csinodes", "", "", ""),
    ("list", "storage.k8s.io", "volumeattachments", "", "", ""),
    ("watch", "storage.k8s.io", "volumeattachments", "", "", ""),
    ("list", "storage.k8s.io", "csidrivers", "", "", ""), ("watch", "storage.k8s.io", "csidrivers", "", "", ""),
    ("list", "storage.k8s.io", "csistoragecapacities", "", "", ""),
    ("watch", "storage.k8s.io", "csistoragecapacities", "", "", ""),
    ("list", "scheduling.k8s.io", "priorityclasses", "", "", ""),
    ("watch", "scheduling.k8s.io", "priorityclasses", "", "", ""),
    ("list", "policy", "poddisruptionbudgets", "", "", ""), ("watch", "policy", "poddisruptionbudgets", "", "", ""),
    ("list", R, "deviceclasses", "", "", ""), ("watch", R, "deviceclasses", "", "", ""),
    ("list", R, "resourceslices", "", "", ""), ("watch", R, "resourceslices", "", "", ""),
    ("list", R, "resourceclaims", "", "", ""), ("watch", R, "resourceclaims", "", "", ""),
    ("get", R, "resourceclaims", "", "team", "c"), ("update", R, "resourceclaims", "status", "team", "c"),
    ("list", G, "queues", "", "", ""), ("watch", G, "queues", "", "", ""),
    ("list", G, "podgroups", "", "", ""), ("watch", G, "podgroups", "", "", ""),
    ("create", "", "pods", "binding", "team", "p"), ("create", "", "pods", "eviction", "team", "p"),
    ("delete", "", "pods", "", "team", "p"),  # a victim past its PodDisruptionBudget
    ("patch", "", "pods", "status", "team", "p"),
    ("patch", G, "queues", "status", "", "q"), ("patch", G, "podgroups", "status", "team", "pg"),
    ("patch", G, "queues", "", "", "q"),
    ("create", G, "podgroups", "", "team", ""), ("delete", G, "podgroups", "", "team", "pg"),
    ("list", V, "queues", "", "", ""), ("watch", V, "queues", "", "", ""),
    ("list", V, "podgroups", "", "", ""), ("watch", V, "podgroups", "", "", ""),
    ("patch", V, "queues", "status", "", "q"), ("patch", V, "podgroups", "status", "team", "pg"),
    ("patch", V, "podgroups", "", "team", "pg"),  # Volcano's PodGroup CRD has no status subresource
    ("create", "", "events", "", "team", ""), ("patch", "", "events", "", "team", "e"),
    ("get", "", "events", "", "team", "e"),
    ("get", "", "configmaps", "", NS, "volsched-scheduler-config"),
    ("list", "", "configmaps", "", NS, "volsched-scheduler-config"),  # by name: its watch
    ("watch", "", "configmaps", "", NS, "volsched-scheduler-config"),
    ("create", "", "secrets", "", NS, ""),  # the records' key, made by the first replica
    ("get", "", "secrets", "", NS, "volsched-record-key"), ("update", "", "secrets", "", NS, "volsched-record-key"),
    ("list", "", "secrets", "", NS, "volsched-record-key"),  # by name: its watch
    ("watch", "", "secrets", "", NS, "volsched-record-key"),
    ("create", "coordination.k8s.io", "leases", "", NS, ""),
    ("get", "coordination.k8s.io", "leases", "", NS, "volsched-scheduler"),
    ("update", "coordination.k8s.io", "leases", "", NS, "volsched-scheduler"),
    ("get", "custom.metrics.k8s.io", "nodes", "node_cpu_usage_avg", "", "*"),
    ("get", "custom.metrics.k8s.io", "nodes", "node_memory_usage_avg", "", "*"),
    ("create", "authentication.k8s.io", "tokenreviews", "", "", ""),
    ("create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""),
]  # fmt: skip

NOT_GRANTED = [
    ("update", "", "pods", "", "team", "p"),
    ("patch", "", "pods", "", "team", "p"), ("create", "", "pods", "", "team", ""),
    ("update", "", "nodes", "", "", "n"), ("patch", "", "nodes", "status", "", "n"),
    ("get", "", "secrets", "", NS, "x"), ("list", "", "secrets", "", "", ""),
    ("get", "", "configmaps", "", NS, "someone-elses"), ("list", "", "configmaps", "", "", ""),
    ("update", "", "configmaps", "", NS, "volsched-scheduler-config"),
    ("create", G, "queues", "", "", ""), ("update", G, "queues", "", "", "q"),
    ("update", "coordination.k8s.io", "leases", "", NS, "another-lease"),
    ("delete", "coordination.k8s.io", "leases", "", NS, "volsched-scheduler"),
    ("get", "coordination.k8s.io", "leases", "", "kube-system", "volsched-scheduler"),
    ("create", "", "pods", "binding", NS, "") if False else ("delete", "", "events", "", "team", "e"),
    ("list", "apiextensions.k8s.io", "customresourcedefinitions", "", "", ""),
    ("update", "policy", "poddisruptionbudgets", "", "team", "b"),
    ("delete", "", "persistentvolumes", "", "", "v"), ("create", "", "persistentvolumes", "", "", ""),
    ("delete", "", "persistentvolumeclaims", "", "team", "c"), ("update", "storage.k8s.io", "storageclasses", "", "", "s"),
    ("update", "storage.k8s.io", "csinodes", "", "", "n"),
    ("update", "storage.k8s.io", "csidrivers", "", "", "d"),
    ("delete", "storage.k8s.io", "volumeattachments", "", "", "a"),
    ("update", "storage.k8s.io", "csistoragecapacities", "", "team", "c"),
    ("update", R, "resourceclaims", "", "team", "c"), ("create", R, "resourceclaims", "", "team", ""),
    ("delete", R, "resourceclaims", "", "team", "c"), ("update", R, "resourceslices", "", "", "s"),
    ("create", V, "podgroups", "", "team", ""), ("delete", V, "podgroups", "", "team", "pg"),
    ("create", V, "queues", "", "", ""), ("update", G, "podgroups", "", "team", "pg"),
    ("patch", V, "queues", "", "", "q"),  # Volcano's Queue CRD has a status subresource
    ("get", "custom.metrics.k8s.io", "pods", "node_cpu_usage_avg", "team", "*"),
    ("get", "custom.metrics.k8s.io", "nodes", "some_other_metric", "", "*"),
]  # fmt: skip


def _allowed(k: Kube, verb: str, group: str, resource: str, sub: str, ns: str, name: str) -> bool:
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=SA,
            groups=["system:serviceaccounts", "system:serviceaccounts:volsched-system", "system:authenticated"],
            resource_attributes=client.V1ResourceAttributes(
                verb=verb, group=group, resource=resource, subresource=sub or None,
                namespace=ns or None, name=name or None,
            ),
        )
    )  # fmt: skip
    out = client.AuthorizationV1Api(k.api).create_subject_access_review(review)
    return bool(out.status.allowed)


def _apply_rbac(k: Kube) -> None:
    for name in ("00-namespace.yaml", "10-rbac.yaml", "20-config.yaml"):
        apply_file(k.api, ROOT / "manifests" / name)
    k.queue(yaml.safe_load((ROOT / "manifests" / "40-default-queue.yaml").read_text()))


def test_every_verb_the_operator_uses_is_granted_and_no_more(k: Kube) -> None:
    _apply_rbac(k)
    missing = [a for a in USED if not _allowed(k, *a)]
    assert missing == []
    extra = [a for a in NOT_GRANTED if _allowed(k, *a)]
    assert extra == []


def test_the_operator_runs_with_only_its_service_account(
    k: Kube, cluster: LocalControlPlane, start_operator: Start, tmp_path: object
) -> None:
    _apply_rbac(k)
    token = cluster.service_account_token(NS, "volsched", create=False)
    kubeconfig = cluster.write_kubeconfig(cluster.workdir / "sa.kubeconfig", token=token)
    k.nodes(node("n1", cpu="2"))
    ns = k.namespace("team")
    k.podgroup(ns, podgroup("pair", 2))
    k.pods(ns, pod("pair-0", group="pair"), pod("pair-1", group="pair"), pod("huge", cpu="64"))
    op = start_operator("--volcano-check-every", "0.5", kubeconfig=kubeconfig)
    wait_for(lambda: len(k.bound(ns)) == 2, 30, what="the pair bound by the service account")
    wait_for(
        lambda: (k.get_podgroup(ns, "pair").get("status") or {}).get("phase") == "Running", 20, what="status"
    )
    wait_for(
        lambda: (k.get_queue("default").get("status") or {}).get("running") == 1, 20, what="queue status"
    )
    wait_for(
        lambda: [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "huge"],
        20,
        what="FailedScheduling event",
    )
    # Volcano's CRDs installed after the start: read (discovery, list, watch) and written to (status).
    install_volcano_crds(k.api)
    k.nodes(node("n2", cpu="2"))
    k.custom.create_namespaced_custom_object(
        V, "v1beta1", ns, "podgroups", volcano_podgroup("duo", 2, "default")
    )
    k.pods(ns, pod("duo-0", group="duo"), pod("duo-1", group="duo"))
    wait_for(lambda: len(k.bound(ns)) == 4, 30, what="the Volcano gang bound by the service account")
    wait_for(
        lambda: (
            (
                k.custom.get_namespaced_custom_object(V, "v1beta1", ns, "podgroups", "duo").get("status")
                or {}
            ).get("phase")
            == "Running"
        ),
        20,
        what="the Volcano PodGroup's status",
    )
    lease = client.CoordinationV1Api(k.api).read_namespaced_lease("volsched-scheduler", NS)
    assert lease.spec.holder_identity
    log = op.log()
    assert "forbidden" not in log.lower() and " 403" not in log
    assert " CRD has " not in log  # the rights fit Volcano's CRDs (no warning, no wider right)


def test_a_volcano_crd_the_rights_do_not_fit_is_warned_about_with_the_reason(
    k: Kube, cluster: LocalControlPlane, start_operator: Start
) -> None:
    """Rights narrowed past what Volcano's PodGroup CRD (no status subresource) needs: the operator says
    at start which right is missing and which chart value grants it."""
    _apply_rbac(k)
    rbac = client.RbacAuthorizationV1Api(k.api)
    role = rbac.read_cluster_role("volsched")
    role.rules = [r for r in role.rules if not (r.api_groups == [V] and r.resources == ["podgroups"])]
    rbac.replace_cluster_role("volsched", role)
    install_volcano_crds(k.api)
    token = cluster.service_account_token(NS, "volsched", create=False)
    kubeconfig = cluster.write_kubeconfig(cluster.workdir / "sa.kubeconfig", token=token)
    op = start_operator(kubeconfig=kubeconfig)
    wait_for(op.healthy, 60, what="the cache synced")
    wait_for(lambda: "Volcano's PodGroup CRD has no status subresource" in op.log(), 30, what="the warning")
    line = next(x for x in op.log().splitlines() if "Volcano's PodGroup CRD" in x)
    assert "WARNING" in line and "needs patch on podgroups.scheduling.volcano.sh" in line
    assert "rbac.volcanoPatchObjects" in line
    assert "Volcano's Queue CRD" not in op.log()  # its rights fit


def test_no_session_runs_and_the_replica_is_not_ready_until_the_scheduler_config_can_be_read(
    k: Kube, cluster: LocalControlPlane, start_operator: Start
) -> None:
    """A ConfigMap that exists but cannot be read at start (here: forbidden) is not an absent one: the
    built-in default (which binds) never decides in its place. Sessions wait until it is read, then run
    under it (here: no allocate, so the pod stays pending). Meanwhile the replica is alive (/healthz: a
    restart would not help) and not ready: /readyz and volsched_ready say so, and why."""
    _apply_rbac(k)
    k.set_config(DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue"))
    rbac = client.RbacAuthorizationV1Api(k.api)
    granted = rbac.read_namespaced_role("volsched", NS)
    refused = rbac.read_namespaced_role("volsched", NS)
    refused.rules = [r for r in refused.rules if "configmaps" not in (r.resources or [])]
    assert len(refused.rules) == len(granted.rules) - 1
    rbac.replace_namespaced_role("volsched", NS, refused)
    token = cluster.service_account_token(NS, "volsched", create=False)
    kubeconfig = cluster.write_kubeconfig(cluster.workdir / "sa.kubeconfig", token=token)
    k.nodes(node("n1", cpu="2"))
    ns = k.namespace("team")
    k.pods(ns, pod("solo"))
    op = start_operator("--period", "0.2", "--log-level", "DEBUG", kubeconfig=kubeconfig)
    wait_for(op.healthy, 30, what="the cache synced")
    # The read is asked again at each session's turn (each refusal a line, at DEBUG after the first), and a
    # turn whose read is refused runs no session: three more refusals are three turns at which the default
    # config would have bound the pod.
    refused = op.log().count("cannot read ConfigMap")
    wait_for(lambda: op.log().count("cannot read ConfigMap") >= refused + 3, 30, what="three turns refused")
    assert k.bound(ns) == {}
    assert op.cycles() == 0
    assert "no session runs until the scheduler config" in op.log()
    status, why = op.readyz()
    assert status == 503 and f"ConfigMap {NS}/" in why and "403" in why and "no session runs" in why
    assert op.metric("volsched_ready") == 0

    granted.metadata.resource_version = None
    rbac.replace_namespaced_role("volsched", NS, granted)
    wait_for(lambda: op.metric("volsched_config_reloads_total", result="loaded") >= 1, 30, what="read")
    # A session's word on the pod under the user's config: it places none (not the default's bind).
    said = wait_for(
        lambda: failed_scheduling(k, ns, "solo"), 30, what="solo's FailedScheduling event", operator=op
    )
    assert said.startswith(PLACE_NONE), said
    # Ready under the user's config, which has no allocate: /readyz says so below its "ok".
    assert op.readyz() == (
        200,
        "ok\nwarning: the scheduler config's actions (enqueue) place no pod that requests resources: "
        "allocate is not among them\n",
    )
    assert op.metric("volsched_ready") == 1
    assert k.bound(ns) == {}  # the user's config has no allocate


def test_a_jobs_whole_life_under_exactly_the_manifests_rights(
    k: Kube, cluster: LocalControlPlane, start_operator: Start
) -> None:
    """The operator as the manifests' service account (their ClusterRole and Role, nothing more) through
    a job's whole life, each step needing its verb, so that a verb missing from manifests/10-rbac.yaml
    fails here: the PodGroup it creates for a Job's pods (podgroups create), the one an earlier version
    left behind (podgroups delete), binds (pods/binding), the Queue's finalizer (queues patch), statuses
    (queues/status, podgroups/status), a preemption (pods/eviction, and pods/status for DisruptionTarget),
    events (create, patch), /metrics behind a token (tokenreviews, subjectaccessreviews), completion, and
    the Queue deleted once its jobs are done (the finalizer removed). The PodGroup policy
    (manifests/61-podgroup-fixed.yaml) is in place: the service account writes the phases."""
    _apply_rbac(k)
    apply_file(k.api, ROOT / "manifests" / "61-podgroup-fixed.yaml")
    k.set_config(RECLAIM_CONFIG)
    sched = client.SchedulingV1Api(k.api)
    for name, value in (("low", 10), ("high", 1000)):
        sched.create_priority_class({"metadata": {"name": name}, "value": value})
    k.nodes(node("n1", cpu="4"))
    k.queue({"apiVersion": f"{G}/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 1}})
    ns = k.namespace("team")
    batch = client.BatchV1Api(k.api)
    job = batch.create_namespaced_job(
        ns,
        {
            "metadata": {"name": "train"},
            "spec": {
                "suspend": True,  # nothing here runs Jobs; it only owns the pods
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x"}]}},
            },
        },
    )
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": job.metadata.uid,
           "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    left = podgroup("job-train", 1, queue="q")  # what an earlier volsched named the Job's PodGroup
    left["metadata"].update(ownerReferences=[ref], labels={"scheduling.volsched.io/created-by": "volsched"})
    k.podgroup(ns, left)

    def owned(name: str) -> dict[str, Any]:
        obj = pod(name, cpu="1", priority_class="low")
        obj["metadata"]["ownerReferences"] = [ref]
        obj["metadata"]["annotations"] = {
            "scheduling.volsched.io/min-member": "2",
            "scheduling.volsched.io/queue-name": "q",
        }
        return obj

    def grouped(name: str, group: str) -> dict[str, Any]:
        obj = pod(name, cpu="1", group=group)
        obj["spec"]["terminationGracePeriodSeconds"] = 30  # no kubelet: an evicted pod stays Terminating
        return obj

    k.podgroup(ns, podgroup("filler", 1, queue="q", priority_class="low"))
    k.pods(
        ns, owned("train-0"), owned("train-1"), grouped("filler-0", "filler"), grouped("filler-1", "filler")
    )
    token = cluster.service_account_token(NS, "volsched", create=False)
    kubeconfig = cluster.write_kubeconfig(cluster.workdir / "sa.kubeconfig", token=token)
    op = start_operator("--http-auth", "kubernetes", kubeconfig=kubeconfig)

    created = f"podgroup-{job.metadata.uid}"
    wait_for(lambda: len(k.bound(ns)) == 4, 40, what="the Job's pods and the filler bound", operator=op)
    # The PodGroup that shows the Job's gang is a status write, made after the binds in flight.
    wait_for(lambda: not _gone(k, ns, created), 30, what="the Job's PodGroup created", operator=op)
    pg = k.get_podgroup(ns, created)
    assert pg["metadata"]["ownerReferences"][0]["uid"] == job.metadata.uid
    wait_for(lambda: _gone(k, ns, "job-train"), 40, what="the left-behind PodGroup deleted", operator=op)
    finalizer = "scheduling.volsched.io/queue-in-use"
    wait_for(lambda: finalizer in (k.get_queue("q")["metadata"].get("finalizers") or []), 30, what="guarded")
    wait_for(lambda: _phase(k, ns, created) == "Running", 30, what="the PodGroup's status", operator=op)
    wait_for(lambda: (k.get_queue("q").get("status") or {}).get("running") == 2, 30, what="queue status")

    # A job of a higher priority: one filler pod is evicted for it (DisruptionTarget first), then bound.
    k.podgroup(ns, podgroup("urgent", 1, queue="q", priority_class="high"))
    k.pods(ns, grouped("urgent-0", "urgent"))
    victim = wait_for(
        lambda: next(
            (p for p in k.core.list_namespaced_pod(ns).items if p.metadata.deletion_timestamp is not None),
            None,
        ),
        40,
        what="a filler pod evicted",
        operator=op,
    )
    assert victim.metadata.name.startswith("filler-")
    conditions = {c.type: c for c in victim.status.conditions or []}
    assert conditions["DisruptionTarget"].reason == "PreemptionByScheduler"
    k.core.delete_namespaced_pod(victim.metadata.name, ns, grace_period_seconds=0)  # as its kubelet would
    wait_for(lambda: f"{ns}/urgent-0" in k.bound(ns), 40, what="the urgent pod bound", operator=op)
    reasons = {e.reason for e in k.core.list_namespaced_event(ns).items}
    assert {"Preempted", "Scheduled"} <= reasons, reasons

    # /metrics behind the apiserver's word: a TokenReview and a SubjectAccessReview by the operator.
    request = urllib.request.Request(f"http://127.0.0.1:{op.port}/metrics")
    request.add_header("Authorization", f"Bearer {cluster.admin_token}")
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200 and b"volsched_ready" in answer.read()
    with pytest.raises(urllib.error.HTTPError) as anonymous:
        urllib.request.urlopen(f"http://127.0.0.1:{op.port}/metrics", timeout=30)
    assert anonymous.value.code == 401

    # Done: every pod Succeeded (as their kubelet would say); the groups complete, the Queue, deleted,
    # goes once none holds it.
    for p in k.core.list_namespaced_pod(ns).items:
        k.core.patch_namespaced_pod_status(p.metadata.name, ns, {"status": {"phase": "Succeeded"}})
    for name in (created, "urgent"):
        wait_for(
            lambda name=name: _phase(k, ns, name) == "Completed", 40, what=f"{name} completed", operator=op
        )
    k.custom.delete_namespaced_custom_object(G, "v1beta1", ns, "podgroups", "filler")
    k.custom.delete_cluster_custom_object(G, "v1beta1", "queues", "q")
    wait_for(lambda: _queue_gone(k, "q"), 60, what="the Queue deleted once its jobs are done", operator=op)

    log = op.log()
    assert "forbidden" not in log.lower() and " 403" not in log, op.log_tail()


def _phase(k: Kube, ns: str, name: str) -> str | None:
    return (k.get_podgroup(ns, name).get("status") or {}).get("phase")


def _gone(k: Kube, ns: str, name: str) -> bool:
    try:
        k.get_podgroup(ns, name)
    except client.ApiException as exc:
        return exc.status == 404
    return False


def _queue_gone(k: Kube, name: str) -> bool:
    try:
        k.get_queue(name)
    except client.ApiException as exc:
        return exc.status == 404
    return False


def test_without_create_and_delete_on_podgroups_the_operator_schedules_the_same_and_says_what_is_off(
    k: Kube, cluster: LocalControlPlane, start_operator: Start
) -> None:
    """The chart's rbac.createOwnerPodGroups and rbac.deleteLeftBehindPodGroups false (the rule gone): the
    operator reads its rights at start, says what it will not do and why, schedules a Job's pods as one job
    without making their PodGroup, leaves an earlier version's PodGroup alone, and is never refused."""
    _apply_rbac(k)
    rbac = client.RbacAuthorizationV1Api(k.api)
    role = rbac.read_cluster_role("volsched")
    narrowed = [
        r
        for r in role.rules
        if not (r.api_groups == [G] and r.resources == ["podgroups"] and "create" in r.verbs)
    ]
    assert len(narrowed) == len(role.rules) - 1
    role.rules = narrowed
    rbac.replace_cluster_role("volsched", role)
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("team")
    job = client.BatchV1Api(k.api).create_namespaced_job(
        ns,
        {
            "metadata": {"name": "train"},
            "spec": {
                "suspend": True,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x"}]}},
            },
        },
    )
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": job.metadata.uid,
           "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    left = podgroup("job-train", 1)
    left["metadata"].update(ownerReferences=[ref], labels={"scheduling.volsched.io/created-by": "volsched"})
    k.podgroup(ns, left)
    for i in range(2):
        p = pod(f"train-{i}", cpu="1")
        p["metadata"]["ownerReferences"] = [ref]
        p["metadata"]["annotations"] = {"scheduling.volsched.io/min-member": "2"}
        k.pods(ns, p)
    token = cluster.service_account_token(NS, "volsched", create=False)
    kubeconfig = cluster.write_kubeconfig(cluster.workdir / "sa.kubeconfig", token=token)
    op = start_operator(kubeconfig=kubeconfig)
    wait_for(lambda: len(k.bound(ns)) == 2, 40, what="the Job's pods bound as one job", operator=op)
    a_later_session(k, op, ns)  # the Job's PodGroup would have been made, the one left behind deleted
    log = op.log()
    assert (
        "may not create podgroups.scheduling.volsched.io (the chart's rbac.createOwnerPodGroups: false)"
        in log
    )
    assert (
        "may not delete podgroups.scheduling.volsched.io (the chart's rbac.deleteLeftBehindPodGroups: false)"
        in log
    )
    assert not _gone(k, ns, "job-train")
    assert _gone(k, ns, f"podgroup-{job.metadata.uid}")
    assert "forbidden" not in log.lower() and " 403" not in log, op.log_tail()
