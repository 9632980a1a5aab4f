"""Claims of a WaitForFirstConsumer StorageClass bound where the pod goes, on a real apiserver with
kube-controller-manager's PersistentVolume controller (kube-scheduler's VolumeBinding, as volsched does it):
a local volume takes its pod to its node, a claim to provision gets its pod's node and the pod is bound
once the volume is there, and a provisioning that never completes leaves the pod pending, told why, with
the claim's selected node taken off again. While it waits, volsched reads the claim from its watch, never
from the apiserver (the apiserver's own request counts)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import watch

from tests.e2e.operator_fixtures import Kube, Start, node, pod, podgroup, real_cluster, wait_for
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

SELECTED_NODE = "volume.kubernetes.io/selected-node"


@pytest.fixture
def cluster() -> Iterator[LocalControlPlane]:
    yield from real_cluster(
        controller_manager_args=(
            "--controllers=persistentvolume-binder-controller,ephemeral-volume-controller",
        )
    )


def storage_class(k: Kube, name: str, provisioner: str) -> None:
    from kubernetes import client

    client.StorageV1Api(k.api).create_storage_class(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )


def claim(k: Kube, ns: str, name: str, cls: str) -> Any:
    return k.core.create_namespaced_persistent_volume_claim(
        ns,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": cls,
            },
        },
    )


def volume(
    name: str, cls: str, *, on: str | None = None, claim_ref: dict[str, Any] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": cls,
        "persistentVolumeReclaimPolicy": "Retain",
    }
    if on:
        spec["local"] = {"path": "/mnt/data"}
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": [on]}
                        ]
                    }
                ]
            }
        }
    else:
        spec["hostPath"] = {"path": "/tmp/volsched-e2e"}
    if claim_ref:
        spec["claimRef"] = claim_ref
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def on_claim(name: str, cpu: str = "100m") -> dict[str, Any]:
    p = pod(name, cpu)
    p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": f"{name}-data"}}]
    return p


def test_a_local_volume_takes_its_pod_to_its_node_and_the_claim_is_bound(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="16"), node("n2", cpu="4"))
    ns = k.namespace("volumes")
    storage_class(k, "local", "kubernetes.io/no-provisioner")
    k.core.create_persistent_volume(volume("local-n2", "local", on="n2"))
    claim(k, ns, "db-data", "local")
    k.pods(ns, on_claim("db"))
    op = start_operator()

    bound = wait_for(lambda: k.bound(ns), 60, what="db bound", operator=op)
    assert bound == {f"{ns}/db": "n2"}
    pvc = k.core.read_namespaced_persistent_volume_claim("db-data", ns)
    assert (pvc.spec.volume_name, pvc.status.phase) == ("local-n2", "Bound")
    pv = k.core.read_persistent_volume("local-n2")
    assert (pv.spec.claim_ref.namespace, pv.spec.claim_ref.name, pv.status.phase) == (ns, "db-data", "Bound")


def test_a_generic_ephemeral_volume_is_bound_where_its_pod_goes(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="16"), node("n2", cpu="4"))
    ns = k.namespace("volumes")
    storage_class(k, "local", "kubernetes.io/no-provisioner")
    k.core.create_persistent_volume(volume("local-n2", "local", on="n2"))
    db = pod("db", "100m")
    template = {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "resources": {"requests": {"storage": "1Gi"}},
        }
    }
    db["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}]
    k.pods(ns, db)
    op = start_operator()

    # kube-controller-manager's ephemeral volume controller makes the claim db-scratch for the pod.
    bound = wait_for(lambda: k.bound(ns), 60, what="db bound", operator=op)
    assert bound == {f"{ns}/db": "n2"}
    assert k.core.read_namespaced_persistent_volume_claim("db-scratch", ns).spec.volume_name == "local-n2"


def test_a_claim_to_provision_gets_its_pods_node_and_the_pod_waits_for_the_volume(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1"), node("n2"))
    ns = k.namespace("volumes")
    storage_class(k, "fast", "csi.example.com")
    made = claim(k, ns, "db-data", "fast")
    k.pods(ns, on_claim("db"))
    op = start_operator()

    def selected() -> tuple[str, str | None] | None:
        pvc = k.core.read_namespaced_persistent_volume_claim("db-data", ns)
        chosen = (pvc.metadata.annotations or {}).get(SELECTED_NODE)
        if not chosen:
            return None
        return chosen, k.core.read_namespaced_pod("db", ns).spec.node_name

    chosen, node_then = wait_for(selected, 60, what="the claim's selected node", operator=op)
    assert chosen in ("n1", "n2") and node_then is None  # the pod waits for its volume
    # The external provisioner's part: the volume, made for the claim where it was asked for.
    ref = {"kind": "PersistentVolumeClaim", "namespace": ns, "name": "db-data", "uid": made.metadata.uid}
    provisioned = volume("pvc-" + made.metadata.uid, "fast", on=chosen, claim_ref=ref)
    provisioned["metadata"]["annotations"] = {"pv.kubernetes.io/provisioned-by": "csi.example.com"}
    k.core.create_persistent_volume(provisioned)

    bound = wait_for(lambda: k.bound(ns), 60, what="db bound once its claim is", operator=op)
    assert bound == {f"{ns}/db": chosen}
    assert k.core.read_namespaced_persistent_volume_claim("db-data", ns).status.phase == "Bound"


def test_a_provisioning_that_never_completes_leaves_the_pod_pending_told_why(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1"))
    ns = k.namespace("volumes")
    storage_class(k, "never", "csi.example.com")
    made = claim(k, ns, "db-data", "never")
    k.pods(ns, on_claim("db"))
    start_operator("--volume-bind-timeout", "2")

    # The claim's own history: its selected node written, then taken off again when the wait was given up.
    seen: list[str | None] = [None]
    w = watch.Watch()
    for event in w.stream(
        k.core.list_namespaced_persistent_volume_claim,
        ns,
        resource_version=made.metadata.resource_version,
        timeout_seconds=90,
    ):
        chosen = (event["object"].metadata.annotations or {}).get(SELECTED_NODE)
        if not seen or seen[-1] != chosen:
            seen.append(chosen)
        if len(seen) >= 3:
            w.stop()
    assert seen[:3] == [None, "n1", None], seen

    def told() -> str | None:
        conditions = k.core.read_namespaced_pod("db", ns).status.conditions or []
        return next(
            (
                c.message
                for c in conditions
                if c.type == "PodScheduled" and "binding volumes" in (c.message or "")
            ),
            None,
        )

    message = wait_for(told, 30, what="the pod told why")
    assert re.fullmatch(
        re.escape(
            f"binding volumes: persistentvolumeclaim(s) {ns}/db-data not bound within 2 s (waiting for the "
            "volume's provisioner and the PersistentVolume controller); not bound; backing off "
        )
        + r"\d+ s \(failed \d+ times?\)",
        message,
    ), message
    assert k.core.read_namespaced_pod("db", ns).spec.node_name is None
    assert not k.core.list_persistent_volume().items


def test_a_gang_is_bound_only_once_every_members_claim_is(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1"), node("n2"))
    ns = k.namespace("volumes")
    storage_class(k, "local", "kubernetes.io/no-provisioner")
    storage_class(k, "never", "csi.example.com")
    k.core.create_persistent_volume(volume("local-n1", "local", on="n1"))
    claim(k, ns, "g-0-data", "local")
    made = claim(k, ns, "g-1-data", "never")
    k.podgroup(ns, podgroup("g", 2))
    members = [on_claim(f"g-{i}") for i in range(2)]
    for m in members:
        m["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "g"}
    k.pods(ns, *members)
    start_operator("--volume-bind-timeout", "2")

    def told() -> list[str] | None:
        out = []
        for name in ("g-0", "g-1"):
            conditions = k.core.read_namespaced_pod(name, ns).status.conditions or []
            out += [c.message for c in conditions if "binding volumes" in (c.message or "")]
        return out if len(out) == 2 else None

    # Member 0's volume is there, member 1's is never provisioned: neither is bound, both told why.
    messages = wait_for(told, 60, what="both members told why")
    assert all(f"{ns}/g-1-data not bound within 2 s" in m for m in messages), messages
    assert k.bound(ns) == {}
    # The volume is made: the gang is placed again and bound whole.
    pvc = k.core.read_namespaced_persistent_volume_claim("g-1-data", ns)
    chosen = wait_for(
        lambda: (
            k.core.read_namespaced_persistent_volume_claim("g-1-data", ns).metadata.annotations or {}
        ).get(SELECTED_NODE),
        60,
        what="member 1's claim given a node again",
    )
    ref = {"kind": "PersistentVolumeClaim", "namespace": ns, "name": "g-1-data", "uid": made.metadata.uid}
    k.core.create_persistent_volume(volume("pvc-" + pvc.metadata.uid, "never", on=chosen, claim_ref=ref))
    bound = wait_for(lambda: len(k.bound(ns)) == 2 and k.bound(ns), 60, what="the gang bound")
    assert bound[f"{ns}/g-0"] == "n1" and bound[f"{ns}/g-1"] == chosen


def claim_requests(k: Kube, verb: str) -> float:
    """The apiserver's count of ``verb`` requests on one PersistentVolumeClaim (its /metrics), whoever
    made them."""
    method, url, headers, _body, _post = k.api.param_serialize(
        "GET", "/metrics", auth_settings=["BearerToken"]
    )
    resp = k.api.call_api(method, url, headers)
    resp.read()  # type: ignore[no-untyped-call]
    text = (resp.data or b"").decode()
    pattern = re.compile(r"^apiserver_request_total\{([^}]*)\} (\S+)$")
    total = 0.0
    for line in text.splitlines():
        m = pattern.match(line)
        if m is None:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if (labels.get("verb"), labels.get("resource"), labels.get("subresource")) == (
            verb,
            "persistentvolumeclaims",
            "",
        ) and labels.get("scope") == "resource":
            total += float(m.group(2))
    return total


def test_the_wait_reads_the_claim_from_the_watch_not_the_apiserver(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1"))
    ns = k.namespace("volumes")
    storage_class(k, "never", "csi.example.com")
    made = claim(k, ns, "db-data", "never")
    k.pods(ns, on_claim("db"))
    start_operator("--volume-bind-timeout", "8")

    # From the selected node written to its undoing (8 s later, when the wait gives up), the claim is read
    # from the apiserver only to undo it: the wait itself reads the cache. (The wait of 4a9659b read it
    # about once a second: 8 reads and more.)
    counts: list[float] = []
    w = watch.Watch()
    for event in w.stream(
        k.core.list_namespaced_persistent_volume_claim,
        ns,
        resource_version=made.metadata.resource_version,
        timeout_seconds=90,
    ):
        chosen = (event["object"].metadata.annotations or {}).get(SELECTED_NODE)
        if chosen and not counts:
            counts.append(claim_requests(k, "GET"))
        elif counts and not chosen:
            counts.append(claim_requests(k, "GET"))
            w.stop()
    assert len(counts) == 2, counts
    assert counts[1] - counts[0] <= 1, counts
