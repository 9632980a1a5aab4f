"""Once the scheduler ConfigMap is known, a poll's read is made on a thread of its own and its answer judged
at the next ``reload``: a read that fails there keeps the config in force, and says so as it fails (a
warning, or the apiserver's outage told to ``health`` then, not seconds later) rather than keeping it
silently; the poll after it reads again, and a new version it finds is loaded."""

from __future__ import annotations

import logging
import threading

import pytest

from tests.unit._config_reloader import api_error, scripted_reloader
from tests.unit._held_quiet import HeldQuiet
from volsched.framework.config import DEFAULT_CONFIG_YAML
from volsched.kube.configsource import ConfigMapText
from volsched.kube.health import ApiHealth

POLL = 30.0
ENQUEUE = ConfigMapText("1", "u", DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue"))
BACKFILL = ConfigMapText("2", "u", DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "backfill"))


def _settle() -> None:
    """The poll's read behind has answered (its thread ended)."""
    for t in threading.enumerate():
        if t.name == "volsched-config-read":
            t.join(10)


#: (case, what the poll's read raises, the warning's words, whether the apiserver is told down)
FAILURES: list[tuple[str, Exception, str, bool]] = [
    ("forbidden", api_error(403), "cannot read ConfigMap", False),
    ("server error", api_error(500), "kube-apiserver unreachable", True),
    ("unreachable", ConnectionRefusedError("refused"), "kube-apiserver unreachable", True),
]


@pytest.mark.parametrize(("case", "failure", "said", "down"), FAILURES, ids=[f[0] for f in FAILURES])
def test_a_poll_read_behind_that_fails_is_said_keeps_the_config_and_the_next_poll_reads_again(
    case: str,
    failure: Exception,
    said: str,
    down: bool,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    answers: list[ConfigMapText | Exception | None] = [ENQUEUE, failure, BACKFILL]
    clock = [100.0]
    health = ApiHealth(clock=lambda: clock[0])  # the outage ends with an answer a poll later
    reloader = scripted_reloader(answers, health=health, poll_every=POLL)
    monkeypatch.setattr("volsched.operator.reload.time.monotonic", lambda: clock[0])
    assert reloader.reload(force=True) and list(reloader.config.actions) == ["enqueue"]

    clock[0] += POLL
    with caplog.at_level(logging.WARNING):
        assert reloader.reload() is False  # the poll's read starts behind
        _settle()
    # Said as it failed, not when a later reload gets to it (the outage may be over by then).
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(said in line for line in lines), lines
    assert health.down is down
    assert reloader.reload() is False  # nothing new in force: the config in force kept
    assert list(reloader.config.actions) == ["enqueue"]

    clock[0] += POLL
    assert reloader.reload() is False  # the next poll reads again
    _settle()
    assert reloader.reload() is True and list(reloader.config.actions) == ["backfill"]
    assert answers == [] and not health.down


def test_an_answer_read_behind_before_an_outage_began_does_not_end_it_when_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    health = ApiHealth()
    reloader = scripted_reloader([ENQUEUE, BACKFILL], health=health, poll_every=POLL)
    clock = [100.0]
    monkeypatch.setattr("volsched.operator.reload.time.monotonic", lambda: clock[0])
    assert reloader.reload(force=True)
    clock[0] += POLL
    assert reloader.reload() is False
    _settle()  # answered; then the apiserver stops answering
    health.failed("the Lease", ConnectionRefusedError("refused"))
    assert reloader.reload() is True and list(reloader.config.actions) == ["backfill"]
    assert health.down  # the outage goes on: that answer came before it


def test_a_poll_read_behind_waits_for_the_sessions_to_be_quiet_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's sessions (``wait_quiet``): the session that found the poll due has only begun, and
    the read's work shared the interpreter with its pod. The session never waits for that."""
    from volsched.operator.reload import QUIET_WAIT

    answers: list[ConfigMapText | Exception | None] = [ENQUEUE, BACKFILL]
    clock = [100.0]
    reloader = scripted_reloader(answers, poll_every=POLL)
    monkeypatch.setattr("volsched.operator.reload.time.monotonic", lambda: clock[0])
    assert reloader.reload(force=True)
    sessions = reloader.wait_quiet = HeldQuiet()
    clock[0] += POLL
    assert reloader.reload() is False  # at once: the poll's read goes behind
    assert sessions.entered.wait(10) and answers == [BACKFILL]  # waiting for the sessions, not read yet
    sessions.quiet.set()
    _settle()
    assert answers == [] and sessions.asked == [QUIET_WAIT]
    assert reloader.reload() is True and list(reloader.config.actions) == ["backfill"]
