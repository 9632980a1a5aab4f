"""What a session does before it runs (the ConfigMap judged or read, Volcano's kinds looked for through
API discovery, a watch started or stopped) is never done on the pod watch's thread: an arriving pod's
session whose turn comes with such a chore due runs on the session thread, woken, and the pod watch reads
its next event meanwhile (a Volcano watch stopped there held it up to 5 s)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import volsched.operator.volcano as volcano_module
from tests.unit._config_reloader import scripted_reloader
from tests.unit._cycle_harness import operator_at
from tests.unit.test_wake import LoopWorld, arrive, in_loop, pod_watch, turn_let_go
from volsched.kube.configsource import ConfigMapText
from volsched.model.vocabulary import QueueSpec, QueueState
from volsched.operator.sessions import SessionLoop


def test_an_arriving_pods_session_with_a_chore_due_runs_on_the_session_thread() -> None:
    world = LoopWorld(period=3600, min_gap=0.0)
    world.sparse = True  # the last session found at most one job to place: the pod's may run inline

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        await asyncio.to_thread(turn_let_go, world)
        world.chores = True
        # The offer came back without a session: the pod watch's thread was not held by it.
        assert await asyncio.to_thread(pod_watch, world, lambda: arrive(world)) == 0
        assert await asyncio.to_thread(world.wait_sessions, 2)  # the session thread ran it, woken
        assert world.threads[1] == world.threads[0]
        assert world.woken() == 1
        world.chores = False  # looked at: the next pod's session runs on the pod watch's thread again
        watch: list[int] = []

        def one() -> object:
            watch.append(threading.get_ident())
            return arrive(world)

        await asyncio.to_thread(turn_let_go, world)
        assert await asyncio.to_thread(pod_watch, world, one) == 1
        assert world.threads[2] == watch[0] != world.threads[0]

    asyncio.run(in_loop(world, body))


def text(version: str) -> ConfigMapText:
    return ConfigMapText(text="actions: [enqueue, allocate]\n", resource_version=version, uid="u")


def test_the_config_is_due_a_look_until_read_when_a_poll_is_due_and_while_an_answer_waits() -> None:
    reloader = scripted_reloader([text("1")], poll_every=30.0)
    assert reloader.due(0.0)  # never read: the next session would read it itself
    assert reloader.reload()
    now = reloader._checked
    assert not reloader.due(now) and not reloader.due(now + 29.9)
    assert reloader.due(now + 30.0)  # a poll to start
    reloader.watched("MODIFIED", {"metadata": {"resourceVersion": "2", "uid": "u"}, "data": {}})
    assert reloader.due(now)  # an answer to judge (a config to load)
    reloader.reload()
    assert not reloader.due(now + 1.0)
    reloader.watching = lambda: True  # a watch answered tells of every change: a due poll does nothing
    assert not reloader.due(now + 30.0)
    reloader.watching = lambda: False
    assert reloader.due(now + 30.0)


def test_volcanos_kinds_are_due_a_look_every_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(volcano_module, "served_resources", lambda *_: set())
    with operator_at(tmp_path) as op:
        every = op.settings.session.volcano_check_every
        op.volcano.follow(force=True)
        now = op.volcano._checked
        assert not op.volcano.due(now + every / 2)
        assert op.volcano.due(now + every)
        op.reloader.known, op.reloader._checked = True, now + every  # its poll not due meanwhile
        assert not SessionLoop.chores_due(op.loop, now + every / 2)
        assert SessionLoop.chores_due(op.loop, now + every)


@pytest.mark.parametrize("inline", [False, True], ids=["session thread", "pod watch's thread"])
def test_a_session_on_the_pod_watchs_thread_leaves_the_chores_to_the_session_thread(
    tmp_path: Path, inline: bool
) -> None:
    """Should a chore fall due between the offer and the session, the session on the pod watch's thread
    still does not do it (nor may it: see the offer); the session thread's next session does."""
    with operator_at(tmp_path) as op:
        done: list[str] = []
        op.reloader.reload = lambda **_: bool(done.append("config"))  # type: ignore[method-assign]
        op.volcano.follow = lambda **_: done.append("volcano")  # type: ignore[method-assign]
        op.loop._turns = SimpleNamespace(inline_now=inline)  # type: ignore[assignment]
        assert op.loop._run_once() is None  # (no apiserver: not the leader, no session)
        assert done == ([] if inline else ["config", "volcano"])


