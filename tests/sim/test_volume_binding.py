"""Claims of a WaitForFirstConsumer StorageClass bound where the pod goes, through the simulator (the real
engine): a volume that exists where it reaches, else one provisioned where the class allows."""

from __future__ import annotations

from typing import Any

from tests.builders import node, pod, podgroup, pv, pvc, run, storage_class


def where(data: dict[str, Any]) -> dict[str, str | None]:
    return {k.split("/", 1)[1]: v["node"] for k, v in data["pods"].items()}


def reason(data: dict[str, Any], key: str) -> str:
    return next(
        e["message"]
        for e in data["events"]
        if e["object"] == f"Pod {key}" and e["reason"] == "FailedScheduling"
    )


def test_a_local_volume_takes_its_pod_to_its_node() -> None:
    data = run(
        [
            node("n1", cpu="16"),
            node("n2", cpu="4"),
            storage_class("local"),
            pv("pv-1", nodes=["n2"], storage_class="local"),
            pvc("data", storage_class="local"),
            pod("db", claims=["data"]),
        ]
    )
    assert where(data) == {"db": "n2"}


def test_two_pods_never_take_one_volume() -> None:
    data = run(
        [
            node("n1"),
            node("n2"),
            storage_class("local"),
            pv("pv-1", nodes=["n1"], storage_class="local"),
            pvc("a", storage_class="local"),
            pvc("b", storage_class="local"),
            pod("pa", claims=["a"]),
            pod("pb", claims=["b"]),
        ]
    )
    assert where(data) == {"pa": "n1", "pb": None}
    assert (
        reason(data, "default/pb")
        == "0/2 nodes fit: 2 node(s) didn't find available persistent volumes to bind"
    )


def test_a_provisioner_provisions_where_its_topologies_allow() -> None:
    data = run(
        [
            node("a-1", cpu="4", labels={"zone": "a"}),
            node("b-1", cpu="16", labels={"zone": "b"}),
            storage_class("zonal", provisioner="csi.example.com", zones=["a"]),
            pvc("data", storage_class="zonal"),
            pod("db", claims=["data"]),
        ]
    )
    assert where(data) == {"db": "a-1"}


def test_a_gang_is_placed_only_where_every_member_gets_a_volume() -> None:
    objs = [
        node("n1"),
        node("n2"),
        storage_class("local"),
        pv("pv-1", nodes=["n1"], storage_class="local"),
        podgroup("g", min_member=2),
    ]
    objs += [pvc(f"d{i}", storage_class="local") for i in range(2)]
    objs += [pod(f"w{i}", claims=[f"d{i}"], group="g") for i in range(2)]
    data = run(objs)
    assert where(data) == {"w0": None, "w1": None}
    objs.append(pv("pv-2", nodes=["n2"], storage_class="local"))
    assert sorted(str(n) for n in where(run(objs)).values()) == ["n1", "n2"]


def test_a_claim_of_an_immediate_class_still_waits_for_the_controller() -> None:
    data = run([node("n1"), pvc("data"), pod("db", claims=["data"])])
    assert reason(data, "default/db") == (
        "0/1 nodes fit: 1 persistentvolumeclaim(s) data not bound yet (not of a WaitForFirstConsumer "
        "StorageClass: the PersistentVolume controller binds it)"
    )


def test_a_gang_sharing_one_claim_goes_where_it_is_bound() -> None:
    objs = [
        node("n1"),
        node("n2"),
        storage_class("dyn", provisioner="csi.example.com"),
        pvc("shared", storage_class="dyn"),
        podgroup("g", min_member=2),
    ]
    objs += [pod(f"w{i}", claims=["shared"], group="g") for i in range(2)]
    placed = where(run(objs))
    assert placed["w0"] is not None and placed["w0"] == placed["w1"], placed


def test_a_generic_ephemeral_volume_is_claimed_for_the_pod_and_bound_where_it_goes() -> None:
    db = pod("db")
    db["spec"]["volumes"] = [
        {
            "name": "scratch",
            "ephemeral": {
                "volumeClaimTemplate": {
                    "spec": {
                        "storageClassName": "local",
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    }
                }
            },
        }
    ]
    data = run(
        [
            node("n1", cpu="16"),
            node("n2"),
            storage_class("local"),
            pv("pv-1", nodes=["n2"], storage_class="local"),
            db,
        ]
    )
    assert where(data) == {"db": "n2"}


def test_an_ephemeral_volumes_claim_another_owner_made_is_not_used() -> None:
    db = pod("db")
    db["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]
    data = run([node("n1"), storage_class("local"), pvc("db-scratch", storage_class="local"), db])
    assert where(data) == {"db": None}
    assert reason(data, "default/db") == (
        "0/1 nodes fit: 1 persistentvolumeclaim(s) db-scratch not made for this pod (an ephemeral volume's "
        "claim must be the pod's own)"
    )
