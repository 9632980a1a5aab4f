"""What of a Pod or a Node the scheduler keeps: the fields the model and the writer read, nothing else.

The cache holds every pod raw (its priority depends on PriorityClasses that may come later), so what a
pod carries besides (``managedFields``, environment variables, probes, volume mounts, the kubelet's
conditions and container statuses...) is memory held for nothing; at 10,000 pods it was most of the
operator's resident set. Pruned here, as objects arrive from the API:

* metadata: name, namespace, uid, resourceVersion, creation and deletion timestamps, labels, annotations
  (without ``kubectl.kubernetes.io/last-applied-configuration``, a copy of the whole object), owners,
  finalizers (with the grace period: whether an eviction deletes the pod at once, for the writer);
* a pod's spec: what placement, requests (its pod-level ``resources`` too), priority and ports are
  read from (:func:`volsched.model.decode.build_task`), its containers reduced to name, image,
  resources, ports and restartPolicy, its volumes to the PersistentVolumeClaims, the node-local
  ones (``emptyDir``, ``hostPath``: which, not what they hold) and the inline ones of in-tree plugins
  migrated to CSI (``awsElasticBlockStore``...: the field naming the volume, which attach limits count);
* a pod's status: phase, reason, startTime, and per container (ephemeral ones too) its restartCount,
  the reason it waits or terminated and its exit code (:func:`volsched.model.decode.pod_runtime`), and
  when it terminated (what the cache learns run times from); while it is resized in place, what the
  kubelet allocated each container and the requests it runs with where they differ from its spec's,
  and the ``PodResizePending`` condition (:func:`volsched.model.decode.resized_request`); the
  ``DisruptionTarget`` condition's status and reason (``KubeWriter.withdraw_stale``);
* a node: labels, annotations, taints, unschedulable, allocatable/capacity, the Ready condition and the
  addresses (:func:`volsched.model.decode.build_node`).

A field of an unexpected shape is kept as it is, so the model still reports it as malformed. No I/O.

A listing's page is pruned as it is decoded (:func:`decode_pruned`): msgspec decodes it into the
shapes above (``TypedDict`` types made from the same key lists), skipping every other field without
building it, then the few rules no type says (the last-applied annotation, the volumes kept, the Ready
condition) are applied: the same dicts as :func:`prune_pod` and :func:`prune_node` give, at about a
third of the CPU of decoding the page whole and pruning it. A page with a field of an unexpected shape
(a ``null`` or a string where a map is expected) is not decoded so: its caller decodes and prunes it
whole, as before. A watch event of a Pod or Node is decoded the same way (:func:`decode_event_pruned`):
an arriving pod's event, with its ``managedFields``, is on the pod's way to its session.

The pods of one template listed at start (a Job's, a ReplicaSet's: thousands of pods, one spec) share their
spec: a listed pod's spec is kept as its JSON while the page decodes, and a spec the same to the byte as
one listed before is one read-only :class:`~volsched.model.raw.FrozenMap`, decoded once, whose parse the
model keeps with it. Where the pods' specs differ (a token volume named at random in each pod), the pages
go back to the one-pass decode (:class:`_SpecSharing`).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import msgspec

from volsched.model.migration import IN_TREE_MIGRATED
from volsched.model.raw import FrozenMap, RawDict, freeze, over

#: What a mapping is: a dict first (what JSON decodes to: a cheap check), then any Mapping (the ABC's
#: check costs about ten times a dict's, and a pod takes a dozen of them).
_MAP = (dict, Mapping)

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

META_KEYS = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
)
POD_SPEC_KEYS = (
    "containers",
    "initContainers",
    "overhead",
    "resources",
    "nodeSelector",
    "affinity",
    "tolerations",
    "priority",
    "priorityClassName",
    "schedulerName",
    "preemptionPolicy",
    "activeDeadlineSeconds",
    "nodeName",
    "volumes",
    "topologySpreadConstraints",
    "schedulingGates",
    "hostNetwork",
    "runtimeClassName",
    "resourceClaims",
    "schedulingGroup",
    "terminationGracePeriodSeconds",
)
CONTAINER_KEYS = ("name", "image", "resources", "ports", "restartPolicy")
POD_STATUS_KEYS = ("phase", "reason", "startTime", "nominatedNodeName", "resourceClaimStatuses", "qosClass")
CONTAINER_STATUS_KEYS = ("name", "restartCount", "allocatedResources", "resources")
NODE_SPEC_KEYS = ("taints", "unschedulable")
NODE_STATUS_KEYS = ("allocatable", "capacity", "addresses")


def _pick(obj: Mapping[str, Any], keys: tuple[str, ...]) -> RawDict:
    return {k: obj[k] for k in keys if k in obj}


def _metadata(meta: Any) -> Any:
    if not isinstance(meta, _MAP):
        return meta
    out = _pick(meta, META_KEYS)
    annotations = out.get("annotations")
    if annotations is not None and isinstance(annotations, _MAP) and LAST_APPLIED in annotations:
        out["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return out


def _containers(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    return [_pick(c, CONTAINER_KEYS) if isinstance(c, _MAP) else c for c in value]


def _container_statuses(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    out = []
    for cs in value:
        if not isinstance(cs, _MAP):
            out.append(cs)
            continue
        kept = _pick(cs, CONTAINER_STATUS_KEYS)
        resources = kept.get("resources")
        if isinstance(resources, _MAP):
            kept["resources"] = _pick(resources, ("requests",))
        state = cs.get("state")
        if isinstance(state, _MAP):
            kept["state"] = {
                k: _pick(d, _TERMINATED if k == "terminated" else _WAITING) if isinstance(d, _MAP) else {}
                for k, d in state.items()
                if k in ("waiting", "terminated")
            }
        elif state is not None:
            kept["state"] = state
        out.append(kept)
    return out


#: What a container's state keeps: why it waits; why and when it terminated (a pod seen to succeed
#: tells how long its namespace and queue's pods run, :mod:`volsched.model.history`).
_WAITING = ("reason", "exitCode")
_TERMINATED = ("reason", "exitCode", "finishedAt")


#: The inline volumes of in-tree plugins migrated to CSI (attach limits count them as their driver's), each
#: kept with the field naming its volume alone.
_IN_TREE = {source: field_name for source, (_, _, field_name) in IN_TREE_MIGRATED.items()}
#: The volumes kept: claims (placement reads them; a generic ephemeral volume's claim is named after the
#: pod and the volume), node-local storage (rescheduling's evictor does), in-tree ones (attach limits).
_KEPT_VOLUMES = frozenset({"persistentVolumeClaim", "ephemeral", "emptyDir", "hostPath", *_IN_TREE})


def _volume(v: Mapping[str, Any]) -> RawDict:
    out = _pick(v, ("name", "persistentVolumeClaim"))
    for local in ("ephemeral", "emptyDir", "hostPath"):
        if v.get(local) is not None:
            out[local] = {}
    for source, field_name in _IN_TREE.items():
        section = v.get(source)
        if section is not None:
            out[source] = _pick(section, (field_name,)) if isinstance(section, _MAP) else section
    return out


def _ready_condition(conditions: Any) -> RawDict | None:
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, _MAP) and c.get("type") == "Ready":
            return _pick(c, ("type", "status"))
    return None


def _kept_conditions(conditions: Any) -> list[Any] | None:
    """The conditions kept: Ready (whether a Running pod is healthy, as PodDisruptionBudgets count it),
    the kubelet's ``PodResizePending`` (its reason: a resize ``Infeasible`` counts no more) and
    ``DisruptionTarget`` (its status and reason: one a scheduler wrote for an eviction that did not happen
    is set back, ``KubeWriter.withdraw_stale``)."""
    ready = resize = target = None
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, _MAP):
            kind = c.get("type")
            if kind == "Ready" and ready is None:
                ready = _pick(c, ("type", "status"))
            elif kind == "PodResizePending" and resize is None:
                resize = _pick(c, ("type", "reason"))
            elif kind == "DisruptionTarget" and target is None:
                target = _pick(c, ("type", "status", "reason"))
    if resize is None and target is None:
        return None if ready is None else [ready]
    return [c for c in (ready, resize, target) if c is not None]


def _reports_resources(statuses: Any) -> bool:
    """Whether any of a pod's container ``statuses`` says what the kubelet allocated or runs it with."""
    for cs in statuses if type(statuses) is list else ():
        if type(cs) is dict and ("allocatedResources" in cs or "resources" in cs):
            return True
    return False


