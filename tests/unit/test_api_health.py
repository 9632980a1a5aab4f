"""An outage is told in two log lines however many calls fail (pure: injected clock, no I/O)."""

from __future__ import annotations

import logging

import pytest
import urllib3.exceptions
from kubernetes.client import exceptions as client_errors

from volsched.kube.errors import ApiException
from volsched.kube.health import ApiHealth, QuietRetries, is_throttled, is_unreachable


def test_an_outage_is_one_line_when_it_starts_and_one_when_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    health = ApiHealth(clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="volsched.kube"):
        health.ok()  # nothing to say while all is well
        for _ in range(500):
            health.failed("lease", ConnectionRefusedError("refused"))
        now[0] += 7.5
        health.ok()
        health.ok()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "unreachable (lease: refused)" in lines[0]
    assert "reachable again after 7.5s (500 failed calls meanwhile)" in lines[1]
    assert not health.down and health.outages == 1


def test_a_ragged_start_of_an_outage_is_still_two_lines(caplog: pytest.LogCaptureFixture) -> None:
    """As the apiserver goes, calls in flight are answered while new ones fail (a draining apiserver
    answers some, refuses others): those answers do not end the outage (before, each answer between two
    failures logged its end and the next failure its start again: 25 lines at the start of one outage)."""
    now = [100.0]
    health = ApiHealth(clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="volsched.kube"):
        for _ in range(12):  # the first second: answers and failures interleaved
            health.failed("write", ConnectionResetError("reset"))
            now[0] += 0.05
            health.ok()
            now[0] += 0.05
        for _ in range(20):  # then down: every call fails, for 10 s
            now[0] += 0.5
            health.failed("watch pods", ConnectionRefusedError("refused"))
        now[0] += 0.5
        health.ok()  # back: answered 0.5 s after the last failure, not 2 s yet
        assert health.down
        for _ in range(4):
            now[0] += 0.5
            health.ok()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "unreachable (write: reset)" in lines[0]
    assert "reachable again after 11.7s (32 failed calls meanwhile)" in lines[1]  # until the first answer
    assert not health.down and health.outages == 1


def test_kopf_and_urllib3_retry_lines_are_counted_not_printed() -> None:
    health = ApiHealth()
    quiet = QuietRetries(health)

    def record(name: str, msg: str) -> logging.LogRecord:
        return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, None, None)

    kopf = "Request attempt #2/4 failed; will retry: GET https://x/api/v1/pods -> ClientConnectorError('refused')"
    urllib3 = (
        "Retrying (Retry(total=2, connect=None, read=None)) after connection broken by 'refused': /lease"
    )
    assert not quiet.filter(record("kopf._cogs.clients.api", kopf))
    assert not quiet.filter(record("urllib3.connectionpool", urllib3))
    assert quiet.filter(record("kopf.objects", "Handler 'x' failed"))
    assert quiet.filter(record("volsched.operator", "Request attempt in our own words"))
    assert health.down and health.failures == 2


def test_a_429_kopf_retries_is_an_answer_not_an_outage(caplog: pytest.LogCaptureFixture) -> None:
    """After a restart the apiserver answers kopf's watches 429 "storage is (re)initializing" for a moment,
    between calls that succeed: no false outage (two lines each time) while it is up; counted while down."""
    health = ApiHealth()
    quiet = QuietRetries(health)
    throttled = (
        "Request attempt #1/9 failed; will retry: GET https://x/apis/scheduling.volsched.io/v1beta1/queues"
        " -> APITooManyRequestsError('storage is (re)initializing', {'code': 429}, status=429)"
    )

    def record() -> logging.LogRecord:
        return logging.LogRecord(
            "kopf._cogs.clients.watching", logging.ERROR, __file__, 1, throttled, None, None
        )

    with caplog.at_level(logging.INFO, logger="volsched.kube"):
        for _ in range(3):
            assert not quiet.filter(record())  # not printed by kopf either
            health.ok()
        assert not health.down and health.outages == 0 and caplog.records == []
        health.failed("lease", ConnectionRefusedError("refused"))
        assert not quiet.filter(record())
        assert health.down and health.failures == 2 and health.outages == 1


@pytest.mark.parametrize(
    ("exc", "unreachable"),
    [
        (ConnectionRefusedError(), True),
        (TimeoutError(), True),
        (ApiException(status=503), True),
        (ApiException(status=0), True),
        (ApiException(status=404), False),
        (ApiException(status=409), False),
        (ValueError("bad"), False),
        # The Kubernetes client's own (raised by the edges that call it: the custom metrics source).
        (client_errors.ApiException(status=503), True),
        (client_errors.ApiException(status=404), False),
        (urllib3.exceptions.MaxRetryError(None, "/"), True),
    ],
)
def test_only_failures_to_get_an_answer_count_as_unreachable(exc: Exception, unreachable: bool) -> None:
    assert is_unreachable(exc) is unreachable


def test_a_throttled_answer_is_told_whichever_client_raised_it() -> None:
    assert is_throttled(ApiException(status=429)) and is_throttled(client_errors.ApiException(status=429))
    assert not is_throttled(ApiException(status=503)) and not is_throttled(TimeoutError())


def test_an_outage_ends_once_answered_and_quiet_whoever_asks(caplog: pytest.LogCaptureFixture) -> None:
    """A watch answered once sits on its stream: nobody else may call for a while. The outage is over
    all the same once SETTLE seconds passed since the last failure; a failure after that is another."""
    now = [100.0]
    health = ApiHealth(clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="volsched.kube"):
        health.failed("watch pods", ConnectionRefusedError("refused"))
        now[0] += 3.0
        health.failed("watch pods", ConnectionRefusedError("refused"))
        now[0] += 0.5
        health.ok()  # the watch is answered, 0.5 s after the last failure
        assert health.down
        now[0] += 1.5
        assert not health.down  # 2 s since the last failure, answered meanwhile
        now[0] += 10.0
        health.failed("lease", ConnectionRefusedError("refused"))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert "reachable again after 3.5s (2 failed calls meanwhile)" in lines[1]
    assert "unreachable (lease: refused)" in lines[2] and health.outages == 2
