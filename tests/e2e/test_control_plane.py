"""The local control plane (volsched_dev/devcluster.py) behaves like the real API the
scheduler talks to: nodes with status, pods bound through pods/binding, pod deletion
without a kubelet, and RBAC for non-admin users."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
import yaml
from kubernetes import client
from kubernetes.client import ApiException

from tests.e2e.operator_fixtures import grant
from volsched_dev.devcluster import ADMIN_USER, TEST_USER, ControlPlaneError, LocalControlPlane, TokenUser

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


# --------------------------------------------------------------------------- helpers


def pinned_k8s_version() -> str:
    text = (REPO / "hack" / "controlplane" / "go.mod").read_text()
    match = re.search(r"^\s*k8s\.io/kubernetes (v\S+)", text, re.M)
    assert match, "k8s.io/kubernetes is not pinned in hack/controlplane/go.mod"
    return match.group(1)


def eventually(fn: Callable[[], T], timeout: float = 15.0, interval: float = 0.2) -> T:
    """Call ``fn`` until it stops raising AssertionError/ApiException (RBAC caches lag a bit)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except (AssertionError, ApiException):
            if time.monotonic() > deadline:
                raise
            time.sleep(interval)


def make_node(v1: client.CoreV1Api, name: str, cpu: str = "8", memory: str = "32Gi") -> client.V1Node:
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    body = client.V1Node(
        metadata=client.V1ObjectMeta(name=name, labels={"volsched.io/test": "true"}),
        status=client.V1NodeStatus(
            capacity=resources,
            allocatable=resources,
            conditions=[
                client.V1NodeCondition(
                    type="Ready", status="True", reason="KubeletReady", message="fake node for tests"
                )
            ],
        ),
    )
    return v1.create_node(body)


def make_pod(v1: client.CoreV1Api, namespace: str, name: str, *, grace: int | None = 0) -> client.V1Pod:
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            scheduler_name="volsched",
            termination_grace_period_seconds=grace,
            containers=[
                client.V1Container(
                    name="main",
                    image="registry.k8s.io/pause:3.10",
                    resources=client.V1ResourceRequirements(requests={"cpu": "500m", "memory": "1Gi"}),
                )
            ],
        ),
    )
    return v1.create_namespaced_pod(namespace, body)


def bind(v1: client.CoreV1Api, namespace: str, pod: str, node: str) -> int:
    """POST pods/<pod>/binding. The response is not deserialized (``_preload_content=False``):
    the Python client has long failed to deserialize the Binding it gets back."""
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    resp = cast(Any, v1.create_namespaced_pod_binding(pod, namespace, body, _preload_content=False))
    status: int = resp.status
    return status


