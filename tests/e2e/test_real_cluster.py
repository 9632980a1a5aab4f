"""The operator on a control plane that behaves like a cluster: kube-controller-manager's Job,
ReplicaSet, garbage collector and disruption controllers make and delete pods and keep budgets, and
kwok's nodes run the pods bound to them (Running at once, Succeeded after their annotation's duration,
gone once deleted). Nothing here writes a pod's status or deletes a pod by hand.

Each test waits for the events that prove its outcome (a Job complete, a pod gone, a replacement made),
never for time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.operator_fixtures import RECLAIM_CONFIG, Kube, Start, pod, queue, real_cluster, wait_for
from volsched_dev.devcluster import RUN_FOR, LocalControlPlane

pytestmark = pytest.mark.cluster
GANG = "scheduling.volsched.io/min-member"
#: How long the cluster's waits may take: its controllers act within a second or two, the garbage
#: collector sees a new kind (the PodGroups) within its 30 s discovery resync.
SLOW = 120


@pytest.fixture
def cluster() -> Iterator[LocalControlPlane]:
    yield from real_cluster()


def _template(*, cpu: str, run_for: str | None, gang: int | None = None, priority: str | None = None,
              labels: dict[str, str] | None = None, queue_name: str | None = None) -> dict[str, Any]:  # fmt: skip
    annotations: dict[str, str] = {}
    if run_for:
        annotations[RUN_FOR] = run_for
    if gang:
        annotations[GANG] = str(gang)
    if queue_name:
        annotations["scheduling.volsched.io/queue-name"] = queue_name
    spec = pod("template", cpu, priority_class=priority)["spec"]  # (a template's pods get their own names)
    return {"metadata": {"annotations": annotations, "labels": labels or {}}, "spec": spec}


def _job(name: str, *, completions: int, parallelism: int, gang: int, cpu: str = "1",
         indexed: bool = False, run_for: str = "2s") -> dict[str, Any]:  # fmt: skip
    template = _template(cpu=cpu, run_for=run_for, gang=gang)
    template["spec"]["restartPolicy"] = "Never"
    spec: dict[str, Any] = {"completions": completions, "parallelism": parallelism, "template": template}
    if indexed:
        spec["completionMode"] = "Indexed"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def _replicaset(
    name: str, *, replicas: int, cpu: str, priority: str, queue_name: str | None = None
) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": _template(
                cpu=cpu, run_for=None, priority=priority, labels=labels, queue_name=queue_name
            ),
        },
    }


def _pods(k: Kube, ns: str, prefix: str) -> list[Any]:
    return [p for p in k.core.list_namespaced_pod(ns).items if p.metadata.name.startswith(prefix)]


def _podgroup_of(k: Kube, ns: str, owner_uid: str) -> dict[str, Any] | None:
    try:
        return k.get_podgroup(ns, f"podgroup-{owner_uid}")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _priorities(k: Kube) -> None:
    sched = client.SchedulingV1Api(k.api)
    for name, value in (("low", 10), ("high", 1000)):
        sched.create_priority_class({"metadata": {"name": name}, "value": value})


def test_batch_jobs_are_gang_scheduled_run_complete_and_their_podgroups_go_with_them(
    cluster: LocalControlPlane, k: Kube, start_operator: Start
) -> None:
    for n in ("kwok-1", "kwok-2"):
        cluster.kwok_node(n, cpu="4")
    ns = k.namespace("jobs")
    batch = client.BatchV1Api(k.api)
    # 8 cpu: the parallel gang of 3 and the Indexed one of 2 run; the gang of 9 never fits whole.
    parallel = batch.create_namespaced_job(ns, _job("parallel", completions=6, parallelism=3, gang=3))
    indexed = batch.create_namespaced_job(
        ns, _job("indexed", completions=4, parallelism=2, gang=2, indexed=True)
    )
    wide = batch.create_namespaced_job(ns, _job("wide", completions=9, parallelism=9, gang=9))
    op = start_operator()

    def complete(name: str) -> bool:
        status = batch.read_namespaced_job(name, ns).status
        return any(c.type == "Complete" and c.status == "True" for c in status.conditions or ())

    for name in ("parallel", "indexed"):
        wait_for(lambda name=name: complete(name), SLOW, what=f"Job {name} complete", operator=op)
    assert batch.read_namespaced_job("parallel", ns).status.succeeded == 6
    indexes = sorted(
        p.metadata.annotations["batch.kubernetes.io/job-completion-index"]
        for p in _pods(k, ns, "indexed-")
        if p.status.phase == "Succeeded"
    )
    assert sorted(set(indexes)) == ["0", "1", "2", "3"]
    # Every pod of the two gangs ran on a kwok node, and the wide gang bound none of its 9.
    assert all(p.status.phase == "Succeeded" for p in _pods(k, ns, "parallel-") + _pods(k, ns, "indexed-"))
    assert not [p for p in _pods(k, ns, "wide-") if p.spec.node_name]
    assert len(_pods(k, ns, "wide-")) == 9
    group = _podgroup_of(k, ns, parallel.metadata.uid)
    assert group is not None and group["spec"]["minMember"] == 3
    assert _podgroup_of(k, ns, indexed.metadata.uid) is not None
    wide_group = wait_for(
        lambda: _podgroup_of(k, ns, wide.metadata.uid), 30, what="wide's PodGroup", operator=op
    )
    assert (wide_group.get("status") or {}).get("phase") == "Pending"

    # Deleting a Job deletes its PodGroup with it: the garbage collector follows volsched's owner reference.
    for job in (parallel, indexed, wide):
        batch.delete_namespaced_job(job.metadata.name, ns, propagation_policy="Background")
    for job in (parallel, indexed, wide):
        wait_for(lambda uid=job.metadata.uid: _podgroup_of(k, ns, uid) is None, SLOW,
                 what=f"the PodGroup of Job {job.metadata.name} collected", operator=op)  # fmt: skip
    wait_for(
        lambda: not k.core.list_namespaced_pod(ns).items, SLOW, what="the Jobs' pods collected", operator=op
    )


def test_preempted_pods_really_go_and_their_owner_makes_them_again(
    cluster: LocalControlPlane, k: Kube, start_operator: Start
) -> None:
    cluster.kwok_node("kwok-1", cpu="4")
    _priorities(k)
    k.set_config(RECLAIM_CONFIG)
    ns = k.namespace("preempt")
    apps = client.AppsV1Api(k.api)
    apps.create_namespaced_replica_set(ns, _replicaset("low", replicas=4, cpu="1", priority="low"))
    op = start_operator()
    running = wait_for(
        lambda: len(r := [p for p in _pods(k, ns, "low-") if p.status.phase == "Running"]) == 4 and r,
        SLOW, what="the 4 low pods running on the kwok node", operator=op,
    )  # fmt: skip
    first = {p.metadata.uid for p in running}
    apps.create_namespaced_replica_set(ns, _replicaset("high", replicas=2, cpu="1", priority="high"))

    def high_running() -> bool:
        pods = _pods(k, ns, "high-")
        return len(pods) == 2 and all(p.status.phase == "Running" for p in pods)

    wait_for(high_running, SLOW, what="the high pods running in the room preempt made", operator=op)

    def replaced() -> list[Any] | None:
        low = _pods(k, ns, "low-")
        kept = [p for p in low if p.metadata.uid in first]
        new = [p for p in low if p.metadata.uid not in first]
        return new if len(kept) == 2 and len(new) == 2 else None

    new = wait_for(replaced, SLOW, what="two low pods gone and made again by their ReplicaSet", operator=op)
    # The replacements wait: no room, and preempt takes nothing back from higher priority.
    assert all(not p.spec.node_name for p in new)

    # A victim its eviction deletes at once is told with the status writes after the evictions, on the
    # status thread: its event may come after the ReplicaSet has made the pod again.
    def told() -> int:
        events = k.core.list_namespaced_event(ns).items
        return sum(1 for e in events if e.reason == "Preempted" or "preempt" in (e.message or "").lower())

    assert wait_for(
        lambda: told() >= 2, SLOW, what="the two victims told why (Preempted events)", operator=op
    )


def test_a_budget_kept_by_the_real_disruption_controller_gives_way_to_preempt_and_the_victim_is_told(
    cluster: LocalControlPlane, k: Kube, start_operator: Start
) -> None:
    """A budget that allows no disruption does not keep a higher-priority pod waiting for ever: preempt
    takes one pod past it, deleted (the Eviction API would refuse it), as kube-scheduler's preemption does,
    and the victim's Preempted event names the budget (d68466f)."""
    cluster.kwok_node("kwok-1", cpu="4")
    _priorities(k)
    k.set_config(RECLAIM_CONFIG)
    ns = k.namespace("budget")
    apps = client.AppsV1Api(k.api)
    policy = client.PolicyV1Api(k.api)
    apps.create_namespaced_replica_set(ns, _replicaset("low", replicas=4, cpu="1", priority="low"))
    policy.create_namespaced_pod_disruption_budget(
        ns,
        {
            "metadata": {"name": "keep-low"},
            "spec": {"minAvailable": 4, "selector": {"matchLabels": {"app": "low"}}},
        },
    )
    op = start_operator()

    def budget() -> Any:
        return policy.read_namespaced_pod_disruption_budget("keep-low", ns).status

    # The disruption controller, not the test, says how many may go: none while all 4 must stay.
    wait_for(lambda: (s := budget()) and s.current_healthy == 4 and s.observed_generation, SLOW,
             what="the budget's status from the disruption controller", operator=op)  # fmt: skip
    assert budget().disruptions_allowed == 0
    first = {p.metadata.uid for p in _pods(k, ns, "low-")}
    apps.create_namespaced_replica_set(ns, _replicaset("high", replicas=1, cpu="1", priority="high"))

    wait_for(
        lambda: any(p.status.phase == "Running" for p in _pods(k, ns, "high-")),
        SLOW, what="the high pod running, one low pod taken past the budget", operator=op,
    )  # fmt: skip
    assert len({p.metadata.uid for p in _pods(k, ns, "low-")} & first) == 3

    def told() -> list[str]:
        events = k.core.list_namespaced_event(ns).items
        return [
            e.message or ""
            for e in events
            if e.reason == "Preempted" and e.involved_object.name.startswith("low-")
        ]

    [said] = wait_for(told, SLOW, what="the victim's Preempted event", operator=op)
    assert "deleted past its disruption budget" in said, said
    assert f"PodDisruptionBudget {ns}/keep-low (0 disruptions allowed" in said, said
    assert "blocked by a PodDisruptionBudget" not in op.log()


