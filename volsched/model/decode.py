"""Raw Kubernetes objects (plain dicts) become the specs of :mod:`volsched.model.vocabulary`.

Pods become :class:`Task` (:func:`build_task`), PodGroups :class:`PodGroupSpec`, Queues
:class:`QueueSpec`, Nodes :class:`NodeSpec`; of ResourceQuotas, PriorityClasses, PersistentVolumes and
their claims only the fields the scheduler reads. Each builder validates what the scheduler relies on and
raises :class:`InputError` naming the object and the field.

The model's only door for whole objects (it calls :mod:`volsched.model.resources` for quantities and
:mod:`volsched.model.constraintdecode` for a pod's affinity and spread terms). No I/O happens here, and
nothing here knows about sessions or plugins.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple, TypeVar, cast

import orjson

from volsched.model import admitted
from volsched.model.constraintdecode import parse_pod_constraints, parse_selector
from volsched.model.devices import (
    Allocated,
    Claim,
    Device,
    DeviceClass,
    DeviceRequest,
    DeviceResult,
    DeviceSlice,
    MatchAttribute,
    PodClaim,
    semver_value,
)
from volsched.model.errors import InputError
from volsched.model.migration import migrated_csi
from volsched.model.raw import FrozenMap, Raw
from volsched.model.resources import CPU, MEMORY, PODS, as_counted, parse_amount, parse_resource_map
from volsched.model.scalars import boolean_value, parse_duration
from volsched.model.vocabulary import (
    API_GROUP,
    CRITICAL_PRIORITY_CLASSES,
    DEFAULT_QUEUE,
    DEFAULT_SCHEDULER_NAMES,
    EMPTY_RUNTIME,
    EXPECTED_RUNTIME_ANNOTATION,
    GROUP_ANNOTATION,
    MAX_WEIGHT,
    MIRROR_ANNOTATION,
    NAMESPACE_QUEUE_KEY,
    NAMESPACE_WEIGHT_KEYS,
    PREEMPTABLE_ANNOTATION,
    ROOT_QUEUE,
    VOLCANO_GROUP_ANNOTATION,
    VOLCANO_PREEMPTABLE,
    DisruptionBudget,
    GangTopology,
    NodeSpec,
    OwnerRef,
    PodGroupPhase,
    PodGroupSpec,
    PodRuntime,
    QueueAccess,
    QueueSpec,
    QueueState,
    Task,
    TaskStatus,
    placement_key,
)
from volsched.model.volumes import (
    BIND_COMPLETED,
    SELECTED_NODE,
    PersistentVolumeSpec,
    StorageCapacity,
    StorageClassSpec,
    VolumeClaim,
)
from volsched.records import copier

T = TypeVar("T")
#: What a mapping is: a dict first (what JSON and YAML decode to: a cheap check), then any Mapping (the
#: ABC's check costs several times a dict's, and a pod event takes about ten of them); as kube/prune.py.
_MAP = (dict, Mapping)


def _meta(obj: Raw, kind: str) -> tuple[str, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, _MAP):
        raise InputError(f"{kind}: missing field metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{kind}: missing field metadata.name")
    ns = meta.get("namespace") or ""
    if not isinstance(ns, str):
        raise InputError(f"{kind} {name}: metadata.namespace must be a string")
    return ns, name


#: The spec fields of volsched's own Queue and PodGroup (their CRDs, ``crds/``): the apiserver prunes any
#: other, so only hand-written input (``volsched simulate``) can carry one, as a typo the run would ignore.
QUEUE_SPEC_FIELDS = (
    "weight",
    "parent",
    "capability",
    "guarantee",
    "reclaimable",
    "state",
    "priority",
    "namespaceSelector",
    "priorityClasses",
    "maxPriority",
    "allowNotPreemptable",
    "perNamespace",
)
PODGROUP_SPEC_FIELDS = ("minMember", "minResources", "queue", "priorityClassName", "topology")


def _own_spec_fields(obj: Raw, spec: Mapping[str, Any], known: tuple[str, ...], *, where: str) -> None:
    """Refuses a spec field that volsched's own kind (``scheduling.volsched.io``, or no apiVersion)
    does not have, naming it and the known ones (Volcano's kinds, read through ours, are not checked)."""
    version = obj.get("apiVersion")
    if isinstance(version, str) and version and not version.startswith(f"{API_GROUP}/"):
        return
    unknown = [k for k in spec if k not in known]
    if unknown:
        import difflib  # (an error's hint only: not on the way of a listing at start)

        close = difflib.get_close_matches(str(unknown[0]), known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise InputError(
            f"{where}: spec.{unknown[0]} is not a field of volsched's {where.split()[0]}{hint}; "
            f"known: {', '.join(known)}"
        )


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
    found = _TIMES.get(value)
    if found is not None:
        return found
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"{where}: expected an RFC 3339 time, got {value!r}") from None
    if len(_TIMES) >= _SHARED_MAX:
        _TIMES.clear()
    _TIMES[value] = parsed
    return parsed


def _time(value: Any, where: str, field: str) -> float:
    """:func:`parse_time` of a pod's ``field``, its name for a message made only when the time is not one
    parsed lately (nor absent)."""
    if value is None:
        return 0.0
    found = _TIMES.get(value) if type(value) is str else None
    return found if found is not None else parse_time(value, where=f"{where}: {field}")


#: The times parsed lately, by their text: pods created in the same second (a Job's, a backlog listed at
#: start) share one parse. Emptied at _SHARED_MAX entries (see below).
_TIMES: dict[str, float] = {}


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
        hint = ""
        if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 20:
            # Every such field is an integer in its object's schema: the apiserver refuses digits in a
            # string, so a file the simulator took would not apply.
            hint = f" (a string: the apiserver refuses it; write the number without quotes: {int(value)})"
        raise InputError(f"{where}: expected an integer >= {minimum}, got {_short(value)}{hint}")
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
        if not isinstance(cur, _MAP):
            raise InputError(f"{where}: {path} must be a map")
        cur = cur.get(part)
    if cur is None:
        return {}
    if not isinstance(cur, _MAP):
        raise InputError(f"{where}: {path} must be a map, got {type(cur).__name__}")
    return cur


def _check_node_terms(terms: list[Any], *, where: str) -> None:
    """Each of ``terms`` (node selector terms: a pod's required node affinity, a PersistentVolume's node
    affinity, a ResourceSlice's node selector) is a map whose ``matchExpressions`` and ``matchFields``
    are lists of expressions with a key and an operator Kubernetes knows, as the apiserver validates them:
    else refused naming the field (a simulator's input is not validated before). What an expression
    says is read when it is matched (``volsched.model.nodeterms``)."""
    for i, term in enumerate(terms):
        if not isinstance(term, _MAP):
            raise InputError(f"{where}: nodeSelectorTerms[{i}] must be a map")
        for kind in ("matchExpressions", "matchFields"):
            exprs = _list_field(term.get(kind), where=f"{where}: nodeSelectorTerms[{i}].{kind}")
            for j, expr in enumerate(exprs):
                if not isinstance(expr, _MAP) or "key" not in expr or "operator" not in expr:
                    raise InputError(f"{where}: nodeSelectorTerms[{i}].{kind}[{j}] needs key and operator")
                if expr["operator"] not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                    raise InputError(
                        f"{where}: nodeSelectorTerms[{i}].{kind}[{j}].operator {expr['operator']!r} is not one "
                        "of In, NotIn, Exists, DoesNotExist, Gt, Lt"
                    )


def _list_field(value: Any, *, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: expected a list, got {type(value).__name__}")
    return value


#: What kube-scheduler's scoring counts for a container that asks no cpu or no memory
#: (``DefaultMilliCPURequest`` and ``DefaultMemoryRequest`` of its ``util`` package): for scores only.
SCORING_DEFAULTS: Mapping[str, float] = {CPU: 0.1, MEMORY: 200.0 * 1024 * 1024}


def pod_request(pod: Raw, *, where: str, missing: Mapping[str, float] | None = None) -> dict[str, float]:
    """The Kubernetes effective request of a pod, by its spec.

    Sum of the app containers (and restartable init "sidecar" containers), at least as large as each
    ordinary init container plus the sidecars started before it; the pod-level request of cpu, memory or
    hugepages (``spec.resources``) instead, where given; plus ``spec.overhead``. A limit stands in for a
    missing request (at pod level, of a resource no container asks: the apiserver's defaulting). Every
    pod also counts one ``pods``. ``missing``: what a container that asks none of a resource counts
    (kube-scheduler's ``NonMissingContainerRequests``; 0 set explicitly stays 0). What a pod being
    resized in place holds is :func:`resized_request`'s.
    """
    spec = _map_field(pod, "spec", where)
    asked: set[str] = set()
    apps, inits = _container_requests(spec, asked, missing=missing, where=where)
    return _pod_total(spec, _aggregate(apps, inits), asked, where=where)


def _container_requests(
    spec: Mapping[str, Any], asked: set[str], *, missing: Mapping[str, float] | None, where: str
) -> tuple[list[tuple[Any, dict[str, float]]], list[tuple[Any, dict[str, float], bool]]]:
    """Each app container's (name, request), and each init container's (name, request, is a sidecar);
    ``asked`` gathers the resources any of them names."""

    def container_request(c: Any, path: str) -> dict[str, float]:
        if not isinstance(c, _MAP):
            raise InputError(f"{where}: {path} must be a map")
        res = c.get("resources") or {}
        if not isinstance(res, _MAP):
            raise InputError(f"{where}: {path}.resources must be a map")
        limits = parse_resource_map(res.get("limits"), where=f"{where}: {path}.resources.limits")
        requests = parse_resource_map(res.get("requests"), where=f"{where}: {path}.resources.requests")
        asked.update(limits, requests)
        if missing:
            return {**missing, **limits, **requests}
        return {**limits, **requests}

    apps = [
        (c.get("name") if isinstance(c, _MAP) else None, container_request(c, f"spec.containers[{i}]"))
        for i, c in enumerate(_list_field(spec.get("containers"), where=f"{where}: spec.containers"))
    ]
    inits = [
        (
            c.get("name") if isinstance(c, _MAP) else None,
            container_request(c, f"spec.initContainers[{i}]"),
            isinstance(c, _MAP) and c.get("restartPolicy") == "Always",
        )
        for i, c in enumerate(_list_field(spec.get("initContainers"), where=f"{where}: spec.initContainers"))
    ]
    return apps, inits


def _aggregate(
    apps: list[tuple[Any, dict[str, float]]], inits: list[tuple[Any, dict[str, float], bool]]
) -> dict[str, float]:
    """What the containers ask together: the app containers' and sidecars' sum, at least each ordinary
    init container plus the sidecars started before it (KEP 753's formula)."""
    total: dict[str, float] = {}
    for _, req in apps:
        for k, v in req.items():
            total[k] = total.get(k, 0.0) + v
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for _, req, sidecar in inits:
        if sidecar:
            for k, v in req.items():
                sidecars[k] = sidecars.get(k, 0.0) + v
            continue
        for k, v in req.items():
            init_peak[k] = max(init_peak.get(k, 0.0), v + sidecars.get(k, 0.0))
    for k, v in sidecars.items():
        total[k] = total.get(k, 0.0) + v
    for k, v in init_peak.items():
        total[k] = max(total.get(k, 0.0), v)
    return total


def _pod_total(
    spec: Mapping[str, Any], total: dict[str, float], asked: set[str], *, where: str
) -> dict[str, float]:
    """``total`` (the containers' aggregate) with the pod-level request, the overhead and one ``pods``."""
    if spec.get("resources") is not None:
        total.update(_pod_level_requests(spec["resources"], asked, where=where))
    for k, v in parse_resource_map(spec.get("overhead"), where=f"{where}: spec.overhead").items():
        total[k] = total.get(k, 0.0) + v
    for k, v in total.items():  # (kube-scheduler rounds the pod's total up: 2 containers of 0.5m are 1m)
        total[k] = as_counted(k, v)
    total[PODS] = 1.0
    return total


#: The pod condition the kubelet sets while a resize waits, and its reason when the node can never give it.
RESIZE_PENDING = "PodResizePending"
RESIZE_INFEASIBLE = "Infeasible"


def _resize_infeasible(conditions: Any) -> bool:
    """The kubelet marked the pod's resize ``Infeasible`` (its first ``PodResizePending`` condition)."""
    for c in conditions if type(conditions) is list else ():
        if isinstance(c, _MAP) and c.get("type") == RESIZE_PENDING:
            return c.get("reason") == RESIZE_INFEASIBLE
    return False


def _reports_resources(statuses: Any) -> bool:
    """Whether any of a pod's container ``statuses`` says what the kubelet allocated or runs it with."""
    for cs in statuses if type(statuses) is list else ():
        if type(cs) is dict and ("allocatedResources" in cs or "resources" in cs):
            return True
    return False


def _status_map(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, _MAP) else None


def resized_request(pod: Raw, spec_request: dict[str, float], *, where: str) -> dict[str, float]:
    """What a pod holds on its node while it is resized in place, as kube-scheduler counts it (the
    component helpers' PodRequests with the pod's status): per resource, the largest of what its spec
    asks, what the kubelet allocated (``status.containerStatuses[].allocatedResources``) and what the
    containers run with (``...resources.requests``); without the spec when the kubelet marked the resize
    ``Infeasible`` (it never gives it). Each is the containers' aggregate, a container with no status
    counting its spec (nothing once ``Infeasible``); pod-level requests, overhead and ``pods`` as the
    spec's. ``spec_request`` (the spec's :func:`pod_request`) when the status says nothing else, the common
    case: malformed status entries are skipped (the kubelet writes them, not the user)."""
    status = pod.get("status")
    if type(status) is not dict:
        return spec_request
    infeasible = "conditions" in status and _resize_infeasible(status["conditions"])
    if not (
        infeasible
        or _reports_resources(status.get("containerStatuses"))
        or _reports_resources(status.get("initContainerStatuses"))
    ):
        return spec_request  # (what the pruner leaves of a pod not being resized)
    spec = pod["spec"]
    by_name: dict[Any, Mapping[str, Any]] = {}
    differs = infeasible
    for key, spec_key in (("containerStatuses", "containers"), ("initContainerStatuses", "initContainers")):
        statuses = status.get(key)
        if type(statuses) is not list:
            continue
        containers = spec.get(spec_key)
        containers = containers if isinstance(containers, list) else ()
        for i, cs in enumerate(statuses):
            if type(cs) is not dict:
                continue
            allocated = cs.get("allocatedResources")
            resources = _status_map(cs.get("resources"))
            actual = None if resources is None else resources.get("requests")
            if allocated is None and actual is None:
                continue
            by_name[cs.get("name")] = cs
            if differs:
                continue
            # The apiserver writes quantities in one canonical form: the same request reads the same.
            c = containers[i] if i < len(containers) else None
            if not isinstance(c, _MAP) or c.get("name") != cs.get("name"):
                differs = True
                continue
            res = _status_map(c.get("resources"))
            want = None if res is None else res.get("requests")
            if (allocated is not None and allocated != want) or (actual is not None and actual != want):
                differs = True
    if not differs:
        return spec_request
    asked: set[str] = set()
    apps, inits = _container_requests(spec, asked, missing=None, where=where)

    def amounts(value: Any) -> dict[str, float] | None:
        if not isinstance(value, _MAP):
            return None
        try:
            return parse_resource_map(value, where=where)
        except InputError:
            return None

    def allocated_of(name: Any, req: dict[str, float]) -> dict[str, float]:
        cs = by_name.get(name)
        got = None if cs is None else amounts(cs.get("allocatedResources"))
        return got if got is not None else ({} if infeasible else req)

    def actual_of(name: Any, req: dict[str, float]) -> dict[str, float]:
        cs = by_name.get(name)
        res = None if cs is None else _status_map(cs.get("resources"))
        got = None if res is None else amounts(res.get("requests"))
        return got if got is not None else allocated_of(name, req)

    allocated = _aggregate(
        [(n, allocated_of(n, r)) for n, r in apps], [(n, allocated_of(n, r), s) for n, r, s in inits]
    )
    actual = _aggregate(
        [(n, actual_of(n, r)) for n, r in apps], [(n, actual_of(n, r), s) for n, r, s in inits]
    )
    total = {} if infeasible else _aggregate(apps, inits)
    for part in (allocated, actual):
        for k, v in part.items():
            if v > total.get(k, 0.0):
                total[k] = v
    out = _pod_total(spec, total, asked, where=where)
    return spec_request if out == spec_request else _shared(out, _REQUESTS)


def _pod_level(name: str) -> bool:
    """Whether Kubernetes takes ``name`` in a pod's ``spec.resources`` (its IsSupportedPodLevelResource)."""
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


def _pod_level_requests(raw: Any, asked: set[str], *, where: str) -> dict[str, float]:
    """``spec.resources``: what the pod asks as a whole, which stands for its containers' sum of each
    resource named (Kubernetes' PodRequests); a limit is the request of a resource no container asks
    (``asked``), as the apiserver defaults it. A resource Kubernetes does not take there is refused, and
    so are ``claims`` there (the apiserver's validation forbids them at pod level)."""
    if not isinstance(raw, _MAP):
        raise InputError(f"{where}: spec.resources must be a map, got {_short(raw)}")
    if raw.get("claims"):
        raise InputError(
            f"{where}: spec.resources.claims: claims are not taken at pod level (the apiserver refuses them "
            "there; name each in the resources.claims of the container that uses it)"
        )
    out: dict[str, float] = {}
    for part in ("limits", "requests"):
        amounts = parse_resource_map(raw.get(part), where=f"{where}: spec.resources.{part}")
        for name, amount in amounts.items():
            if not _pod_level(name):
                raise InputError(
                    f"{where}: spec.resources.{part}: {name} is not a pod-level resource (cpu, memory and "
                    "hugepages-* are; ask it in a container)"
                )
            if part == "requests" or name not in asked:
                out[name] = amount
    return out


def _asks_cpu_and_memory(container: Any) -> bool:
    res = container.get("resources") if isinstance(container, _MAP) else None
    if not isinstance(res, _MAP):
        return False
    asked = (res.get("requests") or {}, res.get("limits") or {})
    return any(CPU in m for m in asked) and any(MEMORY in m for m in asked)


def scoring_extra(pod: Raw, request: Mapping[str, float], *, where: str) -> tuple[float, float] | None:
    """How much more (cpu, memory) kube-scheduler's least- and most-requested scores count for this pod
    than it requests (:data:`SCORING_DEFAULTS` for each container that asks none), or None: nothing more.
    Scores only: what fits is what the pod requests."""
    spec = pod.get("spec")
    if isinstance(spec, _MAP) and all(
        _asks_cpu_and_memory(c) for kind in ("containers", "initContainers") for c in spec.get(kind) or ()
    ):
        return None  # every container asks both: the common case, without a second parse
    scored = pod_request(pod, where=where, missing=SCORING_DEFAULTS)
    extra = (scored.get(CPU, 0.0) - request.get(CPU, 0.0), scored.get(MEMORY, 0.0) - request.get(MEMORY, 0.0))
    return extra if extra[0] > 0 or extra[1] > 0 else None


_TOLERATION_OPERATORS = ("Equal", "Exists", "Lt", "Gt")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _check_toleration(tol: Any, *, where: str) -> None:
    """A toleration as the apiserver validates it (its operators, Kubernetes 1.35's numeric ones
    included, and effects; what ``Exists`` and an empty key allow): one it refuses is refused here, never
    read as something else."""
    if not isinstance(tol, _MAP):
        raise InputError(f"{where} must be a map, got {_short(tol)}")
    op = tol.get("operator") or "Equal"
    if op not in _TOLERATION_OPERATORS:
        raise InputError(f"{where}.operator: {_short(op)} is not one of {', '.join(_TOLERATION_OPERATORS)}")
    effect = tol.get("effect") or ""
    if effect and effect not in _TAINT_EFFECTS:
        raise InputError(f"{where}.effect: {_short(effect)} is not one of {', '.join(_TAINT_EFFECTS)}")
    value = tol.get("value") or ""
    if not tol.get("key") and op != "Exists":
        raise InputError(f"{where}.operator: must be Exists when key is empty")
    if op == "Exists" and value:
        raise InputError(f"{where}.value: must be empty when operator is Exists")
    if op in ("Lt", "Gt") and not (isinstance(value, str) and value.lstrip("+-").isdigit()):
        raise InputError(f"{where}.value: must be an integer for operator {op}, got {_short(value)}")


def _placement(spec: Mapping[str, Any], where: str) -> tuple[dict[str, str], list[Any], list[Any]]:
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, _MAP) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in selector.items()
    ):
        raise InputError(f"{where}: spec.nodeSelector must be a map of strings")
    affinity = spec.get("affinity") or {}
    if not isinstance(affinity, _MAP):
        raise InputError(f"{where}: spec.affinity must be a map")
    node_aff = _map_value(affinity.get("nodeAffinity"), where=f"{where}: spec.affinity.nodeAffinity")
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = _list_field(
        required.get("nodeSelectorTerms") if isinstance(required, _MAP) else None,
        where=f"{where}: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms",
    )
    _check_node_terms(terms, where=where)
    tolerations = _list_field(spec.get("tolerations"), where=f"{where}: spec.tolerations")
    for i, toleration in enumerate(tolerations):
        _check_toleration(toleration, where=f"{where}: spec.tolerations[{i}]")
    # The pod's own containers when they are plain dicts and lists (nothing changes a pod in place).
    return (
        _shared_map(selector, where=f"{where}: spec.nodeSelector"),
        _shared_list(terms),
        _shared_list(tolerations),
    )


