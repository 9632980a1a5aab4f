"""A ConfigMap poll answered 429 (APF throttling; "storage is (re)initializing" right after the apiserver
starts) is back-pressure while the apiserver is up: no warning, no outage, the next poll reads again.
During an outage it is counted with the outage. Polls throttled for longer than THROTTLED_WARNING in a
row are warned of once (the old config is kept), and counted. A failed read is logged by its status and
reason, never with the answer's headers."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry, Counter

from tests.unit._config_reloader import api_error
from volsched.kube.configsource import ConfigMapText
from volsched.kube.health import ApiHealth
from volsched.operator.reload import ConfigReloader
from volsched.operator.settings import ConfigSettings

#: What an answer's headers carry that no log line may show.
HEADER_SECRET = "session=hunter2-cookie"


def _reloader(health: ApiHealth, status: int, *, statuses: list[int] | None = None) -> ConfigReloader:
    """Its reads answer ``status``, or each the next of ``statuses`` (200: the ConfigMap, unchanged)."""

    def read(at_start: bool) -> ConfigMapText | None:
        answer = statuses.pop(0) if statuses else status
        if answer == 200:
            return None  # not found, as at start: nothing new to load
        raise api_error(answer, headers={"Set-Cookie": HEADER_SECRET, "Audit-Id": "0f0e"})

    reloads = Counter("reloads", "x", ["result"], registry=CollectorRegistry())
    reloader = ConfigReloader(
        ConfigSettings(),
        health=health,
        writer=None,  # type: ignore[arg-type]  # nothing is rejected: nothing is written
        reloads=reloads,
        read=read,
        on_load=lambda _: None,
    )
    reloader.known = True  # a poll: the ConfigMap was read at start (a first read failing holds sessions)
    return reloader


@pytest.mark.parametrize(
    ("status", "outage_before", "warned", "down_after"),
    [
        (429, False, False, False),  # back-pressure: quiet, read again at the next poll
        (429, True, False, True),  # during an outage: counted with it
        (403, False, True, False),  # a refusal is reported
    ],
    ids=["throttled-while-up", "throttled-in-an-outage", "forbidden"],
)
def test_a_throttled_config_map_poll_is_back_pressure_not_a_warning(
    caplog: pytest.LogCaptureFixture, status: int, outage_before: bool, warned: bool, down_after: bool
) -> None:
    health = ApiHealth()
    if outage_before:
        health.failed("watch", ConnectionRefusedError("refused"))
    reloader = _reloader(health, status)
    with caplog.at_level(logging.DEBUG, logger="volsched"):
        assert reloader.reload(force=True) is False
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and "ConfigMap" in r.getMessage()]
    assert bool(warnings) is warned
    assert health.down is down_after


#: (case, reads as (seconds since the first, status), the warnings expected after each read)
RUNS: list[tuple[str, list[tuple[float, int]], list[int]]] = [
    ("throttled for less than the bound: quiet", [(0, 429), (10, 429), (29, 429)], [0, 0, 0]),
    (
        "throttled past the bound: one warning, not one per poll",
        [(0, 429), (15, 429), (30, 429), (32, 429), (90, 429)],
        [0, 0, 1, 1, 1],
    ),
    ("an answer between ends the run", [(0, 429), (20, 200), (25, 429), (50, 429)], [0, 0, 0, 0]),
    (
        "a new run past the bound is warned of again",
        [(0, 429), (30, 429), (31, 200), (40, 429), (70, 429)],
        [0, 1, 1, 1, 2],
    ),
]


@pytest.mark.parametrize(("case", "reads", "warned"), RUNS, ids=[r[0] for r in RUNS])
def test_config_map_polls_throttled_for_long_are_warned_of_once(
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    reads: list[tuple[float, int]],
    warned: list[int],
) -> None:
    clock = [0.0]
    monkeypatch.setattr("volsched.operator.reload.time.monotonic", lambda: clock[0])
    reloader = _reloader(ApiHealth(), 429, statuses=[status for _, status in reads])
    before, seen = reloader.config, []
    with caplog.at_level(logging.DEBUG, logger="volsched"):
        for at, _status in reads:
            clock[0] = at
            reloader.reload(force=True)
            seen.append(
                sum("throttled" in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
            )
    assert seen == warned
    throttled = sum(status == 429 for _, status in reads)
    assert reloader.reloads.labels("throttled")._value.get() == throttled
    assert reloader.config is before  # kept


@pytest.mark.parametrize("status", [429, 403, 503])
def test_a_failed_config_map_read_is_logged_without_the_answers_headers(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    clock = [0.0]
    monkeypatch.setattr("volsched.operator.reload.time.monotonic", lambda: clock[0])
    reloader = _reloader(ApiHealth(), status)
    with caplog.at_level(logging.DEBUG):
        for at in (0.0, 40.0):  # past the throttled warning's bound too
            clock[0] = at
            reloader.reload(force=True)
    lines = [r.getMessage() for r in caplog.records]
    assert any(f"{status}" in line for line in lines)  # said, by its status
    assert not [line for line in lines if HEADER_SECRET in line or "Audit-Id" in line]
