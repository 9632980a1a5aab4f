"""A PodGroup deleted and made again over its running pods keeps what they were bound under
(docs/tenancy.md "A PodGroup made again over its pods"), against the real apiserver.

The defect: the admission policies fix an admitted PodGroup's queue and class on update only, and the
minMember a gang started with was recorded on the object. A tenant who deleted its running gang's
PodGroup and created it again with minMember 4 over its 4 running pods (in another queue) kept every one
of them from reclaim. Each bind now writes on the pod, in the Binding itself, what the pod was bound
under (``scheduling.volsched.io/bound-under``: the PodGroup's uid, queue, class, priority, minMember at
start); the new object is held to it while those pods run, and its ``MinMemberProtected`` condition says
so. A new operator reads it back from the pods.

Each wait is for the event that proves the outcome (a condition written, pods bound), never for time."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.operator_fixtures import (
    BOUND_UNDER,
    GROUP,
    VERSION,
    Kube,
    Start,
    pod,
    podgroup,
    queue,
    record_verified,
    team_b_reclaims,
    two_teams,
    wait_for,
)

pytestmark = pytest.mark.cluster


def _condition(k: Kube, ns: str, name: str, kind: str) -> dict[str, Any] | None:
    conds = (k.get_podgroup(ns, name).get("status") or {}).get("conditions") or []
    return {c["type"]: c for c in conds}.get(kind)


def _records(k: Kube, ns: str) -> dict[str, dict[str, Any]]:
    """The records on the pods of ``ns`` on a node, each verified with the operator's key (its signature
    taken off: None for one that does not verify)."""
    return {
        p.metadata.name: json.loads(record_verified(k, ns, p.metadata.name) or "null")
        for p in k.core.list_namespaced_pod(ns).items
        if p.spec.node_name and BOUND_UNDER in (p.metadata.annotations or {})
    }


@pytest.mark.parametrize("restart", [False, True], ids=["while-running", "while-no-operator-runs"])
def test_a_podgroup_made_again_over_running_pods_keeps_no_more_of_them_from_reclaim(
    k: Kube, start_operator: Start, restart: bool
) -> None:
    ns_a, ns_b = two_teams(k, "tenant")
    k.queue(queue("qc"))
    first = k.podgroup(ns_a, podgroup("a", 1, queue="qa"))
    k.pods(ns_a, *(pod(f"a-{i}", cpu="1", group="a") for i in range(4)))
    op = start_operator()
    wait_for(lambda: len(_records(k, ns_a)) == 4, 30, what="qa borrows the whole node", operator=op)
    # The bind wrote the record on each pod, in the same request (the Binding's annotations).
    assert set(map(json.dumps, _records(k, ns_a).values())) == {
        json.dumps(
            {"podGroup": first["metadata"]["uid"], "queue": "qa", "priorityClassName": "", "priority": 0,
             "minMember": 1}
        )
    }  # fmt: skip
    if restart:
        op.stop()
    k.custom.delete_namespaced_custom_object(GROUP, VERSION, ns_a, "podgroups", "a")
    wait_for(
        lambda: "a" not in {g["metadata"]["name"] for g in k.custom.list_namespaced_custom_object(
            GROUP, VERSION, ns_a, "podgroups")["items"]},
        30,
        what="the PodGroup gone",
    )  # fmt: skip
    k.podgroup(ns_a, podgroup("a", 4, queue="qc"))  # made again: the pods running, minMember 4
    if restart:
        op = start_operator()
    # The new object is held to the record of the pods running: the minMember they started with.
    cond = wait_for(
        lambda: (
            (c := _condition(k, ns_a, "a", "MinMemberProtected")) and c["reason"] == "RaisedAfterStart" and c
        ),
        30,
        what="the new object's record",
        operator=op,
    )
    assert cond["message"].endswith("(started with minMember 1)"), cond
    # qb deserves half the node (a's pods are qa's still): reclaim takes two of a's four back (before
    # the fix: none, the new object's minMember 4 kept them all).
    team_b_reclaims(k, ns_b, op, pods=2, cpu="1")
    assert len(k.bound(ns_a)) == 2
    op.check_running()
