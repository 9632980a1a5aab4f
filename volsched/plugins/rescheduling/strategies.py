"""The descheduler's strategies on the rescheduling plugin's plumbing: which running (or failed) pods to
move, and why.

Each strategy is a *selector*: parsed once from its ``params`` (the descheduler's parameter names) and
asked, once per answer of the rescheduling plugin, for ``(task, reason)`` pairs. A selector sees only
the pods the plugin offers (:class:`Context.candidates`: pods of this scheduler the default evictor does
not protect, inside the plugin's queue/label selectors and ``offlineOnly``), in the plugin's order
(``ctx.key``: the ordering strategies, first evicted first), and asks :meth:`Context.pick` before it
counts a pod as moved (nodeFit and the limits). What it picks the shuffle action evicts,
within its per-session limit and never taking a gang below minMember; the Eviction API enforces
PodDisruptionBudgets, and the evicted pod's owner keeps off the node it left (no move-back).

Placement constraints are read with the same code placement uses (``volsched.model.nodeterms``:
node selector, required node affinity, taints; ``volsched.model.constraints``: the per-topology-domain
counts of inter-pod anti-affinity and topology spread) and "another node could take it" is the session's own filter mask
(``session.feasible_nodes``) with the nodes' free capacity. Node utilization is the usage plugin's
estimate of real usage (``volsched.plugins.shared.usage_estimate``) or the pods' requests.

No I/O happens here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any, ClassVar, Protocol

import numpy as np

from volsched.framework.plugin import NUMBER_LIMIT
from volsched.framework.points import ExtensionPoints
from volsched.model.constraints import BoolArray, ConstraintState
from volsched.model.errors import InputError
from volsched.model.nodeterms import matches_affinity, matches_node_term, tolerates
from volsched.model.resources import CPU, EPS, MEMORY
from volsched.model.selectors import SpreadConstraint
from volsched.model.vocabulary import ALLOCATED_STATUSES, Task, TaskStatus
from volsched.plugins.rescheduling.evictor import Evictor
from volsched.plugins.shared.usage_estimate import UsageEstimate, build_estimate
from volsched.records import dataclass

#: A resource name as Kubernetes writes one (``cpu``, ``nvidia.com/gpu``, ``hugepages-2Mi``).
_RESOURCE_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
REQUIRED_NODE_AFFINITY = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_NODE_AFFINITY = "preferredDuringSchedulingIgnoredDuringExecution"
#: Accepted as the descheduler accepts it, and moves nothing: Kubernetes has no such node affinity yet.
REQUIRED_DURING_EXECUTION = "requiredDuringSchedulingRequiredDuringExecution"
#: The ``states`` podLifeTime knows (the descheduler's list): phases, pod reasons, container reasons.
LIFETIME_STATES = (
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "Unknown",
    "NodeAffinity",
    "NodeLost",
    "Shutdown",
    "UnexpectedAdmissionError",
    "PodInitializing",
    "ContainerCreating",
    "ImagePullBackOff",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "ErrImagePull",
    "CreateContainerError",
    "InvalidImageName",
    "OOMKilled",
    "Error",
    "Completed",
    "DeadlineExceeded",
    "Evicted",
    "ContainerCannotRun",
    "StartError",
)
RESTART_STATES = ("Running", "CrashLoopBackOff")
LIVE = frozenset({TaskStatus.RUNNING})
LIVE_OR_STARTING = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})
FAILED = frozenset({TaskStatus.FAILED})


@dataclass
class Context:
    """What a selector may read: the session, the plugin's candidate filter and order, the metrics
    period (for estimates of real usage); and :meth:`pick`, which a selector asks before it counts a
    pod as moved (the evictor's checks of a picked pod and the limits of one answer)."""

    session: ExtensionPoints
    candidate: Callable[[Task, frozenset[TaskStatus]], bool]
    key: Callable[[Task], tuple[Any, ...]]
    metrics_period: float
    evictor: Evictor = field(default_factory=Evictor)
    _estimate: UsageEstimate | None = field(default=None, repr=False)
    #: The pods picked so far in this answer (by every strategy), and their count per node, namespace.
    picked: set[str] = field(default_factory=set)
    _per_node: dict[str, int] = field(default_factory=dict)
    _per_namespace: dict[str, int] = field(default_factory=dict)
    _selected: np.ndarray[Any, np.dtype[np.bool_]] | None = field(default=None, repr=False)

    def pick(self, task: Task) -> bool:
        """Whether ``task`` may move, counting it as moved if so: not picked before in this answer,
        within ``maxNoOfPodsToEvictPerNode``, ``...PerNamespace`` and ``...Total``, and with ``nodeFit``
        some other ready node the pod fits now (its filters, ``nodeSelector`` and free capacity)."""
        ev = self.evictor
        node = task.node_name or ""
        if task.key in self.picked:
            return False
        if ev.max_total is not None and len(self.picked) >= ev.max_total:
            return False
        if ev.max_per_node is not None and self._per_node.get(node, 0) >= ev.max_per_node:
            return False
        if (
            ev.max_per_namespace is not None
            and self._per_namespace.get(task.namespace, 0) >= ev.max_per_namespace
        ):
            return False
        if ev.node_fit and not self.fits_elsewhere(task).any():
            return False
        self.picked.add(task.key)
        self._per_node[node] = self._per_node.get(node, 0) + 1
        self._per_namespace[task.namespace] = self._per_namespace.get(task.namespace, 0) + 1
        return True

    def fits_elsewhere(
        self, task: Task, idle: np.ndarray[Any, np.dtype[np.float64]] | None = None
    ) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """The ready, schedulable nodes other than its own that pass every filter of the session for
        ``task`` and ``nodeSelector``, and have the idle capacity for its request now (in ``idle``, the
        nodes' idle capacity less what a strategy already sent there, when given)."""
        nodes = self.session.nodes
        need = task.request > EPS
        ok = self.session.feasible_nodes(task) & nodes.ready & self.selected_nodes()
        free = nodes.idle if idle is None else idle
        ok &= np.all(free[:, need] >= task.request[need] - EPS, axis=1)
        i = self.node_of(task)
        if i is not None:
            ok[i] = False
        return ok

    def selected_nodes(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """The schedulable nodes ``nodeSelector`` selects (every schedulable node without one)."""
        if self._selected is None:
            sel = self.evictor.node_selector
            self._selected = np.array(
                [
                    not s.unschedulable and (sel is None or sel.matches(s.labels))
                    for s in self.session.nodes.specs
                ],
                dtype=bool,
            )
        return self._selected

    def candidates(self, statuses: frozenset[TaskStatus] = LIVE) -> list[Task]:
        """Every candidate pod in one of ``statuses``, in eviction order."""
        out = [
            t
            for job in self.session.jobs.values()
            for t in job.tasks.values()
            if t.status in statuses and self.candidate(t, statuses)
        ]
        out.sort(key=self.key)
        return out

    def estimate(self) -> UsageEstimate:
        if self._estimate is None:
            self._estimate = build_estimate(self.session, self.metrics_period)
        return self._estimate

    def node_of(self, task: Task) -> int | None:
        return self.session.nodes.index.get(task.node_name or "")

    def age(self, task: Task) -> float:
        return self.session.now - task.creation


class Selector(Protocol):
    name: ClassVar[str]

    def select(self, ctx: Context) -> list[tuple[Task, str]]: ...


# --- parameters ------------------------------------------------------------------------------------------


class Params:
    """A strategy's ``params`` map, read key by key; unknown keys are an error naming the known ones."""

    def __init__(self, raw: Mapping[str, Any], where: str) -> None:
        self.raw = raw
        self.where = where
        self.read: set[str] = set()

    def error(self, key: str, message: str) -> InputError:
        return InputError(f"{self.where}.params.{key}: {message}")

    def get(self, key: str) -> Any:
        self.read.add(key)
        return self.raw.get(key)

    def number(self, key: str, default: float | None, *, minimum: float = 0, integer: bool = False) -> float:
        value = self.get(key)
        if value is None:
            if default is None:
                raise InputError(f"{self.where}: params.{key} is required")
            return default
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not minimum <= value <= NUMBER_LIMIT
        ):
            raise self.error(key, f"expected a number >= {minimum:g} and <= {NUMBER_LIMIT:g}, got {value!r}")
        if integer and value != int(value):
            raise self.error(key, f"expected an integer, got {value!r}")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.error(key, f"expected a list of strings, got {value!r}")
        return tuple(value)

    def states(self, key: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
        """A list of strings, each one of ``allowed``."""
        out = self.strings(key)
        unknown = [v for v in out if v not in allowed]
        if unknown:
            raise self.error(key, f"unknown {', '.join(unknown)}; known: {', '.join(allowed)}")
        return out

    def integers(self, key: str) -> tuple[int, ...]:
        value = self.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and abs(v) <= 2**31 for v in value
        ):
            raise self.error(key, f"expected a list of integers, got {value!r}")
        return tuple(value)

    def thresholds(self, key: str) -> dict[str, float]:
        """A required map of resource names (cpu, memory or mem, pods, an extended resource such as
        ``nvidia.com/gpu``) to percentages; only the resources it names are looked at."""
        raw = self.get(key)
        at = f"{self.where}.params.{key}"
        if not isinstance(raw, Mapping) or not raw:
            raise InputError(f"{at}: expected a map of resources (cpu, memory, pods, ...) to percentages")
        out: dict[str, float] = {}
        for name, value in raw.items():
            resource = "memory" if name == "mem" else str(name)
            if not _RESOURCE_NAME.fullmatch(resource):
                raise InputError(f"{at}: {name!r} is not a resource name")
            if resource in out:
                raise InputError(f"{at}: {resource} is given twice")
            if isinstance(value, str):
                try:
                    value = float(value.rstrip("%"))
                except ValueError:
                    raise InputError(f"{at}.{name}: expected a percentage 0..100, got {value!r}") from None
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
                raise InputError(f"{at}.{name}: expected a percentage 0..100, got {value!r}")
            out[resource] = float(value)
        return dict(sorted(out.items()))

    def done(self) -> None:
        unknown = sorted(set(map(str, self.raw)) - self.read)
        if unknown:
            raise InputError(
                f"{self.where}: unknown param(s) {', '.join(unknown)}; known: {', '.join(sorted(self.read))}"
            )


@dataclass(frozen=True)
class PodFilter:
    """The descheduler's per-strategy ``namespaces`` ({include: [...]} or {exclude: [...]}) and
    ``labelSelector`` (matchLabels, matchExpressions with In, NotIn, Exists, DoesNotExist)."""

    include: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[tuple[str, str, frozenset[str]], ...] = ()

    @classmethod
    def parse(cls, params: Params, *, labels: bool = True) -> PodFilter:
        ns = params.get("namespaces")
        include: frozenset[str] | None = None
        exclude: frozenset[str] = frozenset()
        if ns is not None:
            if not isinstance(ns, Mapping) or set(ns) - {"include", "exclude"}:
                raise params.error("namespaces", "expected a map with include or exclude (a list of names)")
            if ns.get("include") and ns.get("exclude"):
                raise params.error("namespaces", "give include or exclude, not both")
            for part in ("include", "exclude"):
                names = ns.get(part)
                if names is not None and (
                    not isinstance(names, list) or not all(isinstance(n, str) for n in names)
                ):
                    raise params.error(f"namespaces.{part}", f"expected a list of namespaces, got {names!r}")
            include = frozenset(ns["include"]) if ns.get("include") else None
            exclude = frozenset(ns.get("exclude") or ())
        if not labels:
            return cls(include, exclude)
        selector = params.get("labelSelector")
        if selector is None:
            return cls(include, exclude)
        if not isinstance(selector, Mapping) or set(selector) - {"matchLabels", "matchExpressions"}:
            raise params.error("labelSelector", "expected a map with matchLabels and/or matchExpressions")
        match = selector.get("matchLabels") or {}
        if not isinstance(match, Mapping):
            raise params.error("labelSelector.matchLabels", "expected a map of labels")
        exprs = []
        for i, e in enumerate(selector.get("matchExpressions") or []):
            op = e.get("operator") if isinstance(e, Mapping) else None
            if op not in ("In", "NotIn", "Exists", "DoesNotExist") or not isinstance(e.get("key"), str):
                raise params.error(
                    f"labelSelector.matchExpressions[{i}]",
                    "needs a key and an operator In, NotIn, Exists or DoesNotExist",
                )
            values = e.get("values") or []
            if op in ("In", "NotIn") and not values:
                raise params.error(f"labelSelector.matchExpressions[{i}]", f"operator {op} needs values")
            exprs.append((str(e["key"]), str(op), frozenset(str(v) for v in values)))
        return cls(
            include,
            exclude,
            tuple(sorted((str(k), str(v)) for k, v in match.items())),
            tuple(exprs),
        )

    def admits(self, task: Task) -> bool:
        if self.include is not None and task.namespace not in self.include:
            return False
        if task.namespace in self.exclude:
            return False
        if any(task.labels.get(k) != v for k, v in self.match_labels):
            return False
        for key, op, values in self.expressions:
            present = key in task.labels
            if op == "In" and not (present and task.labels[key] in values):
                return False
            if op == "NotIn" and present and task.labels[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True


def _owner_kinds_excluded(task: Task, kinds: tuple[str, ...]) -> bool:
    return bool(kinds) and any(k in kinds for k in task.runtime.owner_kinds)


# --- node utilization ------------------------------------------------------------------------------------

#: Where the utilization strategies read a node's load: the requests of the pods on it, as the
#: descheduler does by default, or the usage plugin's estimate of real usage (cpu and memory; the other
#: resources by requests).
SOURCES = ("requests", "usage")


@dataclass
class Utilization:
    """Per node, percent of each named resource used (``names``, as the thresholds name them)."""

    names: tuple[str, ...]
    usage: np.ndarray[Any, np.dtype[np.float64]]
    alloc: np.ndarray[Any, np.dtype[np.float64]]
    #: Each resource's index in the session's space, and whether the space has it at all.
    dims: np.ndarray[Any, np.dtype[np.intp]]
    known: np.ndarray[Any, np.dtype[np.bool_]]
    #: Nodes whose load is known (usage: fresh data; requests: ready), and those that take pods.
    fresh: np.ndarray[Any, np.dtype[np.bool_]]
    schedulable: np.ndarray[Any, np.dtype[np.bool_]]

    def amounts(self, task: Task) -> np.ndarray[Any, np.dtype[np.float64]]:
        """What ``task`` asks of each named resource."""
        return np.where(self.known, task.request[self.dims], 0.0)

    def percent(
        self, node: int, amounts: np.ndarray[Any, np.dtype[np.float64]]
    ) -> np.ndarray[Any, np.dtype[np.float64]]:
        alloc = self.alloc[node]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(alloc > 0, amounts / alloc * 100.0, 0.0)

    def describe(self, node: int, k: int) -> str:
        return f"{self.names[k]} {self.usage[node, k]:.0f}%"


def utilization(ctx: Context, names: tuple[str, ...], source: str) -> Utilization | None:
    """None when no node's load is known (``usage``: no node has fresh data). A resource a node does not
    have counts 0% there; a resource without a threshold is not looked at."""
    session = ctx.session
    nodes = session.nodes
    n = len(nodes)
    index = {name: i for i, name in enumerate(session.space.names)}
    known = np.array([name in index for name in names], dtype=bool)
    dims = np.array([index.get(name, 0) for name in names], dtype=np.intp)
    alloc = np.where(known, nodes.allocatable[:, dims], 0.0)
    used = np.where(known, nodes.used[:, dims], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        usage = np.where(alloc > 0, used / np.where(alloc > 0, alloc, 1.0) * 100.0, 0.0)
    fresh = nodes.ready.copy()
    if source == "usage":
        est = ctx.estimate()
        if not est.any_fresh:
            return None
        measured = est.estimate(np.arange(n, dtype=np.intp))
        for k, name in enumerate(names):
            if name in (CPU, MEMORY):
                usage[:, k] = measured[:, 0 if name == CPU else 1]
        fresh = est.fresh.copy()
    schedulable = nodes.ready & ~np.array([s.unschedulable for s in nodes.specs], dtype=bool)
    return Utilization(names, usage, alloc, dims, known, fresh, schedulable)


def _by_node(ctx: Context, where: np.ndarray[Any, np.dtype[np.bool_]]) -> dict[int, list[Task]]:
    out: dict[int, list[Task]] = {}
    for t in ctx.candidates():
        i = ctx.node_of(t)
        if i is not None and where[i]:
            out.setdefault(i, []).append(t)
    return out


def _source(params: Params) -> str:
    """``utilization`` (``requests`` or ``usage``), or the descheduler's ``metricsUtilization`` (real
    usage, measured where volsched's ``metrics:`` section says)."""
    chosen = params.get("utilization")
    metrics = params.get("metricsUtilization")
    if chosen is not None and chosen not in SOURCES:
        raise params.error("utilization", f"expected one of {', '.join(SOURCES)}, got {chosen!r}")
    if metrics is not None:
        ok = isinstance(metrics, Mapping) and (
            metrics == {"metricsServer": True} or metrics == {"source": "KubernetesMetrics"}
        )
        if not ok:
            raise params.error(
                "metricsUtilization",
                "only {metricsServer: true} or {source: KubernetesMetrics} (real usage) is read: volsched "
                f"measures usage where its metrics: section says; got {metrics!r}",
            )
        if chosen == "requests":
            raise params.error("metricsUtilization", "asks for real usage, and utilization says requests")
        return "usage"
    return str(chosen or "usage")


def _evictable_namespaces(params: Params) -> frozenset[str]:
    raw = params.get("evictableNamespaces")
    if raw is None:
        return frozenset()
    names = raw.get("exclude") if isinstance(raw, Mapping) else None
    if not isinstance(raw, Mapping) or set(raw) - {"exclude"} or not isinstance(names, list):
        raise params.error(
            "evictableNamespaces",
            f"expected {{exclude: [namespaces]}} (include is not supported), got {raw!r}",
        )
    if not all(isinstance(x, str) for x in names):
        raise params.error("evictableNamespaces.exclude", f"expected a list of namespaces, got {names!r}")
    return frozenset(names)


def _fits_among(
    ctx: Context,
    task: Task,
    where: np.ndarray[Any, np.dtype[np.bool_]],
    idle: np.ndarray[Any, np.dtype[np.float64]],
    rank: np.ndarray[Any, np.dtype[np.float64]],
) -> int | None:
    """The node of ``where`` that takes ``task`` now (every filter, free capacity in ``idle``) with the
    lowest ``rank``, or None."""
    fits = ctx.fits_elsewhere(task, idle) & where
    if not fits.any():
        return None
    return int(np.argmin(np.where(fits, rank, np.inf)))


@dataclass(frozen=True)
class LowNodeUtilization:
    """Pods leave overutilized nodes (above ``targetThresholds`` on any named resource), most loaded
    first, while the node is still over target and the underutilized nodes (at or below ``thresholds``
    on every named resource) have room up to their target, each pod only if an underutilized node takes
    it now; active only with more than ``numberOfNodes`` underutilized nodes and not all of them. With
    ``useDeviationThresholds`` the thresholds are distances below and above the nodes' mean."""

    name: ClassVar[str] = "lowNodeUtilization"
    names: tuple[str, ...]
    thresholds: tuple[float, ...]
    targets: tuple[float, ...]
    number_of_nodes: int = 0
    deviation: bool = False
    source: str = "usage"
    excluded: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, params: Params) -> LowNodeUtilization:
        low = params.thresholds("thresholds")
        high = params.thresholds("targetThresholds")
        count = int(params.number("numberOfNodes", 0, integer=True))
        deviation = params.boolean("useDeviationThresholds", False)
        if set(low) != set(high):
            raise InputError(
                f"{params.where}.params: thresholds ({', '.join(low)}) and targetThresholds "
                f"({', '.join(high)}) must name the same resources"
            )
        for r in low:
            if low[r] > high[r] and not deviation:
                raise InputError(
                    f"{params.where}.params: thresholds.{r} ({low[r]:g}) is above targetThresholds.{r} "
                    f"({high[r]:g})"
                )
        names = tuple(low)
        return cls(
            names,
            tuple(low[r] for r in names),
            tuple(high[r] for r in names),
            count,
            deviation,
            _source(params),
            _evictable_namespaces(params),
        )

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        u = utilization(ctx, self.names, self.source)
        if u is None:
            return []
        nodes = ctx.session.nodes
        usage = u.usage
        low, high = np.array(self.thresholds), np.array(self.targets)
        if self.deviation:
            mean = usage[u.fresh].mean(axis=0) if u.fresh.any() else np.zeros(len(self.names))
            low, high = (mean - low).clip(0.0, 100.0), (mean + high).clip(0.0, 100.0)
        under = u.fresh & u.schedulable & np.all(usage <= low, axis=1)
        over = u.fresh & np.any(usage > high, axis=1)
        count = int(under.sum())
        if count <= self.number_of_nodes or not under.any() or not over.any() or count == int(u.fresh.sum()):
            return []
        room = ((high - usage[under]).clip(min=0.0) / 100.0 * u.alloc[under]).sum(axis=0)
        idle = nodes.idle.copy()
        load = usage.sum(axis=1)
        by_node = _by_node(ctx, over)
        order = sorted(
            (int(j) for j in np.flatnonzero(over)), key=lambda j: (-float(load[j]), nodes.names[j])
        )
        out: list[tuple[Task, str]] = []
        for i in order:
            worst = int(np.argmax(usage[i] - high))
            why = f"{u.describe(i, worst)} > target {high[worst]:g}%"
            for t in by_node.get(i, []):
                if not np.any(usage[i] > high) or np.any(room <= 0):
                    break
                if t.namespace in self.excluded:
                    continue
                to = _fits_among(ctx, t, under, idle, load)
                if to is None or not ctx.pick(t):
                    continue
                amounts = u.amounts(t)
                usage[i] -= u.percent(i, amounts)
                room -= amounts
                idle[to] -= t.request
                out.append(
                    (t, f"rescheduling (lowNodeUtilization): node {nodes.names[i]} is overutilized ({why})")
                )
            if np.any(room <= 0):
                break
        return out


@dataclass(frozen=True)
class HighNodeUtilization:
    """Pods leave underutilized nodes (at or below ``thresholds`` on every named resource), least loaded
    first, so they pack onto the appropriately utilized nodes (score with binpack); each pod only if one
    of those takes it now (every filter, free capacity by requests, counting the pods sent before it),
    the most loaded first. Nothing moves without an appropriately utilized node or with at most
    ``numberOfNodes`` underutilized ones."""

    name: ClassVar[str] = "highNodeUtilization"
    names: tuple[str, ...]
    thresholds: tuple[float, ...]
    number_of_nodes: int = 0
    source: str = "usage"
    excluded: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, params: Params) -> HighNodeUtilization:
        low = params.thresholds("thresholds")
        names = tuple(low)
        return cls(
            names,
            tuple(low[r] for r in names),
            int(params.number("numberOfNodes", 0, integer=True)),
            _source(params),
            _evictable_namespaces(params),
        )

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        u = utilization(ctx, self.names, self.source)
        if u is None:
            return []
        nodes = ctx.session.nodes
        low = np.array(self.thresholds)
        under = u.fresh & np.all(u.usage <= low, axis=1)
        target = u.fresh & u.schedulable & ~under
        if int(under.sum()) <= self.number_of_nodes or not under.any() or not target.any():
            return []
        idle = nodes.idle.copy()
        load = u.usage.sum(axis=1)
        by_node = _by_node(ctx, under)
        order = sorted(
            (int(j) for j in np.flatnonzero(under)), key=lambda j: (float(load[j]), nodes.names[j])
        )
        out: list[tuple[Task, str]] = []
        for i in order:
            worst = int(np.argmax(u.usage[i] - low))
            why = f"{u.describe(i, worst)} <= {low[worst]:g}%"
            for t in by_node.get(i, []):
                if t.namespace in self.excluded:
                    continue
                to = _fits_among(ctx, t, target, idle, -load)
                if to is None or not ctx.pick(t):
                    continue
                idle[to] -= t.request
                out.append(
                    (t, f"rescheduling (highNodeUtilization): node {nodes.names[i]} is underutilized ({why})")
                )
        return out


# --- constraints ----------------------------------------------------------------------------------------


def _elsewhere(ctx: Context, task: Task, node: int) -> int:
    """How many other nodes pass every filter of the session for ``task`` (capacity aside)."""
    mask = ctx.session.feasible_nodes(task)
    return int(mask.sum()) - int(mask[node])


@dataclass(frozen=True)
class RemoveDuplicates:
    """Replicas of one owner (same namespace, controller and images) bunched on a node: a node with
    more than ``ceil(replicas / nodes they could run on)`` of them gives up the excess. The nodes they
    could run on are the union over the owner's pods (each by its own selector, affinity, taints); a pod
    that could run on no other node is passed over for the next."""

    name: ClassVar[str] = "removeDuplicates"
    exclude_owner_kinds: tuple[str, ...] = ()
    pods: PodFilter = PodFilter()

    @classmethod
    def parse(cls, params: Params) -> RemoveDuplicates:
        return cls(params.strings("excludeOwnerKinds"), PodFilter.parse(params, labels=False))

    @staticmethod
    def _possible_nodes(ctx: Context, members: list[Task]) -> BoolArray:
        """The nodes any of the owner's pods could run on (each distinct placement asked once; a pod
        that could run on one node only adds nothing, as in the descheduler)."""
        out = np.zeros(len(ctx.session.nodes), dtype=bool)
        seen: set[str] = set()
        for t in members:
            if t.placement_key in seen:
                continue
            seen.add(t.placement_key)
            mask = ctx.session.feasible_nodes(t)
            if int(mask.sum()) > 1:
                out |= mask
        return out

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        groups: dict[tuple[str, str, tuple[str, ...]], list[Task]] = {}
        for t in ctx.candidates():
            if ctx.node_of(t) is None or not self.pods.admits(t):
                continue
            if _owner_kinds_excluded(t, self.exclude_owner_kinds):
                continue
            groups.setdefault((t.namespace, t.owner or "", t.runtime.images), []).append(t)
        out: list[tuple[Task, str]] = []
        for (_, owner, _), members in sorted(groups.items()):
            if len(members) < 2:
                continue
            feasible = int(self._possible_nodes(ctx, members).sum())
            if feasible < 2:
                continue
            cap = math.ceil(len(members) / feasible)
            per_node: dict[str, list[Task]] = {}
            for t in members:
                per_node.setdefault(t.node_name or "", []).append(t)
            for node, here in sorted(per_node.items()):
                excess = len(here) - cap
                for t in here:
                    if excess <= 0:
                        break
                    i = ctx.node_of(t)
                    if i is None or not _elsewhere(ctx, t, i) or not ctx.pick(t):
                        continue  # (a pod that can run nowhere else would come straight back)
                    excess -= 1
                    out.append(
                        (
                            t,
                            f"rescheduling (removeDuplicates): {len(here)} pods of {owner} on node {node}, "
                            f"at most {cap} per node ({len(members)} over {feasible} nodes)",
                        )
                    )
        return out


@dataclass(frozen=True)
class RemovePodsViolatingNodeAffinity:
    """``requiredDuringSchedulingIgnoredDuringExecution`` (the default): a pod whose node no longer
    matches its node selector or required node affinity, when another node does.
    ``preferredDuringSchedulingIgnoredDuringExecution``: a pod whose preferred node affinity weighs more
    on another node that passes its filters and has the idle capacity for it now.
    ``requiredDuringSchedulingRequiredDuringExecution`` is accepted and moves nothing, as in the
    descheduler (Kubernetes has no such node affinity)."""

    name: ClassVar[str] = "removePodsViolatingNodeAffinity"
    required: bool = True
    preferred: bool = False
    pods: PodFilter = PodFilter()

    @classmethod
    def parse(cls, params: Params) -> RemovePodsViolatingNodeAffinity:
        kinds = params.states(
            "nodeAffinityType", (REQUIRED_NODE_AFFINITY, PREFERRED_NODE_AFFINITY, REQUIRED_DURING_EXECUTION)
        ) or (REQUIRED_NODE_AFFINITY,)
        return cls(REQUIRED_NODE_AFFINITY in kinds, PREFERRED_NODE_AFFINITY in kinds, PodFilter.parse(params))

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        out: list[tuple[Task, str]] = []
        nodes = ctx.session.nodes
        head = "rescheduling (removePodsViolatingNodeAffinity)"
        for t in ctx.candidates():
            i = ctx.node_of(t)
            if i is None or not self.pods.admits(t):
                continue
            spec = nodes.specs[i]
            if self.required:
                selector_ok = all(spec.labels.get(k) == v for k, v in t.node_selector.items())
                if not (selector_ok and matches_affinity(spec, t.affinity_terms)):
                    if _elsewhere(ctx, t, i) and ctx.pick(t):
                        what = "node selector" if not selector_ok else "required node affinity"
                        out.append((t, f"{head}: node {spec.name} no longer matches the pod's {what}"))
                    continue
            if self.preferred and t.preferred_node_terms:
                better = self._better_node(ctx, t, i)
                if better is not None and ctx.pick(t):
                    j, here, there = better
                    out.append(
                        (
                            t,
                            f"{head}: node {nodes.names[j]} scores {there:g} on the pod's preferred node "
                            f"affinity, node {spec.name} {here:g}",
                        )
                    )
        return out

    @staticmethod
    def _better_node(ctx: Context, task: Task, node: int) -> tuple[int, float, float] | None:
        nodes = ctx.session.nodes
        weights = np.array(
            [
                sum(w for w, term in task.preferred_node_terms if matches_node_term(s, term))
                for s in nodes.specs
            ],
            dtype=np.float64,
        )
        need = task.request > EPS
        fits = np.all(nodes.idle[:, need] >= task.request[need] - EPS, axis=1)
        ok = ctx.session.feasible_nodes(task) & fits
        ok[node] = False
        if not ok.any():
            return None
        j = int(np.argmax(np.where(ok, weights, -np.inf)))
        return (j, float(weights[node]), float(weights[j])) if weights[j] > weights[node] else None


def _names_taint(entries: tuple[str, ...], key: str, value: str) -> bool:
    """Whether one of ``entries`` (``key`` or ``key=value``) names the taint."""
    return key in entries or (bool(value) and f"{key}={value}" in entries)


@dataclass(frozen=True)
class RemovePodsViolatingNodeTaints:
    """A pod on a node with a NoSchedule taint (and PreferNoSchedule with ``includePreferNoSchedule``)
    it does not tolerate; ``excludedTaints`` entries (``key`` or ``key=value``) are ignored, and with
    ``includedTaints`` only the taints it names count."""

    name: ClassVar[str] = "removePodsViolatingNodeTaints"
    excluded: tuple[str, ...] = ()
    prefer_no_schedule: bool = False
    pods: PodFilter = PodFilter()
    included: tuple[str, ...] | None = None

    @classmethod
    def parse(cls, params: Params) -> RemovePodsViolatingNodeTaints:
        given = params.get("includedTaints") is not None
        return cls(
            params.strings("excludedTaints"),
            params.boolean("includePreferNoSchedule", False),
            PodFilter.parse(params),
            params.strings("includedTaints") if given else None,
        )

    def _counts(self, taint: tuple[str, str, str]) -> bool:
        key, value, effect = taint
        if effect != "NoSchedule" and not (self.prefer_no_schedule and effect == "PreferNoSchedule"):
            return False
        if self.included is not None and not _names_taint(self.included, key, value):
            return False
        return not _names_taint(self.excluded, key, value)

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        out: list[tuple[Task, str]] = []
        nodes = ctx.session.nodes
        for t in ctx.candidates():
            i = ctx.node_of(t)
            if i is None or not self.pods.admits(t):
                continue
            spec = nodes.specs[i]
            bad = next((x for x in spec.taints if self._counts(x) and not tolerates(t.tolerations, x)), None)
            if bad is None or not ctx.pick(t):
                continue
            shown = f"{bad[0]}={bad[1]}:{bad[2]}" if bad[1] else f"{bad[0]}:{bad[2]}"
            out.append(
                (
                    t,
                    f"rescheduling (removePodsViolatingNodeTaints): node {spec.name} has taint {shown}, not tolerated",
                )
            )
        return out


def placed_state(session: ExtensionPoints) -> ConstraintState:
    """A fresh :class:`ConstraintState` holding every pod placed on a node (this scheduler's and
    others'), counted as placement counts them; the strategy may remove pods from it as it picks them."""
    nodes = session.nodes
    state = ConstraintState(nodes.specs, session.snapshot.namespace_labels)
    counted = ALLOCATED_STATUSES | {TaskStatus.PIPELINED}
    for i, on_node in enumerate(nodes.tasks):
        for t in on_node.values():
            if t.status in counted:
                state.add(t, i)
    return state


def _anti_violations(state: ConstraintState, task: Task, node: int) -> tuple[list[str], float]:
    """Why ``task`` on ``node`` breaks required anti-affinity with the pods in ``state`` (which must not
    hold ``task`` itself): its own terms, and placed pods' terms that match it (the rule is symmetric);
    and how many pods it is in violation with, each pod counted (pods with one identical term too)."""
    out = []
    pods = 0.0
    for term in task.constraints.anti_affinity if task.constraints is not None else ():
        dom, counts = state.term_counter((term,)).domain_counts(term.topology_key)
        if counts[dom[node]] > 0:
            pods += float(counts[dom[node]])
            out.append(f"its anti-affinity ({term.describe()}) matches {counts[dom[node]]:g} pod(s) there")
    for g in state.existing_terms(task, "anti"):
        if g.counts[g.dom[node]] > 0:
            pods += float(g.counts[g.dom[node]])
            out.append(f"{g.counts[g.dom[node]]:g} pod(s) there repel it ({g.term.describe()})")
    return out, pods


@dataclass(frozen=True)
class RemovePodsViolatingInterPodAntiAffinity:
    """Pods that break required inter-pod anti-affinity where they run (a rule added after they were
    placed, or a label that changed): the pod in violation with most pods first (so one eviction may
    settle several; each pod counted, pods holding one identical rule too), then in eviction order; each
    pod is judged against the pods not evicted so far."""

    name: ClassVar[str] = "removePodsViolatingInterPodAntiAffinity"
    pods: PodFilter = PodFilter()

    @classmethod
    def parse(cls, params: Params) -> RemovePodsViolatingInterPodAntiAffinity:
        return cls(PodFilter.parse(params))

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        session = ctx.session
        placed = [t for on_node in session.nodes.tasks for t in on_node.values()]
        if not any(t.constraints is not None and t.constraints.anti_affinity for t in placed):
            return []
        state = placed_state(session)
        involved: list[tuple[float, Task, int]] = []
        for t in ctx.candidates():
            i = state.node_of(t)
            if i is None or not self.pods.admits(t):
                continue
            state.remove(t)
            count = _anti_violations(state, t, i)[1]
            state.add(t, i)
            if count:
                involved.append((count, t, i))
        involved.sort(key=lambda e: (-e[0], ctx.key(e[1])))
        out: list[tuple[Task, str]] = []
        for _, t, i in involved:
            state.remove(t)
            why = _anti_violations(state, t, i)[0]
            if not why or not ctx.pick(t):
                state.add(t, i)
                continue
            out.append(
                (
                    t,
                    f"rescheduling (removePodsViolatingInterPodAntiAffinity): on node {session.nodes.names[i]} "
                    + "; ".join(why),
                )
            )
        return out


@dataclass(frozen=True)
class RemovePodsViolatingTopologySpreadConstraint:
    """Pods of a topology spread constraint whose domains are more than ``maxSkew`` apart: pods leave the
    fullest domain (in eviction order) for the emptiest until the skew is within ``maxSkew``, counting
    as placement does. A constraint is judged once for each set of eligible nodes its pods see (by
    nodeAffinityPolicy/nodeTaintsPolicy, each pod by its own node selector, affinity and tolerations,
    as the descheduler keys a constraint by the pod's). With ``topologyBalanceNodeFit`` (default) a pod
    moves only if it fits, now, a node of a domain below the ideal (the mean); one that does not is
    passed over for the next. With fewer domains than ``minDomains`` moving pods cannot help, so nothing
    moves. Only ``DoNotSchedule`` constraints unless ``constraints`` names ``ScheduleAnyway`` too (or
    only it; ``includeSoftConstraints: true`` is the older form of both); ``namespaces`` and
    ``labelSelector`` only decide which pods may be evicted, never how domains are counted."""

    name: ClassVar[str] = "removePodsViolatingTopologySpreadConstraint"
    include_soft: bool = False
    pods: PodFilter = PodFilter()
    node_fit: bool = True
    include_hard: bool = True

    @classmethod
    def parse(cls, params: Params) -> RemovePodsViolatingTopologySpreadConstraint:
        soft = params.boolean("includeSoftConstraints", False)
        kinds = params.states("constraints", ("DoNotSchedule", "ScheduleAnyway"))
        if kinds and params.raw.get("includeSoftConstraints") is not None:
            raise params.error(
                "constraints", "give constraints or includeSoftConstraints (its older form), not both"
            )
        if kinds:
            return cls(
                "ScheduleAnyway" in kinds,
                PodFilter.parse(params),
                params.boolean("topologyBalanceNodeFit", True),
                "DoNotSchedule" in kinds,
            )
        return cls(soft, PodFilter.parse(params), params.boolean("topologyBalanceNodeFit", True))

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        session = ctx.session
        state: ConstraintState | None = None
        groups: dict[tuple[SpreadConstraint, bytes], tuple[Task, BoolArray]] = {}
        seen: set[tuple[SpreadConstraint, str]] = set()
        for on_node in session.nodes.tasks:
            for t in on_node.values():
                for c in t.constraints.spread if t.constraints is not None else ():
                    if (
                        not (self.include_hard if c.hard else self.include_soft)
                        or (c, t.placement_key) in seen
                    ):
                        continue
                    seen.add((c, t.placement_key))
                    if state is None:
                        state = placed_state(session)
                    eligible = state.spread_eligible(t, [c])
                    groups.setdefault((c, eligible.tobytes()), (t, eligible))
        if state is None:
            return []
        movable = [t for t in ctx.candidates() if self.pods.admits(t) and state.node_of(t) is not None]
        taken: set[str] = set()
        idle = session.nodes.idle.copy()  # less what the pods moved so far will take
        out: list[tuple[Task, str]] = []
        for (c, _), (example, eligible) in sorted(
            groups.items(), key=lambda kv: (kv[0][0].namespace, kv[0][0].describe(), kv[0][1])
        ):
            out.extend(self._balance(ctx, state, c, example, eligible, movable, taken, idle))
        return out

    def _balance(
        self,
        ctx: Context,
        state: ConstraintState,
        c: SpreadConstraint,
        example: Task,
        eligible: BoolArray,
        movable: list[Task],
        taken: set[str],
        idle: np.ndarray[Any, np.dtype[np.float64]],
    ) -> list[tuple[Task, str]]:
        dom, counts, present = state.spread_counts(example, c, eligible)
        counts = counts.copy()
        values = state.topology.domains(c.topology_key)[1]
        domains = [int(d) for d in np.flatnonzero(present)]
        if len(domains) < 2 or (c.min_domains is not None and len(domains) < c.min_domains):
            return []  # moving pods cannot make new domains: nothing to balance
        by_domain: dict[int, list[Task]] = {}
        for t in movable:
            i = state.node_of(t)
            if i is not None and eligible[i] and c.matches(t.namespace, t.labels) and t.key not in taken:
                by_domain.setdefault(int(dom[i]), []).append(t)
        ideal = float(sum(counts[d] for d in domains)) / len(domains)
        out: list[tuple[Task, str]] = []
        while True:
            least = float(min(counts[d] for d in domains))
            low = min(domains, key=lambda d: (counts[d], values[d]))
            sources = [d for d in domains if by_domain.get(d)]
            if not sources:
                break
            high = max(sources, key=lambda d: (counts[d], values[d]))
            if counts[high] - least <= c.max_skew:
                break
            t = by_domain[high].pop(0)
            to, target = low, -1
            if self.node_fit:
                # Nodes of the domains below the ideal that take the pod now (else it comes back).
                below = eligible & (counts[dom] < ideal) & (dom < len(values))
                fits = ctx.fits_elsewhere(t, idle) & below
                if not fits.any():
                    continue
                to = min({int(d) for d in dom[fits]}, key=lambda d: (counts[d], values[d]))
                target = int(np.flatnonzero(fits & (dom == to))[0])
            if not ctx.pick(t):
                continue
            if target >= 0:
                idle[target] -= t.request
            taken.add(t.key)
            out.append(
                (
                    t,
                    f"rescheduling (removePodsViolatingTopologySpreadConstraint): {c.topology_key}="
                    f"{values[high]} has {counts[high]:g} pods matching {c.describe()}, the least "
                    f"{least:g}: over maxSkew {c.max_skew}",
                )
            )
            counts[high] -= 1
            counts[to] += 1
        return out


# --- pod state ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodLifeTime:
    """A pod older than ``maxPodLifeTimeSeconds`` (since its creation); with ``states``, only one in
    one of them: its phase (``Running``, ``Pending``: bound, not started, ``Unknown``, ``Failed``), its
    reason (``NodeLost``, ``NodeAffinity``, ``Shutdown``, ``UnexpectedAdmissionError``...), or a
    container's waiting or terminated reason (``ContainerCreating``, ``CrashLoopBackOff``, ``OOMKilled``...;
    init containers' with ``includingInitContainers``, ephemeral ones' with
    ``includingEphemeralContainers``). Failed pods are asked only with ``states``."""

    name: ClassVar[str] = "podLifeTime"
    max_seconds: float
    states: tuple[str, ...] = ()
    pods: PodFilter = PodFilter()
    init: bool = False
    ephemeral: bool = False

    @classmethod
    def parse(cls, params: Params) -> PodLifeTime:
        return cls(
            params.number("maxPodLifeTimeSeconds", None, integer=True),
            params.states("states", LIFETIME_STATES),
            PodFilter.parse(params),
            params.boolean("includingInitContainers", False),
            params.boolean("includingEphemeralContainers", False),
        )

    def _in_state(self, t: Task) -> bool:
        if not self.states:
            return True
        rt = t.runtime
        if t.status is TaskStatus.FAILED:
            phase = "Failed"
        elif rt.phase_unknown:
            phase = "Unknown"
        else:
            phase = "Running" if t.status is TaskStatus.RUNNING else "Pending"
        reasons = [
            phase,
            rt.reason,
            *rt.container_reasons,
            *(rt.init_container_reasons if self.init else ()),
            *(rt.ephemeral_container_reasons if self.ephemeral else ()),
        ]
        return any(r in self.states for r in reasons)

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        out: list[tuple[Task, str]] = []
        for t in ctx.candidates(LIVE_OR_STARTING | FAILED if self.states else LIVE_OR_STARTING):
            if ctx.node_of(t) is None or not self.pods.admits(t) or not self._in_state(t):
                continue
            age = ctx.age(t)
            if age > self.max_seconds and ctx.pick(t):
                out.append(
                    (t, f"rescheduling (podLifeTime): pod is {age:.0f}s old, over {self.max_seconds:g}s")
                )
        return out


@dataclass(frozen=True)
class RemovePodsHavingTooManyRestarts:
    """A pod whose containers restarted ``podRestartThreshold`` times or more in sum (init containers
    too with ``includingInitContainers``); with ``states``, only one in phase ``Running`` or with a
    container waiting in ``CrashLoopBackOff`` (an init container too with ``includingInitContainers``)."""

    name: ClassVar[str] = "removePodsHavingTooManyRestarts"
    threshold: int
    init: bool = False
    pods: PodFilter = PodFilter()
    states: tuple[str, ...] = ()

    @classmethod
    def parse(cls, params: Params) -> RemovePodsHavingTooManyRestarts:
        threshold = int(params.number("podRestartThreshold", None, minimum=1, integer=True))
        return cls(
            threshold,
            params.boolean("includingInitContainers", False),
            PodFilter.parse(params),
            params.states("states", RESTART_STATES),
        )

    def _in_state(self, t: Task) -> bool:
        if not self.states:
            return True
        if t.status is TaskStatus.RUNNING and "Running" in self.states:
            return True
        rt = t.runtime
        reasons = (*rt.container_reasons, *(rt.init_container_reasons if self.init else ()))
        return any(r in self.states for r in reasons)

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        out: list[tuple[Task, str]] = []
        for t in ctx.candidates(LIVE_OR_STARTING):
            if ctx.node_of(t) is None or not self.pods.admits(t) or not self._in_state(t):
                continue
            restarts = t.runtime.restarts + (t.runtime.init_restarts if self.init else 0)
            if restarts >= self.threshold and ctx.pick(t):
                out.append(
                    (
                        t,
                        f"rescheduling (removePodsHavingTooManyRestarts): {restarts} restarts, "
                        f"threshold {self.threshold}",
                    )
                )
        return out


@dataclass(frozen=True)
class RemoveFailedPods:
    """A pod in phase Failed on a node (not already being deleted: the default evictor), optionally only
    for ``reasons`` (the pod's ``status.reason`` or a container's waiting/terminated reason) and for
    ``exitCodes`` (a terminated container's), init containers' too with ``includingInitContainers``; at
    least ``minPodLifetimeSeconds`` old, and not owned by one of ``excludeOwnerKinds``."""

    name: ClassVar[str] = "removeFailedPods"
    reasons: tuple[str, ...] = ()
    init: bool = False
    exclude_owner_kinds: tuple[str, ...] = ()
    min_seconds: float = 0.0
    pods: PodFilter = PodFilter()
    exit_codes: tuple[int, ...] = ()

    @classmethod
    def parse(cls, params: Params) -> RemoveFailedPods:
        return cls(
            params.strings("reasons"),
            params.boolean("includingInitContainers", False),
            params.strings("excludeOwnerKinds"),
            params.number("minPodLifetimeSeconds", 0, integer=True),
            PodFilter.parse(params),
            params.integers("exitCodes"),
        )

    def _exit_code(self, t: Task) -> int | None:
        """The first exit code of ``exitCodes`` the pod's containers ended with (None: none did)."""
        rt = t.runtime
        codes = (*rt.exit_codes, *(rt.init_exit_codes if self.init else ()))
        return next((c for c in codes if c in self.exit_codes), None)

    def _reason(self, t: Task) -> str | None:
        rt = t.runtime
        seen = [rt.reason, *rt.container_reasons, *(rt.init_container_reasons if self.init else ())]
        if not self.reasons:
            return next((r for r in seen if r), "")
        return next((r for r in seen if r in self.reasons), None)

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        out: list[tuple[Task, str]] = []
        for t in ctx.candidates(FAILED):
            if ctx.node_of(t) is None or not self.pods.admits(t):
                continue
            if _owner_kinds_excluded(t, self.exclude_owner_kinds) or ctx.age(t) < self.min_seconds:
                continue
            reason = self._reason(t)
            if reason is None:
                continue
            if self.exit_codes:
                code = self._exit_code(t)
                if code is None:
                    continue
                reason = f"{reason}, exit code {code}" if reason else f"exit code {code}"
            if not ctx.pick(t):
                continue
            because = f" ({reason})" if reason else ""
            out.append((t, f"rescheduling (removeFailedPods): pod failed{because} on node {t.node_name}"))
        return out


#: Strategy name -> its parser. The descheduler's spelling (``RemoveDuplicates``) is accepted too.
SELECTORS: dict[str, Callable[[Params], Selector]] = {
    "lowNodeUtilization": LowNodeUtilization.parse,
    "highNodeUtilization": HighNodeUtilization.parse,
    "removeDuplicates": RemoveDuplicates.parse,
    "removePodsViolatingNodeAffinity": RemovePodsViolatingNodeAffinity.parse,
    "removePodsViolatingNodeTaints": RemovePodsViolatingNodeTaints.parse,
    "removePodsViolatingInterPodAntiAffinity": RemovePodsViolatingInterPodAntiAffinity.parse,
    "removePodsViolatingTopologySpreadConstraint": RemovePodsViolatingTopologySpreadConstraint.parse,
    "podLifeTime": PodLifeTime.parse,
    "removePodsHavingTooManyRestarts": RemovePodsHavingTooManyRestarts.parse,
    "removeFailedPods": RemoveFailedPods.parse,
}
