"""A scheduler config rejected while none of the user's has loaded: the built-in default runs in its
place, and the operator says it is not ready (with the rejection in /readyz's body and a log line) until
a config of theirs loads or the ConfigMap goes (the default is then their choice). A rejection after a
good config keeps that one in force and changes nothing about readiness."""

from __future__ import annotations

import logging

import pytest

from tests.unit._config_reloader import scripted_reloader
from tests.unit.test_config_first_read import ABSENT, INVALID
from volsched.framework.config import DEFAULT_CONFIG_YAML
from volsched.kube.configsource import ConfigMapText
from volsched.operator.health import readiness_problem

GOOD = ConfigMapText(resource_version="8", uid="u", text=DEFAULT_CONFIG_YAML)
INVALID_LATER = ConfigMapText(resource_version="9", uid="u", text="actions: enqueue, teleport\ntiers: []\n")


def _ready(reloader: object) -> str | None:
    return readiness_problem(
        liveness=None,
        config_read=True,
        config="x",
        rejected=reloader.standing_in,  # type: ignore[attr-defined]
    )


def test_a_rejected_first_config_is_not_ready_until_one_of_the_users_loads(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reloader = scripted_reloader([INVALID, GOOD])
    with caplog.at_level(logging.INFO, logger="volsched.operator"):
        reloader.reload(force=True)
    problem = _ready(reloader)
    assert problem is not None
    assert problem.startswith("scheduler config rejected (ConfigMap ")
    assert "unknown action 'teleport'" in problem
    assert "the built-in default runs until a config of yours loads" in problem
    assert "not ready: the built-in default config runs in place of the rejected one" in caplog.text

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="volsched.operator"):
        assert reloader.reload(force=True) is True
    assert reloader.standing_in is None and _ready(reloader) is None
    assert "ready: the scheduler config in force is ConfigMap" in caplog.text


def test_the_config_map_gone_makes_the_default_the_users_choice() -> None:
    reloader = scripted_reloader([INVALID, ABSENT])
    reloader.reload(force=True)
    assert reloader.standing_in is not None
    reloader.reload(force=True)
    assert reloader.standing_in is None and _ready(reloader) is None


def test_a_rejection_after_a_good_config_keeps_it_and_stays_ready() -> None:
    reloader = scripted_reloader([GOOD, INVALID_LATER])
    reloader.reload(force=True)
    reloader.reload(force=True)
    assert reloader.error is not None and "teleport" in reloader.error  # rejected, said on the ConfigMap
    assert reloader.config.source.startswith("ConfigMap")  # the last good one stays in force
    assert reloader.standing_in is None and _ready(reloader) is None
