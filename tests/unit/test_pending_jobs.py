"""A session finds the jobs with a task pending among those its snapshot names as private (a task
pending or phase Pending when it was built), not among every bound job: in a steady state the actions
that decide only for pending pods look at the few that arrived, whatever the cluster holds."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup
from volsched.actions.allocate import Allocate
from volsched.actions.enqueue import Enqueue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.session import Session
from volsched.model.vocabulary import TaskStatus

Obj = dict[str, Any]


def _walked(session: Session) -> set[str]:
    """The jobs with a task pending, found the long way: every job looked at."""
    return {key for key, job in session.jobs.items() if job.status_count.get(TaskStatus.PENDING)}


def _state(objects: list[Obj]) -> ClusterState:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    return state


BOUND = [pod(f"b{i:03d}", ns=f"ns{i % 3}", cpu="0.1", node="n1") for i in range(60)]
CLUSTER = [
    node("n1", cpu="100"),
    *BOUND,
    podgroup("half", ns="ns0", min_member=2, phase="Running"),  # one member bound, one pending
    pod("half-0", ns="ns0", cpu="0.1", group="half", node="n1"),
    pod("half-1", ns="ns0", cpu="0.1", group="half"),
    podgroup("empty", ns="ns1", min_member=1),  # phase Pending, no pod yet
    pod("late-a", ns="ns2", cpu="0.1"),
    pod("late-b", ns="ns0", cpu="0.1"),
    pod("huge", ns="ns1", cpu="1000"),  # fits nowhere: still pending after allocate
]


def test_the_snapshot_names_every_job_with_a_task_pending_and_no_bound_one() -> None:
    state = _state(CLUSTER)
    snap = state.snapshot(now=1.0)
    assert snap.private is not None
    pending = {k for k, j in snap.jobs.items() if j.status_count.get(TaskStatus.PENDING)}
    assert pending <= snap.private
    assert not any(f"{b['metadata']['namespace']}/{b['metadata']['name']}" in snap.private for b in BOUND)
    assert "ns1/empty" in snap.private  # phase Pending: enqueue may admit it


def test_pending_jobs_are_those_a_walk_over_every_job_finds_as_the_session_goes_on() -> None:
    session = open_session(_state(CLUSTER).snapshot(now=1.0), load_config(), may_evict=False)
    found = [j.key for j in session.pending_jobs()]
    assert set(found) == _walked(session) == {"ns0/half", "ns2/late-a", "ns0/late-b", "ns1/huge"}
    assert len(found) == len(set(found))
    Enqueue().execute(session)
    Allocate().execute(session)
    assert {j.key for j in session.pending_jobs()} == _walked(session) == {"ns1/huge"}


def test_a_pod_that_arrives_between_snapshots_is_found_and_one_bound_since_is_not() -> None:
    state = _state(CLUSTER)
    state.snapshot(now=1.0)
    state.apply(pod("later", ns="ns1", cpu="0.1"))
    state.apply(pod("late-a", ns="ns2", cpu="0.1", node="n1"))  # the watch confirms its bind
    session = open_session(state.snapshot(now=2.0), load_config(), may_evict=False)
    assert {j.key for j in session.pending_jobs()} == _walked(session)
    assert "ns1/later" in _walked(session) and "ns2/late-a" not in _walked(session)


def test_with_most_jobs_pending_they_come_in_the_jobs_order() -> None:
    state = _state(
        [node("n1", cpu="100"), *[pod(f"p{i:03d}", ns=f"ns{i % 4}", cpu="0.1") for i in range(40)]]
    )
    session = open_session(state.snapshot(now=1.0), load_config(), may_evict=False)
    assert [j.key for j in session.pending_jobs()] == list(session.jobs)


def _uid(obj: Obj, uid: str) -> Obj:
    obj["metadata"]["uid"] = uid
    return obj


#: Changes made in place between two snapshots (after a session on the first), each of which may make
#: a job pending, or stop it being, without a pod of it arriving: the second snapshot must still name
#: every job with a task pending (r-act: only a pod arriving and a pod bound were covered).
CHANGES: dict[str, list[tuple[str, Obj | tuple[str, str | None, str]]]] = {
    "a running gang's PodGroup changed (minMember up)": [
        ("apply", podgroup("half", ns="ns0", min_member=3, phase="Running")),
    ],
    "a running gang's PodGroup phase back to Pending": [
        ("apply", podgroup("half", ns="ns0", min_member=2, phase="Pending")),
    ],
    "a bound member deleted and made again pending (evicted, recreated)": [
        ("delete", ("Pod", "ns0", "half-0")),
        ("apply", _uid(pod("half-0", ns="ns0", cpu="0.1", group="half"), "uid-half-0-2")),
    ],
    "a bound lone pod deleted and made again pending under its name": [
        ("delete", ("Pod", "ns1", "b001")),
        ("apply", _uid(pod("b001", ns="ns1", cpu="0.1"), "uid-b001-2")),
    ],
    "a pending member's PodGroup deleted": [
        ("delete", ("PodGroup", "ns0", "half")),
    ],
    "a PodGroup made for bound pods that had none": [
        ("apply", pod("b002", ns="ns2", cpu="0.1", node="n1", group="late")),
        ("apply", pod("b005", ns="ns2", cpu="0.1", group="late")),
        ("apply", podgroup("late", ns="ns2", min_member=2, phase="Running")),
    ],
    "a bound pod failed": [
        ("apply", pod("b004", ns="ns1", cpu="0.1", node="n1", phase="Failed")),
    ],
}


@pytest.mark.parametrize("changes", list(CHANGES.values()), ids=list(CHANGES))
def test_a_change_in_place_between_snapshots_leaves_no_pending_job_unnamed(
    changes: list[tuple[str, Obj | tuple[str, str | None, str]]],
) -> None:
    state = _state(CLUSTER)
    first = open_session(state.snapshot(now=1.0), load_config(), may_evict=False)
    Enqueue().execute(first)
    Allocate().execute(first)
    for verb, what in changes:
        if verb == "apply":
            assert isinstance(what, dict)
            state.apply(what)
        else:
            assert isinstance(what, tuple)
            state.delete(*what)
    snap = state.snapshot(now=2.0)
    session = open_session(snap, load_config(), may_evict=False)
    walked = _walked(session)
    assert snap.private is not None and walked <= snap.private
    assert {j.key for j in session.pending_jobs()} == walked
    Enqueue().execute(session)
    Allocate().execute(session)
    assert {j.key for j in session.pending_jobs()} == _walked(session)


def test_pending_jobs_are_found_again_only_after_a_status_changed() -> None:
    """Asked again with no task's status changed, the very list; a placement, and its undoing, make it
    found again: what a walk over every job finds each time."""
    from volsched.framework.statement import Statement

    session = open_session(_state(CLUSTER).snapshot(now=1.0), load_config(), may_evict=False)
    Enqueue().execute(session)
    first = session.pending_jobs()
    assert session.pending_jobs() is first
    late = session.jobs["ns2/late-a"]
    (task,) = late.tasks.values()
    statement = Statement(session)
    statement.allocate(task, 0)
    placed = session.pending_jobs()
    assert {j.key for j in placed} == _walked(session) and "ns2/late-a" not in _walked(session)
    statement.discard()
    assert {j.key for j in session.pending_jobs()} == _walked(session) == {j.key for j in first}
