"""lowNodeUtilization spreads load: pods leave the nodes above a target for the underutilized ones.
highNodeUtilization packs it: pods leave the underutilized nodes for the others. Either moves a pod
only if a node on the other side takes it now, and both read a node's load alike (:func:`utilization`):
per named resource, from the pods' requests or from the usage plugin's estimate of real usage.

Not the usage estimate itself (``volsched.plugins.shared.usage_estimate``), and no scoring: where a
moved pod lands is the scheduler's choice (with highNodeUtilization, score with binpack).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from volsched.model.errors import InputError
from volsched.model.resources import CPU, MEMORY
from volsched.model.vocabulary import Task
from volsched.plugins.rescheduling.context import Context
from volsched.plugins.rescheduling.params import Params
from volsched.records import dataclass

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
