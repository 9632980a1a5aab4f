"""A pending pod standing alone that the last session was lent and closed with as it was lent (a pod set
aside, a backlog's pod no session tried) is lent to the next session as that very job, reset
(``volsched.cache.snapshots``: ``_all_back``, ``_taken_back``): a random walk of sessions run so must give,
session by session, the very results that the same walk gives with every such job made anew, whatever
changed between two sessions; and a session that did not close (it failed midway) returns nothing, so
the jobs it was lent are made anew, however it left them."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.builders import node, pod, podgroup
from tests.unit.test_cache_snapshot import Walk
from tests.unit.test_session_carried import _walk
from volsched.cache import snapshots
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.framework import runner
from volsched.framework.registry import load_config
from volsched.model.cluster import RETURNED
from volsched.model.vocabulary import PodGroupPhase, TaskStatus


def _set_aside_now_and_then(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """The walk's pods, one in four asking for a node no node is (set aside once tried), the walk's own
    draws as they were (the selector from a generator of its own, one per walk)."""
    random_pod = Walk.random_pod
    draws = random.Random(seed)

    def with_selector(self: Walk) -> dict[str, Any]:
        obj = random_pod(self)
        if draws.random() < 0.25 and not obj["spec"].get("nodeName"):
            obj["spec"]["nodeSelector"] = {"zone": draws.choice(["nowhere", "elsewhere"])}
        return obj

    monkeypatch.setattr(Walk, "random_pod", with_selector)


@pytest.mark.parametrize("seed", range(6))
def test_sessions_with_and_without_jobs_taken_back_decide_and_say_the_same(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    random_pod = Walk.random_pod
    _set_aside_now_and_then(monkeypatch, seed)
    taken = [0, 0]  # all at once, one by one
    all_back, taken_back = snapshots._all_back, snapshots._taken_back
    calls = [0]

    def counting_all(base: Any, keys: list[str], returned: Any) -> bool:
        calls[0] += 1
        if calls[0] % 3 == 0:  # (one in three left to the key-by-key path)
            return False
        out = all_back(base, keys, returned)
        taken[0] += out
        return out

    def counting_one(job: Any, key: str) -> bool:
        out = taken_back(job, key)
        taken[1] += out
        return out

    monkeypatch.setattr(snapshots, "_all_back", counting_all)
    monkeypatch.setattr(snapshots, "_taken_back", counting_one)
    carried = _walk(seed, 400)
    assert taken[0] >= 5 and taken[1] >= 5  # the walk's snapshots did take jobs back, both ways
    monkeypatch.setattr(Walk, "random_pod", random_pod)
    _set_aside_now_and_then(monkeypatch, seed)
    monkeypatch.setattr(snapshots, "_all_back", lambda *_: False)
    monkeypatch.setattr(snapshots, "_taken_back", lambda *_: False)
    fresh = _walk(seed, 400)
    assert len(carried) == len(fresh)
    for k, (a, b) in enumerate(zip(carried, fresh, strict=True)):
        assert a == b, f"session {k} differs"


def _aside_cluster() -> tuple[Feeder, Any]:
    """One node of 4 cpu, and three pods standing alone that fit on no node (a selector none has)."""
    feeder = Feeder(ClusterState())
    feeder.apply("Node", node("n0", cpu="4"))
    for i in range(3):
        obj = pod(f"p{i}", cpu="1")
        obj["spec"]["nodeSelector"] = {"zone": "nowhere"}
        feeder.apply("Pod", obj)
    return feeder, load_config()


def test_the_next_snapshot_lends_the_very_jobs_a_closed_session_left_as_lent() -> None:
    feeder, config = _aside_cluster()
    first = feeder.state.snapshot(now=1.0)
    runner.run_session(first, config)
    assert isinstance(first.kept.get(RETURNED), dict)
    lent = {k: first.jobs[k] for k in ("default/p0", "default/p1", "default/p2")}
    assert all(j.phase is PodGroupPhase.INQUEUE for j in lent.values())  # (admitted by enqueue)
    second = feeder.state.snapshot(now=2.0)
    assert RETURNED not in second.kept  # (taken by the build)
    for key, job in lent.items():
        assert second.jobs[key] is job
        assert job.phase is PodGroupPhase.PENDING and job.memo == {} and not job.allocated.any()


def test_jobs_a_session_did_not_close_with_are_made_anew() -> None:
    feeder, config = _aside_cluster()
    first = feeder.state.snapshot(now=1.0)
    runner.run_session(first, config)
    second = feeder.state.snapshot(now=2.0)
    job = second.jobs["default/p0"]
    # A session on the second snapshot that fails midway, having changed a job it was lent: it returns
    # nothing, so the third snapshot makes every job anew.
    (task,) = job.tasks.values()
    task.status, task.node_name = TaskStatus.ALLOCATED, "n0"
    third = feeder.state.snapshot(now=3.0)
    for key in ("default/p0", "default/p1", "default/p2"):
        assert third.jobs[key] is not second.jobs[key]
    (fresh,) = third.jobs["default/p0"].tasks.values()
    assert fresh.status is TaskStatus.PENDING and fresh.node_name is None


def test_a_job_the_session_changed_is_made_anew_the_others_taken_back() -> None:
    feeder, config = _aside_cluster()
    runner.run_session(feeder.state.snapshot(now=1.0), config)
    second = feeder.state.snapshot(now=2.0)
    runner.run_session(second, config)
    # (as a session that placed it, and undid the placement, leaves its counts: a status at zero)
    job = second.jobs["default/p1"]
    job.count_status(TaskStatus.PENDING, TaskStatus.ALLOCATED)
    job.count_status(TaskStatus.ALLOCATED, TaskStatus.PENDING)
    third = feeder.state.snapshot(now=3.0)
    assert third.jobs["default/p0"] is second.jobs["default/p0"]
    assert third.jobs["default/p2"] is second.jobs["default/p2"]
    assert third.jobs["default/p1"] is not job
    assert dict(third.jobs["default/p1"].status_count) == {TaskStatus.PENDING: 1}


# --- A PodGroup's job (every member pending) taken back ----------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_sessions_with_and_without_gangs_taken_back_decide_and_say_the_same(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk's PodGroups (g0-g2, and the owners' groups) with every pod pending, lent to a session and
    closed with, are taken back by the next build while untouched: every session says what it says with
    each such job assembled anew."""
    groups_back = snapshots.SnapshotBuilder._groups_back
    taken = [0]

    def counting(*args: Any) -> list[str]:
        out = groups_back(*args)
        taken[0] += len(out)
        return out

    monkeypatch.setattr(snapshots.SnapshotBuilder, "_groups_back", staticmethod(counting))
    carried = _walk(seed, 400)
    assert taken[0] >= 20  # (the walk's snapshots did take gangs back)
    monkeypatch.setattr(snapshots.SnapshotBuilder, "_groups_back", staticmethod(lambda *_: []))
    fresh = _walk(seed, 400)
    assert len(carried) == len(fresh)
    for k, (a, b) in enumerate(zip(carried, fresh, strict=True)):
        assert a == b, f"session {k} differs"


