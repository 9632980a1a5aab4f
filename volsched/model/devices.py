"""Devices claimed through Dynamic Resource Allocation (``resource.k8s.io/v1``), and their allocation.

A pod names ResourceClaims in ``spec.resourceClaims`` (:class:`PodClaim`): a claim by name, or one made
for the pod from a ResourceClaimTemplate (by the resource claim controller, which writes its name into the
pod's ``status.resourceClaimStatuses``). A claim (:class:`Claim`) asks for devices in requests
(:class:`DeviceRequest`: a DeviceClass, CEL selectors, a count or All) under constraints
(:class:`MatchAttribute`); drivers publish devices in ResourceSlices (:class:`Device`, reachable from one
node, from nodes a selector picks, or from all).

Three parts, all pure (no session, no I/O):

* **selectors**: CEL expressions over a device's driver, attributes and capacity, compiled once and cached
  (the ``common-expression-language`` package), with the Kubernetes ``quantity`` and ``semver`` helpers;
* the **catalog** (:class:`DeviceCatalog`): every device, which nodes reach it (as (node, device) pairs
  sorted by node), and which devices each request's class and selectors match (a boolean vector over
  devices, computed once per class and selectors and kept while the devices are the same);
* the **allocator** (:class:`DeviceState`): which devices are free in one session (and which are being
  released, their pods evicted), which nodes can give a pod every device its claims ask for (counted over
  all nodes at once with numpy; a pod with several requests or a constraint is then searched exactly on
  the nodes the counts leave), the devices it takes on a node, and giving them back (a discarded
  Statement allocates nothing).

Queues count devices per DeviceClass as the resource ``devices/<class>`` (:func:`device_resource`); the
catalog says how many of each class each node reaches.

What is supported and what is refused is written up in ``docs/dra.md``.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from volsched.model.errors import InputError
from volsched.model.nodeterms import Labelled, matches_affinity
from volsched.model.resources import parse_amount
from volsched.records import dataclass, made_ahead

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.intp]

#: How many devices the exact search on one node may try before it gives up on the node.
SEARCH_STEPS = 20_000
#: Up to this many nodes, which can give a pod its devices is counted node by node (a placement changes
#: one node: counting every (node, device) pair again would cost more).
_FEW_NODES = 8


#: Queues count devices per DeviceClass as the resource ``devices/<class>``: a node has
#: as many as the devices of the class it reaches, a pod asks as many as its claims' requests. The
#: session's device check places pods, not this count (see ``docs/dra.md``).
DEVICE_RESOURCE_PREFIX = "devices/"


def device_resource(device_class: str) -> str:
    return f"{DEVICE_RESOURCE_PREFIX}{device_class}"


def is_device_resource(name: str) -> bool:
    return name.startswith(DEVICE_RESOURCE_PREFIX)


@dataclass(frozen=True, slots=True)
class PodClaim:
    """One entry of a pod's ``spec.resourceClaims``: the name its containers use, and the ResourceClaim
    it stands for (``claim``; "" for a claim made from ``template`` that the resource claim controller has
    not made yet, or not said so in the pod's status)."""

    name: str
    claim: str
    template: str = ""

    def describe(self) -> str:
        if self.claim:
            return self.claim
        return f"{self.name} (from template {self.template}, not made yet)"


# --- CEL ------------------------------------------------------------------------------------------------

_QUANTITY = "\x00quantity"
_SEMVER = "\x00semver"
_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$"
)


def _quantity(text: Any) -> dict[str, float]:
    return {_QUANTITY: parse_amount(text, where="quantity()")}


def _is_quantity(text: Any) -> bool:
    try:
        parse_amount(text, where="")
    except InputError:
        return False
    return True


def semver_value(text: str) -> dict[str, list[Any]]:
    """A version attribute as CEL sees it (``semver(...)``): compared by major, minor, patch, then a
    release above its pre-releases."""
    m = _SEMVER_RE.match(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"not a semantic version: {text!r}")
    pre = m.group(4) or ""
    return {_SEMVER: [int(m.group(1)), int(m.group(2)), int(m.group(3)), 0 if pre else 1, pre]}


def _is_semver(text: Any) -> bool:
    return isinstance(text, str) and _SEMVER_RE.match(text) is not None


def _text(value: Any) -> str:
    """An attribute's value as a label value: ``true``, ``3``, ``a100``, ``1.2.3``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict) and _SEMVER in value:
        major, minor, patch, _, pre = value[_SEMVER]
        return f"{major}.{minor}.{patch}" + (f"-{pre}" if pre else "")
    return str(value)


def _order(value: Any) -> tuple[Any, ...]:
    if isinstance(value, dict) and _QUANTITY in value:
        return (value[_QUANTITY],)
    if isinstance(value, dict) and _SEMVER in value:
        return tuple(value[_SEMVER])
    raise TypeError("compareTo: expected quantities or semantic versions")


def _compare(a: Any, b: Any) -> int:
    x, y = _order(a), _order(b)
    return (x > y) - (x < y)


def _as_integer(q: Any) -> int:
    v = _order(q)[0]
    if v != int(v):
        raise ValueError("asInteger: not an integer")
    return int(v)


_FUNCTIONS: dict[str, Any] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": semver_value,
    "isSemver": _is_semver,
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: float(_order(q)[0]),
    "sign": lambda q: (_order(q)[0] > 0) - (_order(q)[0] < 0),
    "major": lambda v: _order(v)[0],
    "minor": lambda v: _order(v)[1],
    "patch": lambda v: _order(v)[2],
}

#: Compiled selectors by their text (or why they do not compile); emptied at ``_KEPT`` entries, as the
#: catalog's matches are, so neither grows with the claims seen over time.
_PROGRAMS: dict[str, Any] = {}
_KEPT = 4096


def _cel() -> Any:
    """The CEL library, imported on first use: its package imports its command line (prompt_toolkit,
    typer, rich), CPU at every start that a cluster without DRA selectors never needs."""
    import cel

    return cel


def compile_selector(expression: str) -> Any:
    """The compiled program of a CEL selector, or the compile error's text (a str); compiled once."""
    found = _PROGRAMS.get(expression)
    if found is None:
        try:
            found = _cel().compile(expression)
        except (ValueError, RuntimeError) as exc:
            found = str(exc).splitlines()[0]
        if len(_PROGRAMS) >= _KEPT:
            _PROGRAMS.clear()
        _PROGRAMS[expression] = found
    return found


