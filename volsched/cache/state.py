"""The scheduler cache: cluster objects by kind, kept current by add/update/delete events.

The operator feeds it from watches, the simulator from YAML; both take snapshots of it for sessions.
Objects arrive as raw dicts and are parsed on the way in, so a malformed object is reported once,
when it arrives, and never reaches a session. Pods are kept raw as well (the writer and the simulator
read them). A parsed object is never changed in place: an event, an assumed bind or a PriorityClass
that changes a pod's priority replaces it, which is what lets a snapshot copy the tables under the lock
and build the rest outside it (see ``snapshots``). A pod that takes its priority from a class (no
``spec.priority``) is re-resolved when a PriorityClass changes, without being parsed again.

This module does no I/O.
"""

from __future__ import annotations

import gc
import itertools
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from volsched.cache import orphans
from volsched.cache.doorbell import ARRIVED, FREED, Doorbell
from volsched.cache.names import named_by, taken
from volsched.cache.snapshots import SnapshotBuilder, View
from volsched.cache.volcano import (
    VOLCANO_PODGROUP,
    VOLCANO_QUEUE,
    build_volcano_podgroup,
    build_volcano_queue,
    conflict_message,
)
from volsched.cache.workload import (
    WORKLOAD_GROUP,
    WORKLOAD_PODGROUP,
    build_workload_podgroup,
    workload_conflict_message,
)
from volsched.framework.decisions import Bind
from volsched.gcpause import pause_collector, resume_collector
from volsched.model import admitted
from volsched.model.admitted import BOUND_UNDER, BoundUnder, read_bound
from volsched.model.cluster import ClusterSnapshot, absent_object, copy_task
from volsched.model.decode import (
    INT32_MAX,
    build_node,
    build_podgroup,
    build_queue,
    build_task,
    csi_driver_tracks_capacity,
    csi_node_limits,
    device_class,
    device_class_ignored,
    disruption_budget,
    namespace_queue,
    object_ref,
    parse_time,
    persistent_volume,
    pod_status,
    priority_class_policy,
    priority_class_value,
    quota_weight_and_problem,
    resource_claim,
    resource_slice,
    storage_capacity,
    storage_class,
    volume_attachment,
    volume_claim,
)
from volsched.model.devices import Allocated, Claim, DeviceClass, DeviceSlice
from volsched.model.errors import InputError
from volsched.model.history import RuntimeHistory
from volsched.model.raw import meta_of, uid_of
from volsched.model.usage import NodeUsage
from volsched.model.vocabulary import (
    API_GROUP,
    DEFAULT_QUEUE,
    DEFAULT_SCHEDULER_NAMES,
    GROUP_ANNOTATION,
    MIN_MEMBER_ANNOTATION,
    MISDIRECTED,
    NODE_HOLDING_STATUSES,
    QUEUE_ANNOTATION,
    DisruptionBudget,
    NodeSpec,
    PodGroupPhase,
    PodGroupSpec,
    QueueSpec,
    Task,
    TaskStatus,
    default_queue,
    queue_annotation,
)
from volsched.model.volumes import PersistentVolumeSpec, StorageCapacity, StorageClassSpec, VolumeClaim

KINDS = (
    "Node",
    "Namespace",
    "ResourceQuota",
    "PriorityClass",
    "Pod",
    "PodGroup",
    "Queue",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "PodDisruptionBudget",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
)
#: Volcano's PodGroup and Queue (scheduling.volcano.sh), read when their CRDs are installed.
VOLCANO_KINDS = (VOLCANO_QUEUE, VOLCANO_PODGROUP)
#: Kubernetes' own PodGroup (scheduling.k8s.io, the Workload API), read when the cluster serves it.
WORKLOAD_KINDS = (WORKLOAD_PODGROUP,)

#: How long the owner of a pod that shuffle moved off a node keeps off that node (seconds).
AVOID_SECONDS = 600.0

#: A snapshot that made at least this many task entries freezes what it made (``gc.freeze``): see
#: ``ClusterState.snapshot``.
FREEZE_REBUILT = 5_000


#: What a refused pod keeps to hold its room on its node (:meth:`ClusterState.hold_refused`).
_HELD_META = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "resourceVersion")
_HELD_SPEC = ("nodeName", "containers", "initContainers", "overhead", "resources")
_ENDED = ("Succeeded", "Failed")


