"""A tenant who raises minMember on a running gang no longer keeps what its queue borrowed from reclaim
(docs/tenancy.md "Raising minMember on a running gang"), against the real apiserver.

The defect: a gang is never evicted below its minMember, read from its PodGroup as it is now, so raising
``spec.minMember`` to the pods running kept every one of them from reclaim for good. Now reclaim keeps
no more than the minMember the gang was admitted with: the record is in the PodGroup's
``MinMemberProtected`` condition, which names the count kept and why, and which a new operator reads
back (the raise made while none runs counts no more). The gangs start with minMember 2: one of minMember 1
is no gang, and none of its pods is kept whatever its minMember says (docs/starvation.md#who-may-be-a-victim).

Each wait is for the event that proves the outcome (a condition written, pods bound), never for time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.operator_fixtures import (
    GROUP,
    VERSION,
    VV,
    WORKLOAD_API,
    Kube,
    Start,
    V,
    fresh_control_plane,
    install_volcano_crds,
    pod,
    podgroup,
    team_b_reclaims,
    two_teams,
    volcano_podgroup,
    wait_for,
)
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

PROTECTED = "MinMemberProtected"
K8S, K8S_VERSION = "scheduling.k8s.io", "v1beta1"


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[LocalControlPlane]:
    """A fresh control plane; with the ``workload`` parameter, serving the Workload API."""
    args = WORKLOAD_API if getattr(request, "param", None) == "workload" else ()
    with fresh_control_plane(apiserver_args=args) as cp:
        yield cp


def _condition(k: Kube, ns: str, name: str, kind: str) -> dict[str, Any] | None:
    conds = (k.get_podgroup(ns, name).get("status") or {}).get("conditions") or []
    return {c["type"]: c for c in conds}.get(kind)


def _raise(k: Kube, ns: str, name: str, min_member: int) -> None:
    """The tenant's update of its PodGroup's spec (a merge patch, as ``kubectl patch`` sends)."""
    k.custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns, "podgroups", name, {"spec": {"minMember": min_member}}
    )


@pytest.mark.parametrize("restart", [False, True], ids=["while-running", "while-no-operator-runs"])
def test_a_min_member_raised_on_a_running_gang_does_not_keep_borrowed_pods_from_reclaim(
    k: Kube, start_operator: Start, restart: bool
) -> None:
    ns_a, ns_b = two_teams(k, "tenant")
    k.podgroup(ns_a, podgroup("a", 2, queue="qa"))
    k.pods(ns_a, *(pod(f"a-{i}", cpu="1", group="a") for i in range(4)))
    op = start_operator()
    wait_for(lambda: len(k.bound(ns_a)) == 4, 30, what="qa borrows the whole node", operator=op)
    if restart:
        # The record the first operator wrote is what the next one reads back.
        cond = wait_for(lambda: _condition(k, ns_a, "a", PROTECTED), 30, what="the record", operator=op)
        assert cond["message"] == "reclaim and preempt keep 2 of its pods (started with minMember 2)"
        op.stop()
        _raise(k, ns_a, "a", 4)
        op = start_operator()
    else:
        _raise(k, ns_a, "a", 4)
        # The operator has seen the raise once the gang's status says minimum 4.
        wait_for(
            lambda: "of 4 minimum" in ((_condition(k, ns_a, "a", "Scheduled") or {}).get("message") or ""),
            30,
            what="the raise seen",
            operator=op,
        )
    # qb deserves half the node: reclaim takes two of a's four back (before the fix: none, for good).
    team_b_reclaims(k, ns_b, op, pods=2, cpu="1")
    assert len(k.bound(ns_a)) == 2
    cond = wait_for(
        lambda: (c := _condition(k, ns_a, "a", PROTECTED)) and c["reason"] == "RaisedAfterStart" and c,
        30,
        what="the condition saying why",
        operator=op,
    )
    assert cond["status"] == "True"
    assert cond["message"].startswith(
        "reclaim and preempt keep 2 of its pods, not 4: minMember was raised to 4 "
    )
    assert cond["message"].endswith("(started with minMember 2)")
    op.check_running()


def _k8s_condition(k: Kube, ns: str, name: str, kind: str) -> dict[str, Any] | None:
    group = k.custom.get_namespaced_custom_object(K8S, K8S_VERSION, ns, "podgroups", name)
    return {c["type"]: c for c in (group.get("status") or {}).get("conditions") or []}.get(kind)


@pytest.mark.parametrize("cluster", ["workload"], indirect=True)
def test_a_workload_api_min_count_raised_while_no_operator_runs_does_not_keep_borrowed_pods(
    k: Kube, start_operator: Start
) -> None:
    """The same through the Workload API's ``minCount``: its PodGroup's status holds only conditions
    (kube-scheduler's PodGroupInitiallyScheduled, and volsched's record beside it)."""
    ns_a, ns_b = two_teams(k, "tenant")
    k.custom.create_namespaced_custom_object(K8S, K8S_VERSION, ns_a, "workloads", {
        "apiVersion": f"{K8S}/{K8S_VERSION}", "kind": "Workload", "metadata": {"name": "a"},
        "spec": {"podGroupTemplates": [{"name": "w", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
    })  # fmt: skip
    k.custom.create_namespaced_custom_object(K8S, K8S_VERSION, ns_a, "podgroups", {
        "apiVersion": f"{K8S}/{K8S_VERSION}", "kind": "PodGroup",
        "metadata": {"name": "a-w", "annotations": {"scheduling.volsched.io/queue-name": "qa"}},
        "spec": {"workloadRef": {"workloadName": "a", "templateName": "w"},
                 "schedulingPolicy": {"gang": {"minCount": 2}}},
    })  # fmt: skip
    members = []
    for i in range(4):
        member = pod(f"a-{i}", cpu="1")
        member["spec"]["schedulingGroup"] = {"podGroupName": "a-w"}
        members.append(member)
    k.pods(ns_a, *members)
    op = start_operator()
    wait_for(lambda: len(k.bound(ns_a)) == 4, 30, what="qa borrows the whole node", operator=op)
    wait_for(
        lambda: (c := _k8s_condition(k, ns_a, "a-w", "PodGroupInitiallyScheduled")) and c["status"] == "True",
        30,
        what="the gang scheduled",
        operator=op,
    )
    op.stop()
    k.custom.patch_namespaced_custom_object(
        K8S, K8S_VERSION, ns_a, "podgroups", "a-w", {"spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}}
    )
    op = start_operator()
    team_b_reclaims(k, ns_b, op, pods=2, cpu="1")
    assert len(k.bound(ns_a)) == 2
    cond = wait_for(
        lambda: (c := _k8s_condition(k, ns_a, "a-w", PROTECTED)) and c["reason"] == "RaisedAfterStart" and c,
        30,
        what="the condition saying why",
        operator=op,
    )
    assert cond["message"].startswith("reclaim and preempt keep 2 of its pods, not 4: ")
    op.check_running()


def test_a_volcano_min_member_raised_while_no_operator_runs_does_not_keep_borrowed_pods(
    k: Kube, start_operator: Start
) -> None:
    """The same through a Volcano PodGroup, whose CRD (as some Volcano releases ship it) has no status
    subresource: the record is written into the object itself."""
    install_volcano_crds(k.api)
    ns_a, ns_b = two_teams(k, "tenant")
    k.custom.create_namespaced_custom_object(V, VV, ns_a, "podgroups", volcano_podgroup("a", 2, "qa"))
    k.pods(ns_a, *(pod(f"a-{i}", cpu="1", group="a") for i in range(4)))

    def status() -> dict[str, Any]:
        return k.custom.get_namespaced_custom_object(V, VV, ns_a, "podgroups", "a").get("status") or {}  # type: ignore[no-any-return]

    op = start_operator()
    wait_for(lambda: len(k.bound(ns_a)) == 4, 30, what="qa borrows the whole node", operator=op)
    wait_for(lambda: status().get("phase") == "Running", 30, what="the gang's phase written", operator=op)
    op.stop()
    k.custom.patch_namespaced_custom_object(V, VV, ns_a, "podgroups", "a", {"spec": {"minMember": 4}})
    op = start_operator()
    team_b_reclaims(k, ns_b, op, pods=2, cpu="1")
    assert len(k.bound(ns_a)) == 2
    cond = wait_for(
        lambda: (
            (c := {c["type"]: c for c in status().get("conditions") or []}.get(PROTECTED))
            and c["reason"] == "RaisedAfterStart"
            and c
        ),
        30,
        what="the condition saying why",
        operator=op,
    )
    assert cond["message"].startswith("reclaim and preempt keep 2 of its pods, not 4: ")
    op.check_running()
