"""reclaim against the real apiserver when a tenant's PodDisruptionBudget allows no disruption
(``maxUnavailable: 0``) over every pod of a queue that borrowed: the budget does not keep what the
queue borrowed. The victims are deleted past it (the Eviction API would refuse them), each told first by
its DisruptionTarget condition and event which budget was gone past and why, the operator's log says so
and /metrics counts them apart, and the other queue's pods are bound once the victims are gone
(docs/tenancy.md)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import Kube, Start, pod, podgroup, two_teams, wait_for
from volsched.framework.messages import OTHER_NAMESPACE

pytestmark = pytest.mark.cluster


def _pod(name: str, group: str) -> dict[str, Any]:
    obj = pod(name, cpu="1", group=group)
    obj["metadata"]["labels"] = {"app": group}
    obj["spec"]["terminationGracePeriodSeconds"] = 30  # no kubelet: a deleted pod stays Terminating
    return obj


def _leaving(k: Kube, ns: str) -> list[str]:
    return sorted(
        p.metadata.name for p in k.core.list_namespaced_pod(ns).items if p.metadata.deletion_timestamp
    )


def _condition(k: Kube, ns: str, name: str) -> Any:
    p = k.core.read_namespaced_pod(name, ns)
    return {c.type: c for c in p.status.conditions or []}.get("DisruptionTarget")


def test_a_budget_allowing_no_disruption_does_not_keep_what_the_queue_borrowed(
    k: Kube, start_operator: Start
) -> None:
    ns_a, ns_b = two_teams(k, "tenant")
    # Made before the operator starts, so that its first listing has it (no disruption controller runs
    # here: the status stays unset, which the Eviction API and volsched alike read as none allowed).
    budget = {
        "metadata": {"name": "keep-all"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "a"}}},
    }
    client.PolicyV1Api(k.api).create_namespaced_pod_disruption_budget(ns_a, budget)
    k.podgroup(ns_a, podgroup("a", 1, queue="qa"))
    names = [f"a-{i}" for i in range(4)]
    k.pods(ns_a, *(_pod(n, "a") for n in names))
    op = start_operator()
    wait_for(lambda: len(k.bound(ns_a)) == 4, 30, what="qa fills the node", operator=op)
    # The budget counts only Running pods that are Ready (no kubelet here sets either).
    ready = [{"type": "Ready", "status": "True"}]
    for n in names:
        k.core.patch_namespaced_pod_status(n, ns_a, {"status": {"phase": "Running", "conditions": ready}})
    k.podgroup(ns_b, podgroup("b", 1, queue="qb"))
    k.pods(ns_b, _pod("b-0", "b"), _pod("b-1", "b"))
    # qb deserves half the node: two of qa's pods go, past the budget.
    gone = wait_for(
        lambda: len(_leaving(k, ns_a)) == 2 and _leaving(k, ns_a), 60, what="two victims", operator=op
    )
    for victim in gone:
        cond = wait_for(lambda v=victim: _condition(k, ns_a, v), 20, what=f"{victim}'s DisruptionTarget")
        assert cond.reason == "ReclaimByScheduler"
        for words in (
            # (the pod of team b is not named to team a: render_eviction_told)
            f"reclaim: {ns_a}/{victim} (job {ns_a}/a) deleted past its disruption budget on n1 for "
            f"{OTHER_NAMESPACE} (queue qb, needs cpu 1",
            "; frees cpu 1, memory 128Mi; queue qa holds cpu ",
            f"past 1 pod protected by PodDisruptionBudget {ns_a}/keep-all (0 disruptions allowed",
            "the pods within every budget could not make room",
        ):
            assert words in cond.message, cond.message
        assert ns_b not in cond.message, cond.message
        [event] = wait_for(
            lambda v=victim: [
                e
                for e in k.core.list_namespaced_event(ns_a).items
                if e.involved_object.name == v and e.reason == "Evicted"
            ],
            20,
            what=f"{victim}'s event",
        )
        assert event.message == cond.message
        assert f"evict {ns_a}/{victim}: reclaim: " in op.log()
    assert "blocked by a PodDisruptionBudget" not in op.log()
    # /metrics counts them apart (and among the evictions, as before): budgets gone past show.
    wait_for(
        lambda: op.metric("volsched_evictions_past_budget_total", result="evicted") == 2 or None,
        20,
        what="the past-budget counter",
        operator=op,
    )
    assert op.metric("volsched_evictions_total", result="evicted") == 2
    # No kubelet ends them: once they are gone, qb's pods are bound.
    for victim in gone:
        k.core.delete_namespaced_pod(victim, ns_a, grace_period_seconds=0)
    wait_for(lambda: len(k.bound(ns_b)) == 2, 40, what="qb's pods bound", operator=op)
    assert sorted(k.bound(ns_a)) == sorted(f"{ns_a}/{n}" for n in names if n not in gone)
    assert _leaving(k, ns_a) == []  # nothing more was taken
    op.check_running()
