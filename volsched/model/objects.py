"""Scheduler structs built from raw Kubernetes objects (plain dicts).

Pods become :class:`Task`, PodGroups :class:`PodGroupSpec`, Queues :class:`QueueSpec`, Nodes :class:`NodeSpec`.
Each builder validates what the scheduler relies on and raises :class:`InputError` naming the object and
the field. Resource amounts stay maps here; the snapshot turns them into vectors over its resource space.

No I/O happens here, and nothing here knows about sessions or plugins.
"""

from __future__ import annotations

import enum
import json
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from volsched.model.constraints import PodConstraints, parse_pod_constraints
from volsched.model.errors import InputError
from volsched.model.resources import PODS, Vector, parse_amount, parse_resource_map
from volsched.model.scalars import boolean_value

API_GROUP = "scheduling.volsched.io"
SCHEDULER_NAME = "volsched"
#: The scheduler names the operator and the simulator answer to unless configured otherwise.
DEFAULT_SCHEDULER_NAMES = frozenset({SCHEDULER_NAME})
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
#: Volcano's own spelling of the group annotation (its integrations set the one above; both are read).
VOLCANO_GROUP_ANNOTATION = "scheduling.volcano.sh/group-name"
QUEUE_ANNOTATION = "scheduling.volsched.io/queue-name"
#: Volcano's queue annotation on a pod (Spark, Flink and KubeRay set it); ours wins when both are set.
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
#: On a pod (from its template) with no group: the minMember of its owner's PodGroup (default 1).
MIN_MEMBER_ANNOTATION = "scheduling.volsched.io/min-member"
PREEMPTABLE_ANNOTATION = "scheduling.volsched.io/preemptable"
NAMESPACE_WEIGHT_KEYS = ("volsched.io/namespace.weight", "volcano.sh/namespace.weight")
DEFAULT_QUEUE = "default"
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})

Raw = Mapping[str, Any]


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


# --- small field readers -----------------------------------------------------------------------------


def _meta(obj: Raw, kind: str) -> tuple[str, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        raise InputError(f"{kind}: missing field metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{kind}: missing field metadata.name")
    ns = meta.get("namespace") or ""
    if not isinstance(ns, str):
        raise InputError(f"{kind} {name}: metadata.namespace must be a string")
    return ns, name


def object_ref(obj: Raw) -> str:
    """``Kind ns/name`` (or ``Kind name`` for cluster-scoped objects) for messages."""
    kind = obj.get("kind", "Object")
    meta = obj.get("metadata") or {}
    ns, name = meta.get("namespace"), meta.get("name", "?")
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def parse_time(value: Any, *, where: str) -> float:
    if value is None or value == "":
        return 0.0
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value) or abs(value) > 1e12:  # NaN would break every ordering by age
            raise InputError(f"{where}: expected an RFC 3339 time, got {_short(value)}")
        return float(value)
    if not isinstance(value, str):
        raise InputError(f"{where}: expected an RFC 3339 time, got {_short(value)}")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"{where}: expected an RFC 3339 time, got {value!r}") from None


#: Counts, weights and priorities are int32 in the Kubernetes and Volcano APIs.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _short(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**12:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _int_field(value: Any, *, where: str, default: int, minimum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 20:
            value = int(value)
        else:
            raise InputError(f"{where}: expected an integer >= {minimum}, got {_short(value)}")
    if value < minimum:
        raise InputError(f"{where}: expected an integer >= {minimum}, got {value}")
    if value > INT32_MAX:
        raise InputError(f"{where} must be at most {INT32_MAX}, got {_short(value)}")
    return int(value)


def _bool_field(value: Any, *, where: str, default: bool) -> bool:
    if value is None:
        return default
    parsed = boolean_value(value)
    if parsed is None:
        raise InputError(f"{where}: expected true or false, got {value!r}")
    return parsed


def _map_field(obj: Raw, path: str, where: str) -> Mapping[str, Any]:
    cur: Any = obj
    for part in path.split("."):
        if cur is None:
            return {}
        if not isinstance(cur, Mapping):
            raise InputError(f"{where}: {path} must be a map")
        cur = cur.get(part)
    if cur is None:
        return {}
    if not isinstance(cur, Mapping):
        raise InputError(f"{where}: {path} must be a map, got {type(cur).__name__}")
    return cur