# --- what drivers publish ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Device:
    """One device of a ResourceSlice, and where it can be used."""

    driver: str
    pool: str
    name: str
    #: domain -> attribute name -> value (int, bool, str, or a version as ``semver_value`` gives it).
    attributes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: domain -> capacity name -> amount (base units).
    capacity: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: The node it is attached to; else the nodes ``node_terms`` select; else (``all_nodes``) every node.
    node_name: str = ""
    node_terms: tuple[Any, ...] = ()
    all_nodes: bool = False
    #: Why volsched does not allocate it ("": it does), e.g. a partitionable device.
    unsupported: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)

    def attribute(self, qualified: str) -> Any:
        """The value of ``domain/name`` (None when the device has no such attribute)."""
        domain, _, name = qualified.rpartition("/")
        return self.attributes.get(domain, {}).get(name)

    def context(self) -> Any:
        """The CEL context its selectors are evaluated in (``device``, and the helper functions)."""
        return _cel().Context(
            {
                "device": {
                    "driver": self.driver,
                    "attributes": {d: dict(a) for d, a in self.attributes.items()},
                    "capacity": {
                        d: {k: {_QUANTITY: v} for k, v in c.items()} for d, c in self.capacity.items()
                    },
                    "allowMultipleAllocations": False,
                }
            },
            _FUNCTIONS,
        )


@dataclass(frozen=True, slots=True)
class DeviceSlice:
    """A ResourceSlice: its devices, and its place in its pool (``driver``, ``pool``): the pool's
    generation and how many slices it has at that generation."""

    driver: str
    pool: str
    generation: int
    count: int
    devices: tuple[Device, ...]


def usable_devices(slices: Iterable[DeviceSlice]) -> list[Device]:
    """The devices of every pool's newest generation. A pool that does not have all its slices at that
    generation is being updated: its devices are listed as unsupported (not allocated until it is
    whole), as kube-scheduler does."""
    newest: dict[tuple[str, str], list[DeviceSlice]] = {}
    for s in slices:
        held = newest.get((s.driver, s.pool))
        if held is None or s.generation > held[0].generation:
            newest[(s.driver, s.pool)] = [s]
        elif s.generation == held[0].generation:
            held.append(s)
    out: list[Device] = []
    for (driver, pool), group in newest.items():
        whole = len(group) >= group[0].count
        for s in group:
            if whole:
                out.extend(s.devices)
            else:
                why = f"pool {pool} of {driver} is being updated ({len(group)} of {group[0].count} slices)"
                out.extend(replace(d, unsupported=d.unsupported or why) for d in s.devices)
    return out


@dataclass(frozen=True, slots=True)
class DeviceClass:
    """A DeviceClass: the selectors every device of the class matches, and its config."""

    name: str
    selectors: tuple[str, ...] = ()
    #: ``spec.config``, as the API has it (copied into an allocation, source FromClass).
    config: tuple[Any, ...] = ()


# --- what pods ask for ------------------------------------------------------------------------------------


