"""removePodsViolatingNodeAffinity: a pod whose node no longer matches its node selector or required
node affinity, or (if asked) one that another node would suit better by its preferred node affinity.

Not the node affinity terms themselves: those are read with placement's code (``volsched.model.nodeterms``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from volsched.model.nodeterms import matches_affinity, matches_node_selector, matches_node_term
from volsched.model.resources import EPS
from volsched.model.vocabulary import Task
from volsched.plugins.rescheduling.context import Context, feasible_elsewhere
from volsched.plugins.rescheduling.params import Params, PodFilter
from volsched.records import dataclass

REQUIRED_NODE_AFFINITY = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED_NODE_AFFINITY = "preferredDuringSchedulingIgnoredDuringExecution"
#: Accepted as the descheduler accepts it, and moves nothing: Kubernetes has no such node affinity yet.
REQUIRED_DURING_EXECUTION = "requiredDuringSchedulingRequiredDuringExecution"


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
                selector_ok = matches_node_selector(spec, t.node_selector)
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