def _list_field(value: Any, *, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: expected a list, got {type(value).__name__}")
    return value


# --- pods -----------------------------------------------------------------------------------------------


def pod_request(pod: Raw, *, where: str) -> dict[str, float]:
    """The Kubernetes effective request of a pod.

    Sum of the app containers (and restartable init "sidecar" containers), at least as large as each
    ordinary init container plus the sidecars started before it, plus ``spec.overhead``. A limit stands in
    for a missing request. Every pod also counts one ``pods``.
    """
    spec = _map_field(pod, "spec", where)

    def container_request(c: Any, path: str) -> dict[str, float]:
        if not isinstance(c, Mapping):
            raise InputError(f"{where}: {path} must be a map")
        res = c.get("resources") or {}
        if not isinstance(res, Mapping):
            raise InputError(f"{where}: {path}.resources must be a map")
        limits = parse_resource_map(res.get("limits"), where=f"{where}: {path}.resources.limits")
        requests = parse_resource_map(res.get("requests"), where=f"{where}: {path}.resources.requests")
        return {**limits, **requests}

    total: dict[str, float] = {}
    for i, c in enumerate(_list_field(spec.get("containers"), where=f"{where}: spec.containers")):
        for k, v in container_request(c, f"spec.containers[{i}]").items():
            total[k] = total.get(k, 0.0) + v
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for i, c in enumerate(_list_field(spec.get("initContainers"), where=f"{where}: spec.initContainers")):
        req = container_request(c, f"spec.initContainers[{i}]")
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always":
            for k, v in req.items():
                sidecars[k] = sidecars.get(k, 0.0) + v
            continue
        for k, v in req.items():
            init_peak[k] = max(init_peak.get(k, 0.0), v + sidecars.get(k, 0.0))
    for k, v in sidecars.items():
        total[k] = total.get(k, 0.0) + v
    for k, v in init_peak.items():
        total[k] = max(total.get(k, 0.0), v)
    for k, v in parse_resource_map(spec.get("overhead"), where=f"{where}: spec.overhead").items():
        total[k] = total.get(k, 0.0) + v
    total[PODS] = 1.0
    return total


def _placement(spec: Mapping[str, Any], where: str) -> tuple[dict[str, str], list[Any], list[Any]]:
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in selector.items()
    ):
        raise InputError(f"{where}: spec.nodeSelector must be a map of strings")
    affinity = spec.get("affinity") or {}
    if not isinstance(affinity, Mapping):
        raise InputError(f"{where}: spec.affinity must be a map")
    node_aff = affinity.get("nodeAffinity") or {}
    required = (node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}) if node_aff else {}
    terms = _list_field(
        required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None,
        where=f"{where}: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms",
    )
    for i, term in enumerate(terms):
        if not isinstance(term, Mapping):
            raise InputError(f"{where}: nodeSelectorTerms[{i}] must be a map")
        for kind in ("matchExpressions", "matchFields"):
            for j, expr in enumerate(_list_field(term.get(kind), where=f"{where}: nodeSelectorTerms[{i}]")):
                if not isinstance(expr, Mapping) or "key" not in expr or "operator" not in expr:
                    raise InputError(f"{where}: nodeSelectorTerms[{i}].{kind}[{j}] needs key and operator")
                if expr["operator"] not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                    raise InputError(
                        f"{where}: nodeSelectorTerms[{i}].{kind}[{j}].operator {expr['operator']!r} is not one "
                        "of In, NotIn, Exists, DoesNotExist, Gt, Lt"
                    )
    tolerations = _list_field(spec.get("tolerations"), where=f"{where}: spec.tolerations")
    return dict(selector), list(terms), list(tolerations)


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
    #: Images of the app containers, sorted (pods of one owner with the same images are duplicates).
    images: tuple[str, ...] = ()
    #: Kinds of every ``ownerReferences`` entry (controller or not).
    owner_kinds: tuple[str, ...] = ()


