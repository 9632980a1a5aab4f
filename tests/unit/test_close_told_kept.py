"""What a session's close told each job (its PodGroup status, its refusals and events), taken again by the
next session's close where every input of it is equal, says what a close telling it anew says.

Random walks over a cluster that changes between sessions (``test_answers_kept``'s: pods come, go and are
edited, PodGroups change minMember, queue or class, queues their caps and tenancy rules, namespaces their
labels, priority classes their values, nodes come and go, what a session bound runs, what it admitted is
Inqueue): two caches fed the same objects, one whose close takes what the last close told again, the
other telling every job anew each session. Every decision and every word of the two are the same,
session after session; and statuses and events were taken again (the very objects of the last result).
A config that places nothing (its gap said on every pending pod) walks too, alone and reloaded
now and then in turn with one that places.
"""

from __future__ import annotations

import random

import pytest

from tests.builders import config
from tests.unit.test_answers_kept import _RuledWorld
from tests.unit.test_backlog_carried import _lines
from volsched.cache.state import ClusterState
from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import SessionResult
from volsched.framework.runner import EVENTS_SAID, STATUS_SAID, run_session
from volsched.model.vocabulary import PodGroupPhase
from volsched.simulate.scenarios import RECLAIM_PREEMPT_CONFIG

PLACING = config(RECLAIM_PREEMPT_CONFIG)
#: Places nothing: the close puts its gap before every pending pod's refusal.
NOT_PLACING = config(RECLAIM_PREEMPT_CONFIG.replace("allocate, ", "").replace(", backfill", ""))


def _taken_again(result: SessionResult, last: SessionResult | None) -> tuple[int, int]:
    """How many of ``result``'s PodGroup statuses with refusals or a place in line, and of its events,
    are the very objects of ``last``'s."""
    if last is None:
        return 0, 0
    statuses = sum(
        1
        for key, status in result.podgroups.items()
        if (status.rejections or status.queue_position is not None) and last.podgroups.get(key) is status
    )
    before = {id(e) for e in last.events}
    return statuses, sum(1 for e in result.events if id(e) in before)


@pytest.mark.parametrize(
    ("seed", "configs"),
    [
        *((s, (PLACING,)) for s in range(12)),
        *((s, (NOT_PLACING,)) for s in range(3)),
        *((s, (PLACING, NOT_PLACING)) for s in range(4)),  # (the config reloaded now and then)
    ],
)
def test_a_close_taking_what_it_told_again_tells_as_one_telling_anew(
    seed: int, configs: tuple[SchedulerConfig, ...]
) -> None:
    rng = random.Random(seed)
    world = _RuledWorld(rng)
    keeping, anew = ClusterState(), ClusterState()
    for state in (keeping, anew):
        for obj in world.objs.values():
            state.apply(obj)
    last: SessionResult | None = None
    statuses_again = events_again = 0
    for step in range(25):
        now = 10.0 + step
        conf = rng.choice(configs)
        result = run_session(keeping.snapshot(now=now), conf)
        other = anew.snapshot(now=now)
        other.kept.pop(STATUS_SAID, None)
        other.kept.pop(EVENTS_SAID, None)
        expected = run_session(other, conf)
        assert _lines(result) == _lines(expected), f"step {step}"
        assert result.rejections == expected.rejections
        statuses, events = _taken_again(result, last)
        statuses_again += statuses
        events_again += events
        last = result
        applied, deleted = world.step()
        if rng.random() < 0.75:  # (else the session's binds are lost: the cache never sees them)
            applied += world.ran(result)
        for state in (keeping, anew):
            for key in result.admitted:
                state.set_podgroup_phase(key, PodGroupPhase.INQUEUE)
            for obj in applied:
                state.apply(obj)
        if rng.random() < 0.2:
            keeping.snapshot(now=now)  # (a build whose session never ran: it failed)
        for state in (keeping, anew):
            for kind, ns, name in deleted:
                state.delete(kind, ns or None, name)
    assert statuses_again  # (taken again, not all told anew)
    assert events_again