def _unresized(status: Any, spec: Any) -> None:
    """Drops from ``status`` each container's ``allocatedResources`` and ``resources.requests`` that are
    its spec's requests (the apiserver writes both in one canonical form), as they are but while a pod is
    resized in place; all are kept while the resize is ``Infeasible`` (then a container's spec no longer
    counts). A status or spec of an unexpected shape is left as it is."""
    if type(status) is not dict or not (
        _reports_resources(status.get("containerStatuses"))
        or _reports_resources(status.get("initContainerStatuses"))
    ):
        return  # (a kubelet reports them for every running pod: pruned here, they cost nothing after)
    if not isinstance(spec, _MAP):
        return
    for c in status.get("conditions") or ():
        if isinstance(c, _MAP) and c.get("type") == "PodResizePending" and c.get("reason") == "Infeasible":
            return
    for key, spec_key in (("containerStatuses", "containers"), ("initContainerStatuses", "initContainers")):
        statuses, containers = status.get(key), spec.get(spec_key)
        if not isinstance(statuses, list) or not isinstance(containers, list):
            continue
        for i, cs in enumerate(statuses):
            if type(cs) is not dict or ("allocatedResources" not in cs and "resources" not in cs):
                continue
            c = containers[i] if i < len(containers) else None
            if not isinstance(c, _MAP) or c.get("name") != cs.get("name"):
                continue
            res = c.get("resources")
            want = res.get("requests") if isinstance(res, _MAP) else None
            if cs.get("allocatedResources") == want:
                cs.pop("allocatedResources", None)
            actual = cs.get("resources")
            if isinstance(actual, _MAP) and actual.get("requests") == want:
                del cs["resources"]


