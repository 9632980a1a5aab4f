"""A session's status writes go behind the binds in flight, each of them, within a bound (fault injection).

During a burst (a backlog placed over several sessions, the watch delivering it in pieces) the status
thread began writing in a moment with no bind in flight and then sent every PodGroup's status while the
next sessions' binds went. Each write now waits while binds are in flight; a write a newer session's
status (waiting) makes again is left to it; an event is never left (a PodGroup's ``Scheduled`` is said
only by the session that placed it: one whose status a newer one replaced lost it). Nothing waits
longer than ``status_after_binds`` after its session handed it over, on the writer's clock (the
test's here: what falls within the bound does not depend on the machine's load), and nothing held is
sent under another holding of the Lease. The server holds the requests the test names until it lets
them go.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.builders import node, pod, podgroup
from tests.fences import Fence
from tests.unit._background_port import Clock, background_port
from tests.unit._cycle_harness import cache, operator_at
from tests.unit._scripted_server import ScriptedServer
from volsched.cache.feeder import Feeder
from volsched.framework.decisions import Bind, Event, PodGroupStatus, SessionResult
from volsched.kube.port import KubePort
from volsched.kube.writer import WriterSettings

HOLD = 20.0


class HoldingServer(ScriptedServer):
    """Holds each request whose path contains a key of ``gates`` until that gate is set (at most
    ``HOLD``); ``arrived`` counts the requests held."""

    def __init__(self) -> None:
        super().__init__()
        self.gates: dict[str, threading.Event] = {}
        self.arrived: dict[str, threading.Semaphore] = {}

    def hold(self, part: str) -> threading.Event:
        self.gates[part] = threading.Event()
        self.arrived[part] = threading.Semaphore(0)
        return self.gates[part]

    def before_answer(self, path: str) -> None:
        for part, gate in list(self.gates.items()):
            if part in path:
                self.arrived[part].release()
                gate.wait(HOLD)

    def release_all(self) -> None:
        for gate in self.gates.values():
            gate.set()


@pytest.fixture
def server() -> Iterator[HoldingServer]:
    s = HoldingServer()
    yield s
    s.release_all()
    s.httpd.shutdown()


@pytest.fixture
def port(server: HoldingServer, clock: Clock, fence: Fence) -> Iterator[KubePort]:
    # One status write at a time: which ones went before a bind is then the test's to say.
    settings = WriterSettings(bind_workers=2, workers=1)
    with background_port(server, fence, settings=settings, clock=clock, left_behind=False) as p:
        try:
            yield p
        finally:
            server.release_all()
            p.drain(HOLD)


@pytest.fixture
def feeder() -> Feeder:
    return cache(node("n1", cpu="4"), pod("a"), pod("b"), podgroup("g1"), podgroup("g2"))


def _status(scheduled: int) -> PodGroupStatus:
    return PodGroupStatus(
        phase="Running" if scheduled >= 4 else "Pending",
        queue="default",
        min_member=4,
        running=0,
        succeeded=0,
        failed=0,
        pending=4 - scheduled,
        scheduled=scheduled,
    )


def _session(g1: int, g2: int, *, placed: tuple[str, ...] = ()) -> SessionResult:
    """Two PodGroups' status, with ``g1`` and ``g2`` pods placed; a ``Scheduled`` event for each of
    ``placed``."""
    events = [
        Event(kind="PodGroup", namespace="default", name=n, reason="Scheduled", message=f"{n} placed")
        for n in placed
    ]
    return SessionResult(podgroups={"default/g1": _status(g1), "default/g2": _status(g2)}, events=events)


def _bind(port: KubePort, feeder: Feeder, name: str) -> None:
    port.bind([Bind(pod=f"default/{name}", uid=f"uid-{name}", node="n1")], feeder.pods([f"default/{name}"]))


def _until(condition: Any) -> None:
    """Wait (at most HOLD) until ``condition()``."""
    tick = threading.Event()
    for _ in range(int(HOLD / 0.01)):
        if condition():
            return
        tick.wait(0.01)
    raise AssertionError("not within the wait")


def _scheduled(server: HoldingServer, group: str) -> list[int]:
    """What each status write to PodGroup ``group`` said was scheduled, in order."""
    return [r.body["status"]["scheduled"] for r in server.sent(f"/podgroups/{group}/status")]


def _events(server: HoldingServer) -> list[str]:
    return sorted(r.body["involvedObject"]["name"] for r in server.sent("/events"))


def test_a_replaced_sessions_scheduled_event_is_still_written(
    server: HoldingServer, port: KubePort, feeder: Feeder
) -> None:
    bind = server.hold("/pods/a/binding")
    _bind(port, feeder, "a")
    assert server.arrived["/pods/a/binding"].acquire(timeout=HOLD)
    port.write_status(_session(4, 0, placed=("g1",)), feeder)  # waits for a's bind
    _until(lambda: port.status_held)
    port.write_status(_session(4, 4, placed=("g2",)), feeder)  # replaces it before it started
    bind.set()
    assert port.drain(HOLD)
    assert _events(server) == ["g1", "g2"]  # g1's Scheduled came with the replaced status
    assert _scheduled(server, "g1") == [4]
    assert _scheduled(server, "g2") == [4]


def test_a_status_waits_for_a_later_session_running_and_is_replaced_by_its_status(
    server: HoldingServer, port: KubePort, feeder: Feeder
) -> None:
    """A burst's first sessions chase the watch's delivery of the backlog: a session's status (a gang
    whose members were not all read yet, told it waits) waited for its binds, and once they were
    answered went out while the next session, which placed that gang, was still deciding: written
    stale, beside the next session's binds. It now waits for the session running, whose status
    replaces it (the waiting gang's Unschedulable event is not carried: the newer says why if it still
    waits)."""
    bind = server.hold("/pods/a/binding")
    port.plan_under(None)  # session 1
    _bind(port, feeder, "a")
    assert server.arrived["/pods/a/binding"].acquire(timeout=HOLD)
    waiting = _session(4, 2, placed=("g1",))
    waiting.events.append(
        Event(kind="PodGroup", namespace="default", name="g2", reason="Unschedulable", message="2 of 4")
    )
    port.write_status(waiting, feeder)  # session 1 hands its status over: it waits for a's bind
    _until(lambda: port.status_held)
    port.plan_under(None)  # session 2 begins, deciding g2
    bind.set()
    _until(lambda: port.binds_in_flight == 0)
    # Session 1's status sent (before), or the status thread waiting for session 2 (now).
    _until(lambda: server.sent("/podgroups/g1/status") or getattr(port, "status_held_for_session", 0))
    port.write_status(_session(4, 4, placed=("g2",)), feeder)  # session 2's status
    assert port.drain(HOLD)
    assert _scheduled(server, "g2") == [4]  # once, as session 2 said it
    assert _scheduled(server, "g1") == [4]
    assert _events(server) == ["g1", "g2"]  # g1's Scheduled carried over; g2's Scheduled, not its wait
    assert [r.body["reason"] for r in server.sent("/events")].count("Unschedulable") == 0


def test_a_session_skipped_or_failed_holds_no_status(
    server: HoldingServer, port: KubePort, feeder: Feeder
) -> None:
    """A session that hands no status over (skipped, or raised) says it ended: the status waiting for
    it goes then."""
    bind = server.hold("/pods/a/binding")
    _bind(port, feeder, "a")
    assert server.arrived["/pods/a/binding"].acquire(timeout=HOLD)
    port.write_status(_session(4, 4, placed=("g1",)), feeder)
    _until(lambda: port.status_held)
    port.plan_under(None)
    bind.set()
    _until(lambda: port.binds_in_flight == 0 and port.status_held_for_session)
    assert not server.sent("/podgroups/g1/status")
    port.session_ended()
    _until(lambda: len(server.sent("/events")) == 1)
    assert _scheduled(server, "g1") == [4]


def test_a_status_write_waits_for_binds_handed_over_after_its_job_began(
    server: HoldingServer, port: KubePort, feeder: Feeder
) -> None:
    """The job begins with no bind in flight; a bind handed over while its first write is at the server
    goes before its second write."""
    first = server.hold("/podgroups/g1/status")
    bind = server.hold("/pods/a/binding")
    port.write_status(_session(4, 4, placed=()), feeder)
    assert server.arrived["/podgroups/g1/status"].acquire(timeout=HOLD)  # the job began
    _bind(port, feeder, "a")
    assert server.arrived["/pods/a/binding"].acquire(timeout=HOLD)
    let_go: list[bool] = []
    original = server.before_answer

    def before_answer(path: str) -> None:
        if "/podgroups/g2/status" in path:
            let_go.append(bind.is_set())
        original(path)

    server.before_answer = before_answer  # type: ignore[method-assign]
    first.set()
    _until(lambda: let_go or port.status_held)  # g2's status sent, or waiting for the bind
    bind.set()
    assert port.drain(HOLD)
    assert let_go == [True]  # g2's status was sent only once a's bind had been answered


def test_a_held_write_a_newer_status_makes_again_is_left_to_it_and_an_event_is_not(
    server: HoldingServer, port: KubePort, feeder: Feeder
) -> None:
    first = server.hold("/podgroups/g1/status")
    bind = server.hold("/pods/a/binding")
    port.write_status(_session(4, 2, placed=("g1",)), feeder)
    assert server.arrived["/podgroups/g1/status"].acquire(timeout=HOLD)  # the job began
    _bind(port, feeder, "a")
    assert server.arrived["/pods/a/binding"].acquire(timeout=HOLD)
    port.write_status(_session(4, 4, placed=("g2",)), feeder)  # a newer status waits
    first.set()  # g1's status answered; the job's next write (g2's status) waits for a's bind
    bind.set()
    assert port.drain(HOLD)
    assert port.status_dropped == 1
    assert _scheduled(server, "g2") == [4]  # written once, as the newer session says it
    assert _scheduled(server, "g1") == [4]  # unchanged since: not written again
    assert _events(server) == ["g1", "g2"]


def test_a_status_waits_for_binds_no_longer_than_status_after_binds_from_its_hand_over(
    server: HoldingServer, port: KubePort, clock: Clock, feeder: Feeder
) -> None:
    """A bind that hangs: the status handed over at 100 is written once the clock passes 110, though
    a newer session's status replaced it at 105 (replacing never puts it off)."""
    server.hold("/pods/a/binding")
    _bind(port, feeder, "a")
    assert server.arrived["/pods/a/binding"].acquire(timeout=HOLD)
    port.write_status(_session(4, 0, placed=("g1",)), feeder)
    _until(lambda: port.status_held)
    clock.now = 105.0
    port.write_status(_session(4, 4, placed=("g2",)), feeder)
    clock.now = 110.5
    _until(lambda: len(server.sent("/events")) == 2)
    assert port.binds_in_flight == 1  # a's bind is still at the server
    assert _scheduled(server, "g1") == [4]
    assert _scheduled(server, "g2") == [4]


