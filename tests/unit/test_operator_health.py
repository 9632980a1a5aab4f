"""What /healthz answers: 503 until the cache synced, and when the session loop stopped ticking."""

from __future__ import annotations

import pytest

from volsched.operator.http import health_problem


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