def _key(obj: Mapping[str, Any]) -> str:
    meta = meta_of(obj)
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class ClusterState:
    """Parsed cluster objects. Thread-safe: watch handlers write while the session loop snapshots."""

    def __init__(self, *, scheduler_names: Iterable[str] = DEFAULT_SCHEDULER_NAMES) -> None:
        #: Pods whose spec.schedulerName is one of these are ours to schedule.
        self.scheduler_names = frozenset(scheduler_names)
        self._lock = threading.RLock()
        self.nodes: dict[str, NodeSpec] = {}
        self.raw_pods: dict[str, Mapping[str, Any]] = {}
        self.tasks: dict[str, Task] = {}
        #: The PodGroups and Queues in force: ours, and Volcano's where no object of ours has the name.
        self.podgroups: dict[str, PodGroupSpec] = {}
        #: Whose PodGroup phases the cycle wrote back last, all of them (``StatusDelta.now`` of that
        #: session's result; None: none, or not all).
        self.phases_written: object | None = None
        self.queues: dict[str, QueueSpec] = {}
        #: The default queue a snapshot adds while no Queue object names it: one object from one snapshot
        #: to the next, as every cached queue is (what readers keep by it is compared by identity first).
        self._default_queue = default_queue()
        self._own: dict[tuple[str, str], PodGroupSpec | QueueSpec] = {}  # ("PodGroup", key) -> spec
        self._volcano: dict[tuple[str, str], PodGroupSpec | QueueSpec] = {}
        #: Kubernetes' own PodGroups (scheduling.k8s.io), by key: in force where neither ours nor
        #: Volcano's has the name.
        self._workload: dict[str, PodGroupSpec] = {}
        #: How long the pods of each namespace and queue ran (learned from the pods seen to succeed).
        self.runtimes = RuntimeHistory()
        #: Volcano objects shadowed by ours of the same name: ("PodGroup"|"Queue", key) -> why; and
        #: Kubernetes' PodGroups shadowed by either: (WORKLOAD_PODGROUP, key) -> why.
        self.conflicts: dict[tuple[str, str], str] = {}
        #: uids of Volcano objects (for events about them): ("PodGroup"|"Queue", key) -> uid; and of
        #: Kubernetes' PodGroups: (WORKLOAD_PODGROUP, key) -> uid.
        self.volcano_uids: dict[tuple[str, str], str] = {}
        self._own_queue_uids: dict[str, str] = {}
        #: The minMember each PodGroup was admitted with as the sessions said it (``model.admitted``), by
        #: (API group, key), with the object's uid: an event of that object (a tenant's raise, or our
        #: status's echo that the sessions may have moved past) does not take it back; after a restart,
        #: the object's status says it.
        self._admitted: dict[tuple[str, str], tuple[str, int | None]] = {}
        #: What the pods holding a node were bound under (their ``BOUND_UNDER`` record), by group key: how
        #: many pods hold each record. A group is held to the least of its records (``admitted.inherit``),
        #: whatever its object says now. And the record each such pod counts under, with its group.
        self._bound: dict[str, dict[BoundUnder, set[str]]] = {}
        self._bound_of: dict[str, tuple[str, BoundUnder]] = {}
        #: PodGroups whose pods' record is refused (``_held_record``: what an orphan's record is asked):
        #: group key -> what they are told (``RECORD_REFUSED``). They count as their object says.
        self.record_refused: dict[str, str] = {}
        #: Bumped by a change of what a record is asked (a Queue, a namespace's labels, a PriorityClass, the
        #: keys that verify it: ``adopt_keys``):
        #: the next snapshot asks the records of the groups held to one again (``_asked``: as of then).
        self._rules_seq = 0
        self._asked = 0
        #: The pods the API has shown on a node (not a node the cache laid over one, an assumed bind), by
        #: key: their uid. A bind writes its record with the node, in one update, so a record that comes
        #: after the API showed the pod on a node is not the bind's (``_record_kept``).
        self._placed: dict[str, str] = {}
        #: The records the cache laid over its pods itself with an assumed bind's node (``set_pod_node``),
        #: by key, until an event of the API shows the pod on a node (the bind's echo) or the cache takes
        #: them off again: not taken from the API, so not the record the cache took first
        #: (``_record_kept``).
        self._laid: dict[str, str] = {}
        #: The keys records are signed with (``admitted.RecordKeys``; the operator's, read before its first
        #: listing), or None: records are taken unchecked (the simulator; an operator before signing).
        self.record_keys: admitted.RecordKeys | None = None
        #: Pods whose record is not verified (``Task.record_unverified``), by key: what they are told
        #: (``admitted.NOT_VERIFIED``), once.
        self.not_verified: dict[str, str] = {}
        #: Phases the sessions gave groups that stand for an owner's pods and have no object yet.
        self._derived_phase: dict[str, PodGroupPhase] = {}
        #: What was wrong with the annotations of those groups' pods, as snapshot problems.
        self.derived_problems: list[tuple[str, str, str]] = []
        #: Those groups held whole for their pods' bad min-member annotation (no PodGroup is made, so
        #: none of them starts alone): job key -> what each of their pods is told (InvalidMinMember).
        self.derived_held: dict[str, str] = {}
        #: Queues and PodGroups (ours or Volcano's) refused as invalid: "Queue q" / "PodGroup ns/g" -> why
        #: (see ``refuse``); a pod naming one that is not held is told so (``ClusterSnapshot.refused``).
        self.refused: dict[str, str] = {}
        #: Pending pods that are not ours by their schedulerName but name a PodGroup (our annotation)
        #: or carry our queue annotation: told at each snapshot, when the group is volsched's.
        self._misdirected: dict[str, Task] = {}
        #: Pods refused as invalid whose task holds only their room on their node (``hold_refused``).
        self._held_refused: set[str] = set()
        #: The groups standing for owners' pods in the last snapshot (the operator creates their objects).
        self.last_derived: list[PodGroupSpec] = []
        self.quota_weights: dict[str, int] = {}  # "ns/quota" -> weight
        self.namespaces: set[str] = set()
        self.namespace_labels: dict[str, dict[str, str]] = {}
        #: Namespace -> the queue it names for its jobs that name none (``namespace_queue``).
        self.namespace_queues: dict[str, str] = {}
        #: What volume binding reads (``volsched.model.volumes``): every claim by "ns/name" (its bound
        #: volume, "" while unbound), every volume (its node affinity) and StorageClass by name.
        self.volume_claims: dict[str, VolumeClaim] = {}
        self.pv_specs: dict[str, PersistentVolumeSpec] = {}
        self.storage_classes: dict[str, StorageClassSpec] = {}
        #: CSINode (its node's name) -> driver -> how many of its volumes the node may have attached.
        self.attach_limits: dict[str, dict[str, int]] = {}
        #: Claims and volumes a decided bind binds, before the API shows it (as a bind is assumed):
        #: ("PersistentVolumeClaim", key) or ("PersistentVolume", name) -> (as the API shows it, as
        #: assumed, the version from which the API's word holds or None). An event of the object that
        #: shows the write (a claim's selected node, a volume's ``claimRef`` naming the claim), or is at
        #: or past the version the binder wrote or read (:meth:`volume_written`), ends it; an earlier
        #: event (in flight as the write went) is taken with the assumption laid over it.
        self._volumes_assumed: dict[tuple[str, str], tuple[Any, Any, int | None]] = {}
        #: Called after each PersistentVolumeClaim or PersistentVolume event and each pod deleted, on the
        #: feeding thread, outside the lock (each must be quick and never block): the volume binder's
        #: wait wakes on them (:meth:`watch_volumes`).
        self._volume_watchers: list[Callable[[], None]] = []
        #: Counts every change of those three tables; a snapshot copies them only when it moved (most
        #: snapshots of a busy cluster see no claim, volume or class change).
        self._volumes_moved = 0
        self._volumes_copied: tuple[int, Any] = (-1, None)
        #: CSINode events so far, and the count and table the last snapshot copied (a snapshot shares
        #: the last one's table until a CSINode changes: most sessions see none change).
        self._attach_moved = 0
        self._attach_copied: tuple[int, Any] = (-1, None)
        #: VolumeAttachments (by name) as (node, attacher, PersistentVolume): attach limits count the
        #: volumes they attach that no pod on the node mounts (counted with the CSINodes).
        self.volume_attachments: dict[str, tuple[str, str, str]] = {}
        #: Storage capacity tracking: CSIStorageCapacities by "ns/name", the CSI drivers whose CSIDriver
        #: says ``storageCapacity: true``; their change counter, and what the last snapshot copied.
        self.storage_capacities: dict[str, StorageCapacity] = {}
        self.capacity_drivers: set[str] = set()
        self._capacity_moved = 0
        self._capacity_copied: tuple[int, dict[str, StorageCapacity], frozenset[str]] = (-1, {}, frozenset())
        #: Dynamic Resource Allocation: DeviceClasses by name, ResourceSlices by name, ResourceClaims by
        #: "ns/name" (see ``volsched.model.devices``).
        self.device_classes: dict[str, DeviceClass] = {}
        self.slices: dict[str, DeviceSlice] = {}
        self.resource_claims: dict[str, Claim] = {}
        #: Claims a decided bind allocated or reserved, before the API shows it (as a bind is assumed):
        #: "ns/name" -> (the claim as the API had it, as assumed). The next event of the claim ends it.
        self._claims_assumed: dict[str, tuple[Claim, Claim]] = {}
        self.priority_classes: dict[str, int] = {}
        #: The classes' ``preemptionPolicy`` where set (what admission gives a pod of the class).
        self.class_policies: dict[str, str] = {}
        #: "ns/name" -> the PodDisruptionBudget (which pods it selects, disruptions it allows now).
        self.budgets: dict[str, DisruptionBudget] = {}
        self.default_priority = 0
        self._global_default: dict[str, int] = {}
        self.usage: dict[str, NodeUsage] = {}
        #: Nodes each pod owner was moved off by rescheduling (owner -> nodes); see Task.avoid_nodes.
        self.avoid: dict[str, tuple[str, ...]] = {}
        #: When each (owner, node) entry of ``avoid`` expires (Unix seconds); see avoid_node.
        self.avoid_until: dict[tuple[str, str], float] = {}
        #: Plugin state that outlives a session (handed to every snapshot by reference).
        self.carryover: dict[str, Any] = {}
        #: The jobs the last session that ran had to place and left unplaced (none of their pods bound),
        #: with what the doorbell had counted of capacity freed (``doorbell.count[FREED]``) and the config,
        #: both as of its snapshot: ``volsched.cycle.to_place`` reads it.
        self.held_back: tuple[frozenset[str], int, object] = (frozenset(), -1, None)  # (cycle.NOTHING_HELD)
        #: Pods whose priority comes from a PriorityClass (no spec.priority): key -> the class name
        #: ("" for the default), so a PriorityClass event re-resolves them without parsing them again.
        self._by_class: dict[str, str] = {}
        self._builder = SnapshotBuilder()
        #: Pod key -> when it entered ``tasks`` (the table's order); keys whose task was added, replaced
        #: or deleted since the last snapshot; and the table they describe (None: not known, e.g. after
        #: ``tasks`` was replaced whole, so the next snapshot reads it all).
        self._seq: dict[str, int] = {}
        self._next_seq = 0
        self._touched: set[str] = set()
        self._logged: dict[str, Task] | None = None
        #: ``_seq`` as of the last snapshot, brought up to date from the touched keys by the next one
        #: (the snapshots' ``View.seq``, not a copy of 50,000 entries each), and the keys that took a new
        #: place in the table since the last snapshot (deleted and added again).
        self._view_seq: dict[str, int] = {}
        self._renumbered: set[str] = set()
        #: ``tasks`` as of the last snapshot, in the same order, brought up to date the same way (the
        #: snapshots' ``View.tasks``).
        self._view_tasks: dict[str, Task] = {}
        #: What ``_derived`` made for each owner's group last time: (oldest task, phase, spec, problem).
        self._derived_made: dict[
            str, tuple[Task, PodGroupPhase, PodGroupSpec, tuple[str, str, str] | None]
        ] = {}
        self._snapshot_lock = threading.Lock()
        #: Whether a snapshot was taken (the first of a large cache freezes what it made).
        self._snapshot_taken = False
        self.lock_held = 0.0
        #: Bumped by every change a session could see (an object applied or deleted, a pod's node
        #: assumed or forgotten, a PodGroup phase, a node to avoid added or expired, new usage figures),
        #: but not by a watch event that only confirms an assumed bind: equal counts, nothing new to
        #: decide on (a skipped session, see ``volsched.cycle.IdleSkip``).
        self.changes = 0
        #: Rung by the changes a session would act on soon (a pod of ours pending, capacity freed, an
        #: object a waiting pod may need changed): the operator's session loop runs a session soon.
        self.doorbell = Doorbell()
        #: The rings held back while :meth:`batch` holds the lock, by kind, with how many times each rang.
        self._held_rings: Counter[str] | None = None

    # --- events ---------------------------------------------------------------------------------------

    def apply(self, obj: Mapping[str, Any], *, confirming: bool = False, api_node: bool = True) -> str | None:
        """Add or replace one object. Raises :class:`InputError` for an unknown kind or a bad field.
        Returns a warning when the object was taken but part of it is ignored (a garbage namespace
        weight in a ResourceQuota). ``confirming``: the pod shows the bind the cache assumed (not
        counted in ``changes`` unless the event shows more: another status, labels or annotations).
        ``api_node``: a node the pod shows is the API's; False when it may be the cache's own (an
        assumed bind laid over the API's pod, or the cached pod stored again): see ``_record_kept``."""
        kind = obj.get("kind")
        warning: str | None = None
        ring: str | None = FREED  # the few kinds below that say otherwise
        changed = True  # False: sent again as the cache holds it (a heartbeat, a status echoed)
        watched = False  # a claim or volume: the volume binder's wait is told
        with self._lock:
            if not confirming:
                self.changes += 1
            if kind == "Node":
                # A heartbeat changes nothing a session reads; a node not replaced keeps its object, so
                # snapshots keep their node table (made anew when one is replaced).
                spec = build_node(obj)
                changed = _put(self.nodes, spec.name, spec)
            elif kind == "Pod" and _shows_nothing_new(self.raw_pods.get(key := _key(obj)), obj):
                # What the cache keeps of the pod is as it was but its resourceVersion (the watch
                # confirming a bind, a condition the pruner drops): the task stands, not parsed again.
                self.raw_pods[key] = obj
                changed = False
                if api_node and key not in self._placed and (obj.get("spec") or {}).get("nodeName"):
                    self._placed[key] = str(meta_of(obj).get("uid") or key)  # (a bind laid over, shown)
                    self._laid.pop(key, None)  # (and its record)
            elif kind == "Pod":
                task = self._build_task(obj)
                self._held_refused.discard(task.key)
                key = task.key  # one string for every table (Task.key makes a new one each time)
                old = self.tasks.get(key)
                placed = self._placed.get(key) == task.uid  # (before this event)
                laid = self._laid.pop(key, None) if self._laid else None
                keys = self.record_keys
                if keys is not None and task.annotations and BOUND_UNDER in task.annotations:
                    _check_record(task, laid, keys)
                if old is not None and (
                    (old.annotations and BOUND_UNDER in old.annotations)
                    or (task.annotations and BOUND_UNDER in task.annotations)
                ):
                    task = _record_kept(old, task, placed=placed, laid=laid)
                if task.record_unverified or self.not_verified:
                    self._note_not_verified(key, task)
                if (
                    laid is not None
                    and not (api_node and task.node_name)
                    and old is not None
                    and old.uid == task.uid
                    and task.annotations.get(BOUND_UNDER) == laid
                ):
                    self._laid[key] = laid  # (laid over this event too: still the cache's own)
                if api_node and not placed and task.node_name:
                    self._placed[key] = task.uid
                if confirming and not _same_but_confirmed(old, task):
                    self.changes += 1  # the event shows more than the bind (the pod finished, say)
                before = self.raw_pods.get(key)
                ring = _pod_ring(old, task, before=before, after=obj)
                if not confirming and _readiness_only(before, obj) and not self._budgeted(task.namespace):
                    # Only a PodDisruptionBudget of its namespace reads whether a pod is ready: with none,
                    # a readiness flip is no change (no session for it); the task takes it all the same.
                    changed = False
                self.raw_pods[key] = obj
                if task.status is TaskStatus.SUCCEEDED and (
                    old is None or old.status is not TaskStatus.SUCCEEDED
                ):
                    # Seen to succeed, or first seen succeeded (an operator that restarts learns again
                    # from the pods still there); once only.
                    self._learn_runtime(task, _finished_at(obj))
                self._put_task(key, task)
                pod_spec = obj.get("spec") or {}
                if pod_spec.get("priority") is None:
                    self._by_class[key] = sys.intern(str(pod_spec.get("priorityClassName") or ""))
                else:
                    self._by_class.pop(key, None)
            elif kind == "PodGroup":
                pg = self._admitted_kept(build_podgroup(obj))
                if changed := _put(self._own, ("PodGroup", pg.key), pg):  # not the echo of our status
                    self._resolve("PodGroup", pg.key)
            elif kind == "Queue":
                q = build_queue(obj)
                uid = uid_of(obj)
                if changed := _put(self._own, ("Queue", q.name), q) | _put(self._own_queue_uids, q.name, uid):
                    self._resolve("Queue", q.name)
            elif kind == VOLCANO_PODGROUP:
                pg = self._admitted_kept(build_volcano_podgroup(obj))
                held = ("PodGroup", pg.key)
                if changed := _put(self._volcano, held, pg) | _put(self.volcano_uids, held, pg.uid):
                    self._resolve("PodGroup", pg.key)
            elif kind == WORKLOAD_PODGROUP:
                pg = self._admitted_kept(build_workload_podgroup(obj))
                held = (WORKLOAD_PODGROUP, pg.key)
                old_pg = self._workload.get(pg.key)
                if old_pg is not None and old_pg.uid == pg.uid:  # its object has no phase: the sessions'
                    pg = replace(pg, phase=old_pg.phase)
                if changed := _put(self._workload, pg.key, pg) | _put(self.volcano_uids, held, pg.uid):
                    self._resolve("PodGroup", pg.key)
            elif kind == VOLCANO_QUEUE:
                q = build_volcano_queue(obj)
                uid = uid_of(obj)
                held = ("Queue", q.name)
                if changed := _put(self._volcano, held, q) | _put(self.volcano_uids, held, uid):
                    self._resolve("Queue", q.name)
            elif kind == "ResourceQuota":
                meta = meta_of(obj)
                if not meta.get("namespace") or not meta.get("name"):
                    raise InputError(f"{object_ref(obj)}: missing field metadata.namespace or metadata.name")
                weight, warning = quota_weight_and_problem(obj)
                changed = _put(self.quota_weights, _key(obj), weight) | _add(
                    self.namespaces, str(meta["namespace"])
                )
            elif kind == "Namespace":
                name = meta_of(obj).get("name")
                if not name:
                    raise InputError("Namespace: missing field metadata.name")
                raw_labels = meta_of(obj).get("labels") or {}
                labels = {str(k): str(v) for k, v in raw_labels.items()}
                changed = _add(self.namespaces, str(name)) | _put(self.namespace_labels, str(name), labels)
                queue = namespace_queue(obj)
                if queue is None:
                    changed |= _drop(self.namespace_queues, str(name))
                else:
                    changed |= _put(self.namespace_queues, str(name), queue)
            elif kind == "PersistentVolumeClaim":
                pvc = volume_claim(obj)
                changed = self._volume_event(kind, pvc.key, pvc)
                watched = True
            elif kind == "PersistentVolume":
                pv = persistent_volume(obj)
                changed = self._volume_event(kind, pv.name, pv)
                watched = True
            elif kind == "StorageClass":
                sc = storage_class(obj)
                changed = _put(self.storage_classes, sc.name, sc)
                self._volumes_moved += 1
            elif kind == "CSINode":
                node_name, limits = csi_node_limits(obj)
                changed = (
                    _put(self.attach_limits, node_name, limits)
                    if limits
                    else _drop(self.attach_limits, node_name)
                )
                self._attach_moved += changed
            elif kind == "VolumeAttachment":
                va_name, attached = volume_attachment(obj)
                changed = (
                    _put(self.volume_attachments, va_name, attached)
                    if attached is not None
                    else _drop(self.volume_attachments, va_name)
                )
                self._attach_moved += changed
                ring = None  # a volume attached: nothing new fits (one detached rings, as a delete)
            elif kind == "CSIStorageCapacity":
                capacity = storage_capacity(obj)
                changed = _put(self.storage_capacities, capacity.key, capacity)
                self._capacity_moved += changed
            elif kind == "CSIDriver":
                driver, tracks = csi_driver_tracks_capacity(obj)
                changed = tracks != (driver in self.capacity_drivers)
                (self.capacity_drivers.add if tracks else self.capacity_drivers.discard)(driver)
                self._capacity_moved += changed
            elif kind == "DeviceClass":
                cls = device_class(obj)
                changed = _put(self.device_classes, cls.name, cls)
                warning = device_class_ignored(obj)
            elif kind == "ResourceSlice":
                changed = _put(self.slices, _key(obj), resource_slice(obj))
            elif kind == "ResourceClaim":
                rc = resource_claim(obj)
                self._claims_assumed.pop(rc.key, None)  # the API's word from now on
                changed = _put(self.resource_claims, rc.key, rc)
            elif kind == "PodDisruptionBudget":
                budget = disruption_budget(obj)
                old_budget = self.budgets.get(budget.key)
                changed = _put(self.budgets, budget.key, budget)
                # A budget that may now let a victim go may let a waiting preemptor in; a new one, or one
                # that allows fewer, frees nothing.
                ring = FREED if _loosens(old_budget, budget) else None
            elif kind == "PriorityClass":
                name, value, is_default = priority_class_value(obj)
                policy = priority_class_policy(obj)
                defaults = self._global_default
                changed = (
                    _put(self.priority_classes, name, value)
                    | (_put(defaults, name, value) if is_default else _drop(defaults, name))
                    | (
                        _put(self.class_policies, name, policy)
                        if policy
                        else _drop(self.class_policies, name)
                    )
                )
                if changed:
                    self._refresh_priorities()
            else:
                raise InputError(f"unknown kind {kind!r}; known kinds: {', '.join(KINDS)}")
            if not changed:
                # Nothing a session reads changed (not counted after all, and no session for it).
                self.changes -= not confirming
                ring = None
            elif ring is not None and (rings := self._held_rings) is not None:
                rings[ring] += 1  # rung as the batch ends
                ring = None
            if changed and kind in _ASKED_OF_RECORDS:
                self._rules_seq += 1
        if ring is not None:
            self.doorbell.ring(ring)
        if watched:
            self._tell_volume_watchers()
        return warning

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Applies and deletes (a listing's page of them) under one hold of the lock: the doorbell rung
        once for each kind they rang, as many times counted, once the lock is let go (as each of them
        rings after its own hold). A batch within a batch is part of it."""
        rings: Counter[str] = Counter()
        try:
            with self._lock:
                if self._held_rings is not None:
                    yield
                    return
                self._held_rings = rings
                try:
                    yield
                finally:
                    self._held_rings = None
        finally:
            for kind, times in rings.items():
                self.doorbell.ring(kind, times)

    def _volume_event(self, kind: str, key: str, new: Any) -> bool:
        """(Under the lock.) A claim's or volume's event: held as the API shows it, with a decided bind's
        assumption laid over it until the API shows the write (see ``_volumes_assumed``). Whether what
        sessions read changed."""
        at = (kind, key)
        held = self._volumes_assumed.get(at)
        if held is not None:
            _, assumed, until = held
            if _shows(assumed, new) or (until is not None and new.version >= until):
                del self._volumes_assumed[at]  # the API's word from now on
            else:
                overlaid = _overlaid(new, assumed)
                self._volumes_assumed[at] = (new, overlaid, until)
                new = overlaid
        table: dict[str, Any] = self.volume_claims if kind == "PersistentVolumeClaim" else self.pv_specs
        old = table.get(key)
        table[key] = new  # (always: its version is what the binder's wait reads)
        self._volumes_moved += 1
        return bool(old != new)

    def watch_volumes(self, watcher: Callable[[], None]) -> None:
        """Call ``watcher`` after each claim or volume event and each pod deleted (see
        ``_volume_watchers``)."""
        with self._lock:
            self._volume_watchers.append(watcher)

    def _tell_volume_watchers(self) -> None:
        for watcher in self._volume_watchers:
            watcher()

    def claim_as_seen(self, key: str) -> VolumeClaim | None:
        """The claim ``key`` as the API last showed it (not as a decided bind assumed it), None when the
        cache holds none."""
        with self._lock:
            held = self._volumes_assumed.get(("PersistentVolumeClaim", key))
            return held[0] if held is not None else self.volume_claims.get(key)

    def volume_as_seen(self, name: str) -> PersistentVolumeSpec | None:
        """The volume ``name`` as the API last showed it, None when the cache holds none."""
        with self._lock:
            held = self._volumes_assumed.get(("PersistentVolume", name))
            return held[0] if held is not None else self.pv_specs.get(name)

    def pod_uid(self, key: str) -> str | None:
        """The uid of the pod ``key`` the cache holds, None when none."""
        task = self.tasks.get(key)
        return None if task is None else task.uid

    def volume_written(self, kind: str, key: str, version: int) -> None:
        """The binder wrote (or read, finding nothing to write) the claim's or volume's pre-bind at
        ``version``: an event at or past it ends the assumption whatever it shows."""
        with self._lock:
            held = self._volumes_assumed.get((kind, key))
            if held is not None and version > 0:
                self._volumes_assumed[(kind, key)] = (held[0], held[1], version)

    def assume_claims(self, bind: Bind) -> None:
        """The claims of a decided bind are allocated and reserved for its pod now, before the API shows
        it (the writer writes them before it binds): the next session must not give their devices again.
        Ends with the claim's next event, or :meth:`forget_claims`."""
        with self._lock:
            for a in bind.claims:
                key = a.key
                claim = self.resource_claims.get(key)
                if claim is None or bind.uid in claim.reserved_for:
                    continue
                allocation = (
                    claim.allocation if a.existing else Allocated(a.results, a.node_name, a.node_terms)
                )
                assumed = claim.assumed(allocation, (*claim.reserved_for, bind.uid))
                held = self._claims_assumed.get(key)
                self._claims_assumed[key] = (claim if held is None else held[0], assumed)
                self.resource_claims[key] = assumed
                self.changes += 1

    def forget_claims(self, bind: Bind) -> None:
        """The bind failed: its claims are as the API had them (unless an event of the claim came since,
        which ended the assumption)."""
        with self._lock:
            for a in bind.claims:
                held = self._claims_assumed.pop(a.key, None)
                if held is not None and self.resource_claims.get(a.key) is held[1]:
                    self.resource_claims[a.key] = held[0]
                    self.changes += 1
        if bind.claims:
            self.doorbell.ring(FREED)

    def assume_volumes(self, bind: Bind) -> None:
        """The claims of a decided bind are being bound (a volume's ``claimRef``, a claim's selected node)
        before the API shows it (the writer writes them before it binds): the next session must not give
        those volumes again. Ends with the object's next event, or :meth:`forget_volumes`."""
        with self._lock:
            for b in bind.volumes:
                if b.volume:
                    at: tuple[str, str] = ("PersistentVolume", b.volume)
                    pv = self.pv_specs.get(b.volume)
                    if pv is None:
                        continue
                    orig: Any = pv
                    assumed: Any = replace(pv, claim_ref=(b.key, b.claim_uid))
                    self.pv_specs[b.volume] = assumed
                else:
                    at = ("PersistentVolumeClaim", b.key)
                    pvc = self.volume_claims.get(b.key)
                    if pvc is None:
                        continue
                    orig, assumed = pvc, replace(pvc, selected_node=bind.node)
                    self.volume_claims[b.key] = assumed
                held = self._volumes_assumed.get(at)
                self._volumes_assumed[at] = (orig if held is None else held[0], assumed, None)
                self.changes += 1
                self._volumes_moved += 1

    def forget_volumes(self, bind: Bind) -> None:
        """The bind failed: its claims and volumes are as the API had them (unless an event of the object
        came since, which ended the assumption)."""
        with self._lock:
            for b in bind.volumes:
                at = ("PersistentVolume", b.volume) if b.volume else ("PersistentVolumeClaim", b.key)
                held = self._volumes_assumed.pop(at, None)
                table: dict[str, Any] = self.pv_specs if b.volume else self.volume_claims
                if held is not None and table.get(at[1]) is held[1]:
                    table[at[1]] = held[0]
                    self.changes += 1
                    self._volumes_moved += 1
        if bind.volumes:
            self.doorbell.ring(FREED)

    def _budgeted(self, namespace: str) -> bool:
        """Whether a PodDisruptionBudget of ``namespace`` is cached (under ``_lock``)."""
        return any(b.namespace == namespace for b in self.budgets.values())

    def queue_uid(self, name: str) -> str | None:
        """The uid of the Queue object in force under ``name`` (ours or Volcano's), for events on it."""
        with self._lock:
            q = self.queues.get(name)
            if q is None:
                return None
            if q.api_group == API_GROUP:
                return self._own_queue_uids.get(name) or None
            return self.volcano_uids.get(("Queue", name)) or None

    def _build_task(self, raw: Mapping[str, Any]) -> Task:
        return build_task(
            raw,
            priority_classes=self.priority_classes,
            default_priority=self.default_priority,
            scheduler_names=self.scheduler_names,
            class_policies=self.class_policies,
        )

    def _resolve(self, kind: str, key: str) -> None:
        """Which object of this name is in force: ours wins over Volcano's (the loser is a conflict)."""
        own, volcano = self._own.get((kind, key)), self._volcano.get((kind, key))
        workload = self._workload.get(key) if kind == "PodGroup" else None
        winner = own or volcano or workload
        table: dict[str, Any] = self.podgroups if kind == "PodGroup" else self.queues
        if winner is None:
            table.pop(key, None)
            if kind == "PodGroup":
                self.record_refused.pop(key, None)
        elif isinstance(winner, PodGroupSpec):
            table[key] = admitted.inherit(winner, self._held_record(winner))
        else:
            table[key] = winner
        if own is not None and volcano is not None:
            self.conflicts[(kind, key)] = conflict_message(kind, key)
        else:
            self.conflicts.pop((kind, key), None)
        if workload is not None and winner is not None and winner is not workload:
            self.conflicts[(WORKLOAD_PODGROUP, key)] = workload_conflict_message(winner.api_group, key)
        else:
            self.conflicts.pop((WORKLOAD_PODGROUP, key), None)

    def _bound_record(self, key: str) -> BoundUnder | None:
        """What the pods of group ``key`` holding a node were bound under (the least record), or None."""
        records = self._bound.get(key)
        return min(records) if records else None

    def _note_bound(self, key: str, task: Task | None) -> None:
        """(Under the lock.) Pod ``key`` is now ``task`` (None: gone): its ``BOUND_UNDER`` record counts
        for its group while it holds a node. A group whose least record changed is resolved again."""
        text = task.annotations.get(BOUND_UNDER) if task is not None and task.annotations else None
        record = read_bound(text) if text and _holds_node(task) else None
        now = (task.job_key, record) if task is not None and record is not None else None
        was = self._bound_of.get(key)
        if now == was:
            return
        least = {group: self._bound_record(group) for group, _ in filter(None, (was, now))}
        if was is not None:
            group, old = was
            holders = self._bound[group]
            holders[old].discard(key)
            if not holders[old]:
                del holders[old]
                if not holders:
                    del self._bound[group]
            del self._bound_of[key]
        if now is not None:
            self._bound.setdefault(now[0], {}).setdefault(now[1], set()).add(key)
            self._bound_of[key] = now
        for group, before in least.items():
            if self._bound_record(group) != before and self._object_podgroup(group) is not None:
                self._resolve("PodGroup", group)

    def signed_not_verified(self) -> int:
        """How many pods carry a signed record that no key the cache holds verifies (thread-safe)."""
        with self._lock:
            tasks = self.tasks
            return sum(
                1
                for key in self.not_verified
                if (t := tasks.get(key)) is not None and admitted.signed(t.annotations.get(BOUND_UNDER, ""))
            )

    def adopt_keys(self, keys: admitted.RecordKeys) -> int:
        """Records are checked with ``keys`` from now on (the operator's: read at start, or taken while it
        runs, ``recordkey.KeyKeeper``: another replica made or rotated the key, or it was put back). The
        pods held with a record not verified (:attr:`not_verified`) are checked again with them, in one
        pass under the lock: each one ``keys`` verify now is taken as if it had come so (its task replaced,
        its record without the signature, no longer told), the next snapshot sees it, and the groups held
        to a record are asked again. Before, such a pod stayed flagged until it changed: an orphan counted
        in its namespace's default queue, a group made again not held to its pods' record. A record taken
        stays taken (a key dropped does not revoke it: docs/tenancy.md "The signed record"). Returns how
        many pods' records are taken now."""
        taken = 0
        with self._lock:
            self.record_keys = keys
            for key in list(self.not_verified):
                task = self.tasks.get(key)
                text = task.annotations.get(BOUND_UNDER) if task is not None and task.annotations else None
                if task is None or text is None or not task.record_unverified:
                    continue
                body = admitted.checked(text, uid=task.uid, created=task.creation, keys=keys)
                if body is None:
                    continue
                task = copy_task(task)
                task.annotations = {**task.annotations, BOUND_UNDER: body}
                task.record_unverified = False
                del self.not_verified[key]
                self._put_task(key, task)
                taken += 1
            if not taken:
                return 0
            self.changes += 1
            self._rules_seq += 1  # (a group held to a record its pods' verify now: asked again)
            if (rings := self._held_rings) is not None:
                rings[FREED] += 1
                return taken
        self.doorbell.ring(FREED)  # (an orphan counted in its namespace's default queue leaves it)
        return taken

    def _note_not_verified(self, key: str, task: Task) -> None:
        """(Under the lock.) Pod ``key`` is now ``task``: told its record is not taken, while it is not."""
        if not task.record_unverified:
            self.not_verified.pop(key, None)
            return
        self.not_verified[key] = (
            f"the record of this pod's bind (annotation {BOUND_UNDER}) is not taken: {admitted.NOT_VERIFIED_WHY}; "
            "the pod counts as one bound without a record of its group would: a PodGroup made again "
            "is not held to it, a pod standing alone keeps no PodGroup's name by it, and without its "
            "PodGroup the pod counts in its namespace's default queue at its own priority"
        )

    def _held_record(
        self, pg: PodGroupSpec, queues: Mapping[str, QueueSpec] | None = None
    ) -> BoundUnder | None:
        """(Under the lock.) The record PodGroup ``pg`` is held to (``admitted.inherit``): its pods' that
        hold a node (the least, ``_bound_record``), asked what an orphan's is asked where it differs from
        the object (``orphans.refusal``: its queue's rules for the group's namespace, its priority against
        what its class gives, or the highest own priority of the pods holding it). None when no pod holds
        a node, or the record is refused: the group counts as its object says, ``record_refused`` says
        why. A record forged where no policy fixes records held a group made again to another team's
        queue, or above its class's priority, which an orphan's was not. ``queues``: the Queues by name,
        when the caller has them."""
        record = self._bound_record(pg.key)
        why = None
        if record is None:
            self.record_refused.pop(pg.key, None)
            return None
        if admitted.inherit(pg, record) is not pg:
            tasks = self.tasks
            why = orphans.refusal(
                record,
                namespace=pg.namespace,
                own_priority=max(tasks[k].priority for k in self._bound[pg.key][record]),
                queues={q.name: q for q in self.queue_specs()} if queues is None else queues,
                labels=self.namespace_labels.get(pg.namespace) or {},
                priority_classes=self.priority_classes,
            )
            if why is None and all(tasks[k].record_unverified for k in self._bound[pg.key][record]):
                why = admitted.NOT_VERIFIED_WHY
        if why is None:
            self.record_refused.pop(pg.key, None)
            return record
        self.record_refused[pg.key] = (
            f"the record its running pods were bound under (queue {record.queue}, priority "
            f"{record.priority}, minMember {record.min_member}) is not taken: {why}; it counts as its "
            f"object says (queue {pg.queue}), as a PodGroup made anew does"
        )
        return None

    def _ask_records_again(self) -> None:
        """(Under the lock.) What a record is asked changed since the groups held to one were resolved (a
        Queue, a namespace's labels, a PriorityClass): each such group whose answer changes is resolved
        again (its table entry replaced only then: a snapshot rebuilds the jobs whose PodGroup it does)."""
        self._asked = self._rules_seq
        queues = {q.name: q for q in self.queue_specs()}
        for key in list(self._bound):
            pg = self._object_podgroup(key)
            if pg is None:
                continue
            refused = key in self.record_refused
            if (self._held_record(pg, queues) is None) != refused:  # (a refusal's words may change: kept)
                self._resolve("PodGroup", key)

    def orphan_queues(self) -> list[str]:
        """The queue of each orphan: a pod of ours holding a node whose PodGroup is gone, or taken by a
        pod of its name (``volsched.cache.names``, the snapshot's rule: sessions count it there, as a pod
        standing alone): its bind's record's, or its namespace's default queue where the record's queue's
        rules refuse it, or it carries none (``orphans.standing``)."""
        with self._lock:
            # (the PodGroups a snapshot is built from: the objects', then those of owners' pods)
            every = {**self.podgroups, **{pg.key: pg for pg in self.last_derived}}
            tasks = self.tasks
            bound_of = self._bound_of
            strays = [
                (key, (t.job_key, orphans.NO_RECORD))
                for key, t in tasks.items()
                if t.node_name
                and t.job_key != key
                and key not in bound_of
                and t.schedulable_by_us
                and orphans.record_of(t) is not None
            ]
            if not bound_of and not strays:
                return []
            queues = {q.name: q for q in self.queue_specs()}
            named = {k: how for k in every if (how := named_by(tasks.get(k), k)) is not None}
            kept = taken(named, every, tasks.__getitem__) if named else {}
            out: list[str] = []
            for key, (group, record) in itertools.chain(bound_of.items(), strays):
                t = tasks[key]
                if group == key or (group in every and group not in kept) or not t.schedulable_by_us:
                    continue
                if key in every and key not in kept and orphans.unproven(t, record):
                    continue  # (foreign: a PodGroup of its name is in force, and it joins none)
                where = orphans.standing(
                    t,
                    record,
                    queues=queues,
                    labels=self.namespace_labels,
                    priority_classes=self.priority_classes,
                    namespace_queues=self.namespace_queues,
                )
                out.append(where.queue)
            return out

    def _object_podgroup(self, key: str) -> PodGroupSpec | None:
        """The PodGroup object in force for ``key`` as it says (``podgroups`` holds it inherited)."""
        found = (
            self._own.get(("PodGroup", key))
            or self._volcano.get(("PodGroup", key))
            or self._workload.get(key)
        )
        return found if isinstance(found, PodGroupSpec) else None

    def _forget_admitted(self, held: PodGroupSpec | QueueSpec | None) -> None:
        if isinstance(held, PodGroupSpec):
            self._admitted.pop((held.api_group, held.key), None)

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        """Drop one object. Deleting one the cache does not hold (never listed, or refused as invalid)
        changes nothing: not counted in ``changes``, and no ring."""
        key = f"{namespace}/{name}" if namespace else name
        ring: str | None = FREED  # the few kinds below that say otherwise
        watched = False  # a claim, a volume or a pod: the volume binder's wait is told
        with self._lock:
            if kind == "Node":
                ring = None  # capacity lost: nothing new fits
                held = _drop(self.nodes, name)
                self.usage.pop(name, None)
            elif kind == "Pod":
                self.raw_pods.pop(key, None)
                self._placed.pop(key, None)
                self._laid.pop(key, None)
                self.not_verified.pop(key, None)
                self._held_refused.discard(key)
                self._misdirected.pop(key, None)
                self._note_bound(key, None)
                old = self.tasks.pop(key, None)
                if held := old is not None:
                    self._seq.pop(key, None)
                    self._touched.add(key)
                ring = FREED if _holds_node(old) else None
                self._by_class.pop(key, None)
                watched = held and bool(self._volume_watchers)
            elif kind in ("PodGroup", "Queue"):
                at = key if kind == "PodGroup" else name
                self._forget_admitted(self._own.get((kind, at)))
                held = _drop(self._own, (kind, at))
                if kind == "Queue":
                    held |= _drop(self._own_queue_uids, name)
                self._resolve(kind, at)
            elif kind in (VOLCANO_PODGROUP, VOLCANO_QUEUE):
                held_as = ("PodGroup", key) if kind == VOLCANO_PODGROUP else ("Queue", name)
                self._forget_admitted(self._volcano.get(held_as))
                held = _drop(self._volcano, held_as) | _drop(self.volcano_uids, held_as)
                self._resolve(*held_as)
            elif kind == WORKLOAD_PODGROUP:
                self._forget_admitted(self._workload.get(key))
                held = _drop(self._workload, key) | _drop(self.volcano_uids, (WORKLOAD_PODGROUP, key))
                self._resolve("PodGroup", key)
            elif kind == "ResourceQuota":
                held = _drop(self.quota_weights, key)
            elif kind == "Namespace":
                held = _discard(self.namespaces, name) | _drop(self.namespace_labels, name)
                held |= _drop(self.namespace_queues, name)
            elif kind == "PersistentVolumeClaim":
                self._volumes_assumed.pop((kind, key), None)
                held = watched = _drop(self.volume_claims, key)
                self._volumes_moved += 1
            elif kind == "PersistentVolume":
                self._volumes_assumed.pop((kind, name), None)
                held = watched = _drop(self.pv_specs, name)
                self._volumes_moved += 1
            elif kind == "StorageClass":
                held = _drop(self.storage_classes, name)
                self._volumes_moved += 1
            elif kind == "CSINode":
                held = _drop(self.attach_limits, name)
                self._attach_moved += held
            elif kind == "VolumeAttachment":
                held = _drop(self.volume_attachments, name)
                self._attach_moved += held
            elif kind == "CSIStorageCapacity":
                held = _drop(self.storage_capacities, key)
                self._capacity_moved += held
            elif kind == "CSIDriver":
                held = name in self.capacity_drivers
                self.capacity_drivers.discard(name)
                self._capacity_moved += held
            elif kind == "PodDisruptionBudget":  # what it protected may go now
                held = _drop(self.budgets, key)
            elif kind == "DeviceClass":
                held = _drop(self.device_classes, name)
            elif kind == "ResourceSlice":
                held = _drop(self.slices, name)
            elif kind == "ResourceClaim":
                self._claims_assumed.pop(key, None)
                held = _drop(self.resource_claims, key)
            elif kind == "PriorityClass":
                held = (
                    _drop(self.priority_classes, name)
                    | _drop(self._global_default, name)
                    | _drop(self.class_policies, name)
                )
                if held:
                    self._refresh_priorities()
            else:
                held = False
            if not held:
                return
            self.changes += 1
            if ring is not None and (rings := self._held_rings) is not None:
                rings[ring] += 1  # rung as the batch ends
                ring = None
            if kind in _ASKED_OF_RECORDS:
                self._rules_seq += 1
        if ring is not None:
            self.doorbell.ring(ring)
        if watched:
            self._tell_volume_watchers()

    def _refresh_priorities(self) -> None:
        """After a PriorityClass event: the priority of every pod that takes it from a class (or the
        default), resolved again as :func:`build_task` does; only the tasks whose priority changes are
        replaced (a pod with spec.priority keeps it, as Kubernetes' admission fixed it)."""
        self.default_priority = default = max(self._global_default.values(), default=0)
        classes, policies = self.priority_classes, self.class_policies
        for key, name in self._by_class.items():
            task = self.tasks[key]
            priority = classes.get(name, default) if name else default
            own = (self.raw_pods[key].get("spec") or {}).get("preemptionPolicy")
            policy = str(own or policies.get(name) or "PreemptLowerPriority")
            if task.priority != priority or task.preemption_policy != policy:
                task = copy_task(task)
                task.priority = priority
                task.preemption_policy = policy
                self._put_task(key, task)

    def _note_misdirected(self, key: str, task: Task) -> None:
        """Keep track of a pending pod whose schedulerName volsched does not answer to while it names a
        PodGroup or a queue of volsched's annotations (see :meth:`misdirected_problems`)."""
        if (
            task.scheduler_name not in self.scheduler_names
            and task.node_name is None
            and task.status is TaskStatus.PENDING
            and (GROUP_ANNOTATION in task.annotations or QUEUE_ANNOTATION in task.annotations)
        ):
            self._misdirected[key] = task
        else:
            self._misdirected.pop(key, None)

    def misdirected_problems(self, podgroups: Mapping[str, PodGroupSpec]) -> list[tuple[str, str, str]]:
        """A problem (object, reason, message) for each pending pod that names a volsched PodGroup (one
        of ours, not Volcano's: a real Volcano may schedule pods naming its own) or carries volsched's
        queue annotation, but whose schedulerName volsched does not answer to: it would wait with no
        word from anyone. Said on the pod once (the writer sends one event per message)."""
        out = []
        names = sorted(self.scheduler_names)
        for key, task in self._misdirected.items():
            group = task.annotations.get(GROUP_ANNOTATION)
            pg = podgroups.get(f"{task.namespace}/{group}") if group else None
            if pg is not None and pg.api_group == API_GROUP:
                what = f"names PodGroup {task.namespace}/{group} of volsched"
            elif QUEUE_ANNOTATION in task.annotations:
                what = f"names volsched's queue {task.annotations[QUEUE_ANNOTATION]!r} ({QUEUE_ANNOTATION})"
            else:
                continue
            name = task.scheduler_name
            import difflib  # (a hint on a misnamed pod only: not on the way of a listing at start)

            close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
            hint = f' (did you mean "{close[0]}"?)' if close and name != "default-scheduler" else ""
            shown = "not set (default-scheduler)" if name == "default-scheduler" else f'"{name}"{hint}'
            out.append(
                (
                    f"Pod {key}",
                    MISDIRECTED,
                    f"{what}, but its spec.schedulerName is {shown}: volsched schedules only pods whose "
                    f"schedulerName is {' or '.join(names)} (set spec.schedulerName, or add the name to "
                    "--scheduler-names)",
                )
            )
        return sorted(out)

    def _put_task(self, key: str, task: Task) -> None:
        """Add or replace a task, noting it for the next snapshot (and when it entered the table)."""
        if key not in self.tasks:
            self._seq[key] = self._next_seq
            self._next_seq += 1
            self._renumbered.add(key)
        self.tasks[key] = task
        self._touched.add(key)
        self._note_misdirected(key, task)
        self._note_bound(key, task)

    def set_pod_node(self, raw: Mapping[str, Any], *, base: Mapping[str, Any]) -> bool:
        """``raw`` is the cached pod ``base`` with only ``spec.nodeName`` changed, and perhaps its
        ``BOUND_UNDER`` record (an assumed bind laid over it with the record the bind writes, or taken
        off again; see :class:`Feeder`): its task takes the node, the status that follows from it and
        the record where ``raw``'s differs from ``base``'s, without parsing the pod again (nothing else
        a task holds depends on them). Nothing happens when the cache no longer holds ``base`` (a newer
        event came meanwhile). Returns whether the task took the node (one change counted); False also
        when the pod was applied whole instead (its task missing or another pod's)."""
        with self._lock:
            key = _key(raw)
            if self.raw_pods.get(key) is not base:
                return False
            task = self.tasks.get(key)
            uid = str(meta_of(raw).get("uid") or key)
            if task is None or task.uid != uid:
                self.apply(raw, api_node=False)
                return False
            status, node = pod_status(raw)
            task = copy_task(task)
            task.status, task.node_name = status, node
            record = _record_text(raw)
            if record != _record_text(base):  # (not copied deeply: the task's annotations are replaced)
                notes = {k: v for k, v in task.annotations.items() if k != BOUND_UNDER}
                task.annotations = notes if record is None else {**notes, BOUND_UNDER: record}
                task.record_unverified = False
                if node and record is not None:
                    self._laid[key] = record  # laid over with the node: the cache's own
                else:
                    self._laid.pop(key, None)  # taken off: the API's again
                    if record is not None and self.record_keys is not None:
                        _check_record(task, None, self.record_keys)
                if task.record_unverified or self.not_verified:
                    self._note_not_verified(key, task)
            self.raw_pods[key] = raw
            self._put_task(key, task)
            self.changes += 1
            return True

    def refuse(self, kind: str, namespace: str | None, name: str, why: str | None) -> None:
        """The last version of a Queue or PodGroup (``kind`` as the feeder names it, Volcano's too) was
        refused as invalid, and why (None: one was taken, or it is gone). A change: what pods naming it
        are told changes."""
        kind = {VOLCANO_QUEUE: "Queue", VOLCANO_PODGROUP: "PodGroup", WORKLOAD_PODGROUP: "PodGroup"}.get(
            kind, kind
        )
        if kind not in ("Queue", "PodGroup"):
            return
        ref = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
        why = why.removeprefix(f"{ref}: ") if why else why  # said of the object already
        with self._lock:
            changed = _put(self.refused, ref, why) if why else self.refused.pop(ref, None) is not None
            self.changes += changed

    def hold_refused(self, obj: Mapping[str, Any]) -> bool:
        """A pod refused as invalid (``obj``, say a malformed annotation of volsched's on a pod another
        scheduler bound) whose node runs it still holds its room there: the cache takes what its node
        counts of it (node, phase, containers' requests, overhead; as a pod of no scheduler of ours,
        which volsched never places, moves nor counts in a queue), unless it holds a valid version of
        the pod (that one stands). Nothing when even that much cannot be read. Returns whether it holds
        its room so."""
        spec, meta, status = obj.get("spec"), obj.get("metadata"), obj.get("status")
        if not isinstance(spec, Mapping) or not isinstance(meta, Mapping):
            return False
        key = _key(obj)
        phase = status.get("phase") if isinstance(status, Mapping) else None
        with self._lock:
            if key in self.tasks and key not in self._held_refused:
                return False  # its last valid version stands
            if key not in self._held_refused and not (spec.get("nodeName") and phase not in _ENDED):
                return False  # it holds nothing
            bare = {
                "metadata": {k: meta[k] for k in _HELD_META if k in meta},
                "spec": {k: spec[k] for k in _HELD_SPEC if k in spec},
                "status": {"phase": phase} if isinstance(phase, str) else {},
            }
            try:
                task = self._build_task(bare)
            except InputError:
                return False
            self.changes += 1
            self._held_refused.add(key)
            self.raw_pods[key] = bare
            self._by_class.pop(key, None)
            self._put_task(key, task)
            return True

    def touch(self) -> None:
        """Count a change the tables do not show (an assumed bind expired: see ``Feeder.expire``)."""
        with self._lock:
            self.changes += 1

    def expire(self, now: float) -> None:
        """Let the nodes to avoid whose time is up go (a change), as a snapshot at ``now`` would."""
        with self._lock:
            if self.avoid_until:
                self._expire_avoid(now)

    def set_usage(self, usage: Mapping[str, NodeUsage]) -> None:
        """New usage figures are a change (sessions place by them); the same figures again are not."""
        fresh = dict(usage)
        with self._lock:
            if fresh != self.usage:
                self.usage = fresh
                self.changes += 1

    def avoid_node(self, owner: str, node: str, *, until: float) -> None:
        """Pending pods of ``owner`` stay off ``node`` until ``until`` (a pod was moved off it)."""
        with self._lock:
            self.changes += 1
            self.avoid_until[(owner, node)] = until
            self.avoid[owner] = tuple(sorted({*self.avoid.get(owner, ()), node}))

    def moved_off(self, task: Task, node: str, *, now: float, for_seconds: float = AVOID_SECONDS) -> None:
        """``task`` was evicted off ``node`` by rescheduling (shuffle): its owner's pending pods (the
        replacement) keep off ``node`` for ``for_seconds``. A pod without an owner has no replacement."""
        if task.owner:
            self.avoid_node(task.owner, node, until=now + for_seconds)

    def _expire_avoid(self, now: float) -> None:
        expired = [key for key, until in self.avoid_until.items() if until <= now]
        if expired:
            self.changes += 1
        for owner, node in expired:
            del self.avoid_until[(owner, node)]
            left = tuple(n for n in self.avoid.get(owner, ()) if n != node)
            if left:
                self.avoid[owner] = left
            else:
                self.avoid.pop(owner, None)

    def set_podgroup_phase(self, key: str, phase: PodGroupPhase) -> bool:
        """The phase a session gave PodGroup ``key``; returns whether that was a change (counted)."""
        with self._lock:
            pg = self._object_podgroup(key) if key in self.podgroups else None
            if pg is None:
                changed = self._derived_phase.get(key) is not phase
                self._derived_phase[key] = phase
            elif changed := pg.phase is not phase:
                self._hold_podgroup(key, replace(pg, phase=phase))
            self.changes += changed
            return changed

    def set_podgroup_admitted(self, key: str, admitted: int | None) -> bool:
        """The minMember a session said PodGroup ``key`` was admitted with (``volsched.model.admitted``),
        kept against the object's events from now on; returns whether that was a change (counted)."""
        with self._lock:
            pg = self._object_podgroup(key) if key in self.podgroups else None
            if pg is None:
                return False
            self._admitted[(pg.api_group, key)] = (pg.uid, admitted)
            if changed := pg.admitted_min_member != admitted:
                self._hold_podgroup(key, replace(pg, admitted_min_member=admitted))
            self.changes += changed
            return changed

    def _hold_podgroup(self, key: str, pg: PodGroupSpec) -> None:
        """``pg`` in force for ``key``, and in the table of its API group (caller holds the lock)."""
        self.podgroups[key] = admitted.inherit(pg, self._held_record(pg))
        if pg.api_group == API_GROUP:
            self._own[("PodGroup", key)] = pg
        elif pg.api_group == WORKLOAD_GROUP:
            self._workload[key] = pg
        else:
            self._volcano[("PodGroup", key)] = pg

    def _admitted_kept(self, pg: PodGroupSpec) -> PodGroupSpec:
        """``pg`` as an event brings it, with the minMember admitted with that the sessions said of it."""
        said = self._admitted.get((pg.api_group, pg.key))
        if said is not None and said[0] == pg.uid and pg.admitted_min_member != said[1]:
            return replace(pg, admitted_min_member=said[1])
        return pg

    def _derived(self, groups: list[tuple[str, Task]]) -> list[PodGroupSpec]:
        """One PodGroup for each group of a controller owner's pods (ours to schedule) that name no
        group and that no object stands for yet (job key, oldest task), in that order: minMember from
        the pods' :data:`MIN_MEMBER_ANNOTATION` (default 1), the queue from their queue annotation,
        priority from the oldest pod. The one made for a group last time is kept while its oldest task
        (the very object) and phase are the same. A group whose annotation is not a whole number from
        1 to 2^31 - 1 gets none: a gang is whole or not at all, so its pods wait, each told why
        (:attr:`derived_held`), until it is mended; unless one of them holds a node already (started
        before this rule), when it counts as 1 and the oldest pod is told so."""
        with self._lock:
            keys = {key for key, _ in groups}
            for key in [k for k in self._derived_phase if k not in keys]:
                del self._derived_phase[key]
            phases = self._derived_phase.copy()
        out = []
        problems = []
        held: dict[str, str] = {}
        made: dict[str, tuple[Task, PodGroupPhase, PodGroupSpec, tuple[str, str, str] | None]] = {}
        for key, first in groups:
            phase = phases.get(key, PodGroupPhase.PENDING)
            hit = self._derived_made.get(key)
            if hit is not None and hit[0] is first and hit[1] is phase and hit[3] is None:
                made[key] = hit
                out.append(hit[2])
                continue
            problem: tuple[str, str, str] | None = None
            assert first.owner_ref is not None
            raw = first.annotations.get(MIN_MEMBER_ANNOTATION)
            min_member = _min_member(first)
            if raw is not None and min_member == 1 and str(raw).strip() != "1":
                bad = (
                    f"annotation {MIN_MEMBER_ANNOTATION} {raw!r} is not a whole number from 1 to {INT32_MAX}"
                )
                title = f"{first.owner_ref.group_name} ({first.owner_ref.title})"
                if not self._builder.owner_holds_node(key):
                    held[key] = f"{bad}; the pods of {title} wait, none starts alone, until it is mended"
                    continue
                problem = (
                    f"Pod {first.key}",
                    "InvalidMinMember",
                    f"{bad}; PodGroup {title} takes minMember 1",
                )
                problems.append(problem)
            spec = PodGroupSpec(
                namespace=first.namespace,
                name=first.owner_ref.group_name,
                min_member=min_member,
                min_resources=None,
                queue=queue_annotation(first.annotations) or DEFAULT_QUEUE,
                priority_class_name=_class_name(self, first),
                phase=phase,
                creation=first.creation,
                owner=first.owner_ref,
                priority=first.priority,
            )
            made[key] = (first, phase, spec, problem)
            out.append(spec)
        self._derived_made = made
        self.derived_problems = problems
        self.derived_held = held
        return out

    # --- reading --------------------------------------------------------------------------------------

    def node_targets(self) -> dict[str, tuple[str, ...]]:
        """Node name -> its addresses (InternalIP, hostname), what metrics sources match series by."""
        with self._lock:
            return {name: spec.addresses for name, spec in self.nodes.items()}

    def namespace_weights(self) -> dict[str, int]:
        out: dict[str, int] = {ns: 1 for ns in self.namespaces}
        for key, weight in self.quota_weights.items():
            ns = key.split("/", 1)[0]
            out[ns] = max(out.get(ns, 1), weight)
        return out

    def queue_specs(self) -> list[QueueSpec]:
        queues = dict(self.queues)
        if DEFAULT_QUEUE not in queues:
            queues[DEFAULT_QUEUE] = self._default_queue
        return list(queues.values())

    def pod_finished(self, key: str, at: float) -> None:
        """The pod ``key`` succeeded at ``at`` (Unix seconds): its run time is learned (the simulator's
        kubelet says so; the operator learns it from the pod's own status, see :meth:`apply`)."""
        with self._lock:
            task = self.tasks.get(key)
            if task is not None:
                self._learn_runtime(task, at)

    def _learn_runtime(self, task: Task, finished: float | None) -> None:
        """What ``task`` (as it ran) took, learned by its namespace and queue (the lock held)."""
        if finished is None or task.start_time <= 0:
            return
        pg = self.podgroups.get(task.job_key)
        queue = (pg.queue if pg is not None else queue_annotation(task.annotations)) or DEFAULT_QUEUE
        if queue == DEFAULT_QUEUE:
            queue = self.namespace_queues.get(task.namespace, DEFAULT_QUEUE)
        self.runtimes.learn(task.namespace, queue, finished - task.start_time)

    def snapshot(self, *, now: float = 0.0) -> ClusterSnapshot:
        """The session's own snapshot of the cache (see ``volsched.cache.snapshots``): the lock the
        watch handlers need is held only while the cache's dicts are copied (the tasks and their order:
        brought up to date from the keys touched since the last snapshot); the rest is built outside
        it, reusing what did not change since the last snapshot (or since :meth:`build_ahead`)."""
        # One snapshot at a time, its view taken inside: the builder reads the change log of the view
        # before, so two snapshots must take their views and build in the same order.
        with self._snapshot_lock:
            with self._lock:
                started = time.perf_counter()
                if now > 0 and self.avoid_until:
                    self._expire_avoid(now)
                if self._asked != self._rules_seq:
                    self._ask_records_again()
                told_records = sorted(self.record_refused.items()) if self.record_refused else None
                view = self._view()
                misdirected = self.misdirected_problems(view.podgroups) if self._misdirected else []
                learned = self.runtimes.estimates()
                #: Seconds the last snapshot held the cache's lock.
                self.lock_held = time.perf_counter() - started
            # The first snapshot of a large cache makes hundreds of thousands of objects and frees none
            # (nor makes cycles): the cyclic collector would only rescan the growing heap, again and
            # again (a share of the snapshot's time that grows with the cache). A later snapshot makes
            # few objects: no collection is missed that the next allocation would not start.
            pause_collector()
            try:
                self._builder.prepare(view)
                derived = self._derived(self._builder.owner_groups(view))
                self.last_derived = derived
                snap = self._builder.build(
                    view, podgroups=[*view.podgroups.values(), *derived], now=now, carryover=self.carryover
                )
            except BaseException:
                # The keys touched before this snapshot went with its view: the next one reads the whole
                # cache again, or a change that kept the count of tasks would never reach a snapshot. The
                # build may have stopped midway, its base brought part of the way: made anew.
                with self._lock:
                    self._logged = None
                self._builder.anew()
                raise
            finally:
                resume_collector()
            self._freeze_when_rebuilt()
            self._snapshot_taken = True
            if learned:
                snap.learned_runtimes = learned
            snap.problems.extend(self.derived_problems)
            if told_records:  # (not of a PodGroup a pod of its name takes: that is told, and it is no job)
                shadowed = snap.refused  # (the builder's alone, so far)
                snap.problems.extend(
                    (obj, RECORD_REFUSED, why)
                    for key, why in told_records
                    if (obj := f"PodGroup {key}") not in shadowed
                )
            if misdirected:
                snap.problems.extend(misdirected)
            if self.derived_held:
                snap.problems = [self._told_held(p, self.derived_held) for p in snap.problems]
            if self.refused or snap.refused:  # (the builder's: PodGroups a pod standing alone keeps)
                refused = snap.refused = {**self.refused, **snap.refused}
                snap.problems = [self._told_refused(p, refused) for p in snap.problems]
            if snap.problems:
                snap.problems_on_node = _on_node(snap.problems, view.tasks)
            return snap

    def behind(self) -> bool:
        """Whether a task changed since the last snapshot (or :meth:`build_ahead`) took its view: work
        for the next snapshot that :meth:`build_ahead` may do before it. Not after a snapshot that failed
        (nor before the first): the next session's reads the cache whole. A read without the lock (a
        hint: the answer may be out of date as it is returned)."""
        logged = self._logged
        return logged is not None and (logged is not self.tasks or bool(self._touched))

    def build_ahead(self) -> bool:
        """The next snapshot's work for the tasks that changed since the last one took its view (the pod a
        session bound shown bound and running, say), done now, between sessions: the view taken as a
        snapshot takes it, the builder's entries and base brought up to date
        (``SnapshotBuilder.ahead``), no snapshot made. The next snapshot does the rest: what changes
        after this, the jobs the last session was lent; its ``touched`` names the jobs touched here too.
        One snapshot at a time: a snapshot that starts meanwhile waits for this to end. False (nothing
        done) when :meth:`behind` says there is nothing to do. Should it fail, the next snapshot reads
        the cache whole and builds anew, as after a snapshot that failed."""
        with self._snapshot_lock:
            with self._lock:
                if not self.behind():
                    return False
                if self._asked != self._rules_seq:
                    self._ask_records_again()
                view = self._view()
            pause_collector()  # (as a snapshot does: the first of a large cache makes many objects)
            try:
                self._builder.prepare(view)
                derived = self._derived(self._builder.owner_groups(view))
                self._builder.ahead(view, podgroups=[*view.podgroups.values(), *derived])
            except BaseException:
                # As after a snapshot that failed (the keys touched went with the view), and the base
                # is made anew: the work done here may have stopped midway.
                with self._lock:
                    self._logged = None
                self._builder.anew()
                raise
            finally:
                resume_collector()
            self._freeze_when_rebuilt()
            return True

    def _freeze_when_rebuilt(self) -> None:
        """(After the builder's prepare and build, or work done ahead) What a build of many entries made,
        frozen out of the collector's way."""
        if self._builder.rebuilt >= FREEZE_REBUILT:
            # What a build of many entries made either lives as long as the cache (the builder's
            # entries and jobs) or dies by reference count with the session (its copies of the
            # pending jobs; no cycles): frozen, no collection walks it. Left in the young
            # generation, the first collections after the pause walked all of it three times over
            # (young, middle, old, in the first session, before its first bind), and every full
            # collection after that walked it again (the snapshot after a session that bound a
            # backlog rebuilds every entry: then a walk of them all in every later session while the
            # binds drain). A session's cyclic garbage holds a whole
            # snapshot: collected first, so that none is frozen for good (none before the first
            # snapshot: no session ran).
            if self._snapshot_taken:
                gc.collect()
            gc.freeze()

    def _view(self) -> View:
        """(Under the lock) The cache as the next build reads it: the tasks and their order brought up to
        date from the keys touched since the last view (all of them read when the table is new), the
        other tables copied (the volume, attach and capacity tables only when they moved)."""
        touched: set[str] | None = None
        renumbered: set[str] = set()
        if self._logged is self.tasks:
            touched, renumbered = self._touched, self._renumbered
            seq, view_seq = self._seq, self._view_seq
            tasks, view_tasks = self.tasks, self._view_tasks
            for key in touched:
                at = seq.get(key)
                if at is None or key in renumbered:
                    view_seq.pop(key, None)
                    view_tasks.pop(key, None)
                else:
                    view_seq[key] = at
                    view_tasks[key] = tasks[key]  # (in its place)
            # Keys new to the table (or back in it) come after every other, in their order.
            for key in sorted((k for k in renumbered if k in seq), key=seq.__getitem__):
                view_seq[key] = seq[key]
                view_tasks[key] = tasks[key]
        else:  # the first snapshot, or the table was replaced whole
            self._seq = dict(zip(self.tasks, range(len(self.tasks)), strict=True))
            self._next_seq = len(self._seq)
            self._logged = self.tasks
            self._view_seq = self._seq.copy()
            self._view_tasks = self.tasks.copy()
        self._touched, self._renumbered = set(), set()
        moved, volume_tables = self._volumes_copied
        if moved != self._volumes_moved:
            volume_tables = (
                self.volume_claims.copy(),
                self.pv_specs.copy(),
                self.storage_classes.copy(),
            )
            self._volumes_copied = (self._volumes_moved, volume_tables)
        moved, attach_tables = self._attach_copied
        if moved != self._attach_moved:
            attach_tables = (self.attach_limits.copy(), self.volume_attachments.copy())
            self._attach_copied = (self._attach_moved, attach_tables)
        moved, capacities, tracked = self._capacity_copied
        if moved != self._capacity_moved:
            capacities, tracked = self.storage_capacities.copy(), frozenset(self.capacity_drivers)
            self._capacity_copied = (self._capacity_moved, capacities, tracked)
        return View(
            tasks=self._view_tasks,
            touched=touched,
            seq=self._view_seq,
            renumbered=renumbered,
            nodes=self.nodes.copy(),
            podgroups=self.podgroups.copy(),
            queues=self.queue_specs(),
            namespace_weights=self.namespace_weights(),
            priority_classes=self.priority_classes.copy(),
            usage=self.usage.copy(),
            volume_claims=volume_tables[0],
            pv_specs=volume_tables[1],
            storage_classes=volume_tables[2],
            attach_limits=attach_tables[0],
            volume_attachments=attach_tables[1],
            storage_capacities=capacities,
            capacity_drivers=tracked,
            device_classes=self.device_classes.copy(),
            slices=self.slices.copy(),
            resource_claims=self.resource_claims.copy(),
            avoid=self.avoid.copy(),
            namespace_labels=self.namespace_labels.copy(),
            budgets=self.budgets.copy(),
            namespace_queues=self.namespace_queues.copy(),
        )

    def _told_held(self, problem: tuple[str, str, str], held: Mapping[str, str]) -> tuple[str, str, str]:
        """A pod's problem that its PodGroup does not exist, said of a group held for its bad
        min-member annotation (:attr:`derived_held`): that annotation, and that its pods wait."""
        obj, reason, _ = problem
        if reason != "PodGroupNotFound":
            return problem
        task = self.tasks.get(obj.partition(" ")[2])
        why = None if task is None else held.get(task.job_key)
        return problem if why is None else (obj, "InvalidMinMember", why)

    def _told_refused(
        self, problem: tuple[str, str, str], refused: Mapping[str, str]
    ) -> tuple[str, str, str]:
        """A pod's problem that its PodGroup does not exist (or, running, is gone: ``orphans``), said of one
        the cache refused: rejected, why."""
        obj, reason, _ = problem
        if reason != "PodGroupNotFound" and reason != orphans.REASON:
            return problem
        key = obj.partition(" ")[2]
        task = self.tasks.get(key)
        if task is None:
            return problem
        if reason == orphans.REASON:
            where = self._builder.orphan_standing(key)
            return problem if where is None else orphans.problem(key, task.job_key, where, refused)
        return (obj, reason, absent_object("PodGroup", task.job_key, refused))


def _on_node(problems: list[tuple[str, str, str]], tasks: Mapping[str, Task]) -> frozenset[str]:
    """The pods among ``problems`` whose task (in ``tasks``) is on a node, e.g. the oldest pod of an
    owner whose min-member annotation is bad, told its group takes minMember 1 because it runs."""
    out: set[str] = set()
    for obj, _, _ in problems:
        kind, _, key = obj.partition(" ")
        task = tasks.get(key) if kind == "Pod" else None
        if task is not None and task.node_name is not None:
            out.add(obj)
    return frozenset(out)


def _shows(assumed: Any, new: Any) -> bool:
    """Whether a claim's or volume's event shows the pre-bind ``assumed`` (the claim bound, or its node
    selected; the volume's ``claimRef`` naming the claim)."""
    if isinstance(assumed, VolumeClaim):
        return bool(new.volume) or new.selected_node == assumed.selected_node
    return new.claim_ref is not None and new.claim_ref[0] == assumed.claim_ref[0]


def _overlaid(new: Any, assumed: Any) -> Any:
    """``new`` (an event from before the pre-bind showed) with the pre-bind ``assumed`` laid over it."""
    if isinstance(assumed, VolumeClaim):
        return replace(new, selected_node=assumed.selected_node)
    return replace(new, claim_ref=assumed.claim_ref)


def _put(table: dict[Any, Any], key: Any, value: Any) -> bool:
    """Hold ``value`` under ``key``; whether that changed what ``table`` held (a value sent again equal
    to the one held is not a change, and leaves the held object in place)."""
    if key in table and table[key] == value:
        return False
    table[key] = value
    return True


def _add(members: set[str], member: str) -> bool:
    """Add ``member``; whether it was new."""
    if member in members:
        return False
    members.add(member)
    return True


def _drop(table: dict[Any, Any], key: Any) -> bool:
    """Drop ``key``; whether ``table`` held it."""
    return table.pop(key, _MISSING) is not _MISSING


def _discard(members: set[str], member: str) -> bool:
    """Drop ``member``; whether it was there."""
    if member in members:
        members.discard(member)
        return True
    return False


_MISSING = object()


def _loosens(old: DisruptionBudget | None, new: DisruptionBudget) -> bool:
    """Whether ``new`` may let a victim go that ``old`` kept: it allows more disruptions, selects other
    pods, lets unready pods go (AlwaysAllow, or more healthy pods against fewer desired)."""
    if old is None:
        return False
    return (
        new.disruptions_allowed > old.disruptions_allowed
        or new.selector != old.selector
        or (new.always_allow_unhealthy and not old.always_allow_unhealthy)
        or new.current_healthy - new.desired_healthy > old.current_healthy - old.desired_healthy
    )


def _shows_nothing_new(cached: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> bool:
    """``obj`` is the pod ``cached`` (the raw pod a task was built from) again with at most another
    ``metadata.resourceVersion``: whatever a task reads of it is unchanged."""
    if cached is None or cached.keys() != obj.keys():
        return False
    was, now = cached.get("metadata"), obj.get("metadata")
    if type(was) is dict and type(now) is dict and ("resourceVersion" in was) == ("resourceVersion" in now):
        # The same comparison as below, made by dict equality (in C): obj with cached's resourceVersion.
        rv = "resourceVersion"
        return bool(obj == cached if rv not in now else {**obj, "metadata": {**now, rv: was[rv]}} == cached)
    for field, value in obj.items():
        before = cached[field]
        if field != "metadata":
            if value != before:
                return False
            continue
        if not (isinstance(value, Mapping) and isinstance(before, Mapping)) or value.keys() != before.keys():
            return False
        if any(v != before[k] for k, v in value.items() if k != "resourceVersion"):
            return False
    return True


def _readiness_only(cached: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> bool:
    """``obj`` is the pod ``cached`` again with at most another Ready or ``DisruptionTarget`` condition
    (the pruner keeps them and the kubelet's ``PodResizePending``, which is no readiness) and
    ``metadata.resourceVersion``."""
    if cached is None:
        return False
    before, after = cached.get("status"), obj.get("status")
    if not (isinstance(before, Mapping) and isinstance(after, Mapping)):
        return False
    was, now = before.get("conditions"), after.get("conditions")
    if was == now:
        return False  # another difference (or none: _shows_nothing_new took it)
    if _resize_condition(was) != _resize_condition(now):
        return False
    if {k: v for k, v in before.items() if k != "conditions"} != {
        k: v for k, v in after.items() if k != "conditions"
    }:
        return False
    return _shows_nothing_new({**cached, "status": None}, {**obj, "status": None})


def _resize_condition(conditions: Any) -> Any:
    """The ``PodResizePending`` condition among a pruned pod's ``conditions`` (None: none)."""
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and c.get("type") == "PodResizePending":
            return c
    return None


def _same_but_confirmed(old: Task | None, new: Task) -> bool:
    """``new`` (a pod event confirming an assumed bind) shows nothing a session reads that ``old``
    (the task with the bind assumed) did not: a pod that finished or is being deleted meanwhile does."""
    return (
        old is not None
        and old.status is new.status
        and old.node_name == new.node_name
        and old.labels == new.labels
        and (
            old.annotations == new.annotations
            or _but_bound_under(old.annotations) == _but_bound_under(new.annotations)
        )
    )


#: The reason of the event on a PodGroup its pods' bound-under record is refused to (``_held_record``).
RECORD_REFUSED = "BoundUnderRefused"
#: Kinds whose change changes what a bound-under record is asked (``orphans.refusal``).
_ASKED_OF_RECORDS = frozenset(("Queue", VOLCANO_QUEUE, "Namespace", "PriorityClass"))


def _check_record(task: Task, laid: str | None, keys: admitted.RecordKeys) -> None:
    """Pod ``task``'s record (as the API has it) checked with ``keys`` (``admitted.checked``): its text
    without the signature where verified, else flagged (``Task.record_unverified``). One the cache laid
    over itself (``laid``, an assumed bind's: unsigned, its own) is not checked."""
    text = task.annotations[BOUND_UNDER]
    if text == laid:
        return
    body = admitted.checked(text, uid=task.uid, created=task.creation, keys=keys)
    if body is None:
        task.record_unverified = True
    elif body != text:
        task.annotations = {**task.annotations, BOUND_UNDER: body}


def _record_kept(old: Task, new: Task, *, placed: bool, laid: str | None = None) -> Task:
    """Pod ``new`` (an event of the pod the cache holds as ``old``) with the bound-under record the cache
    took first, changed or removed since: a bind writes it once, so a later change is not the
    scheduler's (a tenant's, where no admission policy fixes it). A record that comes later than the
    pod's node is taken where that node was the cache's own (the watch shows a bind after the cache
    assumed it), but not once the API has shown the pod on a node without one (``placed``: bound by
    someone else, or before records existed; running, pending on its node or terminating): the bind's
    record comes with its node, in one update, so one added later is a tenant's. ``laid``: the record
    the cache laid over ``old`` itself with an assumed bind, which it took from no one (``old`` is read
    as without it). After a restart the pods' records are read as they are then. ``new`` itself when
    its record is the one taken."""
    if old.uid != new.uid:
        return new
    was = old.annotations.get(BOUND_UNDER)
    if was is not None and was == laid:
        was = None
    if was is None:
        if not placed:  # (an assumed bind's node is the cache's own, not the API's)
            return new
        new.annotations = {k: v for k, v in new.annotations.items() if k != BOUND_UNDER}
        new.record_unverified = False
        return new
    if new.annotations.get(BOUND_UNDER) == was:
        return new
    new.annotations = {**new.annotations, BOUND_UNDER: was}
    new.record_unverified = old.record_unverified
    return new


def _record_text(raw: Mapping[str, Any]) -> str | None:
    """What raw pod ``raw`` holds under ``BOUND_UNDER`` (None: nothing)."""
    notes = meta_of(raw).get("annotations")
    text = notes.get(BOUND_UNDER) if isinstance(notes, Mapping) else None
    return text if isinstance(text, str) else None


def _but_bound_under(annotations: Mapping[str, str]) -> Mapping[str, str]:
    """A pod's annotations but the record its bind wrote (one the assumed bind did not lay over: a
    record it laid over the pod is what the echo shows)."""
    return (
        {k: v for k, v in annotations.items() if k != BOUND_UNDER}
        if BOUND_UNDER in annotations
        else annotations
    )


def _holds_node(task: Task | None) -> bool:
    return task is not None and bool(task.node_name) and task.status in NODE_HOLDING_STATUSES


def _finished_at(pod: Mapping[str, Any]) -> float | None:
    """When the pod's last container terminated (``status.containerStatuses[].state.terminated
    .finishedAt``), None when no container says (then no run time is learned from it)."""
    ends = []
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        finished = ((status.get("state") or {}).get("terminated") or {}).get("finishedAt")
        if finished:
            try:
                ends.append(parse_time(finished, where="status.containerStatuses[].state.terminated"))
            except InputError:
                return None
    return max(ends) if ends else None


def _pod_ring(
    old: Task | None, new: Task, *, before: Mapping[str, Any] | None, after: Mapping[str, Any]
) -> str | None:
    """What the doorbell hears of a pod event (``old``: the task the cache held, built from the raw pod
    ``before``; ``new`` from ``after``): a pod of ours that is pending and was not (new, recreated, its
    last scheduling gate removed, or back from an assumed bind that expired), or a pending pod of ours
    edited where placing it reads (spec, labels, annotations: it may fit now), has arrived; a pod that
    held a node and no longer does (it finished) freed capacity; anything else (a status update) is
    not news."""
    if new.status is TaskStatus.PENDING and not new.node_name and new.schedulable_by_us:
        if (
            old is None
            or old.uid != new.uid
            or old.status is not TaskStatus.PENDING
            or not old.schedulable_by_us
            or _placement_edited(before, after)
        ):
            return ARRIVED
        return None
    if old is None or not _holds_node(old):
        return None
    if not _holds_node(new):
        return FREED
    # A pod resized down in place, once the kubelet gave it less, holds less of its node.
    was, now = old.request_map, new.request_map
    return FREED if was is not now and any(now.get(k, 0.0) < v for k, v in was.items()) else None


def _placement_edited(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> bool:
    """The raw pod ``after`` differs from ``before`` in what placing it reads: its spec, labels or
    annotations (its group, its queue), not its status."""
    if before is None or before.get("spec") != after.get("spec"):
        return True
    was, now = meta_of(before), meta_of(after)
    return bool(was.get("labels") != now.get("labels") or was.get("annotations") != now.get("annotations"))


def _min_member(task: Task) -> int:
    """:data:`MIN_MEMBER_ANNOTATION` of a pod: a whole number from 1 to 2^31 - 1 (what a PodGroup's
    ``minMember`` holds); anything else counts as 1."""
    raw = task.annotations.get(MIN_MEMBER_ANNOTATION)
    if raw is None:
        return 1
    try:
        value = int(str(raw).strip())
    except ValueError:
        return 1
    return value if 1 <= value <= INT32_MAX else 1


def _class_name(state: ClusterState, task: Task) -> str:
    raw = state.raw_pods.get(task.key) or {}
    return str((raw.get("spec") or {}).get("priorityClassName") or "")