def test_held_writes_are_not_sent_under_another_holding_of_the_lease(
    server: HoldingServer, port: KubePort, fence: Fence, feeder: Feeder
) -> None:
    first = server.hold("/podgroups/g1/status")
    bind = server.hold("/pods/a/binding")
    port.write_status(_session(4, 4, placed=("g1",)), feeder)
    assert server.arrived["/podgroups/g1/status"].acquire(timeout=HOLD)
    _bind(port, feeder, "a")
    assert server.arrived["/pods/a/binding"].acquire(timeout=HOLD)
    first.set()
    fence.acquired_at = 2.0  # the Lease was lost and taken again while the rest waited for the bind
    bind.set()
    assert port.drain(HOLD)
    assert _scheduled(server, "g1") == [4]  # sent before
    assert not server.sent("/podgroups/g2/status")
    assert not server.sent("/events")


def test_held_writes_are_not_sent_once_the_lease_may_be_lost(
    server: HoldingServer, port: KubePort, fence: Fence, feeder: Feeder
) -> None:
    bind = server.hold("/pods/a/binding")
    _bind(port, feeder, "a")
    assert server.arrived["/pods/a/binding"].acquire(timeout=HOLD)
    port.write_status(_session(4, 4, placed=("g1", "g2")), feeder)
    _until(lambda: port.status_held)
    fence.open = False
    bind.set()
    assert port.drain(HOLD)
    assert not server.sent("/status")
    assert not server.sent("/events")