def _preferred_node_terms(spec: Mapping[str, Any], where: str) -> list[tuple[int, Any]]:
    node_aff = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    at = f"{where}: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    out: list[tuple[int, Any]] = []
    for i, p in enumerate(
        _list_field(node_aff.get("preferredDuringSchedulingIgnoredDuringExecution"), where=at)
    ):
        weight = p.get("weight") if isinstance(p, _MAP) else None
        pref = p.get("preference") if isinstance(p, _MAP) else None
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
            raise InputError(f"{at}[{i}].weight: expected an integer 1..100, got {weight!r}")
        if not isinstance(pref, _MAP):
            raise InputError(f"{at}[{i}].preference: must be a node selector term (a map)")
        out.append((weight, dict(pref)))
    return out


def _host_ports(spec: Mapping[str, Any], *, where: str) -> tuple[tuple[str, int, str], ...]:
    """The (protocol, port, host IP) a pod's containers take on its node. A ``hostNetwork`` pod's port
    without a ``hostPort`` takes its ``containerPort`` there, as the apiserver's defaulting writes it."""
    host = _bool_field(spec.get("hostNetwork"), where=f"{where}: spec.hostNetwork", default=False)
    out: set[tuple[str, int, str]] = set()
    for kind in ("initContainers", "containers"):
        for i, c in enumerate(_list_field(spec.get(kind), where=f"{where}: spec.{kind}")):
            ports = (
                _list_field(c.get("ports"), where=f"{where}: spec.{kind}[{i}].ports")
                if isinstance(c, _MAP)
                else []
            )
            for p in ports:
                if not isinstance(p, _MAP):
                    continue
                port = p.get("hostPort") or (p.get("containerPort") if host else None)
                if isinstance(port, int) and not isinstance(port, bool) and port > 0:
                    ip = str(p.get("hostIP") or "0.0.0.0")
                    out.add((str(p.get("protocol") or "TCP"), port, ip))
    return tuple(sorted(out))


