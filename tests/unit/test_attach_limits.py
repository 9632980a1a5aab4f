"""volsched.model.attach and its decoding: CSINodes' attach limits and what a pod's claims attach."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.builders import csi_node, node, pv, pvc, storage_class
from volsched.cache.state import ClusterState
from volsched.model.attach import AttachCatalog, AttachState
from volsched.model.decode import build_task, csi_node_limits, persistent_volume, volume_claim
from volsched.model.decode import storage_class as decode_class
from volsched.model.errors import InputError
from volsched.model.vocabulary import Task, TaskStatus


def test_a_csinodes_counts_are_read_per_driver() -> None:
    obj = csi_node("n1", ebs_csi_aws_com=25, efs_csi_aws_com=None, zero_example_com=0)
    assert csi_node_limits(obj) == ("n1", {"ebs.csi.aws.com": 25, "zero.example.com": 0})


@pytest.mark.parametrize(
    ("drivers", "why"),
    [
        ({"name": "d"}, "spec.drivers must be a list"),
        ([{"nodeID": "n1"}], "spec.drivers[0].name must be a non-empty string"),
        ([{"name": "d", "allocatable": {"count": -1}}], "allocatable.count must be a whole number"),
        ([{"name": "d", "allocatable": {"count": "3"}}], "allocatable.count must be a whole number"),
        ([{"name": "d", "allocatable": {"count": True}}], "allocatable.count must be a whole number"),
        ([{"name": "d", "allocatable": 3}], "allocatable must be a map"),
    ],
)
def test_a_bad_csinode_is_refused_with_the_field(drivers: Any, why: str) -> None:
    obj = {"kind": "CSINode", "metadata": {"name": "n1"}, "spec": {"drivers": drivers}}
    with pytest.raises(InputError, match="CSINode n1") as err:
        csi_node_limits(obj)
    assert why in str(err.value)


def test_a_volumes_csi_source_is_read_and_a_bad_one_refused() -> None:
    assert persistent_volume(pv("v", csi="d.example.com")).csi == ("d.example.com", "handle-v")
    assert persistent_volume(pv("v")).csi is None
    bad = pv("v", csi="d.example.com")
    bad["spec"]["csi"] = {"driver": "d.example.com"}
    with pytest.raises(InputError, match=r"spec\.csi\.driver and spec\.csi\.volumeHandle"):
        persistent_volume(bad)


def catalog(limits: dict[str, dict[str, int]]) -> AttachCatalog:
    claims = [
        pvc("a", volume="va"),
        pvc("b", volume="vb"),
        pvc("dyn", storage_class="fast"),
        pvc("local", volume="vl"),
    ]
    volumes = [pv("va", csi="d"), pv("vb", csi="d"), pv("vl")]
    return AttachCatalog(
        limits=limits,
        claims={c.key: c for c in map(volume_claim, claims)},
        volumes={v.name: v for v in map(persistent_volume, volumes)},
        classes={"fast": decode_class(storage_class("fast", provisioner="d"))},
    )


def task(name: str, *claims: str, node: str | None = None) -> Task:
    status = TaskStatus.RUNNING if node else TaskStatus.PENDING
    return Task(
        namespace="default", name=name, uid=name, job_key="", request_map={}, priority=0, status=status,
        node_name=node, scheduler_name="volsched", creation=0.0, request=np.zeros(1), claims=claims,
    )  # fmt: skip


def test_what_a_pods_claims_attach() -> None:
    c = catalog({})
    assert c.attachments("default", ["a", "a", "dyn", "local", "missing"]) == (
        ("d", "handle-va"),
        ("d", "claim default/dyn"),
    )


def test_a_volume_counts_once_per_node_and_the_reason_is_in_numbers() -> None:
    on_n1 = {"x": task("x", "a", node="n1"), "y": task("y", "a", node="n1")}
    state = AttachState(
        catalog({"n1": {"d": 2}, "n2": {"d": 1}}), index={"n1": 0, "n2": 1}, tasks=lambda: [on_n1, {}]
    )
    assert state.check(task("p", "local")) is None  # no volume of a limited driver
    assert state.check(task("p", "a")).tolist() == [True, True]
    assert state.check(task("p", "b")).tolist() == [True, True]
    assert state.check(task("p", "b", "dyn")).tolist() == [False, False]
    assert state.explain(task("p", "b", "dyn"), np.arange(2)) == [
        ("node(s) exceed max volume count of d (needs 2, most free 1)", 2)
    ]
    placed = task("p", "b", node="n1")
    state.add(placed)
    assert state.check(task("q", "dyn")).tolist() == [False, True]
    assert state.now(task("q", "dyn")) is None  # nothing being evicted: now is as check says
    placed.status = TaskStatus.RELEASING  # evicted: attached until it is gone, free once it is
    state.remove(placed)
    assert state.check(task("q", "dyn")).tolist() == [True, True]  # may be pipelined onto it
    assert state.now(task("q", "dyn")).tolist() == [False, True]  # not placed there now
    placed.status = TaskStatus.RUNNING  # the eviction undone
    state.add(placed)
    assert state.check(task("q", "dyn")).tolist() == [False, True]
    assert state.now(task("q", "dyn")) is None
    placed.status = TaskStatus.PENDING  # a placement undone
    state.remove(placed)
    assert state.check(task("q", "dyn")).tolist() == [True, True]


def test_the_pods_whose_going_frees_an_attachment() -> None:
    """The pods that preempt and reclaim may take to free an attachment: those mounting a volume of the
    pod's driver on a node with a limit (not one the pod mounts too); a volume frees its attachment only
    once every pod there mounting it is evicted; a pod being evicted at the start frees its own."""
    on_n1 = {"x": task("x", "a", node="n1"), "y": task("y", "a", node="n1")}
    gone = task("z", "b", node="n2")
    gone.status = TaskStatus.RELEASING
    state = AttachState(
        catalog({"n1": {"d": 1}, "n2": {"d": 1}}),
        index={"n1": 0, "n2": 1},
        tasks=lambda: [on_n1, {"z": gone}],
    )
    new = task("p", "dyn")
    assert state.holders(new) == {"default/x": "an attachment of d", "default/y": "an attachment of d"}
    assert state.holders(task("p", "a", "dyn")) == {}  # its own volume frees nothing for it
    assert state.holders(task("p", "local")) == {}
    assert state.relievable(new).tolist() == [True, True]
    assert state.relievable(task("p", "b", "dyn")).tolist() == [False, False]  # two where one may be
    assert state.check(new).tolist() == [False, True]  # pipelined onto z's attachment
    assert state.now(new).tolist() == [False, False]
    for t in on_n1.values():
        t.status = TaskStatus.RELEASING
        state.remove(t)
        assert state.check(new).tolist() == [t.name == "y", True]  # free once both are gone


def test_a_snapshot_copies_the_csinode_table_only_once_it_changed() -> None:
    """The snapshot takes the cache's CSINode table by a change counter, as it takes the volume tables:
    a snapshot with no CSINode event since the last shares its table (no copy per session); one after an
    event (a count changed, a CSINode gone) has its own, and the last snapshot's is left as it was."""
    state = ClusterState()
    for obj in (node("n1"), node("n2"), csi_node("n1", d=1), csi_node("n2", d=1)):
        state.apply(obj)
    first = state.snapshot(now=0.0).attach
    state.apply(node("n3"))  # (no CSINode event)
    second = state.snapshot(now=0.0).attach
    assert first is not None and second is not None
    assert second.limits is first.limits
    state.apply(csi_node("n1", d=2))
    third = state.snapshot(now=0.0).attach
    assert third is not None and third.limits is not first.limits
    assert third.limits == {"n1": {"d": 2}, "n2": {"d": 1}}
    assert first.limits == {"n1": {"d": 1}, "n2": {"d": 1}}
    state.delete("CSINode", None, "n2")
    fourth = state.snapshot(now=0.0).attach
    assert fourth is not None and fourth.limits == {"n1": {"d": 2}}
    assert third.limits == {"n1": {"d": 2}, "n2": {"d": 1}}


