"""The ``volsched.latency`` debug lines: where each pod's time went, in order, only when asked for."""

from __future__ import annotations

import gc
import logging
import re
import threading
import time

import pytest

from volsched.kube.latency import UNANSWERED, PodLatency

LINE = re.compile(r"pod (\S+) seen (\S+) session (\S+) decided (\S+) sent (\S+) answered (\S+) result (\S+)")
#: The way from the watch to the session, at the line's end: when the loop called it, when its thread began,
#: when the pod's watch event was read and when the doorbell woke the session thread; then whether the session
#: ran on the thread that read the pod watch's last event.
HOPS = re.compile(r"result \S+ called (\S+) woke (\S+) read (\S+) rang (\S+) here [01]$")
HERE = re.compile(r"pod (\S+) .* here ([01])$")


def test_a_bind_answered_is_one_line_with_its_stamps_in_order(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="volsched.latency")
    now = [100.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    latency = PodLatency(clock=clock)
    latency.line_read()
    latency.saw("ns/a")
    latency.line_read()
    latency.saw("ns/b")
    latency.rang()
    latency.calling()
    latency.woke()
    latency.session()
    latency.decided(["ns/a"])
    latency.answered("ns/a", sent=clock(), answered=clock(), result="bound")
    lines = [m.groups() for r in caplog.records if (m := LINE.search(r.getMessage()))]
    assert len(lines) == 1
    key, seen, *stamps, result = lines[0]
    assert (key, result) == ("ns/a", "bound")
    hops = [m.groups() for r in caplog.records if (m := HOPS.search(r.getMessage()))]
    assert len(hops) == 1
    called, woke, read, rang = (float(h) for h in hops[0])
    times = [read, float(seen), rang, called, woke, *(float(s) for s in stamps)]  # session, decided, ...
    assert times == [101.0, 102.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0]


def test_a_session_started_before_a_later_one_was_called_keeps_its_own_hops(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bind answered after the next session was already called reports the hops of the session that
    decided it, not the next one's."""
    caplog.set_level(logging.DEBUG, logger="volsched.latency")
    now = [100.0]
    latency = PodLatency(clock=lambda: now[0])
    for step in ("rang", "calling", "woke", "session"):
        now[0] += 1
        getattr(latency, step)()
    latency.decided(["ns/a"])
    now[0] = 200.0
    latency.rang()
    latency.calling()
    latency.woke()
    latency.answered("ns/a", sent=201.0, answered=202.0, result="bound")
    (hops,) = [m.groups() for r in caplog.records if (m := HOPS.search(r.getMessage()))]
    assert [float(h) for h in hops[:2]] == [102.0, 103.0] and float(hops[3]) == 101.0


def test_nothing_is_kept_when_the_logger_is_not_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="volsched.latency")
    latency = PodLatency()
    latency.saw("ns/a")
    latency.session()
    latency.decided(["ns/a"])
    latency.answered("ns/a", sent=1.0, answered=2.0, result="bound")
    assert not latency.on
    assert not latency._seen and not latency._decided
    assert not [r for r in caplog.records if r.name == "volsched.latency"]


def test_binds_never_answered_are_forgotten_once_ten_minutes_old(caplog: pytest.LogCaptureFixture) -> None:
    """What is kept of decided binds stays bounded: those never answered (the port closed, the Lease
    lost) go once older than UNANSWERED; a bind decided again counts from then."""
    caplog.set_level(logging.DEBUG, logger="volsched.latency")
    now = [1000.0]
    latency = PodLatency(clock=lambda: now[0])
    latency.decided([f"ns/lost{i}" for i in range(1000)] + ["ns/again"])
    now[0] += UNANSWERED / 2
    latency.decided(["ns/again", "ns/late"])
    now[0] += UNANSWERED / 2 + 1
    latency.decided(["ns/new"])
    assert list(latency._decided) == ["ns/again", "ns/late", "ns/new"]
    assert any("1000 binds decided" in r.getMessage() for r in caplog.records)
    latency.answered("ns/again", sent=now[0], answered=now[0], result="bound")
    assert list(latency._decided) == ["ns/late", "ns/new"]


def test_the_line_says_whether_the_session_ran_on_the_thread_that_read_the_pods_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An arriving pod's session on the pod watch's own thread (``volsched.operator.sessions``) is told
    from one on the session thread."""
    caplog.set_level(logging.DEBUG, logger="volsched.latency")
    latency = PodLatency()

    def watch(pod: str, *, session_here: bool) -> None:
        latency.line_read()
        latency.saw(pod)
        if session_here:
            latency.session()
            latency.decided([pod])

    watch("ns/a", session_here=True)
    thread = threading.Thread(target=watch, args=("ns/b",), kwargs={"session_here": False})
    thread.start()
    thread.join()
    latency.session()  # here, not on the thread that read ns/b's event
    latency.decided(["ns/b"])
    for pod in ("ns/a", "ns/b"):
        latency.answered(pod, sent=1.0, answered=2.0, result="bound")
    here = dict(m.groups() for r in caplog.records if (m := HERE.search(r.getMessage())))
    assert here == {"ns/a": "1", "ns/b": "0"}


GC_LINE = re.compile(r"gc generation (\d) started (\S+) ms (\S+) collected (\d+)$")


def test_the_collectors_runs_are_stamped_and_logged_after_the_next_session(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each run of the cyclic collector is one line (generation, wall-clock start, its ms), logged from
    the next session's end, not from inside the collector's callback; watched once however often asked."""
    caplog.set_level(logging.DEBUG, logger="volsched.latency")
    latency = PodLatency()
    latency.watch_collections()
    latency.watch_collections()
    try:
        assert gc.callbacks.count(latency._collected) == 1
        before = time.time()
        gc.collect()
        assert not [r for r in caplog.records if GC_LINE.search(r.getMessage())]
        latency.session()
        latency.session_done({}, binds=0)
        runs = [m.groups() for r in caplog.records if (m := GC_LINE.search(r.getMessage()))]
        assert any(g == "2" and float(at) >= before and float(ms) >= 0 for g, at, ms, _ in runs)
    finally:
        latency.unwatch_collections()
    assert latency._collected not in gc.callbacks


def test_the_collector_is_not_watched_when_the_logger_is_not_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="volsched.latency")
    latency = PodLatency()
    latency.watch_collections()
    assert latency._collected not in gc.callbacks
    gc.collect()
    assert not latency._collections
