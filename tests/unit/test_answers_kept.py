"""Each job's validity and order key kept from one session to the next (``volsched.actions.kept``) decide
as answers asked anew every session.

Random walks over a cluster that changes between sessions (``test_backlog_carried``'s: pods come, go
and are edited, PodGroups change minMember, queue or class, queues their caps, priority classes their
values, nodes come and go, what a session bound runs (or its binds are lost), what it admitted is
Inqueue; and here also the
queues' tenancy rules and the namespaces' labels, which validity reads): two caches fed the same
objects, one keeping the answers from session to session, the other asking them anew each session.
Every decision and every word of the two are the same, session after session; every answer taken again
is the answer asked anew of the same job then; and answers were taken again (not all asked anew). The
one asking anew also asks each job whether it wants capacity in each of reclaim and preempt, where the
other keeps reclaim's answer for preempt (``starving_by_queue``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest

from tests.builders import config, namespace, queue
from tests.unit.test_backlog_carried import CLASSES, _lines, _World
from volsched.actions import kept, preempt, reclaim
from volsched.actions.eviction import wants_capacity
from volsched.actions.kept import KeptAnswers
from volsched.cache.state import ClusterState
from volsched.framework.decisions import Status
from volsched.framework.points import PointTables
from volsched.framework.runner import run_session
from volsched.framework.session import Session
from volsched.model.cluster import Job
from volsched.model.vocabulary import PodGroupPhase
from volsched.simulate.scenarios import RECLAIM_PREEMPT_CONFIG

Obj = dict[str, Any]

CONF = config(RECLAIM_PREEMPT_CONFIG)


class _RuledWorld(_World):
    """``_World``, whose queues now and then take tenancy rules (a namespace selector, priority classes,
    a highest priority) and whose namespaces change their labels."""

    def _queue(self, name: str) -> Obj:
        rng = self.rng
        rules: Obj = {}
        if rng.random() < 0.3:
            rules["namespaceSelector"] = {"matchLabels": {"team": rng.choice(["a", "b"])}}
        if rng.random() < 0.2:
            rules["priorityClasses"] = rng.sample(list(CLASSES), rng.randint(1, 3))
        if rng.random() < 0.2:
            rules["maxPriority"] = rng.choice([5, 50, 500])
        capped = {"cpu": str(rng.choice([2, 3, 5]))} if rng.random() < 0.7 else None
        return queue(name, weight=rng.randint(1, 3), capability=capped, **rules)

    def step(self) -> tuple[list[Obj], list[tuple[str, str, str]]]:
        applied, deleted = super().step()
        if self.rng.random() < 0.2:
            labels = {"team": self.rng.choice(["a", "b"])} if self.rng.random() < 0.8 else {}
            obj = namespace(self.rng.choice(["ns-0", "ns-1"]), labels=labels)
            self._put(obj)
            applied.append(obj)
        return applied, deleted


def _starving_anew(session: Session, *, action: str) -> dict[str, list[Job]]:
    """``starving_by_queue`` with every job asked whether it wants capacity, by each action."""
    by_queue: dict[str, list[Job]] = {}
    for job in session.pending_jobs():
        if wants_capacity(session, job, action=action):
            by_queue.setdefault(job.queue, []).append(job)
    return by_queue


@pytest.mark.parametrize("seed", range(24))
def test_kept_answers_decide_as_answers_asked_anew_each_session(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    world = _RuledWorld(rng)
    keeping, anew = ClusterState(), ClusterState()
    for state in (keeping, anew):
        for obj in world.objs.values():
            state.apply(obj)
    taken = [0, 0]  # validity, keys
    real_known, real_keys = PointTables.jobs_known_valid, KeptAnswers.keys

    def known(self: Any, answers: Iterable[tuple[str, Status | None]]) -> None:
        pairs = list(answers)
        for key, answer in pairs:
            job = self.jobs.get(key)
            if job is not None:  # (a job of the last session gone from this one is never asked)
                assert answer == self._job_valid(job), key
                taken[0] += 1
        real_known(self, pairs)

    def keys(self: KeptAnswers, many: Callable[[Sequence[Job]], list[Any]], jobs: Sequence[Job]) -> list[Any]:
        out = real_keys(self, many, jobs)
        assert out == many(jobs)
        taken[1] += sum(job.key in self.before for job in jobs)
        return out

    monkeypatch.setattr(PointTables, "jobs_known_valid", known)
    monkeypatch.setattr(KeptAnswers, "keys", keys)
    builds = 0
    for step in range(25):
        now = 10.0 + step
        snapshot = keeping.snapshot(now=now)
        builds += 1
        assert snapshot.built == builds
        result = run_session(snapshot, CONF)
        other = anew.snapshot(now=now)
        other.kept.pop(kept._KEPT, None)  # (nothing kept: every answer asked this session)
        with monkeypatch.context() as m:  # (nor whether a job wants capacity, from reclaim to preempt)
            m.setattr(reclaim, "starving_by_queue", _starving_anew)
            m.setattr(preempt, "starving_by_queue", _starving_anew)
            expected = run_session(other, CONF)
        assert _lines(result) == _lines(expected), f"step {step}"
        applied, deleted = world.step()
        if rng.random() < 0.75:  # (else the session's binds are lost: the cache never sees them)
            applied += world.ran(result)
        half = rng.randint(0, len(applied))
        for state in (keeping, anew):
            for key in result.admitted:
                state.set_podgroup_phase(key, PodGroupPhase.INQUEUE)
            for obj in applied[:half]:
                state.apply(obj)
        if rng.random() < 0.3:
            # a build whose session never ran (it failed): nothing is taken over it
            keeping.snapshot(now=now)
            builds += 1
        for state in (keeping, anew):
            for obj in applied[half:]:
                state.apply(obj)
            for kind, ns, name in deleted:
                state.delete(kind, ns or None, name)
    assert taken[0] and taken[1]  # (answers were taken again)


def test_a_plugin_that_does_not_declare_keeps_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A config with a plugin that answers for jobs without declaring ``job_answers_kept``: nothing is
    kept, every answer is asked each session."""
    rng = random.Random(1)
    world = _World(rng)
    state = ClusterState()
    for obj in world.objs.values():
        state.apply(obj)
    from volsched.plugins.gang import Gang

    monkeypatch.setattr(Gang, "job_answers_kept", False)
    for step in range(3):
        snapshot = state.snapshot(now=10.0 + step)
        run_session(snapshot, CONF)
        assert kept._KEPT not in snapshot.kept
