"""One active scheduler: a coordination.k8s.io Lease that fences binds, evictions and status writes.

The holder renews the Lease every ``renew_every`` seconds -- before each session and before each batch of
writes inside a session -- and writes only while it is *sure* it still holds it: its local deadline is
the (monotonic) time it sent its last successful renewal, plus the lease duration, minus a safety margin
(:meth:`LeaderLease.time_left`). Each write checks that deadline before it is sent, and its client timeout
never reaches past the lease's expiry (:meth:`LeaderLease.call_timeout`), so a replica that is slow, cut
off or paused stops writing before another one can take the Lease over.

Another replica takes the Lease over once ``renewTime + leaseDurationSeconds`` has passed, or at once
when the holder released it. A holder that shuts down cleanly stops writing, waits for the writes in
flight, and releases the Lease (empty ``holderIdentity``, no ``renewTime``). Conflicting writes of the
Lease itself (two replicas racing) fail on ``resourceVersion`` and the loser stays a follower.

Clocks: the holder's fence uses its own monotonic clock, a follower compares ``renewTime`` (the holder's
wall clock) with its own wall clock, so clock skew between replicas must stay below the safety margin.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from volsched.kube.health import ApiHealth, is_unreachable

log = logging.getLogger("volsched.lease")


def _micro(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def _ts(value: datetime | str | None) -> float:
    if value is None:
        return 0.0
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


@dataclass
class LeaseSettings:
    name: str = "volsched-scheduler"
    namespace: str = "volsched-system"
    #: Seconds a holder that stops renewing keeps the Lease (a kill -9 costs this long without a leader).
    duration: float = 15.0
    #: The holder renews when its last renewal is this old (before a session or a batch of writes).
    renew_every: float = 2.0
    #: A follower reads the Lease this often (one GET); it acquires at once when the Lease is free.
    retry_every: float = 0.25
    #: The holder stops writing this long before its Lease could expire (0: a third of the duration,
    #: at most 5 s). It bounds the network delay of a write and the clock skew between replicas.
    safety_margin: float = 0.0
    enabled: bool = True

    @property
    def margin(self) -> float:
        return self.safety_margin if self.safety_margin > 0 else min(5.0, self.duration / 3)

    def normalise(self) -> None:
        """Keep renewals well inside the fenced part of the lease."""
        self.renew_every = max(0.05, min(self.renew_every, (self.duration - self.margin) / 2))


class LeaderLease:
    def __init__(
        self,
        api: client.ApiClient,
        settings: LeaseSettings,
        identity: str,
        *,
        health: ApiHealth | None = None,
    ) -> None:
        self.api = client.CoordinationV1Api(api)
        self.health = health or ApiHealth()
        self.settings = settings
        self.identity = identity
        self._lock = threading.Lock()
        self._expires = 0.0  # local monotonic time our Lease can expire (renewal sent + duration)
        self._last_renew = 0.0  # monotonic time the last successful renewal was sent
        self._last_try = -1e9
        self._stopped = False
        #: Monotonic time the request that last made us the holder was sent (not a renewal).
        self.acquired_at = 0.0
        #: How we last became the holder: "created", "released" (the holder gave it up) or "expired".
        self.acquired_how = ""

    # --- the fence ---------------------------------------------------------------------------------------

    def time_left(self) -> float:
        """Seconds we may still start writes (<= 0: stop writing). Thread-safe, no I/O."""
        if not self.settings.enabled:
            return float("inf")
        if self._stopped:
            return 0.0
        return self._expires - self.settings.margin - time.monotonic()

    def call_timeout(self, wanted: float) -> float:
        """A client timeout for a write starting now that never reaches past the Lease's expiry."""
        if not self.settings.enabled:
            return wanted
        return max(0.001, min(wanted, self._expires - time.monotonic()))

    @property
    def is_leader(self) -> bool:
        return self.time_left() > 0

    def stop_writing(self) -> None:
        """Fence ourselves off for good (shutdown): every write from now on is refused locally."""
        self._stopped = True

    # --- acquire and renew -------------------------------------------------------------------------------

    def ensure(self) -> bool:
        """Acquire, or renew when due. Returns whether we may write now. Never raises for API errors.

        Call it between sessions: a session's snapshot is only good under the holding it started with."""
        return self._ensure(acquire=True)

    def renew_if_due(self) -> bool:
        """Renew when due, never acquire (inside a session, between writes). Returns whether we may write."""
        return self._ensure(acquire=False)

    def _ensure(self, *, acquire: bool) -> bool:
        if not self.settings.enabled:
            return True
        if self._stopped:
            return False
        with self._lock:
            now = time.monotonic()
            held = self.is_leader
            if held and now - self._last_renew < self.settings.renew_every:
                return True
            if not acquire and self._expires == 0:
                return False  # not ours: a new holding needs a new session
            if not held and now - self._last_try < self.settings.retry_every:
                return False
            self._last_try = now
            try:
                self._try_acquire(acquire=acquire)
                self.health.ok()
            except Exception as exc:  # keep what we had until the fence closes
                if is_unreachable(exc):
                    self.health.failed(f"lease {self.settings.namespace}/{self.settings.name}", exc)
                elif isinstance(exc, ApiException) and exc.status in (404, 409):
                    self.health.ok()  # lost a race for the Lease: the next try reads it again
                else:
                    log.warning("lease %s/%s: %s", self.settings.namespace, self.settings.name, exc)
            return self.is_leader

    def _spec(self, acquire_time: float, transitions: int) -> client.V1LeaseSpec:
        return client.V1LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, round(self.settings.duration)),
            acquire_time=_micro(acquire_time),
            renew_time=_micro(time.time()),
            lease_transitions=transitions,
        )

    def _won(self, sent: float, *, how: str = "") -> None:
        if self._stopped:
            return
        self._expires = sent + self.settings.duration
        self._last_renew = sent
        if how:
            self.acquired_at, self.acquired_how = sent, how

    def _try_acquire(self, *, acquire: bool = True) -> None:
        s = self.settings
        try:
            lease = self.api.read_namespaced_lease(s.name, s.namespace, _request_timeout=s.duration / 2)
        except ApiException as exc:
            if exc.status != 404 or not acquire:
                raise
            body = client.V1Lease(
                metadata=client.V1ObjectMeta(name=s.name, namespace=s.namespace),
                spec=self._spec(time.time(), 0),
            )
            sent = time.monotonic()
            self.api.create_namespaced_lease(s.namespace, body, _request_timeout=s.duration / 2)
            log.info("lease %s/%s: acquired (created) by %s", s.namespace, s.name, self.identity)
            self._won(sent, how="created")
            return
        spec = lease.spec or client.V1LeaseSpec()
        holder = spec.holder_identity or ""
        duration = spec.lease_duration_seconds or s.duration
        if holder == self.identity:
            lease.spec = self._spec(_ts(spec.acquire_time) or time.time(), spec.lease_transitions or 0)
            sent = time.monotonic()
            timeout = self.call_timeout(s.duration / 2) if self.is_leader else s.duration / 2
            self.api.replace_namespaced_lease(s.name, s.namespace, lease, _request_timeout=timeout)
            # Not held before (e.g. our acquiring write timed out but went through): a new acquisition.
            self._won(sent, how="" if self._expires > 0 else "reclaimed")
            return
        if not acquire or (holder and time.time() < _ts(spec.renew_time) + duration):
            self._expires = 0.0
            return
        lease.spec = self._spec(time.time(), (spec.lease_transitions or 0) + 1)
        sent = time.monotonic()
        self.api.replace_namespaced_lease(s.name, s.namespace, lease, _request_timeout=s.duration / 2)
        log.info(
            "lease %s/%s: acquired by %s (%s)",
            s.namespace, s.name, self.identity, f"expired, was {holder!r}" if holder else "it was released",
        )  # fmt: skip
        self._won(sent, how="expired" if holder else "released")

    def release(self) -> None:
        """Stop writing and give the Lease up so a successor can take it at once (clean shutdown).

        Call it only once the writes in flight have ended: the successor may write as soon as this returns.
        """
        self.stop_writing()
        if not self.settings.enabled or self._expires == 0:
            return  # never held, or known lost
        s = self.settings
        try:
            lease = self.api.read_namespaced_lease(
                s.name, s.namespace, _request_timeout=self.call_timeout(5.0)
            )
            if lease.spec is not None and lease.spec.holder_identity == self.identity:
                lease.spec.holder_identity = None
                lease.spec.renew_time = None
                lease.spec.acquire_time = None
                self.api.replace_namespaced_lease(
                    s.name, s.namespace, lease, _request_timeout=self.call_timeout(5.0)
                )
                log.info("lease %s/%s: released by %s", s.namespace, s.name, self.identity)
        except Exception as exc:
            log.warning("lease %s/%s: release failed (it expires on its own): %s", s.namespace, s.name, exc)
        self._expires = 0.0
