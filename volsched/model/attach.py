"""CSI volume attach limits, as kube-scheduler's NodeVolumeLimits reads them: how many volumes of one CSI
driver a node may have attached (its CSINode's ``spec.drivers[].allocatable.count``), and which nodes can
take a pod's volumes within them.

A pod's volumes of a driver are its PersistentVolumeClaims (generic ephemeral volumes' claims too) and its
inline volumes of in-tree plugins migrated to CSI (``spec.volumes[].awsElasticBlockStore``...: as their
CSI driver's, by the volume's id): a bound claim's volume counts by its driver and ``volumeHandle``
(``spec.csi``; a volume of a migrated in-tree plugin as its CSI driver's), an unbound claim by its class's
provisioner (an in-tree one's as its CSI driver's), once per claim. A volume counts once per node, however
many pods there mount it. A node passes when, for every driver of the pod's volumes it has a limit for,
the volumes of that driver attached there and the pod's volumes not among them are no more than the
limit: counting the volumes of pods being evicted (attached until they are gone) where the pod is placed
now, not where it is pipelined onto what they release. The pods whose going detaches a volume are what
reclaim and preempt may take. A volume attached on a node (a VolumeAttachment of a CSI PersistentVolume)
that no pod there mounts counts too, as kube-scheduler counts it, until it is detached. A node without a
CSINode, or a driver without a count, has no limit. Not counted: inline CSI volumes (as kube-scheduler
counts none).

Pure: :class:`AttachCatalog` is what a snapshot holds (None when no CSINode reports a count), and
:class:`AttachState` the session's counts, vectorised over nodes (a loop over the pod's volumes only),
copied from those carried from session to session in the node table's memo. Design: docs/placement.md;
what is carried: docs/design/steady-state.md.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from typing import Any

import numpy as np
import numpy.typing as npt

from volsched.model.migration import MIGRATED_PROVISIONERS
from volsched.model.vocabulary import NODE_HOLDING_STATUSES, Task, TaskStatus
from volsched.model.volumes import PersistentVolumeSpec, StorageClassSpec, VolumeClaim
from volsched.records import dataclass

#: The node table's memo key of each pod's attachments (by namespace, claims and inline volumes), with the
#: claims, volumes, classes and limits they were resolved from (the cache hands new ones once one changed).
_RESOLVED = "attach: each pod's attachments"
_KEPT_RESOLVED = 65536
#: The node table's memo key of the counts of the pods on the nodes (:class:`_Counts`), carried from
#: session to session and moved by the nodes whose dict of tasks is another object.
_CARRIED = "attach: the counts carried"
#: Past one node in this many whose tasks are another dict (or that joined or left at once, or slots
#: free), the carried counts are made anew.
_NODES_FULL = 4

BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]
#: (driver, the volume's id within the driver) of one volume a pod mounts.
Attachment = tuple[str, str]

#: The statuses whose pods' volumes are attached on their node (a pod being evicted keeps them until it is
#: gone), or about to be.
_ATTACHED = NODE_HOLDING_STATUSES | {TaskStatus.PIPELINED}


@dataclass(frozen=True, slots=True)
class AttachCatalog:
    """The nodes' attach limits (node -> driver -> count) and what resolves a pod's claims to volumes;
    ``attached``: the VolumeAttachments, by name, as (node, attacher, PersistentVolume)."""

    limits: Mapping[str, Mapping[str, int]]
    claims: Mapping[str, VolumeClaim]
    volumes: Mapping[str, PersistentVolumeSpec]
    classes: Mapping[str, StorageClassSpec]
    attached: Mapping[str, tuple[str, str, str]] = field(default_factory=dict)

    def attached_without_pods(self) -> list[tuple[str, Attachment]]:
        """(node, volume) of each VolumeAttachment of a CSI PersistentVolume, by its attacher and the
        volume's handle (as kube-scheduler counts them), in name order."""
        out = []
        for name in sorted(self.attached):
            node, attacher, volume = self.attached[name]
            pv = self.volumes.get(volume)
            if pv is not None and pv.csi is not None:
                out.append((node, (attacher, pv.csi[1])))
        return out

    def attachments(self, namespace: str, claims: Iterable[str]) -> tuple[Attachment, ...]:
        """The CSI volumes the claims ``claims`` of a pod in ``namespace`` attach, each once."""
        out: dict[Attachment, None] = {}
        for name in claims:
            claim = self.claims.get(f"{namespace}/{name}")
            if claim is None:
                continue  # (a claim not found keeps the pod pending: predicates says so)
            if claim.volume:
                pv = self.volumes.get(claim.volume)
                if pv is not None and pv.csi is not None:
                    out[pv.csi] = None
                continue
            cls = self.classes.get(claim.storage_class)
            if cls is not None and cls.provisions:  # the volume its provisioner will make
                driver = MIGRATED_PROVISIONERS.get(cls.provisioner, cls.provisioner)
                out[(driver, f"claim {claim.key}")] = None
        return tuple(out)


