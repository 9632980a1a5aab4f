"""Every decision and every rejected object is visible on the object itself (real apiserver): an
evicted pod's DisruptionTarget condition and Preempted event name the beneficiary and the numbers, an
unschedulable PodGroup gets an event, a pod whose PodGroup is missing is told so, an object the cache
rejects gets an event, and no object gets the same message twice in a row (not even after a restart)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import (
    RECLAIM_CONFIG,
    Kube,
    OperatorProcess,
    Start,
    a_later_session,
    node,
    pod,
    podgroup,
    queue,
    wait_for,
)

pytestmark = pytest.mark.cluster


def _events(k: Kube, ns: str, name: str, reason: str | None = None) -> list[Any]:
    return [
        e
        for e in k.core.list_namespaced_event(ns).items
        if e.involved_object.name == name and (reason is None or e.reason == reason)
    ]


def _lingering(obj: dict[str, Any]) -> dict[str, Any]:
    """A pod that stays Terminating once evicted (no kubelet ends it), so what it was told can be read."""
    obj["spec"]["terminationGracePeriodSeconds"] = 30
    return obj


def _a_full_node_then_b(
    k: Kube,
    start_operator: Start,
    namespace: str,
    *,
    first: Callable[[str], None] | None = None,
    size: int = 2,
    min_member: int = 1,
) -> tuple[str, OperatorProcess]:
    """Node n1 (``size`` cpu) filled by job a's ``size`` pods (priority low, queue q, ``min_member``; they
    linger once evicted), the operator started, then job b's pod (priority high, 1 cpu) arrives: room
    only an eviction makes. ``first`` (given the namespace) makes what must be created before the
    operator starts."""
    sched = client.SchedulingV1Api(k.api)
    for name, value in (("low", 10), ("high", 1000)):
        sched.create_priority_class({"metadata": {"name": name}, "value": value})
    k.nodes(node("n1", cpu=str(size)))
    k.queue(queue("default"))
    k.queue(queue("q"))
    ns = k.namespace(namespace)
    k.podgroup(ns, podgroup("a", min_member, queue="q", priority_class="low"))
    k.pods(ns, *(_lingering(pod(f"a-{i}", cpu="1", group="a")) for i in range(size)))
    if first is not None:
        first(ns)
    op = start_operator()
    wait_for(lambda: len(k.bound(ns)) == size, 30, what="job a fills the node")
    k.podgroup(ns, podgroup("b", 1, queue="q", priority_class="high"))
    k.pods(ns, pod("b-0", cpu="1", group="b"))
    return ns, op


def test_an_evicted_pod_is_told_why_and_who_took_its_place(k: Kube, start_operator: Start) -> None:
    k.set_config(RECLAIM_CONFIG)
    ns, op = _a_full_node_then_b(k, start_operator, "preempt")

    def victim() -> Any:
        for p in k.core.list_namespaced_pod(ns).items:
            if p.metadata.name.startswith("a-") and p.metadata.deletion_timestamp:
                conds = {c.type: c for c in p.status.conditions or []}
                cond = conds.get("DisruptionTarget")
                if cond is not None and cond.reason == "PreemptionByScheduler":
                    return p, cond
        return None

    evicted, cond = wait_for(victim, 40, what="a pod of job a evicted, with volsched's DisruptionTarget")
    assert cond.status == "True"
    for words in (f"preempt: {ns}/{evicted.metadata.name}", f"for {ns}/b-0 (job {ns}/b, priority 1000, queue q",
                  "needs cpu 1, memory 128Mi", "frees cpu 1, memory 128Mi", "priority 10",
                  f"job {ns}/a holds cpu 2, memory 256Mi -> cpu 1, memory 128Mi"):  # fmt: skip
        assert words in cond.message, cond.message
    events = wait_for(lambda: _events(k, ns, evicted.metadata.name, "Preempted"), 20, what="Preempted event")
    assert len(events) == 1 and events[0].message == cond.message and events[0].type == "Normal"
    assert events[0].involved_object.uid == evicted.metadata.uid

    a_later_session(k, op, ns)
    [again] = _events(k, ns, evicted.metadata.name, "Preempted")
    assert again.count == 1  # told once: no second eviction, no repeated message
    others = [p for p in k.core.list_namespaced_pod(ns).items if p.metadata.name.startswith("a-")]
    assert sum(1 for p in others if p.metadata.deletion_timestamp) == 1  # one victim was enough


def _with_claims(k: Kube) -> None:
    """The reclaim and preempt example's config with the reservation plugin (whose claims they are)."""
    config = RECLAIM_CONFIG
    k.set_config(config.replace("  - name: binpack\n", "  - name: binpack\n  - name: reservation\n"))


