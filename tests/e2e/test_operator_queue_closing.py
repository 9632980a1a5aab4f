"""A Queue that jobs still hold is not deleted out from under them (real apiserver): the operator keeps a
finalizer on every Queue of ours; deleted, the Queue is closed (it admits nothing new) and says Closing
while its jobs run, and goes once none is left."""

from __future__ import annotations

import pytest
from kubernetes.client import ApiException

from tests.e2e.operator_fixtures import Kube, Start, node, pod, podgroup, queue, wait_for

pytestmark = pytest.mark.cluster

G, V = "scheduling.volsched.io", "v1beta1"


def _gone(k: Kube, name: str) -> bool:
    try:
        k.get_queue(name)
    except ApiException as exc:
        return exc.status == 404
    return False


def test_a_queue_in_use_is_closing_until_its_jobs_are_gone(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="4"))
    k.queue(queue("default"))
    k.queue(queue("q"))
    ns = k.namespace("team")
    k.podgroup(ns, podgroup("job", 1, queue="q"))
    k.pods(ns, pod("job-0", group="job"))
    start_operator()
    wait_for(lambda: k.bound(ns), 30, what="the job bound")
    finalizer = "scheduling.volsched.io/queue-in-use"
    wait_for(lambda: finalizer in (k.get_queue("q")["metadata"].get("finalizers") or []), 30, what="guarded")

    k.custom.delete_cluster_custom_object(G, V, "queues", "q")
    wait_for(lambda: (k.get_queue("q").get("status") or {}).get("state") == "Closing", 30, what="Closing")
    assert k.get_queue("q")["metadata"].get("deletionTimestamp")
    # Closed to new work meanwhile: a new PodGroup in it is told so, and waits.
    k.podgroup(ns, podgroup("late", 1, queue="q"))
    k.pods(ns, pod("late-0", group="late"))
    wait_for(
        lambda: any(
            "queue q is closed" in (e.message or "")
            for e in k.core.list_namespaced_event(ns).items
            if e.involved_object.name == "late"
        ),
        30,
        what="the late job told the queue is closed",
    )
    assert set(k.bound(ns)) == {f"{ns}/job-0"}

    for name in ("job", "late"):
        k.custom.delete_namespaced_custom_object(G, V, ns, "podgroups", name)
    for name in ("job-0", "late-0"):
        k.core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    wait_for(lambda: _gone(k, "q"), 60, what="the queue deleted once no job holds it")
    assert not _gone(k, "default")  # an unused queue keeps its finalizer until it is deleted
    assert finalizer in (k.get_queue("default")["metadata"].get("finalizers") or [])
