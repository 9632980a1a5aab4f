"""The session's ledger answers what a walk over every job, in the session's order, would: the same keys
and the same floats to the last bit, when the session opens (with a run kept from the last session or
not, with gaps or not, on a thawed snapshot or not) and after Statements placed pods, committed or
discarded them (float dust a discarded placement leaves included)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework import settled
from volsched.framework.points import Ledger
from volsched.framework.registry import load_config
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.cluster import ClusterSnapshot, Job, unmet_minimum
from volsched.model.resources import Vector
from volsched.model.vocabulary import PodGroupPhase, TaskStatus


def _state(n: int) -> ClusterState:
    """Gangs over two queues and three namespaces asking fractions of a cpu (sums whose bits depend on
    the order they are added in): bound ones, pending ones (some admitted), a PodGroup with no pod."""
    state = ClusterState()
    for obj in [node("n1", cpu="512"), node("n2", cpu="512"), queue("a"), queue("b")]:
        state.apply(obj)
    for i in range(n):
        q, ns = ("a" if i % 2 else "b"), f"ns{i % 3}"
        if i % 5 == 3:  # all pending: a gap of the run, or its end
            phase, on = ("Inqueue" if i % 2 else "Pending"), [None, None]
        elif i % 17 == 16:  # one pod bound, one pending: ends the run
            phase, on = "Inqueue", [f"n{1 + i % 2}", None]
        else:  # bound: in the run (an admitted one whose phase was not updated yet, short of its minimum)
            phase, on = ("Inqueue" if i % 4 == 1 else "Running"), [f"n{1 + i % 2}"] * 2
        state.apply(
            podgroup(f"g{i}", ns=ns, queue=q, min_member=2, min_resources={"cpu": "0.9"}, phase=phase)
        )
        for k in range(2):
            state.apply(pod(f"p{i}-{k}", ns=ns, group=f"g{i}", cpu=f"0.{(i + k) % 9 + 1}", node=on[k]))
    state.apply(podgroup("waiting", queue="a", min_resources={"cpu": "1.3"}, phase="Pending"))
    # Alone in its queue and namespace: placed and undone, it holds float dust (0.1 + 0.7 - 0.7 - 0.1).
    state.apply(queue("c"))
    state.apply(podgroup("dust", ns="nsc", queue="c", min_member=2, phase="Inqueue"))
    for k, cpu in enumerate(["0.1", "0.7"]):
        state.apply(pod(f"dust-{k}", ns="nsc", group="dust", cpu=cpu))
    return state


def _walk(jobs: list[Job], width: int) -> dict[str, Any]:
    """What a loop over every job, in order, adding each from zero, gives."""
    held: dict[str, Vector] = {}
    ns_held: dict[str, Vector] = {}
    asked: dict[str, Vector] = {}
    ns_asked: dict[str, Vector] = {}
    unmet: dict[str, Vector] = {}
    ns_unmet: dict[str, Vector] = {}
    total = np.zeros(width)
    for job in jobs:
        held[job.queue] = held.get(job.queue, np.zeros(width)) + job.allocated
        asked[job.queue] = asked.get(job.queue, np.zeros(width)) + job.total_request()
        ns_held[job.namespace] = ns_held.get(job.namespace, np.zeros(width)) + job.allocated
        ns_asked[job.namespace] = ns_asked.get(job.namespace, np.zeros(width)) + job.total_request()
        if job.phase is PodGroupPhase.INQUEUE:
            unmet[job.queue] = unmet.get(job.queue, np.zeros(width)) + unmet_minimum(job)
            ns_unmet[job.namespace] = ns_unmet.get(job.namespace, np.zeros(width)) + unmet_minimum(job)
            total = total + unmet_minimum(job)
    return {
        "held": held,
        "ns_held": ns_held,
        "asked": asked,
        "ns_asked": ns_asked,
        "unmet": unmet,
        "ns_unmet": ns_unmet,
        "total": total,
    }


def _bits(sums: Any) -> dict[str, bytes]:
    return {k: np.asarray(v).tobytes() for k, v in dict(sums).items()}


def _check(ledger: Ledger, jobs: list[Job], width: int) -> None:
    want = _walk(jobs, width)
    assert _bits(ledger.held_by_queue()) == _bits(want["held"])
    assert _bits(ledger.held_by_namespace()) == _bits(want["ns_held"])
    assert _bits(ledger.asked_by_queue()) == _bits(want["asked"])
    assert _bits(ledger.asked_by_namespace()) == _bits(want["ns_asked"])
    assert _bits(ledger.unmet_by_namespace()) == _bits(want["ns_unmet"])
    pending = TaskStatus.PENDING
    asking = [j for j in jobs if j.status_count.get(pending) or j.status_count.get(TaskStatus.PIPELINED)]
    waiting = [j for j in jobs if j.phase is PodGroupPhase.PENDING and not j.tasks]
    assert [j.key for j in ledger.asking_jobs()] == [j.key for j in jobs if j in asking or j in waiting]
    short = {j.key for j in jobs if j.ready < j.min_member and (j.ready or j.phase is PodGroupPhase.INQUEUE)}
    assert {j.key for j in ledger.short_gangs()} == short
    assert all(j is jobs_by_key for j in ledger.short_gangs() for jobs_by_key in [_by_key(jobs)[j.key]])
    assert not ledger.any_host_ports()
    assert not ledger.any_constrained()


def _check_unmet(ledger: Ledger, jobs: list[Job], width: int) -> None:
    want = _walk(jobs, width)
    assert _bits(ledger.unmet_by_queue()) == _bits(want["unmet"])
    assert ledger.unmet().tobytes() == want["total"].tobytes()


def _by_key(jobs: list[Job]) -> dict[str, Job]:
    return {j.key: j for j in jobs}


def _session(snapshot: ClusterSnapshot, *, thaw: bool) -> Session:
    if thaw:
        snapshot.thaw()
    return Session(snapshot, load_config(None), [])


@pytest.mark.parametrize("thaw", [False, True], ids=["shared", "thawed"])
@pytest.mark.parametrize("gaps", [0, settled.MAX_GAPS], ids=["no-gaps", "gaps"])
@pytest.mark.parametrize("kept", [False, True], ids=["first-session", "run-kept"])
def test_the_ledger_answers_as_a_walk_over_every_job_at_open_and_after_statements(
    thaw: bool, gaps: int, kept: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settled, "MAX_GAPS", gaps)
    state = _state(40)
    if kept:  # a session before this one found the run and kept it
        earlier = _session(state.snapshot(now=4.0), thaw=thaw)
        assert earlier.ledger.held_by_queue()
    snapshot = state.snapshot(now=5.0)
    session = _session(snapshot, thaw=thaw)
    jobs = list(session.jobs.values())
    width = len(snapshot.space)
    assert session.ledger.settled().jobs  # the run is not empty: the sums start from it
    _check_unmet(session.ledger, jobs, width)
    _check(session.ledger, jobs, width)
    # Admit the jobs waiting for it (the gaps among them too): what they still miss joins the sums.
    stmt = Statement(session)
    stmt.admit_all([j for j in jobs if j.phase is PodGroupPhase.PENDING])
    stmt.commit()
    _check_unmet(session.ledger, jobs, width)
    _check(session.ledger, jobs, width)
    # Place pending pods of a gang and commit; of another and discard (the undone sums leave dust).
    pending = [j for j in jobs if j.status_count.get(TaskStatus.PENDING) and j.tasks]
    assert len(pending) >= 2
    first, second = pending[0], session.jobs["nsc/dust"]
    stmt = Statement(session)
    for t in first.pending_tasks():
        stmt.allocate(t, 0)
    stmt.commit()
    _check(session.ledger, jobs, width)
    stmt = Statement(session)
    for t in second.pending_tasks():
        stmt.allocate(t, 1)
    _check(session.ledger, jobs, width)  # asked while the Statement holds them
    stmt.discard()
    assert second.allocated.any()  # dust
    _check(session.ledger, jobs, width)
    _check_unmet(session.ledger, jobs, width)
    with pytest.raises(ValueError):  # read-only: a reader copies a sum to add to it
        session.ledger.held_by_queue()["a"][0] += 1.0


@pytest.mark.parametrize("other", [False, True], ids=["one-namespace", "a-second-namespace"])
@pytest.mark.parametrize("first", ["queue", "namespace"])
@pytest.mark.parametrize("kept", [False, True], ids=["first-session", "run-kept"])
def test_one_queue_and_one_namespace_answer_each_other_as_a_walk_does(
    other: bool, first: str, kept: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pods standing alone in one namespace and the default queue: what they hold per queue and per
    # namespace is one sum of the same rows, so the second answer is the first's (SessionLedger._alike):
    # the walk's floats all the same, at the open, after a placement, after one undone (dust); with a
    # pod in a second namespace the two differ and each is summed.
    from volsched.framework import ledger as ledger_module

    alike = ledger_module.SessionLedger._alike
    took = [0]

    def counting(self: Any, key: Any, answer: Any) -> Any:
        out = alike(self, key, answer)
        took[0] += out is not None
        return out

    monkeypatch.setattr(ledger_module.SessionLedger, "_alike", counting)
    state = ClusterState()
    state.apply(node("n1", cpu="512"))
    for i in range(30):
        on = None if i % 7 == 3 else "n1"
        state.apply(pod(f"p{i}", ns="solo", cpu=f"0.{i % 9 + 1}", node=on))
    if other:
        state.apply(pod("elsewhere", ns="other", cpu="0.3", node="n1"))
    if kept:
        assert _session(state.snapshot(now=4.0), thaw=False).ledger.held_by_queue()
    session = _session(state.snapshot(now=5.0), thaw=False)
    jobs = list(session.jobs.values())
    width = len(session.space)
    want = _walk(jobs, width)

    def check() -> None:
        ledger = session.ledger
        asked = [ledger.held_by_queue, ledger.held_by_namespace]
        for ask in asked if first == "queue" else asked[::-1]:
            ask()
        assert _bits(ledger.held_by_queue()) == _bits(want["held"])
        assert _bits(ledger.held_by_namespace()) == _bits(want["ns_held"])

    check()
    stmt = Statement(session)
    pending = [j for j in jobs if j.status_count.get(TaskStatus.PENDING)]
    for t in pending[0].pending_tasks():
        stmt.allocate(t, 0)
    stmt.commit()
    want = _walk(jobs, width)
    check()
    stmt = Statement(session)
    for t in pending[1].pending_tasks():
        stmt.allocate(t, 0)
    stmt.discard()
    want = _walk(jobs, width)
    check()
    assert took[0] == (0 if other else 3)


@pytest.mark.parametrize("kept", [False, True], ids=["first-session", "run-kept"])
def test_no_job_admitted_after_the_run_unmet_is_the_runs_sums_as_a_walk(
    kept: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An arriving pod's session: the admitted jobs short of their minimum are all in the run, the jobs
    # after it are not admitted (a pod standing alone, pending): what they still miss is the run's sums,
    # nothing added (SessionLedger.unmet and unmet_by_queue answer with them), the walk's bits.
    from volsched.framework import ledger as ledger_module

    fold = ledger_module.unmet_minimum_rows
    added: list[int] = []
    monkeypatch.setattr(
        ledger_module,
        "unmet_minimum_rows",
        lambda jobs, rows, out: (added.append(len(jobs)), fold(jobs, rows, out)),
    )
    state = ClusterState()
    for obj in [node("n1", cpu="512"), node("n2", cpu="512"), queue("a"), queue("b")]:
        state.apply(obj)
    for i in range(30):
        q, ns = ("a" if i % 2 else "b"), f"ns{i % 3}"
        phase = "Inqueue" if i % 4 == 1 else "Running"  # (admitted, the phase not updated yet: short)
        state.apply(
            podgroup(f"g{i}", ns=ns, queue=q, min_member=2, min_resources={"cpu": "0.9"}, phase=phase)
        )
        for k in range(2):
            state.apply(
                pod(f"p{i}-{k}", ns=ns, group=f"g{i}", cpu=f"0.{(i + k) % 9 + 1}", node=f"n{1 + i % 2}")
            )
    state.apply(pod("zz-arriving", ns="ns0", cpu="0.3"))
    if kept:
        assert _session(state.snapshot(now=4.0), thaw=False).ledger.unmet().any()
    session = _session(state.snapshot(now=5.0), thaw=False)
    jobs = list(session.jobs.values())
    width = len(session.space)
    ledger = session.ledger
    assert ledger.settled().jobs
    assert ledger.unsettled() and not [j for j in ledger.unsettled() if j.phase is PodGroupPhase.INQUEUE]
    del added[:]
    _check_unmet(ledger, jobs, width)
    assert ledger.unmet().any() and any(v.any() for v in ledger.unmet_by_queue().values())
    assert added == []  # the run's sums answered, nothing added to them
    with pytest.raises(ValueError):  # read-only, as every answer
        ledger.unmet()[0] += 1.0
    with pytest.raises(ValueError):
        next(iter(ledger.unmet_by_queue().values()))[0] += 1.0


def test_pods_bound_after_the_run_add_nothing_to_unmet_as_a_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    # The live benchmark's shape: pods standing alone, each admitted (Inqueue) and holding its one-pod
    # minimum; a few bound since the run was kept (walked after it, fewer than settled.LAG) and one
    # pending. They add zeros to the unmet sums (unmet_minimum_rows leaves them out): the answers are
    # the run's sums, with the queue of those jobs at zeros, the walk's bits, and nothing is added.
    from volsched.framework import ledger as ledger_module

    fold = ledger_module.unmet_minimum_rows
    added: list[int] = []

    def counting(jobs: Any, rows: Any, out: Any) -> None:
        added.append(len(jobs))
        fold(jobs, rows, out)

    monkeypatch.setattr(ledger_module, "unmet_minimum_rows", counting)
    state = ClusterState()
    state.apply(node("n1", cpu="512"))
    for i in range(30):
        state.apply(pod(f"p{i:02d}", ns="solo", cpu=f"0.{i % 9 + 1}", node="n1", phase="Running"))
    assert _session(state.snapshot(now=4.0), thaw=False).ledger.unmet() is not None  # the run kept
    for i in range(30, 33):
        state.apply(pod(f"p{i:02d}", ns="solo", cpu=f"0.{i % 9 + 1}", node="n1", phase="Running"))
    state.apply(pod("p99", ns="solo", cpu="0.3"))
    session = _session(state.snapshot(now=5.0), thaw=False)
    ledger = session.ledger
    after = [j for j in ledger.unsettled() if j.phase is PodGroupPhase.INQUEUE]
    assert len(after) == 3 and all(j.shared for j in after)
    del added[:]
    _check_unmet(ledger, list(session.jobs.values()), len(session.space))
    assert added == []
    assert list(ledger.unmet_by_queue()) == ["default"]
    with pytest.raises(ValueError):
        ledger.unmet_by_queue()["default"][0] += 1.0
