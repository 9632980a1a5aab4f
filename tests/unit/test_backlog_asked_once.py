"""A backlog refused job after job is asked what it must be asked, and no more, with the same answers.

Enqueue asks the queue order again only after an admission (or once a queue has left): compared on
random backlogs with asking it every turn (every decision and word the same, in the same order), with
a queue order that moves at every admission, and counted. A job's shape (``job_shape``, what reclaim,
preempt and enqueue keep a refusal by) is made from each task's part kept for the session: compared
with the shape made afresh over random sessions of gangs and lone pods whose tasks are pipelined,
evicted, committed and discarded in between (and whether a job has a task reclaim or preempt would
place, asked of every job, answered without the list).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import volsched.actions.enqueue as enqueue_module
from tests.builders import config, node, pod, podgroup, queue
from volsched.actions.enqueue import Enqueue
from volsched.actions.eviction import TaskShapes, _any_pending, job_shape, pending_of
from volsched.cache.state import ClusterState
from volsched.framework.decisions import EvictionReason
from volsched.framework.runner import open_session
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.vocabulary import QueueSpec, TaskStatus
from volsched.simulate.scenarios import RECLAIM_PREEMPT_CONFIG

Obj = dict[str, Any]


def _backlog(seed: int) -> list[Obj]:
    """Nodes, 2-5 queues (some capped, some guaranteed) and a backlog of lone pods and small gangs over
    them, more than the queues may take: some admitted, most refused."""
    rng = random.Random(seed)
    objs: list[Obj] = [node(f"n{i}", cpu=str(rng.choice([4, 8, 16]))) for i in range(rng.randint(1, 4))]
    names = [f"q{i}" for i in range(rng.randint(2, 5))]
    for name in names:
        capped = {"cpu": str(rng.choice([2, 3, 5, 8]))} if rng.random() < 0.7 else None
        kept = {"cpu": "1"} if rng.random() < 0.3 else None
        objs.append(queue(name, weight=rng.randint(1, 3), capability=capped, guarantee=kept))
    for i in range(rng.randint(20, 80)):
        q = rng.choice(names)
        ns = f"ns-{q}-{rng.randint(0, 1)}"
        cpu = rng.choice(["0.5", "1", "1", "2", "3"])
        if rng.random() < 0.2:
            size = rng.randint(2, 3)
            objs.append(podgroup(f"g{i}", ns=ns, min_member=size, queue=q))
            objs += [pod(f"g{i}-{k}", ns=ns, cpu=cpu, group=f"g{i}") for k in range(size)]
        else:
            objs.append(pod(f"p{i:03d}", ns=ns, cpu=cpu, queue=q))
    return objs


def _session(objs: list[Obj]) -> Session:
    state = ClusterState()
    for obj in objs:
        state.apply(obj)
    return open_session(state.snapshot(now=1.0), config(RECLAIM_PREEMPT_CONFIG), may_evict=True)


def _enqueue(
    objs: list[Obj], monkeypatch: pytest.MonkeyPatch, *, every_turn: bool, moving: bool
) -> tuple[list[str], list[tuple[str, list[str]]], int]:
    """Enqueue over ``objs``: the admissions in order, every refusal in words, and how many times the
    queue order was asked. ``every_turn``: asked every turn (as if every turn admitted); ``moving``: a
    queue order that moves at every admission (fewest admitted first, then the name)."""
    session = _session(objs)
    if moving:

        def fewest_admitted_first(left: QueueSpec, right: QueueSpec) -> bool:
            taken = [session.jobs[a.job].queue for a in session.result.admits]
            return (taken.count(left.name), left.name) < (taken.count(right.name), right.name)

        session.queue_less = fewest_admitted_first  # type: ignore[method-assign]
    asked = 0
    real_first = enqueue_module.first_queue

    def counted(s: Session, names: Any) -> str:
        nonlocal asked
        asked += 1
        return real_first(s, names)

    monkeypatch.setattr(enqueue_module, "first_queue", counted)
    if every_turn:
        real_admit = Enqueue._admit

        def admit(self: Enqueue, s: Session, run: Any, refusals: Any) -> bool:
            real_admit(self, s, run, refusals)
            return True  # (the first queue asked again next turn)

        monkeypatch.setattr(Enqueue, "_admit", admit)
    Enqueue().execute(session)
    monkeypatch.undo()
    refused = [(key, [s.render() for s in statuses]) for key, statuses in session.job_errors.items()]
    return [a.job for a in session.result.admits], refused, asked


@pytest.mark.parametrize("moving", [False, True], ids=["plugins-order", "moves-at-every-admission"])
@pytest.mark.parametrize("seed", range(12))
def test_enqueue_decides_as_when_the_queue_order_is_asked_every_turn(
    seed: int, moving: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    objs = _backlog(seed)
    admits, refused, asked = _enqueue(objs, monkeypatch, every_turn=False, moving=moving)
    admits_every, refused_every, asked_every = _enqueue(objs, monkeypatch, every_turn=True, moving=moving)
    assert admits == admits_every
    assert refused == refused_every
    assert admits and refused
    queues = sum(1 for o in objs if o["kind"] == "Queue")
    # asked again only after an admission, or once a queue left the order
    assert asked <= len(admits) + queues
    assert asked < asked_every


def test_a_refused_backlog_asks_the_queue_order_once_a_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three capped queues full of refused pods: the order is asked when a queue leaves, not per job."""
    objs: list[Obj] = [node("n1", cpu="64")]
    for q in ("a", "b", "c"):
        objs.append(queue(q, capability={"cpu": "2"}))
        objs += [pod(f"{q}{i:02d}", ns=f"ns-{q}", cpu="1", queue=q) for i in range(30)]
    admits, refused, asked = _enqueue(objs, monkeypatch, every_turn=False, moving=False)
    _, _, asked_every = _enqueue(objs, monkeypatch, every_turn=True, moving=False)
    assert len(admits) == 6 and len(refused) == 84
    assert asked <= len(admits) + 3 < asked_every


