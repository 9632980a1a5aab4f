"""nodeorder: score nodes by how their resources would be used after placing the task, and by the
soft parts of the pod spec.

Scores only (0..100 each, weighted); filters are the predicates plugin's. Arguments and what each
score means: docs/scoring.md and docs/design/modules.md#nodeorder.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, NamedTuple

import numpy as np

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.points import ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.cluster import BoolArray, IndexArray, NodeTable
from volsched.model.nodeterms import matches_node_term, tolerates
from volsched.model.resources import CPU, EPS, MEMORY, ResourceSpace
from volsched.model.vocabulary import Task
from volsched.plugins.shared.constraint_state import constraint_state
from volsched.plugins.shared.resource_weights import resource_weights

FloatArray = np.ndarray[Any, np.dtype[np.float64]]


class _Plan(NamedTuple):
    """How one distinct request is scored: the columns it counts (positions in ``dims``), their
    least/most coefficient, the constant, the task's own extra (cpu, memory), and the balanced weight
    (0: balanced leaves it unscored)."""

    cols: list[int]
    coef: list[float]
    const: float
    extra: tuple[float, float]
    balanced: float


class _Columns(NamedTuple):
    """The resources nodeorder scores, in column order (cpu and memory first): their dimensions, how many
    of them the scoring extras apply to (cpu, memory), whether each always counts (cpu and memory) or
    only for a task that asks for it, their weights, the extras' column of each of the first ``base``,
    and 1/allocatable over them (read-only), for the ``space`` they are of."""

    space: ResourceSpace
    dims: list[int]
    base: int
    always: list[bool]
    weights: list[float]
    extra_col: list[int]
    inv: FloatArray


@register_plugin
class NodeOrder(BasePlugin):
    name: ClassVar[str] = "nodeorder"
    reads_clock: ClassVar[bool] = False
    answers_by_shape: ClassVar[bool] = True

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.least = arguments.number("leastrequested.weight", 1, minimum=0)
        self.most = arguments.number("mostrequested.weight", 0, minimum=0)
        self.balanced = arguments.number("balancedresource.weight", 1, minimum=0)
        self.node_affinity = arguments.number("nodeaffinity.weight", 2, minimum=0)
        self.taints = arguments.number("tainttoleration.weight", 3, minimum=0)
        self.pod_affinity = arguments.number("podaffinity.weight", 2, minimum=0)
        self.spread = arguments.number("podtopologyspread.weight", 2, minimum=0)
        self.resource_weights = resource_weights(arguments, "nodeorder")
        #: Where the resources scored are kept in a node table's memo (:meth:`_columns`): made with the
        #: plugin (ahead of the session, off its way).
        self._memo_key = f"nodeorder.columns {list(self.resource_weights.items())}"

    def _columns(self, nodes: NodeTable, space: ResourceSpace) -> _Columns:
        """The resources scored, their columns, weights and 1/allocatable (:class:`_Columns`). They follow
        from this plugin's resource weights, the space and the nodes' allocatable alone: kept in the node
        table's memo for every session on these nodes (read-only), with the space they are of."""
        kept: _Columns | None = nodes.memo.get(self._memo_key)
        if kept is not None and kept.space is space:
            return kept
        # cpu and memory first (columns 0 and 1, which the scoring extras apply to), then extended ones.
        names = [n for n, w in self.resource_weights.items() if w > 0 and n in space.names]
        names.sort(key=lambda n: (n != CPU, n != MEMORY))
        dims = [space.index(n) for n in names]
        base = sum(1 for n in names if n in (CPU, MEMORY))  # columns the scoring extras apply to
        # 1/allocatable, and 0 where a node has none of a resource: it then counts as full (frac 1).
        alloc = nodes.allocatable[:, dims]
        inv = np.divide(1.0, alloc, out=np.zeros_like(alloc), where=alloc > 0)
        inv.setflags(write=False)
        kept = nodes.memo[self._memo_key] = _Columns(
            space=space,
            dims=dims,
            base=base,
            # cpu and memory always count, extended resources only for a task that asks for them.
            always=[n in (CPU, MEMORY) for n in names],
            weights=[self.resource_weights[n] for n in names],
            extra_col=[0 if n == CPU else 1 for n in names[:base]],  # (cpu, memory): the extras' order
            inv=inv,
        )
        return kept

    def on_session_open(self, session: ExtensionPoints) -> None:
        nodes = session.nodes
        space = session.space
        static = _StaticScores(nodes, node_affinity=self.node_affinity, taints=self.taints)
        if self.pod_affinity or self.spread:
            state = constraint_state(session)
            if state is not None:
                affinity_weight, spread_weight = self.pod_affinity, self.spread

                def constraint_score(task: Task, feasible: BoolArray) -> FloatArray | None:
                    return state.score(
                        task, feasible, affinity_weight=affinity_weight, spread_weight=spread_weight
                    )

                session.add_constraint_score_fn(self.name, constraint_score)
        columns = self._columns(nodes, space)
        if not (self.least or self.most or self.balanced) or not columns.dims:
            if static.active:

                def static_only(task: Task, idx: IndexArray) -> FloatArray:
                    extra = static.scores(task)
                    return np.zeros(len(idx)) if extra is None else extra[idx]

                session.add_node_order_fn(self.name, static_only)
            return

        dims, base, always, weights, extra_col = (
            columns.dims,
            columns.base,
            columns.always,
            columns.weights,
            columns.extra_col,
        )
        inv = columns.inv
        idle = nodes.idle
        node_extra = nodes.score_extra
        least, most, balanced = self.least, self.most, self.balanced
        plans: dict[tuple[bytes, tuple[float, float] | None], _Plan] = {}

        def plan_of(task: Task) -> _Plan:
            key = (task.request.tobytes(), task.score_extra)
            found = plans.get(key)
            if found is not None:
                return found
            cols = [k for k in range(len(dims)) if always[k] or task.request.item(dims[k]) > EPS]
            total = sum(weights[k] for k in cols)
            # least*100*sum(w(1-f))/W + most*100*sum(w f)/W = 100*least + sum(100*(most-least)*w/W * f)
            coef = [100.0 * (most - least) * weights[k] / total for k in cols]
            if not cols:  # nothing it scores (only extended resources weighed, none asked): no score
                plan = plans[key] = _Plan(cols=[], coef=[], const=0.0, extra=(0.0, 0.0), balanced=0.0)
                return plan
            # kube-scheduler's balanced allocation skips a pod that asks none of what it scores.
            asks = any(task.request.item(dims[k]) > EPS for k in cols)
            plan = _Plan(
                cols=cols,
                coef=coef,
                const=100.0 * least + (100.0 * balanced if asks else 0.0),
                extra=task.score_extra or (0.0, 0.0),
                balanced=balanced if asks and len(cols) > 1 else 0.0,
            )
            plans[key] = plan
            return plan

        def score(task: Task, idx: IndexArray) -> FloatArray:
            plan = plan_of(task)
            request = task.request
            if len(idx) == 1:
                # One node (the one the last placement changed): plain float math, the same operations
                # in the same order as below, so both paths give bit-identical scores.
                i = int(idx[0])
                value = plan.const
                fracs: list[float] = []
                for k, c in zip(plan.cols, plan.coef, strict=True):
                    left = idle.item(i, dims[k]) - request.item(dims[k])
                    g = min(max(1.0 - left * inv.item(i, k), 0.0), 1.0)
                    if k < base:
                        e = extra_col[k]
                        left = left - node_extra.item(i, e) - plan.extra[e]
                        f = min(max(1.0 - left * inv.item(i, k), 0.0), 1.0)
                    else:
                        f = g
                    value += c * f
                    fracs.append(g)
                if plan.balanced:
                    value -= 100.0 * plan.balanced * _spread_of(fracs)
                if static.active:
                    extra = static.scores(task)
                    if extra is not None:
                        value += extra.item(i)
                return np.array([value])
            out: FloatArray = np.full(len(idx), plan.const)
            columns: list[FloatArray] = []
            for k, c in zip(plan.cols, plan.coef, strict=True):
                left = idle[idx, dims[k]] - request.item(dims[k])
                g = np.clip(1.0 - left * inv[idx, k], 0.0, 1.0)
                if k < base:
                    e = extra_col[k]
                    left = left - node_extra[idx, e] - plan.extra[e]
                    f = np.clip(1.0 - left * inv[idx, k], 0.0, 1.0)
                else:
                    f = g
                out += c * f
                columns.append(g)
            if plan.balanced:
                out -= 100.0 * plan.balanced * _spread_of_columns(columns)
            if static.active:
                extra = static.scores(task)
                if extra is not None:
                    out += extra[idx]
            return out

        session.add_node_order_fn(self.name, score)