@made_ahead
@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One request of a claim: ``count`` devices (or all, ``all``) of a class that every selector
    matches."""

    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    all: bool = False
    count: int = 1
    #: Why volsched does not allocate this request ("": it does), e.g. admin access.
    unsupported: str = ""

    def describe(self) -> str:
        """``class gpu.example.com matching 'expr'`` for messages."""
        out = f"class {self.device_class}"
        if self.selectors:
            out += " matching " + " and ".join(f"'{s}'" for s in self.selectors)
        return out


@dataclass(frozen=True, slots=True)
class MatchAttribute:
    """A constraint: every device of ``requests`` (every request when empty) has attribute ``attribute``
    (``domain/name``), with one value."""

    attribute: str
    requests: tuple[str, ...] = ()


@made_ahead
@dataclass(frozen=True, slots=True)
class DeviceResult:
    """One allocated device (``status.allocation.devices.results[]``)."""

    request: str
    driver: str
    pool: str
    device: str


@made_ahead
@dataclass(frozen=True, slots=True)
class Allocated:
    """A claim's allocation: its devices, and the nodes it can be used from (one node by name, or the
    nodes ``node_terms`` select; neither: any node)."""

    results: tuple[DeviceResult, ...]
    node_name: str = ""
    node_terms: tuple[Any, ...] = ()


@made_ahead
@dataclass(frozen=True, slots=True)
class Claim:
    """A ResourceClaim as the allocator reads it."""

    namespace: str
    name: str
    uid: str = ""
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[MatchAttribute, ...] = ()
    #: ``spec.devices.config`` as the API has it (copied into an allocation, source FromClaim).
    config: tuple[Any, ...] = ()
    #: Why volsched does not allocate this claim ("": it does).
    unsupported: str = ""
    allocation: Allocated | None = None
    #: The uids of the consumers ``status.reservedFor`` names (pods, and any other kind).
    reserved_for: tuple[str, ...] = ()
    deleting: bool = False
    #: Whether ``status.reservedFor`` names a consumer that is not a pod.
    reserved_for_others: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def assumed(self, allocation: Allocated | None, reserved_for: tuple[str, ...]) -> Claim:
        """The claim with this allocation and these reservations (a bind's claims are assumed one a
        bind, and ``dataclasses.replace`` costs several times more)."""
        return Claim(
            self.namespace,
            self.name,
            self.uid,
            self.requests,
            self.constraints,
            self.config,
            self.unsupported,
            allocation,
            reserved_for,
            self.deleting,
            self.reserved_for_others,
        )

    @property
    def signature(self) -> str:
        """What node filters read of the claim: two claims with the same signature fit the same nodes."""
        key = (self.requests, self.constraints, self.unsupported, self.deleting)
        found = _SIGNATURES.get(key)
        if found is None:
            if len(_SIGNATURES) >= 4096:
                _SIGNATURES.clear()
            found = _SIGNATURES[key] = json.dumps(
                [
                    [
                        [r.name, r.device_class, r.selectors, r.all, r.count, r.unsupported]
                        for r in self.requests
                    ],
                    [[c.attribute, c.requests] for c in self.constraints],
                    self.unsupported,
                    self.deleting,
                ]
            )
        return found


#: Claims' signatures by what they are made of (the claims of one template share one).
_SIGNATURES: dict[tuple[Any, ...], str] = {}


@dataclass(frozen=True, slots=True)
class ClaimAllocation:
    """What a session decided for one claim of a pod: the devices it allocated (``results``; an
    allocation the claim already had when ``existing``), where they can be used, and the configuration
    to copy into the claim's status (from the classes, then from the claim)."""

    namespace: str
    claim: str
    uid: str
    results: tuple[DeviceResult, ...]
    node_name: str = ""
    node_terms: tuple[Any, ...] = ()
    existing: bool = False
    config: tuple[tuple[str, tuple[str, ...], Any], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.claim}"


# --- the catalog ------------------------------------------------------------------------------------------


class DeviceCatalog:
    """Every device drivers publish, which nodes reach each, and which devices a class and selectors
    match. Read-only once built; the matches it computes are kept (they follow from the devices alone)."""

    def __init__(
        self,
        devices: Sequence[Device],
        *,
        nodes: Sequence[Labelled],
        classes: Mapping[str, DeviceClass],
    ) -> None:
        self.devices = sorted(devices, key=lambda d: d.key)
        self.index = {d.key: i for i, d in enumerate(self.devices)}
        self.classes = dict(classes)
        self.node_names = [s.name for s in nodes]
        node_index = {s.name: i for i, s in enumerate(nodes)}
        pairs: list[tuple[int, int]] = []
        #: Devices more than one node reaches: the nodes of each (a placement there changes them all).
        self.shared_nodes: dict[int, IntArray] = {}
        by_terms: dict[str, list[int]] = {}
        for d, dev in enumerate(self.devices):
            if dev.node_name:
                i = node_index.get(dev.node_name)
                reach = [] if i is None else [i]
            elif dev.all_nodes:
                reach = list(range(len(nodes)))
            else:
                key = json.dumps(dev.node_terms, sort_keys=True)
                if key not in by_terms:
                    by_terms[key] = [i for i, s in enumerate(nodes) if matches_affinity(s, dev.node_terms)]
                reach = by_terms[key]
            pairs.extend((i, d) for i in reach)
            if len(reach) > 1:
                self.shared_nodes[d] = np.asarray(reach, dtype=np.intp)
        pairs.sort()
        n = len(nodes)
        self.pair_node: IntArray = np.fromiter((p[0] for p in pairs), dtype=np.intp, count=len(pairs))
        self.pair_dev: IntArray = np.fromiter((p[1] for p in pairs), dtype=np.intp, count=len(pairs))
        self.starts: IntArray = np.searchsorted(self.pair_node, np.arange(n + 1)).astype(np.intp)
        self.supported: BoolArray = np.array([not d.unsupported for d in self.devices], dtype=bool)
        self._matches: dict[tuple[str, tuple[str, ...]], tuple[BoolArray, str]] = {}
        self._hits: dict[tuple[str, tuple[str, ...]], list[bool]] = {}
        self._node_devices: dict[int, list[int]] = {}
        #: Whether some class has configuration to copy into allocations.
        self.class_config = any(c.config for c in self.classes.values())
        self._contexts: list[Any] | None = None
        self._node_attributes: list[dict[str, str]] | None = None

    def __len__(self) -> int:
        return len(self.devices)

    def on_node(self, node: int) -> IntArray:
        """The devices node ``node`` reaches, in the catalog's order."""
        return self.pair_dev[self.starts[node] : self.starts[node + 1]]

    def node_devices(self, node: int) -> list[int]:
        """:meth:`on_node` as a list (kept): a node's few devices are looked at one by one faster in
        plain Python than through numpy calls."""
        found = self._node_devices.get(node)
        if found is None:
            found = self._node_devices[node] = self.on_node(node).tolist()
        return found

    def hits(self, request: DeviceRequest) -> list[bool]:
        """:meth:`matches`' vector as a list (kept as long), to be read device by device."""
        key = (request.device_class, request.selectors)
        found = self._hits.get(key)
        if found is None:
            if len(self._hits) >= _KEPT:
                self._hits.clear()
            found = self._hits[key] = self.matches(request)[0].tolist()
        return found

    def matches(self, request: DeviceRequest) -> tuple[BoolArray, str]:
        """Which devices the request's class and selectors match (supported devices only), and what went
        wrong ("": nothing): a class not found, a selector that does not compile, or the first error a
        selector raised on a device (such a device does not match)."""
        key = (request.device_class, request.selectors)
        found = self._matches.get(key)
        if found is not None:
            return found
        cls = self.classes.get(request.device_class)
        ok = self.supported.copy()
        problem = ""
        if cls is None:
            ok[:] = False
            problem = f"device class {request.device_class} not found"
        else:
            for where, expr in [*((f"device class {cls.name}", s) for s in cls.selectors)] + [
                (f"request {request.name}", s) for s in request.selectors
            ]:
                program = compile_selector(expr)
                if isinstance(program, str):
                    ok[:] = False
                    problem = f"{where}: selector '{expr}' does not compile: {program}"
                    break
                contexts = self._device_contexts()
                for d in np.flatnonzero(ok):
                    try:
                        result = program.execute(contexts[d])
                    except Exception as exc:  # a CEL runtime error (no such key...): no match
                        result = False
                        if not problem:
                            problem = (
                                f"{where}: selector '{expr}' failed on device {self.devices[d].name}: {exc}"
                            )
                    if result is not True:
                        ok[d] = False
        ok.flags.writeable = False
        if len(self._matches) >= _KEPT:
            self._matches.clear()
        self._matches[key] = (ok, problem)
        return ok, problem

    def class_counts(self) -> dict[str, npt.NDArray[np.intp]]:
        """For each DeviceClass, how many of its devices each node reaches (over the nodes, in order)."""
        out: dict[str, npt.NDArray[np.intp]] = {}
        for name in sorted(self.classes):
            match, _ = self.matches(DeviceRequest(name="", device_class=name))
            out[name] = np.bincount(self.pair_node[match[self.pair_dev]], minlength=len(self.node_names))
        return out

    def node_attributes(self) -> list[dict[str, str]]:
        """Per node, the attributes (``domain/name`` -> value as text) that every device attached to it
        and having the attribute has with one value: what a gang's topology may name, as a node label
        (an NVLink domain, say). Computed once."""
        if self._node_attributes is None:
            out: list[dict[str, str]] = []
            for i in range(len(self.node_names)):
                seen: dict[str, str | None] = {}
                for d in self.on_node(i).tolist():
                    dev = self.devices[d]
                    if dev.node_name != self.node_names[i]:
                        continue
                    for domain, attrs in dev.attributes.items():
                        for name, value in attrs.items():
                            key, text = f"{domain}/{name}", _text(value)
                            seen[key] = text if seen.get(key, text) == text else None
                out.append({k: v for k, v in seen.items() if v is not None})
            self._node_attributes = out
        return self._node_attributes

    def _device_contexts(self) -> list[Any]:
        if self._contexts is None:
            self._contexts = [d.context() for d in self.devices]
        return self._contexts


