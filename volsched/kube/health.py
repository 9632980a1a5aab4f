"""Whether the kube-apiserver answers, told in a few log lines instead of one per failed call.

During an outage every watch, every Lease read and every write fails, several times a second. The
operator reports those failures here (and :class:`QuietRetries` routes kopf's and urllib3's own retry
messages here too): the first one is logged with its cause, the rest are counted, and the first
success after them logs how long the outage lasted and how many calls failed meanwhile. No I/O.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kubernetes.client.exceptions import ApiException

from volsched.redaction import error_summary

log = logging.getLogger("volsched.kube")


def is_unreachable(exc: BaseException) -> bool:
    """A failure to talk to the apiserver at all (connection refused/reset, timeout, a 5xx while it
    starts), as opposed to an answer (404, 409, 422...)."""
    if isinstance(exc, ApiException):
        return exc.status == 0 or exc.status is None or exc.status >= 500
    import urllib3.exceptions

    return isinstance(exc, OSError | urllib3.exceptions.HTTPError | TimeoutError)


def is_throttled(exc: BaseException) -> bool:
    """An answer of 429 (Too Many Requests) from the apiserver."""
    return isinstance(exc, ApiException) and exc.status == 429


def back_pressure(health: ApiHealth | None, *, throttled: bool) -> bool:
    """Whether a failed call is the apiserver's back-pressure rather than part of an outage: a 429
    (throttling, or "storage is (re)initializing" for a moment after it starts) while it is up is an
    answer, to be waited out (its Retry-After) quietly; during an outage it is counted with it. Every
    429 between two successful calls would otherwise log a false outage and its end."""
    return throttled and (health is None or not health.down)


class ApiHealth:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.down_since: float | None = None
        self.failures = 0
        self.outages = 0
        self._closing = False

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def closing(self) -> None:
        """The process is shutting down: failures from now on are its own doing, not worth a line."""
        self._closing = True

    def failed(self, what: str, exc: BaseException | str) -> None:
        if self._closing:
            return
        with self._lock:
            self.failures += 1
            if self.down_since is not None:
                return
            self.down_since = self._clock()
            self.outages += 1
            self.failures = 1
        cause = exc if isinstance(exc, str) else error_summary(exc)  # an answer's status, not its headers
        log.warning("kube-apiserver unreachable (%s: %s); retrying quietly until it answers", what, cause)

    def ok(self) -> None:
        with self._lock:
            if self.down_since is None:
                return
            lasted, failures = self._clock() - self.down_since, self.failures
            self.down_since = None
        log.warning(
            "kube-apiserver reachable again after %.1fs (%d failed calls meanwhile)", lasted, failures
        )


class QuietRetries(logging.Filter):
    """A handler filter: kopf's per-attempt request failures and urllib3's retry warnings become
    :meth:`ApiHealth.failed` calls instead of log lines. A 429 that kopf retries (the apiserver
    throttling) is dropped quietly while it is :func:`back_pressure`."""

    def __init__(self, health: ApiHealth) -> None:
        super().__init__()
        self.health = health

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        if name.startswith("kopf") or name.startswith("urllib3"):
            message = record.getMessage()
            if "Request attempt" in message or message.startswith("Retrying ("):
                cause = message.rsplit(" -> ", 1)[-1]
                if back_pressure(self.health, throttled="TooManyRequests" in cause):
                    return False  # an answer: kopf waits its Retry-After and asks again
                self.health.failed(name, cause[:300])
                return False
        return True
