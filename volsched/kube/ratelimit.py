"""A token bucket that bounds how fast the writer calls the API. Pure: the clock is injectable, no I/O."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


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
