"""CSI volume attach limits on a real apiserver: a node's CSINode (``spec.drivers[].allocatable.count``)
caps the volumes of one driver pods there may mount, as kube-scheduler's NodeVolumeLimits reads it; the
pod past it waits, told why in numbers, and goes once the CSINode is gone (watched)."""

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


def on_claim(name: str, claim: str) -> dict[str, Any]:
    p = pod(name, "100m")
    p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return p


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


def test_an_operator_without_the_right_to_read_csinodes_does_not_start(
    k: Kube, cluster: LocalControlPlane, tmp_path: Path
) -> None:
    """An operator updated without its new ClusterRole (no list on csinodes) ends its start, saying which
    listing was refused, rather than run blind to the nodes' attach limits."""
    for name in ("00-namespace.yaml", "10-rbac.yaml", "20-config.yaml"):
        apply_file(k.api, ROOT / "manifests" / name)
    rbac = client.RbacAuthorizationV1Api(k.api)
    role = rbac.read_cluster_role("volsched")
    for rule in role.rules:
        if rule.resources and "csinodes" in rule.resources:
            rule.resources = [r for r in rule.resources if r != "csinodes"]
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
    assert "csinodes" in text and "403" in text, text
