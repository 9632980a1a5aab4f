"""A Queue's status that changes only its figures is written at most once per second (fault injection).

Every arriving pod changes its queue's ``allocated``; written at once, that was one Queue status PATCH
per pod. The background port holds such writes back to one per ``queue_status_every`` seconds per
Queue, and its status thread writes the last one held when its time is up, with or without a later
session; what a user acts on (the Queue's state, its conditions) is written at once. The writer's
clock is the test's, so what falls within the second does not depend on the machine's load.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from kubernetes import client

from tests.builders import podgroup, queue
from tests.fences import Fence
from tests.unit._background_port import Clock, background_port
from tests.unit._cycle_harness import cache
from tests.unit._scripted_server import ScriptedServer, loopback_config
from volsched.cache.feeder import Feeder
from volsched.framework.decisions import PodGroupStatus, QueueStatus, SessionResult
from volsched.kube.port import HELD_HERE_QUEUES, KubePort
from volsched.kube.writer import KubeWriter, WriterSettings

HOLD = 20.0
STATUS = "/queues/q/status"


@pytest.fixture
def port(server: ScriptedServer, clock: Clock, fence: Fence) -> Iterator[KubePort]:
    with background_port(
        server, fence, clock=clock, pool_size=4, queue_status_every=1.0, left_behind=False
    ) as p:
        yield p


@pytest.fixture
def feeder() -> Feeder:
    return cache(queue("q"))


def _session(cpu: int, *, state: str = "Open") -> SessionResult:
    status = QueueStatus(
        name="q",
        state=state,
        weight=1,
        allocated={"cpu": float(cpu)},
        request={},
        guarantee={},
        capability=None,
    )
    return SessionResult(queues={"q": status})


def _inqueue() -> PodGroupStatus:
    return PodGroupStatus(
        phase="Inqueue", queue="q", min_member=1, running=0, succeeded=0, failed=0, pending=1, scheduled=0
    )


def _sessions(port: KubePort, clock: Clock, feeder: Feeder, *cpus: int) -> None:
    """One session a tenth of a second for each of ``cpus``, its figures for Queue q, each drained."""
    for cpu in cpus:
        port.write_status(_session(cpu), feeder)
        assert port.drain(HOLD)
        clock.now += 0.1


def _held_written(port: KubePort) -> threading.Event:
    """Set once the port's status thread has made its next write of what it held (sent or refused)."""
    done = threading.Event()
    original = port.writer.write_held

    def write_held() -> tuple[int, int, list[str]]:
        try:
            return original()
        finally:
            done.set()

    port.writer.write_held = write_held  # type: ignore[method-assign]
    return done


def _written(server: ScriptedServer) -> list[dict[str, Any]]:
    """The statuses written to Queue q, in order (each a JSON patch replacing the whole status)."""
    return [r.body[0]["value"] for r in server.sent(STATUS)]  # type: ignore[index]


def _wait_for_writes(server: ScriptedServer, n: int) -> None:
    tick = threading.Event()
    for _ in range(int(HOLD / 0.02)):
        if len(server.sent(STATUS)) >= n:
            return
        tick.wait(0.02)


def test_sessions_within_a_second_write_the_queue_once_with_the_last_figures_without_another_session(
    server: ScriptedServer, port: KubePort, clock: Clock, feeder: Feeder
) -> None:
    port.write_status(_session(1), feeder)
    assert port.drain(HOLD)
    assert [s["allocated"] for s in _written(server)] == [{"cpu": "1"}]  # the first is written at once
    for cpu in range(2, 7):  # five sessions within the second
        clock.now += 0.1
        port.write_status(_session(cpu), feeder)
        assert port.drain(HOLD)  # (drain does not wait for the held figures)
    assert len(_written(server)) == 1
    assert not port.owes()  # no session is called for: the status thread writes them itself
    clock.now = 101.0  # the second is up; no session runs
    _wait_for_writes(server, 2)
    assert [s["allocated"] for s in _written(server)] == [{"cpu": "1"}, {"cpu": "6"}]
    assert port.writer.held_due() is None