@pytest.mark.parametrize(
    ("source", "attachment"),
    [
        ({"awsElasticBlockStore": {"volumeID": "aws://eu-west-1a/vol-1"}}, ("ebs.csi.aws.com", "vol-1")),
        ({"awsElasticBlockStore": {"volumeID": "vol-2"}}, ("ebs.csi.aws.com", "vol-2")),
        ({"gcePersistentDisk": {"pdName": "disk-1"}}, ("pd.csi.storage.gke.io", "disk-1")),
        ({"azureDisk": {"diskName": "d", "diskURI": "/subs/x/d"}}, ("disk.csi.azure.com", "/subs/x/d")),
        ({"cinder": {"volumeID": "c-1"}}, ("cinder.csi.openstack.org", "c-1")),
        ({"portworxVolume": {"volumeID": "px-1"}}, ("pxd.portworx.com", "px-1")),
        ({"nfs": {"server": "s", "path": "/"}}, None),
    ],
)
def test_a_volume_of_an_in_tree_plugin_migrated_to_csi_counts_as_its_drivers(
    source: dict[str, Any], attachment: tuple[str, str] | None
) -> None:
    """As kube-scheduler's NodeVolumeLimits counts them: their migration to CSI is on for good."""
    obj = pv("v")
    del obj["spec"]["local"]
    obj["spec"].update(source)
    assert persistent_volume(obj).csi == attachment


