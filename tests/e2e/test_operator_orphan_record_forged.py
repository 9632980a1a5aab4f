"""A tenant's running pods whose PodGroup it deleted, their bound-under record rewritten while no operator
runs (no pod admission policy: Kubernetes before 1.30, or ``podQueueFixed: false``), against the real
apiserver. The defect (note14 Found 1): the operator that starts next took the record as its own word,
so the pods counted in the queue it named, another team's, at the priority it chose, and that team's
own pods could not take their share back. The record is now asked what a PodGroup is asked: the queue
qb does not take the tenant's namespace, so the pods count in the namespace's default queue qa at their
own priority, told why, and team b reclaims its half of the node from them (docs/tenancy.md "A PodGroup
deleted and not made again")."""

from __future__ import annotations

import json

import pytest

from tests.e2e.operator_fixtures import (
    BOUND_UNDER,
    GROUP,
    VERSION,
    Kube,
    Start,
    podgroup,
    qa_gang_running,
    queue_cpu,
    team_b_reclaims,
    told_gone,
    two_teams,
    wait_for,
)

pytestmark = pytest.mark.cluster


def _forged(k: Kube, start_operator: Start, *, made_again: bool) -> tuple[str, str]:
    """qa's gang a of 4 bound by an operator, then, while none runs, its PodGroup deleted (and made
    again in qa, if ``made_again``) and its pods' records rewritten to team b's queue qb at a priority no
    class gives. Returns the two teams' namespaces."""
    ns_a, ns_b = two_teams(k, "forged", fenced=True)
    op = qa_gang_running(k, ns_a, start_operator)
    op.stop()

    # While no operator runs, the tenant deletes its gang's PodGroup and rewrites its pods' records:
    # team b's queue, at a priority no class gives.
    k.custom.delete_namespaced_custom_object(GROUP, VERSION, ns_a, "podgroups", "a")
    for i in range(4):
        record = json.loads(k.core.read_namespaced_pod(f"a-{i}", ns_a).metadata.annotations[BOUND_UNDER])
        forged = {**record, "queue": "qb", "priority": 1_000_000}
        k.core.patch_namespaced_pod(
            f"a-{i}", ns_a, {"metadata": {"annotations": {BOUND_UNDER: json.dumps(forged)}}}
        )
    if made_again:
        k.podgroup(ns_a, podgroup("a", 4, queue="qa"))
    return ns_a, ns_b


def test_a_record_forged_while_no_operator_runs_does_not_charge_another_teams_queue(
    k: Kube, start_operator: Start
) -> None:
    ns_a, ns_b = _forged(k, start_operator, made_again=False)
    op = start_operator()
    told_gone(
        k,
        op,
        ns_a,
        "a-0",
        "it counts in queue qa, its namespace's default queue, at its own priority 0",
        "queue qb does not take jobs of namespace forged-a",
    )
    wait_for(lambda: queue_cpu(k, "qa") == "4", 30, what="queue qa charged for its pods", operator=op)
    assert queue_cpu(k, "qb") == "0"  # before: 4, team b's queue charged for team a's pods
    team_b_reclaims(k, ns_b, op, pods=2, cpu="1")
    # reclaim took two of team a's four back (before: qb was past its share already, holding them, and
    # the forged priority kept them from preempt)
    assert len(k.bound(ns_a)) == 2
    op.check_running()


def test_a_group_made_again_over_pods_with_a_forged_record_is_not_held_to_it(
    k: Kube, start_operator: Start
) -> None:
    """note15 Found 5: the PodGroup made again (in qa) while no operator ran was held to the forged
    record as it was: its gang counted in team b's queue at priority 1,000,000, and team b reclaimed
    nothing. The record a group is held to is asked what an orphan's is: refused, the group counts as
    its object says (qa), told why on the PodGroup (BoundUnderRefused)."""
    ns_a, _ = _forged(k, start_operator, made_again=True)
    op = start_operator()
    wait_for(
        lambda: any(
            e.reason == "BoundUnderRefused"
            and e.involved_object.kind == "PodGroup"
            and e.involved_object.name == "a"
            and "(queue qb, priority 1000000, minMember 4) is not taken: queue qb does not take jobs of "
            "namespace forged-a"
            in (e.message or "")
            and "it counts as its object says (queue qa)" in (e.message or "")
            for e in k.core.list_namespaced_event(ns_a).items
        ),
        30,
        what="PodGroup a told its record is not taken",
        operator=op,
    )
    wait_for(lambda: queue_cpu(k, "qa") == "4", 30, what="queue qa charged for its gang", operator=op)
    assert queue_cpu(k, "qb") == "0"  # before: 4, the group held to the forged record's queue
    # (Team b reclaims none of them here: a gang made again with minMember 4 over its 4 running pods
    # keeps them whole, as its object says, whatever record it is held to.)
    op.check_running()