def task_claims(task: Task) -> tuple[str, ...]:
    """The claims ``task`` mounts: its PersistentVolumeClaim volumes and its generic ephemeral volumes'."""
    return (*task.claims, *task.ephemeral_claims) if task.ephemeral_claims else task.claims


def _mounts(task: Task) -> bool:
    """Whether ``task`` mounts a volume attach limits may count (a claim's, or an inline in-tree one)."""
    return bool(task.claims or task.ephemeral_claims or task.inline_volumes)


class AttachState:
    """The volumes attached per node and driver, as the session places and evicts pods.

    ``attached[d][n]`` is how many distinct volumes of driver ``d`` are attached on node ``n`` now (pods
    being evicted keep theirs until they are gone), ``kept[d][n]`` how many stay once the pods being
    evicted are gone: what a pod pipelined there (onto room being released) counts against, as it counts
    against the capacity they release. ``users`` and ``staying`` say how many pods on each node mount one
    volume, all of them and those not being evicted. Made when first asked about a pod (most sessions
    place none with a volume of a limited driver) from the counts carried with the node table (a copy of
    them, brought to the nodes whose pods or volumes changed: :class:`_Counts`), or from every pod on
    the nodes without a memo; event handlers keep it current."""

    def __init__(
        self,
        catalog: AttachCatalog,
        *,
        index: Mapping[str, int],
        tasks: Callable[[], Sequence[Mapping[str, Task]]],
        memo: dict[str, Any] | None = None,
    ) -> None:
        """``index``: the nodes' positions by name; ``tasks``: the pods on each node, as they stand when
        first asked about a pod with a volume of a limited driver (nothing is made before: most sessions
        place none); ``memo``: the node table's, where each pod's attachments are kept from session to
        session while the catalog's claims, volumes, classes and limits are the same objects."""
        self.catalog = catalog
        self._tasks = tasks
        self.index = index
        self._drivers: frozenset[str] | None = None
        #: Per driver with a limit somewhere: each node's limit (-1: none).
        self.limits: dict[str, npt.NDArray[np.int64]] = {}
        self.attached: dict[str, npt.NDArray[np.int64]] = {}
        self.kept: dict[str, npt.NDArray[np.int64]] = {}
        #: Per attachment: the nodes it is attached on, and how many pods there mount it (sparse: a
        #: volume is attached on a node or a few, and a row per volume over every node grows as their
        #: product); ``staying``: those of them not being evicted.
        self.users: dict[Attachment, dict[int, int]] = {}
        self.staying: dict[Attachment, dict[int, int]] = {}
        #: Task key -> (its node, the attachments it counts there).
        self._where: dict[str, tuple[int, tuple[Attachment, ...]]] = {}
        #: The keys of ``_where``'s pods being evicted (counted in ``users``, not in ``staying``).
        self._leaving: set[str] = set()
        self._of: dict[tuple[str, tuple[str, ...], tuple[Attachment, ...]], tuple[Attachment, ...]] = {}
        self._memo = memo
        #: The attachments whose dicts of users (``users``, ``staying``) are this session's own, copied
        #: from the carried counts when first changed (None: every one is).
        self._own_users: set[Attachment] | None = None
        self._own_staying: set[Attachment] | None = None
        #: Where the counts stand each node (its slot: :class:`_Counts`), how many slots, and each
        #: node's slot by its place in the table (None: its place): set when the counts are made.
        self._slots: Mapping[str, int] = index
        self._n = len(index)
        self._perm: IndexArray | None = None
        if memo is not None:
            c = catalog
            kept = memo.get(_RESOLVED)
            if (
                kept is not None
                and kept[0] is c.claims
                and kept[1] is c.volumes
                and kept[2] is c.classes
                # (resolved for the same drivers: what they are filtered by)
                and (kept[3] is c.limits or (kept[5] is not None and kept[5] == self.drivers))
                and len(kept[4]) < _KEPT_RESOLVED
            ):
                self._of = kept[4]
                if kept[3] is not c.limits:
                    memo[_RESOLVED] = (*kept[:3], c.limits, kept[4], self.drivers)
            else:
                drivers = kept[5] if kept is not None and kept[3] is c.limits else self._drivers
                memo[_RESOLVED] = (c.claims, c.volumes, c.classes, c.limits, self._of, drivers)
        self._built = False

    @property
    def drivers(self) -> frozenset[str]:
        """The drivers some node has a limit for."""
        if self._drivers is None:
            limits = self.catalog.limits
            self._drivers = frozenset(d for by_driver in limits.values() for d in by_driver)
            memo = self._memo
            kept = None if memo is None else memo.get(_RESOLVED)
            if memo is not None and kept is not None and kept[3] is limits and kept[5] is None:
                memo[_RESOLVED] = (*kept[:5], self._drivers)  # (for the next limits' check)
        return self._drivers

    def of(self, task: Task) -> tuple[Attachment, ...]:
        """``task``'s volumes of the drivers that have a limit somewhere."""
        claims = task_claims(task)
        inline = task.inline_volumes
        if not claims and not inline:
            return ()
        key = (task.namespace, claims, inline)
        out = self._of.get(key)
        if out is None:
            got = dict.fromkeys(self.catalog.attachments(task.namespace, claims))
            got.update(dict.fromkeys(inline))
            out = self._of[key] = tuple(a for a in got if a[0] in self.drivers)
        return out

    def _build(self) -> None:
        """The session's counts: the carried ones (:class:`_Counts`) brought to the pods on the nodes
        now and to the catalog, and copied (the dicts of users once the session first changes them)."""
        self._built = True
        tasks = self._tasks()
        memo = self._memo
        if memo is None:  # nothing carried: the session's own, as they are
            self._adopt(_Counts(self, tasks), shared=False)
            return
        base: _Counts | None = memo.get(_CARRIED)
        dirty = None if base is None else base.moved(self.catalog, tasks, self.index)
        if base is None or dirty is None or len(dirty) * _NODES_FULL > len(tasks):
            base = memo[_CARRIED] = _Counts(self, tasks)
        elif dirty:
            # Every changed node emptied before any is counted again: a pod made again under its name
            # on another node is still counted (by its key) on the one it left until that one is.
            # (Nodes gone from the table were emptied by ``moved``.)
            nodes = sorted(dirty)
            for i in nodes:
                base.recount(i, {}, self)
            place = base.place
            for i in nodes:
                on_node = tasks[i if place is None else place[i]]
                base.recount(i, on_node, self)
                base.held[i] = on_node
        self._adopt(base, shared=True)

    def _adopt(self, base: _Counts, *, shared: bool) -> None:
        """Count from ``base``'s counts: copies of them when it is ``shared`` (carried to later
        sessions: never changed by this one), else its very dicts and arrays."""
        self.limits = base.limits
        self._slots, self._n, self._perm = base.slots, base.size, base.perm
        if not shared:
            self.attached, self.kept = base.attached, base.kept
            self.users, self.staying = base.users, base.staying
            self._where, self._leaving = base.where, base.leaving
            return
        self.attached = {d: a.copy() for d, a in base.attached.items()}
        self.kept = {d: a.copy() for d, a in base.kept.items()}
        self.users, self.staying = base.users.copy(), base.staying.copy()
        self._where, self._leaving = base.where.copy(), set(base.leaving)
        self._own_users, self._own_staying = set(), set()

    def _count(self, *, staying: bool, got: Iterable[Attachment], node: int, delta: int) -> None:
        """:func:`_count` over ``users`` and ``attached``, or (``staying``) ``staying`` and ``kept``,
        copying first a dict of users the carried counts share."""
        on, counts, own = (
            (self.staying, self.kept, self._own_staying)
            if staying
            else (self.users, self.attached, self._own_users)
        )
        if own is not None:
            got = tuple(got)
            for a in got:
                if a not in own:
                    own.add(a)
                    users = on.get(a)
                    if users is not None:
                        on[a] = users.copy()
        _count(on, counts, got, node, delta)

    def _add(self, task: Task, node: int, *, leaving: bool = False) -> None:
        if task.key in self._where:
            return
        got = self.of(task)
        if not got:
            return
        self._where[task.key] = (node, got)
        self._count(staying=False, got=got, node=node, delta=1)
        if leaving:
            self._leaving.add(task.key)
        else:
            self._count(staying=True, got=got, node=node, delta=1)

    def add(self, task: Task) -> None:
        """An event handler's: ``task`` was placed, or its eviction undone."""
        if not self._built or not _mounts(task):
            return
        if task.key in self._leaving:
            if task.status is not TaskStatus.RELEASING:  # its eviction undone: it stays after all
                self._leaving.discard(task.key)
                at, got = self._where[task.key]
                self._count(staying=True, got=got, node=at, delta=1)
            return
        node = self._slots.get(task.node_name or "")
        if node is not None:
            self._add(task, node)

    def remove(self, task: Task) -> None:
        """An event handler's: ``task`` gave its node back. A pod being evicted keeps its volumes attached
        until it is gone (they are detached then): only its node's future count (``kept``) goes down; a
        placement undone gives them back."""
        held = self._where.get(task.key)
        if held is None:
            return
        node, got = held
        leaving = task.key in self._leaving
        if task.status is TaskStatus.RELEASING:
            if not leaving:
                self._leaving.add(task.key)
                self._count(staying=True, got=got, node=node, delta=-1)
            return
        del self._where[task.key]
        if leaving:
            self._leaving.discard(task.key)
        else:
            self._count(staying=True, got=got, node=node, delta=-1)
        self._count(staying=False, got=got, node=node, delta=-1)

    def _over(
        self, got: Sequence[Attachment], *, now: bool = False
    ) -> list[tuple[str, npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
        """Per driver of ``got``: each node's limit, the volumes attached there with the pod's, and
        without it; once the pods being evicted are gone (``now``: as they are now)."""
        if not self._built:
            self._build()
        counts, on_node = (self.attached, self.users) if now else (self.kept, self.staying)
        by_driver: dict[str, list[Attachment]] = {}
        for a in got:
            by_driver.setdefault(a[0], []).append(a)
        out = []
        for d, mine in by_driver.items():
            total = counts[d] + len(mine)
            for a in mine:
                on = on_node.get(a)
                if on:  # attached there already: it adds nothing on those nodes
                    total[list(on)] -= 1
            out.append((d, self.limits[d], total, counts[d]))
        return out

    def check(self, task: Task) -> BoolArray | None:
        """The nodes where ``task``'s volumes stay within every limit once the pods being evicted are gone
        (None: it has none of a limited driver)."""
        got = self.of(task)
        if not got:
            return None
        if not self._built:
            self._build()
        ok = np.ones(self._n, dtype=bool)
        for _, limit, total, _ in self._over(got):
            ok &= (limit < 0) | (total <= limit)
        return ok if self._perm is None else ok[self._perm]

    def now(self, task: Task) -> BoolArray | None:
        """The nodes where ``task``'s volumes stay within every limit now, with the volumes of the pods
        being evicted still attached: where it may be placed now rather than pipelined (None: as
        :meth:`check` says, no pod with a volume of a limited driver being evicted)."""
        if not self._leaving:
            return None
        got = self.of(task)
        if not got:
            return None
        if not self._built:
            self._build()
        ok = np.ones(self._n, dtype=bool)
        for _, limit, total, _ in self._over(got, now=True):
            ok &= (limit < 0) | (total <= limit)
        return ok if self._perm is None else ok[self._perm]

    def relievable(self, task: Task) -> BoolArray | None:
        """The nodes where ``task``'s volumes could stay within every limit were the volumes there
        detached (evicting pods may let it in: reclaim and preempt try them); None when it has no volume
        of a limited driver."""
        got = self.of(task)
        if not got:
            return None
        if not self._built:
            self._build()
        ok = np.ones(self._n, dtype=bool)
        for d in {a[0] for a in got}:
            limit = self.limits[d]
            ok &= (limit < 0) | (sum(1 for a in got if a[0] == d) <= limit)
        return ok if self._perm is None else ok[self._perm]

    def holders(self, task: Task) -> dict[str, str]:
        """The pods (by key) whose going would detach a volume of a driver of ``task``'s, on a node with a
        limit for it (not one ``task`` mounts too), each with what that frees: those reclaim and preempt
        evict to make an attachment free (a volume is detached only once every pod there mounting it
        goes; the action's trial says whether the task then fits)."""
        got = self.of(task)
        if not got:
            return {}
        if not self._built:
            self._build()
        drivers = {a[0] for a in got}
        mine = set(got)
        out: dict[str, str] = {}
        for key, (node, held) in self._where.items():
            if key in self._leaving:
                continue
            frees = sorted(
                {a[0] for a in held if a[0] in drivers and a not in mine and self.limits[a[0]][node] >= 0}
            )
            if frees:
                out[key] = f"an attachment of {', '.join(frees)}"
        return out

    def explain(self, task: Task, idx: IndexArray) -> list[tuple[str, int]]:
        """Why nodes ``idx`` exceed a limit, in numbers: per driver, the volumes the pod adds and the most
        attachments left on those nodes."""
        got = self.of(task)
        if not got:
            return []
        out = []
        if not self._built:
            self._build()
        at = idx if self._perm is None else self._perm[idx]
        for d, limit, total, counts in self._over(got):
            lim, tot = limit[at], total[at]
            bad = (lim >= 0) & (tot > lim)
            if not bad.any():
                continue
            adds = tot[bad] - counts[at][bad]
            left = np.maximum(lim[bad] - counts[at][bad], 0)
            out.append(
                (
                    f"node(s) exceed max volume count of {d} (needs {int(adds.min())}, "
                    f"most free {int(left.max())})",
                    int(bad.sum()),
                )
            )
        return out


def carry_counts(old: Mapping[str, Any], new: dict[str, Any]) -> None:
    """Hand the counts carried with a node table's memo (``old``) to the memo of the table that replaces
    it (``new``): a node's labels, taints, readiness or allocatable changed, or a node joined or left.
    What a count reads of the nodes is their names alone (the pods on each, the catalog's limits by
    node name; its places are its own slots, :class:`_Counts`), so the next session brings it to the
    table's places, the pods and the catalog as on the same table (a node that joined, whose dict of
    tasks is another object, or that read a claim or volume that changed, counted again alone; a node
    gone emptied alone), not from every pod. Each pod's attachments resolved go along too (they follow
    from the catalog alone)."""
    for key in (_CARRIED, _RESOLVED):
        kept = old.get(key)
        if kept is not None and key not in new:
            new[key] = kept


def _count(
    on: dict[Attachment, dict[int, int]],
    counts: dict[str, npt.NDArray[np.int64]],
    got: Iterable[Attachment],
    node: int,
    delta: int,
) -> None:
    """Count ``got`` on ``node`` ``delta`` more times in ``on``, and a volume newly there (or no longer)
    in ``counts``."""
    for a in got:
        users = on.setdefault(a, {})
        was = users.get(node, 0)
        now = was + delta
        if now:
            users[node] = now
        else:
            del users[node]
            if not users:
                del on[a]
        if not was or not now:
            counts[a[0]][node] += delta


class _Counts:
    """The volumes the pods on the nodes attach, per node and driver, as :class:`AttachState` counts
    them (its fields of the same names), for the node table's dicts of tasks ``held`` and the catalog's
    tables: carried with the table from session to session, and to the tables that replace it. A node is
    counted again alone (what a pod attaches counts on its own node only) when its dict of tasks is
    another object than the one counted (its pods changed: the snapshot builder makes a node's dict anew
    when they do, and a session copies one before it changes it), or a claim, a volume or a
    VolumeAttachment that it read changed, or its limits did; all of them when a StorageClass changed or
    a driver gained or lost its last limit. Sessions copy these counts; only :meth:`moved` and
    :meth:`recount` change them.

    Each node's counts stand in its own slot (``slots``), not at its place in the table: a node that
    joins takes a slot a node gone left free (or a new one past the last) and is counted alone, a node
    gone is emptied alone, and the nodes between keep theirs, though their places in the table move;
    once more than one slot in ``_NODES_FULL`` would be free, the counts are made anew (compact).
    ``perm`` is each place's slot (None: the slots are the places), ``place`` each slot's place."""

    __slots__ = (
        "attached",
        "by_claim",
        "by_volume",
        "catalog",
        "free",
        "held",
        "kept",
        "leaving",
        "limits",
        "names",
        "on",
        "order",
        "perm",
        "place",
        "read",
        "size",
        "slots",
        "staying",
        "table",
        "users",
        "va",
        "va_names",
        "where",
    )

    def __init__(self, state: AttachState, tasks: Sequence[Mapping[str, Task]]) -> None:
        self.catalog = catalog = state.catalog
        #: Per slot: the dict of tasks counted there.
        self.held = list(tasks)
        #: The table's index the slots stand for (its places by name), and its names in order.
        self.table = state.index
        self.order = list(state.index)
        #: Node name -> slot; per slot, its node's name (None: free); the slots free, lowest first.
        self.slots = slots = dict(state.index)
        self.names: list[str | None] = list(self.order)
        self.free: list[int] = []
        self.size = n = len(slots)
        self.perm: IndexArray | None = None
        self.place: list[int] | None = None
        self.limits = {d: np.full(n, -1, dtype=np.int64) for d in sorted(state.drivers)}
        self.attached = {d: np.zeros(n, dtype=np.int64) for d in self.limits}
        self.kept = {d: np.zeros(n, dtype=np.int64) for d in self.limits}
        for node, limits in catalog.limits.items():
            i = slots.get(node)
            if i is not None:
                for d, count in limits.items():
                    self.limits[d][i] = count
        for limit in self.limits.values():
            limit.setflags(write=False)  # (every session's, shared)
        self.users: dict[Attachment, dict[int, int]] = {}
        self.staying: dict[Attachment, dict[int, int]] = {}
        self.where: dict[str, tuple[int, tuple[Attachment, ...]]] = {}
        self.leaving: set[str] = set()
        #: Node -> the keys of the pods counted there.
        self.on: dict[int, list[str]] = {}
        #: Node -> the claims ("ns/name") and volumes its count read (its pods' claims, their volumes,
        #: its VolumeAttachments' volumes); and per claim and volume, the nodes that read it (how often).
        #: None until first needed (a claim or volume changed: :meth:`moved`), then kept by recounts: made
        #: here, it cost a full count half as much again.
        self.read: dict[int, tuple[list[str], list[str]]] | None = None
        self.by_claim: dict[str, dict[int, int]] = {}
        self.by_volume: dict[str, dict[int, int]] = {}
        #: Node name -> the names of its VolumeAttachments (in name order; a node's not in the table too),
        #: and per slot those of them counted (of a CSI volume of a driver with a limit that no pod there
        #: mounts).
        self.va_names: dict[str, list[str]] = {}
        self.va: dict[int, list[Attachment]] = {}
        # Each pod's attachments counted on its node, in dicts (as ``_count`` would, written out: this
        # walks every bound pod), then each driver's count per node at once.
        releasing = TaskStatus.RELEASING
        where, leaving_keys, users, staying, of, on_nodes = (
            self.where,
            self.leaving,
            self.users,
            self.staying,
            state.of,
            self.on,
        )
        for i, on_node in enumerate(tasks):
            for t in on_node.values():
                if not (t.claims or t.ephemeral_claims or t.inline_volumes) or t.status not in _ATTACHED:
                    continue
                key = t.key
                if key in where or not (got := of(t)):
                    continue
                where[key] = (i, got)
                keys = on_nodes.get(i)
                if keys is None:
                    on_nodes[i] = [key]
                else:
                    keys.append(key)
                leaving = t.status is releasing
                if leaving:
                    leaving_keys.add(key)
                for a in got:
                    on = users.get(a)
                    if on is None:
                        users[a] = {i: 1}
                    else:
                        on[i] = on.get(i, 0) + 1
                    if not leaving:
                        on = staying.get(a)
                        if on is None:
                            staying[a] = {i: 1}
                        else:
                            on[i] = on.get(i, 0) + 1
        for counts, by in ((self.attached, users), (self.kept, staying)):
            by_driver: dict[str, list[int]] = {}
            for a, at in by.items():
                by_driver.setdefault(a[0], []).extend(at)
            for d, nodes in by_driver.items():
                np.add.at(counts[d], np.asarray(nodes, dtype=np.intp), 1)
        # A volume attached (a VolumeAttachment) that no pod on the node mounts (its pod gone, the detach
        # not done) counts until it is detached: no eviction frees it.
        for name in sorted(catalog.attached):
            self.va_names.setdefault(catalog.attached[name][0], []).append(name)
        for node in self.va_names:
            i = slots.get(node)
            if i is not None:
                self._count_attached(i)

    def _note(self, i: int, claims: list[str], volumes: list[str]) -> None:
        """Node ``i``'s count read ``claims`` and ``volumes`` (besides what it read before); nothing
        while what the nodes read is not kept (``read`` None)."""
        if self.read is None:
            return
        was = self.read.get(i)
        if was is None:
            self.read[i] = (claims, volumes)
        else:
            was[0].extend(claims)
            was[1].extend(volumes)
        for names, by in ((claims, self.by_claim), (volumes, self.by_volume)):
            for name in names:
                _shift(by, name, i, 1)

    def _count_attached(self, i: int) -> None:
        """Count on node ``i`` the volumes its VolumeAttachments attach that no pod there mounts."""
        attached, volumes = self.catalog.attached, self.catalog.volumes
        counted = []
        read = []
        for name in self.va_names.get(self.names[i] or "", ()):
            _, attacher, volume = attached[name]
            read.append(volume)
            pv = volumes.get(volume)
            if pv is None or pv.csi is None or attacher not in self.limits:
                continue
            a = (attacher, pv.csi[1])
            if not self.users.get(a, {}).get(i):
                _count(self.users, self.attached, (a,), i, 1)
                _count(self.staying, self.kept, (a,), i, 1)
                counted.append(a)
        if counted:
            self.va[i] = counted
        if read:
            self._note(i, [], read)

    def moved(
        self, catalog: AttachCatalog, tasks: Sequence[Mapping[str, Task]], index: Mapping[str, int]
    ) -> set[int] | None:
        """The slots to count again for the table ``index`` (its places by name), ``tasks`` (its dicts of
        tasks, by place) and ``catalog``: those of the nodes that joined, those whose dict of tasks is
        another object, and those that read a claim, a volume or a VolumeAttachment that is another
        object now (None: every node, a StorageClass changed, a driver gained or lost its last limit, or
        too many nodes joined or left). Empties the slots of the nodes gone, takes the table's places
        (``perm``, ``place``), the limits and the catalog's VolumeAttachments as its own."""
        old = self.catalog
        if not _same(catalog.classes, old.classes):
            return None
        if catalog.limits is not old.limits and _drivers(catalog.limits) != self.limits.keys():
            return None
        dirty: set[int] = set()
        limited: set[int] = set()
        if index is not self.table:
            joined = self._placed(index, dirty)
            if joined is None:
                return None
            limited.update(joined)
        if catalog.limits is not old.limits:
            slots = self.slots
            limited.update(slots[n] for n in _changed(old.limits, catalog.limits) if n in slots)
        if limited:
            self._limit(catalog.limits, limited)
        held = self.held
        if self.perm is None:
            dirty.update(itertools.compress(range(len(tasks)), map(operator.is_not, tasks, held)))
        else:
            perm = self.perm.tolist()
            counted = map(held.__getitem__, perm)
            dirty.update(
                perm[p] for p in itertools.compress(range(len(tasks)), map(operator.is_not, tasks, counted))
            )
        if self.read is None and (catalog.claims is not old.claims or catalog.volumes is not old.volumes):
            self._reads(dirty)
        for new, was, by in (
            (catalog.claims, old.claims, self.by_claim),
            (catalog.volumes, old.volumes, self.by_volume),
        ):
            if new is not was:
                for name in _changed(was, new):
                    at = by.get(name)
                    if at:
                        dirty.update(at)
        if catalog.attached is not old.attached:
            for name in _changed(old.attached, catalog.attached):
                for table in (old.attached, catalog.attached):
                    va = table.get(name)
                    if va is None:
                        continue
                    node = va[0]
                    names = self.va_names.setdefault(node, [])
                    if table is old.attached:
                        names.remove(name)
                    else:
                        bisect.insort(names, name)
                    if not names:
                        del self.va_names[node]
                    i = self.slots.get(node)
                    if i is not None:
                        dirty.add(i)
        self.catalog = catalog
        return dirty

    def _placed(self, index: Mapping[str, int], dirty: set[int]) -> list[int] | None:
        """Take the table ``index``'s places: the slots of the nodes gone emptied and freed, a slot for
        each node that joined (added to ``dirty``: counted when the session counts), each place's slot.
        The slots whose node is another now (their limits to set: a slot freed has none), or None when
        too many joined or left to count them alone."""
        order = list(index)
        if order == self.order:  # (the same nodes in the same places: another table of them)
            self.table = index
            return []
        slots = self.slots
        gone = [slots[n] for n in slots.keys() - index.keys()]
        came = sorted(index.keys() - slots.keys(), key=index.__getitem__)
        if (len(gone) + len(came)) * _NODES_FULL > len(index):
            return None
        if (len(self.free) + len(gone) - len(came)) * _NODES_FULL > len(index):
            # (past one slot in ``_NODES_FULL`` free once they moved, as nodes leave a few at a time: made
            # anew, compact, where the slots kept the most nodes there ever were, every answer through
            # ``perm``; a full count at most once per a quarter of the nodes gone)
            return None
        for i in sorted(gone):
            node = self.names[i]
            assert node is not None
            del slots[node]
            self.names[i] = None  # (its VolumeAttachments no longer counted there)
            self._empty(i)
            self.held[i] = {}
            bisect.insort(self.free, i)
        joined = sorted(gone)
        grow = 0
        for node in came:
            if self.free:
                i = self.free.pop(0)
                self.names[i] = node
            else:
                i = self.size + grow
                grow += 1
                self.names.append(node)
                self.held.append({})
            slots[node] = i
            joined.append(i)
        if grow:
            self.size += grow
            for counts in (self.attached, self.kept):
                for d, a in counts.items():
                    counts[d] = np.concatenate([a, np.zeros(grow, dtype=np.int64)])
        dirty.update(slots[node] for node in came)
        perm = list(map(slots.__getitem__, order))
        if len(perm) == self.size and perm == list(range(self.size)):
            self.perm = self.place = None
        else:
            self.perm = np.asarray(perm, dtype=np.intp)
            place = [-1] * self.size
            for p, i in enumerate(perm):
                place[i] = p
            self.place = place
        self.table, self.order = index, order
        return joined

    def _limit(self, limits: Mapping[str, Mapping[str, int]], at: Iterable[int]) -> None:
        """Each node's limit at the slots ``at`` as ``limits`` says (-1: none; a free slot's none), in
        new arrays (the old ones are shared with sessions, read-only)."""
        new = {}
        for d, a in self.limits.items():
            b = np.full(self.size, -1, dtype=np.int64)
            b[: len(a)] = a
            new[d] = b
        for i in at:
            node = self.names[i]
            mine = {} if node is None else limits.get(node, {})
            for d, b in new.items():
                b[i] = mine.get(d, -1)
        for b in new.values():
            b.setflags(write=False)
        self.limits = new

    def _reads(self, dirty: set[int]) -> None:
        """What each node's count read, as it was counted (the catalog not yet replaced), but for the
        nodes ``dirty`` (counted again anyway): a node not dirty holds the very dict of tasks it was
        counted from, one the snapshot builder made and nothing changes. Its pods' claims (of every pod
        there that may attach, a few more than were counted: a node counted again for nothing is still
        counted right), their volumes, its VolumeAttachments' volumes."""
        self.read = {}
        claims_of, attached = self.catalog.claims.get, self.catalog.attached
        for i, on_node in enumerate(self.held):
            if i in dirty:
                continue
            read_claims: list[str] = []
            read_volumes: list[str] = []
            for t in on_node.values():
                if (t.claims or t.ephemeral_claims) and t.status in _ATTACHED:
                    _read_claims(t, claims_of, read_claims, read_volumes)
            read_volumes.extend(attached[name][2] for name in self.va_names.get(self.names[i] or "", ()))
            if read_claims or read_volumes:
                self._note(i, read_claims, read_volumes)

    def _empty(self, i: int) -> None:
        """Take out of the counts all that slot ``i`` counted (its pods', its VolumeAttachments') and
        what it read."""
        users, staying, where, leaving = self.users, self.staying, self.where, self.leaving
        for key in self.on.pop(i, ()):
            _, got = where.pop(key)
            _count(users, self.attached, got, i, -1)
            if key in leaving:
                leaving.discard(key)
            else:
                _count(staying, self.kept, got, i, -1)
        for a in self.va.pop(i, ()):
            _count(users, self.attached, (a,), i, -1)
            _count(staying, self.kept, (a,), i, -1)
        read = None if self.read is None else self.read.pop(i, None)
        if read is not None:
            for names, by in ((read[0], self.by_claim), (read[1], self.by_volume)):
                for name in names:
                    _shift(by, name, i, -1)

    def recount(self, i: int, on_node: Mapping[str, Task], state: AttachState) -> None:
        """Slot ``i``'s counts again, from the tasks on its node now (``on_node``) and the catalog."""
        self._empty(i)
        users, staying, where, leaving = self.users, self.staying, self.where, self.leaving
        claims_of = self.catalog.claims.get
        read_claims: list[str] = []
        read_volumes: list[str] = []
        keys = []
        for t in on_node.values():
            if not (t.claims or t.ephemeral_claims or t.inline_volumes) or t.status not in _ATTACHED:
                continue
            key = t.key
            if key in where:
                continue
            _read_claims(t, claims_of, read_claims, read_volumes)
            got = state.of(t)
            if not got:
                continue
            where[key] = (i, got)
            keys.append(key)
            _count(users, self.attached, got, i, 1)
            if t.status is TaskStatus.RELEASING:
                leaving.add(key)
            else:
                _count(staying, self.kept, got, i, 1)
        if keys:
            self.on[i] = keys
        if read_claims:
            self._note(i, read_claims, read_volumes)
        self._count_attached(i)


def _shift(by: dict[str, dict[int, int]], name: str, node: int, delta: int) -> None:
    """Move how many times ``node`` read ``name`` by ``delta`` in the read index ``by``, an entry at
    zero dropped (a name no node reads leaves the index)."""
    at = by.setdefault(name, {})
    now = at.get(node, 0) + delta
    if now:
        at[node] = now
    else:
        del at[node]
        if not at:
            del by[name]


def _read_claims(
    t: Task, claims_of: Callable[[str], VolumeClaim | None], claims: list[str], volumes: list[str]
) -> None:
    """Add to ``claims`` what pod ``t``'s count reads of the catalog: its claims ("ns/name"), and to
    ``volumes`` the volumes they are bound to."""
    for name in task_claims(t):
        ck = f"{t.namespace}/{name}"
        claims.append(ck)
        claim = claims_of(ck)
        if claim is not None and claim.volume:
            volumes.append(claim.volume)


def _drivers(limits: Mapping[str, Mapping[str, int]]) -> set[str]:
    """The drivers some node has a limit for in ``limits``."""
    return {d for by_driver in limits.values() for d in by_driver}


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether ``a`` and ``b`` hold the very same objects under the same keys (in C, mostly)."""
    return a is b or (
        len(a) == len(b) and list(a) == list(b) and all(map(operator.is_, a.values(), b.values()))
    )


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The keys whose object in ``new`` is not the one in ``old`` (added, replaced or gone)."""
    get = old.get
    out = [k for k, v in new.items() if get(k) is not v]
    out.extend(old.keys() - new.keys())
    return out