def test_a_claim_of_an_in_tree_provisioners_class_counts_as_its_csi_drivers() -> None:
    c = AttachCatalog(
        limits={},
        claims={c.key: c for c in map(volume_claim, [pvc("gp2", storage_class="gp2")])},
        volumes={},
        classes={"gp2": decode_class(storage_class("gp2", provisioner="kubernetes.io/aws-ebs"))},
    )
    assert c.attachments("default", ["gp2"]) == (("ebs.csi.aws.com", "claim default/gp2"),)


def test_portworx_counts_as_its_csi_drivers_as_in_kube_scheduler_1_37() -> None:
    """Portworx's migration to CSI is on for good since Kubernetes 1.33 (no CSINode annotation asked):
    its PersistentVolumes and its provisioner's claims count as ``pxd.portworx.com``'s."""
    c = AttachCatalog(
        limits={},
        claims={c.key: c for c in map(volume_claim, [pvc("px", storage_class="px")])},
        volumes={},
        classes={"px": decode_class(storage_class("px", provisioner="kubernetes.io/portworx-volume"))},
    )
    assert c.attachments("default", ["px"]) == (("pxd.portworx.com", "claim default/px"),)


def test_a_volume_attached_without_a_pod_counts_until_it_is_detached() -> None:
    """A VolumeAttachment of a CSI volume counts on its node when no pod there mounts the volume (its
    pod gone, the detach not done), as kube-scheduler counts it; one a pod mounts counts once, and goes
    with the pod; one of a volume that is no CSI volume, or of a node unknown, counts nothing."""
    base = catalog({"n1": {"d": 1}, "n2": {"d": 1}})
    attached = {
        "va-a": ("n1", "d", "va"),  # a pod mounts it below
        "va-b": ("n2", "d", "vb"),  # no pod: its pod is gone
        "va-l": ("n1", "d", "vl"),  # no CSI volume
        "va-x": ("n9", "d", "va"),
    }
    c = AttachCatalog(base.limits, base.claims, base.volumes, base.classes, attached=attached)
    on_n1 = {"x": task("x", "a", node="n1")}
    state = AttachState(c, index={"n1": 0, "n2": 1}, tasks=lambda: [on_n1, {}])
    new = task("p", "dyn")
    assert state.check(new).tolist() == [False, False]
    assert state.holders(new) == {"default/x": "an attachment of d"}  # n2's has no pod to evict
    on_n1["x"].status = TaskStatus.RELEASING
    state.remove(on_n1["x"])
    assert state.check(new).tolist() == [True, False]
    assert state.check(task("q", "b")).tolist() == [True, True]  # the volume attached already
    assert state.explain(new, np.arange(2)) == [
        ("node(s) exceed max volume count of d (needs 1, most free 0)", 1)
    ]