def test_a_queues_state_is_written_at_once_with_its_figures_and_nothing_stays_held(
    server: ScriptedServer, port: KubePort, clock: Clock, feeder: Feeder
) -> None:
    for cpu, state in ((1, "Open"), (2, "Open"), (3, "Closed")):
        port.write_status(_session(cpu, state=state), feeder)
        assert port.drain(HOLD)  # (each session's status written or held before the next's)
        clock.now += 0.1
    written = _written(server)
    assert [(s["state"], s["allocated"]) for s in written] == [
        ("Open", {"cpu": "1"}),
        ("Closed", {"cpu": "3"}),
    ]
    assert port.writer.held_due() is None


def test_figures_back_to_what_was_written_owe_nothing(
    server: ScriptedServer, port: KubePort, clock: Clock, feeder: Feeder
) -> None:
    _sessions(port, clock, feeder, 1, 2, 1)
    assert port.writer.held_due() is None
    assert len(_written(server)) == 1


def test_held_figures_are_not_written_once_the_lease_may_be_lost(
    server: ScriptedServer, port: KubePort, clock: Clock, fence: Fence, feeder: Feeder
) -> None:
    _sessions(port, clock, feeder, 1, 2)
    assert port.writer.held_due() is not None
    fence.open = False
    done = _held_written(port)
    clock.now = 101.0
    assert done.wait(HOLD)  # the held write's time came, and it was refused unsent
    assert len(_written(server)) == 1
    assert port.writer.held_due() is None


def test_held_figures_the_fence_refused_are_written_once_the_lease_is_held_again(
    server: ScriptedServer, port: KubePort, clock: Clock, fence: Fence, feeder: Feeder
) -> None:
    # The defect: refused unsent (the Lease not renewed in time) under a holding that then renewed, the
    # held figures were dropped and nothing was owed: in a quiet cluster no session ran again and the
    # Queue kept saying cpu 1 while 2 were allocated, until the queue next changed.
    _sessions(port, clock, feeder, 1, 2)
    fence.open = False
    done = _held_written(port)
    clock.now = 101.0
    assert done.wait(HOLD)  # refused unsent
    assert port.drain(HOLD)
    assert len(_written(server)) == 1
    assert port.owes()  # a session is called for (IdleSkip runs one), not skipped as nothing changed
    fence.open = True  # renewed: the same holding
    port.write_status(_session(2), feeder)  # that session: nothing else changed
    assert port.drain(HOLD)
    _wait_for_writes(server, 2)
    assert [s["allocated"] for s in _written(server)] == [{"cpu": "1"}, {"cpu": "2"}]
    assert not port.owes()


def test_a_podgroup_status_the_fence_refused_is_owed(
    server: ScriptedServer, port: KubePort, clock: Clock, fence: Fence
) -> None:
    feeder = cache(queue("q"), podgroup("g", queue="q"))
    result = SessionResult(podgroups={"default/g": _inqueue()})
    fence.open = False
    port.write_status(result, feeder)
    assert port.drain(HOLD)
    assert server.sent("/podgroups/g/status") == []
    assert port.owes()
    fence.open = True
    port.write_status(result, feeder)
    assert port.drain(HOLD)
    assert len(server.sent("/podgroups/g/status")) == 1
    assert not port.owes()


def test_held_figures_written_do_not_clear_what_a_sessions_writes_left_owed(
    server: ScriptedServer, port: KubePort, clock: Clock, feeder: Feeder
) -> None:
    port.write_status(_session(1), feeder)
    assert port.drain(HOLD)
    clock.now += 0.1
    server.script["/podgroups/g/status"] = [(500, {}, {"kind": "Status", "code": 500})]
    result = SessionResult(
        queues=_session(2).queues,  # held
        podgroups={"default/g": _inqueue()},
    )
    port.write_status(result, cache(queue("q"), podgroup("g", queue="q")))
    assert port.drain(HOLD)
    assert port.owes()  # the PodGroup's status failed
    clock.now = 101.0  # the held figures go out alone, and are written
    _wait_for_writes(server, 2)
    assert port.drain(HOLD)
    assert port.owes()  # still: only a session's writes retry the PodGroup's


