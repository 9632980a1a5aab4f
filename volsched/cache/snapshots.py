"""Snapshots for sessions, built incrementally from what changed since the last one.

:class:`SnapshotBuilder` keeps, from one snapshot to the next, what follows from a task alone and reuses
it while the cache holds the same task object; it shares tasks that are not pending between snapshots
(read-only), lends jobs whose every task is pending to one session, and gives every session its own
copies of what it may change, so no session can change the cache or another session's snapshot. A
:class:`View` is the cache's state at one instant, taken under its lock; the rest happens outside it.
No I/O happens here. Shared, lent, thaw and kept: docs/design/steady-state.md.
"""

from __future__ import annotations

import collections
import itertools
import json
import operator
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field, replace
from typing import Any

import numpy as np

from volsched.cache import orphans
from volsched.cache.names import SHADOWED, came_first, named_by, shadow_refusal, taken
from volsched.model.admitted import BoundUnder
from volsched.model.attach import AttachCatalog, carry_counts
from volsched.model.cluster import (
    RETURNED,
    ClusterSnapshot,
    Job,
    NodeTable,
    TaskCounts,
    assemble_job,
    copy_task,
    held_on_node,
    lone_job,
    lone_jobs,
    own_job,
    request_vector,
    resolve_guarantees,
    resource_names,
)
from volsched.model.devices import (
    Claim,
    DeviceCatalog,
    DeviceClass,
    DeviceSlice,
    device_resource,
    usable_devices,
)
from volsched.model.resources import ResourceSpace, Vector
from volsched.model.usage import NodeUsage
from volsched.model.vocabulary import (
    DEFAULT_QUEUE,
    DisruptionBudget,
    NodeSpec,
    PodGroupPhase,
    PodGroupSpec,
    QueueSpec,
    Task,
    TaskStatus,
    by_age,
    placement_key,
)
from volsched.model.volumes import (
    PersistentVolumeSpec,
    StorageCapacity,
    StorageClassSpec,
    VolumeCatalog,
    VolumeClaim,
)
from volsched.records import dataclass


@dataclass(slots=True)
class View:
    """What the cache holds at one instant (shallow copies taken under its lock; the tasks and their
    order are the cache's copies kept from one snapshot to the next and brought up to date from what
    changed, which nothing but the next snapshot changes: a View is good until then). Nothing writes
    to a View once made; it is not frozen only because a frozen class's ``__init__`` stores each field
    through ``object.__setattr__``, a cost every snapshot paid (an arriving pod's on its way to its bind)."""

    tasks: dict[str, Task]
    nodes: dict[str, NodeSpec]
    podgroups: dict[str, PodGroupSpec]
    queues: list[QueueSpec]
    namespace_weights: dict[str, int]
    priority_classes: dict[str, int]
    usage: dict[str, NodeUsage]
    #: Owner -> avoided nodes.
    avoid: dict[str, tuple[str, ...]]
    namespace_labels: dict[str, dict[str, str]]
    #: Task key -> its place in ``tasks``' order (ascending, not necessarily consecutive). It may be
    #: the same mapping as the previous view's, brought up to date (see ``renumbered``).
    seq: Mapping[str, int]
    #: Keys whose task was added, replaced or deleted since the previous view of the same builder;
    #: None: not known (every task is compared).
    touched: set[str] | None = None
    #: "ns/name" -> PodDisruptionBudget (immutable: shared with the cache).
    budgets: Mapping[str, DisruptionBudget] = field(default_factory=dict)
    #: Dynamic Resource Allocation: DeviceClasses by name, ResourceSlices by name, ResourceClaims by
    #: "ns/name" (immutable: shared with the cache).
    device_classes: Mapping[str, DeviceClass] = field(default_factory=dict)
    slices: Mapping[str, DeviceSlice] = field(default_factory=dict)
    resource_claims: Mapping[str, Claim] = field(default_factory=dict)
    #: Keys that took a new place in ``seq`` since the previous view of the same builder (deleted and
    #: added again); None: not known, and the builder reads the whole view (as when ``touched`` is
    #: None: ``seq`` may be the previous view's mapping brought up to date, with nothing to compare).
    renumbered: set[str] | None = None
    #: Namespace -> the queue its jobs go to when they name none, or ``default``.
    namespace_queues: Mapping[str, str] = field(default_factory=dict)
    #: What volume binding reads: claims by "ns/name", volumes and StorageClasses by name (immutable:
    #: shared with the cache).
    volume_claims: Mapping[str, VolumeClaim] = field(default_factory=dict)
    pv_specs: Mapping[str, PersistentVolumeSpec] = field(default_factory=dict)
    storage_classes: Mapping[str, StorageClassSpec] = field(default_factory=dict)
    #: CSINode (its node's name) -> driver -> how many of its volumes the node may have attached.
    attach_limits: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: VolumeAttachments by name: (node, attacher, PersistentVolume).
    volume_attachments: Mapping[str, tuple[str, str, str]] = field(default_factory=dict)
    #: CSIStorageCapacities by "ns/name", and the drivers whose CSIDriver says ``storageCapacity: true``.
    storage_capacities: Mapping[str, StorageCapacity] = field(default_factory=dict)
    capacity_drivers: frozenset[str] = frozenset()


def with_volumes(
    t: Task,
    volume_claims: Mapping[str, VolumeClaim],
    volumes: Mapping[str, PersistentVolumeSpec],
    classes: Mapping[str, StorageClassSpec],
) -> Task:
    """``t`` with its claims' bound volumes' node affinity (and missing and unbound claims) filled in:
    an unbound claim of a WaitForFirstConsumer class is the session's to bind (``bind_claims``), any other
    waits for the PersistentVolume controller."""
    terms: list[tuple[str, Any]] = []
    missing: list[str] = []
    unbound: list[str] = []
    to_bind: list[str] = []
    foreign: list[str] = []
    for claim in (*t.claims, *t.ephemeral_claims) if t.ephemeral_claims else t.claims:
        key = f"{t.namespace}/{claim}"
        pvc = volume_claims.get(key)
        if pvc is None:
            missing.append(claim)
        elif t.ephemeral_claims and claim in t.ephemeral_claims and pvc.controller_uid != t.uid:
            foreign.append(claim)  # an ephemeral volume's claim is the pod's own, or none (as kube-scheduler)
        elif not pvc.volume:
            cls = classes.get(pvc.storage_class)
            if cls is not None and cls.wait_for_consumer and not pvc.deleting:
                to_bind.append(claim)
            else:
                unbound.append(claim)
        elif (pv := volumes.get(pvc.volume)) is not None and pv.node_terms:
            terms.append((pvc.volume, list(pv.node_terms)))
    if not terms and not missing and not unbound and not to_bind and not foreign:
        return t
    t = replace(
        t,
        volume_terms=tuple(terms),
        missing_claims=tuple(missing),
        unbound_claims=tuple(unbound),
        bind_claims=tuple(dict.fromkeys(to_bind)),
        foreign_claims=tuple(foreign),
    )
    t.placement_key = placement_key(t)
    return t


def with_device_key(t: Task, claims: Mapping[str, Claim]) -> Task:
    """``t`` with the key its ResourceClaims give node filters (``Task.device_key``): a claim made for
    this pod alone from a template and not allocated yet counts by its shape (the pods of one Job share
    their views of the nodes); any other claim (one several pods may share, or allocated) by its name."""
    parts: list[str] = []
    devices: dict[str, float] = {}
    for pc in t.resource_claims:
        claim = claims.get(f"{t.namespace}/{pc.claim}") if pc.claim else None
        if claim is not None and pc.template and claim.allocation is None:
            parts.append(claim.signature)
        else:
            parts.append(f"{t.namespace}/{pc.claim or ('template ' + pc.template)}")
        # What queues count: the devices of each class the claim asks for (All as one), by the pod, or
        # for a claim several pods may share and that is allocated, by the first pod it is reserved for.
        if claim is not None and (claim.allocation is None or claim.reserved_for[:1] in ((), (t.uid,))):
            for r in claim.requests:
                name = device_resource(r.device_class)
                devices[name] = devices.get(name, 0.0) + (1.0 if r.all else float(r.count))
    t = copy_task(t)  # (field by field: dataclasses.replace costs several times more)
    if devices:
        t.request_map = {**t.request_map, **{k: t.request_map.get(k, 0.0) + v for k, v in devices.items()}}
    t.device_key = sys.intern(json.dumps(parts))
    t.placement_key = placement_key(t)
    return t


def prepare(t: Task, view: View) -> Task:
    """The task as sessions see it: volumes, device claims and avoided nodes filled in (a new object
    when they change anything; ``t`` itself otherwise)."""
    if t.claims or t.ephemeral_claims:
        t = with_volumes(t, view.volume_claims, view.pv_specs, view.storage_classes)
    if t.resource_claims:
        t = with_device_key(t, view.resource_claims)
    if view.avoid and t.owner and t.node_name is None:
        avoid = view.avoid.get(t.owner)
        if avoid:
            t = replace(t, avoid_nodes=avoid)
            t.placement_key = placement_key(t)
    return t


#: Up to this many entries made anew, :meth:`SnapshotBuilder._refresh` counts their resource names one by one.
_FEW_MADE = 8


