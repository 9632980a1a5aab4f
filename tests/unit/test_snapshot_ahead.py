"""The next snapshot's work done ahead, between sessions (``ClusterState.build_ahead``, called by the
operator's session thread while nothing waits: ``volsched.operator.sessions``' ``_Turns.ahead``): the
snapshots after it hold what they would hold without it, and name the jobs it touched among those touched
since the last snapshot, so that what a session keeps for the next (its kept answers, the jobs it was lent
and returned) goes stale with none; it pauses the collector and freezes a large build as a snapshot does;
it takes its turn with the snapshots; a failure of it costs the next snapshot a whole read, not a change.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import random
import threading
from typing import Any

import pytest

from tests.builders import node, pod, podgroup
from tests.unit.test_cache_snapshot import DEFAULT, PREEMPT, RandomPort, Walk, digest
from tests.unit.test_session_carried import _said
from tests.unit.test_wake import LoopWorld, WaitedLock, in_loop, parked
from volsched.cache import state as state_module
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cycle import BOUND, NullPort, run_cycle
from volsched.framework.runner import run_session
from volsched.model.cluster import RETURNED
from volsched.operator import sessions
from volsched.operator.sessions import Nudge


def _ahead_now_and_then(walk: Walk, draws: random.Random) -> None:
    """Between two steps of ``walk``, now and then, the next snapshot's work done ahead (draws of their own:
    the walk's own are as they were)."""
    if draws.random() < 0.4:
        walk.feeder.state.build_ahead()


@pytest.mark.parametrize("seed", range(10))
def test_snapshots_after_work_done_ahead_are_those_without_it_and_name_every_job_it_touched(
    seed: int,
) -> None:
    """Two caches walked through the same events, one with the next snapshot's work done ahead now and
    then: every snapshot holds the same, each session on them decides the same, and the snapshot after
    work done ahead names as touched every job the other names (those it touched among them), or says it
    does not know (None)."""
    plain, ahead = Walk(seed, strays=True), Walk(seed, strays=True)
    draws = random.Random(-7 - seed)
    done = 0
    for i in range(300):
        plain.step()
        ahead.step()
        before = ahead.feeder.state.behind()
        _ahead_now_and_then(ahead, draws)
        done += before and not ahead.feeder.state.behind()
        if i % 3 == 0:
            plain.now += 1
            ahead.now += 1
            a = plain.feeder.state.snapshot(now=plain.now)
            b = ahead.feeder.state.snapshot(now=ahead.now)
            assert digest(a) == digest(b), f"seed {seed}, step {i}"
            # (None: not known. Work done ahead may see a state between the two that builds anew, a
            # resource name come and gone, and so know less; never more.)
            if b.touched is not None:
                assert a.touched is not None, f"seed {seed}, step {i}"
                assert a.touched <= b.touched, f"seed {seed}, step {i}: {sorted(a.touched - b.touched)}"
            assert a.private == b.private, f"seed {seed}, step {i}"
            config = PREEMPT if i % 2 else DEFAULT
            assert _said(run_session(a, config)) == _said(run_session(b, config)), f"seed {seed}, step {i}"
    assert done > 30  # (the work was done ahead, with something to do, many times over)


@pytest.mark.parametrize("seed", range(4))
def test_cycles_with_work_done_ahead_between_them_decide_as_without(seed: int) -> None:
    """The engine's cycles (a session, its binds, their outcomes back into the cache), the next snapshot's
    work done ahead after some, decide as without it, cycle by cycle."""
    plain, ahead = Walk(seed), Walk(seed)
    draws = random.Random(-9 - seed)
    for i in range(240):
        plain.step()
        ahead.step()
        if i % 2 == 0:
            plain.now += 1
            ahead.now += 1
            ports = RandomPort(random.Random(i)), RandomPort(random.Random(i))
            said = [
                _said(run_cycle(w.feeder, DEFAULT, port, now=w.now).result)
                for w, port in zip((plain, ahead), ports, strict=True)
            ]
            assert said[0] == said[1], f"seed {seed}, cycle {i}"
        _ahead_now_and_then(ahead, draws)


