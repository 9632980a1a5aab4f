"""Imports made after ready, beside the sessions, that step aside while the sessions work.

The operator imports aiohttp (its HTTP server for ``/metrics`` and ``/ui``, its client for the reads) and,
with the admission webhooks on, kopf only once its cache is synced, so that their import is not on the
way to ready. They are imported beside the sessions, on a thread of their own: a pod arriving
then shared the interpreter's lock with that import, and the first pods after ready bound several times
slower than the next ones. :func:`import_aside` pauses that import whenever the sessions work
(:class:`Activity`: a pod of ours arrived, a session runs) and goes on once they are quiet again: the
pause points are the module-level statements of every module imported (a definition, a decorator's call,
a nested import) and of its classes' bodies, found by a trace function on the importing thread alone
(none where that thread is traced already, by a debugger or coverage: their trace function is kept, and
the import does not pause).

The imports do not begin at ready: :func:`until_idle` waits for the first lull, the sessions quiet for
:data:`QUIET_BEFORE`, or half the session period when that is shorter (:func:`lull_for`; no pod of ours
arrived, no session ran), at most :data:`DEFERRED_AT_MOST` after ready. A cluster with pods arriving at ready (a restart, a replica taking the Lease over) has its first
pods placed without the import's CPU beside them (its first sessions, its bind workers and connections,
all cold then); a steady stream that leaves no lull meets the import later, pausing as below. With the
webhooks on the operator does not wait: kopf serves them.

A pause waits at most :data:`LONGEST_PAUSE` at a time and :data:`PAUSE_BUDGET` in all, and after a pause
that ended with the sessions still busy the import goes on without pausing until it has seen them quiet
once: sessions busy without a break (a backlog, a long session) never keep ``/metrics`` away for long,
and a session that waits for a module the paused import holds half-imported (its lock) waits one pause
at most. Nothing is skipped: every module is
imported whole, only later. It decides nothing and imports nothing itself but what it is handed.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import sys
import threading
import time
from collections.abc import Callable, Sequence
from inspect import CO_OPTIMIZED
from types import FrameType
from typing import Any

__all__ = [
    "DEFERRED_AT_MOST",
    "LONGEST_PAUSE",
    "PAUSE_BUDGET",
    "QUIET_BEFORE",
    "Activity",
    "import_aside",
    "until_idle",
]

#: Seconds one pause of the import waits at most for the sessions to be quiet.
LONGEST_PAUSE = 0.1
#: Seconds the import waits in all, over all its pauses; after that it goes on without pausing.
PAUSE_BUDGET = 2.0
#: Seconds the sessions are quiet (no pod of ours arrived, no session ran) before the imports after ready
#: begin (:func:`until_idle`).
QUIET_BEFORE = 0.5
#: Seconds after ready the imports wait at most for such a lull.
DEFERRED_AT_MOST = 10.0


def lull_for(period: float) -> float:
    """Seconds of quiet that make a lull when sessions run every ``period`` seconds: :data:`QUIET_BEFORE`,
    or half the period when that is shorter. A session runs every period even with nothing to do, so with
    a period under twice :data:`QUIET_BEFORE` the sessions are never quiet that long, and the imports
    would always wait :data:`DEFERRED_AT_MOST`."""
    return min(QUIET_BEFORE, period / 2)


class Activity:
    """Whether the sessions work: :meth:`begin` when a pod of ours arrives or a session starts, :meth:`end`
    when the session ends. Thread-safe; :attr:`quiet` is cheap (it is looked at at every call an import
    aside makes)."""

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        #: The clock (None: ``time.monotonic``, looked up at each call).
        self._clock = clock
        self._quiet = threading.Event()
        self._quiet.set()
        #: Whether the sessions are quiet (the event's own ``is_set``: no call of ours in between).
        self.quiet = self._quiet.is_set
        #: Pauses made so far by imports aside (for tests and the log).
        self.pauses = 0
        #: Seconds waited in them.
        self.paused = 0.0
        #: Called (no arguments) when an import aside starts a pause (tests wait for it).
        self.on_pause: Callable[[], None] | None = None
        #: When the sessions last became busy (monotonic), and the longest an import aside went on after
        #: that before it paused (seconds: a statement that had begun runs to its end).
        self.busy_since = 0.0
        self.longest_lag = 0.0
        #: When the sessions last became quiet (monotonic; made quiet).
        self.quiet_since = self._now()

    def begin(self) -> None:
        if self._quiet.is_set():
            self.busy_since = self._now()
            self._quiet.clear()

    def end(self) -> None:
        if not self._quiet.is_set():
            self.quiet_since = self._now()
        self._quiet.set()

    def idle_for(self) -> float:
        """Seconds the sessions have been quiet (0 while they are busy)."""
        if not self._quiet.is_set():
            return 0.0
        return max(0.0, self._now() - self.quiet_since)

    def _now(self) -> float:
        return time.monotonic() if self._clock is None else self._clock()

    def wait_quiet(self, timeout: float) -> bool:
        """Wait until the sessions are quiet, ``timeout`` seconds at most; whether they are."""
        return self._quiet.wait(timeout)


async def until_idle(
    activity: Activity,
    stop: asyncio.Event,
    *,
    quiet: float = QUIET_BEFORE,
    at_most: float = DEFERRED_AT_MOST,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Wait (on the event loop) until the sessions have been quiet for ``quiet`` seconds since this call
    (ready) or since they were last busy, whichever is later; ``at_most`` seconds in all, or until
    ``stop`` is set. Whether they were found idle (False: waited ``at_most``, or stopped). It looks again
    when such a lull would be due, or every ``quiet`` seconds while the sessions are busy: a few wake-ups
    of the loop, none per pod."""
    start = clock()
    while not stop.is_set():
        now = clock()
        idle = min(activity.idle_for(), now - start)
        if idle >= quiet:
            return True
        left = start + at_most - now
        if left <= 0:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), min(left, quiet - idle))
    return False


