"""What /healthz answers: 503 until the cache synced, and when the session loop stopped ticking; and
/readyz: 503 for those, and while the scheduler config is unread (sessions held), saying why."""

from __future__ import annotations

import pytest

from volsched.operator.health import health_problem, readiness_problem


@pytest.mark.parametrize(
    ("synced", "last_tick", "period", "now", "problem"),
    [
        (False, 0.0, 1.0, 100.0, "cache not synced"),
        (True, 0.0, 1.0, 100.0, None),  # synced, no session yet: healthy
        (True, 90.0, 1.0, 100.0, None),  # 10 s since the last tick, under the 30 s floor
        (True, 60.0, 1.0, 100.0, "session loop stalled"),  # 40 s > 30 s
        (True, 60.0, 5.0, 100.0, None),  # 40 s < 10 periods (50 s)
        (True, 40.0, 5.0, 100.0, "session loop stalled"),  # 60 s > 50 s
        (False, 60.0, 1.0, 100.0, "cache not synced"),  # not synced says so first
    ],
)
def test_healthz_fails_until_synced_and_when_the_session_loop_stalls(
    synced: bool, last_tick: float, period: float, now: float, problem: str | None
) -> None:
    assert health_problem(synced=synced, last_tick=last_tick, period=period, now=now) == problem


HELD = "scheduler config not read (ConfigMap volsched/volsched-config: 403 Forbidden): no session runs until it is"


@pytest.mark.parametrize(
    ("liveness", "config_read", "problem"),
    [
        (None, True, None),
        (None, False, HELD),  # alive (no restart would help), not ready
        ("cache not synced", True, "cache not synced"),
        ("cache not synced", False, f"cache not synced; {HELD}"),
        ("session loop stalled", True, "session loop stalled"),
    ],
)
def test_readyz_fails_on_what_healthz_fails_on_and_while_sessions_wait_for_the_config(
    liveness: str | None, config_read: bool, problem: str | None
) -> None:
    config = "ConfigMap volsched/volsched-config: 403 Forbidden"
    assert readiness_problem(liveness=liveness, config_read=config_read, config=config) == problem