EMPTY_CATALOG = DeviceCatalog((), nodes=(), classes={})


# --- the allocator ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Want:
    """One request of a pod, with what it matches."""

    claim: int  # index into the pod's claims to allocate
    request: DeviceRequest
    match: BoolArray
    #: ``match`` as a list (read device by device on one node).
    hits: list[bool]


@dataclass(slots=True)
class _Plan:
    """What a pod's claims need on a node, worked out once per session per pod shape."""

    claims: Sequence[Claim]
    #: Claims already allocated (before or in this session): only the nodes they can be used from.
    pinned: Sequence[tuple[Claim, ClaimAllocation]]
    #: Claims to allocate, their requests flattened, and constraints as (want indices, attribute).
    fresh: Sequence[Claim]
    wants: Sequence[_Want]
    constraints: Sequence[tuple[tuple[int, ...], str]]
    #: Why no node can take the pod ("": some may).
    problem: str = ""
    #: The pod's claims, namespace and uid it was made for (what :meth:`DeviceState.plan` keeps it by).
    of: Sequence[PodClaim] = ()
    namespace: str = ""
    pod_uid: str = ""


class DeviceState:
    """Which devices are free in one session, and the allocation of the pods' claims (see the module
    docstring). Changed only by :meth:`allocate`, :meth:`release`, :meth:`start_releasing` and
    :meth:`stop_releasing` (a Statement's operations).

    As with capacity, devices are free now or being released: those of the claims of pods being evicted
    (held by that pod alone). A placement takes free devices; a pipelined pod (waiting for evicted pods
    to go) may take released ones too."""

    def __init__(
        self, catalog: DeviceCatalog, claims: Mapping[str, Claim], *, nodes: Sequence[Labelled]
    ) -> None:
        self.catalog = catalog
        self.claims = claims
        self.nodes = nodes
        self.free: BoolArray = np.ones(len(catalog), dtype=bool)
        for claim in claims.values():
            if claim.allocation is not None:
                for r in claim.allocation.results:
                    d = catalog.index.get((r.driver, r.pool, r.device))
                    if d is not None:
                        self.free[d] = False
        #: Claims this session allocated (claim key -> allocation), and what each task took.
        self.allocated: dict[str, ClaimAllocation] = {}
        self.by_task: dict[str, tuple[ClaimAllocation, ...]] = {}
        #: Plans by the identity of the pod's claims (a task's tuple, asked again and again in a session;
        #: the tuple is held with its plan, so its id is not reused meanwhile).
        self._plans: dict[int, _Plan] = {}
        #: The wants and constraints of a pod's first claim to allocate, by its requests and constraints.
        self._shapes: dict[
            tuple[Any, ...], tuple[tuple[_Want, ...], tuple[tuple[tuple[int, ...], str], ...]]
        ] = {}
        #: Devices being released (their pod evicted), not taken by a pipelined pod; what each evicted
        #: pod releases; and which devices each pod's allocation took from the released ones.
        self.releasing: BoolArray = np.zeros(len(catalog), dtype=bool)
        self._released_by: dict[str, list[int]] = {}
        self._took_released: dict[str, list[int]] = {}
        #: Whether a device was ever marked released in the session (none is until one is).
        self._ever_released = False

    def releasing_any(self) -> bool:
        """Whether some device is being released (and not taken by a pipelined pod)."""
        return self._ever_released and bool(self.releasing.any())

    def available(self, *, future: bool = False) -> BoolArray:
        """The devices a placement may take (``future``: a pipelined one, released devices too)."""
        if future and self._released_by:
            out: BoolArray = self.free | self.releasing
            return out
        return self.free

    def held_by(self, namespace: str, pod_claims: Sequence[PodClaim], uid: str) -> list[int]:
        """The devices a running pod's claims hold that its going would free: those of the allocated
        claims reserved for it alone."""
        out: list[int] = []
        index = self.catalog.index
        for pc in pod_claims:
            claim = self.claims.get(f"{namespace}/{pc.claim}") if pc.claim else None
            if claim is None or claim.allocation is None or claim.reserved_for not in ((), (uid,)):
                continue
            for r in claim.allocation.results:
                d = index.get((r.driver, r.pool, r.device))
                if d is not None:
                    out.append(d)
        return out

    def start_releasing(
        self, key: str, namespace: str, pod_claims: Sequence[PodClaim], uid: str
    ) -> list[int]:
        """Pod ``key`` is being evicted: the devices only it holds are being released. Returns them."""
        devices = [
            d for d in self.held_by(namespace, pod_claims, uid) if not self.free[d] and not self.releasing[d]
        ]
        if devices:
            self.releasing[devices] = True
            self._released_by[key] = devices
            self._ever_released = True
        return devices

    def release_orphans(self, live: Callable[[str], bool]) -> None:
        """The devices of each allocated claim reserved only for pods that are gone (``live`` says
        which pod uids are not) are being released: kube-controller-manager's resource claim controller
        takes the gone pods out of ``reservedFor`` and deallocates the claim with the last one. Until
        it does, a pod evicted for those devices has them coming (it is pipelined onto them), not
        held: taking more victims for it would evict beyond need. A claim reserved for a consumer that
        is not a pod is held."""
        index = self.catalog.index
        for key, claim in self.claims.items():
            if (
                claim.allocation is None
                or not claim.reserved_for
                or claim.reserved_for_others
                or any(map(live, claim.reserved_for))
            ):
                continue
            devices = [
                d
                for r in claim.allocation.results
                if (d := index.get((r.driver, r.pool, r.device))) is not None
                and not self.free[d]
                and not self.releasing[d]
            ]
            if devices:
                self.releasing[devices] = True
                self._released_by[f"claim {key}"] = devices
                self._ever_released = True

    def stop_releasing(self, key: str) -> list[int]:
        """Undo :meth:`start_releasing` of pod ``key``."""
        devices = self._released_by.pop(key, [])
        if devices:
            self.releasing[devices] = False
        return devices

    # --- resolving a pod's claims -----------------------------------------------------------------

    def plan(self, namespace: str, pod_claims: Sequence[PodClaim], *, pod_uid: str = "") -> _Plan:
        """What a pod's claims need (kept while none of its claims is allocated or given back in the
        session since)."""
        found = self._plans.get(id(pod_claims))
        if (
            found is not None
            and found.of is pod_claims
            and found.namespace == namespace
            and found.pod_uid == pod_uid
            and self._still(found)
        ):
            return found
        plan = self._plan(namespace, pod_claims, pod_uid=pod_uid)
        plan.of, plan.namespace, plan.pod_uid = pod_claims, namespace, pod_uid
        self._plans[id(pod_claims)] = plan
        return plan

    def _still(self, plan: _Plan) -> bool:
        """Whether ``plan`` holds: its claims to allocate are not allocated in the session, and those it
        follows still are as they were."""
        allocated = self.allocated
        if not allocated:
            return not any(not a.existing for _, a in plan.pinned)
        for c in plan.fresh:
            if f"{c.namespace}/{c.name}" in allocated:
                return False
        return not plan.pinned or all(a.existing or allocated.get(c.key) is a for c, a in plan.pinned)

    def _plan(self, namespace: str, pod_claims: Sequence[PodClaim], *, pod_uid: str = "") -> _Plan:
        # Kept for the session: tuples (shared where they can be), not lists, so that a plan a pod adds
        # few objects for the collector to go over.
        claims: list[Claim] = []
        problems: list[str] = []
        for pc in pod_claims:
            if not pc.claim:
                problems.append(
                    f"resourceclaim for {pc.name} (template {pc.template}) not made yet by the resource "
                    "claim controller"
                )
                continue
            claim = self.claims.get(f"{namespace}/{pc.claim}")
            if claim is None:
                problems.append(f"resourceclaim {pc.claim} not found")
            elif claim.deleting:
                problems.append(f"resourceclaim {pc.claim} is being deleted")
            elif claim.unsupported and claim.allocation is None:
                problems.append(f"resourceclaim {pc.claim}: {claim.unsupported}")
            else:
                claims.append(claim)
        pinned: list[tuple[Claim, ClaimAllocation]] = []
        fresh: list[Claim] = []
        wants: list[_Want] = []
        constraints: list[tuple[tuple[int, ...], str]] = []
        known: tuple[tuple[_Want, ...], tuple[tuple[tuple[int, ...], str], ...]] | None = None
        for claim in claims:
            done = self.allocated.get(claim.key)
            if done is None and claim.allocation is not None:
                a = claim.allocation
                done = ClaimAllocation(
                    namespace=claim.namespace,
                    claim=claim.name,
                    uid=claim.uid,
                    results=a.results,
                    node_name=a.node_name,
                    node_terms=a.node_terms,
                    existing=True,
                )
                if len(claim.reserved_for) >= 256 and pod_uid not in claim.reserved_for:
                    problems.append(f"resourceclaim {claim.name} is reserved for 256 pods already")
            if done is not None:
                pinned.append((claim, done))
                continue
            c = len(fresh)
            fresh.append(claim)
            if c == 0:  # the claims of one template ask alike: their wants are worked out once
                shape = (claim.requests, claim.constraints)
                known = self._shapes.get(shape)
                if known is not None:
                    wants.extend(known[0])
                    constraints.extend(known[1])
                    continue
            first, asked = len(wants), len(problems)
            for r in claim.requests:
                if r.unsupported:
                    problems.append(f"resourceclaim {claim.name}: request {r.name}: {r.unsupported}")
                    continue
                match, problem = self.catalog.matches(r)
                if problem and not match.any():
                    problems.append(f"resourceclaim {claim.name}: {problem}")
                wants.append(_Want(c, r, match, self.catalog.hits(r)))
            names = {w.request.name: first + k for k, w in enumerate(wants[first:])}
            for con in claim.constraints:
                members = tuple(names[n] for n in (con.requests or tuple(names)) if n in names)
                constraints.append((members, con.attribute))
            if c == 0 and len(problems) == asked:  # (a problem names the claim: not kept)
                self._shapes[shape] = (tuple(wants), tuple(constraints))
        claimed = tuple(claims)
        if known is not None and len(fresh) == 1:
            wanted, constrained = known
        else:
            wanted, constrained = tuple(wants), tuple(constraints)
        return _Plan(
            claimed,
            tuple(pinned),
            claimed if len(fresh) == len(claimed) else tuple(fresh),
            wanted,
            constrained,
            "; ".join(problems),
        )

    # --- which nodes ------------------------------------------------------------------------------

    def _pinned_ok(self, plan: _Plan, idx: IntArray) -> BoolArray:
        ok = np.ones(len(idx), dtype=bool)
        names = self.catalog.node_names if self.catalog.node_names else [s.name for s in self.nodes]
        for _, a in plan.pinned:
            if a.node_name:
                ok &= np.array([names[i] == a.node_name for i in idx], dtype=bool)
            elif a.node_terms:
                ok &= np.array([matches_affinity(self.nodes[i], a.node_terms) for i in idx], dtype=bool)
        return ok

    def _counts(self, want: _Want, available: BoolArray | None = None) -> tuple[IntArray, IntArray]:
        """(available matching devices, matching devices) per node, over all nodes (available: free,
        unless said otherwise)."""
        cat = self.catalog
        n = len(self.nodes)
        hit = want.match[cat.pair_dev]
        total = np.bincount(cat.pair_node[hit], minlength=n)
        free = self.free if available is None else available
        avail = np.bincount(cat.pair_node[hit & free[cat.pair_dev]], minlength=n)
        return avail, total

    def fits(self, plan: _Plan, idx: IntArray, available: BoolArray | None = None) -> BoolArray:
        """Which of nodes ``idx`` can give the pod every device its claims ask for, from the free
        devices (or those of ``available``)."""
        free_all = self.free if available is None else available
        if plan.problem:
            return np.zeros(len(idx), dtype=bool)
        ok = self._pinned_ok(plan, idx) if plan.pinned else np.ones(len(idx), dtype=bool)
        if not plan.wants:
            return ok
        if not len(self.catalog):
            return np.zeros(len(idx), dtype=bool)
        if len(idx) <= _FEW_NODES:  # a node or two that changed: their own devices, not every pair
            for k, i in enumerate(idx.tolist()):
                if ok[k]:
                    ok[k] = self._fits_here(plan, i, free_all)
            return ok
        for w in plan.wants:
            avail, total = self._counts(w, free_all)
            a, t = avail[idx], total[idx]
            ok &= ((a == t) & (t >= 1)) if w.request.all else (a >= w.request.count)
        if len(plan.wants) > 1 or plan.constraints:
            for j in np.flatnonzero(ok).tolist():
                ok[j] = self.search(plan, int(idx[j]), free_all) is not None
        return ok

    def fits_one(self, plan: _Plan, node: int, available: BoolArray | None = None) -> bool:
        """:meth:`fits` for one node (the same answer, without arrays: this runs once per placed pod)."""
        if plan.problem:
            return False
        if plan.pinned and not self._pinned_ok(plan, np.array([node], dtype=np.intp))[0]:
            return False
        if not plan.wants:
            return True
        if not len(self.catalog):
            return False
        return self._fits_here(plan, node, self.free if available is None else available)

    def _fits_here(self, plan: _Plan, node: int, free: BoolArray) -> bool:
        """Whether node ``node`` has enough free devices (of ``free``) for every want, and (several wants
        or a constraint) a set that holds them all; its pinned claims already checked."""
        on_node = self.catalog.node_devices(node)
        for w in plan.wants:
            hits = w.hits
            matching = usable = 0
            for d in on_node:
                if hits[d]:
                    matching += 1
                    if free[d]:
                        usable += 1
            if w.request.all:
                if usable != matching or matching < 1:
                    return False
            elif usable < w.request.count:
                return False
        if len(plan.wants) > 1 or plan.constraints:
            return self.search(plan, node, free) is not None
        return True

    def search(self, plan: _Plan, node: int, available: BoolArray | None = None) -> list[list[int]] | None:
        """The devices (catalog indices) node ``node`` gives each of the plan's requests, or None: the
        first set found trying the node's free devices (or those of ``available``) in the catalog's
        order, every constraint held."""
        on_node = self.catalog.node_devices(node)
        free = self.free if available is None else available
        if len(plan.wants) == 1 and not plan.constraints:  # one request: the first free matching devices
            w = plan.wants[0]
            hits = w.hits
            hit = [d for d in on_node if hits[d]]
            if w.request.all:
                return [hit] if hit and all(free[d] for d in hit) else None
            count = w.request.count
            took = [d for d in hit if free[d]]
            return [took[:count]] if len(took) >= count else None
        cands: list[list[int]] = []
        for w in plan.wants:
            hits = w.hits
            matching = [d for d in on_node if hits[d]]
            if w.request.all and (not matching or not all(free[d] for d in matching)):
                return None
            cands.append([d for d in matching if free[d]])
        of_want: list[list[tuple[int, str]]] = [[] for _ in plan.wants]
        for c, (members, attribute) in enumerate(plan.constraints):
            for m in members:
                of_want[m].append((c, attribute))
        devices = self.catalog.devices
        fixed: list[Any] = [None] * len(plan.constraints)
        used: set[int] = set()
        picks: list[list[int]] = [[] for _ in plan.wants]
        steps = 0

        def place(w: int, start: int) -> bool:
            nonlocal steps
            want = plan.wants[w]
            need = len(cands[w]) if want.request.all else want.request.count
            if len(picks[w]) == need:
                return w + 1 == len(plan.wants) or place(w + 1, 0)
            for k in range(start, len(cands[w])):
                steps += 1
                if steps > SEARCH_STEPS:
                    return False
                d = cands[w][k]
                if d in used:
                    continue
                set_here: list[int] = []
                fits = True
                for c, attribute in of_want[w]:
                    value = devices[d].attribute(attribute)
                    if value is None or (fixed[c] is not None and fixed[c] != value):
                        fits = False
                        break
                    if fixed[c] is None:
                        fixed[c] = value
                        set_here.append(c)
                if fits:
                    used.add(d)
                    picks[w].append(d)
                    if place(w, k + 1):
                        return True
                    picks[w].pop()
                    used.discard(d)
                for c in set_here:
                    fixed[c] = None
                if want.request.all:
                    return False
            return False

        return picks if place(0, 0) else None

    def explain(self, plan: _Plan, idx: IntArray) -> list[tuple[str, int]]:
        """Why each of nodes ``idx`` cannot give the pod its devices, counted by reason (each node
        counted once, by the first reason that holds)."""
        n = len(idx)
        if plan.problem:
            return [(plan.problem, n)]
        out: Counter[str] = Counter()
        left = np.ones(n, dtype=bool)
        if plan.pinned:
            ok = self._pinned_ok(plan, idx)
            for claim, done in plan.pinned:
                bad = left & ~self._pinned_ok(_Plan([], [(claim, done)], [], [], []), idx)
                if bad.any():
                    where = f"on node {done.node_name}" if done.node_name else "on other nodes"
                    out[f"resourceclaim {claim.name} is allocated {where}"] += int(bad.sum())
                    left &= ~bad
            left &= ok
        for w in plan.wants:
            if not left.any():
                break
            avail, total = self._counts(w) if len(self.catalog) else (np.zeros(0, np.intp),) * 2
            a = avail[idx] if len(avail) else np.zeros(n, dtype=np.intp)
            t = total[idx] if len(total) else np.zeros(n, dtype=np.intp)
            what = w.request.describe()
            none = left & (t == 0)
            if none.any():
                out[f"no device of {what}"] += int(none.sum())
                left &= ~none
            short = left & ((a < t) if w.request.all else (a < w.request.count))
            for k in np.flatnonzero(short):
                ak, tk = int(a[k]), int(t[k])
                if w.request.all:
                    reason = f"{tk - ak} of the {tk} devices of {what} allocated (the request asks for all)"
                elif ak == 0:
                    reason = f"all {tk} matching devices of {what} allocated"
                else:
                    reason = f"{ak} of {tk} matching devices of {what} free, {w.request.count} needed"
                out[reason] += 1
            left &= ~short
        if left.any():
            attributes = sorted({a for _, a in plan.constraints})
            reason = (
                f"no set of free devices with one value of {', '.join(attributes)} for every request"
                if attributes
                else "not enough free devices for every request of the pod's claims at once"
            )
            out[reason] += int(left.sum())
        return list(out.items())

    # --- changes ----------------------------------------------------------------------------------

    def allocate(
        self, key: str, plan: _Plan, node: int, *, future: bool = False
    ) -> tuple[ClaimAllocation, ...]:
        """Take the devices of the plan on node ``node`` for pod ``key`` (the first set
        :meth:`search` finds; ``future``: a pipelined pod, which may take released devices too); raises
        ValueError when the node cannot give them (a filter should have said so)."""
        picks = self.search(plan, node, self.available(future=future)) if plan.wants else []
        if picks is None or plan.problem:
            raise ValueError(f"pod {key}: node {self.catalog.node_names[node]} cannot give its devices")
        node_name = self.nodes[node].name
        out: list[ClaimAllocation] = [a for _, a in plan.pinned]
        devices = self.catalog.devices
        for c, claim in enumerate(plan.fresh):
            results: list[DeviceResult] = []
            # Where the claim can be used: the node, if one of its devices is attached there; else the
            # nodes the first node selector of its devices picks; else (every device on all nodes) any.
            terms: tuple[Any, ...] = ()
            local = False
            for w, want in enumerate(plan.wants):
                if want.claim != c:
                    continue
                request = want.request.name
                for d in picks[w]:
                    dev = devices[d]
                    results.append(DeviceResult(request, dev.driver, dev.pool, dev.name))
                    local = local or bool(dev.node_name)
                    terms = terms or dev.node_terms
            config: list[tuple[str, tuple[str, ...], Any]] = []
            for r in claim.requests if self.catalog.class_config else ():
                cls = self.catalog.classes.get(r.device_class)
                for entry in cls.config if cls is not None else ():
                    config.append(("FromClass", (r.name,), entry))
            for entry in claim.config:
                config.append(("FromClaim", (), entry))
            alloc = ClaimAllocation(
                claim.namespace,
                claim.name,
                claim.uid,
                tuple(results),
                node_name if local else "",
                () if local else terms,
                False,
                tuple(config) if config else (),
            )
            self.allocated[f"{claim.namespace}/{claim.name}"] = alloc
            out.append(alloc)
        released: list[int] = []
        for d in itertools.chain.from_iterable(picks):
            if self.free[d]:
                self.free[d] = False
            else:  # a released device, taken by a pipelined pod
                self.releasing[d] = False
                released.append(d)
        if released:
            self._took_released[key] = released
        taken = tuple(out)
        self.by_task[key] = taken
        return taken

    def release(self, key: str) -> tuple[ClaimAllocation, ...]:
        """Give back what :meth:`allocate` took for pod ``key`` (nothing when it took nothing)."""
        taken = self.by_task.pop(key, ())
        released = set(self._took_released.pop(key, ()))
        index = self.catalog.index
        for a in taken:
            if a.existing or self.allocated.get(a.key) is not a:
                continue
            del self.allocated[a.key]
            for r in a.results:
                d = index.get((r.driver, r.pool, r.device))
                if d is not None:
                    if d in released:
                        self.releasing[d] = True
                    else:
                        self.free[d] = True
        return taken

    def nodes_of(self, taken: Iterable[ClaimAllocation]) -> set[int]:
        """The nodes besides the pod's own whose answer the allocations change (devices several nodes
        reach)."""
        out: set[int] = set()
        if not self.catalog.shared_nodes:  # every device on one node: the pod's own node only
            return out
        for a in taken:
            if a.existing:
                continue
            for r in a.results:
                d = self.catalog.index.get((r.driver, r.pool, r.device))
                reach = self.catalog.shared_nodes.get(d) if d is not None else None
                if reach is not None:
                    out.update(int(i) for i in reach)
        return out