def test_a_queues_finalizer_found_by_a_session_on_the_pod_watchs_thread_is_written_by_the_session_thread(
    tmp_path: Path,
) -> None:
    """A Queue of ours without its finalizer (just made) is guarded after the session that finds it:
    after a session on the pod watch's thread the write (a round trip) is owed, a chore, so the next
    pod's session runs on the session thread and writes it there."""
    with operator_at(tmp_path) as op:
        loop = op.loop
        written: list[tuple[str, bool]] = []
        loop.writer = SimpleNamespace(  # type: ignore[assignment]
            guard_queue=lambda name, _finalizers, *, keep: written.append((name, keep)),
            unsettled_due=lambda: False,
        )
        # (held since before the loop's last look for disruption targets: none is due)
        loop.lease = SimpleNamespace(is_leader=True, acquired_at=0.0)  # type: ignore[assignment]
        op.state.queues["a"] = QueueSpec(
            name="a", weight=1, capability=None, guarantee={}, reclaimable=True, state=QueueState.OPEN
        )
        now = time.monotonic()
        op.reloader.known, op.reloader._checked = True, now  # (no other chore due)
        op.reloader.watching = lambda: True
        op.volcano._checked = now
        assert not loop.chores_due(now)
        result = SimpleNamespace(queues={})
        loop._turns = SimpleNamespace(inline_now=True)  # type: ignore[assignment]
        loop._guard_queues(result)  # type: ignore[arg-type]
        assert written == [] and loop.chores_due(now)  # owed
        loop._turns = SimpleNamespace(inline_now=False)  # type: ignore[assignment]
        loop._guard_queues(result)  # type: ignore[arg-type]
        assert written == [("a", True)] and not loop.chores_due(now)


def _only_the_stale_look_due(op: Any, *, acquired_at: float) -> list[int]:
    """``op``'s loop with a stand-in writer (each look at the cache's pods for disruption targets appends
    how many it was given to the list returned) and a Lease held since ``acquired_at``, with no other
    chore due."""
    loop = op.loop
    looked: list[int] = []

    def withdraw_stale(pods: Any) -> int:
        looked.append(len(list(pods)))
        return 0

    loop.writer = SimpleNamespace(withdraw_stale=withdraw_stale, unsettled_due=lambda: False)
    loop.lease = SimpleNamespace(is_leader=True, acquired_at=acquired_at)
    now = time.monotonic()
    op.reloader.known, op.reloader._checked = True, now
    op.reloader.watching = lambda: True
    op.volcano._checked = now
    return looked


def test_the_first_session_of_a_holding_runs_on_the_session_thread_and_looks_for_disruption_targets(
    tmp_path: Path,
) -> None:
    """A replica that takes the Lease (or starts) looks once at the cache's pods for disruption targets an
    earlier holder left (round trips, when any): a chore, so that session runs on the session thread;
    looked at, it is due no more until the Lease is taken again."""
    with operator_at(tmp_path) as op:
        loop = op.loop
        now = time.monotonic()
        looked = _only_the_stale_look_due(op, acquired_at=now)
        assert loop.chores_due(now)
        loop.withdraw_stale()
        assert looked == [0] and not loop.chores_due(now)
        loop.lease.acquired_at = time.monotonic()  # taken again
        assert loop.chores_due(time.monotonic())


def test_without_a_lease_the_first_session_looks_for_disruption_targets_once(tmp_path: Path) -> None:
    """With ``--no-lease`` the Lease is never acquired (``acquired_at`` stays 0): the one replica looks
    once, before its first session (before: never, and a restart left its pods marked)."""
    with operator_at(tmp_path) as op:
        loop = op.loop
        loop.settings.lease.enabled = False
        now = time.monotonic()
        looked = _only_the_stale_look_due(op, acquired_at=0.0)
        assert loop.chores_due(now)
        loop.withdraw_stale()
        assert looked == [0] and not loop.chores_due(time.monotonic())


def test_a_disruption_target_whose_evictions_outcome_is_known_by_now_is_looked_at_on_the_session_thread(
    tmp_path: Path,
) -> None:
    """A pod marked for an eviction whose answer was lost is looked at again once no request can act any
    more (``KubeWriter.withdraw_unsettled``: a read and a write): a chore, so that session runs on the
    session thread; looked at, it is due no more (note14 Found 6)."""
    with operator_at(tmp_path) as op:
        loop = op.loop
        now = time.monotonic()
        _only_the_stale_look_due(op, acquired_at=0.0)
        due = [True]
        looked: list[int] = []
        loop.writer.unsettled_due = lambda: due[0]

        def withdraw_unsettled() -> int:
            looked.append(1)
            due[0] = False
            return 1

        loop.writer.withdraw_unsettled = withdraw_unsettled
        assert loop.chores_due(now)
        loop.withdraw_unsettled()
        assert looked == [1] and not loop.chores_due(now)
