"""PodDisruptionBudgets in the simulator: the engine chooses its victims without them (as the operator
does), and the Eviction API the simulator plays refuses what a budget does not allow, with the
apiserver's rule and words; the refused evictions are reported, the pods stay."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.builders import node, pdb, priority_class, queue
from tests.sim._eviction_helpers import EXAMPLES, Staged, eviction_config, job
from volsched.cli import main
from volsched.model.errors import InputError
from volsched.simulate import Document, Simulator

Obj = dict[str, Any]


A_PODS = {"matchLabels": {"job-name": "a"}}


def preempting(*budgets: Obj) -> Staged:
    """Job a (8 pods of 1 cpu, low priority) fills n1's 8 cpu; then job b (4 pods, high) preempts."""
    before = [
        node("n1", cpu="8"), queue("q"), priority_class("high", 1000), priority_class("low", 10),
        *job("a", ns="ns", queue="q", size=8, priority_class="low"), *budgets,
    ]  # fmt: skip
    return Staged(before, job("b", ns="ns", queue="q", size=4, priority_class="high"), eviction_config())


@pytest.mark.parametrize(
    ("budgets", "evicted", "b_running"),
    [
        pytest.param([], 4, 4, id="no-budget"),
        pytest.param([pdb("keep-6", A_PODS, minAvailable=6, ns="ns")], 2, 2, id="min-available-6-of-8"),
        pytest.param(
            [pdb("keep-half", A_PODS, minAvailable="50%", ns="ns")], 4, 4, id="min-available-50-percent"
        ),
        pytest.param(
            [pdb("two-down", A_PODS, maxUnavailable="25%", ns="ns")], 2, 2, id="max-unavailable-25-percent"
        ),
        pytest.param([pdb("none-down", A_PODS, maxUnavailable=0, ns="ns")], 0, 0, id="max-unavailable-0"),
        pytest.param(
            [pdb("all", {}, minAvailable=8, ns="ns")], 0, 0, id="an-empty-selector-selects-every-pod"
        ),
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
    ],
)
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
    config.write_text((EXAMPLES / "reclaim-preempt-scheduler.yaml").read_text())
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