EMPTY_RUNTIME = PodRuntime()


def _preferred_node_terms(spec: Mapping[str, Any], where: str) -> list[tuple[int, Any]]:
    node_aff = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    at = f"{where}: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    out: list[tuple[int, Any]] = []
    for i, p in enumerate(
        _list_field(node_aff.get("preferredDuringSchedulingIgnoredDuringExecution"), where=at)
    ):
        weight = p.get("weight") if isinstance(p, Mapping) else None
        pref = p.get("preference") if isinstance(p, Mapping) else None
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
            raise InputError(f"{at}[{i}].weight: expected an integer 1..100, got {weight!r}")
        if not isinstance(pref, Mapping):
            raise InputError(f"{at}[{i}].preference: must be a node selector term (a map)")
        out.append((weight, dict(pref)))
    return out


def _host_ports(spec: Mapping[str, Any]) -> tuple[tuple[str, int, str], ...]:
    out: set[tuple[str, int, str]] = set()
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or []:
            for p in (c.get("ports") or []) if isinstance(c, Mapping) else []:
                if isinstance(p, Mapping) and isinstance(p.get("hostPort"), int) and p["hostPort"] > 0:
                    ip = str(p.get("hostIP") or "0.0.0.0")
                    out.add((str(p.get("protocol") or "TCP"), int(p["hostPort"]), ip))
    return tuple(sorted(out))


