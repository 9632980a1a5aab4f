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


def session(*budgets: Obj, plugins: str = "{name: conformance}, {name: pdb}") -> Session:
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


@pytest.mark.parametrize(
    ("switches", "preempt", "reclaim", "shuffle"),
    [
        pytest.param("", ["web-0"], ["web-0"], ["web-0"], id="on-everywhere"),
        pytest.param(
            ", enablePreemptable: false",
            ["db-0", "web-0"],
            ["web-0"],
            ["web-0"],
            id="volcano-preemptable-off",
        ),
        pytest.param(
            ", enableReclaimable: false",
            ["web-0"],
            ["db-0", "web-0"],
            ["web-0"],
            id="volcano-reclaimable-off",
        ),
        pytest.param(
            ", enableVictim: false", ["web-0"], ["web-0"], ["db-0", "web-0"], id="volcano-victim-off"
        ),
        pytest.param(
            ", enableVictimFilter: false",
            ["db-0", "web-0"],
            ["db-0", "web-0"],
            ["db-0", "web-0"],
            id="filter-off",
        ),
    ],
)
def test_a_volcano_switch_keeps_the_budgets_out_of_that_actions_victims_only(
    switches: str, preempt: list[str], reclaim: list[str], shuffle: list[str]
) -> None:
    # Volcano's pdb answers as preemptable, reclaimable and victim-tasks plugin: a config written for
    # it that switches one of those off lets that action's victims go whatever budgets say.
    s = session(budget("db", DB, 0), plugins=f"{{name: conformance}}, {{name: pdb{switches}}}")
    tasks = {t.name: t for job in s.jobs.values() for t in job.tasks.values()}
    assert named(s, "db-0", "web-0") == preempt
    assert named(s, "db-0", "web-0", point="reclaimable") == reclaim
    assert [t.name for t in s.filter_victims([tasks["db-0"], tasks["web-0"]], point="victim")] == shuffle
    kept = s.victim_protections([tasks["db-0"]], point="preemptable", told="ns")
    assert (kept is None) is (preempt == ["db-0", "web-0"])


@pytest.mark.parametrize(
    ("plugins", "preempt", "reclaim"),
    [
        pytest.param("{name: pdb}", ["web-0", "bound-0"], ["web-0", "bound-0"], id="pdb-alone-answers"),
        pytest.param(
            "{name: pdb, enablePreemptable: false}",
            [],
            ["web-0", "bound-0"],
            id="switched-off-nothing-answers",
        ),
    ],
)
def test_where_pdb_is_the_only_victim_plugin_it_names_what_budgets_allow_as_in_volcano(
    plugins: str, preempt: list[str], reclaim: list[str]
) -> None:
    s = session(budget("db", DB, 0), plugins=plugins)
    assert named(s, *ALL) == preempt
    assert named(s, *ALL, point="reclaimable") == reclaim


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


def narrowing(*budgets: Obj, tiers: str) -> Session:
    """Job a: a-0, a-1, a-2 Running, minMember 2 (gang names one of them); job c: c-0, c-1 Running,
    minMember 1 (gang names one). a-1 and c-0 are app=db; and a pending preemptor."""
    state = ClusterState()
    objs = [
        node("n1", cpu="8"), queue("q"), podgroup("a", ns="ns", queue="q", min_member=2),
        podgroup("c", ns="ns", queue="q", min_member=1), podgroup("b", ns="ns", queue="q"),
        *(pod(f"a-{i}", ns="ns", group="a", node="n1", labels={"app": "db" if i == 1 else "x"}) for i in range(3)),
        *(pod(f"c-{i}", ns="ns", group="c", node="n1", labels={"app": "db" if i == 0 else "x"}) for i in range(2)),
        pod("new", ns="ns", group="b"), *budgets,
    ]  # fmt: skip
    for obj in objs:
        state.apply(obj)
    config = load_config(text=f'actions: "preempt, reclaim, shuffle"\ntiers:\n{tiers}')
    return open_session(state.snapshot(now=1.0), config)