def prune_pod(pod: RawDict) -> RawDict:
    """``pod`` with only what the scheduler reads (a new dict; ``pod`` is left as it is)."""
    out: RawDict = {k: pod[k] for k in ("kind", "apiVersion") if k in pod}
    if "metadata" in pod:
        out["metadata"] = _metadata(pod["metadata"])
    spec = pod.get("spec")
    if isinstance(spec, _MAP):
        s = _pick(spec, POD_SPEC_KEYS)
        for key in ("containers", "initContainers"):
            if key in s:
                s[key] = _containers(s[key])
        volumes = s.get("volumes")
        if isinstance(volumes, list):
            s["volumes"] = [_volume(v) for v in volumes if isinstance(v, _MAP) and _KEPT_VOLUMES & v.keys()]
            if not s["volumes"]:
                del s["volumes"]
        out["spec"] = s
    elif spec is not None:
        out["spec"] = spec
    status = pod.get("status")
    if isinstance(status, _MAP):
        st = _pick(status, POD_STATUS_KEYS)
        for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
            if key in status:
                st[key] = _container_statuses(status[key])
        conditions = _kept_conditions(status.get("conditions"))
        if conditions is not None:
            st["conditions"] = conditions
        _unresized(st, out.get("spec"))
        out["status"] = st
    elif status is not None:
        out["status"] = status
    return out


def prune_node(node: RawDict) -> RawDict:
    """``node`` with only what the scheduler reads (a new dict; ``node`` is left as it is)."""
    out: RawDict = {k: node[k] for k in ("kind", "apiVersion") if k in node}
    if "metadata" in node:
        out["metadata"] = _metadata(node["metadata"])
    spec = node.get("spec")
    out["spec"] = _pick(spec, NODE_SPEC_KEYS) if isinstance(spec, _MAP) else spec
    if spec is None:
        del out["spec"]
    status = node.get("status")
    if isinstance(status, _MAP):
        st = _pick(status, NODE_STATUS_KEYS)
        conditions = status.get("conditions")
        if isinstance(conditions, list):
            st["conditions"] = [
                _pick(c, ("type", "status")) if isinstance(c, _MAP) else c
                for c in conditions
                if not isinstance(c, _MAP) or c.get("type") == "Ready"
            ]
        elif conditions is not None:
            st["conditions"] = conditions
        out["status"] = st
    elif status is not None:
        out["status"] = status
    return out


PRUNERS = {"Pod": prune_pod, "Node": prune_node}


# --- pruned as decoded -------------------------------------------------------------------------------------


