"""The ``volsched.latency`` debug lines: where each pod's time went, in order, only when asked for."""

from __future__ import annotations

import logging
import re

import pytest

from volsched.kube.latency import PodLatency

LINE = re.compile(r"pod (\S+) seen (\S+) session (\S+) decided (\S+) sent (\S+) answered (\S+) result (\S+)")


def test_a_bind_answered_is_one_line_with_its_stamps_in_order(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="volsched.latency")
    latency = PodLatency()
    latency.saw("ns/a")
    latency.saw("ns/b")
    latency.session()
    latency.decided(["ns/a"])
    latency.answered(
        "ns/a", sent=latency.session_started + 1, answered=latency.session_started + 2, result="bound"
    )
    lines = [m.groups() for r in caplog.records if (m := LINE.search(r.getMessage()))]
    assert len(lines) == 1
    key, *stamps, result = lines[0]
    assert (key, result) == ("ns/a", "bound")
    times = [float(s) for s in stamps]
    assert times == sorted(times)


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
