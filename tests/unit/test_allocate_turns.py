"""Allocate asks whether a job has a task to place and is valid when the job's turn comes, not of every
job before the first turn: a job it passes over (only best-effort pods pending, or an invalid gang) gets
the answer it always got, and the others are placed as if it were not there."""

from __future__ import annotations

from typing import Any

from tests.builders import node, pod, podgroup, queue
from volsched.actions.allocate import Allocate
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.session import Session
from volsched.model.vocabulary import PodGroupPhase

Obj = dict[str, Any]
CONFIG = 'actions: "allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}, {name: drf}, {name: proportion}]\n'


def _allocated(objects: list[Obj]) -> Session:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    session = open_session(state.snapshot(now=1.0), load_config(text=CONFIG), may_evict=False)
    for job in session.jobs.values():  # every job admitted (no enqueue here)
        if job.phase is PodGroupPhase.PENDING:
            job.phase = PodGroupPhase.INQUEUE
    Allocate().execute(session)
    return session


def _why(session: Session, key: str) -> str:
    return " | ".join(s.render() for s in session.job_errors.get(key, []))


def test_in_an_overused_queue_an_invalid_gang_is_refused_as_invalid_and_a_best_effort_pod_not_at_all() -> (
    None
):
    session = _allocated(
        [
            node("n1", cpu="8"),
            queue("q", capability={"cpu": "2"}),
            *(pod(f"r{i}", queue="q", node="n1") for i in range(2)),
            pod("waits", queue="q"),
            podgroup("short", queue="q", min_member=3),
            pod("short-0", queue="q", group="short"),
            pod("free", queue="q", cpu=None),
        ]
    )
    assert "overused" in _why(session, "default/waits")
    assert "minMember is 3" in _why(session, "default/short")
    assert "default/free" not in session.job_errors
    assert session.result.binds == []


def test_jobs_passed_over_leave_the_others_placed_in_their_order() -> None:
    # ns "a" comes first (no share held): only a best-effort pod and an invalid gang wait there
    session = _allocated(
        [
            node("n1", cpu="3"),
            pod("free", ns="a", cpu=None),
            podgroup("short", ns="a", min_member=2),
            pod("short-0", ns="a", group="short"),
            *(pod(f"p{i}", ns="b") for i in range(4)),
        ]
    )
    assert [b.pod for b in session.result.binds] == ["b/p0", "b/p1", "b/p2"]
    assert "a/free" not in session.job_errors
    assert "minMember is 2" in _why(session, "a/short")
    assert "b/p3" in session.job_errors
