"""removePodsViolatingInterPodAntiAffinity: pods that break required inter-pod anti-affinity where they
run, the pod in violation with most pods first.

Not the counting of pods per topology domain: that is placement's (``volsched.model.constraints``,
through :func:`placed_state`).
"""

from __future__ import annotations

from typing import ClassVar

from volsched.model.constraints import ConstraintState
from volsched.model.vocabulary import Task
from volsched.plugins.rescheduling.context import Context, placed_state
from volsched.plugins.rescheduling.params import Params, PodFilter
from volsched.records import dataclass


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
