"""CSI volume attach limits on a real apiserver: a node's CSINode (``spec.drivers[].allocatable.count``)
caps the volumes of one driver pods there may mount, as kube-scheduler's NodeVolumeLimits reads it; the
pod past it waits, told why in numbers, and goes once the CSINode is gone (watched). A higher-priority
pod kept out only by the limit preempts the pod whose volume holds the attachment, as kube-scheduler's
preemption does, and nothing else. A pod's inline in-tree volumes count as their CSI driver's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import (
    RECLAIM_CONFIG,
    ROOT,
    Kube,
    Start,
    apply_file,
    node,
    pod,
    podgroup,
    queue,
    wait_for,
)
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

DRIVER = "csi.example.com"


def csi_volume(k: Kube, ns: str, name: str) -> None:
    """A PersistentVolume of the driver and a claim bound to it (``volumeName``)."""
    k.core.create_persistent_volume(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{ns}-{name}"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "csi": {"driver": DRIVER, "volumeHandle": f"vol-{name}"},
                "claimRef": {"namespace": ns, "name": name},
            },
        }
    )
    k.core.create_namespaced_persistent_volume_claim(
        ns,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "",
                "volumeName": f"{ns}-{name}",
            },
        },
    )


def on_claim(name: str, claim: str, **more: Any) -> dict[str, Any]:
    p = pod(name, "100m", **more)
    p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return p


def csi_node(k: Kube, name: str, count: int) -> None:
    client.StorageV1Api(k.api).create_csi_node(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": name},
            "spec": {"drivers": [{"name": DRIVER, "nodeID": name, "allocatable": {"count": count}}]},
        }
    )


def test_a_pod_kept_out_by_the_limit_preempts_the_pod_holding_the_attachment(
    k: Kube, start_operator: Start
) -> None:
    k.set_config(RECLAIM_CONFIG)
    sched = client.SchedulingV1Api(k.api)
    for name, value in (("low", 10), ("high", 1000)):
        sched.create_priority_class({"metadata": {"name": name}, "value": value})
    k.nodes(node("n1", cpu="8"))
    csi_node(k, "n1", 1)
    k.queue(queue("q"))
    ns = k.namespace("attach")
    for name in ("a", "b"):
        csi_volume(k, ns, name)
    k.podgroup(ns, podgroup("low", 1, queue="q", priority_class="low"))
    k.podgroup(ns, podgroup("high", 1, queue="q", priority_class="high"))
    # "other" is the youngest and holds no volume: a walk for room alone would take it first.
    holder = on_claim("holder", "a", group="low")
    holder["spec"]["terminationGracePeriodSeconds"] = 30  # no kubelet: it stays Terminating
    k.pods(ns, holder)
    op = start_operator()
    wait_for(lambda: k.bound(ns) == {f"{ns}/holder": "n1"}, 60, what="holder bound", operator=op)
    k.pods(ns, pod("other", "100m", group="low"))
    wait_for(lambda: len(k.bound(ns)) == 2, 30, what="other bound", operator=op)
    k.pods(ns, on_claim("new", "b", group="high"))

    def leaving() -> list[str]:
        return sorted(
            p.metadata.name for p in k.core.list_namespaced_pod(ns).items if p.metadata.deletion_timestamp
        )

    wait_for(lambda: leaving() == ["holder"], 40, what="holder evicted", operator=op)
    [event] = wait_for(
        lambda: [
            e
            for e in k.core.list_namespaced_event(ns).items
            if e.involved_object.name == "holder" and e.reason == "Preempted"
        ],
        20,
        what="Preempted event",
    )
    assert event.message.endswith(f"; frees an attachment of {DRIVER}"), event.message
    assert f"for {ns}/new" in event.message, event.message
    assert f"{ns}/new" not in k.bound(ns)  # (holder is Terminating, its volume still attached)
    # No kubelet ends holder: once it is gone, the new pod goes to n1, and "other" stayed.
    k.core.delete_namespaced_pod("holder", ns, grace_period_seconds=0)
    wait_for(lambda: k.bound(ns).get(f"{ns}/new") == "n1", 40, what="new bound to n1", operator=op)
    assert leaving() == []
    assert k.bound(ns) == {f"{ns}/other": "n1", f"{ns}/new": "n1"}
    op.check_running()


def test_no_more_volumes_of_a_driver_than_the_csinode_allows(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="8"))
    storage = client.StorageV1Api(k.api)
    storage.create_csi_node(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": "n1"},
            "spec": {"drivers": [{"name": DRIVER, "nodeID": "n1", "allocatable": {"count": 1}}]},
        }
    )
    ns = k.namespace("attach")
    for name in ("a", "b"):
        csi_volume(k, ns, name)
    k.pods(ns, on_claim("first", "a"))
    op = start_operator()
    wait_for(lambda: k.bound(ns) == {f"{ns}/first": "n1"}, 60, what="first bound", operator=op)
    k.pods(ns, on_claim("second", "b"), on_claim("same", "a"))

    def why() -> str | None:
        events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "second"]
        return events[0].message if events else None

    message = wait_for(why, 30, what="a FailedScheduling event for the second", operator=op)
    assert (
        message
        == "0/1 nodes fit: 1 node(s) exceed max volume count of csi.example.com (needs 1, most free 0)"
    )
    # The volume attached for the first already adds nothing for a pod mounting it too.
    wait_for(lambda: k.bound(ns).get(f"{ns}/same") == "n1", 30, what="same bound", operator=op)
    assert f"{ns}/second" not in k.bound(ns)

    storage.delete_csi_node("n1")
    wait_for(lambda: k.bound(ns).get(f"{ns}/second") == "n1", 30, what="second bound", operator=op)


def test_a_volume_attached_without_a_pod_holds_its_attachment_until_it_is_detached(
    k: Kube, start_operator: Start
) -> None:
    """A VolumeAttachment whose pod is gone (the detach not done) counts on its node, as kube-scheduler
    counts it: a pod needing another attachment there waits, told why, and goes once it is deleted."""
    k.nodes(node("n1", cpu="8"))
    csi_node(k, "n1", 1)
    ns = k.namespace("attached")
    for name in ("a", "b"):
        csi_volume(k, ns, name)
    storage = client.StorageV1Api(k.api)
    storage.create_volume_attachment(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": "csi-a"},
            "spec": {"attacher": DRIVER, "nodeName": "n1", "source": {"persistentVolumeName": f"{ns}-a"}},
        }
    )
    k.pods(ns, on_claim("second", "b"))
    op = start_operator()

    def why() -> str | None:
        events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "second"]
        return events[0].message if events else None

    assert wait_for(why, 60, what="a FailedScheduling event for the second", operator=op) == (
        "0/1 nodes fit: 1 node(s) exceed max volume count of csi.example.com (needs 1, most free 0)"
    )
    storage.delete_volume_attachment("csi-a")
    wait_for(lambda: k.bound(ns).get(f"{ns}/second") == "n1", 30, what="second bound", operator=op)


def test_a_pods_inline_in_tree_volumes_count_as_their_csi_drivers(k: Kube, start_operator: Start) -> None:
    """A pod's inline volume of an in-tree plugin migrated to CSI (``spec.volumes[].awsElasticBlockStore``)
    counts as its CSI driver's, as kube-scheduler counts it: through the listing at start and through
    the watch (both prune the pod); a pod mounting the same volume adds nothing, one mounting another
    waits, told why, and goes once the CSINode is gone."""
    ebs = "ebs.csi.aws.com"
    k.nodes(node("n1", cpu="8"))
    storage = client.StorageV1Api(k.api)
    storage.create_csi_node(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": "n1"},
            "spec": {"drivers": [{"name": ebs, "nodeID": "n1", "allocatable": {"count": 1}}]},
        }
    )
    ns = k.namespace("inline")

    def on_ebs(name: str, volume: str) -> dict[str, Any]:
        p = pod(name, "100m")
        p["spec"]["volumes"] = [
            {"name": "data", "awsElasticBlockStore": {"volumeID": volume, "fsType": "ext4"}}
        ]
        return p

    k.pods(ns, on_ebs("first", "aws://eu-west-1a/vol-1"))  # listed at start
    op = start_operator()
    wait_for(lambda: k.bound(ns) == {f"{ns}/first": "n1"}, 60, what="first bound", operator=op)
    k.pods(ns, on_ebs("second", "vol-2"), on_ebs("same", "vol-1"))  # watched

    def why() -> str | None:
        events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "second"]
        return events[0].message if events else None

    assert wait_for(why, 30, what="a FailedScheduling event for the second", operator=op) == (
        f"0/1 nodes fit: 1 node(s) exceed max volume count of {ebs} (needs 1, most free 0)"
    )
    wait_for(lambda: k.bound(ns).get(f"{ns}/same") == "n1", 30, what="same bound", operator=op)
    assert f"{ns}/second" not in k.bound(ns)
    storage.delete_csi_node("n1")
    wait_for(lambda: k.bound(ns).get(f"{ns}/second") == "n1", 30, what="second bound", operator=op)


@pytest.mark.parametrize("resource", ["csinodes", "volumeattachments", "csistoragecapacities", "csidrivers"])
def test_an_operator_without_the_right_to_read_a_storage_listing_does_not_start(
    k: Kube, cluster: LocalControlPlane, tmp_path: Path, resource: str
) -> None:
    """An operator updated without its new ClusterRole (no list on csinodes, volumeattachments,
    csistoragecapacities or csidrivers) ends its start, saying which listing was refused, rather than run
    blind to the nodes' attach limits or the drivers' storage capacity."""
    for name in ("00-namespace.yaml", "10-rbac.yaml", "20-config.yaml"):
        apply_file(k.api, ROOT / "manifests" / name)
    rbac = client.RbacAuthorizationV1Api(k.api)
    role = rbac.read_cluster_role("volsched")
    for rule in role.rules:
        if rule.resources and resource in rule.resources:
            rule.resources = [r for r in rule.resources if r != resource]
    rbac.replace_cluster_role("volsched", role)
    token = cluster.service_account_token("volsched-system", "volsched", create=False)
    kubeconfig = cluster.write_kubeconfig(cluster.workdir / "sa.kubeconfig", token=token)
    log = tmp_path / "operator.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "volsched", "run", "--kubeconfig", str(kubeconfig)),
                *("--namespace", "volsched-system", "--metrics-host", "127.0.0.1", "--metrics-port", "0"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    try:
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert code != 0, text
    assert resource in text and "403" in text, text
