"""Storage capacity tracking through the simulator (the real engine): a claim to provision of a class whose
CSI driver tracks capacity (CSIDriver ``storageCapacity: true``) goes only where a CSIStorageCapacity of its
class with room for it is, as kube-scheduler's VolumeBinding places it; a pod that fits nowhere is told why
in numbers."""

from __future__ import annotations

from typing import Any

from tests.builders import node, pod, pvc, run, storage_class

DRIVER = "csi.example.com"


def csi_driver(*, tracks: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": DRIVER},
        "spec": {"storageCapacity": tracks},
    }


def capacity(name: str, size: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": "dyn",
        "capacity": size,
        "nodeTopology": {"matchLabels": {"zone": zone}},
    }


def claim(name: str, size: str) -> dict[str, Any]:
    obj = pvc(name, storage_class="dyn")
    obj["spec"]["resources"]["requests"]["storage"] = size
    return obj


def cluster(*, tracks: bool = True) -> list[dict[str, Any]]:
    return [
        node("n1", cpu="16", labels={"zone": "a"}),
        node("n2", cpu="16", labels={"zone": "b"}),
        storage_class("dyn", provisioner=DRIVER),
        csi_driver(tracks=tracks),
        capacity("zone-a", "5Gi", "a"),
        capacity("zone-b", "20Gi", "b"),
        claim("ten", "10Gi"),
        claim("huge", "30Gi"),
        pod("ten", claims=["ten"]),
        pod("huge", claims=["huge"]),
    ]


def test_a_claim_goes_where_its_drivers_capacity_holds_it_and_one_too_big_waits_told_why() -> None:
    data = run(cluster())
    assert {k: v["node"] for k, v in data["pods"].items()} == {"default/ten": "n2", "default/huge": None}
    [message] = [
        e["message"]
        for e in data["events"]
        if e["object"] == "Pod default/huge" and e["reason"] == "FailedScheduling"
    ]
    assert message == (
        "0/2 nodes fit: 2 node(s) did not have enough free storage (huge asks 30Gi of class dyn, the most"
        " any can make there 20Gi)"
    )


def test_without_the_drivers_say_so_capacity_is_not_checked() -> None:
    data = run(cluster(tracks=False))
    assert all(v["node"] for v in data["pods"].values())
