"""Workloads written for Volcano, and workloads without a PodGroup, through the operator (real apiserver).

The Volcano CRDs here are minimal ones this test writes (the group, kinds and scopes Volcano's have; any
fields). Its PodGroup CRD has no status subresource (as in some Volcano releases) and its Queue CRD
has one, so both ways of writing status are exercised. The pods are made the way Spark's Volcano
feature step makes them: spec.schedulerName "volcano" and the annotation scheduling.k8s.io/group-name.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import (
    GROUP,
    VERSION,
    VV,
    Kube,
    Start,
    V,
    install_volcano_crds,
    node,
    pod,
    podgroup,
    volcano_podgroup,
    wait_for,
)

pytestmark = pytest.mark.cluster


def spark_pod(name: str, group: str, cpu: str) -> dict[str, Any]:
    out = pod(name, cpu, scheduler="volcano")
    out["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": group}
    return out


def test_a_volcano_gang_is_gang_scheduled_and_its_status_written(k: Kube, start_operator: Start) -> None:
    install_volcano_crds(k.api)
    custom = k.custom
    custom.create_cluster_custom_object(
        V, VV, "queues", {"apiVersion": f"{V}/{VV}", "kind": "Queue", "metadata": {"name": "spark"},
                          "spec": {"weight": 1, "reclaimable": True}},
    )  # fmt: skip
    orphan = custom.create_cluster_custom_object(
        V, VV, "queues", {"apiVersion": f"{V}/{VV}", "kind": "Queue", "metadata": {"name": "orphan"},
                          "spec": {"parent": "nowhere"}},
    )  # fmt: skip
    k.nodes(node("n1", cpu="2"), node("n2", cpu="2"))
    ns = k.namespace("spark")
    etl = volcano_podgroup("etl", 3, "spark")
    etl["spec"]["networkTopology"] = {"mode": "soft", "highestTierAllowed": 1}  # not read: said on it
    custom.create_namespaced_custom_object(V, VV, ns, "podgroups", etl)
    custom.create_namespaced_custom_object(V, VV, ns, "podgroups", volcano_podgroup("big", 3, "spark", "3"))
    k.pods(ns, *(spark_pod(f"etl-{i}", "etl", "1") for i in range(3)))
    k.pods(ns, *(spark_pod(f"big-{i}", "big", "3") for i in range(3)))  # never fits: 9 cpu of 4
    # The same name in both groups: volsched's object is in force, the Volcano one gets an event.
    custom.create_namespaced_custom_object(V, VV, ns, "podgroups", volcano_podgroup("dup", 1, "spark"))
    k.podgroup(ns, podgroup("dup", 1))
    op = start_operator("--scheduler-names", "volsched,volcano")

    bound = wait_for(lambda: len(k.bound(ns)) >= 3 and k.bound(ns), 30, what="the etl gang bound")
    assert sorted(bound) == [f"{ns}/etl-{i}" for i in range(3)]  # and none of the big gang

    def pg_status(name: str) -> dict[str, Any]:
        return custom.get_namespaced_custom_object(V, VV, ns, "podgroups", name).get("status") or {}  # type: ignore[no-any-return]

    wait_for(lambda: pg_status("etl").get("phase") in ("Inqueue", "Running"), 20, what="etl status written")
    ignored = wait_for(
        lambda: [c for c in pg_status("etl").get("conditions") or [] if c.get("type") == "FieldsIgnored"],
        20,
        what="etl's FieldsIgnored condition",
    )
    assert ignored[0]["status"] == "True" and ignored[0]["message"].startswith(
        "spec.networkTopology is ignored"
    )
    wait_for(
        lambda: any(c.get("status") == "False" for c in pg_status("big").get("conditions") or []),
        20,
        what="the big gang's reason on its Volcano PodGroup",
    )
    reason = next(c["message"] for c in pg_status("big")["conditions"] if c.get("status") == "False")
    assert "9" in reason  # in numbers
    assert k.bound(ns).keys() == bound.keys()
    queue_status = wait_for(
        lambda: (custom.get_cluster_custom_object(V, VV, "queues", "spark").get("status") or {}).get(
            "allocated"
        ),
        20,
        what="Volcano queue status",
    )
    assert queue_status["cpu"] == "3"

    shadowed = wait_for(
        lambda: [e for e in k.core.list_namespaced_event(ns).items if e.reason == "ShadowedByVolsched"],
        20,
        what="an event on the shadowed Volcano PodGroup",
    )
    assert (
        shadowed[0].involved_object.api_version == f"{V}/{VV}" and shadowed[0].involved_object.name == "dup"
    )
    # A Volcano Queue's problem is an event on that Volcano Queue (kubectl describe finds it by uid).
    problem = wait_for(
        lambda: [e for e in k.core.list_event_for_all_namespaces().items if e.reason == "ParentNotFound"],
        20,
        what="the orphan queue's event",
    )[0]
    assert (problem.involved_object.api_version, problem.involved_object.uid) == (
        f"{V}/{VV}", orphan["metadata"]["uid"],
    )  # fmt: skip
    assert "reading Volcano podgroups" in op.log() or "reading Volcano queues and podgroups" in op.log()


def _job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "parallelism": 3,
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
            },
        },
    }


def test_a_jobs_pods_without_a_podgroup_get_one_owned_by_the_job(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="2"), node("n2", cpu="2"))
    ns = k.namespace("owners")
    batch = client.BatchV1Api(k.api)

    def owned_pods(job_name: str, count: int, cpu: str, min_member: int) -> str:
        """Returns the name of the Job's PodGroup: podgroup-<its uid>, as Volcano names it."""
        job = batch.create_namespaced_job(ns, _job(job_name))
        ref = {"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": job.metadata.uid,
               "controller": True, "blockOwnerDeletion": True}  # fmt: skip
        for i in range(count):
            p = pod(f"{job_name}-{i}", cpu)
            p["metadata"]["ownerReferences"] = [ref]
            p["metadata"]["annotations"] = {"scheduling.volsched.io/min-member": str(min_member)}
            k.pods(ns, p)
        return f"podgroup-{job.metadata.uid}"

    train = owned_pods("train", 3, "1", 3)
    wide_name = owned_pods("wide", 3, "1500m", 3)  # a gang of three that does not fit once train runs
    op = start_operator("--volcano-check-every", "1")

    bound = wait_for(lambda: len(k.bound(ns)) >= 3 and k.bound(ns), 30, what="the train gang bound")
    assert sorted(bound) == [f"{ns}/train-{i}" for i in range(3)]
    pg = wait_for(
        lambda: (
            (k.get_podgroup(ns, train).get("status") or {}).get("phase") == "Running"
            and k.get_podgroup(ns, train)
        ),
        20,
        what="the PodGroup created for the Job, with its status",
    )
    assert pg["spec"]["minMember"] == 3
    owner = pg["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Job", "train", batch.read_namespaced_job("train", ns).metadata.uid,
    )  # fmt: skip
    wide = wait_for(lambda: k.get_podgroup(ns, wide_name), 20, what="the second Job's PodGroup")
    assert wide["spec"]["minMember"] == 3
    assert len(k.bound(ns)) == 3  # the wide gang waits whole
    assert "not served (yet)" in op.log()


