"""The sessions' INFO lines (:class:`~volsched.operator.sessions.SessionLines`): a steady stream of routine
sessions (every bind bound, nothing evicted) is told in one line every ``every`` seconds, not a line each;
the first after a quiet spell and every other session still have their own line at once, after the count
of the routine sessions before them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import pod
from tests.unit._background_port import Clock
from tests.unit._cycle_harness import operator_at
from tests.unit.test_kube_port_background import GatedServer, _leading
from volsched.operator.sessions import ROUTINE_LINE_EVERY, SessionLines

LOGGER = "volsched.test.sessionlines"


def _lines(caplog: pytest.LogCaptureFixture, level: int = logging.INFO) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


def _routine(lines: SessionLines, number: int, *, ms: float = 1.0, unschedulable: int = 0) -> None:
    lines.session(number, to_bind=1, bound=1, evicted=0, unschedulable=unschedulable, ms=ms, routine=True)


@pytest.fixture
def lines(caplog: pytest.LogCaptureFixture, clock: Clock) -> tuple[SessionLines, Clock]:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    return SessionLines(logging.getLogger(LOGGER), every=10.0, clock=clock), clock


def test_routine_sessions_after_the_first_are_counted_and_told_once_their_line_is_due(
    lines: tuple[SessionLines, Clock], caplog: pytest.LogCaptureFixture
) -> None:
    out, clock = lines
    _routine(out, 1, ms=2.0)
    assert _lines(caplog) == ["session 1: 1 to bind, 1 bound, 0 evicted, 0 unschedulable (2.0 ms)"]
    for n, ms in ((2, 1.5), (3, 3.25), (4, 0.75)):
        clock.now += 1.0
        _routine(out, n, ms=ms, unschedulable=1 if n == 3 else 0)
    assert len(_lines(caplog)) == 1  # nothing more at INFO yet
    assert _lines(caplog, logging.DEBUG) == [
        "session 2: 1 to bind, 1 bound, 0 evicted, 0 unschedulable (1.5 ms)",
        "session 3: 1 to bind, 1 bound, 0 evicted, 1 unschedulable (3.2 ms)",
        "session 4: 1 to bind, 1 bound, 0 evicted, 0 unschedulable (0.8 ms)",
    ]
    clock.now = 110.0  # ten seconds after the first line: the next session tells them all
    _routine(out, 5, ms=1.0)
    assert _lines(caplog)[1:] == [
        "sessions 2-5: 4 to bind, 4 bound, 0 evicted, 1 unschedulable (4 sessions, 0.8-3.2 ms)"
    ]
    clock.now += 1.0
    _routine(out, 6)
    assert len(_lines(caplog)) == 2  # counted again, from the line just written


def test_a_tick_tells_the_counted_sessions_once_due_and_not_before(
    lines: tuple[SessionLines, Clock], caplog: pytest.LogCaptureFixture
) -> None:
    out, clock = lines
    out.tick()  # nothing counted: nothing to tell
    _routine(out, 1)
    clock.now += 2.0
    _routine(out, 2, ms=4.0)
    clock.now += 7.0
    out.tick()
    assert len(_lines(caplog)) == 1  # 9 s after the last line: not yet
    clock.now += 1.0
    out.tick()
    assert _lines(caplog)[1:] == [
        "sessions 2: 1 to bind, 1 bound, 0 evicted, 0 unschedulable (1 sessions, 4.0-4.0 ms)"
    ]
    clock.now += 60.0
    out.tick()  # told already
    assert len(_lines(caplog)) == 2
    _routine(out, 3)  # a quiet spell since: its own line
    assert _lines(caplog)[2:] == ["session 3: 1 to bind, 1 bound, 0 evicted, 0 unschedulable (1.0 ms)"]


def test_a_session_that_evicted_or_did_not_bind_everything_has_its_line_after_the_count_before_it(
    lines: tuple[SessionLines, Clock], caplog: pytest.LogCaptureFixture
) -> None:
    out, clock = lines
    _routine(out, 1)
    clock.now += 1.0
    _routine(out, 2)
    _routine(out, 3)
    clock.now += 1.0
    out.session(4, to_bind=2, bound=1, evicted=0, unschedulable=0, ms=5.0, routine=False)
    clock.now += 1.0
    out.session(5, to_bind=0, bound=0, evicted=2, unschedulable=1, ms=6.0, routine=False)
    assert _lines(caplog) == [
        "session 1: 1 to bind, 1 bound, 0 evicted, 0 unschedulable (1.0 ms)",
        "sessions 2-3: 2 to bind, 2 bound, 0 evicted, 0 unschedulable (2 sessions, 1.0-1.0 ms)",
        "session 4: 2 to bind, 1 bound, 0 evicted, 0 unschedulable (5.0 ms)",
        "session 5: 0 to bind, 0 bound, 2 evicted, 1 unschedulable (6.0 ms)",
    ]
    clock.now += 1.0
    _routine(out, 6)  # a line was written a second ago: counted
    assert len(_lines(caplog)) == 4


@pytest.fixture
def server() -> Iterator[GatedServer]:
    s = GatedServer()
    s.gate.set()
    yield s
    s.httpd.shutdown()


def test_the_operators_arriving_pods_have_one_info_line_and_the_next_ones_are_counted(
    server: GatedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Two pods arriving one after the other, each bound by a session of its own (its lone bind sent on
    the session thread): the first session's line at INFO, the second's at DEBUG only (counted for the
    line due ``ROUTINE_LINE_EVERY`` seconds after the first)."""
    caplog.set_level(logging.DEBUG, logger="volsched.operator")
    with operator_at(tmp_path, server.port) as op:
        _leading(op, monkeypatch)
        first = op.loop.run_once()
        assert first is not None and [b.pod for b in first[0].binds] == ["default/a"]
        b = pod("b")
        b["metadata"].update(resourceVersion="2", uid="uid-b")
        op.feeder.apply("Pod", b)
        second = op.loop.run_once()
        assert second is not None and [b.pod for b in second[0].binds] == ["default/b"]
    said = [
        (r.levelno, r.getMessage())
        for r in caplog.records
        if r.name == "volsched.operator" and r.getMessage().startswith("session")
    ]
    assert said == [
        (logging.INFO, said[0][1]),
        (logging.DEBUG, said[1][1]),
    ]
    assert said[0][1].startswith("session 1: 1 to bind, 1 bound, 0 evicted, 0 unschedulable")
    assert said[1][1].startswith("session 2: 1 to bind, 1 bound, 0 evicted, 0 unschedulable")
    assert ROUTINE_LINE_EVERY >= 1.0  # (the test's two sessions come well within it)
