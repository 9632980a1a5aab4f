"""removePodsViolatingTopologySpreadConstraint: pods leave the fullest domain of a topology spread
constraint for the emptiest until the domains are within ``maxSkew``.

Not the counting of pods per domain, nor which nodes a constraint sees: those are placement's
(``volsched.model.constraints``, through :func:`placed_state`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from volsched.model.constraints import BoolArray, ConstraintState
from volsched.model.selectors import SpreadConstraint
from volsched.model.vocabulary import Task
from volsched.plugins.rescheduling.context import Context, placed_state
from volsched.plugins.rescheduling.params import Params, PodFilter
from volsched.records import dataclass


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
