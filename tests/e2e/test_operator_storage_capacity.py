"""Storage capacity tracking on a real apiserver, as kube-scheduler's VolumeBinding checks it: a claim to
provision of a class whose CSIDriver says ``storageCapacity: true`` gets only a node for which some
CSIStorageCapacity of its class has room for it; a pod too big for every one is told why in numbers, and
goes once a capacity grows (watched). An operator without the right to read CSIStorageCapacities or
CSIDrivers does not start, naming them, rather than run blind to them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import ROOT, Kube, Start, apply_file, node, pod, wait_for
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

DRIVER = "csi.example.com"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


def capacity(name: str, size: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name},
        "storageClassName": "dyn",
        "capacity": size,
        "nodeTopology": {"matchLabels": {"zone": zone}},
    }


def claim(k: Kube, ns: str, name: str, size: str) -> None:
    k.core.create_namespaced_persistent_volume_claim(
        ns,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": size}},
                "storageClassName": "dyn",
            },
        },
    )


def on_claim(name: str) -> dict[str, Any]:
    p = pod(name, "100m")
    p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
    return p


def test_a_claim_goes_where_a_capacity_holds_it_and_one_too_big_waits_told_why(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "b"}))
    storage = client.StorageV1Api(k.api)
    storage.create_csi_driver(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": DRIVER},
            "spec": {"storageCapacity": True, "attachRequired": False},
        }
    )
    storage.create_storage_class(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "dyn"},
            "provisioner": DRIVER,
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    ns = k.namespace("capacity")
    for name, size, zone in (("zone-a", "5Gi", "a"), ("zone-b", "20Gi", "b")):
        storage.create_namespaced_csi_storage_capacity(ns, capacity(name, size, zone))
    claim(k, ns, "ten", "10Gi")
    claim(k, ns, "huge", "30Gi")
    k.pods(ns, on_claim("ten"), on_claim("huge"))
    op = start_operator()

    def selected(name: str) -> str | None:
        pvc = k.core.read_namespaced_persistent_volume_claim(name, ns)
        return (pvc.metadata.annotations or {}).get(SELECTED_NODE)

    # The only node whose capacity holds 10Gi: zone b's.
    assert wait_for(lambda: selected("ten"), 60, what="ten's selected node", operator=op) == "n2"

    def why() -> str | None:
        events = [
            e
            for e in k.core.list_namespaced_event(ns).items
            if e.involved_object.name == "huge" and e.reason == "FailedScheduling"
        ]
        return events[-1].message if events else None

    assert wait_for(why, 30, what="huge told why", operator=op) == (
        "0/2 nodes fit: 2 node(s) did not have enough free storage (huge asks 30Gi of class dyn, the most"
        " any can make there 20Gi)"
    )
    assert selected("huge") is None
    # The driver's capacity in zone a grows: the watch brings it, and huge goes there.
    storage.patch_namespaced_csi_storage_capacity("zone-a", ns, {"capacity": "40Gi"})
    assert wait_for(lambda: selected("huge"), 30, what="huge's selected node", operator=op) == "n1"


@pytest.mark.parametrize("resource", ["csistoragecapacities", "csidrivers"])
def test_an_operator_without_the_right_to_read_them_does_not_start(
    k: Kube, cluster: LocalControlPlane, tmp_path: Path, resource: str
) -> None:
    """An operator updated without its new ClusterRole ends its start, saying which listing was refused."""
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