class _Entry:
    __slots__ = ("foreign", "orphan", "prepared", "shared", "source", "vector")

    def __init__(self, source: Task, prepared: Task) -> None:
        self.source = source
        self.prepared = prepared
        self.vector: Vector | None = None
        #: The task with its request vector, shared by every snapshot while it is not pending.
        self.shared: Task | None = None
        #: For a pod of ours taken as foreign (a stray: see ``_Base.stray``), the shared task as not
        #: ours (``Task.ours`` False), made when first asked for.
        self.foreign: Task | None = None
        #: For an orphan (a stray with a record: see ``_Base.orphan``), the shared task as a pod standing
        #: alone (``orphans.orphan_task``), made when first asked for, with where it stands (made again
        #: when that changes).
        self.orphan: tuple[orphans.Standing, Task] | None = None


class _Base:
    """What the last snapshot was assembled from, kept to assemble the next one from what changed: the
    jobs, the foreign tasks and what every node holds (all shared, read-only), with indexes."""

    def __init__(
        self,
        space: ResourceSpace,
        podgroups: dict[str, PodGroupSpec],
        priority_classes: dict[str, int],
        namespace_queues: Mapping[str, str] | None = None,
    ) -> None:
        self.space = space
        #: The PodGroups that are jobs: the build's, but those a pod standing alone of their name takes
        #: (``shadowed``), in the build's order; and every PodGroup of the build, those included.
        self.podgroups = podgroups
        self.all_podgroups: dict[str, PodGroupSpec] = podgroups
        #: The keys of the PodGroups whose key is a pod standing alone's (``Task.standing_alone``, ours, made
        #: before the PodGroup) or an orphan's, which the pod keeps: a PodGroup of that name is taken by
        #: none while the pod exists (its pods are a missing group's: they wait, or on a node are strays),
        #: and is told why (``shadow_refusal``). See ``volsched.cache.names``.
        self.shadowed: dict[str, None] = {}
        #: The PodGroup keys whose task may keep its PodGroup from being a job (``named_by``): True, a pod
        #: standing alone; False, a pod that is an orphan once its own group is no job.
        self.named: dict[str, bool] = {}
        self.priority_classes = priority_classes
        #: Namespace -> its default queue: a job of it in queue ``default`` goes there (``_placed``).
        self.namespace_queues: Mapping[str, str] = dict(namespace_queues or {})
        self.jobs: dict[str, Job] = {}
        #: The jobs of the PodGroups, by key, in the order of the last build's PodGroups (None: made
        #: again by the next build): kept up to date as jobs are made again, so that a build whose
        #: PodGroups come in the same order copies it (one copy in C), not 1,000+ lookups into a new dict.
        self.grouped: dict[str, Job] | None = None
        #: Job key -> the keys of the tasks ours to schedule that name it.
        self.members: dict[str, dict[str, None]] = {}
        #: Job key -> (task key, problem) for its members while it does not exist.
        self.problems: dict[str, list[tuple[str, tuple[str, str, str]]]] = {}
        #: Jobs with no PodGroup (key -> job) in the cache's order of their keys, as a snapshot lists them,
        #: kept in that order from one build to the next: a job assembled again keeps its place, and only
        #: the ones in ``unplaced`` are put in theirs (a steady state's 50,000 bound one-pod jobs are
        #: neither sorted nor gathered again every session).
        self.standalone: dict[str, Job] = {}
        #: Jobs with no PodGroup not in ``standalone`` yet (new ones, and those whose pod entered the
        #: cache again), in the order they came (an insertion-ordered dict, not a set: nearly in the
        #: cache's order already, so a build sorts 50,000 of them in a fifth of a set's time).
        self.unplaced: dict[str, None] = {}
        #: Jobs a session may change (pending tasks to place, a phase to admit): each gets its own copy.
        self.private: set[str] = set()
        #: Private jobs whose every task is pending, assembled for one session only and handed to it as
        #: they are (no copy: their tasks are the session's own); the next build assembles them again.
        self.lent: set[str] = set()
        self.foreign: dict[str, None] = {}
        self.foreign_list: list[Task] = []
        #: Strays: task key -> its job key, for each pod of ours on a node whose job key names no
        #: PodGroup (deleted while it ran, never made, or a group annotation no PodGroup can answer) and
        #: is not its own. Each is taken as foreign (see :func:`_stray`), or as its own job when it is an
        #: orphan (below), indexed again when its group appears, as a group's members with a node are
        #: when it goes.
        self.stray: dict[str, str] = {}
        #: The strays that hold their node and carry the record their bind wrote (orphans), with where
        #: each stands: a pod standing alone (its own job) in the queue it was bound under, or, its queue's
        #: rules refusing the record, its namespace's default queue (``volsched.cache.orphans``).
        self.orphan: dict[str, orphans.Standing] = {}
        #: Orphan key -> what its standing was decided from, by identity: its record's Queue (None: none)
        #: and its namespace's labels (None: none). Decided again when either is another object.
        self.orphan_from: dict[str, tuple[QueueSpec | None, Mapping[str, str] | None]] = {}
        #: The view's Queues and namespace labels, which orphans are decided from (set by every build;
        #: the Queues by name made when an orphan first asks, once a build).
        self.queue_list: list[QueueSpec] = []
        self.queue_names: dict[str, QueueSpec] | None = None
        self.labels: Mapping[str, Mapping[str, str]] = {}
        #: Node name -> the keys of the tasks on it (whatever their status).
        self.on_node: dict[str, dict[str, None]] = {}
        #: Task key -> (its job's key, None for a foreign task; its node).
        self.where: dict[str, tuple[str | None, str | None]] = {}
        self.idle: Vector = np.zeros((0, 0))
        self.score_extra: Vector = np.zeros((0, 2))
        self.incoming: Vector = np.zeros((0, 0))
        self.releasing: np.ndarray[Any, np.dtype[np.intp]] = np.zeros(0, dtype=np.intp)
        self.held: list[dict[str, Task]] = []


#: Past one node in this many changed since the last snapshot, what every node holds is summed again.
_NODES_FULL = 4
#: A PodGroup's (or a job's) key.
_KEY: operator.attrgetter[str] = operator.attrgetter("key")

#: At most this many request vectors are kept for reuse (pods' distinct requests; past it, they start over).
_VECTORS_KEPT = 4096


def _placed(base: _Base, job: Job) -> None:
    """A job just assembled that names no queue (queue ``default``) goes to its namespace's default
    queue, when the namespace names one (see docs/tenancy.md)."""
    if job.queue == DEFAULT_QUEUE:
        job.queue = base.namespace_queues.get(job.namespace, DEFAULT_QUEUE)


def _stray(t: Task, key: str, podgroups: Mapping[str, PodGroupSpec]) -> bool:
    """Whether pod ``t`` of ours (``key``: its key) is a stray: on a node (bound, running, finished)
    while its job key names no PodGroup and is not its own. It is in no job, and it is taken as a
    foreign task: it holds its room on its node and its place among the pods others' constraints see,
    and no action takes it for a gang's (none evicts it, none counts it in a queue), as Volcano's cache
    counts such a pod on its node and its actions skip a pod whose job the session lacks. One that holds
    its node is an orphan instead, a pod standing alone (``volsched.cache.orphans``): in the queue it was
    bound under when it carries the record its bind wrote, else in its namespace's default queue at its
    own priority (``orphans.NO_RECORD``). A pod of a missing group still without a node stays a member of
    that job key: a problem, told why (PodGroupNotFound). docs/design/steady-state.md."""
    return bool(t.node_name) and t.job_key != key and t.job_key not in podgroups


_NODE_OF: operator.itemgetter[int] = operator.itemgetter(1)  # (of a task's place: its node)
_PREPARED_STATUS: operator.attrgetter[TaskStatus] = operator.attrgetter("prepared.status")
_TASKS: operator.attrgetter[dict[str, Task]] = operator.attrgetter("tasks")
_STATUS: operator.attrgetter[TaskStatus] = operator.attrgetter("status")
_NODE_NAME: operator.attrgetter[str | None] = operator.attrgetter("node_name")
_COUNTS: operator.attrgetter[Mapping[TaskStatus, int]] = operator.attrgetter("status_count")
_READY: operator.attrgetter[int] = operator.attrgetter("ready")


def _all_back(base: _Base, keys: list[str], returned: Mapping[str, Job]) -> bool:
    """:func:`_taken_back` of every one of ``keys`` at once, each test one pass in C over them all (a
    session's thousands of pods set aside): True when every job is taken back (then each is reset);
    False, and nothing done, when any is not (the caller then asks key by key)."""
    is_ = operator.is_
    jobs = list(map(returned.get, keys))
    if not all(map(is_, jobs, map(base.jobs.__getitem__, keys))):
        return False
    tasks = list(map(dict.__getitem__, map(_TASKS, jobs), keys))
    if not (
        all(map(is_, map(_STATUS, tasks), itertools.repeat(TaskStatus.PENDING)))
        and all(map(is_, map(_NODE_NAME, tasks), itertools.repeat(None)))
        and all(map((1).__eq__, map(len, map(_COUNTS, jobs))))
        and not any(map(_READY, jobs))
    ):
        return False
    for name, value in (("phase", PodGroupPhase.PENDING), ("_scheduled", None), ("origin", None)):
        collections.deque(map(setattr, jobs, itertools.repeat(name), itertools.repeat(value)), maxlen=0)
    collections.deque(map(setattr, jobs, itertools.repeat("memo"), [{} for _ in jobs]), maxlen=0)
    return True


