"""PodDisruptionBudgets in the simulator. With the ``pdb`` plugin (the default and the example configs)
the engine evicts what a budget allows first, so nothing is refused and a preemptor takes an allowed
victim instead; where only pods a budget protects could make room, preempt and reclaim take them past
it, deleted (tests/sim/test_pdb_past_budget.py), while shuffle never does. Without it (a config that
leaves it out) the engine chooses its victims without them, and the Eviction API the simulator plays
refuses what a budget does not allow, with the apiserver's rule and words; the refused evictions are
reported, the pods stay."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.builders import node, pdb, pod, podgroup, priority_class, queue, resched_config, simulate_objects
from tests.sim._eviction_helpers import EXAMPLES, Staged, eviction_config, job
from volsched.cli import main
from volsched.framework.config import SchedulerConfig
from volsched.framework.messages import DELETED
from volsched.framework.registry import load_config
from volsched.model.errors import InputError
from volsched.simulate import Document, Simulator, to_json

Obj = dict[str, Any]


A_PODS = {"matchLabels": {"job-name": "a"}}


def without_pdb() -> SchedulerConfig:
    """The example config with the pdb plugin left out: victims are chosen without budgets."""
    text = (EXAMPLES / "reclaim-preempt-scheduler.yaml").read_text()
    assert "  - name: pdb\n" in text
    return load_config(text=text.replace("  - name: pdb\n", ""))


def preempting(*budgets: Obj, config: SchedulerConfig | None = None) -> Staged:
    """Job a (8 pods of 1 cpu, low priority) fills n1's 8 cpu; then job b (4 pods, high) preempts."""
    before = [
        node("n1", cpu="8"), queue("q"), priority_class("high", 1000), priority_class("low", 10),
        *job("a", ns="ns", queue="q", size=8, priority_class="low"), *budgets,
    ]  # fmt: skip
    return Staged(
        before, job("b", ns="ns", queue="q", size=4, priority_class="high"), config or without_pdb()
    )


BUDGET_CASES = [
    pytest.param([], 4, 4, id="no-budget"),
    pytest.param([pdb("keep-6", A_PODS, minAvailable=6, ns="ns")], 2, 2, id="min-available-6-of-8"),
    # A batch Job has no scale subresource: the disruption controller cannot count the expected pods
    # for a percentage or maxUnavailable, and fails safe (nothing allowed).
    pytest.param(
        [pdb("keep-half", A_PODS, minAvailable="50%", ns="ns")], 0, 0, id="min-available-50-percent-of-a-job"
    ),
    pytest.param(
        [pdb("two-down", A_PODS, maxUnavailable="25%", ns="ns")],
        0,
        0,
        id="max-unavailable-25-percent-of-a-job",
    ),
    pytest.param([pdb("one-down", A_PODS, maxUnavailable=1, ns="ns")], 0, 0, id="max-unavailable-1-of-a-job"),
    pytest.param([pdb("none-down", A_PODS, maxUnavailable=0, ns="ns")], 0, 0, id="max-unavailable-0"),
    pytest.param([pdb("all", {}, minAvailable=8, ns="ns")], 0, 0, id="an-empty-selector-selects-every-pod"),
    pytest.param([pdb("nil", None, minAvailable=8, ns="ns")], 4, 4, id="no-selector-selects-no-pod"),
    pytest.param(
        [pdb("others", {"matchLabels": {"job-name": "z"}}, maxUnavailable=0, ns="ns")],
        4,
        4,
        id="another-jobs",
    ),
    pytest.param([pdb("keep-7", A_PODS, minAvailable=7, ns="elsewhere")], 4, 4, id="another-namespaces"),
    pytest.param(
        [pdb("one", A_PODS, minAvailable=1, ns="ns"), pdb("two", A_PODS, minAvailable=1, ns="ns")],
        0,
        0,
        id="two-budgets-on-one-pod-refuse-it",
    ),
]


@pytest.mark.parametrize(("budgets", "evicted", "b_running"), BUDGET_CASES)
def test_the_pdb_plugin_evicts_what_a_budget_allows_and_deletes_the_rest_past_it(
    budgets: list[Obj], evicted: int, b_running: int
) -> None:
    """The preemptor's four pods all run: as many victims as the budget allows are evicted, the rest
    deleted past it, and nothing is refused."""
    s = preempting(*budgets, config=eviction_config())
    assert (len(s.evicted("ns/a-")), len(s.deleted("ns/a-"))) == (evicted, 4 - evicted)
    assert (s.running("ns/a-"), s.running("ns/b-")) == (4, 4)
    assert s.refused() == []
    assert s.settled()


