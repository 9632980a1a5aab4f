"""A pod standing alone (it names no PodGroup and has no controller owner) whose name is also a PodGroup's
in its namespace (note14 Found 11). Its job key is its own key, which was the PodGroup's too, so it
joined that PodGroup's job: a tenant who created a PodGroup named like its running pod, minMember 4,
kept the pod from reclaim as a gang below its minimum (and moved it into the PodGroup's queue), and a
pending pod so named was placed as one of the gang's members. A pod joins a PodGroup only by naming it;
a pod standing alone keeps its name, and the PodGroup is no job while it exists, told why, its pods
waiting as a missing group's (docs/tenancy.md "A PodGroup named like a pod standing alone")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session
from volsched.model.admitted import BOUND_UNDER, bound_under
from volsched.model.cluster import ClusterSnapshot

PREEMPT = load_config(
    text=(Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml").read_text()
)
Obj = dict[str, Any]
TAKEN = (
    "pod x, which names no pod group, has its name: a pod standing alone is a job of its own, under its "
    "name, and never joins a PodGroup of that name; while pod x exists this PodGroup is taken by none, "
    "and its pods wait (rename the PodGroup, or delete the pod)"
)


def _state(*objs: Obj) -> ClusterState:
    state = ClusterState()
    for obj in objs:
        state.apply(obj)
    return state


def _told(snap: ClusterSnapshot) -> dict[str, tuple[str, str]]:
    return {obj: (reason, message) for obj, reason, message in snap.problems}


def _running() -> list[Obj]:
    """qa's pods a1-a3 and x (the newest), standing alone, fill n1; qb's hi waits for 2 cpu."""
    return [
        node("n1", cpu="4"),
        queue("qa"),
        queue("qb"),
        *[
            pod(n, ns="ns", cpu="1", node="n1", queue="qa", created=f"2026-01-01T00:00:0{i}Z")
            for i, n in enumerate(["a1", "a2", "a3", "x"])
        ],
        podgroup("hi", ns="nb", queue="qb", phase="Inqueue"),
        pod("hi-0", ns="nb", cpu="2", group="hi"),
    ]


@pytest.mark.parametrize("kept", [True, False], ids=["incremental", "from-scratch"])
@pytest.mark.parametrize("group_queue", ["qa", "qb"])
def test_a_podgroup_named_like_a_running_pod_standing_alone_neither_protects_nor_moves_it(
    kept: bool, group_queue: str
) -> None:
    state = _state(*_running())
    control = [e.pod for e in run_session(state.snapshot(now=1.0), PREEMPT).evictions]
    assert control == ["ns/x", "ns/a3"]  # (the newest first)
    if not kept:
        state = _state(*_running())
    state.apply(podgroup("x", ns="ns", queue=group_queue, min_member=4, phase="Running"))
    snap = state.snapshot(now=2.0)
    job = snap.jobs["ns/x"]
    assert (job.podgroup, job.queue, job.min_member, list(job.tasks)) == (None, "qa", 1, ["ns/x"])
    assert _told(snap)["PodGroup ns/x"] == ("PodGroupNameTaken", TAKEN)
    # before: ["ns/a3", "ns/a2"], x kept as a gang of minMember 4 (in qa); none, x counted in qb (in qb)
    assert [e.pod for e in run_session(snap, PREEMPT).evictions] == control


def test_a_pending_pod_standing_alone_is_not_placed_as_a_member_of_a_podgroup_of_its_name() -> None:
    state = _state(
        node("n1", cpu="4"),
        queue("q"),
        podgroup("x", ns="ns", queue="q", min_member=2),
        pod("x", ns="ns", cpu="1"),  # names no group
        pod("x-0", ns="ns", cpu="1", group="x"),
    )
    snap = state.snapshot(now=1.0)
    assert list(snap.jobs["ns/x"].tasks) == ["ns/x"] and snap.jobs["ns/x"].podgroup is None
    told = _told(snap)
    assert told["Pod ns/x-0"] == ("PodGroupNotFound", f"pod group x was rejected by volsched: {TAKEN}")
    assert told["PodGroup ns/x"] == ("PodGroupNameTaken", TAKEN)
    result = run_session(snap, PREEMPT)
    assert [b.pod for b in result.binds] == ["ns/x"]  # before: ns/x and ns/x-0, as gang x of two

    state.delete("Pod", "ns", "x")  # the name free again: the PodGroup is a job, its pods placed
    snap = state.snapshot(now=2.0)
    assert snap.jobs["ns/x"].podgroup is not None and list(snap.jobs["ns/x"].tasks) == ["ns/x-0"]
    assert "PodGroup ns/x" not in _told(snap) and "Pod ns/x-0" not in _told(snap)


@pytest.mark.parametrize("how", ["group annotation", "controller owner"])
def test_a_pod_that_names_its_group_is_its_member_whatever_its_name(how: str) -> None:
    named = pod("x", ns="ns", cpu="1", group="x") if how == "group annotation" else None
    objs = [node("n1", cpu="4"), queue("q"), podgroup("x", ns="ns", queue="q", min_member=1)]
    if named is not None:
        objs.append(named)
    else:  # (owned: its job is its owner's group, not its name)
        objs.append(pod("x", ns="ns", cpu="1", owner="Job/train"))
    snap = _state(*objs).snapshot(now=1.0)
    assert "PodGroup ns/x" not in _told(snap)
    assert snap.jobs["ns/x"].podgroup is not None
    assert ("ns/x" in snap.jobs["ns/x"].tasks) is (how == "group annotation")


def _orphans(how: str) -> list[Obj]:
    """Gang lo's 4 pods, each bound under a record naming queue q, fill n1; q2's hi waits for 2 cpu; a
    PodGroup named like each of lo's pods waits in queue q3 (minMember 2). PodGroup lo is gone ("deleted")
    or taken by a pod standing alone named lo ("taken", filling n2)."""
    record = bound_under(uid="lo-1", queue="q", priority_class="", priority=0, min_member=4)
    lo = [
        pod(f"lo-{i}", ns="ns", cpu="1", group="lo", node="n1", annotations={BOUND_UNDER: record})
        for i in range(4)
    ]
    taken = [
        podgroup("lo", ns="ns", queue="q", min_member=4, phase="Running"),
        node("n2", cpu="1"),
        pod("lo", ns="ns", node="n2"),  # (names no group: PodGroup lo is no job)
    ]
    return [
        node("n1", cpu="4"),
        queue("q"),
        queue("q2"),
        queue("q3"),
        *lo,
        *(taken if how == "taken" else []),
        *[podgroup(f"lo-{i}", ns="ns", queue="q3", min_member=2) for i in range(4)],
        podgroup("hi", ns="ns", queue="q2", phase="Inqueue"),
        pod("hi-0", ns="ns", cpu="2", group="hi"),
    ]


@pytest.mark.parametrize("kept", [True, False], ids=["incremental", "from-scratch"])
@pytest.mark.parametrize("how", ["deleted", "taken"])
def test_a_podgroup_named_like_an_orphan_neither_protects_nor_moves_it(kept: bool, how: str) -> None:
    """An orphan (its group gone, its record its bind's) is a pod standing alone too, and keeps its name:
    before, orphan lo-0 joined PodGroup lo-0 (queue q3, minMember 2), counted in q3 and kept from reclaim
    as a gang below its minimum, so PodGroups named like a deleted gang's pods floored them all again."""
    objs = _orphans(how)
    state = _state(*objs[:-6] if kept else objs)  # (incremental: the PodGroups named like pods come later)
    if kept:
        state.snapshot(now=1.0)
        for obj in objs[-6:]:
            state.apply(obj)
    snap = state.snapshot(now=2.0)
    for i in range(4):
        job = snap.jobs[f"ns/lo-{i}"]
        assert (job.podgroup, job.queue, job.min_member, list(job.tasks)) == (None, "q", 1, [f"ns/lo-{i}"])
        assert _told(snap)[f"PodGroup ns/lo-{i}"] == (
            "PodGroupNameTaken",
            f"pod lo-{i}, bound under its record and running without its pod group lo, has its name: a pod "
            "standing alone is a job of its own, under its name, and never joins a PodGroup of that name; "
            f"while pod lo-{i} exists this PodGroup is taken by none, and its pods wait (rename the "
            "PodGroup, or delete the pod)",
        )
    assert _told(snap)["Pod ns/lo-0"][0] == "PodGroupGone"
    # q holds 4 of 4 and owes q2 its share: reclaim takes 2 (before: none, each a gang below its minimum)
    assert [e.pod for e in run_session(snap, PREEMPT).evictions] == ["ns/lo-3", "ns/lo-2"]


def test_the_podgroups_named_like_a_gangs_pods_are_taken_once_the_gang_is_gone_and_freed_once_it_is_back() -> (
    None
):
    objs = [o for o in _orphans("deleted")]
    state = _state(*objs, podgroup("lo", ns="ns", queue="q", min_member=4, phase="Running"))
    snap = state.snapshot(now=1.0)  # (lo there: its pods its members, PodGroups lo-0.. are jobs)
    assert sorted(snap.jobs["ns/lo"].tasks) == [f"ns/lo-{i}" for i in range(4)]
    assert snap.jobs["ns/lo-0"].podgroup is not None and "PodGroup ns/lo-0" not in _told(snap)
    state.delete("PodGroup", "ns", "lo")  # (no pod changed: the PodGroups named like them asked again)
    snap = state.snapshot(now=2.0)
    assert [snap.jobs[f"ns/lo-{i}"].podgroup for i in range(4)] == [None] * 4
    assert _told(snap)["PodGroup ns/lo-0"][0] == "PodGroupNameTaken"
    state.apply(podgroup("lo", ns="ns", queue="q", min_member=4, phase="Running"))  # made again
    snap = state.snapshot(now=3.0)
    assert sorted(snap.jobs["ns/lo"].tasks) == [f"ns/lo-{i}" for i in range(4)]
    assert snap.jobs["ns/lo-0"].podgroup is not None and "PodGroup ns/lo-0" not in _told(snap)


def test_pods_named_like_each_others_podgroups_stay_their_members() -> None:
    """Pod p of group g and pod g of group p, both PodGroups there: each pod is its group's member, and
    neither PodGroup is taken (the least answer: a pod is an orphan only once its group is gone)."""
    record = bound_under(uid="u", queue="q", priority_class="", priority=0, min_member=1)
    notes = {BOUND_UNDER: record}
    snap = _state(
        node("n1", cpu="4"),
        queue("q"),
        podgroup("g", ns="ns", queue="q", min_member=1, phase="Running"),
        podgroup("p", ns="ns", queue="q", min_member=1, phase="Running"),
        pod("p", ns="ns", cpu="1", group="g", node="n1", annotations=notes),
        pod("g", ns="ns", cpu="1", group="p", node="n1", annotations=notes),
    ).snapshot(now=1.0)
    assert list(snap.jobs["ns/g"].tasks) == ["ns/p"] and list(snap.jobs["ns/p"].tasks) == ["ns/g"]
    assert snap.problems == []
