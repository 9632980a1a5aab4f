"""Rate limits for the writer: a token bucket for API calls, the apiserver's "try again later", and a
per-object event filter (dedup + rate).

Pure: the clock is injectable, no I/O.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

#: The longest a write waits on one "try again later" before it is tried again.
MAX_RETRY_AFTER = 10.0

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def words(message: str) -> str:
    """``message`` with its numbers masked: two messages alike in it say the same thing in other numbers
    (a pending pod's "most idle 3.9" becoming "3.8" as the cluster fills)."""
    return _NUMBER.sub("#", message)


def retry_after(
    status: int | None, headers: Mapping[str, Any] | None, body: str | bytes | None
) -> float | None:
    """Seconds the apiserver asks us to wait before sending this request again, or None when its answer
    is final.

    API Priority and Fairness (and the older max-in-flight filter) answer a request they would not queue
    with 429 and a ``Retry-After`` header: the request was not executed, and sending it again later is
    safe. A 429 from the Eviction API about a PodDisruptionBudget is an answer about the pod (the
    eviction is blocked), never retried here; it carries a ``DisruptionBudget`` cause.
    """
    if status != 429 or not headers:
        return None
    value = next((v for k, v in headers.items() if str(k).lower() == "retry-after"), None)
    try:
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):
        seconds = None
    if seconds is None:
        return None
    try:
        details = json.loads(body or "{}").get("details") or {}
        causes = details.get("causes") or []
    except (ValueError, TypeError, AttributeError):
        causes = []
    if any(isinstance(c, dict) and c.get("reason") == "DisruptionBudget" for c in causes):
        return None
    return min(max(seconds, 0.1), MAX_RETRY_AFTER)


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` saved up. Thread-safe.

    :meth:`try_take` never blocks and says how long to wait when no token is left; :meth:`take` sleeps
    until one is.
    """

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        self.rate = float(rate)
        self.burst = int(burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.rate)

    def try_take(self) -> float:
        """Take a token if there is one and return 0; otherwise return the seconds until there is one."""
        with self._lock:
            self._refill()
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return 0.0
            return (1.0 - self._tokens) / self.rate

    def take(self) -> None:
        """Block until a token is taken."""
        while True:
            wait = self.try_take()
            if wait <= 0.0:
                return
            self._sleep(wait)

    @property
    def available(self) -> float:
        with self._lock:
            self._refill()
            return self._tokens


class EventFilter:
    """Decides which events are sent, per object (like client-go's event correlator, simplified).

    * Deduplication: an object never gets the same message for the same reason twice in a row
      (:meth:`admit` refuses it until another message was sent for that reason).
    * Rate limit: each object may receive ``burst`` events at once, then one per ``every`` seconds;
      an event refused for the rate is not remembered, so the next session offers its newest message.
    * Numbers settle (when asked): a message that says what the last one sent said in other numbers
      (:func:`words`) waits until that one is ``every`` seconds old (:meth:`settling`): a pod that can
      never fit is not told each session the cluster's idle room that other pods' binds just changed.

    Keys are the caller's (an object's UID, or its reference when it has none). Thread-safe; pure.
    """

    def __init__(
        self, *, burst: int = 5, every: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if burst < 1 or every <= 0:
            raise ValueError(f"burst must be >= 1 and every > 0, got {burst}, {every}")
        self.burst = burst
        self.every = float(every)
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: dict[str, tuple[float, float]] = {}  # object -> (tokens, at)
        self._last: dict[tuple[str, str], tuple[str, int]] = {}  # (object, reason) -> (message, count)
        self._sent_at: dict[tuple[str, str], float] = {}  # (object, reason) -> when the last was sent
        #: Events refused because the object was over its rate (for metrics and tests).
        self.limited = 0

    def last(self, obj: str, reason: str) -> tuple[str, int] | None:
        """The last message sent for (object, reason) and how many messages were sent for it."""
        with self._lock:
            return self._last.get((obj, reason))

    def admit(self, obj: str, reason: str, message: str, *, settle: bool = False) -> bool:
        """Whether to send this event now (takes one of the object's tokens if so). ``settle``: the
        numbers settle (see the class docstring), for an event offered again by every session while
        its object waits (one offered once would be lost)."""
        with self._lock:
            last = self._last.get((obj, reason))
            if last is not None and last[0] == message:
                return False
            now = self._clock()
            if (
                settle
                and last is not None
                and self._settling(last[0], self._sent_at.get((obj, reason)), message, now)
            ):
                return False
            tokens, at = self._tokens.get(obj, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + max(0.0, now - at) / self.every)
            if tokens < 1.0:
                self._tokens[obj] = (tokens, now)
                self.limited += 1
                return False
            self._tokens[obj] = (tokens - 1.0, now)
            return True

    def sent(self, obj: str, reason: str, message: str, *, count: int | None = None) -> int:
        """Record a message as sent (or found already there); returns its count for the event."""
        with self._lock:
            last = self._last.get((obj, reason))
            n = count if count is not None else (last[1] + 1 if last else 1)
            self._last[(obj, reason)] = (message, n)
            self._sent_at[(obj, reason)] = self._clock()
            return n

    def settling(self, last: str | None, at: float | None, message: str) -> bool:
        """Whether ``message`` only moves the numbers of ``last``, written at ``at`` (this filter's
        clock) less than ``every`` seconds ago: then it waits (counted as held back, so a later session
        offers it again). For what is written like an event, a pod's condition."""
        with self._lock:
            return last is not None and self._settling(last, at, message, self._clock())

    def _settling(self, last: str, at: float | None, message: str, now: float) -> bool:
        if now - (-math.inf if at is None else at) >= self.every or words(last) != words(message):
            return False
        self.limited += 1
        return True

    def now(self) -> float:
        return self._clock()

    def forget(self, obj: str) -> None:
        """Drop all memory of an object (it was deleted or recreated)."""
        with self._lock:
            self._tokens.pop(obj, None)
            for key in [k for k in self._last if k[0] == obj]:
                del self._last[key]
                self._sent_at.pop(key, None)
