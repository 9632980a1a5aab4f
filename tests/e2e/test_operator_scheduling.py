"""The operator on a real apiserver: binds through pods/binding, gangs, queue and namespace shares, status."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.operator_fixtures import (
    Kube,
    Start,
    a_later_session,
    node,
    node_usage,
    pod,
    podgroup,
    queue,
    wait_for,
)

pytestmark = pytest.mark.cluster


def test_pods_are_bound_to_the_right_nodes(k: Kube, start_operator: Start) -> None:
    k.nodes(node("cpu-1", labels={"pool": "cpu"}), node("gpu-1", labels={"pool": "gpu"}))
    ns = k.namespace("place")
    k.pods(
        ns, pod("wants-gpu", node_selector={"pool": "gpu"}), pod("wants-cpu", node_selector={"pool": "cpu"})
    )
    k.pods(ns, pod("other", scheduler="default-scheduler"))
    op = start_operator()
    bound = wait_for(lambda: len(k.bound(ns)) == 2 and k.bound(ns), 30, what="two pods bound")
    assert bound == {f"{ns}/wants-gpu": "gpu-1", f"{ns}/wants-cpu": "cpu-1"}
    p = k.core.read_namespaced_pod("wants-gpu", ns)
    assert {c.type: c.status for c in p.status.conditions}["PodScheduled"] == "True"
    assert k.placements(ns)[f"{ns}/other"] is None  # another scheduler's pod is never touched
    # A bind is counted when a later session reads its outcome (binds go out in the background).
    scheduled = lambda: op.metric("volsched_schedule_attempts_total", result="scheduled")  # noqa: E731
    wait_for(lambda: scheduled() == 2, 10, what="two binds counted")
    a_later_session(k, op, ns)  # sessions after the one that counted them: none counts them again
    assert op.metric_now("volsched_schedule_attempts_total", result="scheduled") == 2  # each once


def test_a_gang_is_placed_all_at_once_or_not_at_all(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="2"), node("n2", cpu="2"))
    ns = k.namespace("gang")
    k.podgroup(ns, podgroup("trio", 3))
    k.pods(ns, *(pod(f"trio-{i}", cpu="1500m", group="trio") for i in range(3)))
    op = start_operator()

    def unschedulable_condition() -> bool:
        pg = k.get_podgroup(ns, "trio")
        conds = {c["type"]: c for c in (pg.get("status") or {}).get("conditions") or []}
        return conds.get("Scheduled", {}).get("status") == "False"

    wait_for(unschedulable_condition, 30, what="the gang reported unschedulable")
    assert k.bound(ns) == {}  # two of three would fit: none is bound

    # The session's status writes (PodGroup status, pod conditions, events) go out concurrently: the
    # PodGroup's condition says nothing about whether the pod's condition and event have landed yet.
    def pod_scheduled() -> Any:
        p = k.core.read_namespaced_pod("trio-0", ns)
        return {c.type: c for c in p.status.conditions or []}.get("PodScheduled")

    def trio_0_events() -> list[Any]:
        return [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "trio-0"]

    cond = wait_for(pod_scheduled, 30, what="trio-0's PodScheduled condition")
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    wait_for(trio_0_events, 30, what="trio-0's FailedScheduling event")
    assert k.bound(ns) == {}
    events = trio_0_events()
    assert len(events) == 1 and events[0].reason == "FailedScheduling" and events[0].message

    k.nodes(node("n3", cpu="2"))
    bound = wait_for(lambda: len(k.bound(ns)) == 3 and k.bound(ns), 30, what="the whole gang bound")
    assert sorted(bound.values()) == ["n1", "n2", "n3"]
    wait_for(
        lambda: (k.get_podgroup(ns, "trio").get("status") or {}).get("phase") == "Running", 20, what="Running"
    )
    assert all(used <= alloc for used, alloc in node_usage(k).values())
    assert op.metric("volsched_schedule_attempts_total", result="bind_conflict") == 0


def test_queues_share_the_cluster_by_weight(k: Kube, start_operator: Start) -> None:
    k.nodes(*(node(f"n{i}", cpu="4") for i in range(2)))
    k.queue(queue("default"))
    k.queue(queue("light", 1))
    k.queue(queue("heavy", 3))
    ns = k.namespace("shares")
    for q in ("light", "heavy"):  # one elastic job per queue: minMember 1, eight pods
        k.podgroup(ns, podgroup(q, 1, queue=q))
        k.pods(ns, *(pod(f"{q}-{i}", cpu="1", group=q) for i in range(8)))
    op = start_operator()
    wait_for(lambda: len(k.bound(ns)) == 8, 40, what="the cluster filled")
    bound = k.bound(ns)
    light = sum(1 for key in bound if "/light-" in key)
    heavy = sum(1 for key in bound if "/heavy-" in key)
    assert (light, heavy) == (2, 6)

    def queue_status() -> dict[str, object] | None:
        st = k.get_queue("heavy").get("status") or {}
        return st if st.get("allocated", {}).get("cpu") == "6" else None

    status = wait_for(queue_status, 20, what="queue status")
    assert status["deserved"]["cpu"] == "6"
    assert status["running"] == 1 and status["state"] == "Open"  # podgroups by phase
    # The session writes status first and records metrics right after: wait for the metrics too.
    wait_for(
        lambda: (
            op.metric("volsched_queue_allocated", queue="heavy", parent="root", resource="cpu") == 6 or None
        ),
        10,
        what="the allocated gauge",
    )
    assert op.metric("volsched_queue_deserved", queue="light", parent="root", resource="cpu") == 2


def test_namespace_weights_from_resource_quotas(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="4"))
    k.queue(queue("default"))
    big, small = k.namespace("team-big"), k.namespace("team-small")
    k.core.create_namespaced_resource_quota(
        big,
        {"metadata": {"name": "weight"}, "spec": {"hard": {"volsched.io/namespace.weight": "3"}}},
    )
    for ns in (big, small):  # one elastic job per namespace
        k.podgroup(ns, podgroup("job", 1))
        k.pods(ns, *(pod(f"{ns}-{i}", cpu="1", group="job") for i in range(4)))
    start_operator()
    wait_for(lambda: len(k.bound()) == 4, 40, what="the node filled")
    bound = k.bound()
    assert sum(1 for key in bound if key.startswith(f"{big}/")) == 3
    assert sum(1 for key in bound if key.startswith(f"{small}/")) == 1
