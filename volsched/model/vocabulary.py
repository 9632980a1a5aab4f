"""What the scheduler's things are: the enums (a task's status, a PodGroup's phase, a queue's state),
the specs the engine reads (:class:`Task`, :class:`NodeSpec`, :class:`QueueSpec`, :class:`PodGroupSpec`
and their parts) and the names they carry (API group, scheduler name, annotations).

Plain data: nothing here reads a raw Kubernetes object (that is :mod:`volsched.model.decode`), does I/O,
or knows about sessions or plugins. Resource amounts stay maps here; the snapshot turns them into
vectors over its resource space.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import field
from typing import Any, Protocol

import numpy as np

from volsched.model.devices import PodClaim
from volsched.model.resources import PODS, Vector
from volsched.model.selectors import LabelSelector, PodConstraints
from volsched.records import dataclass, made_ahead

API_GROUP = "scheduling.volsched.io"
SCHEDULER_NAME = "volsched"
#: The scheduler names the operator and the simulator answer to unless configured otherwise.
DEFAULT_SCHEDULER_NAMES = frozenset({SCHEDULER_NAME})
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
#: Volcano's own spelling of the group annotation (its integrations set the one above; both are read).
VOLCANO_GROUP_ANNOTATION = "scheduling.volcano.sh/group-name"
QUEUE_ANNOTATION = "scheduling.volsched.io/queue-name"
#: The reason of the event on a pending pod that names a volsched PodGroup or queue while its
#: schedulerName is not one volsched answers to (told on the pod, though it is not ours).
MISDIRECTED = "SchedulerNameNotVolsched"
#: Volcano's queue annotation on a pod (Spark, Flink and KubeRay set it); ours wins when both are set.
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
#: On a pod (from its template) with no group: the minMember of its owner's PodGroup (default 1).
MIN_MEMBER_ANNOTATION = "scheduling.volsched.io/min-member"
#: On a pod (from its template): how long it is expected to run once started, a duration (``90m``).
EXPECTED_RUNTIME_ANNOTATION = "scheduling.volsched.io/expected-runtime"
PREEMPTABLE_ANNOTATION = "scheduling.volsched.io/preemptable"
#: The kubelet's mark on the mirror of a static pod (the apiserver requires ``spec.nodeName`` with it).
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
#: Volcano's: an annotation (or, without one, a label) of the pod; read when volsched's is not set.
VOLCANO_PREEMPTABLE = "volcano.sh/preemptable"
#: A pod's role in its gang (Volcano's job controller writes the job's task name there): what a
#: PodGroup's ``minTaskMember`` counts by.
TASK_ROLE_ANNOTATION = "volcano.sh/task-spec"
NAMESPACE_WEIGHT_KEYS = ("volsched.io/namespace.weight", "volcano.sh/namespace.weight")
DEFAULT_QUEUE = "default"
#: The top of the queue tree (the whole cluster): a ``spec.parent`` of ``root`` means no parent, so no
#: Queue may take the name (one that did was read as an ordinary leaf beside the top queues).
ROOT_QUEUE = "root"
#: On a Namespace (annotation, or label): the queue its jobs go to when they name none (or ``default``).
NAMESPACE_QUEUE_KEY = "scheduling.volsched.io/default-queue"
#: On our Queues (the operator adds it): a Queue that jobs still name stays, Closing, until they are done.
QUEUE_FINALIZER = "scheduling.volsched.io/queue-in-use"
#: The namespace whose pods may use the system-critical priority classes in any queue (as the
#: apiserver's Priority admission has it).
SYSTEM_NAMESPACE = "kube-system"
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


class TaskStatus(enum.Enum):
    # Members are singletons: identity hashing is exact and much cheaper than Enum's name hash.
    __hash__ = object.__hash__

    PENDING = "Pending"
    ALLOCATED = "Allocated"  # placed in this session, bind not yet sent
    PIPELINED = "Pipelined"  # promised capacity that is being released
    BOUND = "Bound"  # spec.nodeName set, not running yet
    RUNNING = "Running"
    RELEASING = "Releasing"  # being deleted or evicted: still holds its node's capacity
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


#: Statuses whose request counts as allocated to the job, namespace and queue.
ALLOCATED_STATUSES = frozenset({TaskStatus.ALLOCATED, TaskStatus.BOUND, TaskStatus.RUNNING})
#: Statuses that occupy capacity on a node.
NODE_HOLDING_STATUSES = ALLOCATED_STATUSES | {TaskStatus.RELEASING}
TERMINAL_STATUSES = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})


class PodGroupPhase(enum.StrEnum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class QueueState(enum.StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"


@made_ahead
@dataclass(slots=True, frozen=True)
class PodRuntime:
    """What the kubelet reports about a pod beyond its phase: restarts, why it failed or waits, and the
    images and owner kinds that tell replicas apart. Read only by rescheduling strategies."""

    #: Sum of ``restartCount`` over the app containers, and over the init containers.
    restarts: int = 0
    init_restarts: int = 0
    #: ``status.reason`` (e.g. ``Evicted``, ``NodeAffinity``), empty when unset.
    reason: str = ""
    #: Waiting or terminated reasons of the app containers (e.g. ``CrashLoopBackOff``, ``Error``), and of
    #: the init containers.
    container_reasons: tuple[str, ...] = ()
    init_container_reasons: tuple[str, ...] = ()
    #: Waiting or terminated reasons of the ephemeral (debug) containers.
    ephemeral_container_reasons: tuple[str, ...] = ()
    #: Exit codes of the app containers that terminated, and of the init containers.
    exit_codes: tuple[int, ...] = ()
    init_exit_codes: tuple[int, ...] = ()
    #: The phase is ``Unknown`` (the node stopped reporting); the task's status says Bound.
    phase_unknown: bool = False
    #: The pod's QoS class (``status.qosClass``, else worked out from its spec as Kubernetes does; the
    #: commonest, ``Burstable``, for a task no pod was read for).
    qos: str = "Burstable"
    #: Images of the app containers, sorted (pods of one owner with the same images are duplicates).
    images: tuple[str, ...] = ()
    #: Kinds of every ``ownerReferences`` entry (controller or not).
    owner_kinds: tuple[str, ...] = ()
    #: The pod's Ready condition is there and not True (a Running pod that is not healthy, as the
    #: Eviction API and the disruption controller see it). A pod with no Ready condition counts as
    #: ready: no kubelet that runs pods leaves it out, and the simulator writes none.
    unready: bool = False
    #: The pod mounts node-local storage (an ``emptyDir`` or ``hostPath`` volume), lost when it moves.
    local_storage: bool = False
    #: ``metadata.deletionTimestamp`` is set: the pod is already being deleted.
    deleting: bool = False


EMPTY_RUNTIME = PodRuntime()


#: The request vector of a task outside a snapshot (the snapshot sets each task's own): one shared,
#: read-only array instead of one per cached task.
_NO_REQUEST: Vector = np.zeros(0)
_NO_REQUEST.flags.writeable = False


@dataclass(slots=True, eq=False)
class Task:
    """One pod, as the scheduler sees it."""

    namespace: str
    name: str
    uid: str
    job_key: str
    request_map: dict[str, float]
    priority: int
    status: TaskStatus
    node_name: str | None
    scheduler_name: str
    creation: float
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity_terms: list[Any] = field(default_factory=list)
    tolerations: list[Any] = field(default_factory=list)
    preemption_policy: str = "PreemptLowerPriority"
    preemptable: bool | None = None
    critical: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    #: Its ``bound-under`` record (in ``annotations``) is not verified (``admitted.checked``): read, but
    #: taken for nothing (an orphan counts as one whose record is refused, a group is not held to it, a
    #: pod standing alone keeps no name by it).
    record_unverified: bool = False
    owner: str | None = None
    #: ``status.startTime`` (Unix seconds; 0: not started, or not known).
    start_time: float = 0.0
    #: ``status.nominatedNodeName`` of a pending pod of ours ("" for none, and for any other pod): the
    #: room a leader before this one claimed for it, which the ``reservation`` plugin takes over.
    nominated_node: str = ""
    #: ``spec.priorityClassName`` ("" when none): what a queue's ``priorityClasses`` allows.
    priority_class: str = ""
    #: ``spec.activeDeadlineSeconds``: the kubelet ends the pod that long after it started (None: no limit).
    active_deadline: float | None = None
    #: The ``scheduling.volsched.io/expected-runtime`` annotation, in seconds (None: not given).
    expected_runtime: float | None = None
    #: Nodes this task must not go to (e.g. the node a rescheduled pod was moved off).
    avoid_nodes: tuple[str, ...] = ()
    #: What the kubelet reported (for rescheduling strategies), see :func:`pod_runtime`.
    runtime: PodRuntime = EMPTY_RUNTIME
    request: Vector = field(default_factory=lambda: _NO_REQUEST)
    #: Pod affinity/anti-affinity and topology spread (what depends on other pods), None when none.
    constraints: PodConstraints | None = None
    #: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution (weight, term) pairs.
    preferred_node_terms: list[tuple[int, Any]] = field(default_factory=list)
    #: Host ports the pod's containers ask for: (protocol, port, hostIP).
    host_ports: tuple[tuple[str, int, str], ...] = ()
    #: PersistentVolumeClaims the pod mounts (names in its namespace).
    claims: tuple[str, ...] = ()
    #: The claims of its generic ephemeral volumes (``<pod>-<volume>``, made for it by the ephemeral
    #: volume controller): placed as ``claims`` are, but not a PVC volume of its spec (rescheduling's
    #: ``ignorePvcPods`` reads ``claims`` alone, as the descheduler does).
    ephemeral_claims: tuple[str, ...] = ()
    #: Its inline volumes of in-tree plugins migrated to CSI (``spec.volumes[].awsElasticBlockStore``...)
    #: as (the CSI driver, the volume's id): attach limits count them (``volsched.model.attach``).
    inline_volumes: tuple[tuple[str, str], ...] = ()
    #: Required node affinity of the bound PersistentVolumes (one nodeSelectorTerms list per volume; the
    #: snapshot fills it from the claims), claims that do not exist, and claims not bound to a volume yet.
    volume_terms: tuple[tuple[str, Any], ...] = ()
    missing_claims: tuple[str, ...] = ()
    #: Claims of its ephemeral volumes that another owner made (not the pod's own: never used for it).
    foreign_claims: tuple[str, ...] = ()
    unbound_claims: tuple[str, ...] = ()
    #: Unbound claims of a WaitForFirstConsumer StorageClass: the session binds them where it places the
    #: pod (``volsched.model.volumes``).
    bind_claims: tuple[str, ...] = ()
    #: ``spec.resourceClaims``: the devices the pod claims through Dynamic Resource Allocation.
    resource_claims: tuple[PodClaim, ...] = ()
    #: What node filters read of those claims (the snapshot sets it; see ``with_device_key``).
    device_key: str = ""
    #: A hashable summary of everything node filters and static scores read from the task (selector,
    #: affinity, tolerations, avoided nodes, ports, volumes). Tasks with the same key and request see
    #: the same nodes the same way.
    placement_key: str = ""
    #: spec.schedulerName is one of the names this scheduler answers to and the pod has no scheduling
    #: gate left (``build_task`` sets it; None: the name is "volsched"). False also on a snapshot's copy
    #: of a pod of ours it takes as foreign (on a node, its group missing: ``volsched.cache.snapshots``).
    ours: bool | None = None
    #: The controller owner a group-less pod's job is named after (see ``owner_group``), else None.
    owner_ref: OwnerRef | None = None
    #: It names no PodGroup (no group annotation, no ``spec.schedulingGroup``) and has no controller owner:
    #: a pod standing alone, its job key its own key. It never joins a PodGroup of its name: while it
    #: exists, such a PodGroup is taken by none (``volsched.cache.snapshots``, docs/tenancy.md).
    standing_alone: bool = False
    #: The mirror of a static pod, as its kubelet writes it: the mirror annotation and, as controller, its
    #: own Node (``v1``, the pod's ``spec.nodeName``). An annotation alone is anyone's to write.
    kubelet_mirror: bool = False
    #: How much more (cpu, memory) kube-scheduler's least- and most-requested scores count for the pod
    #: than it requests: 100m and 200Mi for each container that asks none (scores only, never fit);
    #: None when every container asks both.
    score_extra: tuple[float, float] | None = None
    #: A snapshot's task that other snapshots share (read-only): a session changes only its own tasks
    #: (see ``ClusterSnapshot.thaw``).
    shared: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def best_effort(self) -> bool:
        """No cpu, memory or extended request: only the ``pods`` count (backfill places these)."""
        # A loop, not any() over a generator: a quarter of the time, asked of a backlog's every pod.
        for k, v in self.request_map.items():  # noqa: SIM110
            if v > 0 and k != PODS:
                return False
        return True

    @property
    def schedulable_by_us(self) -> bool:
        return self.scheduler_name == SCHEDULER_NAME if self.ours is None else self.ours


@dataclass(slots=True, frozen=True)
class OwnerRef:
    """The controller owner of a pod that names no PodGroup: its job is one PodGroup per owner."""

    api_version: str
    kind: str
    name: str
    uid: str

    @property
    def group_name(self) -> str:
        """The name of the PodGroup that stands for the owner's pods: ``podgroup-<owner uid>``, as
        Volcano names it. Keyed by the UID, two owners never share one (not two kinds of one name, not
        a pod or PodGroup named like ``<kind>-<name>``, not an owner deleted and created again); an
        owner reference without a UID (hand-written input) gives ``<kind>-<name>``, lower case."""
        if self.uid:
            return f"podgroup-{self.uid}"[:253]
        return f"{self.kind.lower()}-{self.name}"[:253]

    @property
    def title(self) -> str:
        """How messages name the owner: ``Job train``."""
        return f"{self.kind} {self.name}"


def queue_annotation(annotations: Mapping[str, str]) -> str | None:
    """The queue a pod names: ours, else Volcano's annotation, else None."""
    return annotations.get(QUEUE_ANNOTATION) or annotations.get(VOLCANO_QUEUE_ANNOTATION) or None