def allocation_status(
    alloc: ClaimAllocation, *, pod_name: str, pod_uid: str, status: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The ``status`` a claim gets when ``alloc`` is written for pod ``pod_name``: its allocation (kept
    as it was when the claim had one) and the pod added to ``reservedFor`` (as kube-scheduler writes it
    before it binds the pod)."""
    out: dict[str, Any] = dict(status or {})
    if not alloc.existing:
        config = []
        for source, requests, entry in alloc.config:
            body = {k: v for k, v in dict(entry).items() if k != "requests"}
            wanted = list(requests) if source == "FromClass" else list(dict(entry).get("requests") or [])
            config.append({"source": source, "requests": wanted, **body})
        devices: dict[str, Any] = {
            "results": [
                {"request": r.request, "driver": r.driver, "pool": r.pool, "device": r.device}
                for r in alloc.results
            ]
        }
        if config:
            devices["config"] = config
        allocation: dict[str, Any] = {"devices": devices}
        if alloc.node_name:
            allocation["nodeSelector"] = {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [alloc.node_name]}]}
                ]
            }
        elif alloc.node_terms:
            allocation["nodeSelector"] = {"nodeSelectorTerms": list(alloc.node_terms)}
        out["allocation"] = allocation
    reserved = [
        r for r in out.get("reservedFor") or [] if not (isinstance(r, Mapping) and r.get("uid") == pod_uid)
    ]
    out["reservedFor"] = [*reserved, {"resource": "pods", "name": pod_name, "uid": pod_uid}]
    return out


def released_status(status: Mapping[str, Any] | None, *, pod_uid: str) -> dict[str, Any] | None:
    """A claim's ``status`` once pod ``pod_uid`` no longer uses it (the resource claim controller's
    part): the pod out of ``reservedFor``, and the allocation gone with the last pod. None: the pod was
    not in it."""
    reserved = list((status or {}).get("reservedFor") or [])
    left = [r for r in reserved if not (isinstance(r, Mapping) and r.get("uid") == pod_uid)]
    if len(left) == len(reserved):
        return None
    out = {k: v for k, v in dict(status or {}).items() if k != "reservedFor"}
    if left:
        out["reservedFor"] = left
    else:
        out.pop("allocation", None)
    return out
