"""Kubernetes 1.37's own gang scheduling objects (the Workload API, scheduling.k8s.io/v1beta1) run under
volsched unchanged: a Workload, a PodGroup made from its template, pods naming it in
``spec.schedulingGroup.podGroupName``. The apiserver serves them only with the GenericWorkload feature gate
and the group's runtime config (:data:`WORKLOAD_API`); kwok's nodes run the pods.

Each wait is for the event that proves the outcome (a condition written, an event posted, a pod bound or
finished), never for time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.e2e.operator_fixtures import (
    JOBS_GATES,
    WORKLOAD_API,
    WORKLOAD_WITH_JOB,
    Kube,
    Start,
    free_port,
    queue,
    real_cluster,
    wait_for,
)
from volsched_dev.devcluster import RUN_FOR, LocalControlPlane

pytestmark = pytest.mark.cluster
G, V = "scheduling.k8s.io", "v1beta1"
SLOW = 120


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[LocalControlPlane]:
    """The Workload API served; with the ``jobs`` parameter, the Job controller making Workloads too."""
    if getattr(request, "param", None) == "jobs":
        yield from real_cluster(apiserver_args=WORKLOAD_WITH_JOB, controller_manager_args=(JOBS_GATES,))
    else:
        yield from real_cluster(apiserver_args=WORKLOAD_API)


def _workload(name: str, template: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "podGroupTemplates": [{"name": template, "schedulingPolicy": {"gang": {"minCount": min_count}}}]
        },
    }


def _podgroup(workload: str, template: str, min_count: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "PodGroup",
        "metadata": {"name": f"{workload}-{template}"},
        "spec": {
            "workloadRef": {"workloadName": workload, "templateName": template},
            "schedulingPolicy": {"gang": {"minCount": min_count}},
            **spec,
        },
    }


def _pod(name: str, group: str, *, cpu: str, run_for: str = "3s") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": {RUN_FOR: run_for}},
        "spec": {
            "schedulerName": "volsched",
            "schedulingGroup": {"podGroupName": group},
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def test_a_workloads_pod_group_is_gang_scheduled_runs_and_a_field_volsched_does_not_honour_is_refused(
    cluster: LocalControlPlane, k: Kube, start_operator: Start
) -> None:
    for n in ("kwok-1", "kwok-2"):
        cluster.kwok_node(n, cpu="4")
    ns = k.namespace("workload")
    custom = k.custom
    custom.create_namespaced_custom_object(G, V, ns, "workloads", _workload("train", "workers", 3))
    custom.create_namespaced_custom_object(G, V, ns, "podgroups", _podgroup("train", "workers", 3))
    # Three pods of 3 cpu on two nodes of 4: two would fit one by one, the gang of three does not.
    workers = [f"worker-{i}" for i in range(3)]
    k.pods(ns, *(_pod(w, "train-workers", cpu="3") for w in workers))
    # All at once (disruptionMode all) is not what volsched does: that PodGroup is refused, saying why.
    custom.create_namespaced_custom_object(G, V, ns, "workloads", _workload("eval", "all", 1))
    custom.create_namespaced_custom_object(
        G, V, ns, "podgroups", _podgroup("eval", "all", 1, disruptionMode={"all": {}})
    )
    k.pods(ns, _pod("eval-0", "eval-all", cpu="1"))
    op = start_operator()

    def condition(name: str) -> dict[str, Any] | None:
        pg = custom.get_namespaced_custom_object(G, V, ns, "podgroups", name)
        conds = (pg.get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == "PodGroupInitiallyScheduled"), None)

    waiting = wait_for(
        lambda: (c := condition("train-workers")) and c["status"] == "False" and c,
        SLOW, what="the gang's PodGroupInitiallyScheduled=False", operator=op,
    )  # fmt: skip
    assert waiting["reason"] == "Unschedulable", waiting
    assert not any(k.bound(ns).get(f"{ns}/{w}") for w in workers), "a gang of 3 was bound in part"

    refused = wait_for(
        lambda: [
            e for e in k.core.list_namespaced_event(ns).items
            if e.involved_object.name == "eval-all" and "disruptionMode" in (e.message or "")
        ],
        SLOW, what="the refused PodGroup's event", operator=op,
    )  # fmt: skip
    assert refused[0].involved_object.kind == "PodGroup"
    assert refused[0].involved_object.api_version == f"{G}/{V}"
    told = wait_for(
        lambda: [
            c for c in k.core.read_namespaced_pod("eval-0", ns).status.conditions or []
            if c.type == "PodScheduled" and "rejected" in (c.message or "")
        ],
        SLOW, what="the refused group's pod told why", operator=op,
    )  # fmt: skip
    assert "disruptionMode" in told[0].message
    assert not k.bound(ns).get(f"{ns}/eval-0")

    cluster.kwok_node("kwok-3", cpu="4")  # room for the whole gang now
    done = wait_for(
        lambda: (c := condition("train-workers")) and c["status"] == "True" and c,
        SLOW, what="the gang's PodGroupInitiallyScheduled=True", operator=op,
    )  # fmt: skip
    assert done["reason"] == "Scheduled"
    bound = k.bound(ns)
    assert sorted(bound[f"{ns}/{w}"] for w in workers) == ["kwok-1", "kwok-2", "kwok-3"]

    def phases() -> set[str]:
        return {k.core.read_namespaced_pod(w, ns).status.phase for w in workers}

    wait_for(
        lambda: phases() == {"Succeeded"}, SLOW, what="the gang's pods run and finish (kwok)", operator=op
    )
    assert "reading Kubernetes' Workload API podgroups" in op.log()


@pytest.mark.parametrize("cluster", ["jobs"], indirect=True)
def test_a_batch_job_with_a_gang_policy_is_gang_scheduled_and_completes(
    cluster: LocalControlPlane, k: Kube, start_operator: Start
) -> None:
    """A Job written for kube-scheduler's gangs (``spec.scheduling``, Kubernetes 1.37's WorkloadWithJob):
    the Job controller makes its Workload and PodGroup and gives its pods ``spec.schedulingGroup``;
    volsched binds the three together once they fit, and the Job completes."""
    for n in ("kwok-1", "kwok-2"):
        cluster.kwok_node(n, cpu="4")
    ns = k.namespace("jobs")
    pod = _pod("unused", "unused", cpu="3")
    del pod["spec"]["schedulingGroup"]  # the Job controller sets it
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {
            "parallelism": 3,
            "completions": 3,
            "scheduling": {"schedulingPolicy": {"gang": {"minCount": 3}}},
            "template": {"metadata": {"annotations": pod["metadata"]["annotations"]}, "spec": pod["spec"]},
        },
    }
    batch = client.BatchV1Api(k.api)
    batch.create_namespaced_job(ns, job)  # type: ignore[arg-type]  # (a dict goes as it is)
    op = start_operator()

    def group() -> dict[str, Any] | None:
        items = k.custom.list_namespaced_custom_object(G, V, ns, "podgroups")["items"]
        return items[0] if items else None

    pg = wait_for(group, SLOW, what="the Job controller's PodGroup", operator=op)
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}

    def condition() -> dict[str, Any] | None:
        conds = ((group() or {}).get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == "PodGroupInitiallyScheduled"), None)

    wait_for(
        lambda: (c := condition()) and c["status"] == "False",
        SLOW, what="the gang waiting (two nodes of 4 cpu, three pods of 3)", operator=op,
    )  # fmt: skip
    assert k.bound(ns) == {}, "a gang of 3 was bound in part"
    cluster.kwok_node("kwok-3", cpu="4")
    wait_for(lambda: len(k.bound(ns)) == 3, SLOW, what="the three pods bound together", operator=op)

    def complete() -> bool:
        conditions = batch.read_namespaced_job("train", ns).status.conditions or []
        return any(c.type == "Complete" and c.status == "True" for c in conditions)

    wait_for(complete, SLOW, what="the Job complete (kwok runs its pods)", operator=op)


def test_a_tenant_cannot_run_a_workload_gang_in_a_queue_not_its_own_nor_move_one_there(
    cluster: LocalControlPlane, k: Kube, start_operator: Start
) -> None:
    """A pod let in before its Kubernetes PodGroup was known (here: before the webhooks were up) runs only
    where its group's queue allows, whatever its own annotation names: the scheduler holds it pending,
    told why. With the webhooks up, the group's next pod is refused, and so is a group (Kubernetes' own
    too) naming that queue, or one moved there while its gang runs, which would hold that queue's share."""
    cluster.kwok_node("kwok-1", cpu="4")
    k.queue(queue("default"))
    k.queue(queue("team-a", namespaceSelector={"matchLabels": {"team": "a"}}))
    k.queue(queue("shared"))
    ns = "team-b"
    k.core.create_namespace({"metadata": {"name": ns, "labels": {"team": "b"}}})

    def in_queue(obj: dict[str, Any], name: str) -> dict[str, Any]:
        obj["metadata"].setdefault("annotations", {})["scheduling.volsched.io/queue-name"] = name
        return obj

    def create(plural: str, obj: dict[str, Any]) -> str | None:
        """Create ``obj``: None when let in, else the refusal's message."""
        try:
            if plural == "pods":
                k.core.create_namespaced_pod(ns, obj)
            else:
                k.custom.create_namespaced_custom_object(G, V, ns, plural, obj)
        except ApiException as exc:
            return str(json.loads(exc.body or "{}").get("message") or exc.reason)
        return None

    def refused(plural: str, obj: dict[str, Any]) -> str | None:
        """The refusal; let in (the webhook not in place yet, the cache behind): deleted, and None."""
        said = create(plural, obj)
        if said is not None and "already exists" in said:
            return None  # (the one let in a moment ago, still going)
        if said is None:
            name = obj["metadata"]["name"]
            if plural == "pods":
                k.core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
            else:
                k.custom.delete_namespaced_custom_object(G, V, ns, plural, name)
        return said

    # Before any webhook: the pod names the open queue, its group the queue that refuses the namespace.
    assert create("pods", in_queue(_pod("steal-0", "steal-workers", cpu="1"), "shared")) is None
    assert create("podgroups", in_queue(_podgroup("steal", "workers", 1), "team-a")) is None
    op = start_operator("--webhook-port", str(free_port()))
    rule = "queue team-a does not take jobs of namespace team-b (its namespaceSelector: team=a)"
    wait_for(
        lambda: [
            e for e in k.core.list_namespaced_event(ns).items
            if e.involved_object.name == "steal-workers" and rule in (e.message or "")
        ],
        SLOW, what="the group held pending, told the rule", operator=op,
    )  # fmt: skip

    # With the webhooks up, the group's next pod is checked against the group's queue, not its own.
    said = wait_for(
        lambda: refused("pods", in_queue(_pod("steal-1", "steal-workers", cpu="1"), "shared")),
        SLOW,
        what="the group's next pod refused at admission",
        operator=op,
    )
    assert rule in said
    said = wait_for(
        lambda: refused("podgroups", in_queue(_podgroup("other", "workers", 1), "team-a")),
        SLOW,
        what="a Kubernetes PodGroup naming team-a refused at admission",
        operator=op,
    )
    assert rule in said

    # A gang running in the open queue, then moved to team-a: refused, it stays where it runs.
    assert create("podgroups", in_queue(_podgroup("mine", "workers", 1), "shared")) is None
    assert create("pods", _pod("mine-0", "mine-workers", cpu="1", run_for="1h")) is None
    wait_for(
        lambda: k.bound(ns).get(f"{ns}/mine-0"), SLOW, what="the gang in the open queue bound", operator=op
    )
    with pytest.raises(ApiException) as moved:
        k.custom.patch_namespaced_custom_object(
            G, V, ns, "podgroups", "mine-workers",
            {"metadata": {"annotations": {"scheduling.volsched.io/queue-name": "team-a"}}},
        )  # fmt: skip
    assert rule in json.loads(moved.value.body)["message"]
    assert set(k.bound(ns)) == {f"{ns}/mine-0"}  # the pod let in before the webhooks never ran