def placement_key(task: Task) -> str:
    if not (
        task.node_selector
        or task.affinity_terms
        or task.tolerations
        or task.avoid_nodes
        or task.preferred_node_terms
        or task.host_ports
        or task.volume_terms
        or task.missing_claims
        or task.foreign_claims
        or task.unbound_claims
        or task.bind_claims
        or task.resource_claims
    ):
        return ""
    return json.dumps(
        [
            task.node_selector,
            task.affinity_terms,
            task.tolerations,
            sorted(task.avoid_nodes),
            task.preferred_node_terms,
            task.host_ports,
            task.volume_terms,
            task.missing_claims,
            task.foreign_claims,
            task.unbound_claims,
            task.bind_claims,
            task.device_key or [(c.name, c.claim, c.template) for c in task.resource_claims],
        ],
        sort_keys=True,
        default=str,
    )


@dataclass(slots=True, frozen=True)
class NodeSpec:
    """A node as the engine reads it: allocatable, labels, taints, schedulable and ready."""

    name: str
    allocatable: dict[str, float]
    labels: dict[str, str]
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect)
    unschedulable: bool
    ready: bool
    addresses: tuple[str, ...] = ()
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True, frozen=True)
class QueueAccess:
    """Who may use a queue and how (a Queue's tenancy fields; see docs/tenancy.md). The defaults let
    every namespace in, with any priority class but the system-critical ones (outside kube-system),
    no ceiling, no per-namespace limit, and no job may declare itself not preemptable."""

    #: ``spec.namespaceSelector``: the namespaces whose jobs the queue takes; None: every namespace.
    namespaces: LabelSelector | None = None
    #: ``spec.priorityClasses``: the classes its jobs may name (no class is always allowed); None: any
    #: class, but a system-critical one outside kube-system.
    priority_classes: frozenset[str] | None = None
    #: ``spec.maxPriority``: the highest priority its jobs may have; None: no ceiling.
    max_priority: int | None = None
    #: ``spec.allowNotPreemptable``: whether ``scheduling.volsched.io/preemptable: "false"`` on its pods
    #: keeps them from being evicted (else the annotation is ignored).
    allow_not_preemptable: bool = False
    #: ``spec.perNamespace.maxRunningJobs`` / ``maxRunningPods``: per namespace, at most this many
    #: admitted jobs and running pods in the queue; None: no limit.
    max_running_jobs: int | None = None
    max_running_pods: int | None = None

    @property
    def limits_namespaces(self) -> bool:
        return self.max_running_jobs is not None or self.max_running_pods is not None


