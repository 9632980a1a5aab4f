"""Whether the kube-apiserver answers, told in a few log lines instead of one per failed call.

During an outage every watch, every Lease read and every write fails, several times a second. The
operator reports those failures here (and :class:`QuietRetries` routes kopf's and urllib3's own retry
messages here too): the first one is logged with its cause, the rest are counted, and the first
answer :data:`SETTLE` seconds or more after the last failure logs how long the outage lasted (until
the first answer after that failure) and how many calls failed meanwhile. An outage starts ragged
(calls in flight are answered while new ones fail, a draining apiserver answers some and refuses
others): an answer between failures does not end it, or its start was told in two lines per answer.
No I/O.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable

from volsched.kube.errors import is_api_error
from volsched.redaction import error_summary

log = logging.getLogger("volsched.kube")


def is_unreachable(exc: BaseException) -> bool:
    """A failure to talk to the apiserver at all (connection refused/reset, timeout, a 5xx while it
    starts), as opposed to an answer (404, 409, 422...)."""
    if is_api_error(exc):
        status = getattr(exc, "status", None)
        return status == 0 or status is None or status >= 500
    # urllib3's errors come from the Kubernetes client (the custom metrics source), which imports it.
    urllib3 = sys.modules.get("urllib3.exceptions")
    return isinstance(exc, OSError | TimeoutError) or (
        urllib3 is not None and isinstance(exc, urllib3.HTTPError)
    )


def is_throttled(exc: BaseException) -> bool:
    """An answer of 429 (Too Many Requests) from the apiserver."""
    return is_api_error(exc) and getattr(exc, "status", None) == 429


def back_pressure(health: ApiHealth | None, *, throttled: bool) -> bool:
    """Whether a failed call is the apiserver's back-pressure rather than part of an outage: a 429
    (throttling, or "storage is (re)initializing" for a moment after it starts) while it is up is an
    answer, to be waited out (its Retry-After) quietly; during an outage it is counted with it. Every
    429 between two successful calls would otherwise log a false outage and its end."""
    return throttled and (health is None or not health.down)


#: Seconds after the last failed call from which an answer ends an outage.
SETTLE = 2.0


class ApiHealth:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic, settle: float = SETTLE) -> None:
        self._clock = clock
        self.settle = settle
        self._lock = threading.Lock()
        self.down_since: float | None = None
        self._last_failure = 0.0
        #: During an outage, when the apiserver first answered since the last failure (None: not yet).
        self._answered_since: float | None = None
        self.failures = 0
        self.outages = 0
        self._closing = False

    @property
    def down(self) -> bool:
        """Whether an outage is on: one ends once an answer came and ``settle`` seconds passed since the
        last failure, whether or not another call is answered then (a watch may sit on its stream)."""
        with self._lock:
            ended = self._ended(self._clock())
            down = self.down_since is not None
        self._say_ended(ended)
        return down

    def closing(self) -> None:
        """The process is shutting down: failures from now on are its own doing, not worth a line."""
        self._closing = True

    def failed(self, what: str, exc: BaseException | str) -> None:
        if self._closing:
            return
        with self._lock:
            now = self._clock()
            ended = self._ended(now)  # an outage that was over before this failure began another
            self.failures += 1
            self._answered_since = None
            self._last_failure = now
            started = self.down_since is None
            if started:
                self.down_since = now
                self.outages += 1
                self.failures = 1
        self._say_ended(ended)
        if started:
            cause = exc if isinstance(exc, str) else error_summary(exc)  # an answer's status, not its headers
            log.warning("kube-apiserver unreachable (%s: %s); retrying quietly until it answers", what, cause)

    def ok(self) -> None:
        """A call was answered. During an outage it ends the outage if it comes ``settle`` seconds or
        more after the last failure (see ``down``); the outage lasted until the first answer after that
        failure."""
        with self._lock:
            if self.down_since is None:
                return
            now = self._clock()
            if self._answered_since is None:
                self._answered_since = now
            ended = self._ended(now)
        self._say_ended(ended)

    def _ended(self, now: float) -> tuple[float, int] | None:
        """(Under ``_lock``) End the outage if it is over at ``now``: (how long it lasted, failed calls)."""
        since, answered = self.down_since, self._answered_since
        if since is None or answered is None or now - self._last_failure < self.settle:
            return None
        self.down_since = self._answered_since = None
        return answered - since, self.failures

    @staticmethod
    def _say_ended(ended: tuple[float, int] | None) -> None:
        if ended is not None:
            log.warning("kube-apiserver reachable again after %.1fs (%d failed calls meanwhile)", *ended)


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