def _shape(name: str, keys: tuple[str, ...], **typed: Any) -> Any:
    """A ``TypedDict`` (every key optional) of ``keys``, each of any JSON value unless ``typed`` says."""
    return TypedDict(name, {k: typed.get(k, Any) for k in keys}, total=False)  # type: ignore[operator]


def _list_of(shape: Any) -> Any:
    """``list[shape]`` of a shape made at run time."""
    return types.GenericAlias(list, (shape,))


_META = _shape("Meta", META_KEYS)
_CONTAINER = _shape("Container", CONTAINER_KEYS)
_VOLUME = _shape(
    "Volume", ("name", "persistentVolumeClaim", *sorted(_KEPT_VOLUMES - {"persistentVolumeClaim"}))
)
_CONDITION = _shape("Condition", ("type", "status"))
#: A pod's: the kubelet's PodResizePending says why in its reason.
_POD_CONDITION = _shape("PodCondition", ("type", "status", "reason"))
_STATE = _shape(
    "ContainerState",
    ("waiting", "terminated"),
    waiting=_shape("Waiting", _WAITING),
    terminated=_shape("Terminated", _TERMINATED),
)
_CONTAINER_STATUS = _shape(
    "ContainerStatus",
    (*CONTAINER_STATUS_KEYS, "state"),
    state=_STATE,
    resources=_shape("ContainerResources", ("requests",)),
)
_STATUSES = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
_POD_SPEC = _shape(
    "PodSpec",
    POD_SPEC_KEYS,
    containers=_list_of(_CONTAINER),
    initContainers=_list_of(_CONTAINER),
    volumes=_list_of(_VOLUME),
)
_POD_STATUS = _shape(
    "PodStatus",
    (*POD_STATUS_KEYS, *_STATUSES, "conditions"),
    conditions=_list_of(_POD_CONDITION),
    **dict.fromkeys(_STATUSES, _list_of(_CONTAINER_STATUS)),
)
_POD = _shape("Pod", ("metadata", "spec", "status"), metadata=_META, spec=_POD_SPEC, status=_POD_STATUS)
#: A listed pod: its spec kept as its JSON, decoded by :func:`_listed_spec` (once for a template's pods).
_LISTED_POD = _shape(
    "ListedPod", ("metadata", "spec", "status"), metadata=_META, spec=msgspec.Raw, status=_POD_STATUS
)
_NODE = _shape(
    "Node",
    ("metadata", "spec", "status"),
    metadata=_META,
    spec=_shape("NodeSpec", NODE_SPEC_KEYS),
    status=_shape("NodeStatus", (*NODE_STATUS_KEYS, "conditions"), conditions=_list_of(_CONDITION)),
)


def _finish_meta(obj: RawDict) -> None:
    meta: Any = obj.get("metadata")
    annotations = meta.get("annotations") if meta is not None else None
    # (None first: most pods have no annotations, and the Mapping ABC's check of a None costs ten dicts'.)
    if annotations is not None and isinstance(annotations, _MAP) and LAST_APPLIED in annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}


def _finish_spec(spec: Any) -> None:
    volumes = spec.get("volumes") if spec is not None else None
    if volumes is not None:
        kept = [_volume(v) for v in volumes if _KEPT_VOLUMES & v.keys()]
        if kept:
            spec["volumes"] = kept
        else:
            del spec["volumes"]


def _finish_pod(pod: RawDict) -> None:
    _finish_meta(pod)
    _finish_spec(pod.get("spec"))
    _finish_status(pod)


def _finish_status(pod: RawDict) -> None:
    status: Any = pod.get("status")
    if status is not None and "conditions" in status:
        conditions = _kept_conditions(status.pop("conditions"))
        if conditions is not None:
            status["conditions"] = conditions
    _unresized(status, pod.get("spec"))


def _finish_node(node: RawDict) -> None:
    _finish_meta(node)
    status: Any = node.get("status")
    conditions = status.get("conditions") if status is not None else None
    if conditions is not None:
        status["conditions"] = [c for c in conditions if c.get("type") == "Ready"]


