"""A bound-under record added to a pod on its node that had none (note14 Found 5 and note15 Found 2, the
part that holds while an operator runs), against the real apiserver: a pod bound by someone else at
creation (or by a volsched before records) sits in a tenant's gang, running or still pending on its node
(its image pulling); without the pod policy the tenant adds a record naming another queue, then deletes
the PodGroup. The operator took the record, so the pod counted in the queue it named (7d2221e refused it
only for a pod seen running); a bind writes its record with the node, in one update, so one that comes
after the API showed the pod on a node is not taken: the pod counts as one without a record, in its
namespace's default queue, not in the queue the record names (docs/tenancy.md)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.operator_fixtures import (
    BOUND_UNDER,
    GROUP,
    VERSION,
    Kube,
    Start,
    node,
    pod,
    podgroup,
    queue,
    queue_cpu,
    wait_for,
)

pytestmark = pytest.mark.cluster

QUEUE = "scheduling.volsched.io/queue-name"


@pytest.mark.parametrize("running", [True, False], ids=["running", "pending on its node"])
def test_a_record_added_to_a_pod_on_its_node_without_one_is_not_taken(
    k: Kube, start_operator: Start, running: bool
) -> None:
    k.nodes(node("n1", cpu="4"))
    k.queue(queue("qa"))
    k.queue(queue("qb"))
    ns = k.namespace("record-added")
    k.podgroup(ns, podgroup("g", 1, queue="qa"))
    bound = pod("p", cpu="2", group="g")
    bound["spec"]["nodeName"] = "n1"  # bound by someone else, at creation: no record
    k.pods(ns, bound)
    if running:
        k.core.patch_namespaced_pod_status("p", ns, {"status": {"phase": "Running"}})
    op = start_operator()
    wait_for(lambda: queue_cpu(k, "qa") == "2", 30, what="queue qa counting p", operator=op)

    k.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, "podgroups", "g")
    wait_for(lambda: queue_cpu(k, "qa") == "0", 30, what="p out of qa, its group gone", operator=op)
    forged = {"podGroup": "x", "queue": "qb", "priorityClassName": "", "priority": 0, "minMember": 1}
    k.core.patch_namespaced_pod("p", ns, {"metadata": {"annotations": {BOUND_UNDER: json.dumps(forged)}}})
    # A pod standing alone in qa, made after the patch: the operator reads pod events in order, so the
    # session whose count of qa shows it had read p's record too.
    sentinel = pod("s", cpu="1")
    sentinel["metadata"]["annotations"] = {QUEUE: "qa"}
    k.pods(ns, sentinel)
    wait_for(lambda: queue_cpu(k, "qa") == "1", 30, what="queue qa counting s", operator=op)
    # Before: 2, an orphan counted in the queue its added record named (for a pod pending on its node,
    # until note15 Found 2).
    assert queue_cpu(k, "qb") == "0"
    assert k.core.read_namespaced_pod("p", ns).status.phase == ("Running" if running else "Pending")

    def told() -> list[str]:
        return [
            e.message or ""
            for e in k.core.list_namespaced_event(ns).items
            if e.reason == "PodGroupGone" and e.involved_object.name == "p"
        ]

    wait_for(told, 30, what="p told where it counts", operator=op)
    assert all(
        "it counts in queue default, its namespace's default queue" in m
        and "it carries no record of a bind by volsched" in m
        for m in told()
    ), told()
    op.check_running()
