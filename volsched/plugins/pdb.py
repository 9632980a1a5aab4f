"""pdb: name no victim a PodDisruptionBudget protects (as Volcano's ``pdb`` plugin).

The apiserver's Eviction API refuses an eviction a budget does not allow; without this plugin, preempt
and reclaim would keep choosing such a pod, be refused every session, and never try an allowed victim
on another node. With it, of the candidate victims (preemptable and reclaimable alike):

* a pod that is not Running (bound, not started) is named: the Eviction API asks no budget for it;
* a pod no budget selects is named; one that more than one budget selects is never named (the
  eviction subresource refuses it);
* a pod one budget selects is named while that budget's ``disruptionsAllowed``, less the pods it
  selects that this session already chose as victims (named Running, then evicted; given back when the
  eviction is discarded) and less those named before it in the same list, stays above zero (the first
  in the action's order go first).

Budgets come from the snapshot (``DisruptionBudget`` in :mod:`volsched.model.vocabulary`): the operator watches
policy/v1 PodDisruptionBudgets; the simulator plays the disruption controller.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.framework.plugin import BasePlugin
from volsched.framework.points import EventHandler, ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.vocabulary import DisruptionBudget, Task, TaskStatus

#: A pod more than one budget selects (never evicted).
_MANY = "*"


@register_plugin
class DisruptionBudgets(BasePlugin):
    name: ClassVar[str] = "pdb"

    def on_session_open(self, session: ExtensionPoints) -> None:
        by_namespace: dict[str, list[DisruptionBudget]] = {}
        for b in session.snapshot.budgets:
            by_namespace.setdefault(b.namespace, []).append(b)
        allowed = {b.key: b.disruptions_allowed for b in session.snapshot.budgets}
        owners: dict[str, str | None] = {}  # task key -> its budget's key, _MANY, or None
        #: Victims chosen this session (evicted, not given back): task key -> its budget; and per budget.
        #: Only pods named while Running count (evicting a pod not started disrupts nothing healthy).
        chosen: dict[str, str] = {}
        named_running: set[str] = set()
        taken: dict[str, int] = {}

        def budget_of(t: Task) -> str | None:
            key = t.key
            if key in owners:
                return owners[key]
            mine = [b.key for b in by_namespace.get(t.namespace, ()) if b.selects(t.namespace, t.labels)]
            owners[key] = found = None if not mine else mine[0] if len(mine) == 1 else _MANY
            return found

        def victims(actor: Task, candidates: list[Task]) -> list[Task]:
            spent: dict[str, int] = {}
            out = []
            for t in candidates:
                budget = budget_of(t) if by_namespace and t.status is TaskStatus.RUNNING else None
                if budget is None:
                    out.append(t)
                    continue
                if budget == _MANY:
                    continue
                used = spent.get(budget, 0)
                if allowed[budget] - taken.get(budget, 0) - used > 0:
                    out.append(t)
                    spent[budget] = used + 1
                    named_running.add(t.key)
            return out

        def evicted(t: Task) -> None:
            if t.status is TaskStatus.RELEASING and t.key in named_running:
                budget = budget_of(t)
                if budget is not None and budget != _MANY and t.key not in chosen:
                    chosen[t.key] = budget
                    taken[budget] = taken.get(budget, 0) + 1

        def given_back(t: Task) -> None:
            budget = chosen.pop(t.key, None)
            if budget is not None:
                taken[budget] -= 1

        session.add_preemptable_fn(self.name, victims)
        session.add_reclaimable_fn(self.name, victims)
        session.add_event_handler(EventHandler(allocate=given_back, deallocate=evicted))
