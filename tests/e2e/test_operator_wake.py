"""Sessions woken by the watches on a real apiserver: with an hour between periodic sessions, a pod that
arrives after the first session is bound all the same, and so is one that waits for capacity once a pod
holding it is deleted, and a preemptor once its victim is gone (only the cache's doorbell can have called
those sessions), and so is a pod that waits for a config with allocate once its ConfigMap has one."""

from __future__ import annotations

import pytest

from tests.e2e.anti_affinity_scenario import cluster, leaving, preemptor
from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for
from volsched.framework.config import DEFAULT_CONFIG_YAML

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
    # /metrics keeps its document up to a second (METRICS_TTL): the pods may be bound within it.
    wait_for(
        lambda: op.metric("volsched_sessions_woken_total") >= 2, 30, what="two woken sessions", operator=op
    )


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


def test_a_gated_pod_is_bound_soon_after_its_last_gate_is_removed(k: Kube, start_operator: Start) -> None:
    """With an hour between periodic sessions, a pod whose scheduling gate is removed is bound all the
    same (only the doorbell can have called that session), and while gated it is not tried at all (the
    apiserver would refuse its binding)."""
    k.nodes(node("n1", cpu="2"))
    ns = k.namespace("gates")
    op = start_operator("--period", "3600")
    wait_for(lambda: op.metric("volsched_sessions_total") >= 1, 30, what="the first session", operator=op)

    k.pods(ns, pod("gated", gates=["example.com/quota"]), pod("free"))
    wait_for(lambda: f"{ns}/free" in k.bound(ns), 30, what="the ungated pod bound", operator=op)
    assert k.bound(ns) == {f"{ns}/free": "n1"}

    k.core.patch_namespaced_pod("gated", ns, [{"op": "remove", "path": "/spec/schedulingGates"}])
    bound = wait_for(
        lambda: f"{ns}/gated" in k.bound(ns) and k.bound(ns),
        30,
        what="the pod bound once ungated",
        operator=op,
    )
    assert bound == {f"{ns}/free": "n1", f"{ns}/gated": "n1"}
    # /metrics is made at most once a second: wait until it shows both binds, then no other attempt.
    wait_for(
        lambda: op.metric("volsched_schedule_attempts_total", result="scheduled") >= 2,
        30,
        what="both binds counted",
        operator=op,
    )
    attempts = [
        line for line in op.metrics().splitlines() if line.startswith("volsched_schedule_attempts_total{")
    ]
    assert attempts and all('result="scheduled"' in line for line in attempts), attempts


def test_a_config_loaded_between_far_apart_sessions_is_acted_on_soon(k: Kube, start_operator: Start) -> None:
    """With an hour between periodic sessions, the leader reads its ConfigMap as it renews the Lease: a
    new config must wake a session (here the one that places a pod the old config left pending)."""
    k.nodes(node("n1", cpu="2"))
    ns = k.namespace("newconfig")
    k.set_config(DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue"))  # nothing placed
    op = start_operator("--period", "3600")
    wait_for(lambda: op.metric("volsched_sessions_total") >= 1, 30, what="the first session", operator=op)
    k.pods(ns, pod("waits"))
    wait_for(lambda: op.metric("volsched_sessions_total") >= 2, 30, what="the pod's session", operator=op)
    assert k.bound(ns) == {}

    k.set_config(DEFAULT_CONFIG_YAML)
    wait_for(
        lambda: k.bound(ns).get(f"{ns}/waits") == "n1",
        30,
        what="the pod bound under the new config",
        operator=op,
    )
    # /metrics is made at most once a second: the document read just after the bind may be older
    wait_for(
        lambda: op.metric("volsched_config_reloads_total", result="loaded") == 2,
        30,
        what="both configs counted as loaded",
        operator=op,
    )
