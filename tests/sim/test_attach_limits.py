"""CSI volume attach limits (a node's CSINode ``allocatable.count`` per driver) through the simulator (the
real engine), as kube-scheduler's NodeVolumeLimits keeps pods off a node whose driver has no attachment
left: the kubelet would fail to attach the volume and the pod would stay ContainerCreating."""

from __future__ import annotations

from typing import Any

from tests.builders import csi_node, node, pod, pv, pvc, run, storage_class

DRIVER = "csi.example.com"


def where(data: dict[str, Any]) -> dict[str, str | None]:
    return {k.split("/", 1)[1]: v["node"] for k, v in data["pods"].items()}


def reason(data: dict[str, Any], key: str) -> str:
    return next(
        e["message"]
        for e in data["events"]
        if e["object"] == f"Pod {key}" and e["reason"] == "FailedScheduling"
    )


def volumes(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        out += [pv(f"v{i}", csi=DRIVER), pvc(f"c{i}", volume=f"v{i}")]
    return out


def test_no_more_volumes_of_a_driver_than_the_node_may_attach() -> None:
    data = run(
        [
            node("n1", cpu="16"),
            csi_node("n1", csi_example_com=2),
            *volumes(3),
            *(pod(f"p{i}", claims=[f"c{i}"]) for i in range(3)),
        ]
    )
    assert sorted(map(str, where(data).values())) == ["None", "n1", "n1"]
    [waiting] = [p for p, n in where(data).items() if n is None]
    assert reason(data, f"default/{waiting}") == (
        "0/1 nodes fit: 1 node(s) exceed max volume count of csi.example.com (needs 1, most free 0)"
    )


def test_the_pods_go_where_attachments_are_left() -> None:
    data = run(
        [
            node("n1", cpu="16"),
            node("n2", cpu="16"),
            csi_node("n1", csi_example_com=1),
            csi_node("n2", csi_example_com=1),
            *volumes(2),
            *(pod(f"p{i}", claims=[f"c{i}"]) for i in range(2)),
        ]
    )
    assert sorted(str(n) for n in where(data).values()) == ["n1", "n2"]


def test_a_volume_attached_for_a_pod_there_already_counts_once() -> None:
    """A bound pod's volume counts against its node's limit; a pod mounting the same volume adds nothing."""
    data = run(
        [
            node("n1", cpu="16"),
            csi_node("n1", csi_example_com=1),
            *volumes(2),
            pod("running", claims=["c0"], node="n1", phase="Running"),
            pod("same", claims=["c0"]),
            pod("other", claims=["c1"]),
        ]
    )
    assert where(data) == {"running": "n1", "same": "n1", "other": None}


def test_a_claim_to_provision_counts_by_its_class_provisioner() -> None:
    data = run(
        [
            node("n1", cpu="16"),
            csi_node("n1", csi_example_com=1),
            storage_class("dyn", provisioner=DRIVER),
            pvc("a", storage_class="dyn"),
            pvc("b", storage_class="dyn"),
            pod("pa", claims=["a"]),
            pod("pb", claims=["b"]),
        ]
    )
    assert sorted(map(str, where(data).values())) == ["None", "n1"]


def test_a_driver_without_a_count_and_a_node_without_a_csinode_have_no_limit() -> None:
    data = run(
        [
            node("n1", cpu="16"),
            node("n2", cpu="16", labels={"pool": "b"}),
            csi_node("n1", csi_example_com=None, other_example_com=0),
            *volumes(4),
            *(
                pod(f"p{i}", claims=[f"c{i}"], node_selector={"kubernetes.io/hostname": "n1"})
                for i in range(2)
            ),
            *(pod(f"q{i}", claims=[f"c{i + 2}"], node_selector={"pool": "b"}) for i in range(2)),
        ]
    )
    assert where(data) == {"p0": "n1", "p1": "n1", "q0": "n2", "q1": "n2"}


def test_volumes_of_an_in_tree_plugin_migrated_to_csi_count_as_its_drivers() -> None:
    """kube-scheduler counts an in-tree volume (``awsElasticBlockStore``...) as its CSI driver's once its
    plugin is migrated, as the four block plugins are for good; so does a claim of a class that names the
    in-tree provisioner."""
    ebs = []
    for i in range(2):
        v = pv(f"ebs{i}")
        del v["spec"]["local"]
        v["spec"]["awsElasticBlockStore"] = {"volumeID": f"aws://eu-west-1a/vol-{i}"}
        ebs += [v, pvc(f"e{i}", volume=f"ebs{i}")]
    data = run(
        [
            node("n1", cpu="16"),
            csi_node("n1", ebs_csi_aws_com=2),
            *ebs,
            storage_class("gp2", provisioner="kubernetes.io/aws-ebs"),
            pvc("dyn", storage_class="gp2"),
            pod("a", claims=["e0"]),
            pod("b", claims=["e1"]),
            pod("c", claims=["dyn"], created="2026-01-02T00:00:00Z"),
        ]
    )
    assert where(data) == {"a": "n1", "b": "n1", "c": None}
    assert reason(data, "default/c") == (
        "0/1 nodes fit: 1 node(s) exceed max volume count of ebs.csi.aws.com (needs 1, most free 0)"
    )


def inline(p: dict[str, Any], source: str, volume: dict[str, Any]) -> dict[str, Any]:
    """``p`` with an inline volume of an in-tree plugin (``spec.volumes[].<source>``)."""
    p["spec"].setdefault("volumes", []).append({"name": f"v-{source}", source: volume})
    return p


def test_a_pods_inline_in_tree_volumes_count_as_their_csi_drivers() -> None:
    """kube-scheduler counts a pod's inline volume of a migrated plugin (``spec.volumes[].
    awsElasticBlockStore``, ``portworxVolume``...) as its CSI driver's, as it counts a PersistentVolume's:
    once per node, however many pods there mount it, and with the claims' volumes of that driver."""
    ebs = [pv("ebs0"), pvc("e0", volume="ebs0")]
    del ebs[0]["spec"]["local"]
    ebs[0]["spec"]["awsElasticBlockStore"] = {"volumeID": "vol-0"}
    data = run(
        [
            node("n1", cpu="16"),
            csi_node("n1", ebs_csi_aws_com=3, pxd_portworx_com=1),
            *ebs,
            pod("claim", claims=["e0"]),
            inline(pod("a"), "awsElasticBlockStore", {"volumeID": "aws://eu-west-1a/vol-1"}),
            inline(pod("same"), "awsElasticBlockStore", {"volumeID": "vol-1"}),  # one volume: once
            inline(pod("b"), "awsElasticBlockStore", {"volumeID": "vol-2"}),
            inline(pod("c", created="2026-01-02T00:00:00Z"), "awsElasticBlockStore", {"volumeID": "vol-3"}),
            inline(pod("px"), "portworxVolume", {"volumeID": "px-1"}),
            inline(pod("px2", created="2026-01-02T00:00:00Z"), "portworxVolume", {"volumeID": "px-2"}),
        ]
    )
    assert where(data) == {
        "claim": "n1", "a": "n1", "same": "n1", "b": "n1", "c": None, "px": "n1", "px2": None,
    }  # fmt: skip
    assert reason(data, "default/c") == (
        "0/1 nodes fit: 1 node(s) exceed max volume count of ebs.csi.aws.com (needs 1, most free 0)"
    )
    assert reason(data, "default/px2") == (
        "0/1 nodes fit: 1 node(s) exceed max volume count of pxd.portworx.com (needs 1, most free 0)"
    )


def test_a_volume_attached_without_a_pod_counts_until_it_is_detached() -> None:
    """A VolumeAttachment whose pod is gone (the detach not done) holds its attachment: a pod mounting
    that volume goes there, one mounting another waits."""
    attachment = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": "csi-1"},
        "spec": {"attacher": DRIVER, "nodeName": "n1", "source": {"persistentVolumeName": "v0"}},
    }
    data = run(
        [
            node("n1", cpu="16"),
            csi_node("n1", csi_example_com=1),
            *volumes(2),
            attachment,
            pod("same", claims=["c0"]),
            pod("other", claims=["c1"]),
        ]
    )
    assert where(data) == {"same": "n1", "other": None}