def test_a_jobs_pods_with_a_bad_min_member_wait_each_told_why_until_it_is_mended(
    k: Kube, start_operator: Start
) -> None:
    """A gang is whole or not at all: with min-member "two" no PodGroup is made and no pod starts alone
    (the defect: both started, one at a time, in a PodGroup of minMember 1); each pod is told why, and
    once the annotation is mended the two start together."""
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("bad-min-member")
    job = client.BatchV1Api(k.api).create_namespaced_job(ns, _job("mpi"))
    ref = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "mpi",
        "uid": job.metadata.uid,
        "controller": True,
    }
    names = ["mpi-0", "mpi-1"]
    for name in names:
        p = pod(name, "1")
        p["metadata"]["ownerReferences"] = [ref]
        p["metadata"]["annotations"] = {"scheduling.volsched.io/min-member": "two"}
        k.pods(ns, p)
    op = start_operator()

    def told() -> list[Any]:
        events = [e for e in k.core.list_namespaced_event(ns).items if e.reason == "InvalidMinMember"]
        return events if sorted(e.involved_object.name for e in events) == names else []

    for event in wait_for(told, 30, what="InvalidMinMember on each pod"):
        assert "'two'" in event.message and "wait" in event.message
    for name in names:
        cond = wait_for(
            lambda n=name: next(
                (
                    c
                    for c in k.core.read_namespaced_pod(n, ns).status.conditions or []
                    if c.type == "PodScheduled"
                ),
                None,
            ),
            20,
            what="PodScheduled condition",
        )
        assert cond.reason == "Unschedulable" and "'two'" in cond.message
    assert not k.bound(ns)  # (told above: the sessions that held them ran)
    assert not k.custom.list_namespaced_custom_object(GROUP, VERSION, ns, "podgroups")["items"]
    for name in names:
        k.core.patch_namespaced_pod(
            name, ns, {"metadata": {"annotations": {"scheduling.volsched.io/min-member": "2"}}}
        )
    wait_for(lambda: len(k.bound(ns)) == 2, 30, what="both bound once mended", operator=op)
    pg = wait_for(lambda: k.get_podgroup(ns, f"podgroup-{job.metadata.uid}"), 20, what="the Job's PodGroup")
    assert pg["spec"]["minMember"] == 2


