"""Carry a SessionResult out against the API: binds, evictions, status, conditions, nominated nodes and
events.

Calls run on bounded threads (``bind_workers`` binds and ``workers`` other requests in flight), so a
session with thousands of binds never serialises on round trips. How fast they go is the apiserver's to say, as API Priority and
Fairness intends: it gives each priority level a number of seats (concurrent requests), queues what is
over, and answers 429 with ``Retry-After`` when its queues are full; such a write waits and is sent again
(the fence checked again first). An optional client-side token bucket (``qps``) is off by default.
Requests are lean JSON on kept-alive connections (:mod:`volsched.kube.rest`), not the client's models.
Every failure is data in the returned outcomes (``volsched.cycle.BindOutcome``/``EvictOutcome``: a pod
that is gone, one already bound, a PDB that blocks an eviction); nothing here raises for an API error.
Only pods whose schedulerName is ours are touched.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import quote, unquote

from volsched.cache.volcano import VOLCANO_GROUP
from volsched.cache.workload import WORKLOAD_GROUP
from volsched.cycle import (
    BLOCKED,
    BOUND,
    CONFLICT,
    EVICTED,
    FAILED,
    FENCED,
    GONE,
    SKIPPED,
    UNKNOWN,
    BindOutcome,
    EvictOutcome,
)
from volsched.framework.decisions import Bind, Event, Evict, PodGroupStatus, SessionResult
from volsched.framework.messages import DELETED, eviction_event_reason, render_eviction_told
from volsched.kube import status as render
from volsched.kube.errors import ApiException
from volsched.kube.health import ApiHealth, is_unreachable
from volsched.kube.kubeconfig import AnyApi
from volsched.kube.ratelimit import EventFilter, TokenBucket, retry_after
from volsched.kube.rest import (
    Detached,
    LeanRest,
    Pending,
    ResponseLost,
    custom_collection,
    custom_path,
    event_path,
    pod_path,
)
from volsched.model.admitted import BOUND_UNDER, sign
from volsched.model.devices import ClaimAllocation, allocation_status
from volsched.model.raw import Raw, meta_of, uid_of
from volsched.model.vocabulary import API_GROUP, DEFAULT_SCHEDULER_NAMES, MISDIRECTED, QUEUE_FINALIZER
from volsched.records import dataclass
from volsched.redaction import error_summary, redact

log = logging.getLogger("volsched.kube")

VERSION = "v1beta1"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
#: A JSON patch replaces the whole status: a merge patch would keep map keys the new status no longer
#: has (a queue whose guarantee was removed kept showing its old ``deserved``).
JSON_PATCH = "application/json-patch+json"
#: Kubernetes' own kinds' conditions merge by type (another writer's conditions stay).
STRATEGIC_PATCH = "application/strategic-merge-patch+json"

T = TypeVar("T")

#: What a user acts on in a Queue's status: a change to any of these is written at once (the rest,
#: its figures, may be held back: see ``KubeWriter.queue_status_every``).
_QUEUE_AT_ONCE = ("state", "parent", "weight", "conditions")

#: The reasons of events every session offers again while their object waits (a pending pod's, a
#: PodGroup's below minMember): when only their numbers move, they settle (``EventFilter.admit``).
WAITING_REASONS = frozenset({"FailedScheduling", "Unschedulable"})

#: The reasons of a pod's events that say something of it only while it is pending: why it waits, the
#: room an eviction frees held for it (the ``reservation`` plugin's claim, ``Nominated``). Once the pod is
#: bound (its status writes went behind binds), they are not written.
WHILE_PENDING = frozenset({"FailedScheduling", "Nominated"})


@dataclass
class WriterSettings:
    """How the writer sends: bind workers, other workers, rate limits, retries and timeouts."""

    #: Binds in flight at once (the port's bind workers, each on its own kept-alive connection, started
    #: only as binds outnumber idle ones). On the local apiserver the bare Go binder bound more pods a
    #: second with 128 in flight than with 32 (docs/benchmarks/2026-11-29.md); a service account's
    #: requests land in API Priority and Fairness' ``workload-low`` level, 245 of the 600 seats of a
    #: default apiserver (more when others idle), so 128 fit in its seats; each worker costs a thread and
    #: a TLS connection (their memory: docs/operating.md).
    bind_workers: int = 128
    #: Bind workers started as soon as binds outnumber idle ones; past these, more (up to
    #: ``bind_workers``) only while more than ``bind_backlog`` binds wait: about a second of binds
    #: through 32 workers on the apiservers measured. A burst of a few hundred binds went out sooner
    #: through 32 than through 128 (even with the 128 connections opened ahead), a backlog of a
    #: thousand or more sooner through 128 (docs/operating.md).
    bind_workers_first: int = 32
    bind_backlog: int = 600
    #: The writer's other requests in flight at once (status, conditions, events, evictions).
    workers: int = 32
    #: A client-side limit on requests per second (0: none, the apiserver's flow control decides).
    qps: float = 0.0
    burst: int = 0
    #: How many times one write is sent again after a 429 with Retry-After (client-go: 10).
    throttle_retries: int = 10
    #: Pods whose spec.schedulerName is one of these are ours to bind, evict and mark.
    scheduler_names: frozenset[str] = DEFAULT_SCHEDULER_NAMES
    request_timeout: float = 10.0
    #: Seconds after an eviction (or a delete past a budget) whose outcome is unknown (its answer lost, or
    #: a delete answered 500 or 504: the apiserver may still be acting on it) before the pod, read again,
    #: is told it was not evicted when it is the same pod, still marked and not being deleted: by then no
    #: request it took acts any more (its ``--request-timeout``, 60 s by default, past this writer's own
    #: ``request_timeout``). A late delete writes no condition of its own: told sooner, a pod could be
    #: left terminating and told it was not evicted.
    unknown_settles_after: float = 70.0
    #: Events per object: this many at once, then one per ``event_every`` seconds (never a repeat).
    event_burst: int = 5
    event_every: float = 10.0
    #: Seconds a commit's claims of a WaitForFirstConsumer class may take to be bound (by the
    #: PersistentVolume controller and, for a volume to provision, its provisioner) before its pods are
    #: bound; past it, the binding is undone and the pods are placed again (kube-scheduler's
    #: ``bindTimeoutSeconds``, 600 by default).
    volume_bind_timeout: float = 600.0

    def pool_size(self) -> int:
        """Connections the client's urllib3 pool needs: one for each bind worker and writer thread (their
        requests go through it when the kubeconfig names a proxy), and a few for the Lease, the ConfigMap
        and the reads between sessions."""
        return max(1, self.bind_workers) + max(1, self.workers) + 4


class Fence(Protocol):
    """What the writer needs of the leader Lease (:class:`volsched.kube.lease.LeaderLease`)."""

    def renew_if_due(self) -> bool: ...
    def time_left(self) -> float: ...
    def call_timeout(self, wanted: float) -> float: ...


@runtime_checkable
class HandsOver(Protocol):
    """A fence that carries what its holder owes to the next holder (the leader Lease: its ``handover``
    is written with each write of it, ``inherited`` is what it said when this replica took it)."""

    handover: str | None
    inherited: str


#: Why an eviction was not sent when the Lease could not be written to say the look it owes.
NOT_OWED = "not sent: the scheduler Lease could not be written to say what the evictions owe (it may be lost)"


class Fenced(Exception):
    """A write that was not sent because this replica may have lost the Lease."""


@dataclass(frozen=True, slots=True)
class EventTarget:
    """The object an event is about."""

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str = ""

    @property
    def key(self) -> str:
        """What the event filter remembers it by: its UID, else its reference."""
        return self.uid or f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


def event_name(target: EventTarget, reason: str) -> str:
    """One Event object per (object, reason), updated in place: ``<name>.volsched-<reason>-<uid>``."""
    tag = "".join(c for c in reason.lower() if c.isalnum())[:40] or "event"
    suffix = "".join(c for c in (target.uid or target.kind.lower()) if c.isalnum())[:12]
    return f"{target.name[:180]}.volsched-{tag}-{suffix}".lower()


def claim_path(namespace: str, name: str) -> str:
    """A ResourceClaim's path (``resource.k8s.io/v1``)."""
    return custom_path("resource.k8s.io", "v1", "resourceclaims", name, namespace=namespace)


#: A Volcano Queue's status keys its owner writes, never the scheduler: its state is where Volcano keeps
#: whether it is open (its controller sets it from ``vcctl queue operate``; an admin may), which volsched
#: reads. Written from a session's view, a Queue closed since was opened again.
_VOLCANO_QUEUE_OWN = ("state",)
#: The Queue status keys :func:`~volsched.kube.status.queue_status` writes only sometimes: removed from a
#: merged status when not rendered.
_QUEUE_MAY_GO = ("deserved", "deservedSummary", "realCapability", "share")


