"""Until the scheduler ConfigMap has been read once, no config is the user's: a failed first read leaves
the reloader not ``known`` (the operator runs no session) and is retried within UNREAD_RETRY, not a poll
later; an absent ConfigMap (the built-in default) or an invalid one (rejected, the default kept) is known."""

from __future__ import annotations

import logging

import pytest

from tests.unit._config_reloader import api_error, scripted_reloader
from volsched.framework.config import DEFAULT_CONFIG_YAML
from volsched.framework.registry import load_config
from volsched.kube.configsource import ConfigMapText
from volsched.operator.reload import UNREAD_RETRY

FORBIDDEN = api_error(403)
SERVER_ERROR = api_error(500)
ABSENT = None
INVALID = ConfigMapText(resource_version="7", uid="u", text="actions: enqueue, teleport\ntiers: []\n")
NO_KEY = ConfigMapText(resource_version="7", uid="u", text=None)


@pytest.mark.parametrize(
    ("first", "known"),
    [
        (FORBIDDEN, False),
        (SERVER_ERROR, False),
        (ConnectionRefusedError("refused"), False),
        (ABSENT, True),
        (NO_KEY, True),
        (INVALID, True),
    ],
    ids=["forbidden", "server-error", "unreachable", "absent", "no-key", "invalid"],
)
def test_only_a_read_config_map_makes_the_config_known(first: object, known: bool) -> None:
    reloader = scripted_reloader([first])  # type: ignore[list-item]
    assert reloader.reload(force=True) is known  # known from now on: a session may run (rings the bell)
    assert reloader.known is known
    assert reloader.config.actions == load_config().actions  # the built-in default either way


def test_a_failed_first_read_is_retried_promptly_and_then_polled(monkeypatch: pytest.MonkeyPatch) -> None:
    text = DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue")
    reloader = scripted_reloader([SERVER_ERROR, ConfigMapText(resource_version="1", uid="u", text=text)])
    clock = [100.0]
    monkeypatch.setattr("volsched.operator.reload.time.monotonic", lambda: clock[0])
    assert reloader.reload(force=True) is False and not reloader.known
    clock[0] += UNREAD_RETRY  # far less than poll_every (30 s)
    assert reloader.reload() is True and reloader.known
    assert list(reloader.config.actions) == ["enqueue"]
    clock[0] += UNREAD_RETRY  # known: polled every poll_every again (nothing left to read)
    assert reloader.reload() is False


def test_a_first_read_failing_again_and_again_is_said_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    reloader = scripted_reloader([FORBIDDEN] * 4)
    clock = [100.0]
    monkeypatch.setattr("volsched.operator.reload.time.monotonic", lambda: clock[0])
    for _ in range(4):  # every half second while sessions wait: not a warning each time
        reloader.reload()
        clock[0] += UNREAD_RETRY
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2, warnings  # why it failed, and that sessions wait for it
    assert "403" in warnings[0] and "no session runs until" in warnings[1]
    assert not reloader.known


@pytest.mark.parametrize(
    ("failure", "unread"),
    [
        (
            api_error(
                403,
                reason="Forbidden",
                body=b'{"kind":"Status","message":"token s3cr3t-t0ken is not allowed"}',
            ),
            "403 Forbidden",
        ),
        (ConnectionRefusedError("https://user:s3cr3t-t0ken@apiserver refused"), "ConnectionRefusedError"),
    ],
    ids=["answered", "unreachable"],
)
def test_why_the_config_is_unread_names_the_status_or_the_failure_never_its_text(
    failure: Exception, unread: str
) -> None:
    """What /readyz says while sessions wait for the config: the answer's status or the failure's type,
    never the answer's body nor the exception's text (a token echoed back, a URL with credentials)."""
    reloader = scripted_reloader([failure])
    assert reloader.reload(force=True) is False
    assert reloader.unread == unread and "s3cr3t" not in reloader.unread