def test_a_preempting_sessions_status_waits_for_the_binds_of_its_pipelined_pods(
    server: HoldingServer, port: KubePort, feeder: Feeder
) -> None:
    """A session that evicted left its preemptor pipelined (bound once the victims are gone): its
    status and events wait for that bind, made by a later session, and go after it."""
    preempting = _session(4, 0, placed=("g1",))
    preempting.pipelined = 1
    preempting.events.append(
        Event(kind="Pod", namespace="default", name="a", reason="Nominated", message="room on n1 is held")
    )
    port.write_status(preempting, feeder)
    _until(lambda: port.status_held)  # nothing in flight: it waits for the bind to come
    bind = server.hold("/pods/a/binding")
    _bind(port, feeder, "a")
    assert server.arrived["/pods/a/binding"].acquire(timeout=HOLD)
    let_go: list[bool] = []
    original = server.before_answer

    def before_answer(path: str) -> None:
        if "/status" in path or "/events" in path:
            let_go.append(bind.is_set())
        original(path)

    server.before_answer = before_answer  # type: ignore[method-assign]
    bound = pod("a", node="n1")
    bound["metadata"].update(resourceVersion="50", uid="uid-a")
    feeder.apply("Pod", bound)  # (as the cycle assumes a's bind)
    port.write_status(_session(4, 4, placed=("g2",)), feeder)  # the session that bound it
    bind.set()
    assert port.drain(HOLD)
    assert let_go and all(let_go)
    # The PodGroups' Scheduled events, both; not a's Nominated, said while it waited, now bound.
    assert _events(server) == ["g1", "g2"]