def _initially_scheduled(status: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The condition of a Kubernetes PodGroup's status as written last that says it was scheduled
    (terminal), or None."""
    for c in (status or {}).get("conditions") or ():
        if c.get("type") == render.INITIALLY_SCHEDULED and c.get("status") == "True":
            return c  # type: ignore[no-any-return]
    return None


def _nominated_node(pod: Raw) -> str:
    """The node a pod's status says it is nominated to ("" for none)."""
    return str((pod.get("status") or {}).get("nominatedNodeName") or "")


#: Why a disruption target found at the start of a holding of the Lease was not evicted.
STALE_TARGET = "the scheduler that decided the eviction stopped, or its eviction failed, before it happened"
#: Why a disruption target whose eviction's outcome was unknown was not evicted (see
#: ``WriterSettings.unknown_settles_after``): ``{}`` is the seconds waited.
UNSETTLED_TARGET = "its answer was lost, and the pod was still there and not being deleted {:.0f}s later"
#: The condition :meth:`KubeWriter.withdraw_stale` looks for.
_TARGET = "DisruptionTarget"
#: A delete's answers that say the apiserver may still act on it: as an answer lost, the pod read back says.
_MAY_STILL_ACT = frozenset({500, 504})
#: How many times a pod whose unknown eviction settled is looked at again when reading it or setting it
#: back failed (each ``_SET_BACK_RETRY`` seconds apart); past that, the next holding of the Lease does.
_SET_BACK_TRIES = 5
_SET_BACK_RETRY = 10.0
#: How many evictions whose event waits for their look the Lease hands over at most (the first due), in
#: how many bytes of JSON at most (a Lease's annotations hold 256 KiB in all: past that every write of it
#: is refused, and the Lease lost), each note's message and why cut to so many characters (a victim's
#: message lists every disruption budget it goes past, which a tenant can multiply).
_HANDOVER_MOST = 64
_HANDOVER_BYTES = 32 * 1024
_HANDOVER_TEXT = 2000


@dataclass(slots=True)
class _Unsettled:
    """A pod marked as a disruption target whose eviction's outcome is not known yet: looked at again
    (:meth:`KubeWriter.withdraw_unsettled`) at ``due`` (the writer's clock)."""

    uid: str
    #: What the pod was told (its ``DisruptionTarget`` message) and why it is set back.
    message: str
    why: str
    due: float
    tries: int = 0
    #: Set back only once marked that many seconds ago (a mark of unknown origin: see ``withdraw_stale``).
    young: float = 0.0
    #: The ``Preempted``/``Evicted`` event owed should the pod be found evicted (its eviction's answer was
    #: lost): (the pod, the reason, the message, when it was decided).
    told: tuple[EventTarget, str, str, str] | None = None


def _cut(text: str) -> str:
    """``text`` at most ``_HANDOVER_TEXT`` characters long (cut, said with an ellipsis)."""
    return text if len(text) <= _HANDOVER_TEXT else f"{text[: _HANDOVER_TEXT - 1]}\u2026"


def _handed_over(
    said: str,
) -> list[tuple[str, str, float, float, tuple[EventTarget, str, str, str], str]]:
    """What the Lease handed over (:meth:`KubeWriter._retally`) -> (pod key, uid, due as wall-clock time,
    young, the event owed, why), each note whole or not at all; a warning for what cannot be read."""
    if not said:
        return []
    try:
        notes = json.loads(said)
    except ValueError:
        notes = None
    if not isinstance(notes, list):
        log.warning("the Lease's handover is not a list of evictions: %.200s; left", said)
        return []
    out = []
    for n in notes:
        try:
            key, uid, reason, message, at, why = (
                str(n[f]) for f in ("pod", "uid", "reason", "message", "at", "why")
            )
            due, young = float(n["due"]), float(n.get("young") or 0.0)
        except (TypeError, KeyError, ValueError):
            log.warning("an eviction the Lease handed over cannot be read: %.200s; left", n)
            continue
        ns, name = _split(key)
        if not (ns and name and math.isfinite(due) and math.isfinite(young)):
            log.warning("an eviction the Lease handed over cannot be read: %.200s; left", n)
            continue
        told = (EventTarget("Pod", "v1", ns, name, uid), reason, message, at)
        out.append((key, uid, due, young, told, why))
    return out


def _made_again(exc: ApiException) -> bool:
    """Whether the apiserver refused a write that names the object's uid because the object by that
    name is another (deleted and made again): a uid is immutable (422 on ``metadata.uid``), or a
    precondition failed (409)."""
    if exc.status == 409:
        return True
    if exc.status != 422:
        return False
    try:
        causes = (json.loads(exc.body or "{}").get("details") or {}).get("causes") or []
    except (ValueError, TypeError, AttributeError):
        return False
    return any(isinstance(c, dict) and c.get("field") == "metadata.uid" for c in causes)


def _for_uid(body: dict[str, Any], uid: str) -> dict[str, Any]:
    """A pod status patch that only the pod of ``uid`` takes (none: any pod by its name)."""
    return {**body, "metadata": {"uid": uid}} if uid else body


def _split(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return ns, name


def _reason(exc: ApiException) -> str:
    try:
        body = json.loads(exc.body or "{}")
        return str(body.get("message") or exc.reason)
    except (ValueError, TypeError, AttributeError):
        return str(exc.reason)


def _event_update(body: Mapping[str, Any]) -> dict[str, Any]:
    """What updating an Event in place writes: its message, reason, type, last time and count."""
    keys = ("message", "reason", "type", "lastTimestamp", "count")
    return {k: body[k] for k in keys}


def _gone_when_evicted(pod: Raw | None) -> bool:
    """Whether the apiserver deletes ``pod`` at once when it is evicted (a zero grace period, as its spec
    says, and no finalizer to wait for), so that nothing is left to show a condition."""
    if pod is None:
        return False
    grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return grace == 0 and not meta_of(pod).get("finalizers")


def _bound_as_asked(pod: Raw | None, bind: Bind) -> bool:
    """The pod (read after a 409) is the one we bound (its UID, when the bind names one) on our node."""
    if pod is None:
        return False
    uid = meta_of(pod).get("uid")
    return (pod.get("spec") or {}).get("nodeName") == bind.node and (not bind.uid or uid == bind.uid)


class KubeWriter:
    def __init__(
        self,
        api: AnyApi,
        settings: WriterSettings | None = None,
        *,
        bucket: TokenBucket | None = None,
        fence: Fence | None = None,
        health: ApiHealth | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings or WriterSettings()
        self.fence = fence
        self.health = health or ApiHealth()
        self.api = api
        self.rest = LeanRest(api)
        s = self.settings
        if bucket is None and s.qps > 0:
            bucket = TokenBucket(s.qps, s.burst or max(1, int(2 * s.qps)))
        self.bucket = bucket
        self._sleep = sleep
        #: Writes sent again after the apiserver said 429 with Retry-After (for metrics and tests).
        self.throttled = 0
        self.pool = ThreadPoolExecutor(
            max_workers=max(1, self.settings.workers), thread_name_prefix="volsched-kube"
        )
        #: ``bind_all``'s binds (the synchronous port's): ``bind_workers`` in flight, as the background
        #: port's workers; its threads start only as binds are handed to it.
        self.bind_pool = ThreadPoolExecutor(
            max_workers=max(1, self.settings.bind_workers), thread_name_prefix="volsched-kube-bind"
        )
        self._lock = threading.Lock()
        #: The key a bind's record is signed with (``admitted.sign``; the operator's, read before its first
        #: bind), or None: written unsigned.
        self.record_key: bytes | None = None
        #: What we last wrote, rendered without times: skip writes that would change nothing.
        self._podgroups: dict[str, dict[str, Any]] = {}
        self._podgroups_full: dict[str, dict[str, Any]] = {}
        #: The session status each PodGroup's ``_podgroups`` entry was rendered from, and its API group:
        #: a later session's result that holds the very same (read-only) status object, as the settled
        #: run's PodGroups do session after session, has nothing new to render or compare. Set only
        #: where ``_podgroups`` says that status is written, dropped with it.
        self._podgroups_from: dict[str, tuple[PodGroupStatus, str]] = {}
        self._queues: dict[str, dict[str, Any]] = {}
        self._queues_full: dict[str, dict[str, Any]] = {}
        #: A Queue's status writes that change only its figures (allocated, the PodGroups' counts, the
        #: deserved share) go out at most once per this many seconds per Queue (0: each at once): every
        #: arriving pod changes its queue's ``allocated``. What a user acts on (its state, parent, weight,
        #: conditions) is written at once. The background port sets it, and writes what is held when its
        #: time is up (:meth:`held_due`, :meth:`write_held`).
        self.queue_status_every = 0.0
        self.clock = clock
        #: When each Queue's status was last written (``_clock``), and the figures held back since: name
        #: -> (rendered, API group), the latest only.
        self._queue_written_at: dict[str, float] = {}
        self._queues_held: dict[str, tuple[dict[str, Any], str]] = {}
        #: The status writes in flight, by (kind, key), each with a token of its own: :meth:`forget` (the
        #: object deleted or made again under its name meanwhile) drops it, and a write whose token is
        #: gone when it returns is not recorded as written: it may have reached the old object only, and
        #: the new one's status, were it the same, would be skipped as unchanged.
        self._in_flight: dict[tuple[str, str], object] = {}
        #: The holding of the Lease (:meth:`holding`) the statuses and conditions above were written
        #: under: another replica may have written over them while another held it.
        self._written_under: float | None = None
        #: ``<plural>.<group>`` of the kinds whose CRD has no status subresource (Volcano's PodGroup, as
        #: Volcano ships it; told from API discovery by :meth:`status_subresource`): their status is
        #: written straight into the object, not asked of a /status the apiserver does not serve first.
        self._status_as_field: frozenset[str] = frozenset()
        self._queue_uids: dict[str, str] = {}
        self._conditions: dict[str, str] = {}  # pod uid -> message
        #: When each was written (the event filter's clock): a message that only moves the numbers of the
        #: last waits as an event's does (``EventFilter.settling``).
        self._condition_at: dict[str, float] = {}
        #: The nominated nodes the pods' ``status.nominatedNodeName`` says, as far as this writer knows:
        #: pod key -> (its uid, the node), what it wrote, or found on our pods when it began writing
        #: under this holding of the Lease (``_nominations_read``: left by an earlier leader, or by this
        #: process before it restarted, whose claims are gone with it).
        self._nominated: dict[str, tuple[str, str]] = {}
        #: Pods marked as disruption targets whose eviction's outcome is not known yet, by key
        #: (:meth:`withdraw_unsettled`), and the first one's ``due`` (inf: none).
        self._unsettled: dict[str, _Unsettled] = {}
        self._unsettled_first = math.inf
        #: Batches of evictions (or of their events) under way, and whether what the Lease hands over
        #: changed meanwhile: it is tallied once, as the last ends (see :meth:`_batch`).
        self._batching = 0
        self._tally_owed = False
        self._nominations_read = False
        #: Status writes (a status, a pod's condition or nominated node) the fence refused unsent, so
        #: far: each is owed, and a later session writes it once the Lease is held again (under the same
        #: holding nothing else would: a quiet cluster runs no session).
        self.fenced = 0
        self.events = EventFilter(burst=self.settings.event_burst, every=self.settings.event_every)
        #: Events of pods evicted and gone at once (target, reason, message, time), for the next status
        #: writes to send (see :meth:`evict`).
        #: With each, its pod's key and the look it owes on the Lease until told (:meth:`_owe_first`).
        self._told_after: list[tuple[tuple[EventTarget, str, str, str], str, _Unsettled | None]] = []

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.bind_pool.shutdown(wait=True, cancel_futures=True)
        self.rest.close()

    def forget(self, kind: str, key: str) -> None:
        """Drop what we remember writing to an object (it was recreated or deleted)."""
        with self._lock:
            if kind == "PodGroup":
                self._podgroups.pop(key, None)
                self._podgroups_full.pop(key, None)
                self._podgroups_from.pop(key, None)
                self._in_flight.pop((kind, key), None)
            elif kind == "Queue":
                self._queues.pop(key, None)
                self._queues_full.pop(key, None)
                self._queue_written_at.pop(key, None)
                self._queues_held.pop(key, None)
                self._in_flight.pop((kind, key), None)
            elif kind == "Pod":
                self._conditions.pop(key, None)
                self._condition_at.pop(key, None)
                for pod, (uid, _) in list(self._nominated.items()):
                    if uid == key:
                        del self._nominated[pod]
        self.events.forget(key)

    def connect_ahead(self) -> None:
        """Open the calling thread's connection to the apiserver now, with a read of ``/version`` (its
        answer read to the end), so that the first write sent from this thread does not wait for a TLS
        handshake: the session thread's, which sends an arriving pod's bind itself. A failure is only
        logged at DEBUG (that write opens a connection then)."""
        try:
            self.rest.request("GET", "/version", timeout=self.settings.request_timeout)
        except Exception as exc:  # an error status is an answer: the connection stays open all the same
            log.debug("connecting ahead: %s", error_summary(exc))

    # --- plumbing -----------------------------------------------------------------------------------------

    def holding(self) -> float | None:
        """Which holding of the Lease writes are made under now (its acquisition time), if fenced."""
        return getattr(self.fence, "acquired_at", None) if self.fence is not None else None

    def _send(
        self,
        method: str,
        path: str,
        body: Any,
        *,
        content_type: str = "application/json",
        holding: float | None = None,
        patience: float | None = None,
        pending: Pending | None = None,
    ) -> bytes:
        """One write: sent only while the fence is open, with a timeout that ends before the Lease can
        (a GET is not fenced).
        With ``holding`` (see :meth:`holding`), only under that holding of the Lease: a write decided
        before the Lease was lost is never sent after it was taken again. A 429 with Retry-After (the
        apiserver's flow control did not take it) is waited out and sent again, up to
        ``throttle_retries`` times; the fence is checked before every send. With ``patience``, the
        first send's answer not begun within it raises :class:`Detached`; with ``pending`` (such a
        send), its answer is read here instead of a first send, and the rest goes on as for any."""
        for attempt in range(self.settings.throttle_retries + 1):
            try:
                if attempt == 0 and pending is not None:  # sent already: its answer is read here
                    return self._watched(pending.answer)
                if self.bucket is not None:
                    self.bucket.take()
                timeout = self.settings.request_timeout
                if self.fence is not None and method != "GET":
                    if self.fence.time_left() <= 0:
                        raise Fenced("not sent: this replica may have lost the scheduler Lease")
                    if holding is not None and self.holding() != holding:
                        raise Fenced("not sent: decided under an earlier holding of the scheduler Lease")
                    timeout = self.fence.call_timeout(timeout)
                send = partial(
                    self.rest.request, method, path, body, content_type=content_type, timeout=timeout
                )
                first = patience if attempt == 0 else None
                return self._watched(send if first is None else partial(send, patience=first))
            except ApiException as exc:
                wait = retry_after(exc.status, exc.headers, exc.body)
                if wait is None or attempt == self.settings.throttle_retries:
                    raise
                with self._lock:
                    self.throttled += 1
                self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _watched(self, call: Callable[[], bytes]) -> bytes:
        """``call`` (a write sent, or the answer of one sent already read), telling ``health`` whether
        the apiserver answered (an error status is an answer; a write left to another thread,
        :class:`Detached`, is told when its answer is read)."""
        try:
            out = call()
        except Detached:
            raise
        except Exception as exc:
            if is_unreachable(exc):
                self.health.failed("write", exc)
            else:
                self.health.ok()
            raise
        self.health.ok()
        return out

    def _get(self, path: str) -> dict[str, Any]:
        """A read, as a write is sent (a 429 waited out and asked again, the apiserver's health told),
        but never fenced: it changes nothing."""
        data: dict[str, Any] = json.loads(self._send("GET", path, None))
        return data

    def _read_listed(self, path: str) -> dict[str, Any] | None:
        """The object at ``path`` read through its collection's list, a field selector on its name: the
        operator may list and watch what it reads (its ClusterRole), not get it. None when there is none."""
        collection, _, name = path.rpartition("/")
        selector = quote(f"metadata.name={unquote(name)}", safe="")
        items = self._get(f"{collection}?fieldSelector={selector}").get("items") or []
        return dict(items[0]) if items else None

    def _ours(self, pod: Raw | None) -> bool:
        if pod is None:
            return False
        return (
            (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        ) in self.settings.scheduler_names

    # --- what other writers of the API (the volume binder) use -------------------------------------------

    def read(self, path: str) -> dict[str, Any]:
        """The object at ``path`` (a read is never fenced; a 429 is waited out). Raises what the API
        raised (:class:`ApiException`, a 404 for an object gone)."""
        return self._get(path)

    def replace(self, path: str, body: Any, *, holding: float | None = None) -> dict[str, Any]:
        """PUT ``body`` at ``path`` (fenced as every write, under ``holding`` of the Lease when given;
        :class:`Fenced` when not sent); the object as written (its new resourceVersion)."""
        written: dict[str, Any] = json.loads(self._send("PUT", path, body, holding=holding))
        return written

    def schedules(self, pod: Raw | None) -> bool:
        """Whether ``pod`` is volsched's to schedule (its schedulerName is one of ours)."""
        return self._ours(pod)

    def tell_unschedulable(self, key: str, uid: str, message: str, *, reason: str) -> list[str]:
        """Say ``message`` on the pod ``key`` of ``uid`` (and on no pod made again under its name): its
        PodScheduled=False condition and an event of ``reason``. Returns what could not be written."""
        now = render.now_rfc3339()
        ns, name = _split(key)
        _, _, err = self._write_condition(key, uid, message, now, only=uid)
        _, event_err, _ = self.post_object_event(
            EventTarget("Pod", "v1", ns, name, uid), reason=reason, message=message, now=now
        )
        return [e for e in (err, event_err) if e]

    def _map(self, fn: Callable[[Any], T], items: Iterable[Any], *, binds: bool = False) -> list[T]:
        """Run ``fn`` over ``items`` on the pool (``binds``: on the bind pool, ``bind_workers`` at once).
        With a fence, the Lease is renewed when due between the writes (so a batch is whatever is sent
        between two renewals, however slow the calls are) and a write the fence refuses comes back as
        that call's FENCED outcome without being sent."""
        todo = list(items)
        pool = self.bind_pool if binds else self.pool
        if self.fence is None:
            return list(pool.map(fn, todo))
        slots = threading.Semaphore(max(1, self.settings.bind_workers if binds else self.settings.workers))
        futures = []
        for item in todo:
            slots.acquire()
            self.fence.renew_if_due()
            future = pool.submit(fn, item)
            future.add_done_callback(lambda _f: slots.release())
            futures.append(future)
        return [f.result() for f in futures]

    def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod as a raw dict, or None when it is gone."""
        try:
            data = self._get(pod_path(namespace, name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        data.setdefault("kind", "Pod")
        data.setdefault("apiVersion", "v1")
        return data

    # --- binds and evictions ------------------------------------------------------------------------------

    def bind_all(self, binds: Iterable[Bind], pods: Mapping[str, Raw]) -> list[BindOutcome]:
        return self._map(lambda b: self.bind(b, pods.get(b.pod)), binds, binds=True)

    def bind(
        self, bind: Bind, pod: Raw | None, *, holding: float | None = None, patience: float | None = None
    ) -> BindOutcome:
        """Bind one pod (under ``holding`` of the Lease, when given: see :meth:`_send`). A pod that claims
        devices has its claims' allocation and reservation written first, as kube-scheduler does (the
        kubelet prepares the devices of the claims it finds reserved for the pod), and undone when the
        bind fails. With ``patience`` (a pod without claims), a bind sent whose answer has not begun
        within it raises :class:`Detached`: :meth:`bind_answered` takes it from there, on any thread."""
        if not self._ours(pod):
            return BindOutcome(bind, SKIPPED, "not scheduled by volsched")
        if not bind.claims:
            return self._bind(bind, holding, patience=patience)
        written, problem = self._reserve_claims(bind, holding)
        if problem is not None:
            return BindOutcome(bind, FAILED, problem)
        outcome = self._bind(bind, holding)
        if outcome.result not in (BOUND, UNKNOWN):  # an unknown one may be bound: its claims stay
            self._unreserve_claims(bind, written, holding)
        return outcome

    def _reserve_claims(self, bind: Bind, holding: float | None) -> tuple[list[ClaimAllocation], str | None]:
        """Write each claim's allocation and the pod's reservation (a claim read, then its status
        updated at the resourceVersion read: a claim another scheduler allocated meanwhile is a
        conflict, never overwritten). The claims written, or (those undone) why not."""
        _, name = _split(bind.pod)
        written: list[ClaimAllocation] = []
        for alloc in bind.claims:
            path = claim_path(alloc.namespace, alloc.claim)
            problem = None
            try:
                claim = self._get(path)
                status = claim.get("status") or {}
                uid = meta_of(claim).get("uid")
                if alloc.uid and uid != alloc.uid:
                    problem = "was deleted and made again"
                elif not alloc.existing and status.get("allocation"):
                    problem = "was allocated meanwhile"
                elif alloc.existing and not status.get("allocation"):
                    problem = "lost its allocation meanwhile"
                else:
                    body = {
                        **claim,
                        "status": allocation_status(alloc, pod_name=name, pod_uid=bind.uid, status=status),
                    }
                    self._send("PUT", f"{path}/status", body, holding=holding)
            except ApiException as exc:
                problem = f"{exc.status} {_reason(exc)}"
            except Exception as exc:  # fenced, or the network: nothing bound
                problem = error_summary(exc)
            if problem is not None:
                self._unreserve_claims(bind, written, holding)
                return [], f"resourceclaim {alloc.key}: {problem}; not bound"
            written.append(alloc)
        return written, None

    def _unreserve_claims(self, bind: Bind, written: list[ClaimAllocation], holding: float | None) -> None:
        """Undo :meth:`_reserve_claims` for a pod that was not bound: the pod out of each claim's
        ``reservedFor``, and the allocation written for it dropped when no other pod holds the claim
        (a conflict read again and retried; what cannot be undone is logged: the claim then keeps devices
        until the resource claim controller or a user frees them)."""
        for alloc in reversed(written):
            path = claim_path(alloc.namespace, alloc.claim)
            for _attempt in range(3):
                try:
                    claim = self._get(path)
                    status = dict(claim.get("status") or {})
                    reserved = [r for r in status.pop("reservedFor", None) or [] if r.get("uid") != bind.uid]
                    if reserved:
                        status["reservedFor"] = reserved
                    elif not alloc.existing:
                        status.pop("allocation", None)
                    self._send("PUT", f"{path}/status", {**claim, "status": status}, holding=holding)
                    break
                except ApiException as exc:
                    if exc.status == 409:
                        continue
                    if exc.status != 404:
                        log.warning(
                            "could not undo resourceclaim %s for pod %s: %s", alloc.key, bind.pod, exc.status
                        )
                    break
                except Exception as exc:
                    log.warning(
                        "could not undo resourceclaim %s for pod %s: %s",
                        alloc.key,
                        bind.pod,
                        error_summary(exc),
                    )
                    break

    def bind_answered(self, bind: Bind, pending: Pending, *, holding: float | None = None) -> BindOutcome:
        """The outcome of a bind :meth:`bind` sent and left (:class:`Detached`): its answer read here,
        and what follows it as for any bind (a lost answer sent again, a conflict read back)."""
        return self._bind(bind, holding, pending=pending)

    def _bind(
        self,
        bind: Bind,
        holding: float | None,
        *,
        patience: float | None = None,
        pending: Pending | None = None,
    ) -> BindOutcome:
        ns, name = _split(bind.pod)
        meta: dict[str, str] = {"name": name, "namespace": ns}
        if bind.uid:
            meta["uid"] = bind.uid  # the apiserver refuses the bind (409) if the pod by that name is another
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": bind.node},
        }
        if bind.bound_under:  # the apiserver copies a Binding's annotations onto the pod as it binds it
            record, key = bind.bound_under, self.record_key
            if key is not None and bind.uid:  # (signed for this pod alone: the uid the bind names)
                record = sign(record, uid=bind.uid, key=key)
            body["metadata"] = {**meta, "annotations": {BOUND_UNDER: record}}
        path = pod_path(ns, name, "binding")
        resent, lost = False, ""
        try:
            try:
                self._send("POST", path, body, holding=holding, patience=patience, pending=pending)
            except ResponseLost as exc:
                # It may have bound the pod: sent once more (the fence checked again), the apiserver
                # refuses a second bind of a bound pod (409), and the pod read back then tells.
                resent = True
                lost = str(exc)
                self._send("POST", path, body, holding=holding)
            return BindOutcome(bind, BOUND)
        except Fenced as exc:
            if resent:  # the first was sent: it may have bound the pod
                return self._read_back(bind, f"{lost}; not sent again ({exc})")
            return BindOutcome(bind, FENCED, str(exc))
        except Detached:
            raise  # sent; its answer is read elsewhere (bind_answered)
        except ApiException as exc:
            detail = _reason(exc)
            if exc.status == 404:
                return BindOutcome(bind, GONE, detail)
            if resent:  # a 409 too: the first may have bound the pod, as only the pod read back tells
                return self._read_back(bind, f"{lost}; sent again: {exc.status}: {detail}")
            if exc.status == 409:
                try:
                    fresh = self.read_pod(ns, name)
                except Exception as read_exc:
                    return BindOutcome(bind, CONFLICT, f"{detail}; re-read failed: {read_exc}")
                return BindOutcome(bind, GONE if fresh is None else CONFLICT, detail, fresh)
            return BindOutcome(bind, FAILED, f"{exc.status}: {detail}")
        except Exception as exc:  # network errors: the next session tries again
            if resent:  # no answer twice (ResponseLost), or the second could not be sent
                return self._read_back(bind, f"{lost}; sent again: {error_summary(exc)}")
            return BindOutcome(bind, FAILED, str(exc))

    def _read_back(self, bind: Bind, why: str) -> BindOutcome:
        """What came of a bind that was sent but whose answer was lost (and that a second request did not
        settle), as the pod read back shows: on our node (by its UID), BOUND; gone, GONE; on another node
        or another pod by that name, CONFLICT (the cache takes the pod as read). Unbound, or unread: it
        may still be bound (a request that timed out may land after the read), so UNKNOWN: the pod stays
        assumed (its room is not freed) until an event of the pod shows it bound, or pending again once
        the assumption's time to live is over. A read is never fenced: it changes nothing."""
        ns, name = _split(bind.pod)
        try:
            fresh = self.read_pod(ns, name)
        except Exception as exc:
            return BindOutcome(bind, UNKNOWN, f"{why}; may be bound (read back failed: {error_summary(exc)})")
        if fresh is None:
            return BindOutcome(bind, GONE, f"{why}; read back: gone")
        if _bound_as_asked(fresh, bind):
            return BindOutcome(bind, BOUND, "bound by a request whose answer was lost")
        uid = meta_of(fresh).get("uid")
        if (fresh.get("spec") or {}).get("nodeName") or (bind.uid and uid != bind.uid):
            return BindOutcome(bind, CONFLICT, f"{why}; read back: bound elsewhere or another pod", fresh)
        return BindOutcome(bind, UNKNOWN, f"{why}; read back: not bound yet")

    def evict_all(self, evictions: Iterable[Evict], pods: Mapping[str, Raw]) -> list[EvictOutcome]:
        """:meth:`evict` each of ``evictions``, what each owes first on the Lease (:meth:`_owe_first`);
        none sent when the Lease could not say so (:meth:`_not_owed`)."""
        todo = list(evictions)
        notes = self._owe_first(todo, pods)
        if notes is None:
            return [self._not_owed(e, pods.get(e.pod)) for e in todo]
        with self._batch():
            return self._map(lambda e: self._evict_one(e, pods.get(e.pod), notes.get(e.pod)), todo)

    @contextmanager
    def _batch(self) -> Iterator[None]:
        """While evictions (or their events) are sent: what the Lease hands over is tallied once, as the
        last batch ends, not at each outcome (:meth:`_retally`: its order and JSON of the first notes,
        paid per eviction, was quadratic in a session's evictions)."""
        with self._lock:
            self._batching += 1
        try:
            yield
        finally:
            with self._lock:
                self._batching -= 1
                if not self._batching and self._tally_owed:
                    self._tally_owed = False
                    self._retally()

    def _owe_first(self, evictions: list[Evict], pods: Mapping[str, Raw]) -> dict[str, _Unsettled] | None:
        """Before ``evictions`` are sent, with a fence that hands over (the leader Lease): each of ours
        owes its look (:class:`_Unsettled`, its event told should the pod be found evicted, due once no
        request for it can act), and the Lease says so before any is sent (:meth:`LeaderLease.hand_over_now`,
        one write of it). The eviction's outcome settles its note (:meth:`_settled`): an event told, or
        an outcome that needs no look, drops it. Before, the events held in memory between an eviction's
        answer and their post (a pod gone at once: the session's status writes; any: the fence closing
        meanwhile) were lost with the Lease, and a look owed reached the Lease only at its next renewal.
        Returns the notes by pod key (none without such a fence), or None when the Lease could not be
        written to say them (the write failed, or the Lease is no longer ours): then none of
        ``evictions`` may be sent (a writer that cannot write its Lease may have lost it: these evictions
        are withheld, the next ones ask again; binds are fenced by the Lease's deadline as before), and the
        notes are taken back, the looks they replaced kept. Before, the
        evictions were sent all the same, their looks owed on no Lease until a renewal wrote them."""
        fence = self.fence
        hand_over_now = getattr(fence, "hand_over_now", None)
        if not isinstance(fence, HandsOver) or hand_over_now is None:
            return {}
        notes: dict[str, _Unsettled] = {}
        due = self.clock() + self.settings.unknown_settles_after
        for e in evictions:
            pod = pods.get(e.pod)
            if not self._ours(pod):
                continue
            ns, name = _split(e.pod)
            uid = e.uid or uid_of(pod or {})
            message = redact(render_eviction_told(e))
            told = (
                EventTarget("Pod", "v1", ns, name, uid),
                eviction_event_reason(e),
                message,
                render.now_rfc3339(),
            )
            notes[e.pod] = _Unsettled(uid, message, STALE_TARGET, due, told=told)
        if not notes:
            return {}
        with self._lock:  # (replacing a look of an eviction before: this one's outcome says what comes)
            replaced = {key: self._unsettled.get(key) for key in notes}
            self._unsettled.update(notes)
            self._retally(soon=False)
        if hand_over_now():
            return notes
        with self._lock:  # not sent: no look owed for them; a look of an eviction before is as it was
            for key, note in notes.items():
                if self._unsettled.get(key) is note:
                    before = replaced[key]
                    if before is None:
                        del self._unsettled[key]
                    else:
                        self._unsettled[key] = before
            self._retally()
        return None

    def _not_owed(self, eviction: Evict, pod: Raw | None) -> EvictOutcome:
        """An eviction not sent: the Lease could not say the look it owes (:meth:`_owe_first`)."""
        if not self._ours(pod):
            return EvictOutcome(eviction, SKIPPED, "not scheduled by volsched")
        return EvictOutcome(eviction, FENCED, NOT_OWED)

    def _settled(self, key: str, note: _Unsettled | None, *, told: bool) -> None:
        """Eviction ``key``'s outcome is known (``note``: what :meth:`_owe_first` noted for it): a note
        nothing replaced since (:meth:`_settle_later`) goes once its event was ``told``, or when none
        is owed; else (the event not sent: the fence closed, or an error) it is looked at at once, by
        this replica when it may write again or by the next holder of the Lease."""
        if note is None:
            return
        with self._lock:
            if self._unsettled.get(key) is not note:
                return
            if told:
                del self._unsettled[key]
            else:
                note.due = min(note.due, self.clock())
            self._retally()

    def evict(self, eviction: Evict, pod: Raw | None) -> EvictOutcome:
        """One eviction (:meth:`_evict_one`), what it owes first on the Lease (:meth:`_owe_first`); not
        sent when the Lease could not say so (:meth:`_not_owed`)."""
        notes = self._owe_first([eviction], {eviction.pod: pod} if pod is not None else {})
        if notes is None:
            return self._not_owed(eviction, pod)
        note = notes.get(eviction.pod)
        with self._batch():
            return self._evict_one(eviction, pod, note)

    def _evict_one(self, eviction: Evict, pod: Raw | None, note: _Unsettled | None = None) -> EvictOutcome:
        """Tell the pod why, then evict it: the ``DisruptionTarget`` condition (as kube-scheduler does
        before preempting) naming the action, the beneficiary (one of another namespace unnamed:
        ``render_eviction_told``) and the numbers, then the Eviction API
        (which enforces PodDisruptionBudgets); a ``Preempted``/``Evicted`` event says the same once the
        pod was evicted (as kube-scheduler records its event once its delete went through). The Eviction
        API replaces the condition with its own
        (``EvictionByEvictionAPI``), so it is written once more after a successful eviction while the pod
        terminates. A pod that cannot be told is not evicted (the next session tries again). An eviction
        a budget refused leaves the pod running: its condition is set back to False saying why (what the
        disruption controller does to a stale one, minutes later). One that failed otherwise is set back
        too when the pod read back is still marked and not terminating, on the version read
        (:meth:`_withdraw_unless_evicted`: a timed-out eviction may yet go through, and then writes its own
        condition as it deletes the pod), as is a delete past a budget that was refused (a 500 or 504 may
        still act: read back, as an answer lost). One whose outcome is unknown (its answer lost, the pod
        read back still there) is looked at again once no request can act any more
        (``unknown_settles_after``; a delete that lands late writes no condition: a False sooner could
        lie), and one not sent for the fence once this replica may write again
        (:meth:`withdraw_unsettled`). No event tells of an eviction that did not happen: one whose answer
        was lost is told of only once the pod is found gone or being deleted, when it is looked at again.
        A pod
        the eviction deletes at once (a zero grace period and no finalizer) gets no condition: the
        eviction's own replaces the first before anyone could read it and the pod is gone before the
        second (only refused). It is evicted first, and its event, unless
        the eviction was refused, is written with the next status writes (after the binds handed over
        before them): the session that preempts waits for its evictions alone, one request each.

        A victim taken past its disruption budget (``eviction.deletes``: reclaim's and preempt's last
        resort) is deleted instead, as kube-scheduler's preemption deletes its victims: the Eviction API
        would refuse it. Told the same way (its condition and event name the budget gone past), deleted
        after its condition, only the pod decided for (its uid a precondition); the delete keeps the condition,
        so it is not written again. Its outcome says it was deleted (``DELETED``)."""
        if not self._ours(pod):
            return EvictOutcome(eviction, SKIPPED, "not scheduled by volsched")
        ns, name = _split(eviction.pod)
        key = eviction.pod
        if note is not None and note.told is not None:  # (the event the Lease says is owed)
            told = note.told
            target, _, message, now = told
            uid = note.uid
        else:
            uid = eviction.uid or uid_of(pod or {})
            message = redact(render_eviction_told(eviction))  # (no pod of another namespace named)
            now = render.now_rfc3339()
            target = EventTarget("Pod", "v1", ns, name, uid)
            told = (target, eviction_event_reason(eviction), message, now)
        if _gone_when_evicted(pod):  # evicted first; its event waits for the session's status writes
            outcome = (
                self._delete(eviction, ns, name) if eviction.deletes else self._evict(eviction, ns, name)
            )
            if outcome.result == EVICTED:
                with self._lock:
                    self._told_after.append((told, key, note))
                return outcome  # (its note, if any, goes once the event is told: ``_told_job``)
            if outcome.result == UNKNOWN:  # told if it is found evicted after all
                self._settle_unknown(key, uid, message, told)
            self._settled(key, note, told=True)  # (not evicted: no event owed)
            return outcome
        # Only on the pod decided for: another made since under its name refuses it (and is not evicted).
        condition = _for_uid(render.disruption_target_condition(eviction.action, message, now), uid)
        if note is None:
            with self._lock:  # this eviction's outcome says what comes of the mark from now on
                if self._unsettled.pop(key, None) is not None:
                    self._retally()
        refused = self._disruption_target(eviction, ns, name, condition)
        if refused is not None:
            if refused.result == FAILED:  # not evicted, but the condition may have been written (its
                after = self.settings.unknown_settles_after  # answer lost): the pod read later says
                why = f"not sent: {redact(refused.detail)}"
                self._settle_later(key, uid, message, why, after=after)
            self._settled(key, note, told=True)  # (not evicted: no event owed; a look above its own)
            return refused
        if eviction.deletes:
            outcome = self._delete(eviction, ns, name)
        else:
            outcome = self._evict(eviction, ns, name)
            if outcome.result == EVICTED:
                self._disruption_target(eviction, ns, name, condition)
        if outcome.result == BLOCKED:  # refused (a budget): the pod stays, no longer a disruption target
            why = redact(outcome.detail)
            withdrawn = render.disruption_target_withdrawn(message, why, render.now_rfc3339())
            unsaid = self._disruption_target(eviction, ns, name, _for_uid(withdrawn, uid))
            if unsaid is not None and unsaid.result not in (GONE, CONFLICT):  # said again a while later
                self._settle_later(eviction.pod, uid, message, why, after=_SET_BACK_RETRY)
        elif outcome.result == FAILED:  # the pod as it is now says whether it was (unread: again later)
            why = redact(outcome.detail)
            if self._withdraw_unless_evicted(ns, name, uid, message, why) is None:
                self._settle_later(eviction.pod, uid, message, why, after=_SET_BACK_RETRY)
        elif outcome.result == FENCED:  # not sent: told so once this replica may write again
            self._settle_later(eviction.pod, uid, message, redact(outcome.detail), after=0.0)
        elif outcome.result == UNKNOWN:  # what came of it is known later: the pod read then says
            self._settle_unknown(key, uid, message, told)
        said = True
        if outcome.result == EVICTED:  # told once evicted
            _, event_error, owed = self.post_object_event(
                target, reason=told[1], message=message, type_="Normal", now=now
            )
            said = not owed and not event_error
            if event_error:
                outcome.detail = f"{outcome.detail}; {event_error}" if outcome.detail else event_error
        self._settled(key, note, told=said)
        return outcome

    def _settle_unknown(
        self, key: str, uid: str, message: str, told: tuple[EventTarget, str, str, str]
    ) -> None:
        """An eviction of pod ``key`` whose outcome is unknown (its answer lost): looked at once no request
        can act any more (``unknown_settles_after``): found evicted, told so (``told``); still there and
        marked, set back saying its answer was lost (:meth:`_settle_later`)."""
        after = self.settings.unknown_settles_after
        self._settle_later(key, uid, message, UNSETTLED_TARGET.format(after), after=after, told=told)

    def _settle_later(
        self,
        key: str,
        uid: str,
        message: str,
        why: str,
        *,
        after: float,
        young: float = 0.0,
        told: tuple[EventTarget, str, str, str] | None = None,
    ) -> None:
        """Look at pod ``key`` (of ``uid``, told ``message``) again in ``after`` seconds: set it back then,
        saying ``why``, if it is still marked (and marked at least ``young`` seconds ago:
        :meth:`_withdraw_unless_evicted`; :meth:`withdraw_unsettled`); if it is gone or being deleted,
        write the event ``told`` then, if any."""
        due = self.clock() + after
        with self._lock:
            old = self._unsettled.get(key)
            self._unsettled[key] = _Unsettled(uid, message, why, due, young=young, told=told)
            if told is None and (old is None or old.told is None):
                self._unsettled_first = min(self._unsettled_first, due)
            else:
                self._retally()

    def _retally(self, *, soon: bool = True) -> None:
        """(Under ``_lock``, ``_unsettled`` changed.) The first look's due, and what the Lease hands over
        should this replica stop before its looks (:class:`HandsOver`): each eviction whose answer was
        lost and whose event waits for its look (the first ``_HANDOVER_MOST`` due), its due as wall-clock
        time (:meth:`_take_over`). What it says changed is written to the Lease at once (``soon``: on
        the renewal's thread, :meth:`LeaderLease.hand_over_soon`), not at the next renewal due. During a
        batch (:meth:`_batch`), all this is done once, as it ends (the first due too: the session that
        sent the batch looks at none before)."""
        if self._batching:
            self._tally_owed = True
            return
        self._unsettled_first = min((u.due for u in self._unsettled.values()), default=math.inf)
        fence = self.fence
        if fence is None or not isinstance(fence, HandsOver):
            return
        wall = time.time() - self.clock()
        owed = sorted((u.due, key) for key, u in self._unsettled.items() if u.told is not None)
        notes: list[str] = []
        size = (
            2  # (the list's brackets; JSON as json.dumps writes it by default is ASCII: a byte a character)
        )
        for due, key in owed[:_HANDOVER_MOST]:
            u = self._unsettled[key]
            assert u.told is not None
            _, reason, message, at = u.told
            note = json.dumps(
                {"pod": key, "uid": u.uid, "reason": reason, "message": _cut(message), "at": at,
                 "why": _cut(u.why), "due": round(due + wall, 3), "young": u.young},
                separators=(",", ":"),
            )  # fmt: skip
            size += len(note) + 1
            if size > _HANDOVER_BYTES:
                break
            notes.append(note)
        said = f"[{','.join(notes)}]" if notes else ""
        if said == fence.handover:
            return
        fence.handover = said
        hand_over_soon = getattr(fence, "hand_over_soon", None) if soon else None
        if hand_over_soon is not None:
            hand_over_soon()

    def _take_over(self) -> None:
        """At the start of a holding of the Lease: what the holder before handed over (:meth:`_retally`,
        as the Lease said when this replica took it) is this replica's to do: each eviction whose answer
        was lost is looked at when it was due (at once if that is past), and its event written then if
        the pod is found evicted (once: an event already there with that message is not written
        again). A pod this replica has a look of its own for keeps that one. What cannot be read is left,
        said in a warning."""
        fence = self.fence
        if fence is None or not isinstance(fence, HandsOver):
            return
        said, fence.inherited = fence.inherited, ""
        notes = _handed_over(said)
        now, wall = self.clock(), time.time()
        with self._lock:
            for key, uid, due, young, told, why in notes:
                if key not in self._unsettled:
                    due = now + max(0.0, due - wall)
                    self._unsettled[key] = _Unsettled(uid, told[2], why, due, young=young, told=told)
            self._retally()
        if notes:
            log.info("took over %d eviction(s) whose answer was lost from the holder before", len(notes))

    def unsettled_due(self) -> bool:
        """Whether a pod marked for an eviction whose outcome was not known is due a look now
        (:meth:`withdraw_unsettled`). No lock, no I/O: a float compared."""
        return self._unsettled_first <= self.clock()

    def withdraw_unsettled(self) -> int:
        """Each pod marked as a disruption target whose eviction's outcome was not known (its answer
        lost; or not sent, fenced) and whose look is due: read now, the same pod, still marked and not
        being deleted, it was not evicted, and is told so (:meth:`_withdraw_unless_evicted`). A read or a
        write that failed is tried again ``_SET_BACK_RETRY`` seconds later, ``_SET_BACK_TRIES`` times.
        Returns how many were set back. Blocking (a read and a write each): the session thread's."""
        now = self.clock()
        with self._lock:
            due = [(key, u) for key, u in self._unsettled.items() if u.due <= now]
            for key, _ in due:
                del self._unsettled[key]
            self._retally()
        done = 0
        for key, u in due:
            ns, name = _split(key)
            said = self._withdraw_unless_evicted(
                ns, name, u.uid, u.message, u.why, young=u.young, told=u.told
            )
            if said is None and u.tries + 1 < _SET_BACK_TRIES:
                with self._lock:  # unless a new eviction of the pod was decided meanwhile
                    if key not in self._unsettled:
                        retry = self.clock() + _SET_BACK_RETRY
                        self._unsettled[key] = _Unsettled(
                            u.uid, u.message, u.why, retry, u.tries + 1, u.young, u.told
                        )
                        self._retally()
            done += bool(said)
        return done

    def _tell_evicted(self, told: tuple[EventTarget, str, str, str]) -> bool:
        """The event of an eviction whose answer was lost, once the pod is found evicted after all.
        Returns whether it is told (sent, or there already); False: not sent (the fence, an error)."""
        target, reason, message, now = told
        _, error, owed = self.post_object_event(
            target, reason=reason, message=message, type_="Normal", now=now
        )
        return not owed and not error

    def _withdraw_unless_evicted(
        self,
        ns: str,
        name: str,
        uid: str,
        message: str,
        why: str,
        *,
        young: float = 0.0,
        told: tuple[EventTarget, str, str, str] | None = None,
    ) -> bool | None:
        """Set the ``DisruptionTarget`` condition of pod ``ns/name`` back to False saying ``why`` (and
        ``message``, what it was told), when the pod read now is the one of ``uid``, still marked by a
        scheduler and not being deleted (with ``young``, marked at least that many seconds ago, else looked
        at again then: :meth:`withdraw_stale`). The patch names the version read: should an eviction land in
        between, the apiserver refuses it, and one that lands after it writes its own condition as it
        deletes the pod (``EvictionByEvictionAPI``): the pod is never left terminating and told it was not
        evicted. Returns whether it was set back, None when the read or the write failed (no error: the
        next holding of the Lease looks again, :meth:`withdraw_stale`). The event ``told`` is written when the
        pod read is gone, another by that name, or being deleted (:meth:`_tell_evicted`)."""
        try:
            fresh = self.read_pod(ns, name)
        except Exception:
            return None
        meta = meta_of(fresh or {})
        if fresh is None or (uid and meta.get("uid") != uid) or meta.get("deletionTimestamp"):
            if told is not None and not self._tell_evicted(told):
                return None  # (its event not sent: told when looked at again)
            return False
        if not render.marked_by_scheduler(fresh):
            return False
        at = render.marked_at(fresh) if young > 0 else None
        if at is not None and (left := min(young, at + young - time.time())) > 0:
            # Marked less than ``young`` seconds ago: a request sent for it may still act (a leader's last
            # delete, sent before it stopped): looked at again once it cannot.
            key = f"{ns}/{name}"
            self._settle_later(key, str(meta.get("uid") or ""), message, why, after=left, told=told)
            return False
        body = render.disruption_target_withdrawn(message, why, render.now_rfc3339())
        body["metadata"] = {"uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
        try:
            self._send("PATCH", pod_path(ns, name, "status"), body, content_type=STRATEGIC_PATCH)
        except ApiException as exc:  # (409: changed since it was read: read again, if looked at again)
            return False if exc.status == 404 else None
        except Exception:
            return None
        return True

    def withdraw_stale(self, pods: Iterable[Raw]) -> int:
        """After this replica took the Lease (or started): each of ``pods`` (the cache's) of ours that is
        still marked as a disruption target by a scheduler and not being deleted was told of an eviction
        that an earlier holder did not make (it stopped in between) or that failed: its condition is set
        back to False saying so (:meth:`_withdraw_unless_evicted`, on the pod as the apiserver has it
        now), not left for the disruption controller to clear minutes later; one whose read or write
        failed, a while later (:meth:`withdraw_unsettled`), and one marked less than
        ``unknown_settles_after`` ago once that much time has passed (a delete the holder before sent
        just before it stopped may still land, and writes no condition of its own: a False could lie).
        First, what the holder before handed over is taken over (:meth:`_take_over`): a pod with a look
        of its own to come is left to it. Returns how many."""
        self._take_over()
        with self._lock:
            looks = {key: u.uid for key, u in self._unsettled.items()}
        done = 0
        for pod in pods:
            # A cheap look first (this walks every cached pod, once a holding): a marked pod has a
            # DisruptionTarget condition, alone or with others (a pruned pod keeps three kinds at most).
            # Anything of another shape is looked at whole.
            status = pod.get("status")
            if type(status) is dict:
                c = status.get("conditions")
                if not c or (
                    type(c) is list and len(c) == 1 and type(c[0]) is dict and c[0].get("type") != _TARGET
                ):
                    continue
            if self._ours(pod) and render.marked_by_scheduler(pod):
                meta = meta_of(pod)
                ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
                if looks and looks.get(f"{ns}/{name}") == uid_of(pod):
                    continue  # looked at when its look is due, saying why
                young = self.settings.unknown_settles_after
                said = self._withdraw_unless_evicted(ns, name, uid_of(pod), "", STALE_TARGET, young=young)
                if said is None:  # unread or unwritten: looked at again a while later
                    key, uid = f"{ns}/{name}", uid_of(pod)
                    self._settle_later(key, uid, "", STALE_TARGET, after=_SET_BACK_RETRY, young=young)
                done += bool(said)
        return done

    def _disruption_target(
        self, eviction: Evict, ns: str, name: str, condition: dict[str, Any]
    ) -> EvictOutcome | None:
        """Write the DisruptionTarget condition. None when written, else why the eviction cannot go on."""
        try:
            self._send("PATCH", pod_path(ns, name, "status"), condition, content_type=STRATEGIC_PATCH)
        except Fenced as exc:
            return EvictOutcome(eviction, FENCED, str(exc))
        except ApiException as exc:
            if exc.status == 404:
                return EvictOutcome(eviction, GONE, _reason(exc))
            if _made_again(exc):
                return EvictOutcome(eviction, CONFLICT, f"another pod by that name: {_reason(exc)}")
            return EvictOutcome(eviction, FAILED, f"DisruptionTarget: {exc.status} {_reason(exc)}")
        except Exception as exc:
            return EvictOutcome(eviction, FAILED, f"DisruptionTarget: {error_summary(exc)}")
        return None

    def _evict(self, eviction: Evict, ns: str, name: str) -> EvictOutcome:
        """Evict the pod through the Eviction API, only the one decided for: EVICTED; gone, GONE; refused
        by a disruption budget (429), BLOCKED; another pod by that name (the uid precondition), CONFLICT."""
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns},
        }
        if eviction.uid:  # never evict another pod that took the name meanwhile
            body["deleteOptions"] = {"preconditions": {"uid": eviction.uid}}
        return self._remove(eviction, ns, name, method="POST", path=pod_path(ns, name, "eviction"), body=body)

    def _delete(self, eviction: Evict, ns: str, name: str) -> EvictOutcome:
        """Delete the pod (a victim past its disruption budget), only the one decided for: EVICTED with
        ``DELETED`` as its detail; gone, GONE; another pod by that name (the uid precondition), CONFLICT.
        A 429 here is the apiserver's throttling, not a budget's refusal: FAILED."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if eviction.uid:  # never delete another pod that took the name meanwhile
            body["preconditions"] = {"uid": eviction.uid}
        return self._remove(eviction, ns, name, method="DELETE", path=pod_path(ns, name), body=body)

    def _remove(
        self, eviction: Evict, ns: str, name: str, *, method: str, path: str, body: dict[str, Any]
    ) -> EvictOutcome:
        """Send an eviction (POST) or a delete (DELETE) and say what came of it; a delete's outcome and
        failures say it was one."""
        deletes = method == "DELETE"
        said = "delete: " if deletes else ""
        try:
            self._send(method, path, body)
            return EvictOutcome(eviction, EVICTED, DELETED if deletes else "")
        except Fenced as exc:
            return EvictOutcome(eviction, FENCED, str(exc))
        except ApiException as exc:
            detail = _reason(exc)
            if exc.status == 404:
                return EvictOutcome(eviction, GONE, detail)
            if exc.status == 429 and not deletes:
                return EvictOutcome(eviction, BLOCKED, detail)
            if exc.status == 409:
                return EvictOutcome(eviction, CONFLICT, detail)
            if not (deletes and exc.status in _MAY_STILL_ACT):
                return EvictOutcome(eviction, FAILED, f"{said}{exc.status}: {detail}")
            why = f"{said}{exc.status}: {detail}"  # it may yet land: as an answer lost
        except ResponseLost as exc:  # it may have evicted (deleted) the pod
            why = str(exc)
        except Exception as exc:
            return EvictOutcome(eviction, FAILED, f"{said}{error_summary(exc)}")
        outcome = self._evict_read_back(eviction, ns, name, why)
        if deletes and outcome.result == EVICTED:
            outcome.detail = f"{DELETED}; {outcome.detail}"
        return outcome

    def _evict_read_back(self, eviction: Evict, ns: str, name: str, why: str) -> EvictOutcome:
        """What came of an eviction whose answer was lost, as the pod read back shows (not sent again: the
        read tells without writing), in the words the Eviction API would have used: terminating, EVICTED;
        gone, GONE; another pod by that name, CONFLICT (ours is gone). There and not terminating, or
        unread: UNKNOWN, it may be evicted yet (a request that timed out may land after the read)."""
        try:
            fresh = self.read_pod(ns, name)
        except Exception as exc:
            detail = f"{why}; may be evicted (read back failed: {error_summary(exc)})"
            return EvictOutcome(eviction, UNKNOWN, detail)
        if fresh is None:
            return EvictOutcome(eviction, GONE, f"{why}; read back: gone")
        meta = meta_of(fresh)
        if eviction.uid and meta.get("uid") != eviction.uid:
            return EvictOutcome(eviction, CONFLICT, f"{why}; read back: another pod by that name")
        if meta.get("deletionTimestamp"):
            return EvictOutcome(eviction, EVICTED, f"{why}; read back: terminating")
        return EvictOutcome(eviction, UNKNOWN, f"{why}; read back: not evicted yet")

    # --- status, conditions, events -------------------------------------------------------------------------

    def write_status(
        self,
        result: SessionResult,
        *,
        queues: Iterable[str] | Mapping[str, str],
        podgroups: Iterable[str] | Mapping[str, str],
        uids: Mapping[str, str] | None = None,
        pods: Mapping[str, Raw],
        pods_now: Callable[[Iterable[str] | None], Mapping[str, Raw]] | None = None,
        extra_events: Iterable[tuple[EventTarget, Event]] = (),
        now: str | None = None,
        hold: Callable[[bool], bool] | None = None,
    ) -> tuple[int, int, list[str]]:
        """Write changed PodGroup/Queue status, pod conditions, nominated nodes and the session's
        events (plus ``extra_events``, e.g. about objects the cache rejected). Returns (writes, events,
        errors).

        ``queues`` and ``podgroups`` are the objects that exist: names, or names -> their API group
        (volsched's or Volcano's; names alone are volsched's); ``uids`` maps PodGroups to their UIDs
        (for their events). ``pods_now`` (the cache's pods by key, or all of them for None) is where
        the nominated nodes' pods are read, as they are when written (else from ``pods``).
        ``hold`` (the background port's) is called on this thread before each write is sent, and may
        wait: with True for a write a later session's status would make again (a status, a condition,
        a nominated node), False for an event; a write it refuses is not sent, nor one whose turn
        comes under another holding of the Lease than the one it was decided under."""
        now = now or render.now_rfc3339()
        holding = self.holding()
        self._forget_written_before(holding)
        jobs: list[Callable[[], tuple[int, int, str | None]]] = []
        existing_pgs = (
            dict(podgroups) if isinstance(podgroups, Mapping) else dict.fromkeys(podgroups, API_GROUP)
        )
        existing_queues = dict(queues) if isinstance(queues, Mapping) else dict.fromkeys(queues, API_GROUP)
        written_from = self._podgroups_from
        for key, pg in result.podgroups.items():
            group = existing_pgs.get(key)
            if group is None:
                continue
            same = written_from.get(key)
            if same is not None and same[0] is pg and same[1] == group:
                continue
            if group == WORKLOAD_GROUP:
                with self._lock:
                    # kube-scheduler's condition is terminal once True: kept as written
                    scheduled = _initially_scheduled(self._podgroups.get(key))
                rendered = render.workload_podgroup_status(pg, scheduled=scheduled)
            else:
                rendered = render.podgroup_status(pg)
            with self._lock:
                if self._podgroups.get(key) == rendered:
                    written_from[key] = (pg, group)
                    continue
            jobs.append(partial(self._write_podgroup, key, rendered, now, group, status=pg))
        for name, q in result.queues.items():
            if name not in existing_queues:
                continue
            rendered = render.queue_status(q)
            group = existing_queues[name]
            with self._lock:
                written = self._queues.get(name)
                if written == rendered:
                    self._queues_held.pop(name, None)  # back to what was written: nothing owed
                    continue
                if self._figures_only(name, written, rendered):
                    self._queues_held[name] = (rendered, group)
                    continue
                self._queues_held.pop(name, None)
            jobs.append(partial(self._write_queue, name, rendered, now, group))
        for key, message in result.unschedulable.items():
            pod = pods.get(key)
            if not self._ours(pod) or (pod.get("spec") or {}).get("nodeName"):  # type: ignore[union-attr]
                continue
            known = uid_of(pod)  # type: ignore[arg-type]
            uid = known or key
            with self._lock:
                last = self._conditions.get(uid)
                at = self._condition_at.get(uid)
            if last != message and not self.events.settling(last, at, message):
                jobs.append(partial(self._write_condition, key, uid, message, now, only=known))
        jobs.extend(self._nomination_jobs(result, pods, pods_now))
        made_again = len(jobs)  # (the writes before the events: a later session's status makes them again)
        targeted = [
            *self._targets(result.events, existing_pgs, existing_queues, uids or {}, pods),
            *extra_events,
        ]
        for target, event in targeted:
            jobs.append(lambda t=target, e=event: self._event_job(t, e, now))  # type: ignore[misc]
        with self._lock:
            told_after, self._told_after = self._told_after, []
        for told, key, note in told_after:
            jobs.append(partial(self._told_job, told, key, note))
        writes = events = 0
        errors: list[str] = []
        with self._batch():
            if hold is None:
                outcomes = self._map(lambda job: job(), jobs)
            else:
                outcomes = self._held(jobs, made_again, hold, holding)
        for w, e, err in outcomes:
            writes += w
            events += e
            if err:
                errors.append(err)
        return writes, events, errors

    def _held(
        self,
        jobs: list[Callable[[], tuple[int, int, str | None]]],
        made_again: int,
        hold: Callable[[bool], bool],
        holding: float | None,
    ) -> list[tuple[int, int, str | None]]:
        """Run the status writes ``jobs`` on the pool, ``workers`` at once, each handed over only once
        ``hold`` lets it go (the first ``made_again`` are those a later session's status makes again)
        and under the holding of the Lease they were decided under. A write ``hold`` refuses, or under
        another holding, is not sent (the Lease renewed when due between them, as ``_map`` does)."""
        slots = threading.Semaphore(max(1, self.settings.workers))
        futures = []
        for i, job in enumerate(jobs):
            slots.acquire()
            if not hold(i < made_again) or self.holding() != holding:
                slots.release()
                continue
            if self.fence is not None:
                self.fence.renew_if_due()
            future = self.pool.submit(job)
            future.add_done_callback(lambda _f: slots.release())
            futures.append(future)
        return [f.result() for f in futures]

    def _figures_only(self, name: str, last: dict[str, Any] | None, rendered: dict[str, Any]) -> bool:
        """Whether a Queue's new status is held back (under ``_lock``): coalescing is on, the last one
        was written less than ``queue_status_every`` seconds ago, and only its figures changed."""
        if self.queue_status_every <= 0 or last is None:
            return False
        at = self._queue_written_at.get(name)
        if at is None or self.clock() - at >= self.queue_status_every:
            return False
        return all(last.get(k) == rendered.get(k) for k in _QUEUE_AT_ONCE)

    def hold_queue_figures(self, result: SessionResult, *, queues: Mapping[str, str]) -> bool | None:
        """What :meth:`write_status` does with ``result``'s Queue statuses (``queues``: the Queues that
        exist, by name, with their API group) when each is unchanged or changed only in its figures
        within its ``queue_status_every`` (held back, the latest replacing the one held), done at once on
        the caller's thread, with no write: None, and nothing held, when one of them is to be written
        now (what a user acts on changed, its time is up, or this writer's last writes were made under
        another holding of the Lease); else whether a Queue is held that was not before (its time may
        come before that of those held already)."""
        rendered = [
            (name, render.queue_status(q), queues[name])
            for name, q in result.queues.items()
            if name in queues
        ]
        with self._lock:
            if self.holding() != self._written_under:
                return None
            plan: list[tuple[str, tuple[dict[str, Any], str] | None]] = []
            for name, status, group in rendered:
                written = self._queues.get(name)
                if written == status:
                    plan.append((name, None))  # back to what was written: nothing owed
                elif self._figures_only(name, written, status):
                    plan.append((name, (status, group)))
                else:
                    return None
            new = False
            for name, held in plan:
                if held is None:
                    self._queues_held.pop(name, None)
                else:
                    new = new or name not in self._queues_held
                    self._queues_held[name] = held
            return new

    def held_due(self) -> float | None:
        """When the earliest Queue status held back is due (``_clock``'s time), None when none is."""
        with self._lock:
            if not self._queues_held:
                return None
            at = self._queue_written_at
            return self.queue_status_every + min(at.get(name, -math.inf) for name in self._queues_held)

    def write_held(self) -> tuple[int, int, list[str]]:
        """Write the Queue statuses held back whose time is up (the latest of each); returns (writes,
        events, errors) as :meth:`write_status`. Under another holding of the Lease than the one they
        were decided under, they are dropped: the new holding's sessions write every status again."""
        self._forget_written_before(self.holding())
        now, due = self.clock(), []
        with self._lock:
            for name, (rendered, group) in list(self._queues_held.items()):
                if now - self._queue_written_at.get(name, -math.inf) >= self.queue_status_every:
                    del self._queues_held[name]
                    due.append(partial(self._write_queue, name, rendered, None, group))
        writes, errors = 0, []
        for w, _, err in self._map(lambda job: job(), due):
            writes += w
            if err:
                errors.append(err)
        return writes, 0, errors

    def may_write_status(
        self, result: SessionResult, *, queues: AbstractSet[str], podgroups: AbstractSet[str], extra: bool
    ) -> bool:
        """Whether :meth:`write_status` might write anything for ``result`` (``queues`` and ``podgroups``:
        the objects that exist; ``extra``: extra events are given): False only when it certainly writes
        nothing: no status of an object that exists, no pod told why it waits, no nominated node to set
        or clear (nor any to read first), no event, no eviction's event owed, the same holding of the
        Lease as the last writes'. (A status unchanged is not looked for: rendering it is most of the
        cost this spares.)"""
        with self._lock:
            if (
                extra
                or result.events
                or result.unschedulable
                or result.nominated
                or self._nominated
                or not self._nominations_read
                or self._told_after
                or self.holding() != self._written_under
            ):
                return True
        return not queues.isdisjoint(result.queues) or not podgroups.isdisjoint(result.podgroups)

    def _forget_written_before(self, holding: float | None) -> None:
        """Under a new holding of the Lease (this replica took it over from another, which wrote
        statuses and conditions meanwhile), forget what was written under the earlier one: the
        statuses are written as a replica that just started writes them, whatever was written last."""
        with self._lock:
            if holding == self._written_under:
                return
            self._written_under = holding
            for written in (
                self._podgroups, self._podgroups_full, self._podgroups_from, self._queues,
                self._queues_full, self._conditions, self._condition_at, self._in_flight,
                self._nominated, self._queue_written_at, self._queues_held,
            ):  # fmt: skip
                written.clear()
            self._nominations_read = False

    def _told_job(
        self, told: tuple[EventTarget, str, str, str], key: str, note: _Unsettled | None
    ) -> tuple[int, int, str | None]:
        """The event of pod ``key`` evicted and gone at once; its look owed on the Lease (``note``) goes
        once it is told."""
        target, reason, message, at = told
        sent, error, owed = self.post_object_event(
            target, reason=reason, message=message, type_="Normal", now=at
        )
        self._settled(key, note, told=not owed and not error)
        return 0, sent, error

    def _write(self, what: str, path: str, body: Any, content_type: str) -> tuple[bool, str | None]:
        """One status write (a PATCH). (True, None) when written; (False, None) when the object is gone
        (404: the watch will drop it) or, for a body that names its uid, made again under its name;
        (False, "what: why") on any other failure."""
        try:
            self._send("PATCH", path, body, content_type=content_type)
        except Fenced:
            with self._lock:
                self.fenced += 1
            return False, None  # not written: a later session (this holding's, or the next) writes it
        except ApiException as exc:
            gone = exc.status == 404 or (isinstance(body, dict) and "metadata" in body and _made_again(exc))
            return False, None if gone else f"{what}: {exc.status} {_reason(exc)}"
        except Exception as exc:
            return False, f"{what}: {exc}"
        return True, None

    def _write_podgroup(
        self,
        key: str,
        rendered: dict[str, Any],
        now: str,
        group: str = API_GROUP,
        *,
        status: PodGroupStatus | None = None,
    ) -> tuple[int, int, str | None]:
        ns, name = _split(key)
        path = custom_path(group, VERSION, "podgroups", name, namespace=ns)
        if group == WORKLOAD_GROUP and not _initially_scheduled(rendered):
            settled = self._scheduled_before(key, path)
            if settled is not None:
                return settled
        out = self._write_status(
            "PodGroup", key, path, rendered, now=now, group=group,
            sent=self._podgroups, full=self._podgroups_full, whole=False,
            as_field=f"podgroups.{group}" in self._status_as_field,
        )  # fmt: skip
        with self._lock:
            if status is not None and self._podgroups.get(key) is rendered:  # written, not forgotten since
                self._podgroups_from[key] = (status, group)
            else:
                self._podgroups_from.pop(key, None)
        return out

    def _scheduled_before(self, key: str, path: str) -> tuple[int, int, str | None] | None:
        """For a Kubernetes PodGroup about to be told it is not scheduled, of which this writer has
        written nothing under this holding of the Lease (a replica that restarted, or took the Lease
        over): its status as the apiserver holds it. Its ``PodGroupInitiallyScheduled`` is terminal
        once True (another replica, or this one before it restarted, wrote it): then that status is
        remembered as written and nothing is sent; nor when it could not be read (a later session tries
        again), or is gone. None: write it."""
        with self._lock:
            if key in self._podgroups_full:
                return None  # what it says now is this writer's (checked before the job was made)
            token = object()
            self._in_flight["PodGroup", key] = token
        outcome: tuple[int, int, str | None] = (0, 0, None)  # (gone: the watch drops it)
        try:
            found = self._read_listed(path)
            current = None if found is None else found.get("status") or {}
        except ApiException as exc:
            error = None if exc.status == 404 else f"PodGroup {key} status: read: {exc.status} {_reason(exc)}"
            current, outcome = None, (0, 0, error)
        except Exception as exc:
            current, outcome = None, (0, 0, f"PodGroup {key} status: read: {error_summary(exc)}")
        with self._lock:
            if self._in_flight.get(("PodGroup", key)) is not token:
                return 0, 0, None  # forgotten meanwhile (deleted, made again): the next session's
            del self._in_flight["PodGroup", key]
            if current is None:
                return outcome
            if not _initially_scheduled(current):
                return None
            self._podgroups[key] = self._podgroups_full[key] = current
        return 0, 0, None

    def _write_queue(
        self, name: str, rendered: dict[str, Any], now: str | None = None, group: str = API_GROUP
    ) -> tuple[int, int, str | None]:
        path = custom_path(group, VERSION, "queues", name)
        out = self._write_status(
            "Queue", name, path, rendered, now=now or render.now_rfc3339(), group=group,
            sent=self._queues, full=self._queues_full, whole=True,
            as_field=f"queues.{group}" in self._status_as_field,
            theirs=_VOLCANO_QUEUE_OWN if group == VOLCANO_GROUP else (),
        )  # fmt: skip
        if out[0]:
            with self._lock:
                self._queue_written_at[name] = self.clock()
        return out

    def _write_status(
        self,
        kind: str,
        key: str,
        path: str,
        rendered: dict[str, Any],
        *,
        now: str,
        group: str,
        sent: dict[str, dict[str, Any]],
        full: dict[str, dict[str, Any]],
        whole: bool,
        as_field: bool = False,
        theirs: tuple[str, ...] = (),
    ) -> tuple[int, int, str | None]:
        """Write ``rendered`` as the status of the object at ``path`` (its conditions keep their
        transition times from ``full``, what was written last), through the status subresource, or as a
        field where a Volcano CRD has none. ``whole``: the status replaces the old one (a JSON patch: a
        merge patch keeps keys that are gone, such as a removed guarantee's deserved); else merged.
        Written: ``rendered`` goes to ``sent`` (to skip an unchanged status next time), the body to
        ``full``, unless the object was forgotten while the write was in flight (see ``_in_flight``).
        ``as_field``: the CRD has no status subresource (discovery said so): the object itself is
        patched at once. ``theirs``: status keys the object's owner writes (a Volcano Queue's state),
        never sent: the status is then merged, what it no longer says of its own removed, the rest left."""
        token = object()
        with self._lock:
            previous = full.get(key)
            self._in_flight[kind, key] = token
        body = render.with_transition_times(rendered, previous, now)
        what = f"{kind} {key} status"
        target = path if as_field else f"{path}/status"
        merged: dict[str, Any] = body
        if theirs:  # (a JSON patch replacing the whole status would write over theirs)
            gone = (set(previous or ()) | set(_QUEUE_MAY_GO)) - set(body) - set(theirs)
            own = {k: v for k, v in body.items() if k not in theirs}
            merged = own | dict.fromkeys(gone)
            done, err = self._write_keys(what, target, own, gone, merged)
        elif whole:
            replaced = [{"op": "add", "path": "/status", "value": body}]
            done, err = self._write(what, target, replaced, JSON_PATCH)
        else:
            patch = STRATEGIC_PATCH if group == WORKLOAD_GROUP else MERGE_PATCH
            done, err = self._write(what, target, {"status": body}, patch)
        if not done and err is None and not as_field and group not in (API_GROUP, WORKLOAD_GROUP):
            # A CRD without the status subresource (some Volcano releases): status is a field.
            if theirs:
                done, err = self._write_keys(what, path, own, gone, merged)
            else:
                done, err = self._write(what, path, {"status": merged}, MERGE_PATCH)
        with self._lock:
            if self._in_flight.get((kind, key)) is token:
                del self._in_flight[kind, key]
                if done:  # (forgotten meanwhile: written, but maybe to the object that went)
                    sent[key] = rendered
                    full[key] = body
        return (1, 0, None) if done else (0, 0, err)

    def _write_keys(
        self, what: str, path: str, own: dict[str, Any], gone: set[str], merged: dict[str, Any]
    ) -> tuple[bool, str | None]:
        """Write the status keys ``own`` whole and remove ``gone``, every other key (the owner's) left
        as it is: a JSON patch, as a merge patch merges maps too (a resource the queue no longer holds,
        not rendered, stayed in ``allocated`` with its old figure). A key gone is added, then removed,
        whether the status has it or not (written by a replica before a restart). Where the object has
        no status yet (the patch's paths missing), ``merged`` is merged in instead."""

        def at(k: str) -> str:
            return "/status/" + k.replace("~", "~0").replace("/", "~1")

        ops: list[dict[str, Any]] = [{"op": "add", "path": at(k), "value": v} for k, v in own.items()]
        for k in sorted(gone):
            ops += [{"op": "add", "path": at(k), "value": None}, {"op": "remove", "path": at(k)}]
        done, err = self._write(what, path, ops, JSON_PATCH)
        if err is not None:  # (no status: nothing in it to replace)
            done, err = self._write(what, path, {"status": merged}, MERGE_PATCH)
        return done, err

    def status_subresource(self, group: str, plural: str, *, served: bool) -> None:
        """Whether the CRD of ``plural`` in ``group`` has a status subresource (API discovery says)."""
        name = f"{plural}.{group}"
        with self._lock:
            self._status_as_field = (
                self._status_as_field - {name} if served else self._status_as_field | {name}
            )

    def queue_uid(self, name: str, uid: str | None) -> None:
        """Record a Queue's uid (from the watch), so its events show in ``kubectl describe queue``."""
        with self._lock:
            if uid:
                self._queue_uids[name] = uid
            else:
                self._queue_uids.pop(name, None)

    def _write_condition(
        self, key: str, uid: str, message: str, now: str, *, only: str = ""
    ) -> tuple[int, int, str | None]:
        """The pod's PodScheduled=False condition (``only``: on the pod of that uid alone), redacted as its
        event is (the message as the session made it is kept: what the next session's is compared to)."""
        ns, name = _split(key)
        done, err = self._write(
            f"Pod {key} condition",
            pod_path(ns, name, "status"),
            _for_uid(render.pod_unschedulable_condition(redact(message), now), only),
            STRATEGIC_PATCH,
        )
        if not done:
            return 0, 0, err
        with self._lock:
            self._conditions[uid] = message
            self._condition_at[uid] = self.events.now()
        return 1, 0, None

    # --- nominated nodes ----------------------------------------------------------------------------------

    def _nomination_jobs(
        self,
        result: SessionResult,
        pods: Mapping[str, Raw],
        pods_now: Callable[[Iterable[str] | None], Mapping[str, Raw]] | None,
    ) -> list[Callable[[], tuple[int, int, str | None]]]:
        """The writes that make our pods' ``status.nominatedNodeName`` say ``result.nominated``: set
        where it names another node (or none), cleared where this writer knows it says one the
        session no longer nominates. The first time under a holding of the Lease, every pod of ours
        that says one is read from the cache (a claim of an earlier leader): kept where the session
        nominates it again (the engine's first session takes such claims over, see
        ``plugins/reservation.py``), cleared where it does not (its node or its pod's wait is gone). A pod bound is never nominated; the apiserver clears its nominated
        node as it binds it (``ClearingNominatedNodeNameAfterBinding``, on by default since 1.35);
        where it still says one once the cache shows it bound (an older apiserver), it is cleared."""
        desired = result.nominated
        with self._lock:
            read = self._nominations_read
            if not desired and not self._nominated and (read or pods_now is None):
                return []
        if not read and pods_now is not None:
            found = {
                key: (uid_of(pod), shown)
                for key, pod in pods_now(None).items()
                if (shown := _nominated_node(pod)) and self._ours(pod)
            }
            with self._lock:
                self._nominated = {**found, **self._nominated}
                self._nominations_read = True
        with self._lock:
            written = dict(self._nominated)
        keys = sorted({*desired, *written})
        looked = pods_now(keys) if pods_now is not None else pods
        binding = {b.pod for b in result.binds}
        jobs: list[Callable[[], tuple[int, int, str | None]]] = []
        gone: list[str] = []
        for key in keys:
            pod = looked.get(key)
            had = written.get(key)
            if pod is None or not self._ours(pod):
                gone.append(key)
                continue
            uid = uid_of(pod)
            if had is not None and had[0] != uid:  # made again under its name: this one says nothing
                gone.append(key)
                had = None
            spec = pod.get("spec") or {}
            bound = bool(spec.get("nodeName"))
            node = desired.get(key)
            if node is not None and not bound and not meta_of(pod).get("deletionTimestamp"):
                if had != (uid, node):
                    jobs.append(partial(self._write_nominated, key, uid, node))
            elif had is not None and key not in binding:  # (a bind this session clears it)
                if bound and not _nominated_node(pod):
                    gone.append(key)  # cleared as it was bound
                else:
                    jobs.append(partial(self._write_nominated, key, uid, None))
        if gone:
            with self._lock:
                for key in gone:
                    if self._nominated.get(key) == written.get(key):
                        self._nominated.pop(key, None)
        return jobs

    def _write_nominated(self, key: str, uid: str, node: str | None) -> tuple[int, int, str | None]:
        """Set (``node``) or clear the pod's ``status.nominatedNodeName``, as kube-scheduler does, only
        on the pod of ``uid`` (made again under its name, the apiserver refuses the patch)."""
        ns, name = _split(key)
        body = _for_uid({"status": {"nominatedNodeName": node}}, uid)
        try:
            self._send("PATCH", pod_path(ns, name, "status"), body, content_type=STRATEGIC_PATCH)
        except Fenced:
            with self._lock:
                self.fenced += 1
            return 0, 0, None  # not written: a later session (or the next leader) sets or clears it
        except ApiException as exc:
            if exc.status != 404 and not _made_again(exc):  # (gone, or another pod by its name)
                return 0, 0, f"Pod {key} nominatedNodeName: {exc.status} {_reason(exc)}"
            with self._lock:
                if self._nominated.get(key, (uid,))[0] == uid:
                    self._nominated.pop(key, None)
            return 0, 0, None
        except Exception as exc:
            return 0, 0, f"Pod {key} nominatedNodeName: {error_summary(exc)}"
        with self._lock:
            if node is None:
                self._nominated.pop(key, None)
            else:
                self._nominated[key] = (uid, node)
        return 1, 0, None

    def _targets(
        self,
        events: Iterable[Event],
        podgroups: Mapping[str, str],
        queues: Mapping[str, str],
        uids: Mapping[str, str],
        pods: Mapping[str, Raw],
    ) -> list[tuple[EventTarget, Event]]:
        """The objects the session's events are about: our pods (a FailedScheduling or Nominated one
        only while it is unbound), PodGroups and Queues that exist (``podgroups``/``queues``: name -> API group).
        Events about anything else are dropped."""
        out = []
        for e in events:
            key = f"{e.namespace}/{e.name}"
            if e.kind == "Pod":
                pod = pods.get(key)
                if pod is None or (not self._ours(pod) and e.reason != MISDIRECTED):
                    continue
                if e.reason in WHILE_PENDING and (pod.get("spec") or {}).get("nodeName"):
                    continue
                uid = uid_of(pod)
                out.append((EventTarget("Pod", "v1", e.namespace, e.name, uid), e))
            elif e.kind == "PodGroup" and key in podgroups:
                api_version = f"{podgroups[key]}/{VERSION}"
                out.append((EventTarget("PodGroup", api_version, e.namespace, e.name, uids.get(key, "")), e))
            elif e.kind == "Queue" and e.name in queues:
                with self._lock:
                    uid = self._queue_uids.get(e.name, "")
                out.append((EventTarget("Queue", f"{queues[e.name]}/{VERSION}", "", e.name, uid), e))
        return out

    def _event_job(self, target: EventTarget, event: Event, now: str) -> tuple[int, int, str | None]:
        sent, err, _ = self.post_object_event(
            target, reason=event.reason, message=event.message, type_=event.type, now=now
        )
        return 0, sent, err

    def post_object_event(
        self,
        target: EventTarget,
        *,
        reason: str,
        message: str,
        type_: str = "Warning",
        now: str | None = None,
    ) -> tuple[int, str | None, bool]:
        """Send one event about ``target`` unless the filter refuses it (the same message as last time
        for this reason, or the object is over its rate). One Event object per (object, reason), updated
        in place. Returns (events sent, error, whether the event is owed still: not sent for the fence)."""
        message = redact(message)
        if not self.events.admit(target.key, reason, message, settle=reason in WAITING_REASONS):
            return 0, None, False
        now = now or render.now_rfc3339()
        last = self.events.last(target.key, reason)
        name = event_name(target, reason)
        body = render.object_event(
            kind=target.kind, api_version=target.api_version, namespace=target.namespace, name=target.name,
            uid=target.uid, reason=reason, message=message, now=now, type_=type_, event_name=name,
            count=last[1] + 1 if last else 1,
        )  # fmt: skip
        try:
            count = self._upsert_event(body, ours=last is not None)
        except Fenced:
            return 0, None, True  # not sent: the next leader sends it
        except ApiException as exc:
            return 0, f"{target.ref} event {reason}: {exc.status} {_reason(exc)}", False
        except Exception as exc:
            return 0, f"{target.ref} event {reason}: {error_summary(exc)}", False
        if count is None:  # already there with this message (we restarted): nothing sent
            self.events.sent(target.key, reason, message)
            return 0, None, False
        self.events.sent(target.key, reason, message, count=count)
        return 1, None, False

    def _upsert_event(self, body: dict[str, Any], *, ours: bool = False) -> int | None:
        """Create the event, or update it in place if it exists (409): message, time and count + 1.
        Returns the count written, or None when the existing event already says this. Raises what the
        API raised. Messages are redacted here, the one place every event passes through.
        ``ours``: this writer sent the event before (``body`` has its next count), so it is updated in
        place at once (created if it is gone meanwhile): one request, where a create refused as a
        conflict, a read and an update were three (a pending pod's reason changing every session)."""
        body = {**body, "message": redact(str(body.get("message", "")))}
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        if ours:
            try:
                self._send(
                    "PATCH", event_path(namespace, name), _event_update(body), content_type=MERGE_PATCH
                )
                return int(body.get("count") or 1)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        try:
            self._send("POST", event_path(namespace), body)
            return int(body.get("count") or 1)
        except ApiException as exc:
            if exc.status != 409:
                raise
        existing = self._get(event_path(namespace, name))
        if existing.get("message") == body["message"] and existing.get("reason") == body["reason"]:
            return None
        count = int(existing.get("count") or 1) + 1
        self._send(
            "PATCH",
            event_path(namespace, name),
            _event_update({**body, "count": count}),
            content_type=MERGE_PATCH,
        )
        return count

    def guard_queue(self, name: str, finalizers: tuple[str, ...], *, keep: bool) -> str | None:
        """Add (``keep``) or remove :data:`QUEUE_FINALIZER` on our Queue ``name``, whose finalizers were
        read as ``finalizers``: a JSON patch that adds at the end, or tests the entry before it removes
        it (another controller's finalizers are left as they are). A Queue read with none is read again
        first: another controller may have added one since, which setting the list would drop; the list
        is then made only under the resourceVersion read. Returns an error message, or None."""
        path = custom_path(API_GROUP, VERSION, "queues", name)
        if keep:
            ops: list[dict[str, Any]] = [
                {"op": "add", "path": "/metadata/finalizers/-", "value": QUEUE_FINALIZER}
            ]
            if not finalizers:
                try:
                    found = self._read_listed(path)
                except ApiException as exc:
                    return f"Queue {name}: finalizer: {exc.status} {_reason(exc)}"
                except Exception as exc:
                    return f"Queue {name}: finalizer: {error_summary(exc)}"
                if found is None:
                    return None  # gone: the watch tells
                meta = found.get("metadata") or {}
                now = meta.get("finalizers") or []
                if QUEUE_FINALIZER in now:
                    return None
                if not now:
                    ops = [
                        {
                            "op": "test",
                            "path": "/metadata/resourceVersion",
                            "value": meta.get("resourceVersion"),
                        },
                        {"op": "add", "path": "/metadata/finalizers", "value": [QUEUE_FINALIZER]},
                    ]
        else:
            at = finalizers.index(QUEUE_FINALIZER)
            ops = [
                {"op": "test", "path": f"/metadata/finalizers/{at}", "value": QUEUE_FINALIZER},
                {"op": "remove", "path": f"/metadata/finalizers/{at}"},
            ]
        try:
            self._send("PATCH", path, ops, content_type=JSON_PATCH)
        except Fenced:
            return None  # not sent: the next leader does it
        except ApiException as exc:
            if exc.status in (404, 409, 422):  # gone, or changed since it was read: the watch tells
                return None
            return f"Queue {name}: finalizer: {exc.status} {_reason(exc)}"
        except Exception as exc:
            return f"Queue {name}: finalizer: {error_summary(exc)}"
        return None

    def create_podgroup(self, body: dict[str, Any]) -> str | None:
        """Create a PodGroup (ours). Returns an error message, or None when created or it exists."""
        meta = body["metadata"]
        try:
            self._send(
                "POST", custom_collection(API_GROUP, VERSION, "podgroups", namespace=meta["namespace"]), body
            )
        except ApiException as exc:
            if exc.status == 409:
                return None
            return f"create PodGroup {meta['namespace']}/{meta['name']}: {exc.status} {_reason(exc)}"
        except Exception as exc:
            return f"create PodGroup {meta['namespace']}/{meta['name']}: {exc}"
        return None

    def list_podgroups(self, label_selector: str) -> list[dict[str, Any]]:
        """Our PodGroups in every namespace that carry ``label_selector`` (a read: never fenced)."""
        path = f"/apis/{API_GROUP}/{VERSION}/podgroups?labelSelector={quote(label_selector, safe='')}"
        items: list[dict[str, Any]] = self._get(path).get("items") or []
        return items

    def delete_podgroup(
        self, namespace: str, name: str, *, uid: str, resource_version: str
    ) -> tuple[bool, str | None]:
        """Delete our PodGroup if it is still the object read (its uid and resourceVersion: one changed
        since is left alone). Returns whether it is gone now (deleted, or already gone) and an error
        message (None when the apiserver answered: deleted, gone, or changed since)."""
        body = {"preconditions": {"uid": uid, "resourceVersion": resource_version}}
        try:
            self._send(
                "DELETE", custom_path(API_GROUP, VERSION, "podgroups", name, namespace=namespace), body
            )
        except ApiException as exc:
            if exc.status in (404, 409):  # gone; or changed since it was read (a precondition failed)
                return exc.status == 404, None
            return False, f"delete PodGroup {namespace}/{name}: {exc.status} {_reason(exc)}"
        except Exception as exc:
            return False, f"delete PodGroup {namespace}/{name}: {error_summary(exc)}"
        return True, None

    def post_event(self, body: dict[str, Any]) -> str | None:
        """Create (or, if it exists, update) one event. Returns an error message or None."""
        meta = body["metadata"]
        try:
            self._upsert_event(body)
        except Exception as exc:
            return f"event {meta['namespace']}/{meta['name']}: {error_summary(exc)}"
        return None
