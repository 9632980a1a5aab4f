"""The pdb plugin's victim filter, and PodDisruptionBudgets in the cache: of the candidate victims, a pod
one budget selects is named while that budget's disruptionsAllowed (less the victims this session
already chose against it, less those named before it) stays above zero; a pod two budgets select never;
a pod that is not Running always (the Eviction API asks no budget for it)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pdb, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import EvictionReason
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.errors import InputError

Obj = dict[str, Any]
DB = {"matchLabels": {"app": "db"}}
EVERY = {}  # an empty selector selects every pod of its namespace


def budget(name: str, selector: Obj | None, allowed: int, *, ns: str = "ns", seen: bool = True) -> Obj:
    """A PodDisruptionBudget as the apiserver serves it: the controller's status (``seen``: it has
    observed the latest spec)."""
    obj = pdb(name, selector, ns=ns, maxUnavailable=1)
    obj["metadata"]["generation"] = 2
    obj["status"] = {"disruptionsAllowed": allowed, "observedGeneration": 2 if seen else 1}
    return obj


def session(*budgets: Obj, plugins: str = "{name: pdb}") -> Session:
    """Pods db-0, db-1 (app=db), web-0 (app=web) Running on n1, bound-0 (app=db) bound, not started;
    and a pending preemptor."""
    state = ClusterState()
    objs = [
        node("n1", cpu="8"), queue("q"), podgroup("a", ns="ns", queue="q"), podgroup("b", ns="ns", queue="q"),
        *(pod(f"db-{i}", ns="ns", group="a", node="n1", labels={"app": "db"}) for i in range(2)),
        pod("web-0", ns="ns", group="a", node="n1", labels={"app": "web"}),
        pod("bound-0", ns="ns", group="a", node="n1", phase="Pending", labels={"app": "db"}),
        pod("new", ns="ns", group="b"), *budgets,
    ]  # fmt: skip
    for obj in objs:
        state.apply(obj)
    config = load_config(text=f'actions: "preempt, reclaim"\ntiers:\n- plugins: [{plugins}]\n')
    return open_session(state.snapshot(now=1.0), config)


def named(s: Session, *names: str, point: str = "preemptable") -> list[str]:
    tasks = {t.name: t for job in s.jobs.values() for t in job.tasks.values()}
    ask = s.preemptable if point == "preemptable" else s.reclaimable
    return [t.name for t in ask(tasks["new"], [tasks[n] for n in names])]


ALL = ("db-0", "db-1", "web-0", "bound-0")


@pytest.mark.parametrize(
    ("budgets", "expected"),
    [
        pytest.param([], ["db-0", "db-1", "web-0", "bound-0"], id="no-budget-every-candidate"),
        pytest.param([budget("db", DB, 1)], ["db-0", "web-0", "bound-0"], id="allows-one-the-first-goes"),
        pytest.param([budget("db", DB, 2)], ["db-0", "db-1", "web-0", "bound-0"], id="allows-two"),
        pytest.param([budget("db", DB, 0)], ["web-0", "bound-0"], id="allows-none-unselected-still-go"),
        pytest.param(
            [budget("db", DB, 5, seen=False)], ["web-0", "bound-0"], id="not-yet-observed-allows-none"
        ),
        pytest.param([budget("all", EVERY, 0)], ["bound-0"], id="empty-selector-selects-every-pod"),
        pytest.param([budget("nil", None, 0)], list(ALL), id="no-selector-selects-no-pod"),
        pytest.param([budget("db", DB, 0, ns="other")], list(ALL), id="another-namespaces-budget"),
        pytest.param(
            [budget("db", DB, 5), budget("all", EVERY, 5)], ["web-0", "bound-0"], id="two-budgets-never"
        ),
    ],
)
def test_the_plugin_names_what_the_budgets_allow(budgets: list[Obj], expected: list[str]) -> None:
    s = session(*budgets)
    assert named(s, *ALL) == expected
    assert named(s, *ALL, point="reclaimable") == expected


def test_a_pod_is_named_alone_and_any_subset_of_the_named_is_named_again() -> None:
    s = session(budget("db", DB, 1))
    assert named(s, "db-1") == ["db-1"]
    assert named(s, "db-1", "db-0") == ["db-1"]
    assert named(s, "db-0") == ["db-0"]


def test_victims_already_chosen_this_session_spend_the_budget_until_given_back() -> None:
    s = session(budget("db", DB, 1))
    db0 = next(t for job in s.jobs.values() for t in job.tasks.values() if t.name == "db-0")
    assert named(s, "db-0") == ["db-0"]  # an action evicts what the plugins named
    chosen = Statement(s)
    chosen.evict(db0, reason=EvictionReason(action="preempt"))
    assert named(s, "db-1", "web-0") == ["web-0"]
    chosen.discard()
    assert named(s, "db-1", "web-0") == ["db-1", "web-0"]


def test_a_victim_that_was_not_running_spends_no_budget() -> None:
    s = session(budget("db", DB, 1))
    tasks = {t.name: t for job in s.jobs.values() for t in job.tasks.values()}
    assert named(s, "bound-0") == ["bound-0"]
    Statement(s).evict(tasks["bound-0"], reason=EvictionReason(action="preempt"))
    assert named(s, "db-0", "db-1") == ["db-0"]


def test_the_plugin_narrows_beside_the_others_in_any_tier() -> None:
    s = session(budget("db", DB, 0), plugins="{name: gang}, {name: conformance}, {name: pdb}")
    assert named(s, *ALL) == ["web-0", "bound-0"]


def test_the_cache_holds_budgets_as_they_change_and_forgets_a_deleted_one() -> None:
    state = ClusterState()
    state.apply(budget("db", DB, 1))
    [b] = state.snapshot().budgets
    assert (b.key, b.disruptions_allowed) == ("ns/db", 1)
    changes = state.changes
    state.apply(budget("db", DB, 1))  # the same again: no change
    assert state.changes == changes
    state.apply(budget("db", DB, 0))
    assert [b.disruptions_allowed for b in state.snapshot().budgets] == [0]
    state.delete("PodDisruptionBudget", "ns", "db")
    assert state.snapshot().budgets == ()


def test_a_budget_with_a_bad_selector_is_refused_naming_the_field() -> None:
    bad = budget("db", DB, 1)
    bad["spec"]["selector"] = ["app"]
    with pytest.raises(InputError) as err:
        ClusterState().apply(bad)
    assert "PodDisruptionBudget ns/db: spec.selector: must be a map" in str(err.value)