def _taken_back(job: Job, key: str) -> bool:
    """Whether ``job``, the job of a pending pod standing alone (``key``) that the last snapshot lent
    and the last session closed with, is as it was lent, but for what a lend again resets: its pod's
    copy still pending on no node (a session changes a pending pod's copy by these alone), its counts
    one pending pod's (no status it passed through left at zero), none of it ready. Then its
    ``allocated`` is zero again (each status it passed through added and took away the same request),
    and it is reset (its phase Pending, no memo, no count kept, no origin) and returned True: it holds
    what :func:`~volsched.model.cluster.lone_jobs` would make anew of the same entry (untouched since,
    so the very same task and request vector), for the next session."""
    t = job.tasks[key]
    if (
        t.status is not TaskStatus.PENDING
        or t.node_name is not None
        or len(job.status_count) != 1
        or job.ready
    ):
        return False
    job.phase = PodGroupPhase.PENDING
    job._scheduled = None
    job.memo = {}
    job.origin = None
    return True


def _group_taken_back(job: Job, pg: PodGroupSpec, members: Mapping[str, None], space: ResourceSpace) -> bool:
    """Whether ``job``, the job of PodGroup ``pg`` that the last snapshot lent (every member pending) and
    the last session closed with, is as it was lent, but for what a lend again resets: its members
    (``members``, in the cache's order: untouched, the same entries, so the very same task copies) each
    still pending on no node (a session changes a pending pod's copy by these alone), none of it ready.
    Then it is reset to what :func:`~volsched.model.cluster.assemble_job` makes anew of ``pg`` and the
    same entries (its phase ``pg``'s, its counts the pending members', nothing held, no memo, no count
    kept, no origin; ``pg`` itself, equal to the one it holds) and True is returned."""
    tasks = job.tasks
    if job.podgroup is None or job.ready or len(tasks) != len(members):
        return False
    pending = TaskStatus.PENDING
    for key, t in tasks.items():
        if t.status is not pending or t.node_name is not None or key not in members:
            return False
    if len(job.status_count) != 1:
        # Statuses passed through, left at zero; and what it holds may not be zero again (float dust
        # of placements undone: 0.1 + 0.2 - 0.2 - 0.1 is not 0). With one status, it never held any.
        job.status_count = TaskCounts({pending: len(tasks)})
        job.allocated = space.zeros()
    job.podgroup = pg
    job.phase = pg.phase
    job._scheduled = None
    job.memo = {}
    job.origin = None
    return True


#: No members.
_NONE: Mapping[str, None] = {}


