"""preempt against the real apiserver when required pod anti-affinity keeps a high-priority pod off every
node: the lower-priority pod in its way is evicted through the Eviction API with a DisruptionTarget
condition and a Preempted event that name the term, nothing else is evicted, and the pod is bound there.
A PodDisruptionBudget that covers the pod in the way is honoured while another pod can go (volsched's pdb
plugin puts pods within their budgets first): the pod in the way on another node goes instead; where
budgets cover every pod in the way, one is deleted past its budget (the Eviction API would refuse it), told
which budget by its DisruptionTarget condition and event, as kube-scheduler's preemption deletes its
victims. Without the plugin (a config that leaves it out) the Eviction API refuses the eviction the
budget does not allow: the pod keeps running and the operator keeps going."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.anti_affinity_scenario import TERM, cluster, leaving, preemptor
from tests.e2e.operator_fixtures import RECLAIM_CONFIG, Kube, Start, a_later_session, wait_for

pytestmark = pytest.mark.cluster


def _condition(k: Kube, ns: str, name: str) -> Any:
    p = k.core.read_namespaced_pod(name, ns)
    return {c.type: c for c in p.status.conditions or []}.get("DisruptionTarget")


def _preempted_event(k: Kube, ns: str, name: str) -> Any:
    """Pod ``name``'s one Preempted event, once there is one."""
    [event] = wait_for(
        lambda: [
            e
            for e in k.core.list_namespaced_event(ns).items
            if e.involved_object.name == name and e.reason == "Preempted"
        ],
        20,
        what=f"{name}'s Preempted event",
    )
    return event


def test_the_pod_in_the_way_is_evicted_and_told_which_term(k: Kube, start_operator: Start) -> None:
    ns, op = cluster(k, start_operator)
    preemptor(k, ns)
    # Equal priority, one pod in the way on each node, web-1 never the older: web-1 goes, on n1.
    wait_for(lambda: leaving(k, ns) == ["web-1"], 40, what="web-1 evicted", operator=op)
    cond = _condition(k, ns, "web-1")
    assert cond is not None and cond.reason == "PreemptionByScheduler"
    for words in (
        f"preempt: {ns}/web-1",
        f"for {ns}/new (job {ns}/b, priority 1000",
        f"keeps it out by {TERM}",
    ):
        assert words in cond.message, cond.message
    assert _preempted_event(k, ns, "web-1").message == cond.message
    # No kubelet ends web-1: once it is gone, the pod goes to n1.
    k.core.delete_namespaced_pod("web-1", ns, grace_period_seconds=0)
    wait_for(lambda: k.bound(ns).get(f"{ns}/new") == "n1", 40, what="the pod bound to n1")
    assert leaving(k, ns) == []  # nothing else was evicted
    op.check_running()


def _running(k: Kube, ns: str, *names: str) -> None:
    # The Eviction API ignores budgets for pods that are not Running, and counts healthy only those whose
    # Ready condition is True (no kubelet here sets either).
    ready = [{"type": "Ready", "status": "True"}]
    for name in names:
        k.core.patch_namespaced_pod_status(name, ns, {"status": {"phase": "Running", "conditions": ready}})


def test_a_disruption_budget_keeps_the_pod_in_the_way_and_the_one_on_the_other_node_goes(
    k: Kube, start_operator: Start
) -> None:
    ns, op = cluster(k, start_operator, budgets=("n1",))
    _running(k, ns, "web-1", "web-2")
    preemptor(k, ns)
    # n1 comes first, but the budget keeps web-1: volsched does not choose it (nothing is refused);
    # web-2, which no budget covers, goes instead.
    wait_for(lambda: leaving(k, ns) == ["web-2"], 40, what="web-2 evicted", operator=op)
    assert _condition(k, ns, "web-1") is None
    assert f"keeps it out by {TERM}" in _condition(k, ns, "web-2").message
    k.core.delete_namespaced_pod("web-2", ns, grace_period_seconds=0)
    wait_for(lambda: k.bound(ns).get(f"{ns}/new") == "n2", 40, what="the pod bound to n2")
    assert leaving(k, ns) == []
    assert "blocked by a PodDisruptionBudget" not in op.log()
    op.check_running()


def test_budgets_on_every_pod_in_the_way_the_first_is_deleted_past_its_budget_and_told_which(
    k: Kube, start_operator: Start
) -> None:
    ns, op = cluster(k, start_operator, budgets=("n1", "n2"))
    _running(k, ns, "web-1", "web-2")
    preemptor(k, ns)
    # Each node would go past one budget: n1 comes first, as without budgets; web-1 is deleted.
    wait_for(lambda: leaving(k, ns) == ["web-1"], 40, what="web-1 deleted", operator=op)
    cond = wait_for(lambda: _condition(k, ns, "web-1"), 20, what="web-1's DisruptionTarget")
    assert cond.reason == "PreemptionByScheduler"
    for words in (
        f"preempt: {ns}/web-1 (job {ns}/a, priority 10) deleted past its disruption budget on n1",
        f"keeps it out by {TERM}",
        f"past 1 pod protected by PodDisruptionBudget {ns}/keep-web-1 (0 disruptions allowed",
    ):
        assert words in cond.message, cond.message
    assert _preempted_event(k, ns, "web-1").message == cond.message
    assert _condition(k, ns, "web-2") is None
    k.core.delete_namespaced_pod("web-1", ns, grace_period_seconds=0)
    wait_for(lambda: k.bound(ns).get(f"{ns}/new") == "n1", 40, what="the pod bound to n1")
    assert leaving(k, ns) == []
    assert "blocked by a PodDisruptionBudget" not in op.log()
    assert f"evict {ns}/web-1: preempt: " in op.log()
    op.check_running()


def test_without_the_pdb_plugin_the_eviction_api_refuses_what_a_budget_protects(
    k: Kube, start_operator: Start
) -> None:
    assert "  - name: pdb\n" in RECLAIM_CONFIG
    ns, op = cluster(k, start_operator, config=RECLAIM_CONFIG.replace("  - name: pdb\n", ""), budgets=("n1",))
    _running(k, ns, "web-1")
    preemptor(k, ns)
    # volsched chooses web-1 (n1 first) and tells it why, but the Eviction API refuses: it keeps running.
    cond = wait_for(lambda: _condition(k, ns, "web-1"), 40, what="web-1 told it is a victim", operator=op)
    assert f"keeps it out by {TERM}" in cond.message
    wait_for(
        lambda: "blocked by a PodDisruptionBudget" in op.log(), 30, what="the refusal logged", operator=op
    )
    # Told again that it was not evicted, and why it had been chosen (each later session may try again).
    cond = wait_for(
        lambda: (c := _condition(k, ns, "web-1")) is not None and c.status == "False" and c,
        30,
        what="web-1 told it was not evicted",
        operator=op,
    )
    assert cond.reason == "NotEvicted"
    assert cond.message.startswith("not evicted (") and f"keeps it out by {TERM}" in cond.message
    a_later_session(k, op, ns)  # sessions after the refusal: none takes web-1 past its budget
    assert leaving(k, ns) == []
    assert k.bound(ns).get(f"{ns}/new") is None
    op.check_running()