def _gang_half_there() -> tuple[Feeder, ClusterState]:
    """A node, and a gang of two (minMember 2) of which one pod is there: the session keeps the answer
    that its job is not valid yet."""
    feeder = Feeder(ClusterState())
    for obj in (node("n1", cpu="4"), podgroup("g", min_member=2), pod("g-0", group="g")):
        feeder.apply(obj["kind"], obj)
    return feeder, feeder.state


def test_a_kept_answer_about_a_job_work_done_ahead_touched_is_asked_again() -> None:
    """The gang's second pod comes and the next snapshot's work is done ahead: the snapshot after it names
    the gang's job as touched, so its kept answer (not valid: one member of two) is not taken again and
    the gang is placed. Had the work done ahead kept its touched jobs to itself, the session would take
    the kept answer and place nothing."""
    feeder, state = _gang_half_there()
    port = NullPort()
    first = run_cycle(feeder, DEFAULT, port, now=1000.0)
    assert not first.result.binds  # (half a gang: nothing placed, its answer kept)
    second = pod("g-1", group="g")
    feeder.apply("Pod", second)
    assert state.build_ahead()
    report = run_cycle(feeder, DEFAULT, port, now=1001.0)
    assert sorted(b.pod for b in report.result.binds) == ["default/g-0", "default/g-1"]
    assert all(b.result == BOUND for b in report.binds)


def test_the_snapshot_after_work_done_ahead_names_what_it_touched_and_what_changed_since() -> None:
    state = ClusterState()
    for obj in (node("n1", cpu="4"), pod("a"), pod("b")):
        state.apply(obj)
    state.snapshot(now=1.0)
    state.apply(pod("a", node="n1", phase="Running"))
    assert state.build_ahead()
    assert not state.build_ahead()  # (nothing changed since: nothing to do)
    state.apply(pod("b", node="n1", phase="Running"))
    assert state.snapshot(now=2.0).touched == {"default/a", "default/b"}
    state.apply(pod("c"))
    assert state.snapshot(now=3.0).touched == {"default/c"}  # (the union went with the snapshot)


def _set_aside(feeder: Feeder) -> None:
    """A node, and a pod standing alone that fits on none (lent to every session and returned)."""
    for obj in (node("n1", cpu="4"), pod("stuck", node_selector={"zone": "nowhere"}), pod("b")):
        feeder.apply(obj["kind"], obj)


def test_the_jobs_the_last_session_returned_are_left_to_the_next_snapshot() -> None:
    """A pod set aside is lent to each session, and the next snapshot lends the very job the last session
    returned, reset. Work done ahead between them leaves those jobs to that snapshot: were it to lend them
    again itself, it would make copies of the same, and the jobs returned would be taken back by none."""
    feeder = Feeder(ClusterState())
    _set_aside(feeder)
    state = feeder.state
    for now in (1000.0, 1001.0):
        run_cycle(feeder, DEFAULT, NullPort(), now=now)  # (b bound, stuck set aside: lent, returned)
    returned = state._builder.kept[RETURNED]
    state.apply(pod("other", node="n1", phase="Running"))  # (a change to do ahead)
    assert state.build_ahead()
    assert state._builder.kept.get(RETURNED) is returned  # (left to the snapshot)
    snap = state.snapshot(now=1002.0)
    assert snap.jobs["default/stuck"] is returned["default/stuck"]


def test_a_view_read_whole_ahead_reads_as_read_whole_by_the_next_snapshot() -> None:
    """The task table replaced whole (as benchmarks fill it): the cache's order may be new, and the next
    view is read whole. Work done ahead that read it so leaves the next snapshot to take it as read whole:
    a gang the last session was lent and returned is assembled anew in the new order, not taken back as it
    was (its members in the old order)."""
    feeder = Feeder(ClusterState())
    for obj in (
        node("n1", cpu="4"),
        podgroup("g", min_member=2),
        *(pod(f"g-{i}", group="g", node_selector={"zone": "nowhere"}) for i in range(2)),
    ):
        feeder.apply(obj["kind"], obj)
    state = feeder.state
    for now in (1000.0, 1001.0):
        run_cycle(feeder, DEFAULT, NullPort(), now=now)  # (the gang fits nowhere: lent, returned)
    order = ["default/g-1", "default/g-0"]
    state.tasks = {key: state.tasks[key] for key in order}
    assert state.build_ahead()
    after = state.snapshot(now=1002.0)
    fresh = ClusterState()
    for obj in (node("n1", cpu="4"), podgroup("g", min_member=2)):
        fresh.apply(obj)
    for key in order:
        fresh.apply(state.raw_pods[key])
    assert list(after.jobs["default/g"].tasks) == order
    assert digest(after) == digest(fresh.snapshot(now=1002.0))