@pytest.mark.parametrize(
    "tiers",
    [
        pytest.param("- plugins: [{name: pdb}]\n- plugins: [{name: gang}]\n", id="pdb-in-the-tier-before"),
        pytest.param("- plugins: [{name: pdb}, {name: gang}]\n", id="pdb-before-in-one-tier"),
        pytest.param("- plugins: [{name: gang}, {name: pdb}]\n", id="pdb-after-in-one-tier"),
        pytest.param("- plugins: [{name: gang}]\n- plugins: [{name: pdb}]\n", id="pdb-in-the-tier-after"),
    ],
)
def test_a_budgets_allowance_goes_only_to_victims_the_other_plugins_keep_wherever_pdb_sits(
    tiers: str,
) -> None:
    # The budget allows one of a-1, c-0. Gang lets one of a's pods go (a-0, the first) and one of c's
    # (c-0): a-1 is dropped by gang, so the allowance is c-0's. Before, pdb in an earlier place spent it
    # on a-1 and dropped c-0, and gang then dropped a-1: c-0 was never offered.
    s = narrowing(budget("db", DB, 1), tiers=tiers)
    assert named(s, "a-0", "a-1", "c-0") == ["a-0", "c-0"]
    assert named(s, "a-0", "a-1", "c-0", point="reclaimable") == ["a-0", "c-0"]


@pytest.mark.parametrize(
    ("budgets", "said"),
    [
        pytest.param(
            [budget("db", DB, 0)],
            ["2 pods protected by PodDisruptionBudget ns/db (0 disruptions allowed)"],
            id="allows-none",
        ),
        pytest.param(
            [budget("db", DB, 5, seen=False)],
            ["2 pods protected by PodDisruptionBudget ns/db (0 disruptions allowed)"],
            id="not-yet-observed",
        ),
        pytest.param(
            [budget("db", DB, 5), budget("all", EVERY, 5)],
            ["2 pods selected by more than one PodDisruptionBudget (the Eviction API refuses them)"],
            id="two-budgets",
        ),
        pytest.param([budget("db", DB, 1)], [], id="allows-one-keeps-none-alone"),
    ],
)
def test_the_plugin_says_which_budget_keeps_which_pods(budgets: list[Obj], said: list[str]) -> None:
    s = session(*budgets)
    tasks = {t.name: t for job in s.jobs.values() for t in job.tasks.values()}
    kept = s.victim_protections(
        [tasks[n] for n in ("db-0", "db-1", "web-0", "bound-0")], point="preemptable", told="ns"
    )
    assert (kept.plugin, list(kept.reasons)) == ("pdb", said) if said else kept is None


@pytest.mark.parametrize(
    "budgets",
    [[budget("db", DB, 0)], [budget("db", DB, 0), budget("web", {"matchLabels": {"app": "web"}}, 0)]],
    ids=["one budget", "two budgets"],
)
def test_a_pod_of_another_namespace_is_not_told_the_budgets_name(budgets: list[Obj]) -> None:
    """The pod a budget keeps victims from, of another namespace (a preemptor, a reclaimer), read
    "PodDisruptionBudget ns/db (0 disruptions allowed, 3 healthy of 3 desired)": another tenant's names
    and numbers, in its condition and FailedScheduling event. Said now: how many pods budgets of other
    namespaces protect, in one clause; to a pod of the budget's namespace, as before."""
    s = session(*budgets)
    tasks = {t.name: t for job in s.jobs.values() for t in job.tasks.values()}
    pods = [tasks[n] for n in ("db-0", "db-1", "web-0")]
    kept = s.victim_protections(pods, point="preemptable", told="team-b")
    assert kept is not None and kept.plugin == "pdb"
    n = 3 if len(budgets) == 2 else 2
    assert list(kept.reasons) == [f"{n} pods protected by PodDisruptionBudgets of other namespaces"]
    mine = s.victim_protections(pods, point="preemptable", told="ns")
    assert mine is not None and all("PodDisruptionBudget ns/" in r for r in mine.reasons)