def test_reclaim_takes_back_what_another_queue_borrowed_and_the_pods_come_back_pending(
    cluster: LocalControlPlane, k: Kube, start_operator: Start
) -> None:
    cluster.kwok_node("kwok-1", cpu="4")
    _priorities(k)
    k.set_config(RECLAIM_CONFIG)
    k.queue(queue("lender"))
    k.queue(queue("owner"))
    ns = k.namespace("reclaim")
    apps = client.AppsV1Api(k.api)
    apps.create_namespaced_replica_set(
        ns, _replicaset("borrow", replicas=4, cpu="1", priority="low", queue_name="lender")
    )
    op = start_operator()
    wait_for(
        lambda: sum(p.status.phase == "Running" for p in _pods(k, ns, "borrow-")) == 4,
        SLOW, what="queue lender borrowing the whole node", operator=op,
    )  # fmt: skip
    first = {p.metadata.uid for p in _pods(k, ns, "borrow-")}
    apps.create_namespaced_replica_set(
        ns, _replicaset("own", replicas=2, cpu="1", priority="low", queue_name="owner")
    )
    wait_for(
        lambda: sum(p.status.phase == "Running" for p in _pods(k, ns, "own-")) == 2,
        SLOW, what="queue owner's pods running on what reclaim took back", operator=op,
    )  # fmt: skip
    borrow = _pods(k, ns, "borrow-")
    assert len([p for p in borrow if p.metadata.uid in first]) == 2
    assert [p for p in borrow if p.metadata.uid not in first and not p.spec.node_name]
