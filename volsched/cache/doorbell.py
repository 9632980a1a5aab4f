"""The cache's doorbell: rung when something a session would act on arrives, so that the operator runs a
session soon instead of at the next period (see ``volsched.operator.pacing``).

Two kinds of ring, because they call for a session in different circumstances:

* ``arrived``: a pod of ours is pending that was not before (a new pod, one recreated under its name, one
  whose last scheduling gate was removed), or a pending pod of ours was edited where placing it reads
  (its spec, labels or annotations: it may fit now). A session has something to place.
* ``freed``: something changed that may let a pod that is already waiting in: a pod that held a node
  finished or was deleted, a node was added or changed, a PodGroup, Queue, claim, volume, namespace,
  quota or PriorityClass changed, a PodDisruptionBudget was deleted or now may let a victim go (it
  allows more disruptions, selects other pods, lets unready pods go). Worth a session only when the last
  one left pods waiting.
* ``config``: the operator loaded a new scheduler config between sessions (a period longer than the
  Lease's renewal): the next session acts on it, whether pods wait or not.
* ``retry``: a bind failed after its session ended (the operator's port rings it): only a cycle puts that
  pod back pending. Worth a session, but not at once: a bind that fails every time (a webhook that
  rejects it, an apiserver in trouble) must not turn into a session and a bind every ``min_gap``.

Watch events that change nothing a session acts on do not ring: an event confirming a bind the cache
assumed, a status update of a pod already pending or already placed, a PodGroup's status the operator
wrote itself, a node's heartbeat, a quota, namespace, claim, volume or PriorityClass sent again with
nothing the scheduler reads of it changed (a ResourceQuota's usage updated).

Thread-safe: watch threads ring, the session loop takes. The listener is called only when a kind goes
from quiet to rung (at most once per kind between two ``take``), from the ringing thread, and must not
block (the operator's hands the nudge to its event loop with ``call_soon_threadsafe``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

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

    def ring(self, kind: str) -> None:
        if kind not in self.count:
            raise ValueError(f"unknown ring {kind!r}; known: {', '.join(KINDS)}")
        with self._lock:
            self.count[kind] += 1
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