def test_the_room_an_eviction_frees_is_claimed_for_its_pod_and_said_so(
    k: Kube, start_operator: Start
) -> None:
    """The claim rides the operator's carryover from session to session while the victim terminates: the
    preemptor is told once (a Nominated event) and its PodGroup's Reserved condition says the room."""
    _with_claims(k)
    ns, op = _a_full_node_then_b(k, start_operator, "claims")
    [event] = wait_for(lambda: _events(k, ns, "b-0", "Nominated"), 40, what="a Nominated event on b-0")
    assert event.message == "room on node n1 that evictions free is held for it until it is placed"

    def reserved() -> Any:
        conds = {c["type"]: c for c in (k.get_podgroup(ns, "b").get("status") or {}).get("conditions") or []}
        return conds.get("Reserved")

    cond = wait_for(reserved, 20, what="PodGroup b's Reserved condition")
    assert cond["status"] == "True"
    assert (
        cond["message"] == "room on node(s) n1 that evictions free is held for 1 pod(s) until they are placed"
    )
    a_later_session(k, op, ns)  # the victim still terminates: the claim is carried, not made again
    [again] = _events(k, ns, "b-0", "Nominated")
    assert again.count == 1


def _claiming(
    k: Kube,
    start_operator: Start,
    namespace: str,
    *,
    first: Callable[[str], None] | None = None,
    size: int = 2,
    min_member: int = 1,
) -> tuple[str, OperatorProcess, str]:
    """The claim test's start (job b's pod preempts one of job a's on n1 and claims its room), and
    b-0's ``status.nominatedNodeName`` read while the victim terminates: the claim's node. Returns the
    namespace, the operator and the victim's name."""
    _with_claims(k)
    ns, op = _a_full_node_then_b(k, start_operator, namespace, first=first, size=size, min_member=min_member)

    def nominated() -> str | None:
        return k.core.read_namespaced_pod_status("b-0", ns).status.nominated_node_name  # type: ignore[no-any-return]

    assert wait_for(nominated, 40, what="b-0's status.nominatedNodeName", operator=op) == "n1"
    [victim] = [
        p
        for p in k.core.list_namespaced_pod(ns).items
        if p.metadata.name.startswith("a-") and p.metadata.deletion_timestamp
    ]
    a_later_session(k, op, ns)  # the victim still terminates: b-0 keeps its nominated node and waits
    b0 = k.core.read_namespaced_pod("b-0", ns)
    assert (b0.spec.node_name, b0.status.nominated_node_name) == (None, "n1")
    return ns, op, victim.metadata.name


def test_the_claim_is_the_pods_nominated_node_until_it_is_bound(k: Kube, start_operator: Start) -> None:
    """kube-scheduler's nominated node, written where tools read it (kubectl get pod -o wide, the cluster
    autoscaler): set while the victim terminates, gone once the pod is bound there (the apiserver clears
    it as it binds)."""
    ns, op, victim = _claiming(k, start_operator, "nominated-bound")
    k.core.delete_namespaced_pod(victim, ns, grace_period_seconds=0)
    wait_for(lambda: k.bound(ns).get(f"{ns}/b-0"), 40, what="b-0 bound", operator=op)
    b0 = k.core.read_namespaced_pod("b-0", ns)
    assert (b0.spec.node_name, b0.status.nominated_node_name) == ("n1", None)


def test_a_claim_that_ends_unplaced_clears_the_nominated_node(k: Kube, start_operator: Start) -> None:
    """The node cordoned while the victim terminates: once its room is free and b-0 was not placed there,
    the claim ends and b-0's nominated node is cleared (no stale one is left for the tools that read it)."""
    ns, op, victim = _claiming(k, start_operator, "nominated-cleared")
    k.core.patch_node("n1", {"spec": {"unschedulable": True}})
    k.core.delete_namespaced_pod(victim, ns, grace_period_seconds=0)

    def cleared() -> bool:
        return k.core.read_namespaced_pod_status("b-0", ns).status.nominated_node_name is None

    wait_for(cleared, 40, what="b-0's nominated node cleared", operator=op)
    assert k.core.read_namespaced_pod("b-0", ns).spec.node_name is None


def test_an_unschedulable_gang_gets_one_event_on_its_podgroup(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="2"), node("n2", cpu="2"))
    ns = k.namespace("gang-events")
    pg = k.podgroup(ns, podgroup("trio", 3))
    k.pods(ns, *(pod(f"trio-{i}", cpu="1500m", group="trio") for i in range(3)))
    op = start_operator()
    events = wait_for(lambda: _events(k, ns, "trio", "Unschedulable"), 30, what="Unschedulable event")
    [event] = events
    assert event.involved_object.kind == "PodGroup" and event.involved_object.uid == pg["metadata"]["uid"]
    # why, in numbers (it can never run, and is not voted on)
    assert (
        event.type == "Warning"
        and "minMember pods ask cpu 4.5, more than all the ready nodes have (cpu 4)" in (event.message)
    )
    a_later_session(k, op, ns)
    [again] = _events(k, ns, "trio", "Unschedulable")
    assert (again.message, again.count) == (event.message, 1)  # the same message is never sent twice


