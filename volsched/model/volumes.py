"""Volume binding for PersistentVolumeClaims of a ``WaitForFirstConsumer`` StorageClass, as kube-scheduler's
VolumeBinding plugin does it: which nodes can give a pod's unbound claims a volume, and which volume.

A claim of such a class waits for the scheduler to pick its pod's node. Then either a PersistentVolume that
exists already is bound to it (*static*: the class, access modes, volume mode, capacity, the claim's
selector and the volume's node affinity must fit; the smallest that fits is taken, claims asking less
first, no two claims of a pod on one volume) or, failing one, the class's provisioner makes one on that node
(*dynamic*: the class's ``allowedTopologies`` must admit the node). A claim whose
``volume.kubernetes.io/selected-node`` annotation is set already waits for that node alone.

Pure: what the scheduler reads of the three kinds (``volsched.model.decode`` reads them), the catalog a
snapshot holds and
the session's :class:`VolumeState` (volumes taken by the pods placed so far, so no two pods of a session get
one volume). The writes that carry a decision out are the edges' (``volsched.kube.writer``, the simulator).
Design: docs/placement.md#volumes-bound-at-placement.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

import numpy as np
import numpy.typing as npt

from volsched.model.nodeterms import matches_affinity
from volsched.model.resources import format_amount
from volsched.model.selectors import LabelSelector
from volsched.records import dataclass

#: The claim's annotation that asks the provisioner for a volume on this node.
SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: Set by the PersistentVolume controller once it has bound a claim (with ``spec.volumeName``).
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
#: On a volume whose ``claimRef`` a controller (or the scheduler) set, not its author.
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
#: A class whose volumes are all made by hand: none is provisioned.
NO_PROVISIONER = "kubernetes.io/no-provisioner"

#: Where node masks of selector terms are kept in a node table's memo, and how many at most.
_ADMITS = "volumes: admitted nodes"
_KEPT_ADMITS = 4096
#: The node table's memo keys of the nodes each CSIStorageCapacity topology covers (by selector, at most
#: ``_KEPT_COVERS``: a capacity per node is as many as the nodes) and of the nodes by label pair.
_COVERS = "volumes: nodes a capacity topology covers"
_KEPT_COVERS = 65536
_PAIRS = "volumes: nodes by label pair"
#: The node table's memo key of the largest volume each class's capacities can make per node, with the
#: capacities (the cache's mapping, a new one once any changed) they were worked out from.
_BEST = "volumes: most room per class and node"

BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class StorageClassSpec:
    """A StorageClass: its provisioner, binding mode and allowed topologies."""

    name: str
    provisioner: str
    #: ``volumeBindingMode: WaitForFirstConsumer``: its claims wait for the scheduler.
    wait_for_consumer: bool
    #: ``allowedTopologies`` as node selector terms (any matches; [] admits every node).
    topologies: tuple[Any, ...] = ()

    @property
    def provisions(self) -> bool:
        return bool(self.provisioner) and self.provisioner != NO_PROVISIONER


@dataclass(frozen=True, slots=True)
class VolumeClaim:
    """What the scheduler reads of a PersistentVolumeClaim."""

    namespace: str
    name: str
    uid: str
    #: ``spec.storageClassName`` ("" when none: such a claim binds only volumes of no class, at once).
    storage_class: str
    #: ``spec.volumeName`` ("" while unbound).
    volume: str = ""
    request: float = 0.0
    #: ``spec.resources.requests.storage`` is set (0 or more): only then is storage capacity checked, as
    #: kube-scheduler checks it (a claim asking 0 still needs a capacity of its class for the node).
    sized: bool = False
    access_modes: frozenset[str] = frozenset()
    volume_mode: str = "Filesystem"
    selector: LabelSelector | None = None
    #: The node a provisioner was asked for (``volume.kubernetes.io/selected-node``), "" when none.
    selected_node: str = ""
    deleting: bool = False
    #: The uid of its controller (``ownerReferences`` with ``controller: true``), "" when none.
    controller_uid: str = ""
    #: The PersistentVolume controller has bound it (``pv.kubernetes.io/bind-completed``).
    bind_completed: bool = False
    #: ``metadata.resourceVersion`` as a number (0 when not one), which object of two the API wrote
    #: later; not compared (an event that changes nothing read is no change).
    version: int = field(default=0, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PersistentVolumeSpec:
    """What the scheduler reads of a PersistentVolume."""

    name: str
    storage_class: str = ""
    capacity: float = 0.0
    access_modes: frozenset[str] = frozenset()
    volume_mode: str = "Filesystem"
    labels: Mapping[str, str] = field(default_factory=dict)
    #: ``spec.claimRef`` as ("ns/name", uid), or None.
    claim_ref: tuple[str, str] | None = None
    #: ``spec.nodeAffinity.required.nodeSelectorTerms`` ([]: every node).
    node_terms: tuple[Any, ...] = ()
    phase: str = ""
    deleting: bool = False
    #: As :attr:`VolumeClaim.version`.
    version: int = field(default=0, compare=False)
    #: ``spec.csi`` as (driver, volumeHandle), or an in-tree source migrated to CSI as its driver's
    #: (``migrated_csi``), or None: what attach limits count (``volsched.model.attach``).
    csi: tuple[str, str] | None = None

    def bound_to(self, claim: VolumeClaim) -> bool:
        """Whether ``claimRef`` names ``claim`` (a uid, when given, must be the claim's)."""
        ref = self.claim_ref
        return ref is not None and ref[0] == claim.key and (not ref[1] or ref[1] == claim.uid)

    def available_for(self, claim: VolumeClaim) -> bool:
        """Whether the volume may be bound to ``claim`` anywhere (its node affinity aside), as
        kube-scheduler's matching reads it."""
        if self.deleting:
            return False
        if self.claim_ref is not None:
            return self.bound_to(claim)
        if self.phase not in ("", "Available"):
            return False
        if self.storage_class != claim.storage_class or self.volume_mode != claim.volume_mode:
            return False
        if not claim.access_modes <= self.access_modes or self.capacity < claim.request:
            return False
        return claim.selector is None or claim.selector.matches(self.labels)


@dataclass(frozen=True, slots=True)
class StorageCapacity:
    """What the scheduler reads of a ``storage.k8s.io/v1`` CSIStorageCapacity: the StorageClass it is for,
    the largest volume its driver can make there (``maximumVolumeSize``, else ``capacity``; None: neither,
    no room), and the nodes it is for (``nodeTopology``; None: no node)."""

    key: str
    storage_class: str
    limit: float | None
    topology: LabelSelector | None


@dataclass(frozen=True, slots=True)
class VolumeBinding:
    """One claim of a bind: the volume it is bound to (static), or "" for a volume provisioned on the
    pod's node (dynamic: the claim's ``selected-node`` annotation)."""

    namespace: str
    claim: str
    claim_uid: str
    volume: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.claim}"