def unready_session(obj: Obj, ready: tuple[str | None, ...] = ("False", "True")) -> Session:
    """db-0 Running but not ready (Ready False), db-1 Running and ready (Ready True); all app=db (db-i's
    Ready condition is ``ready[i]``; None: it has none, only another condition)."""
    state = ClusterState()
    pods = [pod(f"db-{i}", ns="ns", group="a", node="n1", labels={"app": "db"}) for i in range(len(ready))]
    for p, condition in zip(pods, ready, strict=True):
        p["status"]["conditions"] = (
            [{"type": "Ready", "status": condition}]
            if condition is not None
            else [{"type": "PodScheduled", "status": "True"}]
        )
    objs = [node("n1", cpu="8"), queue("q"), podgroup("a", ns="ns", queue="q"), podgroup("b", ns="ns", queue="q"),
            *pods, pod("new", ns="ns", group="b"), obj]  # fmt: skip
    for o in objs:
        state.apply(o)
    config = load_config(text='actions: "preempt"\ntiers:\n- plugins: [{name: conformance}, {name: pdb}]\n')
    return open_session(state.snapshot(now=1.0), config)


@pytest.mark.parametrize(
    ("policy", "status", "expected"),
    [
        pytest.param("AlwaysAllow", {}, ["db-0"], id="always-allow-the-unready-pod-goes"),
        pytest.param(
            "AlwaysAllow", {"disruptionsAllowed": 1}, ["db-0", "db-1"], id="always-allow-spends-nothing"
        ),
        pytest.param(None, {}, [], id="if-healthy-budget-by-default-unhealthy-app-keeps-it"),
        pytest.param(
            "IfHealthyBudget",
            {"currentHealthy": 1, "desiredHealthy": 1},
            ["db-0"],
            id="healthy-app-lets-it-go",
        ),
        pytest.param(
            "IfHealthyBudget", {"currentHealthy": 1, "desiredHealthy": 2}, [], id="app-below-desired-keeps-it"
        ),
        pytest.param(
            "IfHealthyBudget",
            {"currentHealthy": 1, "desiredHealthy": 0},
            [],
            id="nothing-desired-asks-the-allowance",
        ),
        pytest.param(
            "IfHealthyBudget", {"disruptionsAllowed": 1}, ["db-0"], id="app-unhealthy-spends-the-allowance"
        ),
    ],
)
def test_an_unready_pod_goes_as_the_budgets_unhealthy_pod_eviction_policy_says(
    policy: str | None, status: Obj, expected: list[str]
) -> None:
    obj = budget("db", DB, status.get("disruptionsAllowed", 0))
    obj["status"].update(status)
    if policy:
        obj["spec"]["unhealthyPodEvictionPolicy"] = policy
    assert named(unready_session(obj), "db-0", "db-1") == expected