#: A pod spec's decoder (a listed pod's, :func:`_listed_spec`).
_SPEC_DECODER = msgspec.json.Decoder(_POD_SPEC)
#: The specs of the pods listed lately, by their JSON: a :class:`FrozenMap` that the pods of one template
#: (a Job's, a ReplicaSet's, listed at start by the thousand) share, decoded and pruned once; None for a
#: spec seen once (its pod has a dict of its own: a spec seen once costs its key, not a frozen copy).
#: Emptied when it reaches :data:`SHARED_SPECS_MAX` entries, so it never grows with the cluster.
_SHARED_SPECS: dict[bytes, FrozenMap | None] = {}
SHARED_SPECS_MAX = 4096
_UNSEEN: Any = object()


def _listed_spec(raw: msgspec.Raw) -> tuple[Any, bool]:
    """A listed pod's spec (its JSON, as the page has it) decoded and pruned: the :class:`FrozenMap` shared
    with the pods whose spec's JSON is the same to the byte (the same JSON is the same value: ``true`` and
    ``1``, ``1`` and ``1.0``, or two key orders never meet under one key), else a dict of its own; and
    whether a pod listed before had the same. Raises msgspec's errors for a field of a shape the types do
    not take (the page is then decoded whole)."""
    key = bytes(raw)
    shared = _SHARED_SPECS.get(key, _UNSEEN)
    if shared is not None and shared is not _UNSEEN:
        return shared, True
    spec = _SPEC_DECODER.decode(key)
    _finish_spec(spec)
    if len(_SHARED_SPECS) >= SHARED_SPECS_MAX:
        _SHARED_SPECS.clear()
    if shared is None:  # its second pod: shared from now on
        spec = _SHARED_SPECS[key] = freeze(spec)
        return spec, True
    _SHARED_SPECS[key] = None
    return _pruned_spec(spec), False


#: A pruned spec's encoder (:func:`_pruned_spec`'s key).
_SPEC_ENCODER = msgspec.json.Encoder()
#: The pruned specs of the pods listed lately, by their JSON as pruned, without the node: what the pods
#: whose specs differ only in fields the scheduler does not read (a token volume's name, in ``volumes``
#: and the containers' ``volumeMounts``), or in their node, share (as :data:`_SHARED_SPECS`).
_PRUNED_SPECS: dict[bytes, FrozenMap | None] = {}


def _pruned_spec(spec: RawDict) -> Any:
    """A listed pod's spec as pruned (a dict of its own), shared with the pods listed before whose pruned
    spec is the same but for the node: the :class:`FrozenMap` of those without one, or for a bound pod one
    of its own :func:`over` it (its node set, every other field the shared map's); else ``spec``. The key
    is the pruned spec written as JSON, in its order: only the same values of the same types meet
    (``true`` and ``1``, ``1`` and ``1.0``, two key orders do not)."""
    node = spec.pop("nodeName", _UNSEEN)
    if node is _UNSEEN:
        node = None
    elif type(node) is not str:  # a null, or a value the model refuses: not shared
        spec["nodeName"] = node
        return spec
    try:
        key = _SPEC_ENCODER.encode(spec)
    except (msgspec.EncodeError, OverflowError):  # (an integer past 64 bits: not shared)
        key = None
    shared = _UNSEEN if key is None else _PRUNED_SPECS.get(key, _UNSEEN)
    if shared is None:  # its second pod: shared from now on
        shared = _PRUNED_SPECS[key] = freeze(spec)  # type: ignore[index]  # (key is bytes here)
    elif shared is _UNSEEN:  # seen once: its pod's own dict
        if key is not None:
            if len(_PRUNED_SPECS) >= SHARED_SPECS_MAX:
                _PRUNED_SPECS.clear()
            _PRUNED_SPECS[key] = None
        if node is not None:
            spec["nodeName"] = node
        return spec
    return shared if node is None else over(shared, nodeName=node)


