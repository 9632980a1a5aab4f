"""predicates: which nodes a task may go to.

Checks spec.nodeSelector, required node affinity, taints against tolerations, cordoned (unschedulable)
nodes and nodes a rescheduled pod was moved off. All of it depends only on the task's placement spec,
so it is computed once per distinct spec as a boolean mask over all nodes. Free capacity (including the
``pods`` count, i.e. max pods) is the session's own check, done for every task whatever the plugins,
and explained in numbers by the session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import BasePlugin
from volsched.framework.registry import register_plugin
from volsched.framework.session import Session
from volsched.model.cluster import BoolArray, IndexArray, NodeTable
from volsched.model.objects import NodeSpec, Task

UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")


def tolerates(tolerations: Sequence[Any], taint: tuple[str, str, str]) -> bool:
    key, value, effect = taint
    for tol in tolerations:
        if not isinstance(tol, Mapping):
            continue
        t_effect = tol.get("effect") or ""
        if t_effect and t_effect != effect:
            continue
        op = tol.get("operator") or "Equal"
        t_key = tol.get("key") or ""
        if not t_key:
            if op == "Exists":
                return True
            continue
        if t_key != key:
            continue
        if op == "Exists" or str(tol.get("value") or "") == value:
            return True
    return False


def _match_expression(spec: NodeSpec, expr: Mapping[str, Any], *, field: bool) -> bool:
    key = expr["key"]
    op = expr["operator"]
    values = [str(v) for v in expr.get("values") or []]
    if field:
        present, value = (True, spec.name) if key == "metadata.name" else (False, "")
    else:
        present, value = key in spec.labels, spec.labels.get(key, "")
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if not present or len(values) != 1:
        return False
    try:
        left, right = int(value), int(values[0])
    except ValueError:
        return False
    return left > right if op == "Gt" else left < right


def matches_affinity(spec: NodeSpec, terms: Sequence[Any]) -> bool:
    """Required node affinity: any term matches; inside a term every expression matches."""
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not exprs and not fields:
            continue  # an empty term matches nothing
        if all(_match_expression(spec, e, field=False) for e in exprs) and all(
            _match_expression(spec, e, field=True) for e in fields
        ):
            return True
    return False


def _taint_reason(t: tuple[str, str, str]) -> str:
    if t == UNSCHEDULABLE_TAINT:
        return "node(s) were unschedulable (cordoned)"
    return (
        f"node(s) had untolerated taint {{{t[0]}: {t[1]}}}"
        if t[1]
        else f"node(s) had untolerated taint {{{t[0]}}}"
    )


class _StaticChecks:
    """Per-placement-spec masks over all nodes, computed once and reused by every task that shares them."""

    def __init__(self, nodes: NodeTable) -> None:
        self.nodes = nodes
        groups: dict[tuple[tuple[str, str, str], ...], int] = {}
        self.taint_group = np.zeros(len(nodes), dtype=np.intp)
        for i, spec in enumerate(nodes.specs):
            taints = tuple(t for t in spec.taints if t[2] in ("NoSchedule", "NoExecute"))
            if spec.unschedulable:
                taints = (*taints, UNSCHEDULABLE_TAINT)
            self.taint_group[i] = groups.setdefault(taints, len(groups))
        self.groups = list(groups)
        self._cache: dict[str, tuple[BoolArray, BoolArray, BoolArray, BoolArray]] = {}
        self._combined: dict[str, BoolArray] = {}

    def combined(self, task: Task) -> BoolArray:
        """All of :meth:`masks` at once."""
        hit = self._combined.get(task.placement_key)
        if hit is None:
            selector, affinity, taints, avoided = self.masks(task)
            hit = selector & affinity & taints & avoided
            self._combined[task.placement_key] = hit
        return hit

    def masks(self, task: Task) -> tuple[BoolArray, BoolArray, BoolArray, BoolArray]:
        """(selector ok, affinity ok, taints tolerated, not avoided) over all nodes."""
        hit = self._cache.get(task.placement_key)
        if hit is not None:
            return hit
        n = len(self.nodes)
        specs = self.nodes.specs
        if task.node_selector:
            selector = np.array(
                [all(s.labels.get(k) == v for k, v in task.node_selector.items()) for s in specs], dtype=bool
            )
        else:
            selector = np.ones(n, dtype=bool)
        if task.affinity_terms:
            affinity = np.array([matches_affinity(s, task.affinity_terms) for s in specs], dtype=bool)
        else:
            affinity = np.ones(n, dtype=bool)
        tolerated_group = np.array(
            [all(tolerates(task.tolerations, t) for t in group) for group in self.groups] or [True],
            dtype=bool,
        )
        taints = tolerated_group[self.taint_group] if n else np.ones(0, dtype=bool)
        avoided = np.ones(n, dtype=bool)
        for name in task.avoid_nodes:
            i = self.nodes.index.get(name)
            if i is not None:
                avoided[i] = False
        out = (selector, affinity, taints, avoided)
        self._cache[task.placement_key] = out
        return out


@register_plugin
class Predicates(BasePlugin):
    name: ClassVar[str] = "predicates"

    def on_session_open(self, session: Session) -> None:
        nodes = session.nodes
        static = _StaticChecks(nodes)

        def predicate(task: Task, idx: IndexArray) -> BoolArray:
            mask: BoolArray = static.combined(task)[idx]
            return mask

        def explain(task: Task, idx: IndexArray) -> list[tuple[str, int]]:
            selector, affinity, taints, avoided = static.masks(task)
            out: list[tuple[str, int]] = []
            for ok, reason in (
                (selector, "node(s) didn't match the pod's node selector"),
                (affinity, "node(s) didn't match the pod's node affinity"),
                (avoided, "node(s) the pod was moved off"),
            ):
                bad = int(np.sum(~ok[idx]))
                if bad:
                    out.append((reason, bad))
            by_taint: dict[str, int] = {}
            for i in idx[~taints[idx]]:
                for t in static.groups[static.taint_group[i]]:
                    if not tolerates(task.tolerations, t):
                        by_taint[_taint_reason(t)] = by_taint.get(_taint_reason(t), 0) + 1
                        break
            out.extend(by_taint.items())
            return out

        session.add_predicate_fn(self.name, predicate, explain=explain)
