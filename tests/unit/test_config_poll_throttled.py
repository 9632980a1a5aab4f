"""A ConfigMap poll answered 429 (APF throttling; "storage is (re)initializing" right after the apiserver
starts) is back-pressure while the apiserver is up: no warning, no outage, the next poll reads again.
During an outage it is counted with the outage."""

from __future__ import annotations

import logging

import pytest
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry, Counter

from volsched.kube.configsource import ConfigMapText
from volsched.kube.health import ApiHealth
from volsched.operator.reload import ConfigReloader
from volsched.operator.settings import ConfigSettings


class _Answer:
    def __init__(self, status: int) -> None:
        self.status, self.reason, self.data, self.headers = status, "x", b'{"kind":"Status"}', {}


def _reloader(health: ApiHealth, status: int) -> ConfigReloader:
    def read(at_start: bool) -> ConfigMapText | None:
        raise ApiException(http_resp=_Answer(status))

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