@pytest.mark.parametrize(("budgets", "evicted", "b_running"), BUDGET_CASES)
def test_the_eviction_api_refuses_what_a_budget_does_not_allow(
    budgets: list[Obj], evicted: int, b_running: int
) -> None:
    s = preempting(*budgets)
    assert len(s.evicted("ns/a-")) == evicted
    assert (s.running("ns/a-"), s.running("ns/b-")) == (8 - evicted, b_running)
    refused = s.refused()
    assert bool(refused) == (evicted < 4)
    assert all(r["pod"].startswith("ns/a-") and r["action"] == "preempt" for r in refused)
    assert {r["result"] for r in refused} <= {"failed" if len(budgets) > 1 else "blocked"}
    assert s.second.sessions < 60  # it stopped because a cycle changed nothing: a refusal changes nothing


def two_nodes(config: SchedulerConfig) -> Staged:
    """n1 and n2 (2 cpu each) run one low-priority 2-cpu pod each; a budget keeps the one on n1 (db).
    Then a high-priority 2-cpu pod comes: n1 comes first (equal in every other respect)."""
    before = [
        node("n1", cpu="2"), node("n2", cpu="2"), queue("q"), priority_class("high", 1000),
        priority_class("low", 10), podgroup("a", ns="ns", queue="q", priority_class="low"),
        pod("db", ns="ns", cpu="2", group="a", node="n1", labels={"app": "db"}),
        pod("web", ns="ns", cpu="2", group="a", node="n2", labels={"app": "web"}),
        pdb("keep-db", {"matchLabels": {"app": "db"}}, maxUnavailable=0, ns="ns"),
    ]  # fmt: skip
    after = [
        podgroup("b", ns="ns", queue="q", priority_class="high"),
        pod("new", ns="ns", cpu="2", group="b"),
    ]
    return Staged(before, after, config)


def test_a_preemptor_takes_an_allowed_victim_on_another_node_instead_of_the_protected_one() -> None:
    s = two_nodes(eviction_config())
    assert s.evicted() == ["ns/web"]
    assert s.refused() == []
    assert s.data["pods"]["ns/new"]["node"] == "n2"
    assert s.data["pods"]["ns/db"]["node"] == "n1"
    assert s.settled()


def test_without_the_plugin_the_protected_pod_is_chosen_again_and_again_and_refused() -> None:
    s = two_nodes(without_pdb())
    assert s.evicted() == []
    assert {r["pod"] for r in s.refused()} == {"ns/db"} and len(s.refused()) > 1
    assert not s.data["pods"]["ns/new"]["node"]


def test_a_refusal_says_what_the_budget_needs_in_the_apiservers_words() -> None:
    s = preempting(pdb("keep-6", A_PODS, minAvailable=6, ns="ns"))
    reasons = {r["detail"] for r in s.refused()}
    assert reasons == {
        "Cannot evict pod as it would violate the pod's disruption budget. "
        "The disruption budget keep-6 needs 6 healthy pods and has 6 currently"
    }
    two = preempting(pdb("one", A_PODS, minAvailable=1, ns="ns"), pdb("two", A_PODS, minAvailable=1, ns="ns"))
    assert {r["detail"] for r in two.refused()} == {
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support. "
        "(one, two)"
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"selector": {}}, "spec needs exactly one of minAvailable and maxUnavailable", id="neither"
        ),
        pytest.param(
            {"selector": {}, "minAvailable": 1, "maxUnavailable": 1},
            "spec needs exactly one of minAvailable and maxUnavailable",
            id="both",
        ),
        pytest.param({"minAvailable": -1}, "spec.minAvailable: must be a whole number >= 0", id="negative"),
        pytest.param(
            {"maxUnavailable": "150%"}, "spec.maxUnavailable: must be a whole number", id="over-100"
        ),
        pytest.param({"minAvailable": 1, "selector": []}, "spec.selector: must be a map", id="bad-selector"),
        pytest.param(
            {"minAvailable": "6"},
            "spec.minAvailable: a string must be a percentage such as 50% (the apiserver refuses '6'); for a"
            " count, write the number without quotes: 6",
            id="digits-in-a-string",
        ),
        pytest.param(
            {"maxUnavailable": 1, "unhealthyPodEvictionPolicy": "Sometimes"},
            "spec.unhealthyPodEvictionPolicy: must be IfHealthyBudget or AlwaysAllow, got 'Sometimes'",
            id="unknown-unhealthy-policy",
        ),
    ],
)
def test_a_bad_budget_is_refused_naming_its_field(spec: Obj, message: str) -> None:
    obj = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"}, "spec": spec}
    with pytest.raises(InputError) as err:
        Simulator([Document("in.yaml: document 1", obj)])
    assert f"PodDisruptionBudget default/b: {message}" in str(err.value)


