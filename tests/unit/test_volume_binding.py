"""volsched.model.volumes: which nodes can give a pod's WaitForFirstConsumer claims a volume, and which."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from volsched.model.decode import persistent_volume, storage_class, volume_claim
from volsched.model.errors import InputError
from volsched.model.vocabulary import NodeSpec
from volsched.model.volumes import VolumeBinding, VolumeCatalog, VolumeState


def node(name: str, **labels: str) -> NodeSpec:
    return NodeSpec(
        name=name,
        allocatable={"cpu": 4},
        labels={"kubernetes.io/hostname": name, **labels},
        taints=(),
        unschedulable=False,
        ready=True,
    )


def sc(name: str, provisioner: str = "kubernetes.io/no-provisioner", **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
        **extra,
    }


def pvc(name: str, size: str = "1Gi", cls: str = "local", **spec: Any) -> dict[str, Any]:
    annotations = spec.pop("annotations", {})
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "annotations": annotations},
        "spec": {
            "storageClassName": cls,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            **spec,
        },
    }


def pv(
    name: str, size: str = "1Gi", cls: str = "local", on: str | None = None, **spec: Any
) -> dict[str, Any]:
    labels = spec.pop("labels", {})
    affinity = (
        {
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
        if on
        else {}
    )
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "storageClassName": cls,
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "nodeAffinity": affinity,
            **spec,
        },
        "status": {"phase": spec.pop("phase", "Available")},
    }


def state(nodes: list[NodeSpec], claims: list[Any], volumes: list[Any], classes: list[Any]) -> VolumeState:
    catalog = VolumeCatalog(
        claims={c.key: c for c in map(volume_claim, claims)},
        volumes={v.name: v for v in map(persistent_volume, volumes)},
        classes={c.name: c for c in map(storage_class, classes)},
    )
    return VolumeState(catalog, nodes=nodes)


ALL = np.arange(2, dtype=np.intp)


def test_a_local_volume_admits_only_its_node() -> None:
    s = state([node("n1"), node("n2")], [pvc("data")], [pv("pv-a", on="n2")], [sc("local")])
    assert s.fits("default", ["data"], ALL).tolist() == [False, True]
    assert s.choose("default", ["data"], 1) == (VolumeBinding("default", "data", "uid-data", "pv-a"),)
    assert s.choose("default", ["data"], 0) is None
    assert s.explain("default", ["data"], ALL[:1]) == [
        ("node(s) didn't find available persistent volumes to bind", 1)
    ]


@pytest.mark.parametrize(
    ("volume", "why"),
    [
        (pv("pv-a", size="512Mi", on="n1"), "too small"),
        (pv("pv-a", cls="other", on="n1"), "another class"),
        (pv("pv-a", on="n1", accessModes=["ReadOnlyMany"]), "other access modes"),
        (pv("pv-a", on="n1", volumeMode="Block"), "another volume mode"),
        (pv("pv-a", on="n1", claimRef={"namespace": "default", "name": "other"}), "bound to another claim"),
        (pv("pv-a", on="n1", phase="Released"), "released"),
    ],
)
def test_a_volume_that_does_not_fit_is_not_bound(volume: dict[str, Any], why: str) -> None:
    s = state([node("n1"), node("n2")], [pvc("data")], [volume], [sc("local")])
    assert not s.fits("default", ["data"], ALL).any(), why


def test_the_claims_selector_picks_among_volumes() -> None:
    claim = pvc("data", selector={"matchLabels": {"tier": "fast"}})
    volumes = [
        pv("pv-slow", on="n1", labels={"tier": "slow"}),
        pv("pv-fast", on="n2", labels={"tier": "fast"}),
    ]
    s = state([node("n1"), node("n2")], [claim], volumes, [sc("local")])
    assert s.fits("default", ["data"], ALL).tolist() == [False, True]


def test_the_smallest_fitting_volume_is_taken_and_a_prebound_one_first() -> None:
    volumes = [pv("pv-big", size="10Gi", on="n1"), pv("pv-small", size="2Gi", on="n1")]
    s = state([node("n1")], [pvc("data")], volumes, [sc("local")])
    assert s.choose("default", ["data"], 0) == (VolumeBinding("default", "data", "uid-data", "pv-small"),)
    volumes.append(pv("pv-mine", size="20Gi", on="n1", claimRef={"namespace": "default", "name": "data"}))
    s = state([node("n1")], [pvc("data")], volumes, [sc("local")])
    assert s.choose("default", ["data"], 0) == (VolumeBinding("default", "data", "uid-data", "pv-mine"),)


def test_two_claims_of_a_pod_never_take_one_volume() -> None:
    claims = [pvc("a"), pvc("b")]
    one = state([node("n1"), node("n2")], claims, [pv("pv-1", on="n1"), pv("pv-2", on="n2")], [sc("local")])
    assert not one.fits("default", ["a", "b"], ALL).any()
    two = state(
        [node("n1"), node("n2")],
        claims,
        [pv("pv-1", on="n1"), pv("pv-2", on="n2"), pv("pv-3", on="n2")],
        [sc("local")],
    )
    assert two.fits("default", ["a", "b"], ALL).tolist() == [False, True]
    got = two.choose("default", ["a", "b"], 1)
    assert got is not None and {b.volume for b in got} == {"pv-2", "pv-3"}


def test_two_pods_of_a_session_never_take_one_volume_and_a_release_gives_it_back() -> None:
    s = state([node("n1"), node("n2")], [pvc("a"), pvc("b")], [pv("pv-1", on="n1")], [sc("local")])
    assert s.take("default/p1", "default", ["a"], 0) == (VolumeBinding("default", "a", "uid-a", "pv-1"),)
    assert s.nodes_of(s.by_task["default/p1"]).tolist() == [0]
    assert not s.fits("default", ["b"], ALL).any()
    with pytest.raises(ValueError):
        s.take("default/p2", "default", ["b"], 0)
    s.release("default/p1")
    assert s.fits("default", ["b"], ALL).tolist() == [True, False]


def test_a_claim_another_pod_of_the_session_took_is_followed_and_held_until_both_let_go() -> None:
    s = state([node("n1"), node("n2")], [pvc("shared")], [pv("pv-1", on="n1")], [sc("local")])
    first = s.take("default/p1", "default", ["shared"], 0)
    assert s.fits("default", ["shared"], ALL).tolist() == [True, False]
    assert s.take("default/p2", "default", ["shared"], 0) == first
    s.release("default/p1")
    assert s.fits("default", ["shared"], ALL).tolist() == [True, False]  # p2 still holds it
    s.release("default/p2")
    assert s.fits("default", ["shared"], ALL).tolist() == [True, False] and not s.claimed and not s.taken
    dyn = state(
        [node("n1"), node("n2")], [pvc("d", cls="dyn")], [], [sc("dyn", provisioner="csi.example.com")]
    )
    dyn.take("default/p1", "default", ["d"], 1)
    assert dyn.fits("default", ["d"], ALL).tolist() == [False, True]  # provisioned on p1's node
    assert dyn.explain("default", ["d"], ALL[:1]) == [
        ("persistentvolumeclaim(s) d bound for another pod elsewhere", 1)
    ]


def test_a_provisioner_provisions_where_its_topologies_allow_and_a_volume_goes_first() -> None:
    cls = sc(
        "zonal",
        provisioner="csi.example.com",
        allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}],
    )
    nodes = [node("n1", zone="a"), node("n2", zone="b")]
    s = state(nodes, [pvc("data", cls="zonal")], [], [cls])
    assert s.fits("default", ["data"], ALL).tolist() == [True, False]
    assert s.choose("default", ["data"], 0) == (VolumeBinding("default", "data", "uid-data", ""),)
    s = state(nodes, [pvc("data", cls="zonal")], [pv("pv-b", cls="zonal", on="n2")], [cls])
    assert s.fits("default", ["data"], ALL).tolist() == [True, True]
    assert s.choose("default", ["data"], 1) == (VolumeBinding("default", "data", "uid-data", "pv-b"),)


def test_a_claim_with_a_selected_node_waits_for_that_node() -> None:
    claim = pvc("data", cls="dyn", annotations={"volume.kubernetes.io/selected-node": "n2"})
    s = state([node("n1"), node("n2")], [claim], [], [sc("dyn", provisioner="csi.example.com")])
    assert s.fits("default", ["data"], ALL).tolist() == [False, True]


def test_bad_objects_are_refused_naming_the_field() -> None:
    with pytest.raises(InputError, match="volumeBindingMode"):
        storage_class({"metadata": {"name": "x"}, "provisioner": "p", "volumeBindingMode": "Later"})
    with pytest.raises(InputError, match="storage"):
        volume_claim(pvc("data", size="lots"))
    cls = storage_class({"metadata": {"name": "x"}})
    assert not cls.wait_for_consumer and not cls.provisions


def test_a_generic_ephemeral_volume_is_the_pods_own_claim_named_after_it() -> None:
    from tests.builders import pod
    from volsched.model.decode import build_task

    def with_scratch(name: str) -> dict[str, Any]:
        p = pod(name, claims=["shared"])
        p["spec"]["volumes"].append({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
        return p

    # Two pods of one template share their parse, not their claims.
    a, b = (build_task(with_scratch(n), priority_classes={}) for n in ("a", "b"))
    assert [(t.claims, t.ephemeral_claims) for t in (a, b)] == [
        (("shared",), ("a-scratch",)),
        (("shared",), ("b-scratch",)),
    ]