def test_work_done_ahead_pauses_the_collector_and_freezes_a_large_build_as_a_snapshot_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = ClusterState()
    for obj in (node("n1", cpu="4"), *(pod(f"p{i}") for i in range(6))):
        state.apply(obj)
    state.snapshot(now=1.0)
    for i in range(6):
        state.apply(pod(f"p{i}", node="n1", phase="Running"))
    builder = state._builder
    real = builder.ahead
    collecting: list[bool] = []

    def ahead(*args: Any, **kwargs: Any) -> None:
        collecting.append(gc.isenabled())
        real(*args, **kwargs)

    monkeypatch.setattr(builder, "ahead", ahead)
    monkeypatch.setattr(state_module, "FREEZE_REBUILT", 5)  # (six entries made anew: a large build here)
    frozen: list[int] = []
    monkeypatch.setattr(state_module.gc, "freeze", lambda: frozen.append(builder.rebuilt))
    was = gc.isenabled()
    gc.enable()
    try:
        assert state.build_ahead()
        assert gc.isenabled()
    finally:
        if not was:
            gc.disable()
    assert collecting == [False]
    assert frozen == [6]


def test_work_done_ahead_waits_for_a_snapshot_under_way_and_a_snapshot_for_it() -> None:
    """One snapshot at a time: work done ahead takes the snapshots' turn (the builder reads the change log
    of the view before), and waits for it while a snapshot holds it."""
    state = ClusterState()
    for obj in (node("n1", cpu="4"), pod("a")):
        state.apply(obj)
    state.snapshot(now=1.0)
    state.apply(pod("a", node="n1", phase="Running"))
    turn = WaitedLock()
    state._snapshot_lock = turn  # type: ignore[assignment]
    done: list[bool] = []
    assert turn.acquire()  # (a snapshot under way)
    worker = threading.Thread(target=lambda: done.append(state.build_ahead()), name="ahead")
    worker.start()
    turn.wait_for_waiter(lambda name: name == "ahead")
    assert not done
    turn.release()
    worker.join(30)
    assert done == [True]


class AheadFails(Exception):
    pass