def test_the_table_lists_the_refused_evictions_and_json_as_blocked(tmp_path: Any, capsys: Any) -> None:
    before = [
        node("n1", cpu="8"), queue("q"), priority_class("high", 1000), priority_class("low", 10),
        *job("a", ns="ns", queue="q", size=8, priority_class="low"), pdb("keep-all", A_PODS, maxUnavailable=0, ns="ns"),
    ]  # fmt: skip
    files = []
    for name, objs in (
        ("before.yaml", before),
        ("after.yaml", job("b", ns="ns", queue="q", size=4, priority_class="high")),
    ):
        path = tmp_path / name
        path.write_text(yaml.safe_dump_all(objs))
        files.append(str(path))
    config = tmp_path / "sched.yaml"
    config.write_text(
        (EXAMPLES / "reclaim-preempt-scheduler.yaml").read_text().replace("  - name: pdb\n", "")
    )
    args = ["simulate", "-f", files[0], "--then", files[1], "--config", str(config)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Evictions refused (PodDisruptionBudget)" in out and "keep-all" in out
    assert main([*args, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    refused = data["evictions"]
    assert refused and {(e["result"], e["pod"] in {f"ns/a-{i}" for i in range(8)}) for e in refused} == {
        ("blocked", True)
    }
    assert all(e["detail"].startswith("Cannot evict pod") for e in refused)


def hot_node(*budgets: Obj) -> list[Obj]:
    """hot runs at 90% of 10 cpu, four 2-cpu pods (app=w, each its own ReplicaSet's); cold is idle:
    lowNodeUtilization moves two of them (90 -> 70 -> 50)."""
    load = {"volsched.io/usage": json.dumps({"cpu": 90, "memory": 10})}
    idle = {"volsched.io/usage": json.dumps({"cpu": 5, "memory": 10})}
    return [
        node("hot", cpu="10", annotations=load), node("cold", cpu="10", annotations=idle),
        *(pod(f"w{i}", cpu="2", node="hot", owner=f"ReplicaSet/w{i}", labels={"app": "w"}) for i in range(4)),
        *budgets,
    ]  # fmt: skip


W_PODS = {"matchLabels": {"app": "w"}}


@pytest.mark.parametrize(
    ("budgets", "moved"),
    [
        pytest.param([], 2, id="no-budget-two-move"),
        pytest.param([pdb("keep-3", W_PODS, minAvailable=3)], 1, id="allows-one-one-moves"),
        pytest.param([pdb("keep-4", W_PODS, minAvailable=4)], 0, id="allows-none-none-moves"),
        pytest.param([pdb("one-down", W_PODS, maxUnavailable=1)], 1, id="max-unavailable-1-of-replicasets"),
    ],
)
def test_a_budget_protects_against_shuffles_evictions_too(budgets: list[Obj], moved: int) -> None:
    conf = resched_config(interval="0s", plugins=("pdb",))
    result = simulate_objects(hot_node(*budgets), conf=conf, sessions=1)
    first = result.history[0].evictions
    assert len(first) == moved
    data = to_json(result)
    assert [e for e in data["evictions"] if e["result"] != "evicted"] == []


def one_node_kept(*budgets: Obj) -> Staged:
    """n1 (2 cpu) runs db-0 and db-1 (low priority, 1 cpu each), a gang of minMember 2; then a
    high-priority 2-cpu pod comes."""
    before = [
        node("n1", cpu="2"), queue("q"), priority_class("high", 1000), priority_class("low", 10),
        podgroup("a", ns="ns", queue="q", priority_class="low", min_member=2),
        *(pod(f"db-{i}", ns="ns", cpu="1", group="a", node="n1", labels={"app": "db"}) for i in range(2)),
        *budgets,
    ]  # fmt: skip
    after = [
        podgroup("b", ns="ns", queue="q", priority_class="high"),
        pod("new", ns="ns", cpu="2", group="b"),
    ]
    return Staged(before, after, eviction_config())


def pods_in_the_way(*budgets: Obj) -> Staged:
    """web-1 on n1 and web-2 on n2 (app=web, low priority, bare pods); then a high-priority pod whose
    required anti-affinity to app=web keeps it off both nodes."""
    web = {"app": "web"}
    before = [
        node("n1", cpu="4"), node("n2", cpu="4"), queue("q"), priority_class("high", 1000),
        priority_class("low", 10), podgroup("a", ns="ns", queue="q", priority_class="low"),
        pod("web-1", ns="ns", group="a", node="n1", labels={**web, "pdb": "n1"}),
        pod("web-2", ns="ns", group="a", node="n2", labels={**web, "pdb": "n2"}), *budgets,
    ]  # fmt: skip
    new = pod("new", ns="ns", group="b")
    term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": web}}
    new["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return Staged(before, [podgroup("b", ns="ns", queue="q", priority_class="high"), new], eviction_config())


@pytest.mark.parametrize(
    ("staged", "group", "said"),
    [
        pytest.param(
            lambda: pods_in_the_way(
                pdb("keep-web-1", {"matchLabels": {"pdb": "n1"}}, minAvailable=1, ns="ns"),
                pdb("keep-web-2", {"matchLabels": {"pdb": "n2"}}, minAvailable=1, ns="ns"),
            ),
            "ns/b",
            "1 pod protected by PodDisruptionBudget ns/keep-web-",
            id="the-pods-in-the-way",
        ),
        pytest.param(
            lambda: preempting(pdb("all", A_PODS, minAvailable=8, ns="ns"), config=eviction_config()),
            "ns/b",
            "1 pod protected by PodDisruptionBudget ns/all (0 disruptions allowed",
            id="every-pod-of-a-job",
        ),
        pytest.param(
            lambda: preempting(
                pdb("one", A_PODS, minAvailable=1, ns="ns"),
                pdb("two", A_PODS, minAvailable=1, ns="ns"),
                config=eviction_config(),
            ),
            "ns/b",
            "1 pod selected by more than one PodDisruptionBudget (the Eviction API refuses them)",
            id="two-budgets",
        ),
    ],
)
def test_where_budgets_keep_every_candidate_the_preemptor_takes_them_past_saying_which(
    staged: Any, group: str, said: str
) -> None:
    s = staged()
    assert s.evicted() == [] and s.refused() == []
    deleted = [e for e in s.data["evictions"] if e["detail"] == DELETED]
    assert deleted and not s.data["podgroups"][group]["reason"]
    for e in deleted:
        assert f"; past {said}" in e["reason"], e["reason"]


def test_a_pod_its_gang_keeps_is_not_blamed_on_its_budget() -> None:
    """db-0 and db-1 are their gang's minMember: gang keeps them, and the preemptor is not told a budget
    keeps them (before, the budget was named). (A job of minMember 1 is no gang: gang keeps none of it,
    tests/sim/test_lone_victims.py.)"""
    s = one_node_kept(pdb("keep-db", {"matchLabels": {"app": "db"}}, maxUnavailable=0, ns="ns"))
    assert s.evicted() == s.deleted() == s.refused() == []
    said = s.data["podgroups"]["ns/b"]["reason"]
    assert "no pod may be evicted for it" in said and "PodDisruptionBudget" not in said


def replica_pods(
    owner: str | None, *extra: Obj, config: SchedulerConfig | None = None, cpu: str = "8"
) -> Staged:
    """Eight low-priority 1-cpu pods (app=r, controller ``owner``: "ReplicaSet/r", or none) fill n1
    (``cpu``); then job b (4 pods, high) preempts."""
    before = [
        node("n1", cpu=cpu), queue("q"), priority_class("high", 1000), priority_class("low", 10),
        podgroup("r", ns="ns", queue="q", priority_class="low"),
        *(pod(f"r-{i}", ns="ns", group="r", node="n1", owner=owner, labels={"app": "r"}) for i in range(8)),
        *extra,
    ]  # fmt: skip
    after = job("b", ns="ns", queue="q", size=4, priority_class="high")
    return Staged(before, after, config or eviction_config())


R_PODS = {"matchLabels": {"app": "r"}}


@pytest.mark.parametrize(
    ("owner", "spec", "evicted"),
    [
        pytest.param("ReplicaSet/r", {"minAvailable": "50%"}, 4, id="min-available-50-percent-of-8-replicas"),
        pytest.param(
            "ReplicaSet/r", {"maxUnavailable": "25%"}, 2, id="max-unavailable-25-percent-of-8-replicas"
        ),
        pytest.param("StatefulSet/r", {"maxUnavailable": 3}, 3, id="max-unavailable-3-of-a-statefulset"),
        pytest.param("ReplicaSet/r", {"minAvailable": 7}, 1, id="min-available-count"),
        # Pods without a controller are left out of the expected pods (the controller warns
        # UnmanagedPods): none expected, nothing allowed; a count still counts them.
        pytest.param(None, {"maxUnavailable": 1}, 0, id="bare-pods-expect-none-so-allow-none"),
        pytest.param(None, {"minAvailable": "10%"}, 0, id="bare-pods-and-a-percentage"),
        pytest.param(None, {"minAvailable": 6}, 2, id="bare-pods-with-a-count"),
    ],
)
def test_the_expected_pods_are_the_controllers_scale(owner: str | None, spec: Obj, evicted: int) -> None:
    s = replica_pods(owner, pdb("r", R_PODS, ns="ns", **spec))
    assert len(s.evicted("ns/r-")) == evicted
    assert s.refused() == []


def test_a_pod_whose_controller_has_no_scale_makes_the_budget_allow_nothing() -> None:
    # r-0..r-7 are a ReplicaSet's, and one more app=r pod is a batch Job's: the controller fails safe.
    extra = (
        pod("r-job", ns="ns", cpu="0", group="r", node="n1", owner="Job/x", labels={"app": "r"}),
        pdb("r", R_PODS, ns="ns", maxUnavailable=2),
    )
    s = replica_pods("ReplicaSet/r", *extra)
    assert s.evicted() == [] and s.refused() == []
    refused = replica_pods("ReplicaSet/r", *extra, config=without_pdb()).refused()
    assert refused and {r["detail"] for r in refused} == {
        "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget r allows no"
        " disruption: its pods' controller Job ns/x has no scale subresource, so the disruption controller"
        " cannot count the expected pods (use an integer minAvailable)"
    }


def gone_and_going() -> list[Obj]:
    """Beside r-0..r-7: two finished pods of the ReplicaSet and one it is deleting (no cpu)."""
    done = [pod(f"r-{p.lower()}", ns="ns", cpu="0", group="r", node="n1", phase=p, owner="ReplicaSet/r",
                labels={"app": "r"}) for p in ("Succeeded", "Failed")]  # fmt: skip
    going = pod("r-going", ns="ns", cpu="0", group="r", node="n1", owner="ReplicaSet/r", labels={"app": "r"})
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return [*done, going]


@pytest.mark.parametrize(
    ("spec", "evicted"),
    [
        # Healthy: the 8 Running, not the finished nor the one being deleted (else 11 - 6 = 5 > 4).
        pytest.param({"minAvailable": 6}, 2, id="a-count-counts-only-the-running"),
        # Expected: the 8 replicas (else 10 or 11 expected, 8 or 9 desired: nothing allowed).
        pytest.param({"maxUnavailable": 2}, 2, id="max-unavailable-expects-the-replicas"),
        pytest.param({"minAvailable": "75%"}, 2, id="a-percentage-of-the-replicas"),
    ],
)
@pytest.mark.parametrize("plugin", [True, False], ids=["pdb-plugin", "eviction-api"])
def test_finished_pods_and_pods_being_deleted_are_not_healthy_nor_expected(
    spec: Obj, evicted: int, plugin: bool
) -> None:
    s = replica_pods(
        "ReplicaSet/r",
        *gone_and_going(),
        pdb("r", R_PODS, ns="ns", **spec),
        config=None if plugin else without_pdb(),
    )
    assert len(s.evicted("ns/r-")) == evicted
    assert bool(s.refused()) == (not plugin)


@pytest.mark.parametrize(
    ("spec", "evicted"),
    [
        # Beside the 8 healthy pods, r-x runs but is not ready.
        pytest.param({"minAvailable": 8, "unhealthyPodEvictionPolicy": "AlwaysAllow"}, 1, id="always-allow"),
        pytest.param(
            {"minAvailable": 9, "unhealthyPodEvictionPolicy": "AlwaysAllow"}, 1, id="always-allow-below"
        ),
        pytest.param({"minAvailable": 9}, 0, id="if-healthy-budget-app-below-desired-keeps-it"),
        pytest.param(
            {"minAvailable": 8, "unhealthyPodEvictionPolicy": "IfHealthyBudget"}, 1, id="app-at-desired"
        ),
        pytest.param({"minAvailable": 6}, 3, id="free-and-two-healthy-ones-allowed"),
    ],
)
@pytest.mark.parametrize("plugin", [True, False], ids=["pdb-plugin", "eviction-api"])
def test_an_unready_pod_goes_as_the_unhealthy_pod_eviction_policy_says(
    spec: Obj, evicted: int, plugin: bool
) -> None:
    unready = pod("r-x", ns="ns", group="r", node="n1", owner="ReplicaSet/r", labels={"app": "r"})
    unready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    budget = pdb("r", R_PODS, ns="ns", **spec)
    s = replica_pods("ReplicaSet/r", unready, budget, config=None if plugin else without_pdb(), cpu="9")
    assert len(s.evicted("ns/r-")) == evicted
    assert ("ns/r-x" in s.evicted()) == (evicted > 0)
    if plugin:
        assert s.refused() == []


@pytest.mark.parametrize(
    ("conditions", "healthy"),
    [
        pytest.param([{"type": "Ready", "status": "True"}], 1, id="ready"),
        pytest.param([{"type": "Ready", "status": "False"}], 0, id="not-ready"),
        pytest.param([{"type": "PodScheduled", "status": "True"}], 0, id="no-ready-condition"),
    ],
)
def test_the_simulated_disruption_controller_counts_only_ready_true_as_healthy(
    conditions: list[Obj], healthy: int
) -> None:
    """The disruption controller's currentHealthy counts IsPodReady pods: a Running pod without a Ready
    condition is not healthy (the simulator's own Running pods are reported Ready, see its port)."""
    from volsched.simulate.budgets import health, parse_budget

    p = pod("w-0", node="n1", labels={"app": "w"})
    p["status"] = {"phase": "Running", "conditions": conditions}
    budget = parse_budget(pdb("w", {"matchLabels": {"app": "w"}}, minAvailable=1))
    assert health(budget, [p], {}).healthy == healthy


def test_a_running_pod_given_without_a_ready_condition_is_simulated_ready() -> None:
    """What the simulator's kubelet reports: input written Running with no Ready condition stands for a
    ready pod; one written not ready stays so."""
    ready, unready = pod("r", node="n1"), pod("u", node="n1")
    ready["status"] = {"phase": "Running"}
    unready["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}
    objs = [node("n1", cpu="4"), ready, unready]
    sim = Simulator([Document(f"in.yaml: document {i}", o) for i, o in enumerate(objs)])
    raw = sim.port.state.raw_pods
    assert raw["default/r"]["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert raw["default/u"]["status"]["conditions"] == [{"type": "Ready", "status": "False"}]


def test_a_budget_made_later_sees_the_scale_observed_before_it() -> None:
    """The simulator reads a controller's replicas as the most pods of it seen: seen while no budget
    existed too, or a budget made after some of its pods were gone counts fewer expected pods (and allows
    disruptions a budget there from the start would not)."""
    from tests.unit._cycle_harness import cache
    from volsched.simulate.port import MemoryPort

    rs = [pod(f"web-{i}", node="n1", labels={"app": "web"}, owner="ReplicaSet/web") for i in range(4)]
    port = MemoryPort(cache(node("n1", cpu="8"), *rs), clock=lambda: 0.0)
    port.disruption_controller.sync(port.state.raw_pods.values())  # no budget: 4 pods of the ReplicaSet seen
    for i in (2, 3):
        port.remove("Pod", f"default/web-{i}")  # evicted (no budget refused it), not yet replaced
    port.disruption_controller.add(pdb("web", {"matchLabels": {"app": "web"}}, maxUnavailable=1))
    port.disruption_controller.sync(port.state.raw_pods.values())
    told = port.disruption_controller.told["default/web"]  # the status the cache was given
    assert told["expectedPods"] == 4
    assert told["disruptionsAllowed"] == 0  # 2 healthy of 4 expected, 3 desired
