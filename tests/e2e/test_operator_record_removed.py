"""Pods of ours on a node with no PodGroup and no record of a bind by volsched, against the real apiserver
(no pod admission policy: Kubernetes before 1.30, or ``podQueueFixed: false``). The defect: while an
operator runs, a record removed is not taken (the record taken first stands), but the operator that
starts next read such a pod as one bound before records existed: foreign, holding its room, counted by
no queue and evicted by nothing. So a tenant who removed its running gang's records while no operator ran
and deleted its PodGroup, or who made pods on a node (``spec.nodeName``) naming a PodGroup never made,
held that room outside every share, and the other team's pods waited for ever. Such a pod now counts in
its namespace's default queue at its own priority, told why, and the other team reclaims its half of the
node from it (docs/tenancy.md "A PodGroup deleted and not made again")."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import (
    BOUND_UNDER,
    GROUP,
    VERSION,
    Kube,
    Start,
    pod,
    qa_gang_running,
    queue_cpu,
    team_b_reclaims,
    told_gone,
    two_teams,
    wait_for,
)

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("how", ["record removed", "made on its node"])
def test_a_pod_with_no_record_and_no_podgroup_counts_in_its_namespaces_default_queue(
    k: Kube, start_operator: Start, how: str
) -> None:
    ns_a, ns_b = two_teams(k, f"no-record-{how.split()[0]}", fenced=True)  # (ns_a's default queue: qa)
    if how == "record removed":
        op = qa_gang_running(k, ns_a, start_operator)
        op.stop()
        # While no operator runs, the tenant removes its pods' records and deletes their PodGroup.
        for i in range(4):
            k.core.patch_namespaced_pod(f"a-{i}", ns_a, {"metadata": {"annotations": {BOUND_UNDER: None}}})
        k.custom.delete_namespaced_custom_object(GROUP, VERSION, ns_a, "podgroups", "a")
    else:
        made = [pod(f"a-{i}", cpu="1", group="never") for i in range(4)]
        for obj in made:
            obj["spec"]["nodeName"] = "n1"  # (bound by no one: made on its node)
        k.pods(ns_a, *made)
    assert all(
        BOUND_UNDER not in (p.metadata.annotations or {}) for p in k.core.list_namespaced_pod(ns_a).items
    )
    op = start_operator()
    told_gone(
        k,
        op,
        ns_a,
        "a-0",
        "it counts in queue qa, its namespace's default queue, at its own priority 0",
        "it carries no record of a bind by volsched",
    )
    wait_for(
        lambda: queue_cpu(k, "qa") == "4", 30, what="queue qa charged for the pods", operator=op
    )  # before: 0
    # qb deserves half the node: reclaim takes two of the four back (before: none, foreign to sessions).
    team_b_reclaims(k, ns_b, op, pods=2, cpu="1")
    assert len(k.bound(ns_a)) == 2
    op.check_running()