def test_podgroups_an_earlier_version_named_after_their_owner_are_deleted_when_no_pod_is_in_them(
    k: Kube, start_operator: Start
) -> None:
    """An upgrade from a volsched that named owners' PodGroups ``<kind>-<name>``: the owner's pods join
    ``podgroup-<uid>`` and the old object, empty, goes. Kept: one a pod still names, one volsched did not
    create (no label), one not named after its owner."""
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("upgraded")
    batch = client.BatchV1Api(k.api)

    def owner(name: str) -> dict[str, Any]:
        job = batch.create_namespaced_job(ns, _job(name))
        return {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": job.metadata.uid,
                "controller": True, "blockOwnerDeletion": True}  # fmt: skip

    def old_podgroup(name: str, ref: dict[str, Any], *, ours: bool = True) -> None:
        obj = podgroup(name, 1)
        obj["metadata"]["ownerReferences"] = [ref]
        if ours:  # what the earlier version labelled its PodGroups with
            obj["metadata"]["labels"] = {"scheduling.volsched.io/created-by": "volsched"}
        k.podgroup(ns, obj)

    train, serve, other = owner("train"), owner("serve"), owner("other")
    old_podgroup("job-train", train)  # left behind: deleted
    old_podgroup("job-serve", serve)  # a pod names it: kept
    old_podgroup("job-other", other, ours=False)  # a user's: kept
    old_podgroup("job-elsewhere", train)  # not the old name of its owner: kept
    for i in range(2):
        p = pod(f"train-{i}", "1")
        p["metadata"]["ownerReferences"] = [train]
        k.pods(ns, p)
    named = pod("named-0", "1")
    named["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "job-serve"}
    k.pods(ns, named)
    op = start_operator()

    def gone(name: str) -> bool:
        try:
            k.get_podgroup(ns, name)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_for(lambda: gone("job-train"), 30, what="the left-behind PodGroup job-train deleted", operator=op)
    wait_for(lambda: len(k.bound(ns)) == 3, 30, what="every pod bound", operator=op)
    assert (
        k.get_podgroup(ns, f"podgroup-{train['uid']}")["metadata"]["ownerReferences"][0]["uid"]
        == train["uid"]
    )
    for kept in ("job-serve", "job-other", "job-elsewhere"):
        assert not gone(kept), kept
    assert "deleted PodGroup upgraded/job-train, left behind by an earlier volsched for Job train" in op.log()


def test_volcano_crds_installed_after_the_start_are_read_without_a_restart_and_their_removal_is_survived(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="2"), node("n2", cpu="2"))
    ns = k.namespace("late")
    op = start_operator("--scheduler-names", "volsched,volcano", "--volcano-check-every", "0.5")
    assert "not served (yet)" in op.log()

    install_volcano_crds(k.api)  # after the operator started: no restart
    custom = k.custom
    custom.create_cluster_custom_object(
        V, VV, "queues", {"apiVersion": f"{V}/{VV}", "kind": "Queue", "metadata": {"name": "spark"},
                          "spec": {"weight": 1}},
    )  # fmt: skip
    custom.create_namespaced_custom_object(V, VV, ns, "podgroups", volcano_podgroup("etl", 3, "spark"))
    custom.create_namespaced_custom_object(V, VV, ns, "podgroups", volcano_podgroup("big", 3, "spark", "3"))
    k.pods(ns, *(spark_pod(f"etl-{i}", "etl", "1") for i in range(3)))
    k.pods(ns, *(spark_pod(f"big-{i}", "big", "3") for i in range(3)))  # never fits: 9 cpu of 4

    bound = wait_for(lambda: len(k.bound(ns)) >= 3 and k.bound(ns), 30, what="the etl gang bound")
    assert sorted(bound) == [f"{ns}/etl-{i}" for i in range(3)]  # whole, and none of the big gang
    wait_for(
        lambda: (
            (custom.get_namespaced_custom_object(V, VV, ns, "podgroups", "etl").get("status") or {}).get(
                "phase"
            )
            in ("Inqueue", "Running")
        ),
        20,
        what="the etl PodGroup's status written",
    )
    assert "reading Volcano queues" in op.log() and "reading Volcano podgroups" in op.log()

    # Volcano's PodGroup CRD removed (its PodGroups go with it): the operator goes on scheduling.
    ext = client.ApiextensionsV1Api(k.api)
    ext.delete_custom_resource_definition(f"podgroups.{V}")
    wait_for(lambda: "no longer reading Volcano podgroups" in op.log(), 30, what="the removal noticed")
    k.podgroup(ns, podgroup("after", 2))
    k.pods(ns, pod("after-0", "500m", group="after"), pod("after-1", "500m", group="after"))
    wait_for(
        lambda: {f"{ns}/after-0", f"{ns}/after-1"} <= k.bound(ns).keys(), 30, what="a gang after the removal"
    )
    op.check_running()
    assert not any(p.startswith(f"{ns}/big-") for p in k.bound(ns))