def _shapes_agree(session: Session, memo: TaskShapes, rng: random.Random) -> None:
    for job in session.jobs.values():
        tasks = list(job.tasks.values())
        if rng.random() < 0.5:
            rng.shuffle(tasks)
        if rng.random() < 0.2 and len(tasks) > 1:
            tasks = tasks[1:]
        assert job_shape(job, tasks, memo=memo) == job_shape(job, tasks)
        assert _any_pending(job) is bool(pending_of(job))


@pytest.mark.parametrize("seed", range(10))
def test_a_job_shape_from_the_sessions_kept_parts_is_the_shape_made_afresh(seed: int) -> None:
    rng = random.Random(seed)
    objs = _backlog(seed)
    objs += [pod(f"r{i}", ns="ns-q0-0", cpu="1", queue="q0", node="n0") for i in range(3)]
    objs += [pod("best-effort", ns="ns-q0-0", cpu=None, queue="q0"), pod("theirs", scheduler="other")]
    session = _session(objs)
    memo: TaskShapes = {}
    _shapes_agree(session, memo, rng)
    tasks = [t for job in session.jobs.values() for t in job.tasks.values()]
    for _ in range(30):
        statement = Statement(session)
        for t in rng.sample(tasks, min(len(tasks), rng.randint(1, 6))):
            if t.status is TaskStatus.PENDING:
                statement.pipeline(t, rng.randrange(len(session.nodes)))
            elif t.status in (TaskStatus.RUNNING, TaskStatus.BOUND):
                statement.evict(t, reason=EvictionReason(action="test"))
        _shapes_agree(session, memo, rng)
        if rng.random() < 0.5:
            statement.commit()
        else:
            statement.discard()
        _shapes_agree(session, memo, rng)
    assert memo  # (the parts were kept, and asked again)