def import_aside(
    modules: Sequence[str],
    activity: Activity,
    *,
    longest: float = LONGEST_PAUSE,
    budget: float = PAUSE_BUDGET,
) -> None:
    """Import ``modules`` in turn on the calling thread, pausing before each module-level statement while
    ``activity`` is busy (at most ``longest`` seconds a pause, ``budget`` in all). An import error is
    raised as ``import`` raises it. A thread already traced (a debugger, coverage) keeps its trace
    function, which sees every line of the modules imported: the import then does not pause."""
    left = [budget]
    clock = time.monotonic
    quiet = activity.quiet
    #: The last pause ended with the sessions still busy: none more until they have been quiet once.
    outwaited = [False]

    def pause() -> None:
        if left[0] <= 0:
            return
        activity.pauses += 1
        if activity.on_pause is not None:
            activity.on_pause()
        started = clock()
        activity.longest_lag = max(activity.longest_lag, started - activity.busy_since)
        outwaited[0] = not activity.wait_quiet(min(longest, left[0]))
        waited = clock() - started
        activity.paused += waited
        left[0] -= waited

    def trace(frame: FrameType, event: str, _arg: Any) -> None:
        # A call made by a module's or a class's own body (code that is no function's: a statement
        # begins, a decorator, a nested import, a method of a dataclass made): no lock but the import's
        # own is held there. No local tracing: only calls are seen.
        if quiet():
            outwaited[0] = False
            return None
        if outwaited[0]:
            return None
        back = frame.f_back
        if event == "call" and back is not None and not back.f_code.co_flags & CO_OPTIMIZED:
            pause()
        return None

    # A debugger's or coverage's trace function is kept (not even set again: a C tracer would come back
    # as a Python one), and the import does not pause; one set meanwhile (a debugger that attached to
    # every thread) is left on.
    traced = sys.gettrace() is not None
    if not traced:
        sys.settrace(trace)  # this thread only
    try:
        for name in modules:
            importlib.import_module(name)
    finally:
        if not traced and sys.gettrace() is trace:
            sys.settrace(None)
