"""manifests/60-pod-queue-fixed.yaml on the real apiserver: an update of a volsched pod that changes its
queue or PodGroup annotation is refused with a message naming it (a pod moved into another queue would
hold that queue's share: the pod webhook checks at creation only); an update that touches neither, or a
pod of another scheduler, passes. In-apiserver CEL: no operator and no webhook runs here."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client import ApiException

from tests.e2e.operator_fixtures import ROOT, wait_for

pytestmark = pytest.mark.cluster

POLICY = ROOT / "manifests" / "60-pod-queue-fixed.yaml"
QUEUE = "scheduling.volsched.io/queue-name"


@pytest.fixture
def policy(kube: client.ApiClient) -> Iterator[str]:
    """The manifest's policy and binding, removed afterwards (the control plane is the session's)."""
    api = client.AdmissionregistrationV1Api(kube)
    vap, binding = [d for d in yaml.safe_load_all(POLICY.read_text()) if d]
    api.create_validating_admission_policy(vap)
    api.create_validating_admission_policy_binding(binding)
    name: str = vap["metadata"]["name"]
    yield name
    api.delete_validating_admission_policy_binding(binding["metadata"]["name"])
    api.delete_validating_admission_policy(name)


def _pod(core: client.CoreV1Api, ns: str, name: str, annotations: dict[str, str], scheduler: str) -> None:
    spec = {"schedulerName": scheduler, "containers": [{"name": "c", "image": "pause"}]}
    core.create_namespaced_pod(ns, {"metadata": {"name": name, "annotations": annotations}, "spec": spec})


def _annotate(core: client.CoreV1Api, ns: str, name: str, annotations: dict[str, Any]) -> ApiException | None:
    try:
        core.patch_namespaced_pod(name, ns, {"metadata": {"annotations": annotations}})
    except ApiException as exc:
        return exc
    return None


def _in_force(api: client.ApiClient, core: client.CoreV1Api, ns: str, name: str) -> None:
    """Wait until the apiserver enforces the policy (it loads a new binding asynchronously): a probe pod's
    queue annotation is changed, each time anew, until a change is refused. Its type check found nothing."""
    _pod(core, ns, "probe", {QUEUE: "q0"}, "volsched")
    tries = iter(range(1, 1_000_000))
    wait_for(
        lambda: _annotate(core, ns, "probe", {QUEUE: f"q{next(tries)}"}) is not None,
        60,
        what="policy in force",
    )
    status = client.AdmissionregistrationV1Api(api).read_validating_admission_policy(name).status
    assert status is None or status.type_checking is None or not status.type_checking.expression_warnings


def test_a_pods_queue_and_group_annotations_cannot_change(
    kube: client.ApiClient, namespace: str, policy: str
) -> None:
    core = client.CoreV1Api(kube)
    _in_force(kube, core, namespace, policy)
    _pod(core, namespace, "p", {QUEUE: "team-a", "note": "x"}, "volsched")
    _pod(core, namespace, "theirs", {QUEUE: "team-a"}, "default-scheduler")

    refused = _annotate(core, namespace, "p", {QUEUE: "team-b"})
    assert refused is not None and refused.status == 403, refused
    assert (
        "a pod's queue and PodGroup are fixed at its creation: scheduling.volsched.io/queue-name cannot be "
        "changed, added or removed on an existing pod" in str(refused.body)
    ), refused.body
    for change in (
        {QUEUE: None},  # removed
        {"scheduling.volcano.sh/queue-name": "team-b"},  # added
        {"scheduling.k8s.io/group-name": "g"},
        {"scheduling.volcano.sh/group-name": "g"},
    ):
        refused = _annotate(core, namespace, "p", change)
        assert refused is not None and refused.status == 403, (change, refused)
        assert next(iter(change)) in str(refused.body), refused.body
    assert core.read_namespaced_pod("p", namespace).metadata.annotations[QUEUE] == "team-a"

    # Not touching them: passes (another annotation, a label, the same queue written again).
    assert _annotate(core, namespace, "p", {"note": "y", QUEUE: "team-a"}) is None
    core.patch_namespaced_pod("p", namespace, {"metadata": {"labels": {"l": uuid.uuid4().hex[:8]}}})
    # Another scheduler's pod: not ours to hold.
    assert _annotate(core, namespace, "theirs", {QUEUE: "team-b"}) is None
    assert core.read_namespaced_pod("p", namespace).metadata.annotations["note"] == "y"


def test_a_pods_expected_run_time_cannot_change(kube: client.ApiClient, namespace: str, policy: str) -> None:
    """minruntime's protectFinishing keeps a pod that has run more than it has left by its expected run
    time: a tenant who may patch its pods could say anew, as each runs, that it is about to end (1.5 times
    what it has run), and its pods would never be taken back. The annotation is fixed at creation."""
    core = client.CoreV1Api(kube)
    _in_force(kube, core, namespace, policy)
    runtime = "scheduling.volsched.io/expected-runtime"
    _pod(core, namespace, "p", {runtime: "1h"}, "volsched")
    _pod(core, namespace, "bare", {}, "volsched")
    for name, change in (("p", {runtime: "2h"}), ("p", {runtime: None}), ("bare", {runtime: "10m"})):
        refused = _annotate(core, namespace, name, change)
        assert refused is not None and refused.status == 403, (change, refused)
        assert "a pod's expected run time is fixed at its creation" in str(refused.body), refused.body
    assert core.read_namespaced_pod("p", namespace).metadata.annotations[runtime] == "1h"
    assert _annotate(core, namespace, "p", {runtime: "1h", "note": "x"}) is None  # the same, written again


def test_a_pods_gang_size_cannot_change(kube: client.ApiClient, namespace: str, policy: str) -> None:
    """The group of an owner's pods takes its minMember from the oldest pod's min-member annotation, and a
    gang is never evicted below its minMember: a tenant who may patch its pods could raise it to the pods
    running and keep every one of them from reclaim and preempt. The annotation is fixed at creation."""
    core = client.CoreV1Api(kube)
    _in_force(kube, core, namespace, policy)
    size = "scheduling.volsched.io/min-member"
    _pod(core, namespace, "p", {size: "2"}, "volsched")
    _pod(core, namespace, "bare", {}, "volsched")
    for name, change in (("p", {size: "10"}), ("p", {size: None}), ("bare", {size: "10"})):
        refused = _annotate(core, namespace, name, change)
        assert refused is not None and refused.status == 403, (change, refused)
        assert "a pod's gang size is fixed at its creation" in str(refused.body), refused.body
    assert core.read_namespaced_pod("p", namespace).metadata.annotations[size] == "2"
    assert _annotate(core, namespace, "p", {size: "2", "note": "x"}) is None  # the same, written again
    _pod(core, namespace, "theirs", {size: "2"}, "default-scheduler")
    assert _annotate(core, namespace, "theirs", {size: "10"}) is None  # another scheduler's pod


def test_a_pods_bound_under_record_is_written_by_its_bind_only(
    kube: client.ApiClient, namespace: str, policy: str
) -> None:
    """A bind writes what the pod was bound under (its PodGroup, queue, priority, minMember at start) in
    the Binding's annotations, which the apiserver copies onto the pod: the policy leaves the bind alone
    (``pods/binding``, not ``pods``). A PodGroup made again over its running pods is held to that record,
    so a tenant who may patch its pods could otherwise move them to another queue or protect them with a
    minMember of its choosing. The annotation is the bind's."""
    core = client.CoreV1Api(kube)
    _in_force(kube, core, namespace, policy)
    core.create_node({"metadata": {"name": f"n-{namespace}"}})  # (removed at the end)
    try:
        bound = "scheduling.volsched.io/bound-under"
        record = '{"podGroup":"u1","queue":"team-a","priorityClassName":"","priority":0,"minMember":2}'
        _pod(core, namespace, "p", {}, "volsched")
        _pod(core, namespace, "bare", {}, "volsched")
        core.create_namespaced_pod_binding(
            "p",
            namespace,
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "p", "annotations": {bound: record}},
                "target": {"apiVersion": "v1", "kind": "Node", "name": f"n-{namespace}"},
            },
            _preload_content=False,
        )
        held = core.read_namespaced_pod("p", namespace)
        assert held.spec.node_name == f"n-{namespace}" and held.metadata.annotations[bound] == record
        for name, change in (
            ("p", {bound: record.replace("team-a", "team-b")}),
            ("p", {bound: None}),
            ("bare", {bound: record}),
        ):
            refused = _annotate(core, namespace, name, change)
            assert refused is not None and refused.status == 403, (change, refused)
            assert "a pod's bound-under record is the scheduler's" in str(refused.body), refused.body
        assert core.read_namespaced_pod("p", namespace).metadata.annotations[bound] == record
        assert (
            _annotate(core, namespace, "p", {bound: record, "note": "x"}) is None
        )  # the same, written again
    finally:
        core.delete_node(f"n-{namespace}")


