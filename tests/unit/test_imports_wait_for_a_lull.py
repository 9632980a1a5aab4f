"""The imports after ready wait for the sessions' first lull (``volsched.operator.aside.until_idle``): the
sessions quiet for ``quiet`` seconds since ready and since they were last busy (a pod arrived, a session
ran), ``at_most`` seconds in all; ``stop`` ends the wait. Only lower bounds of the wall clock are
asserted: a lull is never found early."""

from __future__ import annotations

import asyncio
import time

from volsched.operator.aside import QUIET_BEFORE, Activity, lull_for, until_idle

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


def test_sessions_every_short_period_leave_a_lull_of_half_the_period() -> None:
    """A session runs every period even with nothing to do: with the e2e tests' period of 0.3 s the
    sessions were never quiet for QUIET_BEFORE (0.5 s), and every start's imports waited
    DEFERRED_AT_MOST after ready. ``lull_for`` asks half the period then."""
    period = 0.3

    async def scenario(quiet: float) -> bool:
        activity = Activity()
        stop = asyncio.Event()

        async def sessions() -> None:  # a few ms of work every period, nothing arriving
            while not stop.is_set():
                activity.begin()
                await asyncio.sleep(0.005)
                activity.end()
                await asyncio.sleep(period - 0.005)

        running = asyncio.ensure_future(sessions())
        try:
            return await until_idle(activity, stop, quiet=quiet, at_most=6 * period)
        finally:
            stop.set()
            await running

    assert lull_for(period) == period / 2
    assert lull_for(10.0) == QUIET_BEFORE
    assert asyncio.run(scenario(lull_for(period))) is True
    assert asyncio.run(scenario(QUIET_BEFORE)) is False  # (what the operator asked before)
