"""Where an arriving pod's time goes, for the ``volsched.latency`` logger at DEBUG (off otherwise: every
hook returns at once).

Each pod of ours is stamped (``time.time()``, so a line can be joined with another process's clock on
the same machine, e.g. the bench's watch) when the watch first shows it pending, when the session that
placed it started, when that session handed its bind to the port, when a bind worker sent it and when
its answer came back; one line per bind answered::

    pod NS/NAME seen S session T decided D sent X answered A result R called C woke W read E rang G here H

``called`` and ``woke`` split the way from the watch to the session: when the session loop handed the
session to its thread, and when that thread began it (before the Lease and the config are looked at,
which ``session`` follows). ``read`` is when the pod's watch event arrived (before it was decoded:
``seen`` follows it), ``rang`` when the doorbell woke the session thread (the cache had taken the pod),
so the way splits into decode (read -> seen), apply (seen -> rang) and wake (rang -> called). ``here`` is
1 when the session ran on the thread that read the pod watch's last event (an arriving pod's session on
the pod watch's own thread: :mod:`volsched.operator.sessions`), else 0.

A bind never answered (the port closed, the Lease lost before it was sent) is forgotten once
:data:`UNANSWERED` seconds old, so what is kept stays bounded by the binds of the last ten minutes.

With :meth:`PodLatency.watch_collections`, each run of the cyclic collector (any thread's) is stamped too,
one line each, so that a slow pod can be laid beside the collector's pauses::

    gc generation G started S ms D collected C

The lines are held (at most :data:`COLLECTIONS_HELD`) and logged after the next session or bind answer,
never from inside the collector's callback.

Nothing here decides anything; it only reads clocks.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

log = logging.getLogger("volsched.latency")

#: Seconds after which a decided bind with no answer is forgotten (answers come within the writer's
#: timeouts, seconds).
UNANSWERED = 600.0
#: The collector's runs held until they are logged; older ones are dropped past this many.
COLLECTIONS_HELD = 10_000


class PodLatency:
    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        #: Whether the lines are wanted (read once: the level is set at start-up).
        self.on = log.isEnabledFor(logging.DEBUG)
        self._clock = clock
        #: By pod: (its watch event read, its sighting).
        self._seen: dict[str, tuple[float, float]] = {}
        self._read = float("nan")
        #: The thread that read the pod watch's last event.
        self._reader = 0
        #: By pod: (session started, decided, called, woke, rang, here), in the order decided (the oldest
        #: first).
        self._decided: dict[str, tuple[float, float, float, float, float, bool]] = {}
        self._lock = threading.Lock()  # _decided: the session's thread, bind workers, the watch
        #: When the session running now (or the last one) started.
        self.session_started = 0.0
        #: When the loop handed it to its thread, and when that thread began it (see :meth:`woke`); when
        #: the doorbell last woke the session thread (see :meth:`rang`).
        self._called = self._woke = self._rang = float("nan")
        self.session_called = self.session_woke = self.session_rang = float("nan")
        #: Whether the session running now runs on the thread that read the pod watch's last event.
        self.session_here = False
        self._cpu = 0.0
        #: The collector's runs not yet logged: (generation, started, seconds, objects collected).
        self._collections: deque[tuple[int, float, float, int]] = deque(maxlen=COLLECTIONS_HELD)
        self._gc_started = (0.0, 0.0)

    def watch_collections(self) -> None:
        """Stamp each run of the cyclic collector from now on (once; nothing when the lines are off)."""
        if self.on and self._collected not in gc.callbacks:
            gc.callbacks.append(self._collected)

    def unwatch_collections(self) -> None:
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)
        self._log_collections()

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        """``gc.callbacks``' hook: a run's start and end (the collector runs on one thread at a time)."""
        if phase == "start":
            self._gc_started = (self._clock(), time.perf_counter())
        else:
            started, counter = self._gc_started
            self._collections.append(
                (info["generation"], started, time.perf_counter() - counter, info["collected"])
            )

    def _log_collections(self) -> None:
        held = self._collections
        while held:
            try:
                generation, started, seconds, collected = held.popleft()
            except IndexError:  # another thread logged the last one
                break
            log.debug(
                "gc generation %d started %.6f ms %.3f collected %d",
                generation,
                started,
                1000 * seconds,
                collected,
            )

    def line_read(self) -> None:
        """A line of the pods' watch arrived, before it is decoded (on the watch's thread): the next
        sighting's event was read then."""
        self._read = self._clock()
        self._reader = threading.get_ident()

    def saw(self, key: str) -> None:
        """The watch showed the pod pending (only its first sighting counts)."""
        if self.on and key not in self._seen:
            self._seen[key] = (self._read, self._clock())

    def gone(self, key: str) -> None:
        if self.on:
            self._seen.pop(key, None)
            with self._lock:
                self._decided.pop(key, None)

    def rang(self) -> None:
        """The doorbell woke the session thread (on the thread that rang it)."""
        if self.on:
            self._rang = self._clock()

    def calling(self) -> None:
        """The session loop hands the next session to its thread (on the loop)."""
        if self.on:
            self._called = self._clock()

    def woke(self) -> None:
        """The thread that runs the next session began it (before the Lease and the config)."""
        if self.on:
            self._woke = self._clock()

    def session(self) -> None:
        """A session starts (on the thread that runs it to its end)."""
        if self.on:
            self.session_started, self._cpu = self._clock(), time.thread_time()
            self.session_called, self.session_woke = self._called, self._woke
            self.session_rang = self._rang
            self.session_here = threading.get_ident() == self._reader

    def decided(self, keys: Iterable[str]) -> None:
        """The session handed these pods' binds to the port."""
        if not self.on:
            return
        now, started = self._clock(), self.session_started
        called, woke, rang, here = (
            self.session_called,
            self.session_woke,
            self.session_rang,
            self.session_here,
        )
        decided, forgotten = self._decided, 0
        with self._lock:
            for key in keys:
                decided.pop(key, None)  # decided again: kept in the order decided
                decided[key] = (started, now, called, woke, rang, here)
            while decided:  # the oldest first: those never answered
                oldest = next(iter(decided))
                if now - decided[oldest][1] <= UNANSWERED:
                    break
                del decided[oldest]
                forgotten += 1
        if forgotten:
            log.debug(
                "%d binds decided more than %gs ago were never answered; forgotten", forgotten, UNANSWERED
            )

    def session_done(self, timings: Mapping[str, float], *, binds: int) -> None:
        """The session that started at ``session_started`` ended: its phases' seconds."""
        if self.on:
            parts = " ".join(f"{k}={1000 * v:.2f}" for k, v in sorted(timings.items()))
            log.debug(
                "session started %.4f ended %.4f cpu %.4f binds %d ms: %s",
                self.session_started, self._clock(), time.thread_time() - self._cpu, binds, parts,
            )  # fmt: skip
            self._log_collections()

    def answered(self, key: str, *, sent: float, answered: float, result: str) -> None:
        if not self.on:
            return
        nan = float("nan")
        read, seen = self._seen.pop(key, (nan, nan))
        with self._lock:
            started, decided, called, woke, rang, here = self._decided.pop(
                key, (nan, nan, nan, nan, nan, False)
            )
        log.debug(
            "pod %s seen %.6f session %.6f decided %.6f sent %.6f answered %.6f result %s called %.6f "
            "woke %.6f read %.6f rang %.6f here %d",
            key, seen, started, decided, sent, answered, result, called, woke, read, rang, here,
        )  # fmt: skip
        self._log_collections()