OPEN_ACCESS = QueueAccess()


@dataclass(slots=True, frozen=True)
class QueueSpec:
    """A Queue as the engine reads it: weight, capability, guarantee, state, parent, access."""

    name: str
    weight: int
    capability: dict[str, float] | None
    guarantee: dict[str, float]
    reclaimable: bool
    state: QueueState
    creation: float = 0.0
    #: Guarantees given as a percentage of the cluster (``cpu: "25%"``), resource -> percent. The
    #: snapshot resolves them into ``guarantee`` amounts (see ``resolve_guarantees``), so the plugins
    #: only ever see amounts.
    guarantee_percent: dict[str, float] = field(default_factory=dict)
    #: The parent queue's name; None hangs the queue off the root (the cluster), as ``root`` does.
    parent: str | None = None
    #: The API group the object lives in: ours, or Volcano's (see ``volsched.cache.volcano``).
    api_group: str = API_GROUP
    #: Who may use the queue (namespaces, priority classes, limits per namespace).
    access: QueueAccess = OPEN_ACCESS
    #: Being deleted (``metadata.deletionTimestamp``): closed, and gone once no job names it.
    deleting: bool = False
    #: ``metadata.finalizers`` as read (the operator adds and removes :data:`QUEUE_FINALIZER`).
    finalizers: tuple[str, ...] = ()
    #: ``spec.priority``: queues of a higher priority come first in queue order, whatever their shares
    #: (as Volcano's proportion and capacity plugins order queues).
    priority: int = 0
    #: Fields of the object volsched reads and deliberately does not honour: (field, why), shown on the
    #: object as a condition (a Volcano Queue's ``spec.deserved``).
    ignored: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """A queue is cluster-scoped: its key is its name (what :func:`by_age` breaks ties by)."""
        return self.name