def test_a_pod_cannot_be_created_with_a_bound_under_record(
    kube: client.ApiClient, namespace: str, policy: str
) -> None:
    """The record counts for its group once the pod holds a node, whatever queue, priority and minMember
    it names, and only a bind may write it. A pod created carrying one kept it: through a bind that writes
    none (a pod standing alone), while the bind is assumed, or for good on a pod created with its
    ``spec.nodeName`` set, and its whole gang was held to the forged record (moved into another team's
    queue, raised past its class). Refused at creation too, saying why; any other pod is created."""
    core = client.CoreV1Api(kube)
    _in_force(kube, core, namespace, policy)
    bound = "scheduling.volsched.io/bound-under"
    record = '{"podGroup":"u1","queue":"team-b","priorityClassName":"top","priority":1000,"minMember":1}'
    try:
        _pod(core, namespace, "forged", {bound: record}, "volsched")
    except ApiException as exc:
        refused: ApiException | None = exc
    else:
        refused = None
    assert refused is not None and refused.status == 403, refused
    assert "a pod's bound-under record is the scheduler's" in str(refused.body), refused.body
    assert "cannot be set on a new pod" in str(refused.body), refused.body
    # A pod of another scheduler is not ours to judge; one of ours without the record is created.
    _pod(core, namespace, "theirs", {bound: record}, "default-scheduler")
    _pod(core, namespace, "plain", {QUEUE: "team-a", "scheduling.volsched.io/min-member": "2"}, "volsched")
    assert {p.metadata.name for p in core.list_namespaced_pod(namespace).items} >= {"theirs", "plain"}