def _gang_cluster() -> tuple[Feeder, Any]:
    """One node of 1 cpu, half of it taken by another scheduler's pod, and a PodGroup of minMember 3 whose
    pods ask 100m, 200m and 400m: two are placed, the third fits nowhere now, and the gang's placements
    are undone, leaving float dust in what the job holds (0.1 + 0.2 - 0.2 - 0.1 is not 0)."""
    feeder = Feeder(ClusterState())
    for kind, obj in _gang_objects():
        feeder.apply(kind, obj)
    return feeder, load_config()


def test_a_gang_the_session_placed_and_undid_is_taken_back_reset() -> None:
    feeder, config = _gang_cluster()
    first = feeder.state.snapshot(now=1.0)
    result = runner.run_session(first, config)
    assert not result.binds
    job = first.jobs["default/g"]
    assert job.phase is PodGroupPhase.INQUEUE  # (admitted: the cache still says Pending)
    assert job.allocated.any()  # (the dust this test is about)
    assert len(job.status_count) > 1  # (statuses passed through, at zero)
    second = feeder.state.snapshot(now=2.0)
    assert second.jobs["default/g"] is job
    assert job.phase is PodGroupPhase.PENDING and job.memo == {} and job.origin is None
    assert not job.allocated.any() and dict(job.status_count) == {TaskStatus.PENDING: 3}
    fresh = Feeder(ClusterState())
    for kind, obj in _gang_objects():
        fresh.apply(kind, obj)
    made = fresh.state.snapshot(now=2.0).jobs["default/g"]
    assert repr(made) == repr(job)
    assert [t.key for t in made.tasks.values()] == [t.key for t in job.tasks.values()]


def _gang_objects() -> list[tuple[str, Any]]:
    return [
        ("Node", node("n0", cpu="1")),
        ("Pod", pod("other", cpu="500m", node="n0", scheduler="default-scheduler")),
        ("PodGroup", podgroup("g", min_member=3)),
        *(
            ("Pod", pod(f"p{i}", cpu=cpu, group="g", created=f"2026-01-01T00:00:0{i}Z"))
            for i, cpu in enumerate(["100m", "200m", "400m"])
        ),
    ]


def test_a_gang_touched_or_not_closed_with_is_made_anew() -> None:
    feeder, config = _gang_cluster()
    first = feeder.state.snapshot(now=1.0)
    runner.run_session(first, config)
    second = feeder.state.snapshot(now=2.0)
    job = second.jobs["default/g"]
    # No session closes on the second snapshot: the third makes the job anew, however it was left.
    (task, *_) = job.tasks.values()
    task.status, task.node_name = TaskStatus.ALLOCATED, "n0"
    third = feeder.state.snapshot(now=3.0)
    assert third.jobs["default/g"] is not job
    assert all(t.status is TaskStatus.PENDING for t in third.jobs["default/g"].tasks.values())
    runner.run_session(third, config)
    # A member changed (a label): made anew. Then its PodGroup changed: made anew.
    changed = pod("p1", cpu="200m", group="g", created="2026-01-01T00:00:01Z", labels={"x": "y"})
    feeder.apply("Pod", changed)
    fourth = feeder.state.snapshot(now=4.0)
    assert fourth.jobs["default/g"] is not third.jobs["default/g"]
    runner.run_session(fourth, config)
    fifth = feeder.state.snapshot(now=5.0)
    assert fifth.jobs["default/g"] is fourth.jobs["default/g"]
    runner.run_session(fifth, config)
    feeder.apply("PodGroup", podgroup("g", min_member=2))
    sixth = feeder.state.snapshot(now=6.0)
    assert sixth.jobs["default/g"] is not fifth.jobs["default/g"]
    assert sixth.jobs["default/g"].min_member == 2
