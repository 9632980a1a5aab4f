"""Snapshots for sessions, built incrementally from what changed since the last one.

The cache never changes a parsed object in place: an event, an assumed bind or a new priority
replaces the :class:`Task` (or NodeSpec, PodGroupSpec) under its key. So shallow copies of the
cache's dicts, taken under its lock (a :class:`View`, a few milliseconds at 50,000 pods), are a
consistent and immutable view of one instant, and everything else happens outside the lock, while
watch events go on.

:class:`SnapshotBuilder` keeps, from one snapshot to the next, what follows from a task alone: the
task with its volumes' node affinity and its owner's avoided nodes filled in, its request as a
vector over the resource space, the resource names in use, and the node table with nothing held.
An entry is reused while the cache still holds the very same task object (the object is the
version) and what it was prepared from (claims, volumes, avoided nodes, the space) is unchanged.
Every session gets its own copies of the pending tasks, the jobs and the node arrays it may change.
A task that is not pending (bound, running, finished: most of a busy cluster's) is copied once, with
its request vector, and that copy is shared by every snapshot while the cache holds the same task
(``Task.shared``): only an eviction changes such a task in a session, and a session whose actions
may evict takes its own copies first (``ClusterSnapshot.thaw``). What a snapshot shares with the
cache and with other snapshots (those tasks, request vectors, the nodes' allocatable) is read-only,
and a session refuses to change a shared task, so no session can change the cache or another
session's snapshot.

No I/O happens here.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from volsched.model.cluster import (
    ClusterSnapshot,
    NodeTable,
    assemble_snapshot,
    copy_task,
    request_vector,
    resource_names,
)
from volsched.model.resources import ResourceSpace, Vector
from volsched.model.usage import NodeUsage
from volsched.model.vocabulary import NodeSpec, PodGroupSpec, QueueSpec, Task, TaskStatus, placement_key


@dataclass(frozen=True, slots=True)
class View:
    """What the cache holds at one instant (shallow copies taken under its lock)."""

    tasks: dict[str, Task]
    nodes: dict[str, NodeSpec]
    podgroups: dict[str, PodGroupSpec]
    queues: list[QueueSpec]
    namespace_weights: dict[str, int]
    priority_classes: dict[str, int]
    usage: dict[str, NodeUsage]
    #: "ns/claim" -> bound volume name; volume name -> its nodeSelectorTerms; owner -> avoided nodes.
    claims: dict[str, str]
    volumes: dict[str, list[Any]]
    avoid: dict[str, tuple[str, ...]]
    namespace_labels: dict[str, dict[str, str]]


def with_volumes(t: Task, claims: Mapping[str, str], volumes: Mapping[str, list[Any]]) -> Task:
    """``t`` with its claims' bound volumes' node affinity (and missing claims) filled in."""
    terms: list[tuple[str, Any]] = []
    missing: list[str] = []
    for claim in t.claims:
        volume = claims.get(f"{t.namespace}/{claim}")
        if volume is None:
            missing.append(claim)
        elif volume and volumes.get(volume):
            terms.append((volume, volumes[volume]))
    if not terms and not missing:
        return t
    t = replace(t, volume_terms=tuple(terms), missing_claims=tuple(missing))
    t.placement_key = placement_key(t)
    return t


def prepare(t: Task, view: View) -> Task:
    """The task as sessions see it: volumes and avoided nodes filled in (a new object when they change
    anything; ``t`` itself otherwise)."""
    if t.claims:
        t = with_volumes(t, view.claims, view.volumes)
    if view.avoid and t.owner and t.node_name is None:
        avoid = view.avoid.get(t.owner)
        if avoid:
            t = replace(t, avoid_nodes=avoid)
            t.placement_key = placement_key(t)
    return t


class _Entry:
    __slots__ = ("prepared", "shared", "source", "vector")

    def __init__(self, source: Task, prepared: Task) -> None:
        self.source = source
        self.prepared = prepared
        self.vector: Vector | None = None
        #: The task with its request vector, shared by every snapshot while it is not pending.
        self.shared: Task | None = None


def _same_objects(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return len(a) == len(b) and all(b.get(k) is v for k, v in a.items())


class SnapshotBuilder:
    """What carries from one snapshot to the next (see the module docstring). One snapshot at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._names: Counter[str] = Counter()  # resource names over the entries' request maps
        self._claims: dict[str, str] = {}
        self._volumes: dict[str, list[Any]] = {}
        self._avoid: dict[str, tuple[str, ...]] = {}
        self._space: ResourceSpace | None = None
        self._nodes: dict[str, NodeSpec] = {}
        self._table: NodeTable | None = None
        #: How many entries the last :meth:`prepare` made anew (the rest were reused).
        self.rebuilt = 0

    def prepare(self, view: View) -> list[Task]:
        """The view's tasks as sessions see them, in the view's order (shared objects: copy before
        changing one)."""
        with self._lock:
            entries = self._entries
            stale: set[str] = set()
            if view.claims != self._claims or view.volumes != self._volumes:
                stale.update(k for k, e in entries.items() if e.source.claims)
                self._claims, self._volumes = view.claims, view.volumes
            if view.avoid != self._avoid:
                owners = {o for o in {*view.avoid, *self._avoid} if view.avoid.get(o) != self._avoid.get(o)}
                stale.update(k for k, e in entries.items() if e.source.owner in owners)
                self._avoid = view.avoid
            for key in entries.keys() - view.tasks.keys():
                self._forget(key)
            out: list[Task] = []
            rebuilt = 0
            for key, task in view.tasks.items():
                entry = entries.get(key)
                if entry is None or entry.source is not task or key in stale:
                    if entry is not None:
                        self._forget(key)
                    entry = entries[key] = _Entry(task, prepare(task, view))
                    self._names.update(task.request_map.keys())
                    rebuilt += 1
                out.append(entry.prepared)
            self.rebuilt = rebuilt
            return out

    def _forget(self, key: str) -> None:
        entry = self._entries.pop(key)
        self._names.subtract(entry.source.request_map.keys())
        for name in entry.source.request_map:
            if self._names[name] <= 0:
                del self._names[name]

    def build(
        self,
        view: View,
        *,
        podgroups: Iterable[PodGroupSpec],
        now: float,
        carryover: dict[str, Any],
    ) -> ClusterSnapshot:
        """A session's snapshot of ``view`` (after :meth:`prepare` of the same view)."""
        with self._lock:
            pg_list = list(podgroups)
            names = set(self._names)
            for n in view.nodes.values():
                names.update(n.allocatable)
            names.update(resource_names(view.queues, pg_list))
            space = ResourceSpace(names)
            if self._space is None or space.names != self._space.names:
                self._space, self._table = space, None
                for entry in self._entries.values():
                    entry.vector = entry.shared = None
            space = self._space
            if self._table is None or not _same_objects(view.nodes, self._nodes):
                self._table = NodeTable(space, view.nodes.values())
                self._nodes = view.nodes
            tasks: list[Task] = []
            entries = self._entries
            for key in view.tasks:
                entry = entries[key]
                t = entry.shared
                if t is None:
                    if entry.vector is None:
                        entry.vector = request_vector(space, entry.prepared)
                    t = copy_task(entry.prepared)
                    t.request = entry.vector
                    if t.status is not TaskStatus.PENDING:  # only a session's evictions change it
                        t.shared = True
                        entry.shared = t
                tasks.append(t)
            table = self._table.fresh()
        return assemble_snapshot(
            space=space,
            table=table,
            tasks=tasks,
            podgroups=pg_list,
            queues=view.queues,
            namespace_weights=view.namespace_weights,
            priority_classes=view.priority_classes,
            usage=view.usage,
            now=now,
            carryover=carryover,
            namespace_labels=view.namespace_labels,
        )
