"""manifests/61-podgroup-fixed.yaml on the real apiserver: a PodGroup's ``status.phase`` is the
scheduler's, and its queue is fixed once it is admitted. Volcano's PodGroup CRD has no status subresource, so a tenant who may create or update its
PodGroups could write their status as well: created ``Inqueue`` (or ``Running``), a gang skipped enqueue
(its queue's ``perNamespace.maxRunningJobs``, overcommit's room: volsched reads the phase back as its own
decision); marked ``Completed`` while it ran, it no longer counted in ``maxRunningJobs``. The policy
refuses a create that sets a phase other than Pending and an update that changes it, by anyone but the
operator's service account and cluster admins; a spec update, or one that writes the same phase again,
passes; a replace without the status is refused, saying why. Once admitted (Inqueue, Running), a running
job moved into another team's queue held that queue's share (the scheduler does not evict a running job
whose queue's rules it breaks; the PodGroup webhooks, off by default, refuse only what the queue's rules
refuse): ``spec.queue`` is then fixed. ``spec.priorityClassName`` is not (Volcano's job controller writes
it; the pods running keep the class they were bound under). In-apiserver CEL: no operator runs here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client import ApiException

from tests.e2e.operator_fixtures import (
    ROOT,
    VV,
    WORKLOAD_API,
    V,
    fresh_control_plane,
    install_volcano_crds,
    wait_for,
)
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

POLICY = ROOT / "manifests" / "61-podgroup-fixed.yaml"
TENANT = "tenant"
SCHEDULER = "system:serviceaccount:volsched-system:volsched"
NS = "team"
WG, WV = "scheduling.k8s.io", "v1beta1"
WQ = "scheduling.volsched.io/queue-name"


def _apply_policies(adm: client.AdmissionregistrationV1Api) -> None:
    """The manifest's policies and their bindings."""
    for doc in [d for d in yaml.safe_load_all(POLICY.read_text()) if d]:
        if doc["kind"] == "ValidatingAdmissionPolicy":
            adm.create_validating_admission_policy(doc)
        else:
            adm.create_validating_admission_policy_binding(doc)


@pytest.fixture
def admin(cluster: LocalControlPlane) -> Iterator[client.ApiClient]:
    """The admin's client, with Volcano's CRDs, the policy, a namespace and a tenant who may write
    Volcano's PodGroups in it (as a team's role grants), as the operator's service account may."""
    with cluster.api_client() as api:
        install_volcano_crds(api)
        client.CoreV1Api(api).create_namespace({"metadata": {"name": NS}})
        rbac = client.RbacAuthorizationV1Api(api)
        rbac.create_namespaced_role(
            NS,
            {
                "metadata": {"name": "podgroups"},
                "rules": [
                    {
                        "apiGroups": [V],
                        "resources": ["podgroups"],
                        "verbs": ["create", "get", "update", "patch"],
                    }
                ],
            },
        )
        rbac.create_namespaced_role_binding(
            NS,
            {
                "metadata": {"name": "tenant"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "podgroups"},
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": TENANT},
                    {"kind": "ServiceAccount", "name": "volsched", "namespace": "volsched-system"},
                ],
            },
        )
        adm = client.AdmissionregistrationV1Api(api)
        _apply_policies(adm)
        yield api


@pytest.fixture
def as_user(cluster: LocalControlPlane) -> Iterator[Any]:
    """``as_user(name)``: a CustomObjectsApi that acts as ``name`` (the admin impersonating it)."""
    opened: list[client.ApiClient] = []

    def make(name: str) -> client.CustomObjectsApi:
        api = cluster.api_client()
        api.set_default_header("Impersonate-User", name)
        opened.append(api)
        return client.CustomObjectsApi(api)

    yield make
    for api in opened:
        api.close()  # type: ignore[no-untyped-call]


def _group(name: str, phase: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": f"{V}/{VV}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": 1, "queue": "default"},
    }
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def _refused(call: Any, *args: Any) -> ApiException | None:
    try:
        call(*args)
    except ApiException as exc:
        return exc
    return None


