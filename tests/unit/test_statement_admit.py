"""Admission is a Statement operation: it takes effect in the session at once, becomes an Admit
decision on commit and is undone by discard; closing a session computes PodGroup phases into the
result without writing them into the jobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import Admit
from volsched.framework.registry import load_config
from volsched.framework.runner import close_session, open_session
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.vocabulary import PodGroupPhase


def pending_gang_session() -> Session:
    state = ClusterState()
    for obj in [node("n1", cpu="4"), queue("q"), podgroup("g", ns="ns", queue="q", min_member=1, phase="Pending"),
                pod("g-0", ns="ns", cpu="1", group="g")]:  # fmt: skip
        state.apply(obj)
    return open_session(state.snapshot(now=1.0), load_config())


@pytest.mark.parametrize(
    ("finish", "phase", "admits"),
    [
        pytest.param(
            "commit", PodGroupPhase.INQUEUE, [Admit(job="ns/g", phase="Inqueue")], id="commit-admits"
        ),
        pytest.param("discard", PodGroupPhase.PENDING, [], id="discard-undoes-the-admission"),
        pytest.param("rollback", PodGroupPhase.PENDING, [], id="rollback-to-before-undoes-it"),
    ],
)
def test_admit_takes_effect_at_once_and_is_decided_only_on_commit(
    finish: str, phase: PodGroupPhase, admits: list[Admit]
) -> None:
    session = pending_gang_session()
    job = session.jobs["ns/g"]
    statement = Statement(session)
    statement.admit(job)
    assert job.phase is PodGroupPhase.INQUEUE
    if finish == "rollback":
        statement.rollback(0)
    else:
        getattr(statement, finish)()
    assert job.phase is phase
    assert session.result.admits == admits


def test_closing_a_session_computes_phases_without_writing_them_into_the_jobs() -> None:
    session = pending_gang_session()
    job = session.jobs["ns/g"]
    statement = Statement(session)
    statement.admit(job)
    statement.allocate(job.tasks["ns/g-0"], 0)
    statement.commit()
    result = close_session(session)
    assert result.podgroups["ns/g"].phase == "Running"
    assert result.queues["q"].podgroups == {"Running": 1}
    assert job.phase is PodGroupPhase.INQUEUE  # what the session left it at; the result says Running


@pytest.mark.parametrize(
    ("finish", "phase", "admitted"),
    [
        pytest.param(
            "commit", PodGroupPhase.INQUEUE, ["ns/a", "ns/b", "ns/c"], id="commit-admits-all-in-order"
        ),
        pytest.param("discard", PodGroupPhase.PENDING, [], id="discard-undoes-them-all"),
        pytest.param("rollback", PodGroupPhase.PENDING, [], id="rollback-to-before-undoes-them-all"),
    ],
)
def test_admit_all_is_admit_of_each_in_order_as_one_operation(
    finish: str, phase: PodGroupPhase, admitted: list[str]
) -> None:
    state = ClusterState()
    objs = [node("n1", cpu="4"), queue("q")]
    for name in "abc":
        objs += [
            podgroup(name, ns="ns", queue="q", min_member=1, phase="Pending"),
            pod(f"{name}-0", ns="ns", group=name),
        ]
    for obj in objs:
        state.apply(obj)
    session = open_session(state.snapshot(now=1.0), load_config())
    jobs = [session.jobs[f"ns/{name}"] for name in "cab"]
    jobs.sort(key=lambda job: job.key)
    statement = Statement(session)
    statement.admit_all(jobs)
    assert len(statement) == 1
    assert all(job.phase is PodGroupPhase.INQUEUE for job in jobs)
    if finish == "rollback":
        statement.rollback(0)
    else:
        getattr(statement, finish)()
    assert all(job.phase is phase for job in jobs)
    assert session.result.admits == [Admit(job=key, phase="Inqueue") for key in admitted]


def running_gangs_session(config_path: str | None) -> Session:
    """Gangs a and b of queue q, each with its one member running on n1 (the settled run), and a pending
    pod; ``config_path``: a config that may evict (the session works on copies of the shared jobs)."""
    state = ClusterState()
    objs = [node("n1", cpu="4"), queue("q")]
    for name in "ab":
        objs += [
            podgroup(name, ns="ns", queue="q", min_member=1, phase="Running"),
            pod(f"{name}-0", ns="ns", group=name, node="n1"),
        ]
    for obj in [*objs, pod("w", ns="ns", queue="q")]:
        state.apply(obj)
    config = load_config(None if config_path is None else Path(__file__).parents[2] / config_path)
    return open_session(state.snapshot(now=1.0), config)


@pytest.mark.parametrize("how", ["admit", "admit_all"])
def test_a_job_whose_phase_a_statement_changes_leaves_the_settled_run(how: str) -> None:
    """A statement changes a job's phase through the session, as it changes a task's status: a copy of
    a shared job that the statement changes no longer stands for it, and the run ends before it; a
    shared job is refused."""
    session = running_gangs_session("examples/reclaim-preempt-scheduler.yaml")
    assert [j.key for j in session.ledger.settled().jobs] == ["ns/a", "ns/b"]
    job = session.jobs["ns/b"]
    assert job.origin is not None  # the session's copy, standing for the shared job
    statement = Statement(session)
    statement.admit(job) if how == "admit" else statement.admit_all([job])
    assert job.origin is None
    assert [j.key for j in session.ledger.settled().jobs] == ["ns/a"]
    statement.discard()
    assert job.phase is PodGroupPhase.RUNNING and job.origin is None  # still the session's own now

    shared = running_gangs_session(None)
    job = shared.jobs["ns/b"]
    assert job.shared
    with pytest.raises(RuntimeError, match="ns/b that other snapshots share"):
        Statement(shared).admit(job) if how == "admit" else Statement(shared).admit_all([job])
    assert job.phase is PodGroupPhase.RUNNING