def _ephemeral_volumes(spec: Mapping[str, Any], *, where: str) -> tuple[str, ...]:
    """The names of the pod's generic ephemeral volumes (``spec.volumes[].ephemeral``): the ephemeral
    volume controller makes a claim for each, ``<pod>-<volume>``, which the pod mounts as its own."""
    return tuple(
        sorted(
            str(v["name"])
            for v in _list_field(spec.get("volumes"), where=f"{where}: spec.volumes")
            if isinstance(v, _MAP) and v.get("ephemeral") is not None and isinstance(v.get("name"), str)
        )
    )


def _inline_volumes(spec: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The pod's inline volumes of in-tree plugins migrated to CSI, as (the CSI driver, the volume's id),
    each once, in order (attach limits count them as kube-scheduler does)."""
    out: dict[tuple[str, str], None] = {}
    for v in spec.get("volumes") or []:
        if isinstance(v, _MAP) and (got := migrated_csi(v)) is not None:
            out[got] = None
    return tuple(out)


def _claims(spec: Mapping[str, Any], *, where: str) -> tuple[str, ...]:
    out = []
    for v in _list_field(spec.get("volumes"), where=f"{where}: spec.volumes"):
        claim = (v.get("persistentVolumeClaim") or {}) if isinstance(v, _MAP) else {}
        if isinstance(claim, _MAP) and claim.get("claimName"):
            out.append(str(claim["claimName"]))
    return tuple(sorted(set(out)))


def _resource_claims(spec: Mapping[str, Any], status: Any, where: str) -> tuple[PodClaim, ...]:
    """``spec.resourceClaims``, with the names of the claims made from templates for this pod (the
    resource claim controller writes them in ``status.resourceClaimStatuses``)."""
    entries = _list_field(spec.get("resourceClaims"), where=f"{where}: spec.resourceClaims")
    if not entries:
        return ()
    made: dict[str, str] = {}
    statuses = status.get("resourceClaimStatuses") if isinstance(status, _MAP) else None
    for s in statuses if isinstance(statuses, list) else ():
        if (
            isinstance(s, _MAP)
            and isinstance(s.get("name"), str)
            and isinstance(s.get("resourceClaimName"), str)
        ):
            made[s["name"]] = s["resourceClaimName"]
    out: list[PodClaim] = []
    for i, entry in enumerate(entries):
        at = f"{where}: spec.resourceClaims[{i}]"
        if not isinstance(entry, _MAP):
            raise InputError(f"{at} must be a map")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f"{at}: missing field name")
        if any(c.name == name for c in out):
            raise InputError(f"{at}: name {name!r} is given twice")
        claim, template = entry.get("resourceClaimName"), entry.get("resourceClaimTemplateName")
        if bool(claim) == bool(template):
            raise InputError(f"{at}: give exactly one of resourceClaimName and resourceClaimTemplateName")
        if not isinstance(claim or template, str):
            raise InputError(f"{at}: resourceClaimName and resourceClaimTemplateName must be strings")
        out.append(PodClaim(name=name, claim=claim or made.get(name, ""), template=template or ""))
    return tuple(out)


def _container_statuses(value: Any) -> tuple[int, tuple[str, ...], tuple[int, ...]]:
    """(restarts summed, waiting and terminated reasons, terminated exit codes) of container statuses."""
    restarts = 0
    reasons: list[str] = []
    codes: list[int] = []
    for cs in value if isinstance(value, list) else []:
        if not isinstance(cs, _MAP):
            continue
        count = cs.get("restartCount")
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            restarts += count
        state = cs.get("state")
        if state is None or not isinstance(state, _MAP):
            continue
        # (A running container's state has neither: each None is passed over before the Mapping ABC's
        # check, about ten times a dict's.)
        for kind in ("waiting", "terminated"):
            detail = state.get(kind)
            if detail is not None and isinstance(detail, _MAP) and isinstance(detail.get("reason"), str):
                reasons.append(detail["reason"])
        ended = state.get("terminated")
        code = ended.get("exitCode") if ended is not None and isinstance(ended, _MAP) else None
        if isinstance(code, int) and not isinstance(code, bool):
            codes.append(code)
    return restarts, tuple(reasons), tuple(codes)


def ready_conditions(conditions: Any) -> list[bool]:
    """Whether each Ready condition of a pod's ``status.conditions`` says True (malformed entries
    skipped)."""
    return [
        c.get("status") == "True"
        for c in (conditions if isinstance(conditions, list) else ())
        if isinstance(c, _MAP) and c.get("type") == "Ready"
    ]


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """Kubernetes' IsPodReady, as the disruption controller and the Eviction API count a pod healthy:
    a Ready condition that says True (a pod without one is not ready)."""
    status = pod.get("status")
    return any(ready_conditions(status.get("conditions") if isinstance(status, _MAP) else None))


QOS_CLASSES = ("BestEffort", "Burstable", "Guaranteed")


def pod_qos(spec: Any) -> str:
    """The QoS class Kubernetes gives a pod of this spec: ``BestEffort`` without a cpu or memory request
    or limit in any container, ``Guaranteed`` when every container has cpu and memory limits and its
    requests (where given) equal them, else ``Burstable``; with pod-level cpu or memory
    (``spec.resources``), the same of the pod's as of one container. A malformed amount counts as none."""
    containers: list[Any] = []
    level = spec.get("resources") if isinstance(spec, _MAP) else None
    if isinstance(level, _MAP) and any(
        isinstance(level.get(part), _MAP) and ({CPU, MEMORY} & level[part].keys())
        for part in ("requests", "limits")
    ):
        containers = [{"resources": level}]  # (Kubernetes' ComputePodQOS reads the pod's alone then)
    for key in ("containers", "initContainers") if not containers else ():
        value = spec.get(key) if isinstance(spec, _MAP) else None
        containers += value if isinstance(value, list) else []
    guaranteed, seen = True, False
    for c in containers:
        res = c.get("resources") if isinstance(c, _MAP) else None
        res = res if isinstance(res, _MAP) else {}
        amounts: list[dict[str, float]] = []
        for part in ("requests", "limits"):
            try:
                parsed = parse_resource_map(res.get(part), where="")
            except InputError:
                parsed = {}
            amounts.append({k: v for k, v in parsed.items() if k in (CPU, MEMORY) and v > 0})
        requests, limits = amounts
        seen = seen or bool(requests) or bool(limits)
        if set(limits) != {CPU, MEMORY} or any(limits.get(k) != v for k, v in requests.items()):
            guaranteed = False
    if not seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def pod_runtime(pod: Raw) -> PodRuntime:
    """The :class:`PodRuntime` of a raw pod; malformed status entries are skipped, never an error (the
    kubelet writes them, not the user)."""
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    if not isinstance(status, _MAP):
        status = {}
    restarts, reasons, codes = _container_statuses(status.get("containerStatuses"))
    init_restarts, init_reasons, init_codes = _container_statuses(status.get("initContainerStatuses"))
    _, ephemeral_reasons, _ = _container_statuses(status.get("ephemeralContainerStatuses"))
    containers = spec.get("containers") if isinstance(spec, _MAP) else None
    images = sorted(
        str(c.get("image"))
        for c in (containers if isinstance(containers, list) else [])
        if isinstance(c, _MAP) and c.get("image")
    )
    owners = meta.get("ownerReferences") if isinstance(meta, _MAP) else None
    kinds = tuple(
        str(r.get("kind"))
        for r in (owners if isinstance(owners, list) else [])
        if isinstance(r, _MAP) and r.get("kind")
    )
    reason = status.get("reason")
    conditions = status.get("conditions")
    qos = status.get("qosClass")
    if qos not in QOS_CLASSES:
        qos = pod_qos(spec)
    volumes = spec.get("volumes") if isinstance(spec, _MAP) else None
    local = any(
        isinstance(v, _MAP) and (v.get("emptyDir") is not None or v.get("hostPath") is not None)
        for v in (volumes if isinstance(volumes, list) else ())
    )
    # A Running pod without a Ready condition is not ready either (pod_ready). A pod with none that is
    # not Running (pending: only a Running pod's readiness is ever asked) keeps the shared empty runtime.
    ready = ready_conditions(conditions)
    unready = not any(ready) and (bool(ready) or status.get("phase") == "Running")
    out = PodRuntime(
        restarts=restarts,
        init_restarts=init_restarts,
        reason=reason if isinstance(reason, str) else "",
        container_reasons=reasons,
        init_container_reasons=init_reasons,
        ephemeral_container_reasons=ephemeral_reasons,
        exit_codes=codes,
        init_exit_codes=init_codes,
        phase_unknown=status.get("phase") == "Unknown",
        qos=str(qos),
        images=tuple(images),
        owner_kinds=kinds,
        unready=unready,
        local_storage=local,
        deleting=isinstance(meta, _MAP) and bool(meta.get("deletionTimestamp")),
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


def _map_value(value: Any, *, where: str) -> Mapping[str, Any]:
    """An optional map (``where``: the object and field, for the error): {} when absent; anything but a
    map (a string, a list) is refused, never read as one."""
    if value is None:
        return {}
    if not isinstance(value, _MAP):
        raise InputError(f"{where} must be a map, got {type(value).__name__}")
    return value


def _shared_map(value: Any, *, where: str) -> dict[str, Any]:
    """A pod's map as a task keeps it: the pod's own dict (the cache never changes a pod or a task in
    place), a copy of any other mapping; not a map: refused (see :func:`_map_value`)."""
    return value if type(value) is dict else dict(_map_value(value, where=where))


def _shared_list(value: list[Any]) -> list[Any]:
    """A pod's list (checked by :func:`_list_field`) as a task keeps it: as for :func:`_shared_map`."""
    return value if type(value) is list else list(value)


#: Values many pods have equal, kept once: the request maps and the runtimes of the pods parsed lately
#: (a table is emptied when it reaches _SHARED_MAX entries, so it never grows with the cluster).
_REQUESTS: dict[Any, Any] = {}
_RUNTIMES: dict[Any, Any] = {}
_SHARED_MAX = 4096


def _shared(value: T, table: dict[Any, Any]) -> T:
    key = tuple(value.items()) if isinstance(value, dict) else value
    found = table.get(key)
    if found is not None:
        return cast(T, found)
    if len(table) >= _SHARED_MAX:
        table.clear()
    table[key] = value
    return value


def scheduling_group(spec: Mapping[str, Any]) -> str:
    """The PodGroup (Kubernetes' own, ``scheduling.k8s.io``) a pod's ``spec.schedulingGroup.podGroupName``
    names; "" when none. A group annotation, when a pod has one too, wins."""
    group = spec.get("schedulingGroup")
    if group is None:  # (most pods: asked before isinstance, whose Mapping check is slow for None)
        return ""
    name = group.get("podGroupName") if isinstance(group, _MAP) else None
    return name if isinstance(name, str) else ""


def named_group(pod: Raw) -> str:
    """``ns/group`` of the PodGroup a pod's group annotation names, read leniently (of a pod the cache
    refused too); "" when it names none."""
    meta = pod.get("metadata")
    if not isinstance(meta, _MAP):
        return ""
    annotations = meta.get("annotations")
    annotations = annotations if isinstance(annotations, _MAP) else {}
    group = annotations.get(GROUP_ANNOTATION) or annotations.get(VOLCANO_GROUP_ANNOTATION)
    if not group and isinstance(spec := pod.get("spec"), _MAP):
        group = scheduling_group(spec)
    ns = meta.get("namespace")
    return f"{ns}/{group}" if isinstance(group, str) and group and isinstance(ns, str) and ns else ""


class _SpecParse(NamedTuple):
    """What a pod's task takes from its spec alone (with, for pod affinity and spread, its namespace and
    labels): the same for every pod of one template."""

    request: dict[str, float]
    selector: dict[str, str]
    terms: list[Any]
    tolerations: list[Any]
    constraints: Any
    preferred: list[tuple[int, Any]]
    host_ports: tuple[tuple[str, int, str], ...]
    claims: tuple[str, ...]
    #: The task's placement_key as built (None: not known yet, computed from the task).
    placement_key: str | None
    #: The runtime of a pod of this spec that the kubelet has reported nothing of and that has no owner
    #: (see :func:`_runtime`): its images only.
    runtime: PodRuntime
    #: :func:`scoring_extra` of the spec.
    score_extra: tuple[float, float] | None = None
    #: Its key has a null in it (see :func:`_parsed_spec`).
    nullable: bool = False
    #: Its generic ephemeral volumes' names (the claims are named after the pod: see ``build_task``).
    ephemeral: tuple[str, ...] = ()
    #: Its inline in-tree volumes as their CSI driver's (:func:`_inline_volumes`).
    inline: tuple[tuple[str, str], ...] = ()


#: The parses of the pod specs seen last, by the spec's JSON (keys sorted; ``nodeName`` left out, as it
#: is the pod's own): the pods of one Job or Deployment are parsed once, not once each (at start, tens of
#: thousands of pods share a few templates). Emptied when it reaches _SHARED_MAX entries, like the
#: tables above. Only a spec that parsed is kept: a bad one raises for each pod, naming it.
_SPECS: dict[bytes, _SpecParse] = {}
#: The spec fields :func:`_parsed_spec` reads none of, or reads per pod (the node, the priority, the
#: gates): left out of the key.
_PER_POD = frozenset(
    {"nodeName", "priority", "priorityClassName", "schedulingGates", "schedulerName", "schedulingGroup"}
)


def _reads_pod(spec: Mapping[str, Any]) -> bool:
    """Whether a spec's parse reads its pod's namespace and labels besides (pod affinity and spread's
    default selectors)."""
    aff = spec.get("affinity")
    return bool(spec.get("topologySpreadConstraints")) or (
        aff is not None and isinstance(aff, _MAP) and ("podAffinity" in aff or "podAntiAffinity" in aff)
    )


def _spec_key(spec: Mapping[str, Any], *, ns: str, labels: Mapping[str, Any]) -> tuple[bytes, Any] | None:
    """The key of a spec's parse, with what it was written from (None: it has no JSON key, as a YAML
    date has not; parsed each time). A NaN or an infinity (a YAML .nan, .inf) is written as null, as
    None is: see :func:`_parsed_spec`."""
    context = (ns, labels) if _reads_pod(spec) else None
    # The parse reads none of the fields in _PER_POD: a key may leave them out or not. A spec without a
    # node (a pending pod's: those listed at start, those arriving) is written whole, without a copy
    # (the pods of one template have the same priority, scheduler and gates); a bound pod's is written
    # without them (its node is its own, and other pods of its template are on other nodes).
    own = spec if "nodeName" not in spec else {k: v for k, v in spec.items() if k not in _PER_POD}
    keyed = own if context is None else [context, own]  # (a map, a list: never the same JSON)
    try:
        # Dates passed through (so refused): written as strings, a YAML date would share the parse of
        # the string it looks like, where it is no string (a node selector's value, say).
        key = orjson.dumps(keyed, option=orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME)
    except TypeError:  # orjson.JSONEncodeError: a value of no JSON type, a key not a string
        return None
    return key, keyed


def _finite(value: Any) -> bool:
    """Whether no float in ``value`` (maps and lists, nested) is a NaN or an infinity."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, _MAP):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


def _parsed_spec(
    pod: Raw, spec: Mapping[str, Any], *, ns: str, labels: Mapping[str, Any], where: str
) -> _SpecParse:
    # A spec the pods of one template share (read-only: a listing's, kube/prune.py) keeps its parse, when
    # that reads nothing but the spec: no key to write, no table to look in. A bound pod's spec over a
    # shared one (its node its own: the parse reads no field of _PER_POD) finds it with the shared one.
    if type(spec) is not FrozenMap:
        return _keyed_parse(pod, spec, ns=ns, labels=labels, where=where)
    holder = spec if spec.of is None else spec.of
    if holder.memo is not None:
        return cast(_SpecParse, holder.memo)
    parsed = _keyed_parse(pod, spec, ns=ns, labels=labels, where=where)
    if not _reads_pod(spec):
        holder.memo = parsed
    return parsed


def _keyed_parse(
    pod: Raw, spec: Mapping[str, Any], *, ns: str, labels: Mapping[str, Any], where: str
) -> _SpecParse:
    """A spec's parse, shared with the specs of the same key (see :data:`_SPECS`)."""
    keyed = _spec_key(spec, ns=ns, labels=labels)
    key = None
    nullable = False
    if keyed is not None:
        key, written = keyed
        found = _SPECS.get(key)
        if found is not None:
            # A key with a null in it may be a NaN's or an infinity's (written as null): only the specs
            # of such a key are walked for them, so a key is searched for null once, at its parse (the
            # apiserver leaves empty fields out: its pods' keys have none).
            if not found.nullable or _finite(written):
                return found
            key = None  # parsed alone, not kept
        else:
            nullable = b"null" in key
            if nullable and not _finite(written):
                key = None
    request = _shared(pod_request(pod, where=where), _REQUESTS)
    selector, terms, tolerations = _placement(spec, where)
    parsed = _SpecParse(
        request=request,
        selector=selector,
        terms=terms,
        tolerations=tolerations,
        constraints=parse_pod_constraints(spec, namespace=ns, labels=labels, where=where),
        preferred=_preferred_node_terms(spec, where),
        host_ports=_host_ports(spec, where=where),
        claims=_claims(spec, where=where),
        placement_key=None,
        runtime=_shared(pod_runtime({"spec": spec}), _RUNTIMES),
        score_extra=scoring_extra(pod, request, where=where),
        nullable=nullable,
        ephemeral=_ephemeral_volumes(spec, where=where),
        inline=_inline_volumes(spec),
    )
    if key is not None:
        if len(_SPECS) >= _SHARED_MAX:
            _SPECS.clear()
        probe = Task(
            namespace="",
            name="",
            uid="",
            job_key="",
            request_map=request,
            priority=0,
            status=TaskStatus.PENDING,
            node_name=None,
            scheduler_name="",
            creation=0.0,
            node_selector=selector,
            affinity_terms=terms,
            tolerations=tolerations,
            preferred_node_terms=parsed.preferred,
            host_ports=parsed.host_ports,
        )
        parsed = parsed._replace(placement_key=sys.intern(placement_key(probe)))
        _SPECS[key] = parsed
    return parsed


#: Status fields :func:`pod_runtime` reads besides the phase.
_RUNTIME_STATUS = frozenset(
    {
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
        "reason",
        "conditions",
    }
)
#: The runtimes of owned pods with a plain status, by (their spec's runtime, owner kinds); emptied like
#: the tables above.
_OWNED_RUNTIMES: dict[tuple[PodRuntime, tuple[str, ...]], PodRuntime] = {}


def _active_deadline(value: Any, *, where: str) -> float | None:
    """``spec.activeDeadlineSeconds``: a positive integer (the API's own rule), or None when unset."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{where}: spec.activeDeadlineSeconds must be a positive integer, got {value!r}")
    return float(value)


def _expected_runtime(annotations: Mapping[str, str], *, where: str) -> float | None:
    """The expected-runtime annotation in seconds (a positive duration: ``45m``, ``2h``, ``3600``)."""
    value = annotations.get(EXPECTED_RUNTIME_ANNOTATION)
    if value is None:
        return None
    return parse_duration(value, where=f"{where}: metadata.annotations[{EXPECTED_RUNTIME_ANNOTATION}]")


def _runtime(pod: Raw, meta: Mapping[str, Any], parsed: _SpecParse) -> PodRuntime:
    """:func:`pod_runtime` of ``pod``, without reading it again when the kubelet has reported nothing
    of it (no status but a phase that is not Running: a pending pod's, as most pods listed at start):
    then it is what its spec says (images, local storage: kept by the spec's parse) and its owners'
    kinds. A pod being deleted is read whole."""
    status = pod.get("status")
    if meta.get("deletionTimestamp") or (
        status is not None
        and (
            type(status) is not dict
            or status.get("phase") in ("Running", "Unknown")
            or not _RUNTIME_STATUS.isdisjoint(status)
        )
    ):
        if meta.get("deletionTimestamp") or type(status) is not dict:
            return _shared(pod_runtime(pod), _RUNTIMES)
        return _reported_runtime(pod, meta, status, parsed)
    owners = meta.get("ownerReferences")
    if not owners:
        return parsed.runtime
    if type(owners) is not list:
        return _shared(pod_runtime(pod), _RUNTIMES)
    kinds = tuple(str(r.get("kind")) for r in owners if isinstance(r, _MAP) and r.get("kind"))
    key = (parsed.runtime, kinds)
    found = _OWNED_RUNTIMES.get(key)
    if found is None:
        found = _shared(pod_runtime(pod), _RUNTIMES)
        if len(_OWNED_RUNTIMES) >= _SHARED_MAX:
            _OWNED_RUNTIMES.clear()
        _OWNED_RUNTIMES[key] = found
    return found


#: The runtimes of pods the kubelet has reported on (a running pod's), by their spec's runtime, owner
#: kinds and what :func:`pod_runtime` reads of the status (:func:`_reported_runtime`); emptied like the
#: tables above.
_REPORTED_RUNTIMES: dict[tuple[Any, ...], tuple[PodRuntime, PodRuntime]] = {}


def _reported_runtime(
    pod: Raw, meta: Mapping[str, Any], status: dict[str, Any], parsed: _SpecParse
) -> PodRuntime:
    """:func:`pod_runtime` of a pod not being deleted whose status the kubelet wrote, found with the pods
    whose spec has the same parse (its images, QoS class and local storage: ``parsed.runtime``) and
    whose owners' kinds and status read the same; the pods of one Deployment running alike (each its
    own start time and IPs, none of them read) share one, made once."""
    phase, reason, qos = status.get("phase"), status.get("reason"), status.get("qosClass")
    owners = meta.get("ownerReferences")
    if not (
        _hashable(phase) and _hashable(reason) and _hashable(qos) and (owners is None or type(owners) is list)
    ):
        return _shared(pod_runtime(pod), _RUNTIMES)
    kinds = tuple(str(r.get("kind")) for r in owners or () if isinstance(r, _MAP) and r.get("kind"))
    key = (
        id(parsed.runtime),
        kinds,
        phase,
        reason,
        qos,
        tuple(ready_conditions(status.get("conditions"))),
        *(
            _container_statuses(status.get(field)) if field in status else None
            for field in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
        ),
    )
    found = _REPORTED_RUNTIMES.get(key)
    if found is not None and found[0] is parsed.runtime:  # (its id: not a runtime gone since)
        return found[1]
    runtime = _shared(pod_runtime(pod), _RUNTIMES)
    if len(_REPORTED_RUNTIMES) >= _SHARED_MAX:
        _REPORTED_RUNTIMES.clear()
    _REPORTED_RUNTIMES[key] = (parsed.runtime, runtime)
    return runtime


def _hashable(value: Any) -> bool:
    return value is None or type(value) is str


#: What Go's strconv.ParseBool reads (Volcano parses its preemptable annotation and label with it).
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def _preemptable(annotations: Mapping[str, Any], labels: Mapping[str, Any]) -> bool | None:
    """Whether preempt and reclaim may take the pod: volsched's annotation (``false``, or any value but
    ``true``: never), else Volcano's ``volcano.sh/preemptable`` annotation, else that label, read as
    Volcano reads them (a value ParseBool does not read is false); None when none is set (it may)."""
    raw = annotations.get(PREEMPTABLE_ANNOTATION)
    if raw is not None:
        return boolean_value(raw) is True
    raw = annotations.get(VOLCANO_PREEMPTABLE)
    if raw is None:
        raw = labels.get(VOLCANO_PREEMPTABLE)
    return None if raw is None else raw in _GO_TRUE


def _node_owned(owners: Any, node: str | None) -> bool:
    """A controller owner reference to the Node ``node`` (core ``v1``), as the kubelet gives the mirror
    of its static pod (the garbage collector deletes a pod whose reference names a Node's uid wrongly)."""
    return node is not None and any(
        isinstance(ref, _MAP)
        and ref.get("controller") is True
        and ref.get("apiVersion") == "v1"
        and ref.get("kind") == "Node"
        and ref.get("name") == node
        for ref in (owners if isinstance(owners, list) else ())
    )


#: A task of every field's default, which :func:`build_task` copies (:data:`_copy_task`) and then fills field
#: by field: calling :class:`Task` with its three dozen keywords matches each against the fifty parameters
#: one by one, a cost every listed pod paid. Every field whose default is made per task (a
#: dict, a list) is set by ``build_task``; ``request``'s is one shared read-only array.
_BLANK_TASK = Task(
    namespace="",
    name="",
    uid="",
    job_key="",
    request_map={},
    priority=0,
    status=TaskStatus.PENDING,
    node_name=None,
    scheduler_name="",
    creation=0.0,
)
_copy_task = copier(Task)


def build_task(
    pod: Raw,
    *,
    priority_classes: Mapping[str, int],
    default_priority: int = 0,
    scheduler_names: frozenset[str] = DEFAULT_SCHEDULER_NAMES,
    class_policies: Mapping[str, str] | None = None,
) -> Task:
    """A pod as a :class:`Task`. Its job: the PodGroup its group annotation names; else, with a
    controller owner, the PodGroup that stands for the owner (:attr:`OwnerRef.group_name`); else itself.
    A pod not admitted by an apiserver (no ``spec.priority``: the simulator's) takes its priority, and
    its preemption policy if it sets none, from its class (``class_policies``), as admission gives them."""
    ns, name = _meta(pod, "Pod")
    where = f"Pod {ns}/{name}"
    meta = pod["metadata"]
    spec = _map_field(pod, "spec", where)
    # The pods of one template (a spec shared to the byte: kube/prune.py) take what the task reads of
    # their spec alone from the first of them (:data:`_SPEC_TASKS`), checked then; bound ones too (a spec
    # over the shared one, only its node its own: a string, which the task reads with the pod's status).
    shared = None
    if type(spec) is FrozenMap:
        holder = spec if spec.of is None else spec.of
        shared = _SPEC_TASKS.get(id(holder))
        if shared is not None and (shared[0] is not holder or shared[1] is not scheduler_names):
            shared = None
    if shared is None:
        if not spec:
            raise InputError(f"{where}: missing field spec")
        if not spec.get("containers"):
            raise InputError(f"{where}: missing field spec.containers")
    # (A field's name for a message is made only where the field is no plain map or known time: a pod
    # listed at start made five of them for nothing.)
    annotations = meta.get("annotations")
    if type(annotations) is not dict:
        annotations = (
            {} if annotations is None else _shared_map(annotations, where=f"{where}: metadata.annotations")
        )
    labels = meta.get("labels")
    if type(labels) is not dict:
        labels = {} if labels is None else _shared_map(labels, where=f"{where}: metadata.labels")
    if shared is not None:
        parsed = shared[2]
        task = _copy_task(shared[3])
    else:
        parsed = _parsed_spec(pod, spec, ns=ns, labels=labels, where=where)
    pod_status_map = pod.get("status")
    if pod_status_map is not None and type(pod_status_map) is not dict:
        _map_value(pod_status_map, where=f"{where}: status")
    if shared is None:
        task = _spec_task(
            spec,
            parsed,
            where=where,
            priority_classes=priority_classes,
            default_priority=default_priority,
            scheduler_names=scheduler_names,
            class_policies=class_policies,
        )
    status, node = pod_status(pod)
    group = (
        annotations.get(GROUP_ANNOTATION)
        or annotations.get(VOLCANO_GROUP_ANNOTATION)
        or scheduling_group(spec)
    )
    preemptable = _preemptable(annotations, labels)
    owners = meta.get("ownerReferences") or []
    owner = None
    owner_ref = None
    for ref in owners if isinstance(owners, list) else []:
        if isinstance(ref, _MAP) and ref.get("controller"):
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
    alone = not group and owner_ref is None
    # Strings many pods share are interned: one object per distinct value, not one per pod.
    intern = sys.intern
    task.namespace = intern(ns)
    task.name = name
    task.uid = str(meta.get("uid") or f"{ns}/{name}")
    task.job_key = intern(job_key)
    task.standing_alone = alone
    task.request_map = resized_request(pod, parsed.request, where=where)
    task.status = status
    task.node_name = None if node is None else intern(node)
    task.creation = _time(meta.get("creationTimestamp"), where, "metadata.creationTimestamp")
    task.preemptable = preemptable
    task.labels = labels
    task.annotations = annotations
    task.owner = None if owner is None else intern(owner)
    task.start_time = _time((pod_status_map or {}).get("startTime"), where, "status.startTime")
    task.active_deadline = _active_deadline(spec.get("activeDeadlineSeconds"), where=where)
    task.expected_runtime = _expected_runtime(annotations, where=where)
    task.runtime = _runtime(pod, meta, parsed)
    task.ephemeral_claims = tuple(f"{name}-{v}" for v in parsed.ephemeral) if parsed.ephemeral else ()
    task.resource_claims = (
        _resource_claims(spec, pod.get("status"), where) if "resourceClaims" in spec else ()
    )
    task.owner_ref = owner_ref
    task.kubelet_mirror = MIRROR_ANNOTATION in annotations and _node_owned(owners, node)
    if task.status is TaskStatus.PENDING and task.ours:
        # The room an earlier leader claimed for it (its nominated node): the reservation takes it over.
        nominated = (pod.get("status") or {}).get("nominatedNodeName")
        if nominated:
            if not isinstance(nominated, str):
                raise InputError(
                    f"{where}: status.nominatedNodeName must be a string, got {_short(nominated)}"
                )
            task.nominated_node = intern(nominated)
    if parsed.placement_key is None or task.resource_claims:  # not shared: computed from the task
        task.placement_key = intern(placement_key(task))
    elif shared is None:
        task.placement_key = parsed.placement_key
    return task


#: What :func:`build_task` took from a template's spec alone, by the spec's id: (the spec, the scheduler
#: names it was read with, its parse, a task of every field's default but those read from the spec).
#: Kept for a spec shared to the byte (a listing's :class:`FrozenMap` of no other: kube/prune.py), or the
#: one the specs of a template's bound pods are over (:func:`~volsched.model.raw.over`: each its node its
#: own, a string), whose parse is its own and that sets its priority (as the apiserver's admission does;
#: a class's priority is read from the PriorityClasses, which change), no resource claims (read with the
#: pod's status), and whose placement key is known; the pods of one template then copy that task and
#: fill in their own fields. The spec is held: its id is no other object's while it is here. Emptied at
#: _SHARED_MAX entries, like the tables above.
_SPEC_TASKS: dict[int, tuple[FrozenMap, frozenset[str], _SpecParse, Task]] = {}


def _spec_task(
    spec: Mapping[str, Any],
    parsed: _SpecParse,
    *,
    where: str,
    priority_classes: Mapping[str, int],
    default_priority: int,
    scheduler_names: frozenset[str],
    class_policies: Mapping[str, str] | None,
) -> Task:
    """A task of every field's default but those :func:`build_task` reads from the pod's spec alone,
    the spec checked; kept in :data:`_SPEC_TASKS` for the pods of its template where it may be."""
    if not isinstance(spec.get("nodeName") or "", str):
        raise InputError(f"{where}: spec.nodeName must be a string, got {_short(spec['nodeName'])}")
    pcn = spec.get("priorityClassName") or ""
    if not isinstance(pcn, str):  # (before it is looked up: a list or a map cannot be)
        raise InputError(f"{where}: spec.priorityClassName must be a string, got {_short(pcn)}")
    own_priority = spec.get("priority")
    priority = own_priority
    if priority is None:
        # Kubernetes' admission rejects pods of unknown classes; one that got through keeps the default.
        priority = priority_classes.get(pcn, default_priority) if pcn else default_priority
    if isinstance(priority, bool) or not isinstance(priority, int) or not INT32_MIN <= priority <= INT32_MAX:
        raise InputError(f"{where}: spec.priority must be a 32-bit integer, got {_short(priority)}")
    intern = sys.intern
    scheduler_name = intern(str(spec.get("schedulerName") or "default-scheduler"))
    task = _copy_task(_BLANK_TASK)
    task.priority = int(priority)
    task.scheduler_name = scheduler_name
    task.node_selector = parsed.selector
    task.affinity_terms = parsed.terms
    task.tolerations = parsed.tolerations
    task.preemption_policy = str(
        spec.get("preemptionPolicy")
        or (class_policies.get(pcn) if class_policies and own_priority is None else None)
        or "PreemptLowerPriority"
    )
    task.critical = pcn in CRITICAL_PRIORITY_CLASSES
    task.priority_class = intern(str(pcn))
    task.constraints = parsed.constraints
    task.preferred_node_terms = parsed.preferred
    task.host_ports = parsed.host_ports
    task.claims = parsed.claims
    task.inline_volumes = parsed.inline
    task.score_extra = parsed.score_extra
    # A pod with scheduling gates is not ready to be placed (kube-scheduler keeps it out of its queue,
    # and the apiserver refuses its binding) until they are all removed.
    task.ours = scheduler_name in scheduler_names and not spec.get("schedulingGates")
    holder = (spec if spec.of is None else spec.of) if type(spec) is FrozenMap else None
    if (
        holder is not None
        and holder.memo is parsed
        and own_priority is not None
        and "resourceClaims" not in spec
        and parsed.placement_key is not None
    ):
        task.placement_key = parsed.placement_key
        if len(_SPEC_TASKS) >= _SHARED_MAX:
            _SPEC_TASKS.clear()
        _SPEC_TASKS[id(holder)] = (holder, scheduler_names, parsed, _copy_task(task))
    return task


#: The nodes' resources parsed lately, by their map's items when every value is a string (what the API
#: sends): the nodes of one shape (a pool's, listed at start) share one parse, a map no one changes.
#: Emptied at _SHARED_MAX entries, as the tables above.
_NODE_RESOURCES: dict[tuple[tuple[str, str], ...], dict[str, float]] = {}


def _node_resources(raw: Any, *, where: str) -> dict[str, float]:
    """``status.allocatable`` (or ``capacity``) parsed, shared with the nodes whose map has the same
    strings. Only strings are keyed: an int and a bool compare equal (``True == 1``), and a bool is
    refused where the int is taken."""
    key: tuple[tuple[str, str], ...] | None = None
    if type(raw) is dict:
        items = tuple(raw.items())
        if all(type(v) is str for _, v in items):
            key = items
            found = _NODE_RESOURCES.get(key)
            if found is not None:
                return found
    parsed = {
        k: as_counted(k, v) for k, v in parse_resource_map(raw, where=f"{where}: status.allocatable").items()
    }
    if key is not None:
        if len(_NODE_RESOURCES) >= _SHARED_MAX:
            _NODE_RESOURCES.clear()
        _NODE_RESOURCES[key] = parsed
    return parsed


def build_node(node: Raw) -> NodeSpec:
    _, name = _meta(node, "Node")
    where = f"Node {name}"
    status = _map_field(node, "status", where)
    alloc_raw = status.get("allocatable") or status.get("capacity")
    if alloc_raw is None:
        raise InputError(f"{where}: missing field status.allocatable")
    allocatable = _node_resources(alloc_raw, where=where)
    spec = _map_field(node, "spec", where)
    taints = []
    raw_taints = spec.get("taints")
    # (Each field's name for a message is made only when it is read: a node listed at start has few.)
    for i, t in enumerate(
        () if raw_taints is None else _list_field(raw_taints, where=f"{where}: spec.taints")
    ):
        if (
            not isinstance(t, _MAP)
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
    raw_conditions = status.get("conditions")
    conditions = (
        raw_conditions
        if type(raw_conditions) is list
        else _list_field(raw_conditions, where=f"{where}: status.conditions")
    )
    ready = True
    for cond in conditions:
        if isinstance(cond, _MAP) and cond.get("type") == "Ready":
            ready = str(cond.get("status")) == "True"
    raw_addresses = status.get("addresses")
    addresses = (
        ()
        if raw_addresses is None
        else tuple(
            str(a.get("address"))
            for a in _list_field(raw_addresses, where=f"{where}: status.addresses")
            if isinstance(a, _MAP) and a.get("address")
        )
    )
    meta = node["metadata"]
    raw_labels = meta.get("labels")
    raw_annotations = meta.get("annotations")
    unschedulable = spec.get("unschedulable")
    return NodeSpec(
        name=name,
        allocatable=allocatable,
        # The kubelet always sets kubernetes.io/hostname; input written by hand may leave it out.
        labels={
            "kubernetes.io/hostname": name,
            **{
                str(k): str(v)
                for k, v in (
                    raw_labels
                    if type(raw_labels) is dict
                    else _map_value(raw_labels, where=f"{where}: metadata.labels")
                ).items()
            },
        },
        taints=tuple(taints),
        unschedulable=False
        if unschedulable is None
        else _bool_field(unschedulable, where=f"{where}: spec.unschedulable", default=False),
        ready=ready,
        addresses=addresses,
        annotations={}
        if raw_annotations is None
        else {
            str(k): str(v)
            for k, v in _map_value(raw_annotations, where=f"{where}: metadata.annotations").items()
        },
    )


def parse_guarantee(raw: Any, *, where: str) -> tuple[dict[str, float], dict[str, float]]:
    """``spec.guarantee.resource``: each value an amount (``2``, ``4Gi``) or a percentage of the
    cluster (``"25%"``, 0 to 100). Returns (amounts, percentages)."""
    if raw is None:
        return {}, {}
    if not isinstance(raw, _MAP):
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


#: Why a Queue's capability or guarantee may not name ``pods``.
QUEUE_PODS = (
    "a queue's capability and guarantee are shares of the cluster's resources, which leave the pods count "
    "out (as Volcano's do): no queue is held to a number of pods; spec.perNamespace.maxRunningPods bounds "
    "the pods of each namespace in the queue"
)


def build_queue(obj: Raw) -> QueueSpec:
    _, name = _meta(obj, "Queue")
    where = f"Queue {name}"
    if name == ROOT_QUEUE:
        raise InputError(
            f"{where}: the name {ROOT_QUEUE} is the top of the queue tree, the whole cluster (a queue whose "
            f"spec.parent is {ROOT_QUEUE} has no parent), not a queue: name it otherwise"
        )
    spec = _map_field(obj, "spec", where)
    _own_spec_fields(obj, spec, QUEUE_SPEC_FIELDS, where=where)
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
    for path, named in (
        ("spec.capability", capability or {}),
        ("spec.guarantee.resource", {**guarantee, **guarantee_percent}),
    ):
        if PODS in named:
            raise InputError(f"{where}: {path}.pods: {QUEUE_PODS}")
    priority = _int_field(spec.get("priority"), where=f"{where}: spec.priority", default=0, minimum=INT32_MIN)
    state_raw = (
        spec.get("state") or _map_value(obj.get("status"), where=f"{where}: status").get("state") or "Open"
    )
    if state_raw == "Closing":  # (a status: closed, jobs still in it)
        state_raw = "Closed"
    if state_raw not in ("Open", "Closed"):
        raise InputError(f"{where}: spec.state must be Open or Closed, got {state_raw!r}")
    meta = obj["metadata"]
    deleting = bool(meta.get("deletionTimestamp"))
    finalizers = meta.get("finalizers") or []
    if deleting:
        state_raw = "Closed"
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
        access=queue_access(spec, where=where),
        priority=priority,
        deleting=deleting,
        finalizers=tuple(str(f) for f in finalizers) if isinstance(finalizers, list) else (),
    )


def queue_access(spec: Mapping[str, Any], *, where: str) -> QueueAccess:
    """A Queue's tenancy fields (``namespaceSelector``, ``priorityClasses``, ``maxPriority``,
    ``allowNotPreemptable``, ``perNamespace``); a field given wrong is refused, never ignored."""
    selector = spec.get("namespaceSelector")
    namespaces = (
        None if selector is None else parse_selector(selector, where=f"{where}: spec.namespaceSelector")
    )
    classes_raw = spec.get("priorityClasses")
    classes: frozenset[str] | None = None
    if classes_raw is not None:
        if not isinstance(classes_raw, list) or not all(isinstance(c, str) and c for c in classes_raw):
            raise InputError(f"{where}: spec.priorityClasses must be a list of priority class names")
        classes = frozenset(classes_raw)
    ceiling_raw = spec.get("maxPriority")
    ceiling = (
        None
        if ceiling_raw is None
        else _int_field(ceiling_raw, where=f"{where}: spec.maxPriority", default=0, minimum=INT32_MIN)
    )
    per_ns = _map_field(spec, "perNamespace", where)
    unknown = sorted(set(per_ns) - {"maxRunningJobs", "maxRunningPods"})
    if unknown:
        raise InputError(f"{where}: spec.perNamespace.{unknown[0]} is not a field volsched knows")
    jobs_raw, pods_raw = per_ns.get("maxRunningJobs"), per_ns.get("maxRunningPods")
    return QueueAccess(
        namespaces=namespaces,
        priority_classes=classes,
        max_priority=ceiling,
        allow_not_preemptable=_bool_field(
            spec.get("allowNotPreemptable"), where=f"{where}: spec.allowNotPreemptable", default=False
        ),
        max_running_jobs=None
        if jobs_raw is None
        else _int_field(jobs_raw, where=f"{where}: spec.perNamespace.maxRunningJobs", default=0, minimum=0),
        max_running_pods=None
        if pods_raw is None
        else _int_field(pods_raw, where=f"{where}: spec.perNamespace.maxRunningPods", default=0, minimum=0),
    )


def namespace_queue(obj: Raw) -> str | None:
    """The default queue a Namespace names (its ``scheduling.volsched.io/default-queue`` annotation,
    else the label of that key), or None."""
    meta = obj.get("metadata") or {}
    for part in ("annotations", "labels"):
        values = meta.get(part) or {}
        value = values.get(NAMESPACE_QUEUE_KEY) if isinstance(values, _MAP) else None
        if isinstance(value, str) and value:
            return value
    return None


def _gang_topology(spec: Mapping[str, Any], where: str) -> GangTopology | None:
    raw = spec.get("topology")
    if raw is None:
        return None
    if not isinstance(raw, _MAP):
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
    _own_spec_fields(obj, spec, PODGROUP_SPEC_FIELDS, where=where)
    min_member = _int_field(spec.get("minMember"), where=f"{where}: spec.minMember", default=1, minimum=1)
    mr_raw = spec.get("minResources")
    min_resources = None if mr_raw is None else _min_resources(mr_raw, where=f"{where}: spec.minResources")
    queue = spec.get("queue") or DEFAULT_QUEUE
    if not isinstance(queue, str):
        raise InputError(f"{where}: spec.queue must be a string")
    phase_raw = _map_value(obj.get("status"), where=f"{where}: status").get("phase") or "Pending"
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
        min_task_member=_min_task_member(spec, where),
        admitted_min_member=admitted.read(obj.get("status")),
    )


#: ResourceQuota's spelling of a request (``requests.cpu``) and its names that are no request: limits
#: (``limits.cpu``) and object counts (``count/pods``).
_QUOTA_REQUEST, _QUOTA_ONLY = "requests.", ("limits.", "count/")


def _min_resources(raw: Any, *, where: str) -> dict[str, float]:
    """``spec.minResources`` as Volcano's controllers write it, from the ResourceQuota evaluator's usage
    of the pods: ``requests.<name>`` is the request of ``<name>`` (two spellings of one request that
    differ are refused); ``limits.<name>`` and ``count/<kind>`` are not what a gang needs to start, so
    they are not counted (no scheduler places pods by them); ``pods`` is the pods its minimum holds."""
    out: dict[str, float] = {}
    spelled: dict[str, str] = {}
    for name, amount in parse_resource_map(raw, where=where).items():
        if name.startswith(_QUOTA_ONLY):
            continue
        request = name.removeprefix(_QUOTA_REQUEST)
        if request in out and out[request] != amount:
            given = raw[spelled[request]], raw[name]
            raise InputError(
                f"{where}: {spelled[request]} {given[0]} and {name} {given[1]} are one request given twice, "
                "with different amounts: give one"
            )
        out[request] = amount
        spelled[request] = name
    return out


def _min_task_member(spec: Mapping[str, Any], where: str) -> dict[str, int] | None:
    """``spec.minTaskMember``: role -> a whole number >= 0 (Volcano's int32 map); None when unset or
    empty."""
    raw = spec.get("minTaskMember")
    if raw is None:
        return None
    if not isinstance(raw, _MAP):
        raise InputError(f"{where}: spec.minTaskMember must be a map of role -> count, got {_short(raw)}")
    out = {
        str(role): _int_field(count, where=f"{where}: spec.minTaskMember.{role}", default=0, minimum=0)
        for role, count in raw.items()
    }
    return out or None


def quota_weight(quota: Raw) -> int:
    """The namespace weight one ResourceQuota declares; 1 when missing or invalid."""
    return quota_weight_and_problem(quota)[0]


def quota_weight_and_problem(quota: Raw) -> tuple[int, str | None]:
    """The namespace weight one ResourceQuota declares (1 when missing or invalid), and why a weight
    it declares is ignored (not a whole number >= 1), if one is. A spec that is not a map is an
    InputError naming it."""
    hard = _map_value(quota.get("spec"), where=f"{object_ref(quota)}: spec").get("hard") or {}
    best = 1
    problems: list[str] = []
    if not isinstance(hard, _MAP):
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


PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def priority_class_policy(obj: Raw) -> str | None:
    """A PriorityClass's ``preemptionPolicy`` (None when unset), which the apiserver's Priority admission
    gives the pods of the class that set none of their own."""
    _, name = _meta(obj, "PriorityClass")
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        raise InputError(
            f"PriorityClass {name}: preemptionPolicy must be one of "
            f"{', '.join(PREEMPTION_POLICIES)}, got {_short(policy)}"
        )
    return policy


def _volume_meta(obj: Raw, kind: str) -> tuple[Mapping[str, Any], str]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InputError(f"{kind}: missing field metadata.name")
    return meta, meta["name"]


def _volume_section(obj: Mapping[str, Any], name: str, where: str) -> Mapping[str, Any]:
    value = obj.get(name) or {}
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: {name} must be a map")
    return value


def _access_modes(raw: Any, where: str) -> frozenset[str]:
    if raw is None:
        return frozenset()
    if not isinstance(raw, list) or not all(isinstance(m, str) for m in raw):
        raise InputError(f"{where}: accessModes must be a list of strings")
    return frozenset(raw)


def _version(meta: Mapping[str, Any]) -> int:
    """``metadata.resourceVersion`` as a number (etcd's revision), 0 when it is not one."""
    try:
        return int(meta.get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _meta_annotation(meta: Mapping[str, Any], name: str) -> str:
    annotations = meta.get("annotations") or {}
    value = annotations.get(name, "") if isinstance(annotations, Mapping) else ""
    return value if isinstance(value, str) else ""


def storage_class(obj: Raw) -> StorageClassSpec:
    """A ``storage.k8s.io/v1`` StorageClass (a claim names its class: the apiserver's admission wrote the
    default class's name into one that named none when it was made)."""
    _, name = _volume_meta(obj, "StorageClass")
    where = f"StorageClass {name}"
    provisioner = obj.get("provisioner") or ""
    mode = obj.get("volumeBindingMode") or "Immediate"
    if not isinstance(provisioner, str) or mode not in ("Immediate", "WaitForFirstConsumer"):
        raise InputError(
            f"{where}: provisioner must be a string, volumeBindingMode Immediate or WaitForFirstConsumer"
        )
    terms: list[Any] = []
    raw_terms = obj.get("allowedTopologies") or []
    if not isinstance(raw_terms, list):
        raise InputError(f"{where}: allowedTopologies must be a list")
    for i, term in enumerate(raw_terms):
        exprs = term.get("matchLabelExpressions") if isinstance(term, Mapping) else None
        if not isinstance(exprs, list) or not all(
            isinstance(e, Mapping) and isinstance(e.get("key"), str) and isinstance(e.get("values"), list)
            for e in exprs
        ):
            raise InputError(
                f"{where}: allowedTopologies[{i}].matchLabelExpressions must list keys with values"
            )
        terms.append(
            {
                "matchExpressions": [
                    {"key": e["key"], "operator": "In", "values": list(e["values"])} for e in exprs
                ]
            }
        )
    return StorageClassSpec(
        name=name,
        provisioner=provisioner,
        wait_for_consumer=mode == "WaitForFirstConsumer",
        topologies=tuple(terms),
    )


def volume_claim(obj: Raw) -> VolumeClaim:
    """A PersistentVolumeClaim as the scheduler reads it."""
    meta, name = _volume_meta(obj, "PersistentVolumeClaim")
    ns = meta.get("namespace")
    where = f"PersistentVolumeClaim {ns}/{name}"
    if not isinstance(ns, str) or not ns:
        raise InputError(f"{where}: missing field metadata.namespace")
    spec = _volume_section(obj, "spec", where)
    cls, volume, mode = (
        spec.get("storageClassName") or "",
        spec.get("volumeName") or "",
        spec.get("volumeMode"),
    )
    if not isinstance(cls, str) or not isinstance(volume, str):
        raise InputError(f"{where}: spec.storageClassName and spec.volumeName must be strings")
    requests = _volume_section(_volume_section(spec, "resources", where), "requests", where)
    storage = requests.get("storage")
    return VolumeClaim(
        namespace=ns,
        name=name,
        uid=str(meta.get("uid") or ""),
        storage_class=cls,
        volume=volume,
        request=0.0
        if storage is None
        else parse_amount(storage, where=f"{where}: spec.resources.requests.storage"),
        sized=storage is not None,
        access_modes=_access_modes(spec.get("accessModes"), f"{where}: spec"),
        volume_mode=mode if isinstance(mode, str) and mode else "Filesystem",
        selector=parse_selector(spec["selector"], where=f"{where}: spec.selector")
        if spec.get("selector")
        else None,
        selected_node=_meta_annotation(meta, SELECTED_NODE),
        deleting=bool(meta.get("deletionTimestamp")),
        bind_completed=bool(_meta_annotation(meta, BIND_COMPLETED)),
        version=_version(meta),
        controller_uid=next(
            (
                str(o.get("uid") or "")
                for o in meta.get("ownerReferences") or []
                if isinstance(o, Mapping) and o.get("controller") is True
            ),
            "",
        ),
    )


def persistent_volume(obj: Raw) -> PersistentVolumeSpec:
    """A PersistentVolume as the scheduler reads it."""
    meta, name = _volume_meta(obj, "PersistentVolume")
    where = f"PersistentVolume {name}"
    spec = _volume_section(obj, "spec", where)
    status = _volume_section(obj, "status", where)
    required = _volume_section(_volume_section(spec, "nodeAffinity", where), "required", where)
    terms = required.get("nodeSelectorTerms") or []
    if not isinstance(terms, list) or not all(isinstance(t, Mapping) for t in terms):
        raise InputError(f"{where}: spec.nodeAffinity.required.nodeSelectorTerms must be a list of maps")
    _check_node_terms(terms, where=f"{where}: spec.nodeAffinity.required")
    capacity = _volume_section(spec, "capacity", where).get("storage")
    ref = spec.get("claimRef")
    claim_ref = None
    if isinstance(ref, Mapping) and ref.get("name"):
        claim_ref = (f"{ref.get('namespace') or ''}/{ref['name']}", str(ref.get("uid") or ""))
    labels = meta.get("labels") or {}
    cls, mode = spec.get("storageClassName") or "", spec.get("volumeMode")
    csi = _volume_section(spec, "csi", where)
    driver, handle = csi.get("driver"), csi.get("volumeHandle")
    if csi and not (isinstance(driver, str) and driver and isinstance(handle, str) and handle):
        raise InputError(f"{where}: spec.csi.driver and spec.csi.volumeHandle must be non-empty strings")
    return PersistentVolumeSpec(
        name=name,
        storage_class=cls if isinstance(cls, str) else "",
        capacity=0.0 if capacity is None else parse_amount(capacity, where=f"{where}: spec.capacity.storage"),
        access_modes=_access_modes(spec.get("accessModes"), f"{where}: spec"),
        volume_mode=mode if isinstance(mode, str) and mode else "Filesystem",
        labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {},
        claim_ref=claim_ref,
        node_terms=tuple(dict(t) for t in terms),
        phase=str(status.get("phase") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
        version=_version(meta),
        csi=(str(driver), str(handle)) if csi else migrated_csi(spec),
    )


def csi_node_limits(obj: Raw) -> tuple[str, dict[str, int]]:
    """A ``storage.k8s.io/v1`` CSINode's attach limits: (its node's name, driver -> how many of its volumes
    the node may have attached), for each driver with an ``allocatable.count`` (one without has none)."""
    _, name = _volume_meta(obj, "CSINode")
    where = f"CSINode {name}"
    drivers = _volume_section(obj, "spec", where).get("drivers") or []
    if not isinstance(drivers, list):
        raise InputError(f"{where}: spec.drivers must be a list")
    limits: dict[str, int] = {}
    for i, d in enumerate(drivers):
        driver = d.get("name") if isinstance(d, Mapping) else None
        if not isinstance(driver, str) or not driver:
            raise InputError(f"{where}: spec.drivers[{i}].name must be a non-empty string")
        count = _volume_section(d, "allocatable", f"{where}: spec.drivers[{i}]").get("count")
        if count is None:
            continue
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InputError(
                f"{where}: spec.drivers[{i}].allocatable.count must be a whole number, 0 or more"
            )
        limits[driver] = count
    return name, limits


def volume_attachment(obj: Raw) -> tuple[str, tuple[str, str, str] | None]:
    """A ``storage.k8s.io/v1`` VolumeAttachment's name, and (its node, its attacher: the CSI driver, the
    PersistentVolume it attaches), or None for one that names no node, attacher or volume (an inline
    volume's), which attach limits do not count, as kube-scheduler's do not."""
    _, name = _volume_meta(obj, "VolumeAttachment")
    spec = _volume_section(obj, "spec", f"VolumeAttachment {name}")
    source = _volume_section(spec, "source", f"VolumeAttachment {name}: spec")
    node, attacher, volume = spec.get("nodeName"), spec.get("attacher"), source.get("persistentVolumeName")
    if not all(isinstance(v, str) and v for v in (node, attacher, volume)):
        return name, None
    return name, (str(node), str(attacher), str(volume))


def storage_capacity(obj: Raw) -> StorageCapacity:
    """A ``storage.k8s.io/v1`` CSIStorageCapacity as volume binding reads it: its class, the largest volume
    it says its driver can make (``maximumVolumeSize``, else ``capacity``), the nodes it is for
    (``nodeTopology``: none when it is not set, as kube-scheduler reads it)."""
    meta, name = _volume_meta(obj, "CSIStorageCapacity")
    ns = meta.get("namespace")
    where = f"CSIStorageCapacity {ns}/{name}"
    if not isinstance(ns, str) or not ns:
        raise InputError(f"{where}: missing field metadata.namespace")
    cls = obj.get("storageClassName")
    if not isinstance(cls, str) or not cls:
        raise InputError(f"{where}: storageClassName must be a non-empty string")
    limit = None
    for field_name in ("maximumVolumeSize", "capacity"):
        raw = obj.get(field_name)
        if raw is not None:
            limit = parse_amount(raw, where=f"{where}: {field_name}")
            break
    topology = obj.get("nodeTopology")
    return StorageCapacity(
        key=f"{ns}/{name}",
        storage_class=cls,
        limit=limit,
        topology=None if topology is None else parse_selector(topology, where=f"{where}: nodeTopology"),
    )


def csi_driver_tracks_capacity(obj: Raw) -> tuple[str, bool]:
    """A ``storage.k8s.io/v1`` CSIDriver's name, and whether it says ``spec.storageCapacity: true`` (volume
    binding then checks its CSIStorageCapacities)."""
    _, name = _volume_meta(obj, "CSIDriver")
    tracks = _volume_section(obj, "spec", f"CSIDriver {name}").get("storageCapacity")
    if tracks is not None and not isinstance(tracks, bool):
        raise InputError(f"CSIDriver {name}: spec.storageCapacity must be true or false")
    return name, bool(tracks)


def _count(raw: Any) -> int:
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0 else 0


def disruption_budget(obj: Raw) -> DisruptionBudget:
    """A ``policy/v1`` PodDisruptionBudget as the cache holds it: its selector and what its status
    allows (0 while ``status.observedGeneration`` is behind ``metadata.generation``: the apiserver
    refuses every eviction it covers until the disruption controller has seen its spec). Raises
    :class:`InputError` naming the bad field."""
    ns, name = _meta(obj, "PodDisruptionBudget")
    where = f"PodDisruptionBudget {ns}/{name}"
    if not ns:
        raise InputError(f"{where}: missing field metadata.namespace")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if not isinstance(spec, _MAP) or not isinstance(status, _MAP):
        raise InputError(f"{where}: spec and status must be maps")
    selector = parse_selector(spec.get("selector"), where=f"{where}: spec.selector")
    allowed = _count(status.get("disruptionsAllowed"))
    if _count(status.get("observedGeneration")) < _count(obj["metadata"].get("generation")):
        allowed = 0
    policy = spec.get("unhealthyPodEvictionPolicy")
    return DisruptionBudget(
        ns,
        name,
        selector,
        allowed,
        current_healthy=_count(status.get("currentHealthy")),
        desired_healthy=_count(status.get("desiredHealthy")),
        always_allow_unhealthy=policy == "AlwaysAllow",
    )


# --- Dynamic Resource Allocation (resource.k8s.io/v1) -------------------------------------------------------

#: ResourceSlice device fields volsched does not model: a device with one is not allocated (and says why).
_DEVICE_UNSUPPORTED = {
    "consumesCounters": "a partitionable device (consumesCounters)",
    "bindsToNode": "a device bound to a node at allocation (bindsToNode)",
    "bindingConditions": "a device with binding conditions",
    "allowMultipleAllocations": "a device shared by several claims (allowMultipleAllocations)",
    "taints": "a tainted device",
}
#: Request fields volsched does not allocate: the pod stays pending, saying which.
_REQUEST_UNSUPPORTED = {
    "adminAccess": "asks for admin access",
    "tolerations": "tolerates device taints",
    "capacity": "asks for a share of a device's capacity",
}


def _selectors(raw: Any, where: str) -> tuple[str, ...]:
    out: list[str] = []
    for i, s in enumerate(_list_field(raw, where=where)):
        cel = s.get("cel") if isinstance(s, _MAP) else None
        expr = cel.get("expression") if isinstance(cel, _MAP) else None
        if not isinstance(expr, str) or not expr:
            raise InputError(f"{where}[{i}]: missing field cel.expression")
        out.append(expr)
    return tuple(out)


def device_class(obj: Raw) -> DeviceClass:
    """A DeviceClass: its CEL selectors and the configuration it gives every allocation of it."""
    _, name = _meta(obj, "DeviceClass")
    where = f"DeviceClass {name}"
    spec = _map_field(obj, "spec", where)
    return DeviceClass(
        name=name,
        selectors=_selectors(spec.get("selectors"), f"{where}: spec.selectors"),
        config=tuple(_list_field(spec.get("config"), where=f"{where}: spec.config")),
    )


def device_class_ignored(obj: Raw) -> str | None:
    """Why part of a DeviceClass is not honoured (taken all the same), or None: ``spec.extendedResourceName``
    (Kubernetes' DRAExtendedResource: a pod asking that extended resource gets a device of the class),
    which volsched does not allocate by."""
    _, name = _meta(obj, "DeviceClass")
    spec = obj.get("spec")
    ext = spec.get("extendedResourceName") if isinstance(spec, _MAP) else None
    if not ext:
        return None
    return (
        f"DeviceClass {name}: spec.extendedResourceName {_short(ext)} is ignored: volsched does not give a "
        f"pod that requests {_short(ext)} as an extended resource a device of this class; such a pod waits "
        "unless a node reports the resource in its allocatable (claim the device in the pod's "
        "spec.resourceClaims instead)"
    )


def _attribute_value(raw: Any, where: str) -> Any:
    if not isinstance(raw, _MAP) or len(raw) != 1:
        raise InputError(f"{where}: expected one of int, bool, string, version")
    (kind, value), *_ = raw.items()
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "version" and isinstance(value, str):
        try:
            return semver_value(value)
        except ValueError as exc:
            raise InputError(f"{where}: {exc}") from None
    raise InputError(f"{where}: expected one of int, bool, string, version, got {_short(dict(raw))}")


def _qualified(name: str, driver: str) -> tuple[str, str]:
    domain, _, short = name.rpartition("/")
    return (domain or driver), short


def resource_slice(obj: Raw) -> DeviceSlice:
    """A ResourceSlice: its pool (driver, pool name), the pool's generation and slice count, and its
    devices (each with where it can be used)."""
    _, name = _meta(obj, "ResourceSlice")
    where = f"ResourceSlice {name}"
    spec = _map_field(obj, "spec", where)
    driver = spec.get("driver")
    if not isinstance(driver, str) or not driver:
        raise InputError(f"{where}: missing field spec.driver")
    pool = _map_field(obj, "spec.pool", where)
    pool_name = pool.get("name")
    if not isinstance(pool_name, str) or not pool_name:
        raise InputError(f"{where}: missing field spec.pool.name")
    generation = _int_field(
        pool.get("generation"), where=f"{where}: spec.pool.generation", default=0, minimum=0
    )
    count = _int_field(
        pool.get("resourceSliceCount"), where=f"{where}: spec.pool.resourceSliceCount", default=1, minimum=1
    )
    node_name = spec.get("nodeName") or ""
    if not isinstance(node_name, str):
        raise InputError(f"{where}: spec.nodeName must be a string")
    all_nodes = _bool_field(spec.get("allNodes"), where=f"{where}: spec.allNodes", default=False)
    terms = _list_field(
        _map_field(obj, "spec.nodeSelector", where).get("nodeSelectorTerms"),
        where=f"{where}: spec.nodeSelector.nodeSelectorTerms",
    )
    _check_node_terms(terms, where=f"{where}: spec.nodeSelector")
    per_device = _bool_field(
        spec.get("perDeviceNodeSelection"), where=f"{where}: spec.perDeviceNodeSelection", default=False
    )
    if sum((bool(node_name), all_nodes, bool(terms), per_device)) != 1:
        raise InputError(
            f"{where}: give exactly one of spec.nodeName, nodeSelector, allNodes, perDeviceNodeSelection"
        )
    slice_unsupported = "" if not spec.get("sharedCounters") else "a device of a slice with sharedCounters"
    devices: list[Device] = []
    for i, d in enumerate(_list_field(spec.get("devices"), where=f"{where}: spec.devices")):
        at = f"{where}: spec.devices[{i}]"
        if not isinstance(d, _MAP) or not isinstance(d.get("name"), str) or not d.get("name"):
            raise InputError(f"{at}: missing field name")
        attributes: dict[str, dict[str, Any]] = {}
        for key, value in _map_field(d, "attributes", at).items():
            domain, short = _qualified(str(key), driver)
            attributes.setdefault(domain, {})[short] = _attribute_value(value, f"{at}.attributes[{key}]")
        capacity: dict[str, dict[str, float]] = {}
        for key, value in _map_field(d, "capacity", at).items():
            domain, short = _qualified(str(key), driver)
            amount = value.get("value") if isinstance(value, _MAP) else None
            capacity.setdefault(domain, {})[short] = parse_amount(amount, where=f"{at}.capacity[{key}].value")
        unsupported = slice_unsupported or next(
            (why for f, why in _DEVICE_UNSUPPORTED.items() if d.get(f)), ""
        )
        dev_node = node_name
        dev_all, dev_terms = all_nodes, terms
        if per_device:
            dev_node = str(d.get("nodeName") or "")
            dev_all = bool(d.get("allNodes"))
            dev_terms = list((d.get("nodeSelector") or {}).get("nodeSelectorTerms") or [])
        devices.append(
            Device(
                driver=driver,
                pool=pool_name,
                name=str(d["name"]),
                attributes=attributes,
                capacity=capacity,
                node_name=dev_node,
                node_terms=tuple(dev_terms),
                all_nodes=dev_all,
                unsupported=unsupported,
            )
        )
    return DeviceSlice(
        driver=driver, pool=pool_name, generation=generation, count=count, devices=tuple(devices)
    )


def _node_of(selector: Any) -> tuple[str, tuple[Any, ...]]:
    """(node name, ()) for an allocation's nodeSelector that names one node by metadata.name, else
    ("", its terms) (("", ()) when there is none: any node)."""
    terms = selector.get("nodeSelectorTerms") if isinstance(selector, _MAP) else None
    if not isinstance(terms, list) or not terms:
        return "", ()
    if len(terms) == 1 and isinstance(terms[0], _MAP) and not terms[0].get("matchExpressions"):
        fields = terms[0].get("matchFields") or []
        if (
            len(fields) == 1
            and isinstance(fields[0], _MAP)
            and fields[0].get("key") == "metadata.name"
            and fields[0].get("operator") == "In"
            and len(fields[0].get("values") or []) == 1
        ):
            return str(fields[0]["values"][0]), ()
    return "", tuple(terms)


def resource_claim(obj: Raw) -> Claim:
    """A ResourceClaim: its requests and constraints, and its allocation and reservations if any. What
    volsched does not allocate is kept as the claim's (or a request's) ``unsupported`` reason."""
    ns, name = _meta(obj, "ResourceClaim")
    where = f"ResourceClaim {ns}/{name}"
    if not ns:
        raise InputError(f"{where}: missing field metadata.namespace")
    devices = _map_field(obj, "spec.devices", where)
    requests: list[DeviceRequest] = []
    problems: list[str] = []
    for i, r in enumerate(_list_field(devices.get("requests"), where=f"{where}: spec.devices.requests")):
        at = f"{where}: spec.devices.requests[{i}]"
        if not isinstance(r, _MAP) or not isinstance(r.get("name"), str) or not r.get("name"):
            raise InputError(f"{at}: missing field name")
        if r.get("firstAvailable"):
            problems.append(
                f"request {r['name']} lists alternatives (firstAvailable), which volsched does not allocate"
            )
            continue
        exactly = r.get("exactly")
        if not isinstance(exactly, _MAP):
            raise InputError(f"{at}: missing field exactly")
        cls = exactly.get("deviceClassName")
        if not isinstance(cls, str) or not cls:
            raise InputError(f"{at}: missing field exactly.deviceClassName")
        mode = exactly.get("allocationMode") or "ExactCount"
        if mode not in ("ExactCount", "All"):
            raise InputError(f"{at}: exactly.allocationMode must be ExactCount or All, got {_short(mode)}")
        count = _int_field(exactly.get("count"), where=f"{at}: exactly.count", default=1, minimum=1)
        unsupported = next((why for f, why in _REQUEST_UNSUPPORTED.items() if exactly.get(f)), "")
        requests.append(
            DeviceRequest(
                name=str(r["name"]),
                device_class=cls,
                selectors=_selectors(exactly.get("selectors"), f"{at}: exactly.selectors"),
                all=mode == "All",
                count=count,
                unsupported=f"{unsupported}, which volsched does not allocate" if unsupported else "",
            )
        )
    constraints: list[MatchAttribute] = []
    for i, c in enumerate(
        _list_field(devices.get("constraints"), where=f"{where}: spec.devices.constraints")
    ):
        at = f"{where}: spec.devices.constraints[{i}]"
        if not isinstance(c, _MAP):
            raise InputError(f"{at} must be a map")
        names = tuple(str(n) for n in _list_field(c.get("requests"), where=f"{at}.requests"))
        if c.get("matchAttribute"):
            constraints.append(MatchAttribute(attribute=str(c["matchAttribute"]), requests=names))
        else:
            problems.append(f"constraint {i} is not a matchAttribute, which is all volsched allocates")
    status = obj.get("status") if isinstance(obj.get("status"), _MAP) else {}
    assert isinstance(status, Mapping)
    allocation = None
    alloc = status.get("allocation")
    if isinstance(alloc, _MAP):
        results = []
        for r in _list_field(
            (alloc.get("devices") or {}).get("results"), where=f"{where}: status.allocation"
        ):
            if isinstance(r, _MAP) and not r.get("adminAccess"):
                results.append(
                    DeviceResult(
                        str(r.get("request")), str(r.get("driver")), str(r.get("pool")), str(r.get("device"))
                    )
                )
        node, terms = _node_of(alloc.get("nodeSelector"))
        allocation = Allocated(results=tuple(results), node_name=node, node_terms=terms)
    reserved_raw = status.get("reservedFor")
    consumers = [r for r in (reserved_raw if isinstance(reserved_raw, list) else []) if isinstance(r, _MAP)]
    reserved = tuple(str(r.get("uid")) for r in consumers)
    others = any(r.get("resource") != "pods" or r.get("apiGroup") not in (None, "") for r in consumers)
    meta = obj["metadata"]
    return Claim(
        namespace=ns,
        name=name,
        uid=str(meta.get("uid") or ""),
        requests=tuple(requests),
        constraints=tuple(constraints),
        config=tuple(_list_field(devices.get("config"), where=f"{where}: spec.devices.config")),
        unsupported="; ".join(problems),
        allocation=allocation,
        reserved_for=reserved,
        reserved_for_others=others,
        deleting=bool(meta.get("deletionTimestamp")),
    )
