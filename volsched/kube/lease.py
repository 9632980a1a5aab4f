"""One active scheduler: a coordination.k8s.io Lease that fences binds, evictions and status writes.

The holder renews the Lease every ``renew_every`` seconds -- before each session and before each batch of
writes inside a session; on a thread of its own, nobody waiting, while the Lease is its own for longer than
``renew_every`` yet; one write of the Lease as its last write was answered, read first only when that
write failed or another wrote since (409) -- and writes only while it is *sure* it still holds it: its
local deadline is the (monotonic) time it sent its last successful renewal, plus the lease duration,
minus a safety margin (:meth:`LeaderLease.time_left`). Each write checks that deadline before it is sent, and its client timeout
never reaches past the lease's expiry (:meth:`LeaderLease.call_timeout`), so a replica that is slow, cut
off or paused stops writing before another one can take the Lease over.

Another replica takes the Lease over once ``renewTime + leaseDurationSeconds`` has passed, or at once
when the holder released it. A holder that shuts down cleanly stops writing, waits for the writes in
flight, and releases the Lease (empty ``holderIdentity``, no ``renewTime``) within a bound
(:data:`RELEASE_WITHIN`): a renewal in flight writes nothing once the holder stopped, and a release that
cannot be made in time leaves the Lease to expire. Conflicting writes of the Lease itself (two replicas
racing, or a release and a renewal already sent) fail on ``resourceVersion`` and the loser stays a
follower.

What a holder still owes when it stops (the writer's evictions whose answer was lost: their event waits
for a look at the pod, :mod:`volsched.kube.writer`) goes with the Lease: every write of the Lease says it
under :data:`HANDOVER` as :attr:`LeaderLease.handover` has it, and each acquisition keeps what the Lease
said there (:attr:`LeaderLease.inherited`) and writes it on unchanged until the writer took it over. The
Lease does not read it. The writer has it written when it changes: at once, on the renewal's thread
(:meth:`LeaderLease.hand_over_soon`), or before it goes on (:meth:`LeaderLease.hand_over_now`: before
evictions are sent).

Clocks: the holder's fence uses its own monotonic clock, a follower compares ``renewTime`` (the holder's
wall clock) with its own wall clock, so clock skew between replicas must stay below the safety margin.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import quote

from volsched.kube.errors import ApiException
from volsched.kube.health import ApiHealth, is_unreachable
from volsched.kube.kubeconfig import AnyApi
from volsched.kube.rest import LeanRest, loads
from volsched.model.scalars import rfc3339
from volsched.records import dataclass
from volsched.redaction import error_summary

log = logging.getLogger("volsched.lease")

#: Seconds a renewal behind waits at most for :attr:`LeaderLease.wait_quiet` (the sessions quiet).
QUIET_WAIT = 0.1
#: Seconds a release (shutdown) takes at most: a renewal in flight is waited for up to half of it (its
#: read alone may take half the lease duration), then the Lease is read and given up in what is left.
#: Shutdown must end well inside the pod's grace period (30 s unless set).
RELEASE_WITHIN = 5.0


#: The Lease's annotation that hands what its holder owes over to the next holder (see the module's text).
HANDOVER = "scheduling.volsched.io/owed"


def _handover_of(lease: dict[str, Any]) -> str:
    """What a Lease as read says under :data:`HANDOVER` ("" nothing)."""
    notes = (lease.get("metadata") or {}).get("annotations") or {}
    return str(notes.get(HANDOVER) or "") if isinstance(notes, dict) else ""


def _ts(value: str | None) -> float:
    """A MicroTime as the Lease's JSON has it (RFC 3339) -> Unix seconds; 0.0 when unset."""
    if not value:
        return 0.0
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def lease_path(namespace: str, name: str = "") -> str:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{quote(namespace, safe='')}/leases"
    return f"{path}/{quote(name, safe='')}" if name else path