def _spread_of(fracs: list[float]) -> float:
    """How far apart the fractions are, as kube-scheduler's balanced allocation measures it: half the
    difference of two, the standard deviation of more."""
    if len(fracs) == 2:
        return abs(fracs[0] - fracs[1]) / 2.0
    mean = 0.0
    for f in fracs:
        mean += f
    mean /= len(fracs)
    total = 0.0
    for f in fracs:
        total += (f - mean) * (f - mean)
    return math.sqrt(total / len(fracs))


def _spread_of_columns(columns: list[FloatArray]) -> FloatArray:
    """:func:`_spread_of` over nodes, column by column in the same order (the same floats)."""
    if len(columns) == 2:
        return np.abs(columns[0] - columns[1]) / 2.0
    mean = np.zeros_like(columns[0])
    for g in columns:
        mean += g
    mean /= len(columns)
    total = np.zeros_like(columns[0])
    for g in columns:
        total += (g - mean) * (g - mean)
    out: FloatArray = np.sqrt(total / len(columns))
    return out


class _StaticScores:
    """Preferred node affinity and PreferNoSchedule taints: weighted 0..100 scores over all nodes, per
    placement spec (None for a task neither applies to)."""

    def __init__(self, nodes: NodeTable, *, node_affinity: float, taints: float) -> None:
        self.specs = nodes.specs
        self.node_affinity = node_affinity
        self.taint_weight = taints
        # The nodes' PreferNoSchedule taints follow from their specs alone: kept for every session on
        # these nodes, not read again every session (figures: docs/benchmarks/2026-11-29.md).
        # (with whether any node has one: not a walk over every node each session either)
        kept: tuple[list[tuple[tuple[str, str, str], ...]], bool] | None = nodes.memo.get("soft_taints")
        if kept is None:
            soft = [tuple(t for t in s.taints if t[2] == "PreferNoSchedule") for s in nodes.specs]
            kept = nodes.memo["soft_taints"] = (soft, any(soft))
        self.soft_taints, any_soft = kept
        self.any_soft_taint = bool(taints) and any_soft
        self.active = bool(node_affinity) or self.any_soft_taint
        self._cache: dict[str, FloatArray | None] = {}

    def scores(self, task: Task) -> FloatArray | None:
        key = task.placement_key
        if key in self._cache:
            return self._cache[key]
        out: FloatArray | None = None
        n = len(self.specs)
        if self.node_affinity and task.preferred_node_terms:
            raw = np.fromiter(
                (
                    sum(w for w, term in task.preferred_node_terms if matches_node_term(s, term))
                    for s in self.specs
                ),
                dtype=np.float64,
                count=n,
            )
            top = float(raw.max()) if n else 0.0
            if top > 0:
                out = self.node_affinity * 100.0 * raw / top
        if self.any_soft_taint:
            bad = np.fromiter(
                (sum(1 for t in taints if not tolerates(task.tolerations, t)) for taints in self.soft_taints),
                dtype=np.float64,
                count=n,
            )
            top = float(bad.max()) if n else 0.0
            if top > 0:
                taint_score = self.taint_weight * (100.0 - 100.0 * bad / top)
                out = taint_score if out is None else out + taint_score
        self._cache[key] = out
        return out
