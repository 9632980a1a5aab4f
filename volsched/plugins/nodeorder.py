"""nodeorder: score nodes by how their cpu and memory would be used after placing the task, and by
the soft parts of the pod spec.

Arguments (Volcano's names), each score 0..100 as in the Kubernetes scheduler, the plugin's score the
weighted sum:

* ``leastrequested.weight`` (default 1, spreads), ``mostrequested.weight`` (default 0, packs),
  ``balancedresource.weight`` (default 1, evens cpu against memory);
* ``nodeaffinity.weight`` (default 2): preferred node affinity, the sum of the weights of the matching
  preferred terms, scaled so the best node gets 100;
* ``tainttoleration.weight`` (default 3): fewer untolerated ``PreferNoSchedule`` taints is better
  (100 for none, 0 for the most any node has);
* ``podaffinity.weight`` (default 2): preferred pod affinity (+weight per matching pod in the node's
  domain) and anti-affinity (-weight), the pod's own terms and placed pods' terms that match it (a placed
  pod's required affinity counts 1), scaled min..max to 0..100 over the nodes that pass the filters;
* ``podtopologyspread.weight`` (default 2): ``ScheduleAnyway`` spread constraints; fewer matching pods
  in the node's domain is better, as kube-scheduler scores it.

The first two groups depend on the task's spec and node state only (cached in the session's node views);
the pod affinity and spread scores depend on the other pods placed and are constraint scores over the
session's per-domain counts (see ``volsched.model.constraints``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.points import ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.cluster import BoolArray, IndexArray, NodeTable
from volsched.model.constraints import matches_node_term, tolerates
from volsched.model.resources import CPU, MEMORY
from volsched.model.vocabulary import Task
from volsched.plugins.shared.constraint_state import constraint_state

FloatArray = np.ndarray[Any, np.dtype[np.float64]]


@register_plugin
class NodeOrder(BasePlugin):
    name: ClassVar[str] = "nodeorder"
    reads_clock: ClassVar[bool] = False

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.least = arguments.number("leastrequested.weight", 1, minimum=0)
        self.most = arguments.number("mostrequested.weight", 0, minimum=0)
        self.balanced = arguments.number("balancedresource.weight", 1, minimum=0)
        self.node_affinity = arguments.number("nodeaffinity.weight", 2, minimum=0)
        self.taints = arguments.number("tainttoleration.weight", 3, minimum=0)
        self.pod_affinity = arguments.number("podaffinity.weight", 2, minimum=0)
        self.spread = arguments.number("podtopologyspread.weight", 2, minimum=0)

    def on_session_open(self, session: ExtensionPoints) -> None:
        nodes = session.nodes
        dims = np.array([session.space.index(CPU), session.space.index(MEMORY)], dtype=np.intp)
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
        if not (self.least or self.most or self.balanced):
            if static.active:

                def static_only(task: Task, idx: IndexArray) -> FloatArray:
                    extra = static.scores(task)
                    return np.zeros(len(idx)) if extra is None else extra[idx]

                session.add_node_order_fn(self.name, static_only)
            return

        alloc = nodes.allocatable[:, dims]
        # 1/allocatable, and 0 where a node has none of a resource: it then counts as full (frac 1).
        inv = np.divide(1.0, alloc, out=np.zeros_like(alloc), where=alloc > 0)

        # score = least*50*(2 - f0 - f1) + most*50*(f0 + f1) + balanced*(100 - 50*|f0 - f1|), where f is the
        # fraction of cpu (f0) and memory (f1) used after placing; folded into c0 + c1*(f0+f1) + c2*|f0-f1|.
        c0 = 100.0 * (self.least + self.balanced)
        c1 = 50.0 * (self.most - self.least)
        c2 = -50.0 * self.balanced

        idle = nodes.idle
        cpu, mem = int(dims[0]), int(dims[1])

        def score(task: Task, idx: IndexArray) -> np.ndarray[Any, np.dtype[np.float64]]:
            if len(idx) == 1:
                # One node (the one the last placement changed): plain float math, the same operations
                # in the same order as below, so both paths give bit-identical scores.
                i = int(idx[0])
                f0 = min(max(1.0 - (idle.item(i, cpu) - task.request.item(cpu)) * inv.item(i, 0), 0.0), 1.0)
                f1 = min(max(1.0 - (idle.item(i, mem) - task.request.item(mem)) * inv.item(i, 1), 0.0), 1.0)
                value = c0 + c1 * (f0 + f1)
                if c2:
                    value += c2 * abs(f0 - f1)
                if static.active:
                    extra = static.scores(task)
                    if extra is not None:
                        value += extra.item(i)
                return np.array([value])
            frac = 1.0 - (nodes.idle[idx][:, dims] - task.request[dims]) * inv[idx]
            np.clip(frac, 0.0, 1.0, out=frac)
            out: FloatArray = c0 + c1 * (frac[:, 0] + frac[:, 1])
            if c2:
                out += c2 * np.abs(frac[:, 0] - frac[:, 1])
            if static.active:
                extra = static.scores(task)
                if extra is not None:
                    out += extra[idx]
            return out

        session.add_node_order_fn(self.name, score)


class _StaticScores:
    """Preferred node affinity and PreferNoSchedule taints: weighted 0..100 scores over all nodes, per
    placement spec (None for a task neither applies to)."""

    def __init__(self, nodes: NodeTable, *, node_affinity: float, taints: float) -> None:
        self.specs = nodes.specs
        self.node_affinity = node_affinity
        self.taint_weight = taints
        # The nodes' PreferNoSchedule taints follow from their specs alone: kept for every session on
        # these nodes (5,000 specs read again every session cost 3 ms).
        soft: list[tuple[tuple[str, str, str], ...]] | None = nodes.memo.get("soft_taints")
        if soft is None:
            soft = nodes.memo["soft_taints"] = [
                tuple(t for t in s.taints if t[2] == "PreferNoSchedule") for s in nodes.specs
            ]
        self.soft_taints = soft
        self.any_soft_taint = bool(taints) and any(self.soft_taints)
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
