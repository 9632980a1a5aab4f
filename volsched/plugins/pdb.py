"""pdb: victims within their PodDisruptionBudgets first (as Volcano's ``pdb`` plugin, for shuffle).

A victim filter (``add_victim_filter_fn``) the framework applies last to every action's victims; it
reads the budgets on the snapshot and evicts nothing itself. Shuffle takes nothing it keeps; reclaim and
preempt go past it only as a last resort, deleting the pod (docs/tenancy.md#a-tenants-poddisruptionbudget),
its ``explain`` saying which budget. Users: docs/configuration.md#scheduler-config; the rule pod by pod:
docs/design/modules.md#pdb.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.framework.plugin import BasePlugin
from volsched.framework.points import EventHandler, ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.vocabulary import DisruptionBudget, Task, TaskStatus

#: A pod more than one budget selects (never evicted).
_MANY = "*"


def _pods(n: int) -> str:
    return f"{n} pod" if n == 1 else f"{n} pods"


@register_plugin
class DisruptionBudgets(BasePlugin):
    name: ClassVar[str] = "pdb"
    reads_clock: ClassVar[bool] = False
    answers_by_shape: ClassVar[bool] = True

    def on_session_open(self, session: ExtensionPoints) -> None:
        if not session.snapshot.budgets:
            return  # nothing to filter: every victim may go as far as budgets are concerned
        by_namespace: dict[str, list[DisruptionBudget]] = {}
        for b in session.snapshot.budgets:
            by_namespace.setdefault(b.namespace, []).append(b)
        budgets = {b.key: b for b in session.snapshot.budgets}
        #: Per task key, as first seen: its budget's key (_MANY, or None), and whether evicting it may
        #: spend an allowance (Running and healthy then, or unready under IfHealthyBudget: see
        #: unready_free).
        seen: dict[str, tuple[str | None, bool]] = {}
        #: Victims chosen this session that spend an allowance (evicted, not given back): task key -> its
        #: budget; and how many per budget.
        chosen: dict[str, str] = {}
        taken: dict[str, int] = {}
        #: Of those, the ones taken past the budget (reclaim's and preempt's last resort: deleted), by
        #: task key, and how many per budget.
        beyond: set[str] = set()
        past: dict[str, int] = {}

        def budget_of(t: Task) -> str | None:
            held = seen.get(t.key)
            if held is not None:
                return held[0]
            mine = [b.key for b in by_namespace.get(t.namespace, ()) if b.selects(t.namespace, t.labels)]
            found = None if not mine else mine[0] if len(mine) == 1 else _MANY
            spends = (
                found is not None
                and found != _MANY
                and t.status in (TaskStatus.RUNNING, TaskStatus.RELEASING)  # releasing: first seen evicted
                and not (t.runtime.unready and budgets[found].always_allow_unhealthy)
            )
            seen[t.key] = (found, spends)
            return found

        def verdict(t: Task, spent: dict[str, int]) -> bool | None:
            """True: passes spending one of its budget's allowance; False: passes free; None: kept."""
            key = budget_of(t)  # first: what it is when first seen decides whether evicting it spends
            if key is None or t.status is not TaskStatus.RUNNING:
                return False
            if key == _MANY:
                return None
            budget = budgets[key]
            used = taken.get(key, 0) + spent.get(key, 0)
            if unready_free(t, budget, used):
                return False
            return True if budget.disruptions_allowed - used > 0 else None

        def unready_free(t: Task, budget: DisruptionBudget, used: int) -> bool:
            """Whether ``t`` is an unready pod the Eviction API lets go without spending ``budget``'s
            allowance, ``used`` of it spent already."""
            if not t.runtime.unready:
                return False
            if budget.always_allow_unhealthy:
                return True
            return budget.desired_healthy > 0 and budget.current_healthy - used >= budget.desired_healthy

        def victims(candidates: list[Task]) -> list[Task]:
            spent: dict[str, int] = {}
            out = []
            for t in candidates:
                v = verdict(t, spent)
                if v is None:
                    continue
                if v:
                    key = seen[t.key][0]
                    assert key is not None
                    spent[key] = spent.get(key, 0) + 1
                out.append(t)
            return out

        def protections(candidates: list[Task], told: str) -> list[str]:
            """The budgets that keep candidates (each alone), as a pod of namespace ``told`` reads it: a
            budget of another namespace unnamed, those counted in one clause (another tenant's names
            and numbers are not its to read)."""
            kept: dict[str, int] = {}
            for t in candidates:
                if verdict(t, {}) is None:
                    key = budget_of(t)
                    assert key is not None
                    kept[key] = kept.get(key, 0) + 1
            out = []
            others = 0
            for key, n in sorted(kept.items()):
                if key != _MANY and key.partition("/")[0] != told:
                    others += n
                    continue
                if key == _MANY:
                    out.append(
                        f"{_pods(n)} selected by more than one PodDisruptionBudget (the Eviction API refuses them)"
                    )
                    continue
                budget = budgets[key]
                allowed = budget.disruptions_allowed
                word = "disruption" if allowed == 1 else "disruptions"
                more = ""
                if budget.desired_healthy > 0:  # 0: none counted (a controller without a scale)
                    more += f", {budget.current_healthy} healthy of {budget.desired_healthy} desired"
                gone_past = past.get(key, 0)
                spent = taken.get(key, 0) - gone_past
                if spent:
                    more += f", {spent} spent this session"
                if gone_past:
                    more += f", {gone_past} taken past it this session"
                out.append(
                    f"{_pods(n)} protected by PodDisruptionBudget {key} ({allowed} {word} allowed{more})"
                )
            if others:
                out.append(f"{_pods(others)} protected by PodDisruptionBudgets of other namespaces")
            return out

        def evicted(t: Task) -> None:
            if t.status is not TaskStatus.RELEASING or t.key in chosen:
                return
            key = budget_of(t)
            # An unready pod that passed free (its budget's application healthy) spends nothing evicted.
            if (
                key is not None
                and key != _MANY
                and seen[t.key][1]
                and not unready_free(t, budgets[key], taken.get(key, 0))
            ):
                if budgets[key].disruptions_allowed - taken.get(key, 0) <= 0:  # none left: taken past it
                    beyond.add(t.key)
                    past[key] = past.get(key, 0) + 1
                chosen[t.key] = key
                taken[key] = taken.get(key, 0) + 1

        def given_back(t: Task) -> None:
            key = chosen.pop(t.key, None)
            if key is not None:
                taken[key] -= 1
                if t.key in beyond:
                    beyond.discard(t.key)
                    past[key] -= 1

        session.add_victim_filter_fn(self.name, victims, explain=protections)
        session.add_event_handler(EventHandler(allocate=given_back, deallocate=evicted))