def test_the_synchronous_port_writes_each_queue_status_at_once(
    server: ScriptedServer, clock: Clock, feeder: Feeder
) -> None:
    api = client.ApiClient(loopback_config(server.port, retries=False, pool_size=4))
    writer = KubeWriter(api, WriterSettings(), clock=clock)
    try:
        sync = KubePort(writer)  # no status thread to write what is held: nothing is
        for cpu in (1, 2, 3):
            clock.now += 0.1
            sync.write_status(_session(cpu), feeder)
        assert [s["allocated"] for s in _written(server)] == [{"cpu": str(c)} for c in (1, 2, 3)]
    finally:
        writer.close()
        api.close()  # type: ignore[no-untyped-call]


def test_figures_held_within_the_second_hand_no_job_to_the_status_thread(
    server: ScriptedServer, port: KubePort, clock: Clock, feeder: Feeder
) -> None:
    """A session whose only write would be its Queue's figures, held back within their second, holds
    them on its own thread: no job is copied out of the cache and run on the status thread for it (one
    per arriving pod where the pods' Queue is an object); the status thread, started for what is held,
    writes the last figures when the second is up."""
    port.write_status(_session(1), feeder)
    assert port.drain(HOLD)
    jobs = port.status_jobs
    for cpu in range(2, 7):
        clock.now += 0.1
        port.write_status(_session(cpu), feeder)
        assert port.drain(HOLD)
    assert port.status_jobs == jobs  # each held here
    assert len(_written(server)) == 1
    clock.now = 101.0
    _wait_for_writes(server, 2)
    assert [s["allocated"] for s in _written(server)] == [{"cpu": "1"}, {"cpu": "6"}]
    assert port.writer.held_due() is None
    assert port.drain(HOLD)  # (the status thread done with that write)
    clock.now += 0.1  # within the second of that write: held here again, the status thread started anew
    port.write_status(_session(7), feeder)
    assert port.status_jobs == jobs
    clock.now = 102.5
    _wait_for_writes(server, 3)
    assert [s["allocated"] for s in _written(server)][-1] == {"cpu": "7"}


def test_under_another_holding_of_the_lease_the_figures_are_written_at_once(
    server: ScriptedServer, port: KubePort, clock: Clock, fence: Fence, feeder: Feeder
) -> None:
    """Another replica may have written the Queue's status while another holding was in force: the
    first session under a new holding writes its figures at once (through the status thread's job, as
    every status), not held against what this replica wrote before."""
    port.write_status(_session(1), feeder)
    assert port.drain(HOLD)
    fence.acquired_at = 2.0  # lost and taken again
    clock.now += 0.1
    port.write_status(_session(2), feeder)
    assert port.drain(HOLD)
    assert [s["allocated"] for s in _written(server)] == [{"cpu": "1"}, {"cpu": "2"}]


def test_a_session_with_many_queues_leaves_their_statuses_to_the_status_thread(
    server: ScriptedServer, port: KubePort, clock: Clock
) -> None:
    """Beyond ``HELD_HERE_QUEUES`` Queues the statuses are rendered on the status thread, not on the
    session's (held there all the same)."""
    names = [f"q{i}" for i in range(HELD_HERE_QUEUES + 1)]
    feeder = cache(*(queue(n) for n in names))

    def session(cpu: int) -> SessionResult:
        return SessionResult(queues={n: replace(_session(cpu).queues["q"], name=n) for n in names})

    port.write_status(session(1), feeder)
    assert port.drain(HOLD)
    clock.now += 0.1
    port.write_status(session(2), feeder)
    assert port.drain(HOLD)
    assert port.status_jobs == 2
    assert len(server.sent("/status")) == len(names)  # the second session's held
    assert port.writer.held_due() is not None