def test_a_pods_inline_in_tree_volumes_are_read_and_counted_with_its_claims() -> None:
    """``build_task`` reads a pod's inline volumes of migrated in-tree plugins as their CSI driver's (each
    once; an inline CSI or NFS volume is none); they count with its claims' volumes, once per node, and
    the pod holding one is what preempt and reclaim may take to free its attachment."""
    spec = {
        "containers": [{"name": "c", "image": "i"}],
        "volumes": [
            {"name": "a", "awsElasticBlockStore": {"volumeID": "aws://eu-west-1a/vol-1"}},
            {"name": "b", "awsElasticBlockStore": {"volumeID": "vol-1"}},
            {"name": "c", "cinder": {"volumeID": "c-1"}},
            {"name": "d", "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-9"}},
            {"name": "e", "nfs": {"server": "s", "path": "/"}},
            {"name": "f", "persistentVolumeClaim": {"claimName": "a"}},
        ],
    }
    built = build_task(
        {"metadata": {"name": "p", "namespace": "default", "uid": "p"}, "spec": spec}, priority_classes={}
    )
    assert built.inline_volumes == (("ebs.csi.aws.com", "vol-1"), ("cinder.csi.openstack.org", "c-1"))
    assert built.claims == ("a",)

    def inline(name: str, *volumes: str, node: str | None = None) -> Task:
        t = task(name, node=node)
        t.inline_volumes = tuple(("d", v) for v in volumes)
        return t

    on_n1 = {"x": inline("x", "handle-va", node="n1"), "y": inline("y", "own", node="n1")}
    state = AttachState(catalog({"n1": {"d": 2}}), index={"n1": 0}, tasks=lambda: [on_n1])
    assert state.of(built) == (("d", "handle-va"),)  # (its inline volumes' drivers have no limit here)
    assert state.check(task("p", "a")).tolist() == [True]  # va: x mounts it inline already
    assert state.check(task("p", "b")).tolist() == [False]
    assert state.check(inline("p", "own")).tolist() == [True]
    assert state.holders(task("p", "b")) == {
        "default/x": "an attachment of d",
        "default/y": "an attachment of d",
    }
    assert state.holders(inline("p", "own", "new")) == {"default/x": "an attachment of d"}


def test_each_pods_attachments_are_kept_while_the_catalog_is_the_same_and_counts_stay_right() -> None:
    """A pod's attachments are resolved once while the cache hands the same claims, volumes, classes and
    limits (kept in the node table's memo), and anew once one of them is a new object; the counts built
    from them are the same as a state without the memo builds."""
    memo: dict[str, Any] = {}
    base = catalog({"n1": {"d": 2}, "n2": {"d": 1}})
    on = [{"x": task("x", "a", node="n1"), "y": task("y", "a", node="n1")}, {"z": task("z", "b", node="n2")}]
    index = {"n1": 0, "n2": 1}
    for _ in range(2):
        with_memo = AttachState(base, index=index, tasks=lambda: on, memo=memo)
        alone = AttachState(base, index=index, tasks=lambda: on)
        for s in (with_memo, alone):
            assert s.check(task("p", "dyn")).tolist() == [True, False]
            assert {d: c.tolist() for d, c in s.attached.items()} == {"d": [1, 1]}
    [kept] = [v for k, v in memo.items() if "attachments" in k]
    assert kept[0] is base.claims and ("default", ("a",), ()) in kept[4]
    rebound = {**base.claims, "default/a": volume_claim(pvc("a", volume="vb"))}  # a now on vb
    changed = AttachCatalog(base.limits, rebound, base.volumes, base.classes)
    s = AttachState(changed, index=index, tasks=lambda: on, memo=memo)
    assert s.of(task("p", "a")) == (("d", "handle-vb"),)
    assert s.check(task("p", "b")).tolist() == [True, True]  # vb attached on both now
