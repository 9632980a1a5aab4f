"""Where an arriving pod's time goes, for the ``volsched.latency`` logger at DEBUG (off otherwise: every
hook returns at once).

Each pod of ours is stamped (``time.time()``, so a line can be joined with another process's clock on
the same machine, e.g. the bench's watch) when the watch first shows it pending, when the session that
placed it started, when that session handed its bind to the port, when a bind worker sent it and when
its answer came back; one line per bind answered::

    pod NS/NAME seen S session T decided D sent X answered A result R

Nothing here decides anything; it only reads clocks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

log = logging.getLogger("volsched.latency")


class PodLatency:
    def __init__(self) -> None:
        #: Whether the lines are wanted (read once: the level is set at start-up).
        self.on = log.isEnabledFor(logging.DEBUG)
        self._seen: dict[str, float] = {}
        self._decided: dict[str, tuple[float, float]] = {}
        #: When the session running now (or the last one) started.
        self.session_started = 0.0
        self._cpu = 0.0

    def saw(self, key: str) -> None:
        """The watch showed the pod pending (only its first sighting counts)."""
        if self.on and key not in self._seen:
            self._seen[key] = time.time()

    def gone(self, key: str) -> None:
        if self.on:
            self._seen.pop(key, None)
            self._decided.pop(key, None)

    def session(self) -> None:
        """A session starts (on the thread that runs it to its end)."""
        if self.on:
            self.session_started, self._cpu = time.time(), time.thread_time()

    def decided(self, keys: Iterable[str]) -> None:
        """The session handed these pods' binds to the port."""
        if self.on:
            now, started = time.time(), self.session_started
            for key in keys:
                self._decided[key] = (started, now)

    def session_done(self, timings: Mapping[str, float], *, binds: int) -> None:
        """The session that started at ``session_started`` ended: its phases' seconds."""
        if self.on:
            parts = " ".join(f"{k}={1000 * v:.1f}" for k, v in sorted(timings.items()))
            log.debug(
                "session started %.4f ended %.4f cpu %.4f binds %d ms: %s",
                self.session_started, time.time(), time.thread_time() - self._cpu, binds, parts,
            )  # fmt: skip

    def answered(self, key: str, *, sent: float, answered: float, result: str) -> None:
        if not self.on:
            return
        seen = self._seen.pop(key, float("nan"))
        started, decided = self._decided.pop(key, (float("nan"), float("nan")))
        log.debug(
            "pod %s seen %.4f session %.4f decided %.4f sent %.4f answered %.4f result %s",
            key, seen, started, decided, sent, answered, result,
        )  # fmt: skip