def test_only_the_scheduler_sets_a_podgroups_phase(admin: client.ApiClient, as_user: Any) -> None:
    tenant, scheduler = as_user(TENANT), as_user(SCHEDULER)
    create, patch = tenant.create_namespaced_custom_object, tenant.patch_namespaced_custom_object
    tries = iter(range(1_000_000))
    wait_for(  # (the apiserver loads a new binding asynchronously)
        lambda: (
            _refused(create, V, VV, NS, "podgroups", _group(f"probe-{next(tries)}", "Inqueue")) is not None
        ),
        60,
        what="policy in force",
    )
    status = (
        client.AdmissionregistrationV1Api(admin)
        .read_validating_admission_policy("volsched-podgroup-fixed")
        .status
    )
    assert status is None or status.type_checking is None or not status.type_checking.expression_warnings
    refused = _refused(create, V, VV, NS, "podgroups", _group("early", "Inqueue"))
    assert refused is not None and refused.status == 403, refused
    assert "a PodGroup's status.phase is the scheduler's to write" in str(refused.body), refused.body
    assert "cannot be set to Inqueue by tenant" in str(refused.body), refused.body

    assert _refused(create, V, VV, NS, "podgroups", _group("job")) is None
    assert _refused(create, V, VV, NS, "podgroups", _group("pending", "Pending")) is None
    for phase in ("Inqueue", "Running", "Completed"):
        refused = _refused(patch, V, VV, NS, "podgroups", "job", {"status": {"phase": phase}})
        assert refused is not None and refused.status == 403, (phase, refused)

    # The scheduler admits it; the tenant may then update its spec, writing the same phase back.
    scheduler.patch_namespaced_custom_object(V, VV, NS, "podgroups", "job", {"status": {"phase": "Inqueue"}})
    assert _refused(patch, V, VV, NS, "podgroups", "job", {"spec": {"minMember": 2}}) is None
    current = tenant.get_namespaced_custom_object(V, VV, NS, "podgroups", "job")
    current["spec"]["minMember"] = 3
    assert _refused(tenant.replace_namespaced_custom_object, V, VV, NS, "podgroups", "job", current) is None
    for change in ({"status": {"phase": "Completed"}}, {"status": None}):
        refused = _refused(patch, V, VV, NS, "podgroups", "job", change)
        assert refused is not None and refused.status == 403, (change, refused)
    assert tenant.get_namespaced_custom_object(V, VV, NS, "podgroups", "job")["status"]["phase"] == "Inqueue"
    # A replace from a file without the status would wipe the phase: refused, saying how to do it.
    bare = tenant.get_namespaced_custom_object(V, VV, NS, "podgroups", "job")
    del bare["status"]
    refused = _refused(tenant.replace_namespaced_custom_object, V, VV, NS, "podgroups", "job", bare)
    assert refused is not None and refused.status == 403, refused
    assert (
        "cannot be set to nothing from Inqueue by tenant (an update without the status would wipe it"
        in str(refused.body)
    ), refused.body
    # Admitted: its queue is fixed (alone or with another change); its size is not.
    for change in ({"spec": {"queue": "team-b"}}, {"spec": {"queue": "team-b", "priorityClassName": "top"}}):
        refused = _refused(patch, V, VV, NS, "podgroups", "job", change)
        assert refused is not None and refused.status == 403, (change, refused)
        assert (
            "a PodGroup's queue is fixed once it is admitted (it is Inqueue): spec.queue cannot be changed"
            in str(refused.body)
        ), refused.body
    assert _refused(patch, V, VV, NS, "podgroups", "job", {"spec": {"minMember": 4}}) is None
    # Nor is its class: Volcano's job controller copies a Job's (which Volcano's Job webhook lets change)
    # in the same update as minMember, and the pods running are held to the class they were bound under
    # (their bound-under record: tests/unit/test_podgroup_recreated.py).
    change = {"spec": {"minMember": 5, "priorityClassName": "top"}}
    assert _refused(patch, V, VV, NS, "podgroups", "job", change) is None
    # Not admitted yet: the scheduler judges the queue it names before admitting it.
    assert _refused(patch, V, VV, NS, "podgroups", "pending", {"spec": {"queue": "team-b"}}) is None
    # A cluster admin may (mending a status by hand).
    client.CustomObjectsApi(admin).patch_namespaced_custom_object(
        V, VV, NS, "podgroups", "job", {"status": {"phase": "Pending"}}
    )


RECORD = {
    "type": "MinMemberProtected",
    "status": "True",
    "reason": "MinMemberAtStart",
    "message": "reclaim and preempt keep 1 of its pods (started with minMember 1)",
}


