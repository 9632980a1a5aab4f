"""How long the pods of a namespace and queue ran: what the cache learns from pods it saw finish, and
the expected run time it gives a pod that says none.

Only pods that succeeded count (a failed or evicted pod says nothing of how long the work takes). The
estimate is conservative: the longest of the last :data:`KEEP` runs, once :data:`LEAST` are known;
fewer, and none is given. Kept in memory (an operator that restarts learns again, from the succeeded
pods still there). Thread-safe: the watch threads learn while a session reads
:meth:`RuntimeHistory.estimates`.
"""

from __future__ import annotations

import threading
from collections import deque

#: Runs kept per namespace and queue, and how many make an estimate.
KEEP = 20
LEAST = 3


class RuntimeHistory:
    """Run times of succeeded pods by (namespace, queue)."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()
        self._estimates: dict[tuple[str, str], float] | None = {}

    def learn(self, namespace: str, queue: str, seconds: float) -> None:
        """A pod of ``namespace`` in ``queue`` succeeded after running ``seconds`` (ignored unless > 0)."""
        if not seconds > 0:
            return
        with self._lock:
            self._runs.setdefault((namespace, queue), deque(maxlen=KEEP)).append(float(seconds))
            self._estimates = None

    def estimates(self) -> dict[tuple[str, str], float]:
        """(namespace, queue) -> the expected run time of its pods, where enough runs are known (the same
        dict until something is learned: read it, never change it)."""
        with self._lock:
            if self._estimates is None:
                self._estimates = {k: max(v) for k, v in self._runs.items() if len(v) >= LEAST}
            return self._estimates