def test_a_pod_whose_podgroup_is_missing_is_told_so(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("orphans")
    k.pods(ns, pod("lost", group="ghost"))
    op = start_operator()
    [event] = wait_for(lambda: _events(k, ns, "lost", "PodGroupNotFound"), 30, what="PodGroupNotFound event")
    assert "pod group ghost does not exist" in event.message

    def condition() -> Any:
        conds = {c.type: c for c in k.core.read_namespaced_pod("lost", ns).status.conditions or []}
        return conds.get("PodScheduled")

    cond = wait_for(condition, 20, what="PodScheduled condition")
    assert (cond.status, cond.reason) == ("False", "Unschedulable") and "ghost does not exist" in cond.message
    assert f"Pod {ns}/lost: PodGroupNotFound: pod group ghost does not exist" in op.log()
    a_later_session(k, op, ns)
    assert [e.count for e in _events(k, ns, "lost", "PodGroupNotFound")] == [1]
    assert op.log().count(f"Pod {ns}/lost: PodGroupNotFound") == 1  # one log line, not one per session

    k.podgroup(ns, podgroup("ghost", 1))
    wait_for(lambda: k.bound(ns).get(f"{ns}/lost"), 30, what="bound once its PodGroup exists")


@pytest.mark.parametrize(
    ("size", "min_member"),
    [pytest.param(3, 2, id="a-gang-keeps-its-minimum"), pytest.param(2, 1, id="lone-pods-two-claims")],
)
def test_a_nomination_survives_a_failover(k: Kube, start_operator: Start, size: int, min_member: int) -> None:
    """The operator restarted while the victim terminates: the new leader reads b-0's nominated node
    back and holds the room for it (kube-scheduler keeps honouring a nominated node it finds). Job o,
    of b's priority and made before it (gated until the restart), would otherwise take that room first,
    and b-0 would lose what was evicted for it. With job a a gang of 3 at minMember 2, one pod is all
    preempt may take from it. With job a of minMember 1 (no gang), o-0 evicts a-1 for itself and claims
    its room on n1 too: two claims on one node. Once b-0's victim is gone, b-0's claim (read back, so no
    victims recorded) holds the free room and o-0's the room a-1 frees: the defect was o-0 counting
    a-1's room as covering b-0's claim, bound into the room evicted for b-0, and b-0 then waiting for
    a-1, which here never goes."""

    def competitor(ns: str) -> None:
        k.podgroup(ns, podgroup("o", 1, queue="q", priority_class="high"))
        k.pods(ns, pod("o-0", cpu="1", group="o", gates=["example.com/later"]))

    ns, op, victim = _claiming(
        k, start_operator, f"nominated-failover-{size}", first=competitor, size=size, min_member=min_member
    )
    op.stop()
    k.core.patch_namespaced_pod("o-0", ns, {"spec": {"schedulingGates": None}})
    op = start_operator()
    a_later_session(k, op, ns)  # the new leader's first sessions: the nomination is its claim, not cleared
    assert k.core.read_namespaced_pod_status("b-0", ns).status.nominated_node_name == "n1"
    k.core.delete_namespaced_pod(victim, ns, grace_period_seconds=0)
    wait_for(lambda: k.bound(ns).get(f"{ns}/b-0"), 40, what="b-0 bound", operator=op)
    assert k.core.read_namespaced_pod("b-0", ns).spec.node_name == "n1"
    # (a keeps its minMember 2; or o-0 waits for the other of a's pods, its own victim, still terminating)
    assert k.core.read_namespaced_pod("o-0", ns).spec.node_name is None
    if min_member == 1:
        [other] = [f"a-{i}" for i in range(size) if f"a-{i}" != victim]
        assert k.core.read_namespaced_pod(other, ns).metadata.deletion_timestamp is not None


def test_objects_the_cache_rejects_get_an_event_once_even_across_restarts(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("rejects")
    # The CRD's quantity pattern allows a sign, so a negative minResources reaches the operator.
    bad = podgroup("negative", 1)
    bad["spec"]["minResources"] = {"cpu": "-1"}
    pg = k.podgroup(ns, bad)
    quota = k.core.create_namespaced_resource_quota(
        ns, {"metadata": {"name": "weight"}, "spec": {"hard": {"volsched.io/namespace.weight": "0"}}}
    )
    op = start_operator()
    [pg_event] = wait_for(lambda: _events(k, ns, "negative", "Rejected"), 30, what="event on the PodGroup")
    assert (
        pg_event.involved_object.uid == pg["metadata"]["uid"] and pg_event.involved_object.kind == "PodGroup"
    )
    assert "spec.minResources" in pg_event.message and "-1" in pg_event.message
    [q_event] = wait_for(lambda: _events(k, ns, "weight", "Rejected"), 30, what="event on the ResourceQuota")
    assert (
        q_event.involved_object.uid == quota.metadata.uid and q_event.involved_object.kind == "ResourceQuota"
    )
    assert "volsched.io/namespace.weight" in q_event.message and "'0'" in q_event.message

    a_later_session(k, op, ns)
    op.stop()
    op = start_operator()  # a new operator remembers nothing it sent, but finds the events
    a_later_session(k, op, ns)
    for name in ("negative", "weight"):
        [event] = _events(k, ns, name, "Rejected")
        assert event.count == 1, f"{name}: the same message sent again"
