"""One active scheduler: a coordination.k8s.io Lease that guards binds, evictions and status writes.

The holder renews it every session; another replica takes it over only once it has expired, and a
holder that shuts down cleanly releases it (empty holderIdentity), so its successor need not wait.
Conflicting writes (two replicas racing) fail on resourceVersion and the loser stays a follower.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from kubernetes import client
from kubernetes.client.exceptions import ApiException

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
    duration: float = 15.0
    renew_every: float = 2.0
    enabled: bool = True


class LeaderLease:
    def __init__(self, api: client.ApiClient, settings: LeaseSettings, identity: str) -> None:
        self.api = client.CoordinationV1Api(api)
        self.settings = settings
        self.identity = identity
        self._held_until = 0.0  # local monotonic deadline of our last successful renewal
        self._last_renew = 0.0

    @property
    def is_leader(self) -> bool:
        return not self.settings.enabled or time.monotonic() < self._held_until

    def ensure(self) -> bool:
        """Acquire or renew when due. Returns whether we hold the lease now."""
        if not self.settings.enabled:
            return True
        now = time.monotonic()
        if self.is_leader and now - self._last_renew < self.settings.renew_every:
            return True
        try:
            self._try_acquire()
        except ApiException as exc:
            if exc.status not in (404, 409):
                log.warning(
                    "lease %s/%s: %s %s", self.settings.namespace, self.settings.name, exc.status, exc.reason
                )
        except Exception as exc:  # network trouble: keep what we had until it expires
            log.warning("lease %s/%s: %s", self.settings.namespace, self.settings.name, exc)
        return self.is_leader

    def _spec(self, acquire_time: float, transitions: int) -> client.V1LeaseSpec:
        now = time.time()
        return client.V1LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, round(self.settings.duration)),
            acquire_time=_micro(acquire_time),
            renew_time=_micro(now),
            lease_transitions=transitions,
        )

    def _won(self, started: float) -> None:
        self._held_until = started + self.settings.duration
        self._last_renew = started

    def _try_acquire(self) -> None:
        s = self.settings
        started = time.monotonic()
        try:
            lease = self.api.read_namespaced_lease(s.name, s.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = client.V1Lease(
                metadata=client.V1ObjectMeta(name=s.name, namespace=s.namespace),
                spec=self._spec(time.time(), 0),
            )
            self.api.create_namespaced_lease(s.namespace, body)
            log.info("lease %s/%s: acquired (created) by %s", s.namespace, s.name, self.identity)
            self._won(started)
            return
        spec = lease.spec or client.V1LeaseSpec()
        holder = spec.holder_identity or ""
        renewed = _ts(spec.renew_time)
        duration = spec.lease_duration_seconds or s.duration
        if holder == self.identity:
            lease.spec = self._spec(_ts(spec.acquire_time) or time.time(), spec.lease_transitions or 0)
            self.api.replace_namespaced_lease(s.name, s.namespace, lease)
            self._won(started)
            return
        if holder and time.time() < renewed + duration:
            self._held_until = 0.0
            return
        lease.spec = self._spec(time.time(), (spec.lease_transitions or 0) + 1)
        self.api.replace_namespaced_lease(s.name, s.namespace, lease)
        log.info("lease %s/%s: acquired by %s (was %r)", s.namespace, s.name, self.identity, holder)
        self._won(started)

    def release(self) -> None:
        """Give the lease up (on a clean shutdown) so a successor can take it at once."""
        if not self.settings.enabled or not self.is_leader:
            return
        s = self.settings
        try:
            lease = self.api.read_namespaced_lease(s.name, s.namespace)
            if lease.spec is not None and lease.spec.holder_identity == self.identity:
                lease.spec.holder_identity = None
                lease.spec.renew_time = None
                lease.spec.acquire_time = None
                self.api.replace_namespaced_lease(s.name, s.namespace, lease)
                log.info("lease %s/%s: released by %s", s.namespace, s.name, self.identity)
        except Exception as exc:
            log.warning("lease %s/%s: release failed: %s", s.namespace, s.name, exc)
        self._held_until = 0.0