class Aged(Protocol):
    """What is ordered by age: a queue, a job, a task."""

    @property
    def creation(self) -> float: ...

    @property
    def key(self) -> str: ...


def by_age(item: Aged) -> tuple[float, str]:
    """The last tie-break of every order (after priority and the plugins' orders): the older first, then
    by key (a namespaced object's ``namespace/name``, a queue's name)."""
    return (item.creation, item.key)


#: Queue weights are int32 in the CRD (``maximum`` enforces it there).
MAX_WEIGHT = 2**31 - 1


def default_queue() -> QueueSpec:
    return QueueSpec(
        name=DEFAULT_QUEUE, weight=1, capability=None, guarantee={}, reclaimable=True, state=QueueState.OPEN
    )


@made_ahead
@dataclass(slots=True, frozen=True)
class PodGroupSpec:
    """A PodGroup as the engine reads it: minMember, minResources, queue, priority class, phase."""

    namespace: str
    name: str
    min_member: int
    min_resources: dict[str, float] | None
    queue: str
    priority_class_name: str
    phase: PodGroupPhase
    creation: float = 0.0
    uid: str = ""
    #: ``spec.topology``: the minMember pods share one domain of this node label.
    topology: GangTopology | None = None
    #: The API group the object lives in: ours, or Volcano's (see ``volsched.cache.volcano``).
    api_group: str = API_GROUP
    #: Set when the group stands for a controller owner's pods (no object named it; see OwnerRef).
    owner: OwnerRef | None = None
    #: The job's priority when no object gives a priorityClassName (an owner's group: its first pod's).
    priority: int | None = None
    #: ``spec.minTaskMember`` (Volcano's): role -> the pods of that role the gang needs; a pod's role is
    #: its ``volcano.sh/task-spec`` annotation (:data:`TASK_ROLE_ANNOTATION`). None when unset.
    min_task_member: dict[str, int] | None = None
    #: Fields of the object volsched reads and deliberately does not honour: (field, why), shown on the
    #: object as a condition (a Volcano PodGroup's soft ``spec.networkTopology``).
    ignored: tuple[tuple[str, str], ...] = ()
    #: The minMember the gang started with (``volsched.model.admitted``): eviction keeps no more of its
    #: pods than this; None when not known (not started yet, or no object to keep it on).
    admitted_min_member: int | None = None
    #: ``namespace/name``, made once (a snapshot reads every group's key, every session).
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")


