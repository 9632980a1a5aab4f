"""preempt against the real apiserver when required pod anti-affinity keeps a high-priority pod off every
node: the lower-priority pod in its way is evicted through the Eviction API with a DisruptionTarget
condition and a Preempted event that name the term, nothing else is evicted, and the pod is bound there.
A PodDisruptionBudget that covers the pod in the way holds, as for preemption that makes room."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.e2e.anti_affinity_scenario import TERM, cluster, leaving, preemptor
from tests.e2e.operator_fixtures import Kube, Start, wait_for

pytestmark = pytest.mark.cluster


def _condition(k: Kube, ns: str, name: str) -> Any:
    p = k.core.read_namespaced_pod(name, ns)
    return {c.type: c for c in p.status.conditions or []}.get("DisruptionTarget")


def test_the_pod_in_the_way_is_evicted_and_told_which_term(k: Kube, start_operator: Start) -> None:
    ns, op = cluster(k, start_operator)
    preemptor(k, ns)
    # Equal priority and age, one pod in the way on each node: web-1 goes, on n1 (the name first).
    wait_for(lambda: leaving(k, ns) == ["web-1"], 40, what="web-1 evicted", operator=op)
    cond = _condition(k, ns, "web-1")
    assert cond is not None and cond.reason == "PreemptionByScheduler"
    for words in (
        f"preempt: {ns}/web-1",
        f"for {ns}/new (job {ns}/b, priority 1000",
        f"keeps it out by {TERM}",
    ):
        assert words in cond.message, cond.message
    [event] = wait_for(
        lambda: [
            e
            for e in k.core.list_namespaced_event(ns).items
            if e.involved_object.name == "web-1" and e.reason == "Preempted"
        ],
        20,
        what="Preempted event",
    )
    assert event.message == cond.message
    # No kubelet ends web-1: once it is gone, the pod goes to n1.
    k.core.delete_namespaced_pod("web-1", ns, grace_period_seconds=0)
    wait_for(lambda: k.bound(ns).get(f"{ns}/new") == "n1", 40, what="the pod bound to n1")
    assert leaving(k, ns) == []  # nothing else was evicted
    op.check_running()


def test_a_disruption_budget_keeps_the_pod_in_the_way(k: Kube, start_operator: Start) -> None:
    ns, op = cluster(k, start_operator)
    budget = {
        "metadata": {"name": "keep-web-1"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"pdb": "n1"}}},
    }
    client.PolicyV1Api(k.api).create_namespaced_pod_disruption_budget(ns, budget)
    # The Eviction API ignores budgets for pods that are not Running (no kubelet here sets it).
    k.core.patch_namespaced_pod_status("web-1", ns, {"status": {"phase": "Running"}})
    preemptor(k, ns)
    # volsched chose web-1 and tells it why, but the Eviction API refuses: it keeps running.
    cond = wait_for(lambda: _condition(k, ns, "web-1"), 40, what="web-1 told it is a victim")
    assert f"keeps it out by {TERM}" in cond.message
    start = op.cycles()
    wait_for(lambda: op.cycles() >= start + 6, 30, what="more cycles")
    assert leaving(k, ns) == []
    assert k.bound(ns).get(f"{ns}/new") is None
    assert "blocked by a PodDisruptionBudget" in op.log()
