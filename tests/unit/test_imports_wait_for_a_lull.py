"""The imports after ready wait for the sessions' first lull (``volsched.operator.aside.until_idle``): the
sessions quiet for ``quiet`` seconds since ready and since they were last busy (a pod arrived, a session
ran), ``at_most`` seconds in all; ``stop`` ends the wait. Only lower bounds of the wall clock are
asserted: a lull is never found early."""

from __future__ import annotations

import asyncio
import time

from volsched.operator.aside import Activity, until_idle

QUIET = 0.05


def test_quiet_sessions_make_a_lull_quiet_seconds_after_ready() -> None:
    activity = Activity()  # quiet since long before ready
    started = time.monotonic()
    assert asyncio.run(until_idle(activity, asyncio.Event(), quiet=QUIET, at_most=3600)) is True
    assert time.monotonic() - started >= QUIET


def test_busy_sessions_hold_the_imports_back_until_at_most() -> None:
    activity = Activity()
    activity.begin()  # a stream of pods with no lull
    started = time.monotonic()
    assert asyncio.run(until_idle(activity, asyncio.Event(), quiet=QUIET, at_most=4 * QUIET)) is False
    assert time.monotonic() - started >= 4 * QUIET


def test_the_lull_is_counted_from_the_end_of_the_last_session() -> None:
    activity = Activity()

    async def scenario() -> tuple[bool, float]:
        activity.begin()  # a pod arrived at ready
        waiting = asyncio.ensure_future(until_idle(activity, asyncio.Event(), quiet=QUIET, at_most=3600))
        await asyncio.sleep(3 * QUIET)  # its session runs long
        activity.end()
        await asyncio.sleep(QUIET / 2)
        activity.begin()  # another pod, within the lull: it starts again
        activity.end()
        ended = time.monotonic()
        return await waiting, ended

    found, ended = asyncio.run(scenario())
    assert found is True
    assert time.monotonic() - ended >= QUIET


def test_stop_ends_the_wait() -> None:
    activity = Activity()
    activity.begin()

    async def scenario() -> bool:
        stop = asyncio.Event()
        waiting = asyncio.ensure_future(until_idle(activity, stop, quiet=3600, at_most=3600))
        await asyncio.sleep(0)
        stop.set()
        return await waiting

    assert asyncio.run(scenario()) is False


def test_idle_for_is_zero_while_busy_and_counts_from_the_end() -> None:
    now = [100.0]
    activity = Activity(clock=lambda: now[0])
    now[0] = 105.0
    assert activity.idle_for() == 5.0  # quiet since it was made
    activity.begin()
    now[0] = 107.0
    assert activity.idle_for() == 0.0
    activity.end()
    now[0] = 107.25
    assert activity.idle_for() == 0.25
    activity.end()  # (quiet already: the lull goes on)
    now[0] = 108.0
    assert activity.idle_for() == 1.0
