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
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from volsched.model.constraints import BoolArray, ConstraintState
from volsched.model.errors import InputError
from volsched.model.nodeterms import matches_affinity, matches_node_term, tolerates
from volsched.model.resources import CPU, EPS, MEMORY
from volsched.model.selectors import SpreadConstraint
from volsched.model.vocabulary import Task, TaskStatus
from volsched.plugins.rescheduling.context import (
    FAILED,
    LIVE_OR_STARTING,
    Context,
    Selector,
    feasible_elsewhere,
    placed_state,
)
from volsched.plugins.rescheduling.params import Params, PodFilter, owner_kinds_excluded
from volsched.records import dataclass

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
            if owner_kinds_excluded(t, self.exclude_owner_kinds):
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
                    if i is None or not feasible_elsewhere(ctx, t, i) or not ctx.pick(t):
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
                    if feasible_elsewhere(ctx, t, i) and ctx.pick(t):
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
            if owner_kinds_excluded(t, self.exclude_owner_kinds) or ctx.age(t) < self.min_seconds:
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