def _claims(spec: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    for v in spec.get("volumes") or []:
        claim = (v.get("persistentVolumeClaim") or {}) if isinstance(v, Mapping) else {}
        if isinstance(claim, Mapping) and claim.get("claimName"):
            out.append(str(claim["claimName"]))
    return tuple(sorted(set(out)))


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
    owner: str | None = None
    start_time: float = 0.0
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
    #: Required node affinity of the bound PersistentVolumes (one nodeSelectorTerms list per volume; the
    #: snapshot fills it from the claims), and claims that do not exist.
    volume_terms: tuple[tuple[str, Any], ...] = ()
    missing_claims: tuple[str, ...] = ()
    #: A hashable summary of everything node filters and static scores read from the task (selector,
    #: affinity, tolerations, avoided nodes, ports, volumes). Tasks with the same key and request see
    #: the same nodes the same way.
    placement_key: str = ""
    #: spec.schedulerName is one of the names this scheduler answers to (``build_task`` sets it; None:
    #: the name is "volsched").
    ours: bool | None = None
    #: The controller owner a group-less pod's job is named after (see ``owner_group``), else None.
    owner_ref: OwnerRef | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def best_effort(self) -> bool:
        """No cpu, memory or extended request: only the ``pods`` count (backfill places these)."""
        return not any(v > 0 for k, v in self.request_map.items() if k != PODS)

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
        """The name of the PodGroup that stands for the owner's pods: ``<kind>-<name>``, lower case."""
        return f"{self.kind.lower()}-{self.name}"[:253]


def queue_annotation(annotations: Mapping[str, str]) -> str | None:
    """The queue a pod names: ours, else Volcano's annotation, else None."""
    return annotations.get(QUEUE_ANNOTATION) or annotations.get(VOLCANO_QUEUE_ANNOTATION) or None


def _container_statuses(value: Any) -> tuple[int, tuple[str, ...]]:
    restarts = 0
    reasons: list[str] = []
    for cs in value if isinstance(value, list) else []:
        if not isinstance(cs, Mapping):
            continue
        count = cs.get("restartCount")
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            restarts += count
        state = cs.get("state")
        for kind in ("waiting", "terminated"):
            detail = state.get(kind) if isinstance(state, Mapping) else None
            if isinstance(detail, Mapping) and isinstance(detail.get("reason"), str):
                reasons.append(detail["reason"])
    return restarts, tuple(reasons)


def pod_runtime(pod: Raw) -> PodRuntime:
    """The :class:`PodRuntime` of a raw pod; malformed status entries are skipped, never an error (the
    kubelet writes them, not the user)."""
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    if not isinstance(status, Mapping):
        status = {}
    restarts, reasons = _container_statuses(status.get("containerStatuses"))
    init_restarts, init_reasons = _container_statuses(status.get("initContainerStatuses"))
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    images = sorted(
        str(c.get("image"))
        for c in (containers if isinstance(containers, list) else [])
        if isinstance(c, Mapping) and c.get("image")
    )
    owners = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    kinds = tuple(
        str(r.get("kind"))
        for r in (owners if isinstance(owners, list) else [])
        if isinstance(r, Mapping) and r.get("kind")
    )
    reason = status.get("reason")
    out = PodRuntime(
        restarts=restarts,
        init_restarts=init_restarts,
        reason=reason if isinstance(reason, str) else "",
        container_reasons=reasons,
        init_container_reasons=init_reasons,
        images=tuple(images),
        owner_kinds=kinds,
    )
    return EMPTY_RUNTIME if out == EMPTY_RUNTIME else out


def pod_status(pod: Raw) -> tuple[TaskStatus, str | None]:
    """A pod's :class:`TaskStatus` and node, from its phase, deletion and ``spec.nodeName``."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    node = spec.get("nodeName") or None
    phase = status.get("phase") or "Pending"
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED, node
    if phase == "Failed":
        return TaskStatus.FAILED, node
    if meta.get("deletionTimestamp"):
        return (TaskStatus.RELEASING if node else TaskStatus.FAILED), node
    if node:
        return (TaskStatus.RUNNING if phase == "Running" else TaskStatus.BOUND), node
    return TaskStatus.PENDING, None


def build_task(
    pod: Raw,
    *,
    priority_classes: Mapping[str, int],
    default_priority: int = 0,
    scheduler_names: frozenset[str] = DEFAULT_SCHEDULER_NAMES,
) -> Task:
    """A pod as a :class:`Task`. Its job: the PodGroup its group annotation names; else, with a
    controller owner, the PodGroup that stands for the owner (:attr:`OwnerRef.group_name`); else itself."""
    ns, name = _meta(pod, "Pod")
    where = f"Pod {ns}/{name}"
    meta = pod["metadata"]
    spec = _map_field(pod, "spec", where)
    if not spec:
        raise InputError(f"{where}: missing field spec")
    if not spec.get("containers"):
        raise InputError(f"{where}: missing field spec.containers")
    annotations = dict(meta.get("annotations") or {})
    labels = dict(meta.get("labels") or {})
    request = pod_request(pod, where=where)
    status, node = pod_status(pod)
    priority = spec.get("priority")
    if priority is None:
        # Kubernetes' admission rejects pods of unknown classes; one that got through keeps the default.
        pc = spec.get("priorityClassName")
        priority = priority_classes.get(pc, default_priority) if pc else default_priority
    if isinstance(priority, bool) or not isinstance(priority, int) or not INT32_MIN <= priority <= INT32_MAX:
        raise InputError(f"{where}: spec.priority must be a 32-bit integer, got {_short(priority)}")
    group = annotations.get(GROUP_ANNOTATION) or annotations.get(VOLCANO_GROUP_ANNOTATION)
    selector, terms, tolerations = _placement(spec, where)
    preemptable_raw = annotations.get(PREEMPTABLE_ANNOTATION)
    preemptable = None if preemptable_raw is None else boolean_value(preemptable_raw) is True
    owners = meta.get("ownerReferences") or []
    owner = None
    owner_ref = None
    for ref in owners if isinstance(owners, list) else []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            owner = f"{ref.get('kind')}/{ref.get('name')}"
            if not group and ref.get("kind") and ref.get("name"):
                owner_ref = OwnerRef(
                    api_version=str(ref.get("apiVersion") or ""),
                    kind=str(ref["kind"]),
                    name=str(ref["name"]),
                    uid=str(ref.get("uid") or ""),
                )
    if group:
        job_key = f"{ns}/{group}"
    elif owner_ref is not None:
        job_key = f"{ns}/{owner_ref.group_name}"
    else:
        job_key = f"{ns}/{name}"
    # Strings many pods share are interned: one object per distinct value, not one per pod.
    intern = sys.intern
    scheduler_name = intern(str(spec.get("schedulerName") or "default-scheduler"))
    pcn = spec.get("priorityClassName") or ""
    task = Task(
        namespace=intern(ns),
        name=name,
        uid=str(meta.get("uid") or f"{ns}/{name}"),
        job_key=intern(job_key),
        request_map=request,
        priority=int(priority),
        status=status,
        node_name=None if node is None else intern(node),
        scheduler_name=scheduler_name,
        creation=parse_time(meta.get("creationTimestamp"), where=f"{where}: metadata.creationTimestamp"),
        node_selector=selector,
        affinity_terms=terms,
        tolerations=tolerations,
        preemption_policy=str(spec.get("preemptionPolicy") or "PreemptLowerPriority"),
        preemptable=preemptable,
        critical=pcn in CRITICAL_PRIORITY_CLASSES,
        labels=labels,
        annotations=annotations,
        owner=None if owner is None else intern(owner),
        start_time=parse_time((pod.get("status") or {}).get("startTime"), where=f"{where}: status.startTime"),
        runtime=pod_runtime(pod),
        constraints=parse_pod_constraints(spec, namespace=ns, labels=labels, where=where),
        preferred_node_terms=_preferred_node_terms(spec, where),
        host_ports=_host_ports(spec),
        claims=_claims(spec),
        ours=scheduler_name in scheduler_names,
        owner_ref=owner_ref,
    )
    task.placement_key = intern(placement_key(task))
    return task


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
        ],
        sort_keys=True,
        default=str,
    )


# --- nodes ----------------------------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class NodeSpec:
    name: str
    allocatable: dict[str, float]
    labels: dict[str, str]
    taints: tuple[tuple[str, str, str], ...]  # (key, value, effect)
    unschedulable: bool
    ready: bool
    addresses: tuple[str, ...] = ()
    annotations: dict[str, str] = field(default_factory=dict)


def build_node(node: Raw) -> NodeSpec:
    _, name = _meta(node, "Node")
    where = f"Node {name}"
    status = _map_field(node, "status", where)
    alloc_raw = status.get("allocatable") or status.get("capacity")
    if alloc_raw is None:
        raise InputError(f"{where}: missing field status.allocatable")
    allocatable = parse_resource_map(alloc_raw, where=f"{where}: status.allocatable")
    spec = _map_field(node, "spec", where)
    taints = []
    for i, t in enumerate(_list_field(spec.get("taints"), where=f"{where}: spec.taints")):
        if (
            not isinstance(t, Mapping)
            or not t.get("key")
            or t.get("effect")
            not in (
                "NoSchedule",
                "PreferNoSchedule",
                "NoExecute",
            )
        ):
            raise InputError(
                f"{where}: spec.taints[{i}] needs a key and an effect NoSchedule|PreferNoSchedule|NoExecute"
            )
        taints.append((str(t["key"]), str(t.get("value") or ""), str(t["effect"])))
    conditions = _list_field(status.get("conditions"), where=f"{where}: status.conditions")
    ready = True
    for cond in conditions:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            ready = str(cond.get("status")) == "True"
    addresses = tuple(
        str(a.get("address"))
        for a in _list_field(status.get("addresses"), where=f"{where}: status.addresses")
        if isinstance(a, Mapping) and a.get("address")
    )
    meta = node["metadata"]
    return NodeSpec(
        name=name,
        allocatable=allocatable,
        # The kubelet always sets kubernetes.io/hostname; input written by hand may leave it out.
        labels={
            "kubernetes.io/hostname": name,
            **{str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        },
        taints=tuple(taints),
        unschedulable=_bool_field(
            spec.get("unschedulable"), where=f"{where}: spec.unschedulable", default=False
        ),
        ready=ready,
        addresses=addresses,
        annotations={str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
    )


# --- queues, podgroups, namespaces ------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class QueueSpec:
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


#: Queue weights are int32 in the CRD (``maximum`` enforces it there).
MAX_WEIGHT = 2**31 - 1


def parse_guarantee(raw: Any, *, where: str) -> tuple[dict[str, float], dict[str, float]]:
    """``spec.guarantee.resource``: each value an amount (``2``, ``4Gi``) or a percentage of the
    cluster (``"25%"``, 0 to 100). Returns (amounts, percentages)."""
    if raw is None:
        return {}, {}
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a map of resource names to amounts or percentages")
    amounts: dict[str, Any] = {}
    percent: dict[str, float] = {}
    for name, value in raw.items():
        if isinstance(value, str) and value.strip().endswith("%"):
            text = value.strip()[:-1]
            try:
                pct = float(text)
            except ValueError:
                pct = -1.0
            if not text or not 0 <= pct <= 100 or text.lower() in ("nan", "inf", "infinity"):
                raise InputError(f"{where}.{name}: expected a percentage from 0% to 100%, got {value!r}")
            percent[str(name)] = pct
        else:
            amounts[str(name)] = value
    return parse_resource_map(amounts, where=where), percent


def build_queue(obj: Raw) -> QueueSpec:
    _, name = _meta(obj, "Queue")
    where = f"Queue {name}"
    spec = _map_field(obj, "spec", where)
    weight = _int_field(spec.get("weight"), where=f"{where}: spec.weight", default=1, minimum=1)
    if weight > MAX_WEIGHT:
        raise InputError(f"{where}: spec.weight must be at most {MAX_WEIGHT}, got {weight}")
    parent = spec.get("parent")
    if parent is not None and (not isinstance(parent, str)):
        raise InputError(f"{where}: spec.parent must be a queue name, got {parent!r}")
    cap_raw = spec.get("capability")
    capability = None if cap_raw is None else parse_resource_map(cap_raw, where=f"{where}: spec.capability")
    guarantee, guarantee_percent = parse_guarantee(
        _map_field(obj, "spec.guarantee", where).get("resource"), where=f"{where}: spec.guarantee.resource"
    )
    state_raw = spec.get("state") or (obj.get("status") or {}).get("state") or "Open"
    if state_raw not in ("Open", "Closed"):
        raise InputError(f"{where}: spec.state must be Open or Closed, got {state_raw!r}")
    return QueueSpec(
        name=name,
        weight=weight,
        capability=capability,
        guarantee=guarantee,
        reclaimable=_bool_field(spec.get("reclaimable"), where=f"{where}: spec.reclaimable", default=True),
        state=QueueState(state_raw),
        creation=parse_time(
            obj["metadata"].get("creationTimestamp"), where=f"{where}: metadata.creationTimestamp"
        ),
        guarantee_percent=guarantee_percent,
        parent=parent or None,
    )


def default_queue() -> QueueSpec:
    return QueueSpec(
        name=DEFAULT_QUEUE, weight=1, capability=None, guarantee={}, reclaimable=True, state=QueueState.OPEN
    )


@dataclass(slots=True, frozen=True)
class PodGroupSpec:
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

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True, frozen=True)
class GangTopology:
    """``spec.topology: {key, mode}`` of a PodGroup."""

    key: str
    #: Required: one domain or not at all; Preferred: one domain if any fits, else across domains.
    required: bool = True

    @property
    def mode(self) -> str:
        return "Required" if self.required else "Preferred"


def _gang_topology(spec: Mapping[str, Any], where: str) -> GangTopology | None:
    raw = spec.get("topology")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: spec.topology must be a map with key and mode")
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise InputError(f"{where}: spec.topology.key is required (a node label key, e.g. a rack label)")
    mode = raw.get("mode") or "Required"
    if mode not in ("Required", "Preferred"):
        raise InputError(f"{where}: spec.topology.mode must be Required or Preferred, got {mode!r}")
    return GangTopology(key=key, required=mode == "Required")


def build_podgroup(obj: Raw) -> PodGroupSpec:
    ns, name = _meta(obj, "PodGroup")
    where = f"PodGroup {ns}/{name}"
    if not ns:
        raise InputError(f"{where}: missing field metadata.namespace")
    spec = _map_field(obj, "spec", where)
    min_member = _int_field(spec.get("minMember"), where=f"{where}: spec.minMember", default=1, minimum=1)
    mr_raw = spec.get("minResources")
    min_resources = (
        None if mr_raw is None else parse_resource_map(mr_raw, where=f"{where}: spec.minResources")
    )
    queue = spec.get("queue") or DEFAULT_QUEUE
    if not isinstance(queue, str):
        raise InputError(f"{where}: spec.queue must be a string")
    phase_raw = (obj.get("status") or {}).get("phase") or "Pending"
    try:
        phase = PodGroupPhase(phase_raw)
    except ValueError:
        raise InputError(
            f"{where}: status.phase {phase_raw!r} is not one of {', '.join(p.value for p in PodGroupPhase)}"
        ) from None
    meta = obj["metadata"]
    return PodGroupSpec(
        namespace=ns,
        name=name,
        min_member=min_member,
        min_resources=min_resources,
        queue=queue,
        priority_class_name=str(spec.get("priorityClassName") or ""),
        phase=phase,
        creation=parse_time(meta.get("creationTimestamp"), where=f"{where}: metadata.creationTimestamp"),
        uid=str(meta.get("uid") or ""),
        topology=_gang_topology(spec, where),
    )


def quota_weight(quota: Raw) -> int:
    """The namespace weight one ResourceQuota declares; 1 when missing or invalid."""
    return quota_weight_and_problem(quota)[0]


def quota_weight_and_problem(quota: Raw) -> tuple[int, str | None]:
    """The namespace weight one ResourceQuota declares (1 when missing or invalid), and why a weight
    it declares is ignored (not a whole number >= 1), if one is."""
    hard = (quota.get("spec") or {}).get("hard") or {}
    best = 1
    problems: list[str] = []
    if not isinstance(hard, Mapping):
        return best, None
    for key in NAMESPACE_WEIGHT_KEYS:
        value = hard.get(key)
        if value is None:
            continue
        try:
            amount = parse_amount(value, where="weight")
        except InputError:
            amount = -1.0
        if amount >= 1 and amount == int(amount):
            best = max(best, int(amount))
        else:
            problems.append(f"spec.hard[{key}] {value!r} is not a whole number >= 1")
    if not problems:
        return best, None
    return (
        best,
        f"{object_ref(quota)}: {'; '.join(problems)}, so it is ignored (namespace weight {best} from it)",
    )


def priority_class_value(obj: Raw) -> tuple[str, int, bool]:
    _, name = _meta(obj, "PriorityClass")
    value = obj.get("value")
    if isinstance(value, bool) or not isinstance(value, int) or not INT32_MIN <= value <= INT32_MAX:
        raise InputError(f"PriorityClass {name}: field value must be a 32-bit integer, got {_short(value)}")
    return name, value, bool(obj.get("globalDefault"))


# --- volumes ------------------------------------------------------------------------------------------------


def claim_volume(obj: Raw) -> tuple[str, str]:
    """("ns/claim", bound PersistentVolume name or "" while unbound) of a PersistentVolumeClaim."""
    ns, name = _meta(obj, "PersistentVolumeClaim")
    where = f"PersistentVolumeClaim {ns}/{name}"
    if not ns:
        raise InputError(f"{where}: missing field metadata.namespace")
    volume = _map_field(obj, "spec", where).get("volumeName") or ""
    if not isinstance(volume, str):
        raise InputError(f"{where}: spec.volumeName must be a string")
    return f"{ns}/{name}", volume


def volume_node_terms(obj: Raw) -> tuple[str, list[Any]]:
    """(name, spec.nodeAffinity.required.nodeSelectorTerms) of a PersistentVolume ([] when none)."""
    _, name = _meta(obj, "PersistentVolume")
    where = f"PersistentVolume {name}"
    required = _map_field(obj, "spec.nodeAffinity.required", where)
    terms = _list_field(
        required.get("nodeSelectorTerms"), where=f"{where}: spec.nodeAffinity.required.nodeSelectorTerms"
    )
    for i, term in enumerate(terms):
        if not isinstance(term, Mapping):
            raise InputError(f"{where}: spec.nodeAffinity.required.nodeSelectorTerms[{i}] must be a map")
    return name, [dict(t) for t in terms]