@pytest.mark.parametrize("where", ["prepare", "ahead"])
@pytest.mark.parametrize("seed", range(3))
def test_work_done_ahead_that_raised_loses_no_change_to_the_next_snapshot(
    seed: int, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Work done ahead that raises midway took the keys touched since the last view with it, and may have
    brought the base part of the way: the next snapshot reads the cache whole and builds anew, and holds
    what one built from scratch holds; nothing is done ahead again before it."""
    walk = Walk(seed, strays=True)
    state = walk.feeder.state
    builder = state._builder
    real = getattr(builder, where)
    fail = [False]

    def failing(*args: Any, **kwargs: Any) -> Any:
        if fail[0]:
            if where == "ahead":
                real(*args, **kwargs)  # (the work done, then a failure after it: its state moved on)
            raise AheadFails
        return real(*args, **kwargs)

    monkeypatch.setattr(builder, where, failing)
    failed = 0
    for i in range(240):
        walk.step()
        if state.behind() and walk.rng.random() < 0.2:
            fail[0] = True
            with pytest.raises(AheadFails):
                state.build_ahead()
            fail[0] = False
            failed += 1
            assert not state.behind()
        if i % 3 == 0:
            walk.now += 1
            incremental = state.snapshot(now=walk.now)
            assert digest(incremental) == digest(walk.from_scratch().snapshot(now=walk.now)), f"step {i}"
    assert failed > 5


# --- the session loop ---------------------------------------------------------------------------------


def _turns(world: LoopWorld) -> sessions._Turns:
    return sessions._Turns(world, halt=threading.Event(), nudge=Nudge())  # type: ignore[arg-type]


def _behind(world: LoopWorld) -> None:
    """A snapshot taken, then a pod changed since: work for the next snapshot (what rang taken: no session
    owed)."""
    state = world.state
    state.apply(node("n1", cpu="4"))
    state.apply(pod("a"))
    state.snapshot(now=1.0)
    state.apply(pod("a", node="n1", phase="Running"))
    state.doorbell.take()


def test_the_session_thread_does_the_next_snapshots_work_ahead_a_gap_after_the_last_session() -> None:
    world = LoopWorld(period=3600, min_gap=0.02)
    turns = _turns(world)
    _behind(world)
    turns.ended = 100.0
    assert turns.ahead(100.005) == pytest.approx(0.015)  # (not yet: the gap after the session)
    assert world.state.behind()
    assert turns.ahead(100.02) == float("inf")
    assert not world.state.behind()


@pytest.mark.parametrize("why", ["a pod arrived", "a follower", "stopping"])
def test_no_work_is_done_ahead_while_a_session_is_owed_or_by_a_follower(why: str) -> None:
    world = LoopWorld(period=3600, min_gap=0.0, leader=why != "a follower")
    turns = _turns(world)
    _behind(world)
    if why == "a pod arrived":
        world.state.doorbell.ring("arrived")  # (its session's snapshot does the work)
    if why == "stopping":
        turns.halt.set()
    assert turns.ahead(100.0) == float("inf")
    assert world.state.behind()


def test_work_done_ahead_that_fails_is_logged_and_the_session_thread_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    world = LoopWorld(period=3600, min_gap=0.0)
    turns = _turns(world)
    _behind(world)

    def failing(*args: Any, **kwargs: Any) -> None:
        raise AheadFails("a defect")

    monkeypatch.setattr(world.state._builder, "ahead", failing)
    with caplog.at_level(logging.ERROR, logger="volsched.operator"):
        assert turns.ahead(100.0) == float("inf")
    assert any(r.exc_info and r.exc_info[0] is AheadFails for r in caplog.records)
    assert not world.state.behind()  # (the next snapshot reads the cache whole: nothing to do ahead)
    snap = world.state.snapshot(now=2.0)
    assert snap.touched is None and list(snap.nodes.tasks[0]) == ["default/a"]


def test_a_pod_event_that_calls_for_no_session_wakes_the_session_thread_once_to_do_the_work_ahead() -> None:
    world = LoopWorld(period=3600, min_gap=0.0)
    turns = _turns(world)
    turns.fell_behind()
    assert not turns.nudge.is_set()  # (nothing changed since the last snapshot: no snapshot yet)
    _behind(world)
    turns.fell_behind()
    assert turns.nudge.is_set()
    turns.nudge.clear()
    turns.fell_behind()  # (asked already)
    assert not turns.nudge.is_set()
    assert turns.ahead(100.0) == float("inf")  # (done: asked again by the next change)
    world.state.apply(pod("b"))
    world.state.doorbell.take()
    turns.fell_behind()
    assert turns.nudge.is_set()


def test_the_session_loop_does_the_work_ahead_between_sessions_and_parks_after() -> None:
    """The session thread, woken by a pod event that called for no session, does the next snapshot's
    work ahead, and parks for the period after it (nothing more to do): no session for it."""
    world = LoopWorld(period=3600, min_gap=0.0)
    done = threading.Event()
    real = world.state.build_ahead

    def build_ahead() -> bool:
        out = real()
        done.set()
        return out

    world.state.build_ahead = build_ahead  # type: ignore[method-assign]
    state = world.state
    state.apply(node("n1", cpu="4"))
    state.apply(pod("a"))
    state.snapshot(now=1.0)

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        assert await parked(world) > 60
        state.apply(pod("a", node="n1", phase="Running"))  # (the watch shows it bound and running)
        world._turns.fell_behind()
        assert await asyncio.to_thread(done.wait, 30)
        assert await parked(world) > 60
        assert not world.state.behind()
        assert world.sessions == 1

    asyncio.run(in_loop(world, body))