def test_only_the_scheduler_writes_a_podgroups_min_member_record(
    admin: client.ApiClient, as_user: Any
) -> None:
    """The record of the minMember a gang started with (volsched.model.admitted), which a new operator
    reads back: forged on a Volcano PodGroup (no status subresource), with a raised minMember it would keep
    every pod from reclaim after the operator's next restart."""
    tenant, scheduler = as_user(TENANT), as_user(SCHEDULER)
    create, patch = tenant.create_namespaced_custom_object, tenant.patch_namespaced_custom_object
    forged = {**_group("forged"), "status": {"phase": "Pending", "conditions": [{**RECORD, "message": "x"}]}}
    tries = iter(range(1_000_000))
    wait_for(  # (the apiserver loads a new binding asynchronously)
        lambda: (
            _refused(create, V, VV, NS, "podgroups", {**forged, "metadata": {"name": f"p-{next(tries)}"}})
            is not None
        ),
        60,
        what="policy in force",
    )
    refused = _refused(create, V, VV, NS, "podgroups", forged)
    assert refused is not None and refused.status == 403, refused
    assert "MinMemberProtected condition is the scheduler's to write" in str(refused.body), refused.body
    assert _refused(create, V, VV, NS, "podgroups", _group("job")) is None
    scheduler.patch_namespaced_custom_object(
        V, VV, NS, "podgroups", "job", {"status": {"phase": "Running", "conditions": [RECORD]}}
    )
    # The tenant raises minMember (its spec: passes), but cannot raise the record with it, nor drop it.
    assert _refused(patch, V, VV, NS, "podgroups", "job", {"spec": {"minMember": 4}}) is None
    raised = {**RECORD, "message": "reclaim and preempt keep 4 of its pods (started with minMember 4)"}
    for change in ({"status": {"conditions": [raised]}}, {"status": {"conditions": []}}):
        refused = _refused(patch, V, VV, NS, "podgroups", "job", change)
        assert refused is not None and refused.status == 403, (change, refused)
    current = tenant.get_namespaced_custom_object(V, VV, NS, "podgroups", "job")
    assert current["status"]["conditions"] == [RECORD]
    current["spec"]["minMember"] = 5  # a whole update that writes the status back as read passes
    assert _refused(tenant.replace_namespaced_custom_object, V, VV, NS, "podgroups", "job", current) is None


@pytest.fixture
def workload_admin() -> Iterator[client.ApiClient]:
    """The admin's client of a control plane serving the Workload API, with the policy, a namespace and a
    tenant who may write its Kubernetes PodGroups."""
    with fresh_control_plane(apiserver_args=WORKLOAD_API) as cp, cp.api_client() as api:
        client.CoreV1Api(api).create_namespace({"metadata": {"name": NS}})
        rbac = client.RbacAuthorizationV1Api(api)
        rule = {"apiGroups": [WG], "resources": ["podgroups"], "verbs": ["create", "get", "update", "patch"]}
        rbac.create_namespaced_role(NS, {"metadata": {"name": "podgroups"}, "rules": [rule]})
        rbac.create_namespaced_role_binding(
            NS,
            {
                "metadata": {"name": "tenant"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "podgroups"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": TENANT}],
            },
        )
        _apply_policies(client.AdmissionregistrationV1Api(api))
        api.set_default_header("Impersonate-User", TENANT)
        yield api


def test_a_kubernetes_podgroups_queue_is_fixed_at_its_creation(workload_admin: client.ApiClient) -> None:
    """Its priority class and priority are immutable already; its queue-name annotation is not: a running
    gang moved into another team's queue held that queue's share."""
    tenant = client.CustomObjectsApi(workload_admin)
    patch = tenant.patch_namespaced_custom_object

    def group(name: str) -> dict[str, Any]:
        return {
            "apiVersion": f"{WG}/{WV}",
            "kind": "PodGroup",
            "metadata": {"name": name, "annotations": {WQ: "team-a"}},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        }

    tenant.create_namespaced_custom_object(WG, WV, NS, "podgroups", group("train"))
    tries = iter(range(1_000_000))
    wait_for(  # (the apiserver loads a new binding asynchronously)
        lambda: (
            _refused(
                patch,
                WG,
                WV,
                NS,
                "podgroups",
                "train",
                {"metadata": {"annotations": {WQ: f"q{next(tries)}"}}},
            )
            is not None
        ),
        60,
        what="policy in force",
    )
    tenant.create_namespaced_custom_object(WG, WV, NS, "podgroups", group("eval"))  # (the probe moved train)
    for change in ({WQ: "team-b"}, {WQ: None}, {"scheduling.volcano.sh/queue-name": "team-b"}):
        refused = _refused(patch, WG, WV, NS, "podgroups", "eval", {"metadata": {"annotations": change}})
        assert refused is not None and refused.status == 403, (change, refused)
        assert "a PodGroup's queue is fixed at its creation: " + next(iter(change)) in str(refused.body)
    labelled = {"metadata": {"labels": {"team": "a"}, "annotations": {"note": "x", WQ: "team-a"}}}
    assert _refused(patch, WG, WV, NS, "podgroups", "eval", labelled) is None  # anything else passes