def _same_objects(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether ``a`` and ``b`` hold the very same objects under the same keys in the same order (a
    comparison in C: 5,000 nodes every session; the same objects in another order count as a change)."""
    return len(a) == len(b) and list(a) == list(b) and all(map(operator.is_, a.values(), b.values()))


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The keys whose object in ``new`` is not the one in ``old`` (added, replaced or gone)."""
    get = old.get
    out = [k for k, v in new.items() if get(k) is not v]
    out.extend(old.keys() - new.keys())
    return out


def _standalone(base: _Base, key: str, job: Job) -> None:
    """Job ``key`` with no PodGroup is ``job`` now: in its place if it has one, else to be placed."""
    standalone = base.standalone
    if key in standalone:
        standalone[key] = job
    else:
        base.unplaced[key] = None


def _place(base: _Base, pos: Callable[[str], int]) -> None:
    """Put the base's unplaced jobs with no PodGroup in their place in ``standalone`` (the cache's order
    of their keys, ``pos``): after the others when they all come later (new pods), else all sorted again."""
    if not base.unplaced:
        return
    new = list(base.unplaced)
    base.unplaced = {}
    at = list(map(pos, new))
    if not all(map(operator.lt, at, itertools.islice(at, 1, None))):  # (a build from scratch: in order)
        new.sort(key=pos)
    standalone, jobs = base.standalone, base.jobs
    if standalone and pos(next(reversed(standalone))) > pos(new[0]):
        keys = sorted([*standalone, *new], key=pos)
        base.standalone = dict(zip(keys, map(jobs.__getitem__, keys), strict=True))
    else:
        standalone.update(zip(new, map(jobs.__getitem__, new), strict=True))


class SnapshotBuilder:
    """What carries from one snapshot to the next (see the module docstring). One snapshot at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._names: dict[str, int] = {}  # resource names over the entries' request maps, counted
        #: Request map (as items) -> its read-only vector over the current space: most pods share a
        #: handful of requests, so a snapshot of a backlog makes a handful of vectors, not one per pod.
        self._vectors: dict[tuple[tuple[str, float], ...], Vector] = {}
        self._volume_claims: Mapping[str, VolumeClaim] = {}
        self._volumes: Mapping[str, PersistentVolumeSpec] = {}
        self._classes: Mapping[str, StorageClassSpec] = {}
        #: Claim ("ns/name") -> the keys of the entries whose task mounts it; volume -> the claims of the
        #: last view bound to it (``_stale_by_volumes``).
        self._mounting: dict[str, dict[str, None]] = {}
        self._claims_of_volume: dict[str, dict[str, None]] = {}
        self._avoid: dict[str, tuple[str, ...]] = {}
        self._resource_claims: Mapping[str, Claim] = {}
        #: The device catalog and what it was made from (slices, classes, the node table).
        self._catalog: DeviceCatalog | None = None
        self._catalog_from: tuple[
            Mapping[str, DeviceSlice], Mapping[str, DeviceClass], Mapping[str, NodeSpec]
        ] = (
            {},
            {},
            {},
        )
        #: The nodes with their devices counted (see ``_with_devices``), and what they were made from.
        self._devices_on_nodes: tuple[
            Mapping[str, NodeSpec], DeviceCatalog | None, Mapping[str, NodeSpec]
        ] = (
            {},
            None,
            {},
        )
        self._space: ResourceSpace | None = None
        #: The resource names the last space was asked for (``build``).
        self._space_from: set[str] = set()
        self._nodes: Mapping[str, NodeSpec] = {}
        self._node_names: set[str] = set()  # the resource names ``_nodes``' allocatable mentions
        self._table: NodeTable | None = None
        self._base: _Base | None = None
        #: Keys whose entry was made anew or dropped since the last build.
        self._changed: set[str] = set()
        #: Tasks ours to schedule with a controller owner, by job key (an owner's group): the keys, the
        #: group of each key, the groups changed since the last ``owner_groups``, and each group's
        #: first place in the cache's order and oldest task.
        self._owners: dict[str, dict[str, None]] = {}
        self._owner_of: dict[str, str] = {}
        self._owners_changed: set[str] = set()
        self._owner_first: dict[str, tuple[int, Task]] = {}
        #: How many entries the last :meth:`prepare` made anew (the rest were reused).
        self.rebuilt = 0
        #: The last :meth:`prepare` read the whole view (no change log: the cache's order may be new).
        self._read_all = True
        #: Handed to every snapshot as ``ClusterSnapshot.kept`` (what sessions derive from shared jobs).
        self.kept: dict[str, Any] = {}
        #: How many snapshots it built (``ClusterSnapshot.built``).
        self._builds = 0
        #: Pod uid -> the keys of the entries of that uid (one, but for a uid two pods claim): which pods
        #: of a snapshot the uids ResourceClaims are reserved for are (``_reserved_live``).
        self._uids: dict[str, dict[str, None]] = {}
        #: The jobs the last session closed with (``ClusterSnapshot.kept[RETURNED]``, taken by each build),
        #: and the namespaces' default queues the pods standing alone lent last were placed under
        #: (:meth:`_lend_again` takes such jobs back).
        self._returned: Mapping[str, Job] | None = None
        self._lent_under: Mapping[str, str] = {}
        #: The keys :meth:`_lend_again` lent again last (of the base: none once it is built anew).
        self._again: set[str] = set()
        #: What the work done ahead since the last build (:meth:`ahead`) leaves the next build: the keys
        #: of the jobs it found touched (None: not known, the base built anew), and whether it read a
        #: view whole (the cache's order may be new).
        self._ahead_touched: set[str] | None = set()
        self._ahead_read_all = False

    def _stale_by_volumes(self, view: View) -> set[str]:
        """The entries whose claims' view changed since the last view: a claim of theirs (anything of
        it: bound, deleting, its class), the node affinity of a volume one of them is bound to (before
        or now), or any StorageClass. Found from the claims and volumes that are other objects than the
        last view's (the cache keeps an unchanged one's object) and the entries that mount each claim,
        not by comparing every claim and volume and reading every entry."""
        old, new = self._volume_claims, view.volume_claims
        by_volume = self._claims_of_volume
        moved: set[str] = set()
        changed = _changed(old, new) if old is not new else []
        for k in changed:
            was, now = old.get(k), new.get(k)
            if was == now:
                continue
            moved.add(k)
            if was is not None and was.volume:
                on = by_volume[was.volume]
                del on[k]
                if not on:
                    del by_volume[was.volume]
            if now is not None and now.volume:
                by_volume.setdefault(now.volume, {})[k] = None
        mounting = self._mounting
        if not mounting:
            return set()
        if view.storage_classes != self._classes:
            return {k for keys in mounting.values() for k in keys}
        old_pv, new_pv = self._volumes, view.pv_specs
        if old_pv is not new_pv:
            for n in _changed(old_pv, new_pv):
                if getattr(old_pv.get(n), "node_terms", None) != getattr(new_pv.get(n), "node_terms", None):
                    # the claims bound to that volume, before or now (the index holds now's; before's are
                    # now's but for the claims moved, which are in ``moved`` already)
                    moved.update(by_volume.get(n, ()))
        return {k for c in moved for k in mounting.get(c, ())}

    def prepare(self, view: View) -> None:
        """Bring the entries to the view's tasks (as sessions see them)."""
        with self._lock:
            entries = self._entries
            stale: set[str] = set()
            if (
                view.volume_claims is not self._volume_claims
                or view.pv_specs is not self._volumes
                or view.storage_classes is not self._classes
            ):
                stale.update(self._stale_by_volumes(view))
                self._volume_claims, self._volumes = view.volume_claims, view.pv_specs
                self._classes = view.storage_classes
            if view.avoid != self._avoid:
                owners = {o for o in {*view.avoid, *self._avoid} if view.avoid.get(o) != self._avoid.get(o)}
                stale.update(k for k, e in entries.items() if e.source.owner in owners)
                self._avoid = view.avoid
            if not _same_objects(view.resource_claims, self._resource_claims):
                old, new = self._resource_claims, view.resource_claims
                moved = {k for k in old.keys() | new.keys() if old.get(k) is not new.get(k)}
                stale.update(
                    k
                    for k, e in entries.items()
                    if e.source.resource_claims
                    and any(f"{e.source.namespace}/{pc.claim}" in moved for pc in e.source.resource_claims)
                )
                self._resource_claims = new
            touched = view.touched if view.renumbered is not None else None
            if touched is not None:
                for key in touched:
                    if key in entries and key not in view.tasks:
                        self._forget(key)
                rebuilt = self._refresh(view, touched | stale, stale)
                if len(entries) != len(view.tasks):  # the view is not the one after the last: read it all
                    touched = None
            if touched is None:
                # No change log: the cache's order may be numbered anew (the table replaced whole), so
                # every owner's group takes its place again, not only the groups whose tasks changed.
                self._owners_changed.update(self._owners)
                for key in entries.keys() - view.tasks.keys():
                    self._forget(key)
                rebuilt = self._refresh(view, view.tasks.keys(), stale)
            self.rebuilt = rebuilt
            self._read_all = touched is None

    def _refresh(self, view: View, keys: Iterable[str], stale: set[str]) -> int:
        """Make the entries of ``keys`` anew where the view holds another task (or it is ``stale``)."""
        entries, tasks, changed = self._entries, view.tasks, self._changed
        made: list[Task] = []  # the tasks of the entries made anew, whose resource names count
        for key in keys:
            task = tasks.get(key)
            if task is None:
                continue
            entry = entries.get(key)
            if entry is None or entry.source is not task or key in stale:
                if entry is not None:
                    self._forget(key)
                entry = entries[key] = _Entry(task, prepare(task, view))
                changed.add(key)
                self._uids.setdefault(task.uid, {})[key] = None
                if task.claims or task.ephemeral_claims:
                    for claim in (*task.claims, *task.ephemeral_claims):
                        self._mounting.setdefault(f"{task.namespace}/{claim}", {})[key] = None
                t = entry.prepared
                if t.owner_ref is not None and t.schedulable_by_us:
                    self._owners.setdefault(t.job_key, {})[key] = None
                    self._owner_of[key] = t.job_key
                    self._owners_changed.add(t.job_key)
                made.append(entry.prepared)
        names = self._names
        if len(made) > _FEW_MADE:  # counted in C (a first snapshot: 50,000 tasks of a few names each)
            for name, n in Counter(itertools.chain.from_iterable(t.request_map for t in made)).items():
                names[name] = names.get(name, 0) + n
        else:  # (a pod or two since the last snapshot: the same counts, without a Counter's making)
            for t in made:
                for name in t.request_map:
                    names[name] = names.get(name, 0) + 1
        return len(made)

    def _forget(self, key: str) -> None:
        entry = self._entries.pop(key)
        self._changed.add(key)
        same_uid = self._uids[entry.source.uid]
        del same_uid[key]
        if not same_uid:
            del self._uids[entry.source.uid]
        source = entry.source
        if source.claims or source.ephemeral_claims:
            for claim in (*source.claims, *source.ephemeral_claims):
                mounting = self._mounting.get(f"{source.namespace}/{claim}")
                if mounting is not None:
                    mounting.pop(key, None)
                    if not mounting:
                        del self._mounting[f"{source.namespace}/{claim}"]
        owner = self._owner_of.pop(key, None)
        if owner is not None:
            members = self._owners[owner]
            del members[key]
            if not members:
                del self._owners[owner]
            self._owners_changed.add(owner)
        names = self._names
        for name in entry.prepared.request_map:
            left = names[name] - 1
            if left:
                names[name] = left
            else:
                del names[name]

    def owner_groups(self, view: View) -> list[tuple[str, Task]]:
        """The groups of tasks ours to schedule that a controller owns and whose job key names no
        PodGroup of the view, with each group's oldest task, in the order their first task stands in
        the cache (after :meth:`prepare` of the same view)."""
        with self._lock:
            for job_key in self._owners_changed:
                keys = self._owners.get(job_key)
                if not keys:
                    self._owner_first.pop(job_key, None)
                    continue
                members = [self._entries[k].prepared for k in keys]
                # The oldest (in one namespace, by key is by name): what its derived PodGroup is made from.
                oldest = min(members, key=by_age) if len(members) > 1 else members[0]
                self._owner_first[job_key] = (min(view.seq[k] for k in keys), oldest)
            self._owners_changed.clear()
            ordered = sorted(self._owner_first.items(), key=lambda kv: kv[1][0])
            return [(key, first) for key, (_, first) in ordered if key not in view.podgroups]

    def owner_holds_node(self, job_key: str) -> bool:
        """Whether a pod of the owner's group ``job_key`` (see :meth:`owner_groups`) has a node."""
        with self._lock:
            entries = self._entries
            return any(entries[k].prepared.node_name for k in self._owners.get(job_key, ()))

    def _task(self, key: str) -> Task:
        """The shared task of entry ``key``, with its request over the current space."""
        entry = self._entries[key]
        t = entry.shared
        if t is None:
            assert self._space is not None
            if entry.vector is None:
                entry.vector = self._vector(entry.prepared)
            t = copy_task(entry.prepared)
            t.request = entry.vector
            t.shared = True
            entry.shared = t
        return t

    def _foreign(self, key: str) -> Task:
        """The shared task of entry ``key`` as a foreign task: :meth:`_task`, or for a stray of ours, a
        copy of it that is not ours (``Task.ours`` False: no action schedules, evicts or counts it)."""
        t = self._task(key)
        if not t.schedulable_by_us:
            return t
        entry = self._entries[key]
        out = entry.foreign
        if out is None:
            out = entry.foreign = copy_task(t)
            out.ours = False
        return out

    def orphan_standing(self, key: str) -> orphans.Standing | None:
        """Where orphan ``key`` stood in the last build (None: it was no orphan), what its problem told
        (``orphans.problem``): the cache tells it again of a group it refused."""
        base = self._base
        return None if base is None else base.orphan.get(key)

    def _prepared(self, key: str) -> Task:
        """The prepared task of entry ``key`` (one there is)."""
        return self._entries[key].prepared

    def _prepared_at(self, key: str) -> Task | None:
        """The prepared task of entry ``key``, or None when there is none."""
        entry = self._entries.get(key)
        return None if entry is None else entry.prepared

    def _orphan(self, key: str, where: orphans.Standing) -> Task:
        """The shared task of orphan ``key`` (standing ``where``) as a pod standing alone."""
        entry = self._entries[key]
        made = entry.orphan
        if made is None or made[0] != where:
            made = entry.orphan = (where, orphans.orphan_task(self._task(key), where))
        return made[1]

    def _standing(self, base: _Base, key: str, t: Task, record: BoundUnder) -> orphans.Standing:
        """Where orphan ``key`` (its prepared task ``t``, bound under ``record``) stands by the base's
        Queues and namespace labels (``orphans.standing``), noted with what it was decided from."""
        queues = base.queue_names
        if queues is None:
            queues = base.queue_names = {q.name: q for q in base.queue_list}
        base.orphan_from[key] = (queues.get(record.queue), base.labels.get(t.namespace))
        return orphans.standing(
            t,
            record,
            queues=queues,
            labels=base.labels,
            priority_classes=base.priority_classes,
            namespace_queues=base.namespace_queues,
        )

    def _shadows(
        self, base: _Base, every: Mapping[str, PodGroupSpec], changed: set[str], came: Iterable[str]
    ) -> bool:
        """Bring ``base.shadowed`` to the PodGroups ``every`` (by key): ``base.named`` asked again of the
        PodGroups whose key's task changed (``changed``) and of those that came, those gone leaving it;
        then ``taken`` of it (an orphan's depends on its group too). Whether any is taken by a pod of
        its name."""
        named = base.named
        for key in itertools.chain(changed, came):
            if key in every:
                how = named_by(self._prepared_at(key), key)
                if how is None:
                    named.pop(key, None)
                else:
                    named[key] = how
        if named:
            for key in [k for k in named if k not in every]:
                del named[key]
            base.shadowed = taken(named, every, self._prepared)
        else:
            base.shadowed = {}
        return bool(base.shadowed)

    def _decided_again(self, base: _Base, changed: set[str]) -> list[str]:
        """The orphans whose standing the base's Queues or namespace labels change (a Queue's rules or a
        namespace's labels changed since they were decided): to be indexed again. Not those in
        ``changed`` (their task changed or went: indexed again anyway)."""
        queues = base.queue_names
        if queues is None:
            queues = base.queue_names = {q.name: q for q in base.queue_list}
        labels, entries, again = base.labels, self._entries, []
        for key, (queue, ns_labels) in base.orphan_from.items():
            if key in changed:
                continue
            where = base.orphan[key]
            t = entries[key].prepared
            if queues.get(where.record.queue) is queue and labels.get(t.namespace) is ns_labels:
                continue
            if self._standing(base, key, t, where.record) != where:
                again.append(key)
        return again

    def _strayed(self, base: _Base, key: str) -> Task:
        """The shared task of stray ``key`` (in ``base.stray``): foreign, or an orphan's."""
        where = base.orphan.get(key)
        return self._foreign(key) if where is None else self._orphan(key, where)

    def _own(self, key: str) -> Task:
        """A copy of entry ``key``'s task for one session (its own, not shared), with its request."""
        entry = self._entries[key]
        if entry.vector is None:
            entry.vector = self._vector(entry.prepared)
        t = copy_task(entry.prepared)
        t.request = entry.vector
        t.shared = False
        return t

    def _vector(self, t: Task) -> Vector:
        """``t``'s request over the current space (read-only, shared with every task that asks the same)."""
        assert self._space is not None
        shape = tuple(t.request_map.items())
        vec = self._vectors.get(shape)
        if vec is None:
            if len(self._vectors) >= _VECTORS_KEPT:
                self._vectors.clear()
            vec = self._vectors[shape] = request_vector(self._space, t)
        return vec

    def ahead(self, view: View, *, podgroups: Iterable[PodGroupSpec]) -> None:
        """What :meth:`build` does of ``view`` (after :meth:`prepare` of the same view) to bring its base
        up to date (the entries' jobs, the foreign tasks, what each node holds), done ahead of the next
        build, between sessions: no snapshot is made. The next build starts from there: its ``touched``
        names the jobs touched here too, and a view read whole here reads as one read whole there. The
        jobs the last session was lent, and those it returned (``kept[RETURNED]``), are left to the next
        build as they are (it lends them again, or makes them anew)."""
        with self._lock:
            touched = self._brought(view, list(podgroups), carried=None)[2]
            if touched is None or self._ahead_touched is None:
                self._ahead_touched = None
            else:
                self._ahead_touched.update(touched)
            self._ahead_read_all = self._ahead_read_all or self._read_all

    def anew(self) -> None:
        """The next build makes the base anew, with no ``touched`` (a build or work done ahead failed
        midway: what it brought up to date, and what not, is not known)."""
        with self._lock:
            self._base, self._ahead_touched, self._ahead_read_all = None, None, False

    def _brought(
        self, view: View, pg_list: list[PodGroupSpec], *, carried: set[str] | None
    ) -> tuple[DeviceCatalog | None, list[str], frozenset[str] | None]:
        """(Holding the lock) The space, the node table and the base brought to ``view`` (whose PodGroups
        are ``pg_list``): what :meth:`build` and :meth:`ahead` share. Returns the device catalog, the
        PodGroups' keys and the keys of the jobs touched (None: the base built anew). ``carried``: the
        jobs the work done ahead touched since the last build (a build's), or None (work done ahead: the
        last session's lent jobs are left as they are)."""
        keys = list(map(_KEY, pg_list))  # (once: the update's and the jobs' below)
        catalog = self._devices(view) if view.slices or view.resource_claims else None
        node_specs = self._with_devices(view.nodes, catalog)
        same_nodes = _same_objects(node_specs, self._nodes)
        if not same_nodes:
            self._node_names = {name for n in node_specs.values() for name in n.allocatable}
        names = set(self._names)
        names |= self._node_names
        names.update(resource_names(view.queues, pg_list))
        # (the space is a function of the names alone: the last one while they are the same)
        space = self._space if names == self._space_from and self._space is not None else ResourceSpace(names)
        self._space_from = names
        if self._space is None or space.names != self._space.names:
            self._space, self._table, self._base = space, None, None
            for entry in self._entries.values():
                entry.vector = entry.shared = entry.foreign = entry.orphan = None
            self._vectors.clear()
        space = self._space
        old_table = self._table
        if old_table is None or not same_nodes:
            self._table = NodeTable(space, node_specs.values())
            self._nodes = node_specs
            if old_table is not None:  # (a node changed, joined or left)
                carry_counts(old_table.memo, self._table.memo)
        table = self._table
        assert table is not None
        pos = view.seq.__getitem__  # where a task stands in the cache's order
        changed, self._changed = self._changed, set()
        base = self._base
        if (
            base is None
            or base.priority_classes != view.priority_classes
            or base.namespace_queues != view.namespace_queues
        ):
            self._again = set()
            self._base = self._full(view, pg_list, space)
            return catalog, keys, None
        return (
            catalog,
            keys,
            self._update(base, view, pg_list, keys, changed, old_table, pos, carried=carried),
        )

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
            self._builds += 1
            built = self._builds
            # (taken whatever comes next: a session that fails before its close returns none)
            returned = self.kept.pop(RETURNED, None)
            self._returned = returned if isinstance(returned, dict) else None
            pg_list = list(podgroups)
            carried, self._ahead_touched = self._ahead_touched, set()
            if self._ahead_read_all:  # (as if this build read it whole)
                self._read_all, self._ahead_read_all = True, False
            catalog, keys, touched = self._brought(
                view, pg_list, carried=set() if carried is None else carried
            )
            if (
                carried is None
            ):  # (the base was built anew ahead: what changed since the last build is not known)
                touched = None
            space, table, base = self._space, self._table, self._base
            assert space is not None and table is not None and base is not None
            pos = view.seq.__getitem__  # where a task stands in the cache's order
            if base.shadowed:  # (the PodGroups that are jobs: not those a pod standing alone keeps)
                keys = list(base.podgroups)
            total = table.total()  # (the ready nodes' allocatable: the specs' alone, kept in the memo)
            session_table = table.fresh(
                list(base.held),  # (lent: each copied as a session changes it)
                lent=True,
                # (an integer array's sum is a numpy path no other step of a session takes: summed by
                # Python, the same count)
                held=(
                    base.idle.copy(),
                    base.score_extra.copy(),
                    base.incoming.copy(),
                    sum(base.releasing.tolist()),
                ),
            )
            grouped = base.grouped
            if grouped is None or list(grouped) != keys:  # (a PodGroup deleted and made again: last)
                kept = base.jobs
                grouped = base.grouped = dict(zip(keys, map(kept.__getitem__, keys), strict=True))
            jobs = grouped.copy()
            _place(base, pos)
            jobs.update(base.standalone)
            # What a session changes (its pending tasks, an admission), but for the lent jobs, this
            # session's already: a set difference, not a test per job.
            for key in base.private - base.lent:
                jobs[key] = own_job(jobs[key], every_task=False)
            problems = [
                p
                for _, p in sorted((p for ps in base.problems.values() for p in ps), key=lambda p: pos(p[0]))
            ]
            shadowed: dict[str, str] = {}
            if base.shadowed:  # (each PodGroup a pod standing alone of its name keeps: told, in its order)
                for key in sorted(base.shadowed, key=pos):
                    alone, t = base.named[key], self._entries[key].prepared
                    # (named by a pod bound standing alone, the PodGroup older: told so)
                    bound = alone and came_first(base.all_podgroups[key], t.creation)
                    why = shadow_refusal(key, None if alone else t.job_key, bound=bound)
                    shadowed[f"PodGroup {key}"] = why
                    problems.append((f"PodGroup {key}", SHADOWED, why))
            foreign = list(base.foreign_list)
            private = frozenset(base.private)
        session_table.usage = dict(view.usage)
        return ClusterSnapshot(
            space=space,
            nodes=session_table,
            jobs=jobs,
            queues=resolve_guarantees({q.name: q for q in view.queues}, space, total),
            namespace_weights=dict(view.namespace_weights),
            foreign_tasks=foreign,
            now=now,
            problems=problems,
            carryover=carryover,
            namespace_labels={ns: dict(labels) for ns, labels in view.namespace_labels.items()},
            budgets=tuple(view.budgets.values()),
            private=private,
            refused=shadowed,
            touched=touched,
            built=built,
            kept=self.kept,
            device_catalog=catalog,
            resource_claims=view.resource_claims,
            reserved_live=(
                self._reserved_live(base, view.resource_claims, jobs, session_table)
                if view.resource_claims
                else None
            ),
            volume_catalog=(
                VolumeCatalog(
                    view.volume_claims,
                    view.pv_specs,
                    view.storage_classes,
                    capacities=view.storage_capacities,
                    tracked=view.capacity_drivers,
                )
                if any(c.wait_for_consumer for c in view.storage_classes.values())
                else None
            ),
            attach=(
                AttachCatalog(
                    view.attach_limits,
                    view.volume_claims,
                    view.pv_specs,
                    view.storage_classes,
                    attached=view.volume_attachments,
                )
                if view.attach_limits
                else None
            ),
        )

    def _reserved_live(
        self, base: _Base, claims: Mapping[str, Claim], jobs: Mapping[str, Job], nodes: NodeTable
    ) -> frozenset[str]:
        """Of the uids the allocated claims reserved for pods alone are reserved for, those of the pods
        in the snapshot (held on a node, or in a job): what ``session.pod_uids`` would find of them,
        looked up by uid, not by walking every pod of the snapshot each session."""
        out: set[str] = set()
        seen: set[str] = set()
        by_uid, where, index, held = self._uids, base.where, nodes.index, nodes.tasks
        for claim in claims.values():
            if claim.allocation is None or claim.reserved_for_others:
                continue
            for uid in claim.reserved_for:
                if uid in seen:
                    continue
                seen.add(uid)
                for key in by_uid.get(uid, ()):
                    job_key, node = where[key]
                    if node and (i := index.get(node)) is not None and key in held[i]:
                        out.add(uid)
                        break
                    if job_key is not None and (job := jobs.get(job_key)) is not None and key in job.tasks:
                        out.add(uid)
                        break
        return frozenset(out)

    def _devices(self, view: View) -> DeviceCatalog:
        """The device catalog over the view's nodes (in their name order, the node table's): the last one
        while the slices, the classes and the nodes are the same objects (so the matches it computed are
        kept), else made anew."""
        slices, classes, nodes = self._catalog_from
        if (
            self._catalog is None
            or not _same_objects(view.nodes, nodes)
            or not _same_objects(view.slices, slices)
            or not _same_objects(view.device_classes, classes)
        ):
            self._catalog = DeviceCatalog(
                usable_devices(view.slices.values()),
                nodes=sorted(view.nodes.values(), key=lambda s: s.name),
                classes=view.device_classes,
            )
            self._catalog_from = (view.slices, view.device_classes, view.nodes)
        return self._catalog

    def _with_devices(
        self, nodes: Mapping[str, NodeSpec], catalog: DeviceCatalog | None
    ) -> Mapping[str, NodeSpec]:
        """The nodes with, in their allocatable, how many devices of each DeviceClass each reaches
        (``devices/<class>``: what queues count devices in); the same objects while the
        nodes and the catalog are (so the node table is kept)."""
        if catalog is None or not catalog.classes:
            return nodes
        held_nodes, held_catalog, made = self._devices_on_nodes
        if held_catalog is catalog and _same_objects(nodes, held_nodes):
            return made
        counts = catalog.class_counts()
        out: dict[str, NodeSpec] = {}
        for i, name in enumerate(catalog.node_names):
            spec = nodes[name]
            extra = {device_resource(c): float(v[i]) for c, v in counts.items() if v[i]}
            out[name] = replace(spec, allocatable={**spec.allocatable, **extra}) if extra else spec
        out = {name: out[name] for name in nodes}  # in the view's order
        self._devices_on_nodes = (nodes, catalog, out)
        return out

    def _index(self, base: _Base, key: str) -> tuple[Task, str | None]:
        """Put task ``key`` in the base's indexes (its job's members or the foreign tasks, a stray
        among them, its node; after ``base.podgroups`` is brought up to date); its prepared task and
        its job key (None: foreign)."""
        t = self._entries[key].prepared
        job_key = t.job_key if t.schedulable_by_us else None
        if job_key is not None and _stray(t, key, base.podgroups):
            base.stray[key] = job_key
            record = orphans.record_of(t)
            if record is None or (key in base.podgroups and orphans.unproven(t, record)):
                job_key = None
            else:  # an orphan: its own job
                base.orphan[key] = self._standing(base, key, t, record)
                job_key = key
        if job_key is None:
            base.foreign[key] = None
        else:
            base.members.setdefault(job_key, {})[key] = None
        if t.node_name:
            base.on_node.setdefault(t.node_name, {})[key] = None
        base.where[key] = (job_key, t.node_name)
        return t, job_key

    def _full(self, view: View, pg_list: list[PodGroupSpec], space: ResourceSpace) -> _Base:
        """The base built from scratch (every task indexed as :meth:`_index` does, written out, and a
        pending pod standing alone lent as :meth:`_job` would: a backlog's 50,000 pods go through here)."""
        entries = self._entries
        every = {pg.key: pg for pg in pg_list}
        named = {k: how for k in every if (how := named_by(self._prepared_at(k), k)) is not None}
        shadowed = taken(named, every, self._prepared) if named else {}
        base = _Base(
            space,
            {k: pg for k, pg in every.items() if k not in shadowed} if shadowed else every,
            dict(view.priority_classes),
            view.namespace_queues,
        )
        base.all_podgroups, base.shadowed, base.named = every, shadowed, named
        base.queue_list, base.labels = view.queues, view.namespace_labels
        members, on_node, where, foreign = base.members, base.on_node, base.where, base.foreign
        pending = TaskStatus.PENDING
        lone: list[str] = []  # pending pods whose job key is their own (standing alone, unless joined)
        podgroups, stray, orphan, record_of = base.podgroups, base.stray, base.orphan, orphans.record_of
        for key in view.tasks:
            t = entries[key].prepared
            node = t.node_name
            job_key: str | None = t.job_key
            if t.schedulable_by_us and not (node and job_key != key and job_key not in podgroups):
                members.setdefault(t.job_key, {})[key] = None
                if job_key == key and t.status is pending:
                    lone.append(key)
            elif (
                t.schedulable_by_us
                and (record := record_of(t)) is not None
                and not (key in podgroups and orphans.unproven(t, record))
            ):  # (an orphan: its own job)
                stray[key] = t.job_key
                orphan[key] = self._standing(base, key, t, record)
                job_key = key
                members.setdefault(key, {})[key] = None
            else:  # (another scheduler's, or a stray of ours: ``_stray`` written out)
                if t.schedulable_by_us:
                    stray[key] = t.job_key
                job_key = None
                foreign[key] = None
                base.foreign_list.append(self._foreign(key))
            if node:
                on_node.setdefault(node, {})[key] = None
            where[key] = (job_key, node)
        for job_key in podgroups:
            self._job(base, job_key, list(members.get(job_key, ())))
        self._lend_all_alone(base, [k for k in lone if len(members[k]) == 1 and k not in podgroups])
        lent = base.lent
        for job_key, keys in members.items():  # in the order of their first member
            if job_key in podgroups or job_key in lent:
                continue  # (assembled above, once)
            self._job(base, job_key, list(keys))
        # Each node's tasks were indexed in the cache's order: read from the index (a backlog's
        # pending pods are on no node), not by walking every task of the view.
        self._nodes_full(base, view, by_node=True)
        return base

    def _job(self, base: _Base, job_key: str, keys: list[str]) -> None:
        """(Re)assemble job ``job_key`` of the base from its members' keys (in the cache's order). A job
        whose every member is pending is lent: made of the session's own copies, handed to the session
        as it is and assembled again for the next (a copy of a shared one would cost as much, and a
        backlog's jobs are all such)."""
        entries = self._entries
        if len(keys) == 1:
            entry = entries[keys[0]]
            lend = entry.prepared.status is TaskStatus.PENDING
            if lend and keys[0] == job_key and job_key not in base.podgroups:
                self._lend_alone(base, job_key)
                return
        else:
            lend = bool(keys) and all(entries[k].prepared.status is TaskStatus.PENDING for k in keys)
        problems: list[tuple[str, tuple[str, str, str]]] = []
        orphan = base.orphan
        if lend:
            tasks = [self._own(k) for k in keys]
        elif orphan:
            tasks = [self._orphan(k, orphan[k]) if k in orphan else self._task(k) for k in keys]
        else:
            tasks = [self._task(k) for k in keys]
        job = assemble_job(
            base.space,
            base.podgroups.get(job_key),
            tasks,
            priority_classes=base.priority_classes,
            problems=problems,
        )
        where = orphan.get(job_key) if orphan and job is not None and job.podgroup is None else None
        if where is not None:  # (an orphan: told what it is now)
            problems.append((job_key, orphans.problem(job_key, base.stray[job_key], where, {})))
        if problems:
            base.problems[job_key] = problems
        else:
            base.problems.pop(job_key, None)
        base.private.discard(job_key)
        base.lent.discard(job_key)
        if job is None or job.podgroup is not None:
            base.standalone.pop(job_key, None)
            base.unplaced.pop(job_key, None)
        if job is None:
            base.jobs.pop(job_key, None)
            return
        _placed(base, job)
        if where is not None:
            job.queue = where.queue  # (the queue it was bound under, or its namespace's default: refused)
        base.jobs[job_key] = job
        if job.podgroup is None:
            _standalone(base, job_key, job)
        if job.phase is PodGroupPhase.PENDING or job.status_count.get(TaskStatus.PENDING):
            base.private.add(job_key)
        if lend:
            base.lent.add(job_key)
            return
        job.shared = True
        job.allocated.setflags(write=False)  # (half the cost of ``flags.writeable = False``)
        job.min_request.setflags(write=False)

    def _lend_alone(self, base: _Base, key: str) -> None:
        """What :meth:`_job` makes of a pending pod standing alone (a backlog's every pod), without its
        general path: the pod's own copy, its one-pod job, lent (standalone and private)."""
        job = base.jobs[key] = lone_job(base.space, self._own(key), key)
        _placed(base, job)
        if base.problems:
            base.problems.pop(key, None)
        _standalone(base, key, job)
        base.private.add(key)
        base.lent.add(key)

    def _lend_again(self, base: _Base, keys: set[str], podgroups: Mapping[str, PodGroupSpec]) -> list[str]:
        """Of ``keys`` (jobs the last session was lent, untouched since), those still a pending pod
        standing alone on no node, lent again as :meth:`_job` would lend each (:meth:`_lend_alone`), in
        one go; returns them (the others are left to :meth:`_job`). Those whose jobs the last session
        closed with as it was lent (pods set aside, a backlog's pods no session tried) are lent as those
        very jobs, reset (:meth:`_lend_all_alone`'s ``back``)."""
        members, where = base.members, base.where
        # A key that passed last time and is untouched since passes again: what is tested (its job's
        # members, its PodGroup, its pod's node and its entry's task) changes only with the key
        # touched. The others are tested, each test one pass in C over those that passed the one before
        # (thousands of pods set aside, every session); the order is ``keys``'s, as one pass testing
        # each key in turn gives.
        passed = self._again
        again = list(filter(members.__contains__, keys - passed if passed else keys))
        groups = list(map(members.__getitem__, again))
        again = list(
            itertools.compress(
                again,
                map(
                    all,
                    zip(
                        map((1).__eq__, map(len, groups)),
                        map(operator.contains, groups, again),
                        map(operator.not_, map(podgroups.__contains__, again)),
                        strict=True,
                    ),
                ),
            )
        )
        again = list(
            itertools.compress(again, map(operator.not_, map(_NODE_OF, map(where.__getitem__, again))))
        )
        pending = itertools.repeat(TaskStatus.PENDING)
        entries = list(map(self._entries.__getitem__, again))
        again = list(itertools.compress(again, map(operator.is_, map(_PREPARED_STATUS, entries), pending)))
        if passed:
            passed = passed & keys
            passed.update(again)
            again = list(filter(passed.__contains__, keys))
        else:
            passed = set(again)
        self._again = passed
        returned, self._returned = self._returned, None
        if returned is not None and self._lent_under == base.namespace_queues:
            self._lend_all_alone(base, again, placed=True, back=returned)
        else:
            self._lend_all_alone(base, again, placed=True)
        return again

    def _lend_all_alone(
        self,
        base: _Base,
        keys: list[str],
        *,
        placed: bool = False,
        back: Mapping[str, Job] | None = None,
    ) -> None:
        """:meth:`_lend_alone` of each of ``keys`` (pending pods standing alone), in one go: their jobs'
        ``allocated`` are the rows of one array of zeros (each job's own row), not one array each.
        ``placed``: some may have their place in ``base.standalone`` already (a base brought up to date,
        :meth:`_lend_again`), which they keep; else none has (a base built from scratch).

        ``back``: the jobs the last session closed with. Those of ``keys`` lent last and left as they
        were lent (:func:`_taken_back`: a set-aside pod's, a backlog's pod no session tried) are lent
        again themselves, reset: a lend would make jobs and copies of the pods that hold the very same
        values."""
        if not keys:
            return
        if back is not None and _all_back(base, keys, back):
            # (each the very job in ``base.jobs`` and in its place in ``standalone``, if it has one,
            # since it was lent last; private and lent still)
            if base.problems:
                for key in keys:
                    base.problems.pop(key, None)
            base.unplaced.update(dict.fromkeys(itertools.filterfalse(base.standalone.__contains__, keys)))
            self._lent_under = base.namespace_queues
            return
        # Each pod's own copy as :meth:`_own` makes it, written out (no call but the copy's per pod).
        # Pods asking the same share one request map (decoding interns them): its vector is looked up
        # once per map here, by the map's identity (every map lives, held by its entry, all along).
        entries, vector, copy = self._entries, self._vector, copy_task
        by_map: dict[int, Vector] = {}
        tasks: list[Task] = []
        fresh: list[str] = keys if back is None else []
        taken: dict[int, Job] = {}  # place in ``keys`` -> a job taken back
        old = base.jobs
        for at, key in enumerate(keys):
            if back is not None:
                job = back.get(key)
                if job is not None and job is old[key] and _taken_back(job, key):
                    taken[at] = job
                    continue
                fresh.append(key)
            entry = entries[key]
            request = entry.vector
            if request is None:
                shape = id(entry.prepared.request_map)
                request = by_map.get(shape)
                if request is None:
                    request = by_map[shape] = vector(entry.prepared)
                entry.vector = request
            t = copy(entry.prepared)
            t.request = request
            t.shared = False
            tasks.append(t)
        made = lone_jobs(base.space, tasks, fresh)
        if base.namespace_queues:
            for job in made:
                _placed(base, job)
        self._lent_under = base.namespace_queues
        if taken:
            it = iter(made)
            made = [taken[at] if at in taken else next(it) for at in range(len(keys))]
        self._lent_alone(base, keys, made, placed=placed)

    @staticmethod
    def _groups_back(
        base: _Base, keys: Iterable[str], returned: Mapping[str, Job], podgroups: Mapping[str, PodGroupSpec]
    ) -> list[str]:
        """Of ``keys`` (jobs the last build lent, untouched since: their members and PodGroup the same),
        the PodGroups' jobs the last session closed with as they were lent (:func:`_group_taken_back`),
        each reset and left in the base, lent again as the very job (a backlog's waiting gangs, which
        :meth:`_job` would assemble anew every session from the same entries: the same values). Returns
        them (the others are left to :meth:`_job`)."""
        out = []
        made, members = base.jobs, base.members
        for key in keys:
            job = returned.get(key)
            pg = podgroups.get(key)
            if (
                job is not None
                and pg is not None
                and job is made.get(key)
                and _group_taken_back(job, pg, members.get(key, _NONE), base.space)
            ):
                out.append(key)
        return out

    @staticmethod
    def _lent_alone(base: _Base, keys: list[str], made: list[Job], *, placed: bool) -> None:
        """The jobs ``made`` of pending pods standing alone (``keys``) into the base, lent (see
        :meth:`_lend_all_alone`)."""
        base.jobs.update(zip(keys, made, strict=True))
        if base.problems:
            for key in keys:
                base.problems.pop(key, None)
        if placed:
            standalone, unplaced = base.standalone, base.unplaced
            for key, job in zip(keys, made, strict=True):
                if key in standalone:
                    standalone[key] = job
                else:
                    unplaced[key] = None
        else:
            base.unplaced.update(dict.fromkeys(keys))
        base.private.update(keys)
        base.lent.update(keys)

    def _nodes_full(self, base: _Base, view: View, *, by_node: bool = False) -> None:
        """What every node holds, from scratch (in the cache's order, as one hold at a time would).
        ``by_node``: the tasks are read node by node from ``base.on_node``, whose every node lists its
        tasks in the cache's order (so right after :meth:`_full`, not after an update, which puts a
        task that changed last); each node's sums and held tasks come in the same order either way."""
        table = self._table
        assert table is not None
        index = table.index
        base.idle = table.allocatable.copy()
        base.score_extra = np.zeros((len(table), 2))
        base.incoming = np.zeros(table.allocatable.shape)
        base.releasing = np.zeros(len(table), dtype=np.intp)
        base.held = [{} for _ in range(len(table))]
        held_at: list[int] = []
        held: list[Vector] = []
        entries = self._entries
        if by_node:
            placed = ((index.get(node), key) for node, keys in base.on_node.items() for key in keys)
        else:
            placed = (
                (index.get(node) if (node := entries[key].prepared.node_name) else None, key)
                for key in view.tasks
            )
        stray = base.stray
        for i, key in placed:
            if i is None:
                continue
            t = self._strayed(base, key) if stray and key in stray else self._task(key)
            if not held_on_node(t, base.jobs, key):
                continue
            base.held[i][key] = t
            held_at.append(i)
            held.append(t.request)
            if t.score_extra is not None:
                base.score_extra[i] += t.score_extra
            if t.status is TaskStatus.RELEASING:
                base.incoming[i] += t.request
                base.releasing[i] += 1
        if held:
            np.subtract.at(base.idle, np.asarray(held_at, dtype=np.intp), np.stack(held))

    def _nodes_placed(self, base: _Base, old: NodeTable, table: NodeTable, nodes: set[str]) -> bool:
        """What every node holds, brought from the table ``old`` to ``table``, of other nodes (some
        joined, some left): each node of both keeps its row and its dict of held tasks (the very
        object), moved to its place in ``table``; the nodes that joined, and those whose allocatable
        changed, are added to ``nodes`` (each summed again alone, by :meth:`_node`). False (nothing
        done) when too many joined or left to do so: then every node is summed again."""
        was = old.index
        rows = [was.get(name, -1) for name in table.names]
        at = [i for i, r in enumerate(rows) if r >= 0]
        if (len(table) + len(old) - 2 * len(at)) * _NODES_FULL > len(table):  # (joined + left)
            return False
        came = [i for i, r in enumerate(rows) if r < 0]
        to = np.asarray(at, dtype=np.intp)
        frm = np.asarray([rows[i] for i in at], dtype=np.intp)
        n = len(table)
        idle = table.allocatable.copy()  # (a joined node's row: summed by ``_node``)
        idle[to] = base.idle[frm]
        score_extra = np.zeros((n, 2))
        score_extra[to] = base.score_extra[frm]
        incoming = np.zeros(table.allocatable.shape)
        incoming[to] = base.incoming[frm]
        releasing = np.zeros(n, dtype=np.intp)
        releasing[to] = base.releasing[frm]
        held = base.held
        base.idle, base.score_extra, base.incoming, base.releasing = idle, score_extra, incoming, releasing
        base.held = [held[r] if r >= 0 else {} for r in rows]
        names = table.names
        nodes.update(names[i] for i in came)
        moved = np.flatnonzero((old.allocatable[frm] != table.allocatable[to]).any(axis=1))
        nodes.update(names[at[k]] for k in moved.tolist())
        return True

    def _node(self, base: _Base, i: int, keys: list[str]) -> None:
        """What node ``i`` holds, again, from the tasks on it (``keys``, in the cache's order)."""
        table = self._table
        assert table is not None
        held: dict[str, Task] = {}
        idle = table.allocatable[i].copy()
        extra = np.zeros(2)
        incoming = np.zeros(idle.shape)
        releasing = 0
        stray = base.stray
        for key in keys:
            t = self._strayed(base, key) if stray and key in stray else self._task(key)
            if held_on_node(t, base.jobs, key):
                held[key] = t
                idle -= t.request
                if t.score_extra is not None:
                    extra += t.score_extra
                if t.status is TaskStatus.RELEASING:
                    incoming += t.request
                    releasing += 1
        base.held[i] = held
        base.idle[i] = idle
        base.score_extra[i] = extra
        base.incoming[i] = incoming
        base.releasing[i] = releasing

    def _update(
        self,
        base: _Base,
        view: View,
        pg_list: list[PodGroupSpec],
        pg_keys: list[str],
        changed: set[str],
        old_table: NodeTable | None,
        pos: Callable[[str], int],
        *,
        carried: set[str] | None,
    ) -> frozenset[str]:
        """Bring the base to ``view``: the jobs and nodes of the tasks that changed (``changed``), the
        jobs whose PodGroup changed, the nodes whose allocatable changed (``pg_keys``: the key of each of
        ``pg_list``). Returns the keys of the jobs whose tasks or PodGroup changed (``touched``), those
        ``carried`` names among them (jobs touched by work done ahead since the last build: none of them
        is lent again untested, nor taken back). ``carried`` None: work done ahead (:meth:`ahead`), which
        leaves the jobs the last session was lent to the next build."""
        jobs: set[str] = set()
        nodes: set[str] = set()
        foreign = False
        standalone, seq, renumbered = base.standalone, view.seq, view.renumbered
        assert renumbered is not None or self._read_all  # (prepare reads it all when it is not known)
        if self._read_all:  # the cache's order may be numbered anew: every job takes its place again
            base.unplaced = dict.fromkeys([*standalone, *base.unplaced])
            standalone.clear()
        base.queue_list, base.queue_names, base.labels = view.queues, None, view.namespace_labels
        before = base.podgroups
        every = dict(zip(pg_keys, pg_list, strict=True))
        gone = base.all_podgroups.keys() - every.keys()
        # (None came if none went and the count is the same: no second pass over the PodGroups, the usual
        # case.)
        came = (
            every.keys() - base.all_podgroups.keys() if gone or len(every) != len(base.all_podgroups) else ()
        )
        pgs = every
        if self._shadows(base, every, changed, came) or len(before) != len(base.all_podgroups):
            # (some PodGroup is taken by a pod standing alone of its name, now or before: the rare way)
            pgs = {k: pg for k, pg in every.items() if k not in base.shadowed}
            pg_keys, pg_list = list(pgs), list(pgs.values())
            gone = before.keys() - pgs.keys()
            came = pgs.keys() - before.keys()
        base.all_podgroups = every
        base.podgroups = pgs  # (before the tasks are indexed: whether a pod is a stray depends on it)
        # A PodGroup that appears takes its strays as members; one that goes leaves its members on a
        # node strays: their tasks are indexed again, as if they changed.
        # So does one named like a stray of its name (an orphan whose record proves nothing joins none:
        # ``orphans.unproven``).
        moved = (
            [k for k, group in base.stray.items() if group in came or k in came]
            if came and base.stray
            else []
        )
        for group in gone:
            moved.extend(k for k in base.members.get(group, ()) if base.where[k][1])
            if group in base.stray and base.where[group][0] is None:
                moved.append(group)
        if base.orphan_from:  # (orphans whose Queue's rules or namespace's labels changed their standing)
            moved.extend(k for k in self._decided_again(base, changed) if k not in moved)
        for key in itertools.chain(changed, (k for k in moved if k not in changed)):
            if key in standalone and (renumbered is None or key in renumbered or key not in seq):
                del standalone[key]  # its pod left the cache (and may have come back, last)
                base.unplaced[key] = None
            old = base.where.pop(key, None)
            if old is not None:
                job_key, node = old
                if job_key is None:
                    del base.foreign[key]
                    base.stray.pop(key, None)
                    foreign = True
                else:
                    members = base.members[job_key]
                    del members[key]
                    if not members:
                        del base.members[job_key]
                    jobs.add(job_key)
                    if base.orphan and base.orphan.pop(key, None) is not None:
                        del base.stray[key]
                        del base.orphan_from[key]
                if node:
                    on = base.on_node[node]
                    del on[key]
                    if not on:
                        del base.on_node[node]
                    nodes.add(node)
            if key in self._entries:
                t, joined = self._index(base, key)
                if joined is not None:
                    jobs.add(joined)
                else:
                    foreign = True
                if t.node_name:
                    nodes.add(t.node_name)
        touched = set(jobs)
        if carried:
            touched |= carried
        # The last session's own (lent): never read again, assembled anew. Those that were pods standing
        # alone, pending, and are untouched since (a backlog's, or pods set aside for good: thousands a
        # session) are lent again in one go (:meth:`_lend_all_alone`); a PodGroup's job the last session
        # closed with as it was lent, untouched since, is lent again itself, reset (:meth:`_groups_back`);
        # the others go the general way. Work done ahead leaves them all to the next build.
        returned = self._returned  # (taken by ``_lend_again``)
        lent: set[str] = set()
        if carried is not None:
            again = self._lend_again(base, base.lent - touched, pgs) if base.lent else ()
            lent = base.lent.difference(again)
            jobs.update(lent)
        jobs.update(gone)
        # (the groups that are not the very objects they were, found in C: most are)
        for job_key in itertools.compress(pg_keys, map(operator.is_not, map(before.get, pg_keys), pg_list)):
            if before.get(job_key) != pgs[job_key]:
                jobs.add(job_key)
                touched.add(job_key)
        if lent and returned is not None and not self._read_all:
            jobs.difference_update(self._groups_back(base, lent - touched, returned, pgs))
        where = base.where
        for job_key in jobs:
            members = base.members.get(job_key) or {}
            keys = list(members) if len(members) == 1 else sorted(members, key=pos)
            for k in keys:
                node = where[k][1]
                if node:
                    nodes.add(node)
            self._job(base, job_key, keys)
        grouped = base.grouped
        if grouped is not None:  # (the jobs made again: in their place, or gone)
            made = base.jobs
            for job_key in jobs:
                if job_key in pgs:
                    grouped[job_key] = made[job_key]
                else:
                    grouped.pop(job_key, None)
        if foreign:
            base.foreign_list = [self._foreign(k) for k in sorted(base.foreign, key=pos)]
        table = self._table
        assert table is not None
        if old_table is not None and old_table is not table:
            if old_table.names != table.names:
                if not self._nodes_placed(base, old_table, table, nodes):
                    self._nodes_full(base, view)
                    return frozenset(touched)
            else:
                rows = np.flatnonzero((old_table.allocatable != table.allocatable).any(axis=1))
                nodes.update(table.names[i] for i in rows.tolist())
        if len(nodes) * _NODES_FULL > len(table):
            # Most nodes changed (a session bound a backlog): one pass over every task, one subtraction
            # for all nodes, costs less than a pass per node with one subtraction per task.
            self._nodes_full(base, view)
            return frozenset(touched)
        for node in nodes:
            i = table.index.get(node)
            if i is not None:
                self._node(base, i, sorted(base.on_node.get(node, ()), key=pos))
        return frozenset(touched)