@dataclass
class LeaseSettings:
    """The leader Lease's name, namespace and timings."""

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
        api: AnyApi,
        settings: LeaseSettings,
        identity: str,
        *,
        health: ApiHealth | None = None,
        direct_until: threading.Event | None = None,
    ) -> None:
        #: Plain JSON (the client's CoordinationV1Api would build and parse its models on every renewal,
        #: and import them at start), over the direct path wherever the configuration allows it: a
        #: renewal behind parks its thread's connection for the next one (:meth:`_renew_later`), and the
        #: session thread keeps its own. aiohttp's client where the direct path cannot go (a proxy, a TLS
        #: server name), and before ``direct_until`` is set (as before: unused since).
        self.rest = LeanRest(api, direct=None, direct_until=direct_until)
        self.health = health or ApiHealth()
        self.settings = settings
        self.identity = identity
        self._lock = threading.Lock()
        #: The renewal running on a thread of its own, if any (see :meth:`_renew_behind`).
        self._behind: threading.Thread | None = None
        #: Called on the renewal's own thread before it renews behind, with the most it may wait (seconds):
        #: the operator waits there for its sessions to be quiet (the session that found the renewal due
        #: has only begun), so that the renewal's work does not share the interpreter with it.
        self.wait_quiet: Callable[[float], object] | None = None
        self._behind_lock = threading.Lock()
        self._expires = 0.0  # local monotonic time our Lease can expire (renewal sent + duration)
        self._last_renew = 0.0  # monotonic time the last successful renewal was sent
        self._last_try = -1e9
        self._stopped = False
        #: The Lease as our last write of it was answered (its resourceVersion the apiserver's then): the
        #: next renewal writes it again at once, without reading it first (:meth:`_renew_as_written`).
        #: None when unknown (never written, or a write of ours failed since).
        self._written: dict[str, Any] | None = None
        #: Monotonic time the request that last made us the holder was sent (not a renewal).
        self.acquired_at = 0.0
        #: How we last became the holder: "created", "released" (the holder gave it up) or "expired".
        self.acquired_how = ""
        #: What each write of the Lease says under :data:`HANDOVER` ("": nothing), set by the writer (any
        #: thread: one assignment). None: what the Lease says there as read, unchanged (from an acquisition
        #: until the writer took over :attr:`inherited`).
        self.handover: str | None = None
        #: What the Lease said under :data:`HANDOVER` when we last became its holder ("": nothing); the
        #: writer empties it as it takes it over.
        self.inherited = ""
        #: A write of :attr:`handover` was asked for (:meth:`hand_over_soon`) since the renewal behind
        #: running, if any, began: it writes the Lease once more before its thread ends.
        self._again = False
        #: A renewal behind runs and has not yet ended its last look at :attr:`_again` (under the lock).
        self._running = False

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

        Call it between sessions: a session's snapshot is only good under the holding it started with.
        A renewal due while the Lease is ours for longer than ``renew_every`` yet is made on a thread of
        its own (see :meth:`_renew_behind`): the caller does not wait for its round trips."""
        return self._ensure(acquire=True)

    def renew_if_due(self) -> bool:
        """Renew when due, never acquire (inside a session, between writes). Returns whether we may write.
        As :meth:`ensure`, it does not wait for a renewal while the Lease is ours for a while yet."""
        return self._ensure(acquire=False)

    def _ensure(self, *, acquire: bool) -> bool:
        if not self.settings.enabled:
            return True
        if self._stopped:
            return False
        if self.time_left() > self.settings.renew_every:  # ours for a while yet: nobody waits to renew
            if time.monotonic() - self._last_renew >= self.settings.renew_every:
                self._renew_behind()
            return True
        return self._renew(acquire=acquire)

    # --- what the Lease hands over, written at once ------------------------------------------------------

    def _unwritten(self) -> bool:
        """Whether :attr:`handover` is not what the Lease says as our last write of it was answered (or
        that is not known)."""
        handover, written = self.handover, self._written
        return handover is not None and (written is None or handover != _handover_of(written))

    def hand_over_now(self) -> bool:
        """Write :attr:`handover` to the Lease now, unless it says it already (a renewal, not waiting for
        one to be due; the caller waits for it): what the writer owes is on the Lease before the writes
        it owes for are sent (an eviction's event, should this replica stop or lose the Lease before it
        tells it). Returns whether the Lease says it (False: not held, or the write failed: the next
        renewal writes it)."""
        if not self.settings.enabled:
            return True
        if self._stopped or not self.is_leader:
            return False
        if not self._unwritten():
            return True
        self._renew(acquire=False, force=True)
        return self.is_leader and not self._unwritten()

    def hand_over_soon(self) -> None:
        """Write :attr:`handover` to the Lease on the renewal's own thread, now (not at the next renewal
        due, up to ``renew_every`` later): a renewal behind already running writes it once more when it
        is done. No I/O here; any thread (the writer's, under its lock)."""
        if not self.settings.enabled or self._stopped or self._expires == 0:
            return
        with self._behind_lock:
            self._again = True
            if self._running:
                return
            self._running = True
            self._behind = threading.Thread(
                target=self._renew_later, name="volsched-lease-renew", daemon=True
            )
            self._behind.start()

    def _renew_behind(self) -> None:
        """Renew on a thread of its own, one at a time. Whoever asked goes on writing meanwhile under the
        renewal before (every write checks :meth:`time_left` itself); a renewal that finds the Lease
        another's fences every write from then on, one that fails leaves the deadline where it was, and
        once the Lease is ours for less than ``renew_every``, callers renew themselves and wait.

        A session used to start with the renewal's read and write of the Lease every ``renew_every``,
        and the bind workers waited on the lock meanwhile: a wait, at every renewal, that the pods
        arriving then waited through."""
        with self._behind_lock:
            if self._behind is not None and self._behind.is_alive():
                return
            if time.monotonic() - self._last_try < self.settings.retry_every:
                return  # the last try failed just now: not one per write
            self._running = True
            self._behind = threading.Thread(
                target=self._renew_later, name="volsched-lease-renew", daemon=True
            )
            self._behind.start()

    def _renew_later(self) -> None:
        """:meth:`_renew_behind`'s thread: once :attr:`wait_quiet` returned (at most :data:`QUIET_WAIT`
        seconds, and never past half the time the Lease is ours beyond ``renew_every``), the renewal. Its
        direct connection is parked as the thread ends, for the next renewal's thread."""
        wait = self.wait_quiet
        ended = False
        try:
            if wait is not None:
                wait(max(0.0, min(QUIET_WAIT, (self.time_left() - self.settings.renew_every) / 2)))
            self._renew(acquire=False)
            while True:  # what the writer asked to be written meanwhile (:meth:`hand_over_soon`)
                with self._behind_lock:
                    again, self._again = self._again, False
                    if not (again and self._unwritten()):
                        self._running, ended = False, True  # (the next ask starts a thread)
                        break
                self._renew(acquire=False, force=True)
        finally:
            if not ended:
                with self._behind_lock:
                    self._running = False
            self.rest.park()

    def _renew(self, *, acquire: bool, force: bool = False) -> bool:
        """Acquire or renew (``force``: also while the last renewal is recent, to write :attr:`handover`)."""
        if self._stopped:
            return False
        with self._lock:
            if self._stopped:  # released meanwhile
                return False
            now = time.monotonic()
            held = self.is_leader
            if (
                held
                and now - self._last_renew < self.settings.renew_every
                and not (force and self._unwritten())
            ):
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
                elif isinstance(exc, ApiException) and exc.status in (404, 409, 429):
                    # Lost a race for the Lease, or the apiserver's flow control did not take the call
                    # (429: not executed): the next try reads it again.
                    self.health.ok()
                else:
                    log.warning(
                        "lease %s/%s: %s", self.settings.namespace, self.settings.name, error_summary(exc)
                    )
            return self.is_leader

    def _spec(self, acquire_time: float, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.settings.duration)),
            "acquireTime": rfc3339(acquire_time, micro=True),
            "renewTime": rfc3339(time.time(), micro=True),
            "leaseTransitions": transitions,
        }

    def _read(self, timeout: float) -> dict[str, Any]:
        s = self.settings
        lease: dict[str, Any] = loads(
            self.rest.request("GET", lease_path(s.namespace, s.name), timeout=timeout)
        )
        return lease

    def _replace(self, lease: dict[str, Any], timeout: float) -> None:
        """A PUT of the Lease as read (its resourceVersion: it fails with 409 when another wrote since)."""
        s = self.settings
        self._written = None  # unknown until answered
        answer = self.rest.request("PUT", lease_path(s.namespace, s.name), self._say(lease), timeout=timeout)
        self._keep(answer)

    def _say(self, lease: dict[str, Any]) -> dict[str, Any]:
        """``lease`` saying :attr:`handover` under :data:`HANDOVER` (as it is when that is None)."""
        handover = self.handover
        if handover is None or handover == _handover_of(lease):
            return lease
        meta = dict(lease.get("metadata") or {})
        notes = {k: v for k, v in (meta.get("annotations") or {}).items() if k != HANDOVER}
        if handover:
            notes[HANDOVER] = handover
        meta["annotations"] = notes
        return {**lease, "metadata": meta}

    def _keep(self, answer: bytes) -> None:
        """Keep the Lease as a write of ours was answered, for the next renewal (:attr:`_written`)."""
        try:
            lease = loads(answer)
        except ValueError:
            return
        if (
            isinstance(lease, dict)
            and isinstance(lease.get("metadata"), dict)
            and lease["metadata"].get("resourceVersion")
        ):
            self._written = lease

    def _renew_as_written(self, written: dict[str, Any]) -> bool:
        """A renewal while the Lease is ours: the Lease as our last write was answered, written again with
        a new renewTime, without reading it first (as client-go's leader election renews). Its
        resourceVersion is the one that write made: should anyone have written the Lease since, the PUT
        fails with 409 and the Lease is read as before (returns False); a renewal is one request instead
        of two. Any other failure is raised (the next renewal reads the Lease first)."""
        s = self.settings
        spec = written.get("spec")
        if not isinstance(spec, dict) or spec.get("holderIdentity") != self.identity:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        lease = {**written, "spec": self._spec(_ts(spec.get("acquireTime")) or time.time(), transitions)}
        sent = time.monotonic()
        try:
            self._replace(lease, self.call_timeout(s.duration / 2))
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        self._won(sent)
        return True

    def _won(self, sent: float, *, how: str = "") -> None:
        if self._stopped:
            return
        self._expires = sent + self.settings.duration
        self._last_renew = sent
        if how:
            self.acquired_at, self.acquired_how = sent, how

    def _try_acquire(self, *, acquire: bool = True) -> None:
        s = self.settings
        written, self._written = self._written, None
        if written is not None and self.is_leader and not self._stopped and self._renew_as_written(written):
            return
        try:
            lease = self._read(s.duration / 2)
        except ApiException as exc:
            if exc.status != 404 or not acquire:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": s.name, "namespace": s.namespace},
                "spec": self._spec(time.time(), 0),
            }
            if self._stopped:  # shut down while reading: nothing more is written
                return
            sent = time.monotonic()
            body = self._say(body)  # (what we owe from a holding before, were the Lease deleted since)
            self._keep(self.rest.request("POST", lease_path(s.namespace), body, timeout=s.duration / 2))
            log.info("lease %s/%s: acquired (created) by %s", s.namespace, s.name, self.identity)
            self._won(sent, how="created")
            return
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        duration = spec.get("leaseDurationSeconds") or s.duration
        transitions = int(spec.get("leaseTransitions") or 0)
        if self._stopped:  # shut down while reading (a renewal behind, say): nothing more is written
            return
        if holder == self.identity:
            lease["spec"] = self._spec(_ts(spec.get("acquireTime")) or time.time(), transitions)
            sent = time.monotonic()
            held = self._expires > 0
            timeout = self.call_timeout(s.duration / 2) if self.is_leader else s.duration / 2
            if not held:
                self._inherit(lease)
            self._replace(lease, timeout)
            # Not held before (e.g. our acquiring write timed out but went through): a new acquisition.
            self._won(sent, how="" if held else "reclaimed")
            return
        if not acquire or (holder and time.time() < _ts(spec.get("renewTime")) + duration):
            self._expires = 0.0
            return
        lease["spec"] = self._spec(time.time(), transitions + 1)
        sent = time.monotonic()
        self._inherit(lease)
        self._replace(lease, s.duration / 2)
        log.info(
            "lease %s/%s: acquired by %s (%s)",
            s.namespace, s.name, self.identity, f"expired, was {holder!r}" if holder else "it was released",
        )  # fmt: skip
        self._won(sent, how="expired" if holder else "released")

    def _inherit(self, lease: dict[str, Any]) -> None:
        """Becoming the holder of ``lease`` (as read): what it says under :data:`HANDOVER` is ours to
        take over (:attr:`inherited`), and written on as it is until taken (should this acquiring write
        fail, the next one reads it again)."""
        self.inherited = _handover_of(lease)
        self.handover = None

    def release(self, *, within: float = RELEASE_WITHIN) -> None:
        """Stop writing and give the Lease up so a successor can take it at once (clean shutdown), within
        ``within`` seconds; what cannot be done in time is left undone (the Lease then expires on its own).

        Call it only once the writes in flight have ended: the successor may write as soon as this returns.
        A renewal in flight (one made behind, say, whose read may hang for half the lease duration) sends
        nothing from now on; it is waited for up to half of ``within``, so that a write it sent already
        comes first. Should its write land between the release's read and write, the release's write
        fails on ``resourceVersion`` and the Lease is read and released once more."""
        self.stop_writing()
        if not self.settings.enabled or self._expires == 0:
            return  # never held, or known lost
        s = self.settings
        # Never past the Lease's own expiry: by then another may hold it (the write would fail on
        # resourceVersion anyway).
        end = min(time.monotonic() + within, self._expires)
        locked = self._lock.acquire(timeout=within / 2)
        try:
            for attempt in (0, 1):
                left = end - time.monotonic()
                if left <= 0:
                    log.warning(
                        "lease %s/%s: not released in time (a renewal in flight, or a slow apiserver); "
                        "it expires on its own", s.namespace, s.name,
                    )  # fmt: skip
                    break
                try:
                    lease = self._read(left)
                    spec = lease.get("spec")
                    if isinstance(spec, dict) and spec.get("holderIdentity") == self.identity:
                        for key in ("holderIdentity", "renewTime", "acquireTime"):
                            spec.pop(key, None)
                        self._replace(lease, max(0.001, end - time.monotonic()))
                        log.info("lease %s/%s: released by %s", s.namespace, s.name, self.identity)
                except Exception as exc:
                    if isinstance(exc, ApiException) and exc.status == 409 and attempt == 0:
                        continue  # a renewal's write landed after our read: read it again
                    log.warning(
                        "lease %s/%s: release failed (it expires on its own): %s",
                        s.namespace, s.name, error_summary(exc),
                    )  # fmt: skip
                break
        finally:
            self._expires = 0.0
            if locked:
                self._lock.release()