def pod_exists(v1: client.CoreV1Api, namespace: str, name: str) -> bool:
    try:
        v1.read_namespaced_pod(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


# --------------------------------------------------------------------------- tests


@pytest.mark.cluster
def test_apiserver_is_ready_and_pinned(control_plane: LocalControlPlane, kube: client.ApiClient) -> None:
    method, url, headers, _body, _post = kube.param_serialize("GET", "/readyz", auth_settings=["BearerToken"])
    resp = kube.call_api(method, url, headers)
    resp.read()  # type: ignore[no-untyped-call]
    assert resp.status == 200
    assert resp.data is not None and resp.data.strip() == b"ok"

    version = client.VersionApi(kube).get_code()
    assert version.git_version == pinned_k8s_version()

    assert control_plane.running
    assert control_plane.host.startswith("https://127.0.0.1:")
    kubeconfig = yaml.safe_load(control_plane.kubeconfig_path.read_text())
    assert kubeconfig["clusters"][0]["cluster"]["server"] == control_plane.host
    assert kubeconfig["users"][0]["user"]["token"] == control_plane.token_for(ADMIN_USER)
    assert (control_plane.kubeconfig_path.stat().st_mode & 0o777) == 0o600


@pytest.mark.cluster
def test_kubeconfig_file_works_with_the_client_loader(
    control_plane: LocalControlPlane, tmp_path: Path
) -> None:
    from kubernetes import config

    path = control_plane.write_kubeconfig(tmp_path / "tester.kubeconfig", TEST_USER)
    api = config.new_client_from_config(config_file=str(path))  # type: ignore[no-untyped-call]
    with api:
        review = client.AuthenticationV1Api(api).create_self_subject_review(client.V1SelfSubjectReview())
    assert review.status is not None and review.status.user_info is not None
    assert review.status.user_info.username == TEST_USER
    assert "system:authenticated" in (review.status.user_info.groups or [])


@pytest.mark.cluster
def test_node_status_is_stored_and_sticks(control_plane: LocalControlPlane, kube: client.ApiClient) -> None:
    v1 = client.CoreV1Api(kube)
    name = unique("node")
    created = make_node(v1, name)
    # Nodes, unlike most kinds, keep the status given at creation (the kubelet registers so).
    assert created.status is not None and created.status.allocatable is not None
    assert created.status.allocatable["cpu"] == "8"

    # Status updates go through the status subresource.
    v1.patch_node_status(name, {"status": {"allocatable": {"cpu": "6", "memory": "30Gi", "pods": "110"}}})

    # Nothing touches it afterwards: no node-lifecycle controller, no kubelet runs, and every field of
    # the node was written by this client alone.
    assert not control_plane.controllers and not control_plane.kwok
    node = v1.read_node(name)
    assert node.metadata is not None and node.metadata.managed_fields
    assert {f.manager for f in node.metadata.managed_fields} == {created.metadata.managed_fields[0].manager}
    assert node.status is not None and node.status.allocatable is not None
    assert node.status.allocatable == {"cpu": "6", "memory": "30Gi", "pods": "110"}
    assert node.status.capacity is not None and node.status.capacity["cpu"] == "8"
    ready = [c for c in node.status.conditions or [] if c.type == "Ready"]
    assert len(ready) == 1 and ready[0].status == "True"
    # TaintNodesByCondition is disabled: no node.kubernetes.io/not-ready taint was added.
    assert not (node.spec and node.spec.taints)

    # A plain update of the node does not touch its status.
    v1.patch_node(name, {"metadata": {"labels": {"extra": "yes"}}, "status": {"allocatable": {"cpu": "1"}}})
    node = v1.read_node(name)
    assert node.metadata is not None and node.metadata.labels is not None
    assert node.metadata.labels["extra"] == "yes"
    assert node.status is not None and node.status.allocatable is not None
    assert node.status.allocatable["cpu"] == "6"


@pytest.mark.cluster
def test_pod_binding_sets_node_name_and_grace_zero_delete_is_immediate(
    kube: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(kube)
    node = unique("node")
    make_node(v1, node)
    pod = make_pod(v1, namespace, "bound", grace=0)
    assert pod.spec is not None
    assert pod.spec.scheduler_name == "volsched"
    assert pod.spec.node_name is None
    assert pod.spec.termination_grace_period_seconds == 0
    # The ServiceAccount admission plugin is disabled, so no token volume was injected.
    assert not pod.spec.volumes

    assert bind(v1, namespace, "bound", node) == 201

    pod = v1.read_namespaced_pod("bound", namespace)
    assert pod.spec is not None and pod.spec.node_name == node
    assert pod.status is not None
    scheduled = [c for c in pod.status.conditions or [] if c.type == "PodScheduled"]
    assert len(scheduled) == 1 and scheduled[0].status == "True"
    assert pod.status.phase == "Pending"  # no kubelet ever runs it

    # A pod can be bound once only.
    with pytest.raises(ApiException) as err:
        bind(v1, namespace, "bound", node)
    assert err.value.status == 409

    # terminationGracePeriodSeconds: 0 -> deleted at once, even on a node without a kubelet.
    v1.delete_namespaced_pod("bound", namespace)
    assert not pod_exists(v1, namespace, "bound")


@pytest.mark.cluster
def test_pod_deletion_without_kubelet(kube: client.ApiClient, namespace: str) -> None:
    """What deleting pods does when no kubelet exists (documented in volsched_dev.devcluster)."""
    v1 = client.CoreV1Api(kube)
    node = unique("node")
    make_node(v1, node)

    # Unbound pods are deleted at once, whatever their grace period.
    make_pod(v1, namespace, "unbound", grace=30)
    v1.delete_namespaced_pod("unbound", namespace)
    assert not pod_exists(v1, namespace, "unbound")

    # A bound pod with a grace period only gets a deletionTimestamp: it would wait for the
    # kubelet to confirm, which never happens ...
    make_pod(v1, namespace, "graceful", grace=30)
    bind(v1, namespace, "graceful", node)
    v1.delete_namespaced_pod("graceful", namespace)
    pod = v1.read_namespaced_pod("graceful", namespace)
    assert pod.metadata is not None and pod.metadata.deletion_timestamp is not None
    assert pod.metadata.deletion_grace_period_seconds == 30
    # ... until it is force-deleted with grace 0 (kubectl delete --grace-period=0 --force).
    v1.delete_namespaced_pod("graceful", namespace, grace_period_seconds=0)
    assert not pod_exists(v1, namespace, "graceful")

    # Pods in a terminal phase are deleted at once too.
    make_pod(v1, namespace, "done", grace=30)
    bind(v1, namespace, "done", node)
    v1.patch_namespaced_pod_status("done", namespace, {"status": {"phase": "Succeeded"}})
    v1.delete_namespaced_pod("done", namespace)
    assert not pod_exists(v1, namespace, "done")


@pytest.mark.cluster
def test_rbac_forbids_the_tester_until_a_role_grants_it(
    control_plane: LocalControlPlane, kube: client.ApiClient, namespace: str
) -> None:
    admin_v1 = client.CoreV1Api(kube)
    make_pod(admin_v1, namespace, "visible")
    with control_plane.api_client(TEST_USER) as tester:
        v1 = client.CoreV1Api(tester)
        with pytest.raises(ApiException) as err:
            v1.list_namespaced_pod(namespace)
        assert err.value.status == 403
        assert (
            f'User "{TEST_USER}" cannot list resource "pods"' in json.loads(err.value.body or "{}")["message"]
        )

        rules = [client.V1PolicyRule(api_groups=[""], resources=["pods"], verbs=["get", "list"])]
        grant(kube, namespace, user=TEST_USER, name="pod-reader", rules=rules)
        pods = eventually(lambda: v1.list_namespaced_pod(namespace))
        assert [p.metadata.name for p in pods.items if p.metadata] == ["visible"]

        # Only what was granted: still no writes, and nothing in other namespaces.
        with pytest.raises(ApiException) as err:
            v1.delete_namespaced_pod("visible", namespace)
        assert err.value.status == 403
        with pytest.raises(ApiException) as err:
            v1.list_namespaced_pod("default")
        assert err.value.status == 403


@pytest.mark.cluster
def test_service_account_token_authenticates_as_the_service_account(
    control_plane: LocalControlPlane, namespace: str
) -> None:
    token = control_plane.service_account_token(namespace, "robot")
    with control_plane.api_client(token=token) as api:
        review = client.AuthenticationV1Api(api).create_self_subject_review(client.V1SelfSubjectReview())
        assert review.status is not None and review.status.user_info is not None
        assert review.status.user_info.username == f"system:serviceaccount:{namespace}:robot"
        with pytest.raises(ApiException) as err:
            client.CoreV1Api(api).list_namespaced_pod(namespace)
        assert err.value.status == 403


# --------------------------------------------------------------------------- no cluster needed


def test_token_file_lines() -> None:
    assert TokenUser("alice", "tok", ("g1", "g2")).csv_line() == 'tok,alice,alice,"g1,g2"'
    assert TokenUser("bob", "tok", uid="42").csv_line() == "tok,bob,42"
    with pytest.raises(ValueError):
        TokenUser("a,b", "tok").csv_line()


def test_users_and_errors_before_start() -> None:
    cp = LocalControlPlane(users={"carol": ("team-a",)})
    assert cp.user_names == sorted([ADMIN_USER, "carol"])
    token = cp.add_user("dave", token="dave-token")
    assert token == "dave-token" == cp.token_for("dave")
    with pytest.raises(ValueError):
        cp.add_user(ADMIN_USER)
    with pytest.raises(KeyError):
        cp.token_for("nobody")
    with pytest.raises(ControlPlaneError):
        cp.api_client()
    cp.stop()  # harmless when never started
