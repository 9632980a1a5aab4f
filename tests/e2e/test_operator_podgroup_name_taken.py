"""A PodGroup named like a running pod standing alone, against the real apiserver (note14 Found 11): the
pod joined it, so a tenant whose pod ran standing alone made a PodGroup of its name with minMember 4 and
the pod, a gang below its minimum, was never reclaimed. The pod made first keeps its name now: the
PodGroup is no job while the pod exists and is told why, and reclaim takes the pod as any pod standing
alone. The other way (note15 Found 1), a PodGroup made first keeps its name: a pod standing alone made
after it is its member, and the gang keeps its pods (docs/tenancy.md "A PodGroup named like a pod
standing alone")."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import (
    GROUP,
    VERSION,
    Kube,
    OperatorProcess,
    Start,
    a_later_second,
    pod,
    podgroup,
    queue_cpu,
    record_verified,
    team_b_reclaims,
    two_teams,
    wait_for,
)
from volsched.model.admitted import BOUND_UNDER, STANDING_ALONE, read_bound

pytestmark = pytest.mark.cluster


def _told_name_taken(k: Kube, ns: str, op: OperatorProcess, why: str) -> None:
    """Wait for PodGroup x of ``ns`` told its name is taken, ``why`` in the message."""
    wait_for(
        lambda: any(
            e.reason == "PodGroupNameTaken"
            and e.involved_object.kind == "PodGroup"
            and e.involved_object.name == "x"
            and why in (e.message or "")
            for e in k.core.list_namespaced_event(ns).items
        ),
        30,
        what="PodGroup x told its name is taken",
        operator=op,
    )


def test_a_podgroup_named_like_a_running_pod_standing_alone_does_not_keep_it_from_reclaim(
    k: Kube, start_operator: Start
) -> None:
    ns_a, ns_b = two_teams(k, "name-taken")
    k.pods(ns_a, pod("a-0", cpu="2"))
    op = start_operator()
    wait_for(lambda: f"{ns_a}/a-0" in k.bound(ns_a), 30, what="a-0 bound", operator=op)
    k.pods(ns_a, pod("x", cpu="2"))  # (the newer: reclaim's first choice)
    wait_for(lambda: len(k.bound(ns_a)) == 2, 30, what="x bound", operator=op)
    wait_for(lambda: queue_cpu(k, "qa") == "4", 30, what="queue qa holding both", operator=op)

    k.podgroup(ns_a, podgroup("x", 4, queue="qa"))
    _told_name_taken(
        k, ns_a, op, "pod x, which names no pod group, was made before this PodGroup and has its name"
    )
    team_b_reclaims(k, ns_b, op, pods=1, cpu="2")
    # reclaim took x, the newer (before: a-0, x kept as a gang of minMember 4)
    assert list(k.bound(ns_a)) == [f"{ns_a}/a-0"]
    op.check_running()


@pytest.mark.parametrize("restart", [False, True], ids=["watched", "restarted"])
def test_a_pod_standing_alone_made_after_a_running_gang_of_its_name_joins_it_and_leaves_it_whole(
    k: Kube, start_operator: Start, restart: bool
) -> None:
    """note15 Found 1: pod x, naming no group, made in gang x's namespace after gang x ran, took PodGroup x
    (a pod standing alone kept its name whichever came first): the gang's running pods were left without
    their group, orphans reclaim could take one by one below its minMember. PodGroup x came first (the
    cluster's creation times say so): pod x is its member, bound under its record as a pod naming it
    would be, and reclaim takes it, the gang's one above its minimum, not the gang's own. An operator
    started after pod x was made (restarted: the listing brings both at once) decides the same."""
    ns_a, ns_b = two_teams(k, "name-first")
    made = k.podgroup(ns_a, podgroup("x", 2, queue="qa"))
    k.pods(ns_a, pod("x-0", cpu="1", group="x"), pod("x-1", cpu="1", group="x"))
    op = start_operator()
    wait_for(lambda: len(k.bound(ns_a)) == 2, 30, what="gang x bound", operator=op)
    # (creation times count whole seconds: pod x is made in a later one than PodGroup x)
    a_later_second(made["metadata"]["creationTimestamp"])

    if restart:
        op.stop()
    k.pods(ns_a, pod("x", cpu="1"))  # names no group
    if restart:
        op = start_operator()
    wait_for(lambda: f"{ns_a}/x" in k.bound(ns_a), 30, what="x bound", operator=op)
    notes = k.core.read_namespaced_pod("x", ns_a).metadata.annotations or {}
    record = read_bound(notes.get(BOUND_UNDER, ""))
    # before: none (bound standing alone), and PodGroup x told its name was taken, its pods orphans
    assert record is not None and record.uid == made["metadata"]["uid"], notes
    assert (record.queue, record.min_member) == ("qa", 2)

    team_b_reclaims(k, ns_b, op, pods=1, cpu="2")
    # reclaim took x, the gang's one above its minimum, and left x-0 and x-1
    assert sorted(k.bound(ns_a)) == [f"{ns_a}/x-0", f"{ns_a}/x-1"]
    assert not any(
        e.reason == "PodGroupNameTaken" for e in k.core.list_namespaced_event(ns_a).items
    )  # (what the operator told, by now: the gang's events came with its binds)
    op.check_running()


@pytest.mark.parametrize("restart", [False, True], ids=["watched", "restarted"])
def test_a_podgroup_refused_then_mended_does_not_wrap_a_pod_bound_standing_alone(
    k: Kube, start_operator: Start, restart: bool
) -> None:
    """note16 Found 1: PodGroup x made first but refused (a negative minResources the CRD takes), pod x
    made after it was bound standing alone; the tenant mends PodGroup x, which is older, and the running
    pod became its member, a gang below minMember 4, kept from reclaim. The bind of a pod standing alone
    writes a record of its own now, and a pod carrying it keeps its name whatever the creation times: the
    PodGroup is told its name is taken, and reclaim takes x, the newer, as any pod standing alone. An
    operator started after the mend (restarted: the listing brings both at once) decides the same."""
    ns_a, ns_b = two_teams(k, "name-bound")
    refused = podgroup("x", 4, queue="qa")
    refused["spec"]["minResources"] = {"cpu": "-1"}  # (the CRD's quantity pattern allows a sign)
    made = k.podgroup(ns_a, refused)
    k.pods(ns_a, pod("a-0", cpu="2"))
    op = start_operator()
    wait_for(
        lambda: any(
            e.reason == "Rejected" and e.involved_object.kind == "PodGroup" and e.involved_object.name == "x"
            for e in k.core.list_namespaced_event(ns_a).items
        ),
        30,
        what="PodGroup x refused",
        operator=op,
    )
    wait_for(lambda: f"{ns_a}/a-0" in k.bound(ns_a), 30, what="a-0 bound", operator=op)
    # (creation times count whole seconds: pod x is made in a later one than PodGroup x)
    a_later_second(made["metadata"]["creationTimestamp"])
    k.pods(ns_a, pod("x", cpu="2"))  # names no group; PodGroup x not in force
    wait_for(lambda: f"{ns_a}/x" in k.bound(ns_a), 30, what="x bound standing alone", operator=op)
    wait_for(lambda: queue_cpu(k, "qa") == "4", 30, what="queue qa holding both", operator=op)
    notes = k.core.read_namespaced_pod("x", ns_a).metadata.annotations or {}
    assert record_verified(k, ns_a, "x") == STANDING_ALONE, notes  # before: none

    if restart:
        op.stop()
    k.custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns_a, "podgroups", "x", {"spec": {"minResources": None}}
    )  # mended: the PodGroup, older than pod x, is in force now
    if restart:
        op = start_operator()
    _told_name_taken(k, ns_a, op, "pod x, which names no pod group, was bound standing alone")
    team_b_reclaims(k, ns_b, op, pods=1, cpu="2")
    # reclaim took x, the newer (before: a-0, x kept as a gang of minMember 4)
    assert list(k.bound(ns_a)) == [f"{ns_a}/a-0"]
    op.check_running()