@dataclass(slots=True, frozen=True)
class GangTopology:
    """``spec.topology: {key, mode}`` of a PodGroup."""

    key: str
    #: Required: one domain or not at all; Preferred: one domain if any fits, else across domains.
    required: bool = True

    @property
    def mode(self) -> str:
        return "Required" if self.required else "Preferred"


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """A PodDisruptionBudget as sessions see it (decoded by ``model.decode.disruption_budget``): which
    pods it selects and how many of them may be disrupted now (``status.disruptionsAllowed``, kept by
    the disruption controller; 0 while the controller has not observed its latest spec, as the Eviction
    API then refuses every eviction it covers). An empty selector selects every pod of the namespace; a
    budget without one (``selector`` None) selects none."""

    namespace: str
    name: str
    selector: LabelSelector | None
    disruptions_allowed: int
    #: ``status.currentHealthy`` and ``status.desiredHealthy`` (0 when unset).
    current_healthy: int = 0
    desired_healthy: int = 0
    #: ``spec.unhealthyPodEvictionPolicy: AlwaysAllow``: a Running pod that is not ready may always be
    #: evicted (else ``IfHealthyBudget``: only while the budget has its desired healthy pods).
    always_allow_unhealthy: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return namespace == self.namespace and self.selector is not None and self.selector.matches(labels)
