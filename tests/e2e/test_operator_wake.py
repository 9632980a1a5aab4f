"""Sessions woken by the watches on a real apiserver: with an hour between periodic sessions, a pod that
arrives after the first session is bound all the same, and so is one that waits for capacity once a pod
holding it is deleted, and a preemptor once its victim is gone (only the cache's doorbell can have called
those sessions)."""

from __future__ import annotations

import pytest

from tests.e2e.anti_affinity_scenario import cluster, leaving, preemptor
from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for

pytestmark = pytest.mark.cluster


def test_a_session_is_woken_by_a_pod_arriving_and_by_capacity_freeing_while_a_pod_waits(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="1"))
    ns = k.namespace("wake")
    op = start_operator("--period", "3600")
    wait_for(lambda: op.metric("volsched_sessions_total") >= 1, 30, what="the first session", operator=op)

    k.pods(ns, pod("first", cpu="1"))
    bound = wait_for(lambda: k.bound(ns), 30, what="the pod that arrived bound", operator=op)
    assert bound == {f"{ns}/first": "n1"}

    k.pods(ns, pod("second", cpu="1"))  # the node is full: it waits

    def unschedulable() -> bool:
        p = k.core.read_namespaced_pod("second", ns)
        conds = {c.type: c for c in p.status.conditions or []}
        return "PodScheduled" in conds and conds["PodScheduled"].status == "False"

    wait_for(unschedulable, 30, what="the second pod reported unschedulable", operator=op)
    assert k.bound(ns) == {f"{ns}/first": "n1"}

    k.core.delete_namespaced_pod("first", ns, grace_period_seconds=0)
    bound = wait_for(
        lambda: f"{ns}/second" in k.bound(ns) and k.bound(ns), 30, what="the waiting pod bound", operator=op
    )
    assert bound == {f"{ns}/second": "n1"}
    assert op.metric("volsched_sessions_woken_total") >= 2


def test_a_preemptor_waiting_for_its_victim_is_woken_when_the_victim_goes(
    k: Kube, start_operator: Start
) -> None:
    """The preemptor is pipelined onto the room its victim frees (not unschedulable): the victim's going
    must wake a session, with an hour between periodic sessions."""
    ns, op = cluster(k, lambda *args, **kw: start_operator("--period", "3600", *args, **kw))
    preemptor(k, ns)
    wait_for(lambda: leaving(k, ns) == ["web-1"], 40, what="web-1 evicted", operator=op)
    k.core.delete_namespaced_pod("web-1", ns, grace_period_seconds=0)  # no kubelet ends it
    wait_for(lambda: k.bound(ns).get(f"{ns}/new") == "n1", 40, what="the preemptor bound", operator=op)
