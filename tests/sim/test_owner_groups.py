"""Pods that name no PodGroup but have a controller owner form one job per owner (a PodGroup that
stands for the owner): minMember from the pod template's annotation, the queue from its queue annotation."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import batch_job, count_placed, node, owner_group, pod, podgroup, queue, run

MIN = "scheduling.volsched.io/min-member"


def test_a_jobs_pods_are_one_podgroup_named_after_the_jobs_uid() -> None:
    data = run([node("n1", cpu="8"), batch_job("train", parallelism=3)])
    [(key, pg)] = data["podgroups"].items()
    assert key.startswith("default/podgroup-") and pg == owner_group(data, "Job train")
    assert (pg["minMember"], pg["queue"], pg["phase"]) == (1, "default", "Running")
    assert count_placed(data, "default/train") == 3


@pytest.mark.parametrize(
    ("min_member", "placed", "phase"),
    [
        ("4", 0, "Pending"),  # 4 cpus asked as a whole, 3 free: the gang waits whole
        ("3", 3, "Running"),
    ],
)
def test_the_min_member_annotation_makes_the_owners_pods_a_gang(
    min_member: str, placed: int, phase: str
) -> None:
    data = run([node("n1", cpu="3"), batch_job("mpi", parallelism=4, annotations={MIN: min_member})])
    assert count_placed(data, "default/mpi") == placed
    assert owner_group(data, "Job mpi")["phase"] == phase


def test_the_gang_that_waits_says_why_in_numbers() -> None:
    data = run([node("n1", cpu="3"), batch_job("mpi", parallelism=4, annotations={MIN: "4"})])
    reason = owner_group(data, "Job mpi")["reason"]
    assert reason and "4" in reason and "3" in reason


def test_a_gang_standing_for_an_owner_is_named_by_its_owner_in_messages() -> None:
    data = run([node("n1", cpu="3"), batch_job("mpi", parallelism=2, annotations={MIN: "4"})])
    reason = owner_group(data, "Job mpi")["reason"]
    never = (
        "can never run as it stands: at most 3 of its pods fit on the 1 ready node(s)"  # 1-cpu pods, 3 cpu
    )
    assert reason.startswith(never) and "; gang podgroup-" in reason
    assert "(Job mpi): 2 pod(s) exist, minMember is 4" in reason


@pytest.mark.parametrize(
    "annotation", ["scheduling.volsched.io/queue-name", "scheduling.volcano.sh/queue-name"]
)
def test_the_queue_annotation_on_the_template_names_the_owners_queue(annotation: str) -> None:
    data = run(
        [
            node("n1", cpu="4"),
            queue("team-a"),
            batch_job("etl", parallelism=2, annotations={annotation: "team-a"}),
        ]
    )
    assert owner_group(data, "Job etl")["queue"] == "team-a"
    assert data["queues"]["team-a"]["allocated"] == {"cpu": 2, "pods": 2}


def test_drf_orders_workloads_not_pods_two_jobs_split_the_cluster() -> None:
    # One job per pod would serve the older Job's pods first (all four); one job per owner lets drf
    # interleave the two workloads, two pods each.
    data = run([node("n1", cpu="4"), batch_job("a", parallelism=4), batch_job("b", parallelism=4)])
    assert (count_placed(data, "default/a"), count_placed(data, "default/b")) == (2, 2)


@pytest.mark.parametrize(
    ("objects", "job"),
    [
        ([pod("lone")], "default/lone"),
        ([podgroup("pg"), pod("member", group="pg", owner="Job/x")], "default/pg"),
        ([pod("r", owner="ReplicaSet/web-1")], "default/replicaset-web-1"),
    ],
)
def test_a_group_annotation_wins_over_the_owner_and_a_pod_without_owner_is_its_own_job(
    objects: list[dict[str, Any]], job: str
) -> None:
    data = run([node("n1", cpu="4"), *objects])
    keys = set(data["podgroups"]) | {k for k in data["pods"]}
    assert job in keys
    if job != "default/lone":
        assert job in data["podgroups"]
    else:
        assert not data["podgroups"]


def test_pods_of_another_scheduler_get_no_podgroup() -> None:
    data = run([node("n1", cpu="4"), pod("r", owner="ReplicaSet/web-1", scheduler="default-scheduler")])
    assert not data["podgroups"]


@pytest.mark.parametrize("value", ["not-a-number", "0", "-2", "2147483648", "9" * 20])
def test_a_bad_min_member_annotation_holds_the_owners_pods_each_told_why(value: str) -> None:
    """A gang is whole or not at all: a bad annotation is no gang of 1, its pods never start one at a
    time (the defect: they did) but wait, each told why, and no PodGroup is made for them. Past 2^31 - 1
    too (a minMember a PodGroup cannot hold)."""
    data = run([node("n1", cpu="3"), batch_job("mpi", parallelism=2, annotations={MIN: value})])
    assert count_placed(data, "default/mpi") == 0
    assert not [g for g in data["podgroups"].values() if g["owner"] == "Job mpi"]
    events = [e for e in data["events"] if e["reason"] == "InvalidMinMember"]
    assert sorted(e["object"] for e in events) == ["Pod default/mpi-0", "Pod default/mpi-1"]
    assert all(repr(value) in e["message"] and "wait" in e["message"] for e in events)
    assert not [e for e in data["events"] if e["reason"] == "PodGroupNotFound"]


def test_the_held_pods_start_as_a_gang_once_the_annotation_is_mended() -> None:
    bad = batch_job("mpi", parallelism=2, annotations={MIN: "two"})
    good = batch_job("mpi", parallelism=2, annotations={MIN: "2"})
    assert count_placed(run([node("n1", cpu="3"), bad]), "default/mpi") == 0
    data = run([node("n1", cpu="3"), good])
    assert count_placed(data, "default/mpi") == 2 and owner_group(data, "Job mpi")["minMember"] == 2
