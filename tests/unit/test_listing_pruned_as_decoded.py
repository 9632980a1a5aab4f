"""A listing's pages of Pods and Nodes pruned as they are decoded (msgspec, into the pruned shapes): each
item is the dict :func:`prune_pod` or :func:`prune_node` makes of the whole decoded item, whatever it
carries; a page with a field of a shape the types do not take is left to the whole decode and prune, which
keeps that field as it is (the model then refuses the object, as before); and a listing read the new way
fills the same cache as the old way."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.test_prune import _differences, full_node, full_pod
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.kube.lister import WATCHED
from volsched.kube.prune import LAST_APPLIED, PAGE_DECODERS, PRUNERS, decode_pruned
from volsched.kube.rest import loads
from volsched.kube.watch import ListWatch


def page(*items: dict[str, Any], meta: dict[str, Any] | None = None) -> bytes:
    """A listing's page as the apiserver writes it (its items without kind and apiVersion)."""
    stripped = [{k: v for k, v in item.items() if k not in ("kind", "apiVersion")} for item in items]
    return json.dumps(
        {"kind": "List", "metadata": meta or {"resourceVersion": "9"}, "items": stripped}
    ).encode()


def edit(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """``obj`` with the value at ``path`` set (a deep copy); a value of :data:`GONE` removes the key."""
    out = copy.deepcopy(obj)
    target = out
    for key in path[:-1]:
        target = target.setdefault(key, {})
    if value is GONE:
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value
    return out


GONE = object()

#: Pods that each take a rule of the pruning: name -> the pod.
PODS: dict[str, dict[str, Any]] = {
    "full": full_pod(),
    "pending": full_pod(node=None),
    "bare": {"metadata": {"name": "p", "namespace": "ns"}},
    "no status": edit(full_pod(), ("status",), GONE),
    "only the last-applied annotation": edit(full_pod(), ("metadata", "annotations"), {LAST_APPLIED: "{}"}),
    "annotations of a string": edit(full_pod(), ("metadata", "annotations"), "odd"),
    "no kept volume": edit(full_pod(), ("spec", "volumes"), [{"name": "cm", "configMap": {"name": "x"}}]),
    "volumes of every kind": edit(
        full_pod(),
        ("spec", "volumes"),
        [
            {"name": "a", "persistentVolumeClaim": None},
            {"name": "b", "emptyDir": None},
            {"name": "c", "hostPath": {"path": "/x", "type": ""}},
            {"name": "d", "emptyDir": {"medium": "Memory"}, "hostPath": {"path": "/y"}},
            {"name": "e", "projected": {"sources": []}},
            {"name": "f", "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "local"}}}},
            {"persistentVolumeClaim": {"claimName": "unnamed"}},
            {"name": "g", "awsElasticBlockStore": {"volumeID": "aws://z/vol-1", "fsType": "ext4"}},
            {"name": "h", "gcePersistentDisk": {"pdName": "pd", "partition": 1}},
            {"name": "i", "azureDisk": {"diskName": "d", "diskURI": "/s/d", "cachingMode": "None"}},
            {"name": "j", "cinder": {"volumeID": "c", "readOnly": True}},
            {"name": "k", "portworxVolume": {"volumeID": "px", "fsType": "ext4"}},
            {"name": "l", "awsElasticBlockStore": None},
            {"name": "m", "cinder": "odd"},
        ],
    ),
    "an empty volume list": edit(full_pod(), ("spec", "volumes"), []),
    "no Ready condition": edit(
        full_pod(), ("status", "conditions"), [{"type": "PodScheduled", "status": "True"}]
    ),
    "two Ready conditions": edit(
        full_pod(),
        ("status", "conditions"),
        [{"type": "Ready", "status": "False", "x": 1}, {"type": "Ready", "status": "True"}],
    ),
    "no conditions": edit(full_pod(), ("status", "conditions"), []),
    "a running and a waiting container": edit(
        full_pod(),
        ("status", "containerStatuses"),
        [
            {"name": "a", "restartCount": 0, "state": {"running": {"startedAt": "2026-11-29T10:00:00Z"}}},
            {
                "name": "b",
                "restartCount": 2,
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": "m"}},
            },
            {"name": "c", "ready": True},
        ],
    ),
    "being resized": edit(
        full_pod(),
        ("status", "containerStatuses"),
        [
            {
                "name": "main",
                "allocatedResources": {"cpu": "2", "memory": "256Mi"},
                "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"cpu": "3"}},
            }
        ],
    ),
    "resized as the spec asks": edit(
        full_pod(),
        ("status", "containerStatuses"),
        [{"name": "main", "allocatedResources": {"cpu": "500m", "memory": "256Mi"}, "resources": {}}],
    ),
    "a resize infeasible": edit(
        edit(
            full_pod(),
            ("status", "conditions"),
            [{"type": "PodResizePending", "status": "True", "reason": "Infeasible", "message": "no"}],
        ),
        ("status", "containerStatuses"),
        [{"name": "main", "allocatedResources": {"cpu": "500m", "memory": "256Mi"}}],
    ),
    "marked as a disruption target": edit(
        full_pod(),
        ("status", "conditions"),
        [
            {"type": "Ready", "status": "False"},
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "message": "m"},
        ],
    ),
    "fields volsched does not read": edit(full_pod(), ("spec", "dnsPolicy"), "ClusterFirst"),
    "numbers of every size": edit(full_pod(), ("spec", "overhead"), {"a": 2**62, "b": 2**70, "c": -0.5e-300}),
    "unicode and escapes": edit(full_pod(), ("metadata", "labels"), {"é": '\u2028"\\', "k": ""}),
}
NODES: dict[str, dict[str, Any]] = {
    "full": full_node(),
    "bare": {"metadata": {"name": "n"}},
    "no conditions": edit(full_node(), ("status", "conditions"), []),
    "ready twice": edit(full_node(), ("status", "conditions"), [{"type": "Ready", "status": "True"}] * 2),
    "no spec": edit(full_node(), ("spec",), GONE),
}
#: Fields of a shape the types do not take: the page is decoded whole and pruned, as before.
ODD: dict[str, tuple[str, dict[str, Any]]] = {
    "spec null": ("Pod", edit(full_pod(), ("spec",), None)),
    "spec a string": ("Pod", edit(full_pod(), ("spec",), "not a map")),
    "containers a string": ("Pod", edit(full_pod(), ("spec", "containers"), "not a list")),
    "a container a string": ("Pod", edit(full_pod(), ("spec", "containers"), ["c"])),
    "a volume a string": ("Pod", edit(full_pod(), ("spec", "volumes"), ["v"])),
    "volumes null": ("Pod", edit(full_pod(), ("spec", "volumes"), None)),
    "status a list": ("Pod", edit(full_pod(), ("status",), [])),
    "a condition a string": ("Pod", edit(full_pod(), ("status", "conditions"), ["Ready"])),
    "a container's state a string": (
        "Pod",
        edit(full_pod(), ("status", "containerStatuses"), [{"name": "a", "state": "running"}]),
    ),
    "a waiting state a string": (
        "Pod",
        edit(full_pod(), ("status", "containerStatuses"), [{"name": "a", "state": {"waiting": "x"}}]),
    ),
    "metadata null": ("Pod", edit(full_pod(), ("metadata",), None)),
    "a node's status null": ("Node", edit(full_node(), ("status",), None)),
    "a node's condition null": ("Node", edit(full_node(), ("status", "conditions"), [None])),
    "an infinity (not JSON: json's decode takes it)": (
        "Pod",
        edit(full_pod(), ("spec", "overhead"), {"cpu": float("inf")}),
    ),
}


def whole(kind: str, data: bytes) -> list[dict[str, Any]]:
    """The page decoded whole and each item pruned: the way without :func:`decode_pruned`."""
    return [PRUNERS[kind](item) for item in loads(data)["items"]]


@pytest.mark.parametrize(
    ("kind", "obj"),
    [("Pod", p) for p in PODS.values()] + [("Node", n) for n in NODES.values()],
    ids=[f"pod: {k}" for k in PODS] + [f"node: {k}" for k in NODES],
)
def test_an_item_pruned_as_decoded_is_what_pruning_the_whole_item_gives(
    kind: str, obj: dict[str, Any]
) -> None:
    data = page(obj, obj)
    decoded = decode_pruned(kind, data)
    assert decoded is not None
    assert decoded["items"] == whole(kind, data)
    assert decoded["metadata"] == {"resourceVersion": "9"}


def test_the_listing_metadata_is_read_whole() -> None:
    meta = {"resourceVersion": "12", "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", "remainingItemCount": 3}
    decoded = decode_pruned("Pod", page(full_pod(), meta=meta))
    assert decoded is not None and decoded["metadata"] == meta


@pytest.mark.parametrize(("kind", "obj"), list(ODD.values()), ids=list(ODD))
def test_a_page_with_a_field_of_another_shape_is_left_to_the_whole_decode(
    kind: str, obj: dict[str, Any]
) -> None:
    assert decode_pruned(kind, page(full_pod() if kind == "Pod" else full_node(), obj)) is None
    assert decode_pruned(kind, b'{"items": [') is None  # not JSON at all: the whole decode says why


class _Early:
    """Pages by continue token, as an early listing hands them over."""

    def __init__(self, pages: dict[str, bytes]) -> None:
        self.pages = dict(pages)

    def page(self, token: str) -> bytes | None:
        return self.pages.pop(token, None)

    at_hand = page  # every page here already

    def drop(self) -> None:
        self.pages.clear()


def listed(kind: str, pages: dict[str, bytes], decode: Callable[[bytes], Any] | None) -> ClusterState:
    """The cache a listing of ``pages`` fills, pruned as decoded (``decode``) or as before (None)."""
    state = ClusterState()
    feeder = Feeder(state)
    watched = next(k for k in WATCHED if k.kind == kind)
    watch = ListWatch(
        api=None,
        kind=watched,
        on_event=lambda _type, obj: feeder.apply(kind, obj),
        prune=PRUNERS[kind],
        early=_Early(pages),  # type: ignore[arg-type]
        decode_page=decode,
    )
    watch.relist()
    return state


def test_a_listing_read_the_new_way_fills_the_same_cache_as_the_old_way() -> None:
    pods = [edit(p, ("metadata", "name"), f"p{i}") for i, p in enumerate(PODS.values())]
    pods = [edit(p, ("metadata", "uid"), f"u{i}") for i, p in enumerate(pods)]
    odd = edit(edit(ODD["spec a string"][1], ("metadata", "name"), "odd"), ("metadata", "uid"), "u-odd")
    pages = {  # three pages; the last has an odd pod: decoded whole, the pod refused as before
        "": page(*pods[:6], meta={"resourceVersion": "9", "continue": "a"}),
        "a": page(*pods[6:], meta={"resourceVersion": "9", "continue": "b"}),
        "b": page(odd, meta={"resourceVersion": "9"}),
    }
    old, new = listed("Pod", pages, None), listed("Pod", pages, PAGE_DECODERS["Pod"])
    assert new.raw_pods == old.raw_pods and len(new.raw_pods) >= 10  # a few odd ones refused alike
    assert new.tasks.keys() == old.tasks.keys()
    assert [_differences(new.tasks[k], old.tasks[k]) for k in new.tasks] == [[]] * len(new.tasks)
    nodes = [edit(n, ("metadata", "name"), f"n{i}") for i, n in enumerate(NODES.values())]
    pages = {"": page(*nodes)}
    old, new = listed("Node", pages, None), listed("Node", pages, PAGE_DECODERS["Node"])
    assert new.nodes == old.nodes and len(new.nodes) >= 4
