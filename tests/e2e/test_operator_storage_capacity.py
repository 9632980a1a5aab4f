"""Storage capacity tracking on a real apiserver, as kube-scheduler's VolumeBinding checks it: a claim to
provision of a class whose CSIDriver says ``storageCapacity: true`` gets only a node for which some
CSIStorageCapacity of its class has room for it; a pod too big for every one is told why in numbers, and
goes once a capacity grows (watched). An operator without the right to read CSIStorageCapacities or
CSIDrivers does not start: test_operator_attach_limits.py tests it with the other storage listings."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for

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
