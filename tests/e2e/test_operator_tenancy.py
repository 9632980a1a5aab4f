"""A tenant with namespace-scoped RBAC only (a service account's token on the real apiserver) tries
each way around a queue's rules; each is refused by the scheduler, the reason on the tenant's own
objects where the tenant can read it (docs/tenancy.md). No admission webhook is in front."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client import ApiException

from tests.e2e.operator_fixtures import RECLAIM_CONFIG, Kube, Start, node, pod, podgroup, queue, wait_for
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

NS = "team-b"
TENANT = "tenant"


def _tenant_role(k: Kube) -> None:
    """Pods and PodGroups in its own namespace, and reading its events: nothing cluster-wide."""
    rbac = client.RbacAuthorizationV1Api(k.api)
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "list", "watch", "delete"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": ["scheduling.volsched.io"],
            "resources": ["podgroups"],
            "verbs": ["create", "get", "list"],
        },
    ]
    rbac.create_namespaced_role(NS, {"metadata": {"name": TENANT}, "rules": rules})
    rbac.create_namespaced_role_binding(
        NS,
        {
            "metadata": {"name": TENANT},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": TENANT},
            "subjects": [{"kind": "ServiceAccount", "name": TENANT, "namespace": NS}],
        },
    )


@pytest.fixture
def tenant(k: Kube, cluster: LocalControlPlane) -> Iterator[Kube]:
    k.core.create_namespace(
        {
            "metadata": {
                "name": NS,
                "labels": {"team": "b"},
                "annotations": {"scheduling.volsched.io/default-queue": "shared"},
            }
        }
    )
    _tenant_role(k)
    token = cluster.service_account_token(NS, TENANT)
    path = cluster.write_kubeconfig(cluster.workdir / "tenant.kubeconfig", token=token)
    api = config.new_client_from_config(config_file=str(path))
    try:
        yield Kube(api)
    finally:
        api.close()


def _said(t: Kube, name: str) -> list[str]:
    """What the tenant can read about its object ``name``: the messages of its events."""
    return [e.message or "" for e in t.core.list_namespaced_event(NS).items if e.involved_object.name == name]


def _told(t: Kube, name: str, text: str) -> None:
    wait_for(lambda: any(text in m for m in _said(t, name)), 30, what=f"{name} told: {text}")


def _allocated(k: Kube, name: str) -> str:
    return str(((k.get_queue(name).get("status") or {}).get("allocated") or {}).get("cpu") or "")


def _in_queue(queue_name: str, obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"].setdefault("annotations", {})["scheduling.volsched.io/queue-name"] = queue_name
    return obj


def test_a_tenant_cannot_walk_around_its_queues_rules(k: Kube, tenant: Kube, start_operator: Start) -> None:
    client.SchedulingV1Api(k.api).create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    k.nodes(node("n1", cpu="8"))
    k.queue(queue("default"))
    k.queue(queue("team-a", namespaceSelector={"matchLabels": {"team": "a"}}))
    k.queue(queue("shared", perNamespace={"maxRunningJobs": 1}))
    k.queue(queue("capped", maxPriority=100))
    start_operator()

    # The tenant's rights are its namespace's only: no Queue of its own, no other namespace.
    with pytest.raises(ApiException) as refused:
        tenant.queue(queue("mine"))
    assert refused.value.status == 403
    with pytest.raises(ApiException):
        tenant.core.list_namespaced_pod("default")

    # Another team's queue: the PodGroup stays pending, told why.
    tenant.podgroup(NS, podgroup("steal", 1, queue="team-a"))
    tenant.pods(NS, pod("steal-0", group="steal"))
    _told(
        tenant, "steal", "queue team-a does not take jobs of namespace team-b (its namespaceSelector: team=a)"
    )

    # A class above the queue's ceiling.
    tenant.pods(NS, _in_queue("capped", pod("loud", priority_class="high")))
    _told(tenant, "loud", "priority 1000 is above queue capped's maxPriority 100")

    # System-critical priority outside kube-system: refused by the apiserver (a cluster that limits
    # the class by quota), or admitted at 2e9 and then held by the scheduler.
    try:
        tenant.pods(NS, _in_queue("default", pod("crit", priority_class="system-cluster-critical")))
    except ApiException as exc:
        assert exc.status == 403
    else:
        _told(tenant, "crit", "priority class system-cluster-critical is for kube-system")

    # The namespace's default queue (shared) takes the jobs that name none, one running at a time.
    tenant.pods(NS, pod("one"))
    wait_for(lambda: tenant.bound(NS) == {f"{NS}/one": "n1"}, 30, what="the first job in shared bound")
    wait_for(lambda: _allocated(k, "shared") and not _allocated(k, "default"), 30, what="held by shared")
    tenant.pods(NS, pod("two"))
    _told(tenant, "two", "namespace team-b runs 1 jobs in queue shared, its perNamespace.maxRunningJobs is 1")
    assert tenant.bound(NS) == {f"{NS}/one": "n1"}  # nothing the tenant tried was bound


@pytest.mark.parametrize("allowed", [False, True], ids=["queue-does-not-allow", "queue-allows"])
def test_a_tenants_not_preemptable_pods_are_protected_only_where_the_queue_allows_it(
    k: Kube, tenant: Kube, start_operator: Start, allowed: bool
) -> None:
    k.set_config(RECLAIM_CONFIG)
    sched = client.SchedulingV1Api(k.api)
    for name, value in (("low", 10), ("high", 1000)):
        sched.create_priority_class({"metadata": {"name": name}, "value": value})
    k.nodes(node("n1", cpu="2"))
    k.queue(queue("default"))
    k.queue(queue("shared", allowNotPreemptable=allowed))
    start_operator()
    # the tenant fills the node with a gang that may lose one pod (minMember 1), each pod saying it may
    # not be preempted
    tenant.podgroup(NS, podgroup("mine", 1, queue="shared", priority_class="low"))
    for i in range(2):
        obj = pod(f"mine-{i}", group="mine", priority_class="low")
        obj["metadata"]["annotations"]["scheduling.volsched.io/preemptable"] = "false"
        obj["spec"]["terminationGracePeriodSeconds"] = 30  # stays Terminating once evicted: readable
        tenant.pods(NS, obj)
    wait_for(lambda: len(tenant.bound(NS)) == 2, 30, what="the tenant's pods bound")
    ops = k.namespace("ops")
    k.pods(ops, _in_queue("shared", pod("urgent", priority_class="high")))

    def evicted() -> list[str]:
        return [
            p.metadata.name
            for p in tenant.core.list_namespaced_pod(NS).items
            if p.metadata.deletion_timestamp
        ]

    if allowed:
        # the session that told the urgent pod it waits ran preempt too: nothing of the tenant's went
        wait_for(
            lambda: [
                e for e in k.core.list_namespaced_event(ops).items if e.involved_object.name == "urgent"
            ],
            30,
            what="the urgent pod told it waits",
        )
        assert evicted() == [] and k.bound(ops) == {}
    else:
        wait_for(evicted, 30, what="a pod of the tenant's preempted despite its annotation")
        assert len(evicted()) == 1
        wait_for(
            lambda: (
                "Preempted" in {r for r in (e.reason for e in tenant.core.list_namespaced_event(NS).items)}
            ),
            30,
            what="the tenant told why",
        )