@pytest.mark.parametrize(
    ("condition", "healthy"),
    [
        pytest.param("True", True, id="ready"),
        pytest.param("False", False, id="not-ready"),
        pytest.param("Unknown", False, id="ready-unknown"),
        pytest.param(None, False, id="no-ready-condition"),
    ],
)
def test_only_a_pod_whose_ready_condition_is_true_is_healthy(condition: str | None, healthy: bool) -> None:
    """As the disruption controller counts currentHealthy and the Eviction API judges a pod (IsPodReady):
    healthy only with Ready=True. Under AlwaysAllow with no disruption allowed, only an unhealthy pod goes."""
    obj = budget("db", DB, 0)
    obj["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    assert named(unready_session(obj, ready=(condition, "True")), "db-0") == ([] if healthy else ["db-0"])


@pytest.mark.parametrize(
    ("status", "together", "after_one"),
    [
        pytest.param(
            {"currentHealthy": 1, "desiredHealthy": 1}, ["db-0", "db-1"], ["db-1"], id="healthy-app-both-free"
        ),
        pytest.param(
            {"currentHealthy": 1, "desiredHealthy": 2, "disruptionsAllowed": 1},
            ["db-0"],
            [],
            id="unhealthy-app-the-allowance-is-spent",
        ),
    ],
)
def test_an_unready_pod_evicted_spends_what_it_spent_when_named(
    status: Obj, together: list[str], after_one: list[str]
) -> None:
    # db-0 and db-1 unready, db-2 ready. Named together or one after the other's eviction (as shuffle
    # asks before each eviction), the same pods go: one that passed free spends nothing once evicted.
    obj = budget("db", DB, status.get("disruptionsAllowed", 0))
    obj["status"].update(status)
    s = unready_session(obj, ready=("False", "False", "True"))
    assert named(s, "db-0", "db-1") == together
    db0 = next(t for job in s.jobs.values() for t in job.tasks.values() if t.name == "db-0")
    Statement(s).evict(db0, reason=EvictionReason(action="preempt"))
    assert named(s, "db-1") == after_one


def past(s: Session, *names: str, point: str = "preemptable") -> list[str]:
    tasks = {t.name: t for job in s.jobs.values() for t in job.tasks.values()}
    ask = s.preemptable if point == "preemptable" else s.reclaimable
    return [t.name for t in ask(tasks["new"], [tasks[n] for n in names], past_budgets=True)]


@pytest.mark.parametrize("point", ["preemptable", "reclaimable"])
@pytest.mark.parametrize(
    ("budgets", "expected"),
    [
        pytest.param([], list(ALL), id="no-budget-as-before"),
        pytest.param([budget("db", DB, 0)], ["web-0", "bound-0", "db-0", "db-1"], id="protected-last"),
        pytest.param([budget("db", DB, 1)], ["db-0", "web-0", "bound-0", "db-1"], id="the-allowance-first"),
        pytest.param(
            [budget("db", DB, 5), budget("all", EVERY, 5)],
            ["web-0", "bound-0", "db-0", "db-1"],
            id="two-budgets-last",
        ),
    ],
)
def test_past_budgets_the_filter_keeps_nobody_and_what_it_passes_comes_first(
    budgets: list[Obj], expected: list[str], point: str
) -> None:
    """Reclaim's and preempt's last resort: every candidate the other plugins name, those within every
    budget first, each part in the candidates' order."""
    s = session(*budgets)
    assert past(s, *ALL, point=point) == expected
    assert named(s, *ALL, point=point) == [n for n in expected if n in named(s, *ALL, point=point)]


def test_what_a_victim_goes_past_is_the_filters_words_counted_with_this_sessions_victims() -> None:
    s = session(budget("db", DB, 1))
    tasks = {t.name: t for job in s.jobs.values() for t in job.tasks.values()}
    assert s.past_budget(tasks["db-0"], point="preemptable") == ()
    assert s.past_budget(tasks["web-0"], point="preemptable") == ()
    Statement(s).evict(tasks["db-0"], reason=EvictionReason(action="preempt"))
    assert s.past_budget(tasks["db-1"], point="preemptable") == (
        "1 pod protected by PodDisruptionBudget ns/db (1 disruption allowed, 1 spent this session)",
    )
    assert s.past_budget(tasks["db-1"], point="victim") == s.past_budget(tasks["db-1"], point="preemptable")


def test_the_session_counts_when_a_filter_keeps_a_pod_the_plugins_named() -> None:
    """What tells reclaim and preempt that going past the budgets could change anything."""
    s = session(budget("db", DB, 0))
    before = s.victim_filters_kept
    named(s, "web-0", "bound-0")
    assert s.victim_filters_kept == before  # nothing protected among them
    named(s, "db-0", "web-0")
    assert s.victim_filters_kept > before
