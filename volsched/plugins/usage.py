"""usage: filter, score and choose preemption victims by nodes' measured load, not by requests.

It reads the usage the metrics collector put on the snapshot's nodes (``session.nodes.usage``) and
estimates what this session adds; it fetches nothing itself and never moves running pods (that is
``rescheduling`` with the ``shuffle`` action). Its arguments, score and victim rule: docs/node-load.md;
how the estimate works: docs/design/modules.md#usage.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.points import EventHandler, ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.cluster import BoolArray, IndexArray
from volsched.model.errors import InputError
from volsched.model.resources import Vector
from volsched.model.vocabulary import Task
from volsched.plugins.shared.usage_estimate import UsageEstimate, build_estimate

DEFAULT_STALE_AFTER = 300.0


def usage_score(
    free: np.ndarray[Any, np.dtype[np.float64]],
    own: np.ndarray[Any, np.dtype[np.float64]],
    *,
    weights: np.ndarray[Any, np.dtype[np.float64]],
    dimension_weight: float,
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The weighted mean of the usage factor and the resource-dimension factor, per node, in 0..100.

    ``free`` is headroom in percent per (node, [cpu, memory]); ``own`` the task's request as percent of
    each node's allocatable, same shape. See the module docstring."""
    total = float(weights.sum()) + dimension_weight
    if total <= 0:
        return np.zeros(len(free))
    out = (free * weights).sum(axis=1)
    if dimension_weight:
        size = own.sum(axis=1, keepdims=True)
        fallback = weights / weights.sum() if weights.sum() > 0 else np.full(2, 0.5)
        with np.errstate(divide="ignore", invalid="ignore"):
            shape = np.where(size > 0, own / size, fallback)
        out = out + dimension_weight * (free * shape).sum(axis=1)
    return np.asarray(out / total, dtype=np.float64)


def _pct(value: float) -> str:
    return f"{round(value, 1):g}%"


@register_plugin
class Usage(BasePlugin):
    name: ClassVar[str] = "usage"
    #: It reads the age of usage figures.
    reads_clock: ClassVar[bool] = True

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.number("usage.weight", 5, minimum=0)
        self.cpu_weight = arguments.number("cpu.weight", 1, minimum=0)
        self.memory_weight = arguments.number("memory.weight", 1, minimum=0)
        self.fluctuation_weight = arguments.number("fluctuation.weight", 1, minimum=0)
        self.dimension_weight = arguments.number("dimension.weight", 1, minimum=0)
        self.preempt_threshold: float | None = None
        if arguments.has("preemptThreshold"):
            self.preempt_threshold = arguments.number("preemptThreshold", 0, minimum=0, maximum=100)
        self.thresholds: list[float | None] = [None, None]
        if arguments.has("thresholds.cpu"):
            self.thresholds[0] = arguments.number("thresholds.cpu", 100, minimum=0, maximum=100)
        for key in ("thresholds.mem", "thresholds.memory"):
            if arguments.has(key):
                if self.thresholds[1] is not None:
                    raise InputError("plugin usage: give thresholds.mem or thresholds.memory, not both")
                self.thresholds[1] = arguments.number(key, 100, minimum=0, maximum=100)
        self.stale_after = arguments.duration("staleAfter", DEFAULT_STALE_AFTER)

    def on_session_open(self, session: ExtensionPoints) -> None:
        est = build_estimate(session, self.stale_after)
        if not est.any_fresh:
            return
        session.add_event_handler(EventHandler(allocate=est.on_allocate, deallocate=est.on_deallocate))
        labels = ("cpu", "memory")
        limits = np.array([math.inf if t is None else t for t in self.thresholds])

        if any(t is not None for t in self.thresholds):

            def over(idx: IndexArray) -> np.ndarray[Any, np.dtype[np.bool_]]:
                return np.asarray((est.estimate(idx) > limits) & est.fresh[idx, None], dtype=bool)

            def predicate(task: Task, idx: IndexArray) -> BoolArray:
                return np.asarray(~over(idx).any(axis=1), dtype=bool)

            def explain(task: Task, idx: IndexArray) -> list[tuple[str, int]]:
                flags = over(idx)
                values = est.estimate(idx)
                out: list[tuple[str, int]] = []
                taken = np.zeros(len(idx), dtype=bool)
                for d in range(2):
                    hit = flags[:, d] & ~taken
                    taken |= hit
                    if not hit.any():
                        continue
                    lo, hi = float(values[hit, d].min()), float(values[hit, d].max())
                    shown = _pct(lo) if _pct(lo) == _pct(hi) else f"{_pct(lo)}-{_pct(hi)}"
                    out.append(
                        (
                            f"node(s) over {labels[d]} usage threshold {_pct(float(limits[d]))} (usage {shown})",
                            int(hit.sum()),
                        )
                    )
                return out

            session.add_predicate_fn(self.name, predicate, explain=explain)

        weights = np.array([self.cpu_weight, self.memory_weight], dtype=np.float64)
        self._register_victims(session, est, weights)
        if not self.weight or not (weights.sum() + self.dimension_weight):
            return

        def score(task: Task, idx: IndexArray) -> np.ndarray[Any, np.dtype[np.float64]]:
            alloc = session.nodes.allocatable[np.ix_(idx, est.dims)]
            with np.errstate(divide="ignore", invalid="ignore"):
                own = np.where(alloc > 0, task.request[est.dims] / alloc * 100.0, 0.0)
            effective = est.estimate(idx) + own + self.fluctuation_weight * est.fluctuation[idx]
            free = 100.0 - np.clip(effective, 0.0, 100.0)
            mixed = usage_score(free, own, weights=weights, dimension_weight=self.dimension_weight)
            return np.asarray(mixed * self.weight, dtype=np.float64)

        session.add_node_order_fn(self.name, score)

    def _register_victims(self, session: ExtensionPoints, est: UsageEstimate, weights: Vector) -> None:
        """Victims only on nodes at least as busy as ``preemptThreshold`` (default: the fresh mean)."""
        w = weights if weights.sum() > 0 else np.array([1.0, 1.0])

        def busy(idx: IndexArray) -> Vector:
            return np.asarray((est.estimate(idx) * w).sum(axis=1) / w.sum(), dtype=np.float64)

        def victims(actor: Task, candidates: list[Task]) -> list[Task]:
            if self.preempt_threshold is not None:
                bar = self.preempt_threshold
            else:
                fresh = np.flatnonzero(est.fresh)
                bar = float(busy(fresh).mean())
            out = []
            for t in candidates:
                node = session.nodes.index.get(t.node_name or "")
                if node is None or not est.fresh[node]:
                    out.append(t)
                    continue
                if float(busy(np.array([node], dtype=np.intp))[0]) >= bar - 1e-9:
                    out.append(t)
            return out

        session.add_preemptable_fn(self.name, victims)
        session.add_reclaimable_fn(self.name, victims)
