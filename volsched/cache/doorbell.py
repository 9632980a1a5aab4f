"""The cache's doorbell: rung when something a session would act on arrives, so that the operator runs a
session soon instead of at the next period (see ``volsched.pacing``).

It only records which kinds rang (arrived, freed, config, retry); when a session runs is pacing's
decision. Thread-safe: watch threads ring, the session loop takes. What rings and what does not:
docs/design/modules.md#doorbell.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from volsched.records import dataclass

ARRIVED = "arrived"
FREED = "freed"
RETRY = "retry"
CONFIG = "config"
KINDS = (ARRIVED, FREED, RETRY, CONFIG)


@dataclass(frozen=True, slots=True)
class Rings:
    """What rang since the last ``take``."""

    arrived: bool = False
    freed: bool = False
    retry: bool = False
    config: bool = False

    def __bool__(self) -> bool:
        return self.arrived or self.freed or self.retry or self.config


class Doorbell:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rung: set[str] = set()
        self._listener: Callable[[], None] | None = None
        #: Rings so far, by kind (for tests and metrics).
        self.count = dict.fromkeys(KINDS, 0)

    def ring(self, kind: str, times: int = 1) -> None:
        """``kind`` rang (``times`` over: a listing's page of objects, rung once for them all)."""
        if kind not in self.count:
            raise ValueError(f"unknown ring {kind!r}; known: {', '.join(KINDS)}")
        with self._lock:
            self.count[kind] += times
            if kind in self._rung:
                return
            self._rung.add(kind)
            listener = self._listener
        if listener is not None:
            listener()

    def listen(self, listener: Callable[[], None] | None) -> None:
        """Call ``listener`` (no arguments, must not block) when a kind goes from quiet to rung."""
        with self._lock:
            self._listener = listener

    def peek(self) -> Rings:
        with self._lock:
            return self._rings()

    def _rings(self) -> Rings:
        rung = self._rung
        return Rings(arrived=ARRIVED in rung, freed=FREED in rung, retry=RETRY in rung, config=CONFIG in rung)

    def take(self) -> Rings:
        """What rang, and quiet again: a session that starts now sees everything rung so far."""
        with self._lock:
            rings = self._rings()
            self._rung.clear()
            return rings