@dataclass(frozen=True, slots=True)
class VolumeCatalog:
    """What a session reads to bind claims: the claims, the volumes and the classes, as the cache has them
    (with the binds decided but not shown by the API yet assumed)."""

    claims: Mapping[str, VolumeClaim]
    volumes: Mapping[str, PersistentVolumeSpec]
    classes: Mapping[str, StorageClassSpec]
    #: CSIStorageCapacities by "ns/name", and the CSI drivers whose CSIDriver says ``storageCapacity:
    #: true``: a claim to provision of a class of such a driver needs one with room for it on the node.
    capacities: Mapping[str, StorageCapacity] = field(default_factory=dict)
    tracked: frozenset[str] = frozenset()


class VolumeState:
    """The session's volume binding: which nodes can give a pod's unbound claims their volumes, and the
    volumes the pods placed so far took (a discarded placement gives them back).

    A node passes when each claim, in order of the storage it asks (least first, then name), gets the
    smallest free volume that fits it and reaches the node, none taken twice, or else the class can
    provision a volume there. Vectorised over nodes: a loop over the pod's claims only."""

    def __init__(
        self, catalog: VolumeCatalog, *, nodes: Sequence[Any], memo: dict[str, Any] | None = None
    ) -> None:
        self.catalog = catalog
        self.specs = nodes
        self._names: npt.NDArray[Any] | None = None
        #: Which nodes a set of node selector terms admits, by the terms (JSON): kept with the node table
        #: (``memo``: its memo, while the nodes' specs are the same) from session to session.
        self._admits: dict[str, BoolArray] = {} if memo is None else memo.setdefault(_ADMITS, {})
        if len(self._admits) > _KEPT_ADMITS:
            self._admits.clear()
        #: Volumes taken by the pods placed this session: volume -> the task.
        self.taken: dict[str, str] = {}
        #: What each placed task's claims were given.
        self.by_task: dict[str, tuple[VolumeBinding, ...]] = {}
        #: Claims given a volume (or a node) this session: claim key -> (what it was given, the node, the
        #: tasks placed on it).
        self.claimed: dict[str, tuple[VolumeBinding, int, set[str]]] = {}
        self._reach: dict[str, BoolArray] = {}
        self._topology: dict[str, BoolArray] = {}
        #: Storage capacity tracking (made when first asked: most sessions provision nothing of a
        #: driver that tracks it): the nodes a CSIStorageCapacity's topology covers, by selector, and the
        #: nodes by label pair (both kept in ``memo`` from session to session, as the nodes' specs alone
        #: say them); each class's capacities; the nodes with room for (class, request).
        self._memo = memo
        self._covers: dict[LabelSelector, Sequence[int]] = (
            {} if memo is None else memo.setdefault(_COVERS, {})
        )
        if len(self._covers) > _KEPT_COVERS:
            self._covers.clear()
        self._best: dict[str, npt.NDArray[np.float64]] | None = None
        self._rooms: dict[tuple[str, float], BoolArray] = {}
        self._pairs: dict[tuple[str, str], list[int]] | None = None if memo is None else memo.get(_PAIRS)
        self._candidates: dict[str, tuple[str, ...]] = {}
        self._matrix: dict[str, BoolArray] = {}

    # --- what is read once -------------------------------------------------------------------------

    @property
    def names(self) -> npt.NDArray[Any]:
        """The nodes' names (made when first asked for: most sessions bind no claim)."""
        if self._names is None:
            self._names = np.array([getattr(s, "name", "") for s in self.specs], dtype=object)
        return self._names

    def _admitted(self, terms: Sequence[Any]) -> BoolArray:
        """The nodes node selector terms admit (any term; [] admits every node)."""
        key = json.dumps(terms, sort_keys=True, default=str)
        out = self._admits.get(key)
        if out is None:
            out = np.fromiter(
                (matches_affinity(s, list(terms)) for s in self.specs), dtype=bool, count=len(self.specs)
            )
            self._admits[key] = out
        return out

    def reach(self, volume: str) -> BoolArray:
        """The nodes a volume's node affinity admits."""
        out = self._reach.get(volume)
        if out is None:
            out = self._reach[volume] = self._admitted(self.catalog.volumes[volume].node_terms)
        return out

    def _reach_of(self, claim: VolumeClaim) -> BoolArray:
        """Which nodes each of the claim's candidates reaches (a row each, in their order)."""
        out = self._matrix.get(claim.key)
        if out is None:
            names = self.candidates(claim)
            out = np.stack([self.reach(v) for v in names]) if names else np.zeros((0, len(self.specs)), bool)
            self._matrix[claim.key] = out
        return out

    def _provisionable(self, claim: VolumeClaim, *, room: bool = True) -> BoolArray:
        """The nodes the claim's class can provision a volume on (none: no provisioner); ``room``: where
        its driver tracks storage capacity, only those where some CSIStorageCapacity of the class with
        room for the claim is (as kube-scheduler's VolumeBinding checks it)."""
        out = self._topology.get(claim.storage_class)
        if out is None:
            cls = self.catalog.classes.get(claim.storage_class)
            if cls is None or not cls.provisions:
                out = np.zeros(len(self.specs), dtype=bool)
            else:
                out = self._admitted(cls.topologies)
            self._topology[claim.storage_class] = out
        if room and self._tracked(claim):
            out = out & self._room(claim.storage_class, claim.request)
        return out

    def _tracked(self, claim: VolumeClaim) -> bool:
        """Whether the claim asks for storage of a class whose driver tracks its capacity."""
        if not claim.sized or not self.catalog.tracked:
            return False
        cls = self.catalog.classes.get(claim.storage_class)
        return cls is not None and cls.provisioner in self.catalog.tracked

    def _most(self, storage_class: str) -> npt.NDArray[np.float64]:
        """Per node, the largest volume any CSIStorageCapacity of the class for it can make (-inf: none is
        for it, or none has a size). Worked out once per class for a set of capacities and kept with the
        node table (``memo``) from session to session: the cache hands a new mapping once one changed."""
        best = self._best
        if best is None:
            kept = self._memo.get(_BEST) if self._memo is not None else None
            if kept is not None and kept[0] is self.catalog.capacities:
                best = kept[1]
            else:
                best = {}
                if self._memo is not None:
                    self._memo[_BEST] = (self.catalog.capacities, best)
            self._best = best
        out = best.get(storage_class)
        if out is None:
            out = np.full(len(self.specs), -np.inf)
            # The nodes and each capacity's limit gathered in lists, made arrays once: an array or two a
            # capacity cost more than the rest of its share of the work (5,000 capacities, one per node).
            nodes: list[int] = []
            limits, counts = [], []
            for cap in self.catalog.capacities.values():
                if cap.storage_class == storage_class and cap.limit is not None and cap.topology is not None:
                    covered = self._covered(cap.topology)
                    nodes.extend(covered)
                    limits.append(cap.limit)
                    counts.append(len(covered))
            if nodes:
                np.maximum.at(
                    out, np.array(nodes, dtype=np.intp), np.repeat(np.array(limits, dtype=float), counts)
                )
            out.setflags(write=False)
            best[storage_class] = out
        return out

    def _covered(self, selector: LabelSelector) -> Sequence[int]:
        """The nodes whose labels ``selector`` matches, in order (those carrying a label pair it requires
        are asked, when it requires one: a capacity per node or zone asks a node or a zone's; one that
        requires only that pair takes the label index's own list of them, read-only)."""
        out = self._covers.get(selector)
        if out is None:
            pairs = selector.index_pairs()
            if pairs is None:
                asked: Sequence[int] = range(len(self.specs))
            elif len(pairs) == 1:  # (a pair's nodes are in order already, none twice)
                asked = self._label_index().get(pairs[0], ())
            else:
                by_pair = self._label_index()
                asked = sorted({i for pair in pairs for i in by_pair.get(pair, ())})
            if pairs is not None and len(selector.requirements) == 1:  # (one In: those carrying a pair)
                out = asked
            else:
                out = [i for i in asked if selector.matches(getattr(self.specs[i], "labels", {}))]
            self._covers[selector] = out
        return out

    def _label_index(self) -> dict[tuple[str, str], list[int]]:
        """The nodes by each label pair they carry (made when first asked for)."""
        if self._pairs is None:
            self._pairs = {}
            for i, spec in enumerate(self.specs):
                for pair in getattr(spec, "labels", {}).items():
                    self._pairs.setdefault(pair, []).append(i)
            if self._memo is not None:
                self._memo[_PAIRS] = self._pairs
        return self._pairs

    def _room(self, storage_class: str, request: float) -> BoolArray:
        """The nodes some CSIStorageCapacity of the class with room for ``request`` is for."""
        key = (storage_class, request)
        out = self._rooms.get(key)
        if out is None:
            out = self._rooms[key] = self._most(storage_class) >= request
        return out

    def most_room(self, storage_class: str, idx: IndexArray) -> float | None:
        """The largest volume any CSIStorageCapacity of the class can make on one of nodes ``idx`` (None:
        none is for them)."""
        most = float(self._most(storage_class)[idx].max(initial=-np.inf))
        return None if most == -np.inf else most

    def candidates(self, claim: VolumeClaim) -> tuple[str, ...]:
        """The volumes that fit ``claim`` on some node, smallest first (a volume pre-bound to it first)."""
        out = self._candidates.get(claim.key)
        if out is None:
            fit = [v for v in self.catalog.volumes.values() if v.available_for(claim)]
            fit.sort(key=lambda v: (not v.bound_to(claim), v.capacity, v.name))
            out = self._candidates[claim.key] = tuple(v.name for v in fit)
        return out

    def _claims(self, namespace: str, names: Sequence[str]) -> list[VolumeClaim]:
        claims = [self.catalog.claims[f"{namespace}/{n}"] for n in names]
        claims.sort(key=lambda c: (c.request, c.name))
        return claims

    # --- per task ----------------------------------------------------------------------------------

    def _assign(
        self, namespace: str, names: Sequence[str], idx: IndexArray, *, ignore_room: bool = False
    ) -> tuple[BoolArray, list[tuple[VolumeClaim, np.ndarray[Any, Any], VolumeBinding | None]]]:
        """Which of nodes ``idx`` pass, and per claim the volume chosen per node (an index into its free
        candidates, -1: provisioned), or what another pod of the session was given for it;
        ``ignore_room``: as if no driver tracked storage capacity."""
        ok = np.ones(len(idx), dtype=bool)
        picks: list[tuple[VolumeClaim, np.ndarray[Any, Any], VolumeBinding | None]] = []
        chosen: list[tuple[tuple[str, ...], np.ndarray[Any, Any]]] = []
        none = np.full(len(idx), -1)
        for claim in self._claims(namespace, names):
            held = self.claimed.get(claim.key)
            if held is not None:  # another pod of this session has it: this one follows it
                binding, node, _ = held
                ok &= self.reach(binding.volume)[idx] if binding.volume else idx == node
                picks.append((claim, none, binding))
                continue
            selected = None
            if claim.selected_node:
                selected = np.asarray(self.names[idx] == claim.selected_node, dtype=bool)
            names_c = self.candidates(claim)
            matrix = self._reach_of(claim)
            if self.taken and names_c:
                free = np.fromiter((v not in self.taken for v in names_c), dtype=bool, count=len(names_c))
                names_c, matrix = tuple(itertools.compress(names_c, free)), matrix[free]
            if names_c and selected is None:
                avail = matrix[:, idx]
                for other_names, other_pick in chosen:  # no two claims of the pod on one volume
                    for row, v in enumerate(names_c):
                        if v in other_names:
                            avail[row] &= other_pick != other_names.index(v)
                first = avail.argmax(axis=0)
                has = avail[first, np.arange(len(idx))]
                pick = np.where(has, first, -1)
            else:
                has = np.zeros(len(idx), dtype=bool)
                pick = none
            provision = ~has & self._provisionable(claim, room=not ignore_room)[idx]
            if selected is not None:
                provision &= selected
            ok &= has | provision
            picks.append((claim, pick, None))
            chosen.append((names_c, pick))
        return ok, picks

    def fits(self, namespace: str, names: Sequence[str], idx: IndexArray) -> BoolArray:
        """Which of nodes ``idx`` can give every claim ``names`` (unbound, of a WaitForFirstConsumer
        class) of a pod in ``namespace`` a volume."""
        return self._assign(namespace, names, idx)[0]

    def choose(self, namespace: str, names: Sequence[str], node: int) -> tuple[VolumeBinding, ...] | None:
        """What the claims get on ``node`` (None: it does not pass)."""
        idx = np.array([node], dtype=np.intp)
        ok, picks = self._assign(namespace, names, idx)
        if not ok[0]:
            return None
        out = []
        for claim, pick, shared in picks:
            if shared is not None:
                out.append(shared)
                continue
            free = [v for v in self.candidates(claim) if v not in self.taken]
            at = int(pick[0])
            out.append(VolumeBinding(claim.namespace, claim.name, claim.uid, free[at] if at >= 0 else ""))
        return tuple(out)

    def take(self, task: str, namespace: str, names: Sequence[str], node: int) -> tuple[VolumeBinding, ...]:
        """Give ``task`` its claims' volumes on ``node`` (raises when the node does not pass: nothing is
        half done). A claim several pods of the session name is bound once, for all of them."""
        got = self.choose(namespace, names, node)
        if got is None:
            raise ValueError(f"task {task}: node {self.names[node]} cannot bind its claims")
        for b in got:
            held = self.claimed.get(b.key)
            if held is None:
                self.claimed[b.key] = (b, node, {task})
                if b.volume:
                    self.taken[b.volume] = task
            else:
                held[2].add(task)
        self.by_task[task] = got
        return got

    def release(self, task: str) -> tuple[VolumeBinding, ...]:
        """Give back what ``task`` took (a claim other pods still hold stays theirs)."""
        got = self.by_task.pop(task, ())
        for b in got:
            held = self.claimed.get(b.key)
            if held is None:
                continue
            held[2].discard(task)
            if not held[2]:
                del self.claimed[b.key]
                if b.volume:
                    self.taken.pop(b.volume, None)
        return got

    def nodes_of(self, got: Sequence[VolumeBinding]) -> IndexArray:
        """The nodes whose answer taking or giving back ``got`` may change (where its volumes reach)."""
        mask = np.zeros(len(self.specs), dtype=bool)
        for b in got:
            if b.volume:
                mask |= self.reach(b.volume)
        return np.flatnonzero(mask)

    def explain(self, namespace: str, names: Sequence[str], idx: IndexArray) -> list[tuple[str, int]]:
        """Why nodes ``idx`` (all failing :meth:`fits`) cannot bind the claims, counted as kube-scheduler
        words it."""
        claims = self._claims(namespace, names)
        busy = [c.name for c in claims if c.key in self.claimed]
        if busy:
            return [(f"persistentvolumeclaim(s) {', '.join(busy)} bound for another pod elsewhere", len(idx))]
        tracked = [c for c in claims if self._tracked(c) and c.key not in self.claimed]
        if not tracked:
            return [("node(s) didn't find available persistent volumes to bind", len(idx))]
        # The nodes that would pass but for storage capacity: told so in numbers, per claim short of it.
        short = self._assign(namespace, names, idx, ignore_room=True)[0]
        said: list[str] = []
        for claim in tracked:
            if short.any() and not self._room(claim.storage_class, claim.request)[idx[short]].all():
                most = self.most_room(claim.storage_class, idx[short])
                said.append(
                    f"{claim.name} asks {_bytes(claim.request)} of class {claim.storage_class}, the most"
                    f" any can make there {'none' if most is None else _bytes(most)}"
                )
        out = []
        if said:
            out.append((f"node(s) did not have enough free storage ({'; '.join(said)})", int(short.sum())))
        if (~short).any() or not said:
            out.append(("node(s) didn't find available persistent volumes to bind", int((~short).sum())))
        return out


def _bytes(amount: float) -> str:
    """An amount of storage as Kubernetes writes it (``10Gi``)."""
    return format_amount("ephemeral-storage", amount)