class _SpecSharing:
    """Whether a listing's next page of Pods is read for shared specs. Where the pods' specs differ to the
    byte (a service account's token volume, named at random in each pod; a node each), keying and
    decoding each spec apart costs more than decoding the page in one pass: after a page where fewer than
    :attr:`SHARE_AT_LEAST` of the pods found their spec listed before, the next pages are decoded in one
    pass, :attr:`UNSHARED_PAGES` of them and twice as many after each such page in a row (at most
    :attr:`UNSHARED_MOST`), then one is tried again."""

    SHARE_AT_LEAST = 0.25
    UNSHARED_PAGES = 7
    UNSHARED_MOST = 64

    def __init__(self) -> None:
        self.unshared_left = 0
        self.unshared_next = self.UNSHARED_PAGES

    def page(self, data: bytes) -> dict[str, Any]:
        """A page of Pods decoded, each pod pruned (its spec shared or not, as above); raises msgspec's
        errors for a field of a shape the types do not take."""
        if self.unshared_left > 0:
            self.unshared_left -= 1
            page: dict[str, Any] = _POD_PAGE.decode(data)
            for item in page.get("items") or ():
                _finish_pod(item)
                spec = item.get("spec")
                if spec is not None:
                    item["spec"] = _pruned_spec(spec)
            return page
        page = _LISTED_POD_PAGE.decode(data)
        items = page.get("items") or ()
        found = 0
        for item in items:
            _finish_meta(item)
            if "spec" in item:
                item["spec"], before = _listed_spec(item["spec"])
                found += before
            _finish_status(item)
        if found < self.SHARE_AT_LEAST * len(items):
            self.unshared_left = self.unshared_next
            self.unshared_next = min(2 * self.unshared_next, self.UNSHARED_MOST)
        else:
            self.unshared_next = self.UNSHARED_PAGES
        return page


def _page_decoder(shape: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(_shape("List", ("metadata", "items"), items=_list_of(shape)))


_POD_PAGE, _LISTED_POD_PAGE, _NODE_PAGE = map(_page_decoder, (_POD, _LISTED_POD, _NODE))
#: The Pods' listings' (one at a time: the Pods' watch's).
_SHARING = _SpecSharing()


def _node_page(data: bytes) -> dict[str, Any]:
    page: dict[str, Any] = _NODE_PAGE.decode(data)
    for item in page.get("items") or ():
        _finish_node(item)
    return page


_DECODERS: dict[str, Callable[[bytes], dict[str, Any]]] = {"Pod": _SHARING.page, "Node": _node_page}


def decode_pruned(kind: str, data: bytes) -> dict[str, Any] | None:
    """A listing's page of Pods or Nodes (``kind``) decoded with each item pruned as :data:`PRUNERS`
    prunes it (its ``metadata`` and ``items``; the pods of one template sharing their spec, read-only);
    None when a field has a shape the types do not take: then the caller decodes and prunes it whole."""
    try:
        return _DECODERS[kind](data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None


#: Kinds whose pages :func:`decode_pruned` decodes, and its function for each.
PAGE_DECODERS: dict[str, Callable[[bytes], dict[str, Any] | None]] = {
    kind: functools.partial(decode_pruned, kind) for kind in _DECODERS
}

#: A watch event's types whose object is a Pod or Node (an ERROR's is a Status, a BOOKMARK's a stub).
_OBJECT_EVENTS = frozenset(("ADDED", "MODIFIED", "DELETED"))
_EVENT_DECODERS: dict[str, tuple[msgspec.json.Decoder[Any], Callable[[RawDict], None]]] = {
    kind: (msgspec.json.Decoder(_shape(f"{kind}Event", ("type", "object"), type=str, object=shape)), finish)
    for kind, shape, finish in (("Pod", _POD, _finish_pod), ("Node", _NODE, _finish_node))
}


def decode_event_pruned(kind: str, data: bytes) -> dict[str, Any] | None:
    """A watch event of a Pod or Node (``kind``: ADDED, MODIFIED or DELETED) decoded with its object
    pruned as :data:`PRUNERS` prunes it, as :func:`decode_pruned` decodes a listing's page (what a pod's
    event carries besides, its ``managedFields`` the most, is skipped, not built); None for another
    type (an ERROR's object is a Status, a BOOKMARK's a stub) or a field of a shape the types do not
    take: then the caller decodes and prunes it whole."""
    decoder, finish = _EVENT_DECODERS[kind]
    try:
        event: dict[str, Any] = decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    obj = event.get("object")
    if event.get("type") not in _OBJECT_EVENTS or obj is None:
        return None
    finish(obj)
    return event


#: Kinds whose watch events :func:`decode_event_pruned` decodes, and its function for each.
EVENT_DECODERS: dict[str, Callable[[bytes], dict[str, Any] | None]] = {
    kind: functools.partial(decode_event_pruned, kind) for kind in _EVENT_DECODERS
}
