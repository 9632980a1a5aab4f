"""A watch event of a Pod or Node pruned as it is decoded (msgspec, into the pruned shapes, as a listing's
page is): the watch hands over the same type and object as when it decoded the event whole and pruned
the object; an event it does not take (another type, a field of another shape, not JSON) is decoded whole
as before, so an ERROR still says why and a BOOKMARK still moves the resourceVersion on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.test_listing_pruned_as_decoded import NODES, ODD, PODS
from tests.unit.test_prune import full_node, full_pod
from volsched.kube.lister import WATCHED
from volsched.kube.prune import EVENT_DECODERS, PRUNERS, decode_event_pruned
from volsched.kube.watch import Expired, ListWatch

Handed = list[tuple[str, dict[str, Any]]]


def line(type_: str, obj: Any) -> bytes:
    """One watch event as the apiserver writes it (its object with kind and apiVersion)."""
    return json.dumps({"type": type_, "object": obj}).encode()


def watched(kind: str, lines: list[bytes], *, pruned: bool) -> tuple[Handed, ListWatch]:
    """What a watch hands over of ``lines``, decoding them pruned (``pruned``) or whole and pruning."""
    handed: Handed = []
    watch = ListWatch(
        api=None,
        kind=next(k for k in WATCHED if k.kind == kind),
        on_event=lambda type_, obj: handed.append((type_, obj)),
        prune=PRUNERS[kind],
        decode_event=EVENT_DECODERS[kind] if pruned else None,
    )
    watch._follow(lines)
    return handed, watch


CASES = [("Pod", name, obj) for name, obj in PODS.items()] + [
    ("Node", name, obj) for name, obj in NODES.items()
]


@pytest.mark.parametrize("type_", ["ADDED", "MODIFIED", "DELETED"])
@pytest.mark.parametrize(("kind", "name", "obj"), CASES, ids=[f"{k}: {n}" for k, n, _ in CASES])
def test_an_event_pruned_as_decoded_hands_over_what_the_whole_decode_and_prune_did(
    kind: str, name: str, obj: dict[str, Any], type_: str
) -> None:
    data = line(type_, obj)
    assert decode_event_pruned(kind, data) is not None  # taken by the pruned decode
    new, _ = watched(kind, [data], pruned=True)
    old, _ = watched(kind, [data], pruned=False)
    assert new == old and len(new) == 1
    assert new[0][1]["kind"] == kind and "managedFields" not in new[0][1].get("metadata", {})


ODD_CASES = [(kind, name, obj) for name, (kind, obj) in ODD.items()]


@pytest.mark.parametrize(("kind", "name", "obj"), ODD_CASES, ids=[n for _, n, _ in ODD_CASES])
def test_an_event_with_a_field_of_another_shape_is_decoded_whole_as_before(
    kind: str, name: str, obj: dict[str, Any]
) -> None:
    data = line("MODIFIED", obj)
    assert decode_event_pruned(kind, data) is None
    new, _ = watched(kind, [data], pruned=True)
    old, _ = watched(kind, [data], pruned=False)
    assert new == old and len(new) == 1  # the odd field kept as it is: the model refuses it, as before


def test_events_that_are_not_an_object_are_decoded_whole() -> None:
    status = {"kind": "Status", "code": 410, "message": "too old resource version: 1 (42)"}
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "77"}}
    for kind in ("Pod", "Node"):
        assert decode_event_pruned(kind, line("ERROR", status)) is None
        assert decode_event_pruned(kind, line("BOOKMARK", bookmark)) is None
        assert decode_event_pruned(kind, b'{"type": "ADDED", "object": ') is None  # not JSON
        assert decode_event_pruned(kind, b'{"type": "ADDED"}') is None  # no object
        handed, watch = watched(kind, [line("BOOKMARK", bookmark)], pruned=True)
        assert handed == [] and watch.resource_version == "77"
        with pytest.raises(Expired, match="too old resource version"):
            watched(kind, [line("ERROR", status)], pruned=True)


def test_a_stream_of_events_is_handed_over_alike_and_in_order() -> None:
    pods = [full_pod(), full_pod(node=None), ODD["spec null"][1]]
    pods = [
        {**p, "metadata": {**p["metadata"], "name": f"p{i}", "resourceVersion": str(10 + i)}}
        for i, p in enumerate(pods)
    ]
    lines = [
        line("ADDED", pods[1]),
        line("MODIFIED", pods[0]),
        line("ADDED", pods[2]),
        line("DELETED", pods[1]),
    ]
    new, watch = watched("Pod", lines, pruned=True)
    old, _ = watched("Pod", lines, pruned=False)
    assert new == old and [t for t, _ in new] == ["ADDED", "MODIFIED", "ADDED", "DELETED"]
    assert watch.resource_version == "11"  # the last event's
    nodes = [full_node(), {**full_node(), "metadata": {"name": "n2", "resourceVersion": "3"}}]
    new, _ = watched("Node", [line("MODIFIED", n) for n in nodes], pruned=True)
    old, _ = watched("Node", [line("MODIFIED", n) for n in nodes], pruned=False)
    assert new == old and len(new) == 2


def test_the_line_hook_is_called_as_each_line_arrives_before_it_is_decoded() -> None:
    """``on_line`` (the latency log's stamp of when a pod's event was read) comes before each line's
    decode and hand-over, once a line, whichever way the line is decoded."""
    order: list[str] = []

    def decode(data: bytes) -> dict[str, Any] | None:
        order.append("decoded")
        return EVENT_DECODERS["Pod"](data)

    watch = ListWatch(
        api=None,
        kind=next(k for k in WATCHED if k.kind == "Pod"),
        on_event=lambda type_, obj: order.append(f"{type_} {obj['metadata']['name']}"),
        prune=PRUNERS["Pod"],
        decode_event=decode,
        on_line=lambda: order.append("line"),
    )
    watch._follow([line("ADDED", full_pod()), line("MODIFIED", ODD["spec null"][1])])
    name = full_pod()["metadata"]["name"]
    assert order == ["line", "decoded", f"ADDED {name}", "line", "decoded", f"MODIFIED {name}"]