def test_a_status_waiting_for_pipelined_pods_binds_goes_when_its_time_is_up(
    server: HoldingServer, port: KubePort, clock: Clock, feeder: Feeder
) -> None:
    preempting = _session(4, 0, placed=("g1",))
    preempting.pipelined = 1  # whose victims never go
    port.write_status(preempting, feeder)
    _until(lambda: port.status_held)
    clock.now = 101.0
    port.write_status(_session(4, 0), feeder)  # a newer session: still pipelined, no bind
    clock.now = 102.5  # (status_for_pipelined: 2 s after the first was handed over)
    _until(lambda: len(server.sent("/events")) == 1)
    assert _scheduled(server, "g1") == [4]


def test_a_session_that_raises_before_its_cycle_holds_no_status(
    server: HoldingServer, port: KubePort, feeder: Feeder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's session says it began (``plan_under``) before its cycle: something raising
    after that and before the cycle's own ``try`` (here the latency stamp) left the port believing a
    session ran, and a status handed over earlier waited ``status_after_binds`` for it (on this clock,
    which never moves: for ever). The status goes once the binds before it are answered."""
    with operator_at(tmp_path) as op:
        loop = op.loop
        loop.port, loop.writer = port, port.writer  # the session's port: this test's server and clock
        monkeypatch.setattr(op.lease, "ensure", lambda: True)
        monkeypatch.setattr(op.reloader, "reload", lambda **_: None)
        monkeypatch.setattr(op.reloader, "known", True)
        monkeypatch.setattr(op.volcano, "follow", lambda **_: None)
        loop.pods_read_at = op.lease.acquired_at  # caught up: no listing

        def stamp() -> None:
            raise RuntimeError("stamp failed")

        monkeypatch.setattr(loop.latency, "session", stamp)
        bind = server.hold("/pods/a/binding")
        _bind(port, feeder, "a")
        assert server.arrived["/pods/a/binding"].acquire(timeout=HOLD)
        port.write_status(_session(4, 4, placed=("g1",)), feeder)  # an earlier session's status
        _until(lambda: port.status_held)
        with pytest.raises(RuntimeError, match="stamp failed"):
            loop.run_once()
        bind.set()
        _until(lambda: len(server.sent("/events")) == 1)
        assert _scheduled(server, "g1") == [4]
