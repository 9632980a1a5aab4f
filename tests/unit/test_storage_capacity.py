"""Storage capacity tracking in volume binding, as kube-scheduler's VolumeBinding checks it: an unbound claim
to provision, of a class whose CSI driver says ``storageCapacity: true``, needs a CSIStorageCapacity of the
class for the node (``nodeTopology``) whose ``maximumVolumeSize`` (else ``capacity``) holds its request."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tests.unit.test_volume_binding import node, pv, pvc, sc
from volsched.model.decode import (
    csi_driver_tracks_capacity,
    persistent_volume,
    storage_capacity,
    storage_class,
    volume_claim,
)
from volsched.model.errors import InputError
from volsched.model.vocabulary import NodeSpec
from volsched.model.volumes import VolumeCatalog, VolumeState

DRIVER = "csi.example.com"
NODES = [node("n1", zone="a"), node("n2", zone="a"), node("n3", zone="b")]
ALL = np.arange(3, dtype=np.intp)


def capacity(
    name: str,
    *,
    cls: str = "dyn",
    capacity: str | None = None,
    maximum: str | None = None,
    topology: dict[str, Any] | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": cls,
    }
    if capacity is not None:
        obj["capacity"] = capacity
    if maximum is not None:
        obj["maximumVolumeSize"] = maximum
    if topology is not None:
        obj["nodeTopology"] = topology
    return obj


def zone(z: str) -> dict[str, Any]:
    return {"matchLabels": {"zone": z}}


def state(
    claims: list[Any],
    capacities: list[Any],
    *,
    tracked: bool = True,
    volumes: list[Any] = (),  # type: ignore[assignment]
    nodes: list[NodeSpec] = NODES,
) -> VolumeState:
    catalog = VolumeCatalog(
        claims={c.key: c for c in map(volume_claim, claims)},
        volumes={v.name: v for v in map(persistent_volume, volumes)},
        classes={"dyn": storage_class(sc("dyn", provisioner=DRIVER))},
        capacities={c.key: c for c in map(storage_capacity, capacities)},
        tracked=frozenset({DRIVER}) if tracked else frozenset(),
    )
    return VolumeState(catalog, nodes=nodes)


def test_a_claim_goes_where_a_capacity_of_its_class_holds_its_request() -> None:
    caps = [
        capacity("a", capacity="5Gi", topology=zone("a")),
        capacity("b", capacity="20Gi", topology=zone("b")),
    ]
    s = state([pvc("data", "10Gi", cls="dyn")], caps)
    assert s.fits("default", ["data"], ALL).tolist() == [False, False, True]
    assert s.explain("default", ["data"], ALL[:2]) == [
        (
            "node(s) did not have enough free storage (data asks 10Gi of class dyn, the most any can make"
            " there 5Gi)",
            2,
        )
    ]
    s = state([pvc("small", "5Gi", cls="dyn")], caps)  # exactly the capacity: it fits
    assert s.fits("default", ["small"], ALL).tolist() == [True, True, True]


def test_the_maximum_volume_size_counts_before_the_capacity() -> None:
    caps = [capacity("a", capacity="100Gi", maximum="4Gi", topology=zone("a"))]
    s = state([pvc("data", "10Gi", cls="dyn")], caps)
    assert s.fits("default", ["data"], ALL).tolist() == [False, False, False]
    caps = [capacity("a", maximum="40Gi", topology=zone("a"))]  # (no capacity: the maximum says it)
    assert state([pvc("data", "10Gi", cls="dyn")], caps).fits("default", ["data"], ALL).tolist() == [
        True,
        True,
        False,
    ]


@pytest.mark.parametrize(
    ("cap", "fits"),
    [
        (capacity("x", capacity="50Gi"), [False, False, False]),  # no nodeTopology: no node
        (capacity("x", capacity="50Gi", topology={}), [True, True, True]),  # an empty one: every node
        (capacity("x", topology=zone("a")), [False, False, False]),  # no size: no room
        (capacity("x", cls="other", capacity="50Gi", topology={}), [False, False, False]),  # another class
        (
            capacity("x", capacity="50Gi", topology={"matchLabels": {"kubernetes.io/hostname": "n2"}}),
            [False, True, False],
        ),
        (
            capacity(
                "x",
                capacity="50Gi",
                topology={"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]},
            ),
            [False, False, True],
        ),
    ],
)
def test_which_nodes_a_capacity_is_for(cap: dict[str, Any], fits: list[bool]) -> None:
    assert state([pvc("data", "10Gi", cls="dyn")], [cap]).fits("default", ["data"], ALL).tolist() == fits


def test_no_capacity_check_without_the_drivers_say_so_or_a_request_or_for_a_volume_that_exists() -> None:
    claim = pvc("data", "10Gi", cls="dyn")
    assert state([claim], [], tracked=False).fits("default", ["data"], ALL).all()
    no_size = pvc("data", cls="dyn")
    del no_size["spec"]["resources"]
    assert state([no_size], []).fits("default", ["data"], ALL).all()
    existing = pv("pv-1", "10Gi", cls="dyn", on="n1")
    assert state([claim], [], volumes=[existing]).fits("default", ["data"], ALL).tolist() == [
        True,
        False,
        False,
    ]


def test_a_claim_asking_explicitly_for_nothing_still_needs_a_capacity_for_its_node() -> None:
    """As kube-scheduler checks it: a claim with no storage request is not checked, but one asking ``0``
    is, and any capacity of its class with a size (even 0) for the node holds it; none: it waits."""
    zero = pvc("data", "0", cls="dyn")
    assert state([zero], []).fits("default", ["data"], ALL).tolist() == [False, False, False]
    caps = [capacity("a", capacity="0", topology=zone("a")), capacity("b", topology=zone("b"))]
    assert state([zero], caps).fits("default", ["data"], ALL).tolist() == [True, True, False]
    assert state([zero], caps).explain("default", ["data"], ALL[2:]) == [
        (
            "node(s) did not have enough free storage (data asks 0 of class dyn, the most any can make"
            " there none)",
            1,
        )
    ]
    no_size = pvc("data", cls="dyn")
    del no_size["spec"]["resources"]["requests"]
    assert state([no_size], []).fits("default", ["data"], ALL).all()


def test_two_claims_each_need_their_own_room_and_the_reason_names_the_short_one() -> None:
    caps = [
        capacity("a", capacity="8Gi", topology=zone("a")),
        capacity("b", capacity="3Gi", topology=zone("b")),
    ]
    s = state([pvc("big", "6Gi", cls="dyn"), pvc("small", "2Gi", cls="dyn")], caps)
    assert s.fits("default", ["big", "small"], ALL).tolist() == [True, True, False]
    assert s.explain("default", ["big", "small"], ALL[2:]) == [
        (
            "node(s) did not have enough free storage (big asks 6Gi of class dyn, the most any can make"
            " there 3Gi)",
            1,
        )
    ]


def test_objects_are_read_and_bad_ones_refused_naming_the_field() -> None:
    got = storage_capacity(capacity("x", capacity="1Gi", maximum="512Mi", topology=zone("a")))
    assert (got.key, got.storage_class, got.limit) == ("kube-system/x", "dyn", 512 * 2**20)
    assert got.topology is not None and got.topology.matches({"zone": "a"})
    assert storage_capacity(capacity("x")).limit is None
    assert csi_driver_tracks_capacity({"metadata": {"name": "d"}, "spec": {"storageCapacity": True}}) == (
        "d",
        True,
    )
    assert csi_driver_tracks_capacity({"metadata": {"name": "d"}, "spec": {}}) == ("d", False)
    with pytest.raises(InputError, match="storageClassName"):
        storage_capacity({"metadata": {"name": "x", "namespace": "n"}})
    with pytest.raises(InputError, match="CSIStorageCapacity n/x: capacity"):
        storage_capacity(
            {"metadata": {"name": "x", "namespace": "n"}, "storageClassName": "c", "capacity": "lots"}
        )
    with pytest.raises(InputError, match=r"spec\.storageCapacity"):
        csi_driver_tracks_capacity({"metadata": {"name": "d"}, "spec": {"storageCapacity": "yes"}})


def test_the_nodes_a_capacity_is_for_are_kept_with_the_node_table_from_session_to_session() -> None:
    """Which nodes each capacity's topology covers follows from the nodes' labels alone: worked out once
    for the node table (its memo), not once a session, and the answers stay right."""
    memo: dict[str, Any] = {}
    caps = [
        capacity("a", capacity="5Gi", topology=zone("a")),
        capacity("b", capacity="20Gi", topology=zone("b")),
    ]
    for size, fits in (("10Gi", [False, False, True]), ("4Gi", [True, True, True])):
        s = state([pvc("data", size, cls="dyn")], caps)
        s = VolumeState(s.catalog, nodes=NODES, memo=memo)
        assert s.fits("default", ["data"], ALL).tolist() == fits
    kept = [v for k, v in memo.items() if "capacity" in k]
    assert kept and len(kept[0]) == 2  # one entry per topology, kept


def test_a_class_s_room_per_node_is_kept_while_the_capacities_are_the_same_and_redone_once_they_change() -> (
    None
):
    """The largest volume each node can get of a class is worked out once for a set of capacities (the
    cache hands the same mapping while none changed) and kept with the node table; a new mapping (one
    capacity changed) is read anew, and the answers follow it."""
    memo: dict[str, Any] = {}
    caps = [
        capacity("a", capacity="5Gi", topology=zone("a")),
        capacity("b", capacity="20Gi", topology=zone("b")),
        capacity("c", capacity="8Gi", topology={"matchLabels": {"kubernetes.io/hostname": "n2"}}),
    ]
    base = state([pvc("data", "6Gi", cls="dyn")], caps).catalog
    for _ in range(2):
        s = VolumeState(base, nodes=NODES, memo=memo)
        assert s.fits("default", ["data"], ALL).tolist() == [False, True, True]
        assert s.most_room("dyn", ALL[:1]) == 5 * 2**30
        assert s.most_room("dyn", ALL[:2]) == 8 * 2**30
    [kept] = [v for k, v in memo.items() if "most room" in k]
    assert kept[0] is base.capacities
    changed = dict(base.capacities)
    changed["kube-system/c"] = storage_capacity(capacity("c", capacity="1Gi", topology=zone("b")))
    s = VolumeState(replace(base, capacities=changed), nodes=NODES, memo=memo)
    assert s.fits("default", ["data"], ALL).tolist() == [False, False, True]
    assert s.most_room("dyn", ALL[:2]) == 5 * 2**30
    assert s.most_room("other", ALL) is None


def test_the_most_room_per_node_is_each_node_s_largest_capacity_whatever_the_topologies() -> None:
    """The largest volume a class's capacities can make on each node, as one per capacity and node would
    find it (each capacity's topology matched against each node's labels), over topologies of one label
    pair (the label index's nodes), several values, several requirements, none with a pair to index by,
    an empty one (every node); capacities of another class, of no size or no topology. Twice: from
    the node table's memo the second time."""
    nodes = [
        node(f"n{i}", zone="abc"[i % 3], rack=f"r{i % 4}", **({"gpu": "yes"} if i % 5 == 0 else {}))
        for i in range(12)
    ]
    topologies: list[dict[str, Any] | None] = [
        {"matchLabels": {"kubernetes.io/hostname": "n1"}},
        {"matchLabels": {"kubernetes.io/hostname": "n1"}},  # (the same topology again, larger)
        {"matchLabels": {"kubernetes.io/hostname": "n7"}},
        {"matchLabels": {"kubernetes.io/hostname": "gone"}},  # no such node
        zone("b"),
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r0", "r3"]}]},
        {
            "matchLabels": {"zone": "c"},
            "matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r1"]}],
        },
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a", "b"]}]},
        {},
        None,
    ]
    sizes = [5, 9, 4, 30, 6, 8, 7, 10, 3, 1, 50]  # Gi, each topology's (the empty one's the least)
    caps = [
        capacity(f"c{i}", capacity=f"{size}Gi", topology=t)
        for i, (size, t) in enumerate(zip(sizes, topologies, strict=True))
    ]
    caps += [
        capacity("other", cls="other", capacity="99Gi", topology=zone("a")),
        capacity("sizeless", topology=zone("a")),
    ]
    catalog = state([pvc("data", "1Gi", cls="dyn")], caps, nodes=nodes).catalog
    expected = []
    for n in nodes:
        sizes = [
            c.limit
            for c in catalog.capacities.values()
            if c.storage_class == "dyn" and c.limit is not None and c.topology is not None
            and c.topology.matches(n.labels)
        ]  # fmt: skip
        expected.append(max(sizes) if sizes else None)
    assert len(set(expected)) > 4  # (the case is not trivial)
    memo: dict[str, Any] = {}
    for _ in range(2):
        s = VolumeState(catalog, nodes=nodes, memo=memo)
        assert [s.most_room("dyn", np.array([i], dtype=np.intp)) for i in range(len(nodes))] == expected
        memo.pop("volumes: most room per class and node")  # worked out again, from the memo's covers
