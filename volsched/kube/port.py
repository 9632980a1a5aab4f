"""The cycle's port to a real cluster: :class:`~volsched.cycle.Port` over a :class:`KubeWriter`.

Binds and evictions go out through the writer (its Lease fence: a write this replica may no longer make
comes back FENCED, unsent). ``write_status`` also creates the PodGroups that stand for controller
owners' pods and warns on Volcano objects shadowed by ours, as the cache shows them, then writes the
session's status, conditions and events and one event on each object the cache refused.

With ``background`` (the operator's), a session never waits on the network for its binds or its status
(kube-scheduler's assume/bind split; the cycle assumed the binds when it decided them):

* ``bind`` (called by the cycle as each of the session's Statements commits, while the session goes
  on) sends the one bind of a lone job's session itself when nothing else is in flight (an arriving
  pod's, not handed over to another thread; an answer not begun within ``INLINE_PATIENCE`` is left to a
  bind worker, so that the thread, usually the pod watch's, goes back to its events), and otherwise hands
  each bind to the bind workers (up to ``workers``, started as binds outnumber idle ones;
  each renews the Lease when due and checks the fence before it sends: a bind decided under one
  holding of the Lease, the one the session was planned under (:meth:`KubePort.plan_under`), is never
  sent under a later one) and returns the outcomes completed so far; ``settle`` returns those
  completed since, for the next cycle to finish or forget. A gang's binds go out together; one
  that fails is forgotten and the next session completes the half-bound gang.
* ``write_status`` takes what it needs from the cache now and writes it on one status thread, each
  write once no bind is in flight and no later session is running (whose binds would come as the
  statuses went, and whose status says each again as it is then), or ``status_after_binds`` seconds
  after the session handed it over; when a newer session's status arrives before the older was started, only the newer is
  written (it says every status the older did, as the writer skips what is unchanged; the older's
  events it does not say again are carried into it), and a write of the older's still waiting for
  binds that the newer makes again (a status, a condition) is left to it. What was written is
  reported by a later ``write_status``.
  A Queue's status that changes only its figures (every arriving pod changes its ``allocated``) is
  written at most once per ``queue_status_every`` seconds; the status thread writes the last one held
  when its time is up, with or without a later session (a session whose only writes are such figures
  holds them on its own thread: no job for the status thread). A Queue's state or conditions, and every
  PodGroup's status, are written at once.
* A commit whose pods have claims of a WaitForFirstConsumer class to bind goes to the volume binder
  (:mod:`volsched.kube.volumebind`: every claim bound first, then the pods; its one waiting thread reads
  the ``cache`` the watches feed), as long as the provisioner takes; status writes do not wait for it.
* Evictions stay synchronous: a session that preempts plans its next evictions on the pods it evicted.
* ``drain`` waits for everything in flight (hand-over: after the fence closed, before the Lease is let go).
Without ``background`` every call returns all its outcomes and ``settle`` has nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cycle import CONFLICT, FAILED, BindOutcome, EvictOutcome, StatusReport
from volsched.framework.decisions import Bind, Event, Evict, SessionResult
from volsched.kube.latency import PodLatency
from volsched.kube.podgroups import ConflictReporter, LeftBehind, PodGroupCreator, groups_referred_to
from volsched.kube.rest import Detached, Pending
from volsched.kube.volumebind import VolumeBinder
from volsched.kube.writer import WAITING_REASONS, EventTarget, KubeWriter
from volsched.model.admitted import NOT_VERIFIED
from volsched.model.raw import Raw
from volsched.redaction import error_summary

log = logging.getLogger("volsched.kube")

#: The event reason on an object the cache refused (a negative quantity, a garbage namespace weight).
REJECTED = "Rejected"


def _pods_written_about(result: SessionResult) -> set[str]:
    """The pods whose condition or events a session's status writes may touch."""
    return {
        *result.unschedulable_pods,
        *(f"{e.namespace}/{e.name}" for e in result.events if e.kind == "Pod"),
    }


def _carried_over(older: SessionResult, newer: SessionResult) -> SessionResult:
    """``newer`` with the events of ``older`` (a session's status not written yet, which ``newer``'s
    replaces) that ``newer`` does not say again: a PodGroup's ``Scheduled`` is said only by the session
    that placed it, and was lost with the status it came with. Not the reasons a waiting object is told
    by every session while it waits (``newer`` says them if it still waits), nor one ``newer`` says
    itself (same object and reason: the newer message is the one written)."""
    said = {(e.kind, e.namespace, e.name, e.reason) for e in newer.events}
    carried = [
        e
        for e in older.events
        if e.reason not in WAITING_REASONS and (e.kind, e.namespace, e.name, e.reason) not in said
    ]
    return dataclasses.replace(newer, events=[*carried, *newer.events]) if carried else newer


#: The longest one wait of the status thread for binds in flight (seconds): the deadline is read again
#: after it, on the writer's clock (a test's clock moves without waking the thread).
_HOLD_SLICE = 0.25

#: Bind outcomes after which the pod is pending again in the cache (see cycle._settle): worth a cycle.
_RETRY = frozenset((FAILED, CONFLICT))

#: A bind handed to the workers: the bind, its raw pod and the Lease holding it was decided under.
#: A bind for a worker: the bind, its pod, the holding it was decided under, and, for one sent on the
#: session's thread whose answer was left (``Detached``), that answer, to read.
_Queued = tuple[Bind, Raw | None, float | None, Pending | None]

#: Seconds the session's thread waits for the answer to a bind it sent itself (a lone pod's) to begin,
#: before it leaves the answer to a bind worker: that thread is usually the pod watch's, which reads no
#: pod event while it waits, so an answer the apiserver is slow with held the next pods behind it. Above
#: the apiserver's usual answer, so that only a stalled one is left (a worker's wake-up costs CPU).
INLINE_PATIENCE: float | None = 0.02


#: A session's Queue statuses are held back on its own thread (``KubePort._held_here``) only when it
#: has at most this many Queues; more are rendered on the status thread, as every other status.
HELD_HERE_QUEUES = 8


class KubePort:
    def __init__(
        self,
        writer: KubeWriter,
        *,
        background: bool = False,
        on_failed: Callable[[], None] | None = None,
        latency: PodLatency | None = None,
        status_after_binds: float = 10.0,
        status_for_pipelined: float = 2.0,
        queue_status_every: float = 1.0,
        cache: ClusterState | None = None,
    ) -> None:
        self.writer = writer
        if background:  # (its status thread writes what is held back when its time is up)
            writer.queue_status_every = queue_status_every
        #: In the background, a session's status writes wait while binds are in flight, at most this
        #: many seconds after the session handed them over (the writer's clock): a backlog's binds,
        #: over however many sessions it takes, do not share the apiserver with the status of every
        #: PodGroup they place (its gangs' pods bound sooner), and the newest status is the one
        #: written. Each write waits, not only the first: binds handed over while the writes go (the
        #: next session's, in a moment with none in flight) go first. A stream of arriving pods leaves
        #: moments with no bind in flight unless it is a backlog itself; the bound is for that, and for
        #: binds that hang.
        self.status_after_binds = status_after_binds
        #: ... and while the last session left pods pipelined onto room its evictions free, at most this
        #: many seconds (within ``status_after_binds``): their binds come once the victims are gone, at
        #: once for a victim deleted at once, and the session's events about its victims go after the
        #: binds that start its preemptors; a victim that takes its grace period holds them no longer.
        self.status_for_pipelined = status_for_pipelined
        #: Times a session's status job, or one of its writes, waited for binds in flight (for tests).
        self.status_held = 0
        #: Times the status thread found a later session running and waited for it (for tests).
        self.status_held_for_session = 0
        #: A session is running (from :meth:`plan_under` to its ``write_status`` or
        #: :meth:`session_ended`): the status writes handed over before it wait for it, as for binds in
        #: flight (within ``status_after_binds``). In a burst's first sessions, chasing the watch's
        #: delivery of the backlog, a session's statuses and events (gangs whose members had not all
        #: been read yet told they wait) went out in the moment between two sessions, beside the next
        #: session's first binds, to be made stale by it.
        self._session_running = False
        #: Status writes (a PodGroup's or Queue's status, a pod's condition or nominated node) not sent
        #: because a newer session's status, waiting, writes them as they are now (for tests).
        self.status_dropped = 0
        #: Sessions whose status writes were made (or handed over), not skipped as having nothing to do.
        self.status_jobs = 0
        #: Stamps each bind's way (debug only; see ``volsched.kube.latency``).
        self.latency = latency
        #: Called (on the thread that saw it, must not block) when a bind comes back FAILED or CONFLICT: the
        #: pod is pending again (or a new one by that name is), and only a later cycle corrects the cache and
        #: places it, so one is called for. Not for GONE (deleted), SKIPPED (not ours) or FENCED (unsent
        #: because this replica may not hold the Lease: a retry would be refused the same way).
        self.on_failed = on_failed
        self.podgroups = PodGroupCreator(writer)
        self.conflicts = ConflictReporter(writer)
        self.left_behind = LeftBehind(writer)
        self.background = background
        self._lock = threading.Condition()
        self._binds_done: list[BindOutcome] = []
        self._binds_in_flight = 0
        #: Of those, binds whose claims are being bound (``volumebind``), as long as their provisioner
        #: takes; status writes do not wait for them.
        self._volume_binds = 0
        #: Waits on ``cache`` (the operator's, fed by the watches); without one, no claim is bound.
        self.volume_binder = (
            VolumeBinder(writer, cache, timeout=writer.settings.volume_bind_timeout)
            if cache is not None
            else None
        )
        self._status_next: Callable[[], StatusReport] | None = None
        #: The session result ``_status_next`` writes (its events are carried into a newer one's), and
        #: when the first status not started yet was handed over (``writer.clock``): the one the
        #: newer ones replaced, so that replacing never puts a write off past ``status_after_binds``.
        self._status_next_result: SessionResult | None = None
        self._next_since: float | None = None
        #: When the status job being written stops waiting for binds in flight, and for binds to come
        #: (``writer.clock``).
        self._writes_until = self._expected_until = 0.0
        #: The last session left pods pipelined (see ``status_for_pipelined``). Not waited for while
        #: draining.
        self._binds_expected = False
        self._draining = False
        self._status_running = False
        self._status_done = StatusReport()
        #: The status thread waits only for Queue figures held back (not a write in flight: ``drain``
        #: does not wait for it; after the fence closed they would be refused unsent anyway).
        self._waiting_held = False
        #: The last status writes failed somewhere or held an event back (its object over its rate):
        #: only a later session's status writes retry them.
        self._status_owed = False
        #: The holding of the Lease the sessions are planned under (see :meth:`plan_under`).
        self._planned_under: float | None = None
        self._planned = False
        #: Binds waiting for a worker (None: a worker's signal to stop). Long-lived workers take them from
        #: one queue: a future and a work item per bind, as an executor makes, were CPU on the session's
        #: thread for every bind.
        self._queue: queue.SimpleQueue[_Queued | None] = queue.SimpleQueue()
        #: Bind workers running (each lists itself as it starts).
        self._workers: list[threading.Thread] = []
        #: Bind workers running or owed a start (what ``_staff`` counts), and of those owed a start: the
        #: thread that calls for workers starts only the first of them; each worker, as it begins, starts
        #: the next one owed (:meth:`_start_next`). ``_starting``: such a chain of starts is under way.
        self._staffed = 0
        self._owed = 0
        self._starting = False
        #: When each bind left to a worker with its answer (``_send_here``) was sent (latency lines).
        self._sent_at: dict[str, float] = {}
        #: Lone pods' binds sent on the session's thread whose answers were left to a worker (for tests).
        self.binds_left_to_workers = 0
        #: Workers that finished a bind and wait for the next, not yet spoken for (under ``_lock``).
        self._idle = 0
        self._closed = False
        self._status: ThreadPoolExecutor | None = None
        if background:
            self._status = ThreadPoolExecutor(1, thread_name_prefix="volsched-status")

    # --- binds -------------------------------------------------------------------------------------------

    def plan_under(self, holding: float | None) -> None:
        """The sessions from now on are planned under ``holding`` of the Lease (``KubeWriter.holding``,
        read as the session's leadership was settled, before its snapshot): their binds are sent only
        under that holding, so a bind streamed from a session planned under an older holding is fenced,
        however the Lease changed hands meanwhile. The operator calls it before each session; until it
        is called, a commit's binds take the holding current when they are handed over."""
        with self._lock:
            self._planned_under, self._planned = holding, True
            self._session_running = True

    def session_ended(self) -> None:
        """The session begun at :meth:`plan_under` is over (the operator calls it after each, skipped or
        failed too; ``write_status`` says it for a session that hands its status over)."""
        with self._lock:
            if self._session_running:
                self._session_running = False
                self._lock.notify_all()

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Raw], *, lone: bool = False
    ) -> list[BindOutcome]:
        """See :meth:`volsched.cycle.Port.bind`. In the background, one bind of a ``lone`` session with
        nothing else in flight is sent here, on the session's thread, at once: handed to a worker, it
        waited for that thread to wake and take the GIL from the session still running (a few ms of an
        arriving pod's 5-15). Its answer is read here only if it begins within :data:`INLINE_PATIENCE`,
        else by a worker: the session has nothing left to place, but its thread, usually the pod
        watch's, reads no pod event while it waits, and the pods arriving behind a slow answer waited
        for it. Everything else goes to the workers, the session going on meanwhile."""
        volumes = any(b.volumes for b in binds)
        if volumes and self.volume_binder is None:
            why = "claims to bind, and no cache to wait on for them"
            return [BindOutcome(b, FAILED, why) for b in binds]
        if not self.background:
            if self.volume_binder is not None and volumes:
                return self.volume_binder.bind_all(binds, pods)
            return self.writer.bind_all(binds, pods)
        if volumes:
            return self._bind_volumes(binds, pods)
        here = False
        with self._lock:
            # The session decided these under this holding of the Lease.
            holding = self._planned_under if self._planned else self.writer.holding()
            closed = self._closed
            here = lone and len(binds) == 1 and not closed and self._binds_in_flight == 0
            self._binds_in_flight += len(binds)
            if self.latency is not None:
                self.latency.decided(b.pod for b in binds)
            if not closed and not here:
                for b in binds:  # under the lock: all of them before a closing port's stop signals
                    self._queue.put((b, pods.get(b.pod), holding, None))
                    self._staff()
            first = self._first_start()
        if first is not None:
            self._start(first)
        if here:
            self._send_here(binds[0], pods.get(binds[0].pod), holding)
        elif closed:  # shut down: not sent (and never raise once some were handed over)
            for b in binds:
                self._bound(BindOutcome(b, FAILED, "not sent: the port is closed"))
        return self._take_binds()

    def _bind_volumes(self, binds: Sequence[Bind], pods: Mapping[str, Raw]) -> list[BindOutcome]:
        """A commit whose claims are bound first, handed to the volume binder (it waits for provisioners,
        up to ``volume_bind_timeout``), its pods bound together once every claim is (see ``volumebind``)."""
        binder = self.volume_binder
        assert binder is not None
        with self._lock:
            holding = self._planned_under if self._planned else self.writer.holding()
            closed = self._closed
            self._binds_in_flight += len(binds)
            if not closed:
                self._volume_binds += len(binds)
            if self.latency is not None:
                self.latency.decided(b.pod for b in binds)
        if closed:
            for b in binds:
                self._bound(BindOutcome(b, FAILED, "not sent: the port is closed"))
        else:
            mine = {b.pod: pod for b in binds if (pod := pods.get(b.pod)) is not None}
            sent = time.time()
            try:
                binder.submit(
                    binds, mine, holding=holding, done=partial(self._volumes_done, len(binds), sent)
                )
            except Exception as exc:  # not taken: failed, each once
                self._volumes_done(
                    len(binds), sent, [BindOutcome(b, FAILED, error_summary(exc)) for b in binds]
                )
        return self._take_binds()

    def _volumes_done(self, count: int, sent: float, outcomes: list[BindOutcome]) -> None:
        """The volume binder's outcomes of a commit of ``count`` binds handed over at ``sent``."""
        with self._lock:
            self._volume_binds -= count
        for outcome in outcomes:
            if self.latency is not None:  # (its stages: from the pre-bind's start, the wait included)
                self.latency.answered(
                    outcome.bind.pod, sent=sent, answered=time.time(), result=outcome.result
                )
            self._bound(outcome)

    def _staff(self) -> None:
        """A bind was queued (under ``_lock``): an idle worker takes it, else a new worker is started,
        up to ``bind_workers_first``, and past them only while more than ``bind_backlog`` binds wait
        (up to ``bind_workers``). Workers start only as binds outnumber idle
        ones, as an executor's threads do: started all at once, each would open its own connection (a
        TLS handshake, on the operator's and the apiserver's CPU) for the first session's first few
        binds, and the first binds waited behind them (the first bind after ready came later). More
        binds in flight pay only where many wait: a burst of a few hundred went out sooner through 32
        workers than through 128, a backlog of thousands through 128 (docs/operating.md)."""
        settings = self.writer.settings
        running, most = self._staffed, max(1, settings.bind_workers)
        # As bind_workers, at least one; and at most bind_workers: the parser refuses more, but settings
        # made in code with fewer bind workers keep the default first ones.
        first = min(max(1, settings.bind_workers_first), most)
        if running >= first and running < most:
            # Past the first, a backlog starts one whatever idle workers were counted: a worker that
            # finished a bind took the next at once from a deep queue, and is not idle.
            if self._queue.qsize() > settings.bind_backlog:
                self._owe_worker()
            elif self._idle > 0:
                self._idle -= 1
        elif self._idle > 0:
            self._idle -= 1
        elif running < most:
            self._owe_worker()

    def _owe_worker(self) -> None:
        """One more bind worker is called for (under ``_lock``): started by the chain of starts under way,
        else by the caller (:meth:`_first_start`)."""
        self._staffed += 1
        self._owed += 1
        if self._staffed == self.writer.settings.bind_workers:
            log.debug("bind workers: all %d called for, %d binds waiting", self._staffed, self._queue.qsize())

    def _first_start(self) -> int | None:
        """(Under ``_lock``, after ``_staff``.) The number of the worker the caller starts (:meth:`_start`,
        outside the lock): the first one owed when no chain of starts is under way, else None. A
        ``Thread.start()`` waits for the new thread to run: made on the session's thread for each worker,
        a session that handed over many binds waited for every start (its next binds decided that much
        later; docs/benchmarks). Only one is started there; each worker starts the next as it begins
        (:meth:`_start_next`). Taken under the lock that queued the binds:
        :meth:`close` waits for the chain, so a bind queued before it is never left without a worker."""
        if self._starting or not self._owed or self._closed:
            return None
        self._starting = True
        self._owed -= 1
        return self._staffed - self._owed - 1

    def _start_next(self) -> int | None:
        """(Under ``_lock``, first on a new worker.) This worker is listed; the number of the next one
        owed, for it to start, or None: the chain of starts ends (and :meth:`close` may go on)."""
        self._workers.append(threading.current_thread())
        if self._owed and not self._closed:
            self._owed -= 1
            return self._staffed - self._owed - 1
        self._starting = False
        self._lock.notify_all()
        return None

    def _start(self, number: int) -> None:
        """Start bind worker ``number`` (outside ``_lock``). A thread that cannot start ends the chain:
        the workers owed are no longer counted, and the next bind queued calls for them again."""
        try:
            threading.Thread(target=self._work, name=f"volsched-bind_{number}", daemon=True).start()
        except Exception:
            log.exception("cannot start bind worker %d", number)
            with self._lock:
                self._staffed -= self._owed + 1
                self._owed = 0
                self._starting = False
                self._lock.notify_all()

    def _work(self) -> None:
        with self._lock:
            number = self._start_next()
        if number is not None:  # before its first bind: the chain's starts do not wait for binds
            self._start(number)
        while (item := self._queue.get()) is not None:
            bind, pod, holding, pending = item
            if pending is not None:  # sent already: its answer is read, closed or not
                outcome = self._answer(bind, pending, holding)
            elif self._closed:  # closed while it waited: not sent, and said so
                outcome = BindOutcome(bind, FAILED, "not sent: the port is closed")
            else:
                outcome = self._send(bind, pod, holding)
            self._bound(outcome, idle=True)

    def _send_here(self, bind: Bind, pod: Raw | None, holding: float | None) -> None:
        """A lone pod's bind sent on the session's thread; its answer read here if it begins within
        :data:`INLINE_PATIENCE`, else left to a worker (the session's thread goes back to its events)."""
        sent = time.time()
        try:
            outcome = self._bind_one(bind, pod, holding, patience=INLINE_PATIENCE)
        except Detached as left:
            with self._lock:
                first: int | None = None
                left_to_worker = not self._closed  # (closed: no worker takes it; read here)
                if left_to_worker:
                    self._queue.put((bind, pod, holding, left.pending))
                    self._staff()
                    self._sent_at[bind.pod] = sent
                    self.binds_left_to_workers += 1
                    first = self._first_start()
            if left_to_worker:
                if first is not None:
                    self._start(first)
                return
            outcome = self._answer(bind, left.pending, holding, sent=sent)
            self._bound(outcome)
            return
        if self.latency is not None:
            self.latency.answered(bind.pod, sent=sent, answered=time.time(), result=outcome.result)
        self._bound(outcome)

    def _answer(
        self, bind: Bind, pending: Pending, holding: float | None, *, sent: float | None = None
    ) -> BindOutcome:
        """The outcome of a bind sent on the session's thread whose answer was left (:meth:`_send_here`)."""
        if sent is None:
            with self._lock:
                sent = self._sent_at.pop(bind.pod, math.nan)
        try:
            outcome = self.writer.bind_answered(bind, pending, holding=holding)
        except Exception as exc:  # as in _bind_one
            outcome = BindOutcome(bind, FAILED, error_summary(exc))
        if self.latency is not None:
            self.latency.answered(bind.pod, sent=sent, answered=time.time(), result=outcome.result)
        return outcome

    def _send(self, bind: Bind, pod: Raw | None, holding: float | None) -> BindOutcome:
        if self.latency is None:
            return self._bind_one(bind, pod, holding)
        sent = time.time()
        outcome = self._bind_one(bind, pod, holding)
        self.latency.answered(bind.pod, sent=sent, answered=time.time(), result=outcome.result)
        return outcome

    def _bind_one(
        self, bind: Bind, pod: Raw | None, holding: float | None, *, patience: float | None = None
    ) -> BindOutcome:
        """One bind through the writer (the Lease renewed first when due); with ``patience``, its answer
        not begun within it raises :class:`Detached`."""
        try:
            if self.writer.fence is not None:
                self.writer.fence.renew_if_due()  # a batch is what is sent between two renewals
            outcome = self.writer.bind(bind, pod, holding=holding, patience=patience)
        except Detached:
            raise
        except Exception as exc:  # the writer returns API errors as outcomes; anything else is a failure
            outcome = BindOutcome(bind, FAILED, error_summary(exc))
        return outcome

    def _bound(self, outcome: BindOutcome, *, idle: bool = False) -> None:
        """A bind's outcome; ``idle``: from a worker, which now waits for the next bind (counted in the
        same step, so a bind handed over once this outcome is seen finds the worker idle)."""
        with self._lock:
            self._binds_done.append(outcome)
            self._binds_in_flight -= 1
            self._idle += idle
            self._lock.notify_all()
        if outcome.result in _RETRY and self.on_failed is not None:
            self.on_failed()

    def _take_binds(self) -> list[BindOutcome]:
        with self._lock:
            done, self._binds_done = self._binds_done, []
        return done

    @property
    def bind_workers(self) -> int:
        """Bind workers started so far or being started (at most ``bind_workers``; one more only when none
        was idle)."""
        with self._lock:
            return self._staffed

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called: binds handed over from then on come back FAILED, unsent."""
        return self._closed

    @property
    def binds_in_flight(self) -> int:
        with self._lock:
            return self._binds_in_flight

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Raw]) -> list[EvictOutcome]:
        return self.writer.evict_all(evictions, pods)

    def settle(self) -> tuple[list[BindOutcome], list[EvictOutcome]]:
        return self._take_binds(), []

    # --- status ------------------------------------------------------------------------------------------

    def write_status(self, result: SessionResult, feeder: Feeder) -> StatusReport:
        state = feeder.state
        self.session_ended()  # (its status is the last thing a session hands over)
        if self._status is not None and (expected := result.pipelined > 0) != self._binds_expected:
            with self._lock:  # (the newest session says whether binds are to come)
                self._binds_expected = expected
                self._lock.notify_all()
        if not self._status_due(result, feeder):
            # Nothing to write (an arriving pod's session, bound, in a cluster without Queue or PodGroup
            # objects): no job copied out of the cache, handed over and run to find nothing.
            if self._status is None:
                return StatusReport()
            with self._lock:
                done, self._status_done = self._status_done, StatusReport()
            return done
        self.status_jobs += 1
        if self._status is not None:
            with self._lock:
                older = self._status_next_result
            if older is not None:  # (taken meanwhile: its events are written twice, the second refused)
                result = _carried_over(older, result)
        job = partial(
            self._write_status,
            result,
            derived=list(state.last_derived),
            conflicts=dict(state.conflicts),
            volcano_uids=dict(state.volcano_uids),
            queues={name: q.api_group for name, q in list(state.queues.items())},
            podgroups={key: pg.api_group for key, pg in list(state.podgroups.items())},
            uids={key: pg.uid for key, pg in list(state.podgroups.items())},
            pods=feeder.pods(_pods_written_about(result)),  # not a copy of every cached pod
            pods_now=feeder.pods,  # (the nominated nodes' pods, read as they are written)
            extra_events=rejection_events(feeder),
            # Asked by the sweep on the status thread, of the cache as it is then: built only if asked.
            referred=groups_referred_to(feeder) if self.left_behind.due() else None,
        )
        if self._status is None:
            return self._status_job(job)
        with self._lock:
            if self._status_next is None:
                self._next_since = self.writer.clock()
            # A newer session's status replaces one not started yet (its events carried over).
            self._status_next, self._status_next_result = job, result
            self._lock.notify_all()  # (a status thread waiting for held Queue figures takes it)
            if not self._status_running and not self._start_status():
                self._status_next = self._status_next_result = None
            done, self._status_done = self._status_done, StatusReport()
        return done

    def _status_due(self, result: SessionResult, feeder: Feeder) -> bool:
        """Whether this session's status writes may write anything: False only when none is running,
        waiting or owed, and nothing the writes do has anything to do (see
        :meth:`KubeWriter.may_write_status`: the status of an object that exists, a pod's condition, a
        nominated node, an event), nor the PodGroups made for owners, the conflicts reported or the
        pass over PodGroups left behind."""
        with self._lock:
            # (the status thread only waiting to write Queue figures held back writes nothing else)
            running = self._status_running and not self._waiting_held
            if self._status_owed or running or self._status_next is not None:
                return True
        state = feeder.state
        if (
            self.left_behind.due()
            or self.podgroups.would_create(state.last_derived)
            or self.conflicts.would_report(state.conflicts)
            or self.writer.may_write_status(
                result,
                queues=frozenset(),
                podgroups=state.podgroups.keys(),
                extra=bool(feeder.rejected or state.not_verified),
            )
        ):
            return True
        if state.queues.keys().isdisjoint(result.queues):
            return False
        return not self._held_here(result, state)

    def _held_here(self, result: SessionResult, state: ClusterState) -> bool:
        """Whether this session's only writes, Queue statuses that change only their figures within
        their second (every arriving pod changes its queue's ``allocated``), were held back on this
        thread, as the status thread's writes would have held them: then no job is copied out of the
        cache, handed over and run for them. The status thread writes what is held when its time is
        up (started for it, or told of a Queue held anew). Only for a few Queues (their statuses are
        rendered here, on the session's thread) and with a status thread (else nothing is held)."""
        if self._status is None or len(result.queues) > HELD_HERE_QUEUES:
            return False
        queues = {name: q.api_group for name, q in list(state.queues.items())}
        new = self.writer.hold_queue_figures(result, queues=queues)
        if new is None:
            return False
        with self._lock:
            if not self._status_running:
                self._start_status()
            elif new:
                self._lock.notify_all()  # (its time may come first: the status thread looks again)
        return True

    def _start_status(self) -> bool:
        """(Under ``_lock``, none running.) Start the status thread; False when the port is shut down
        (nothing more is written)."""
        assert self._status is not None
        try:
            self._status.submit(self._run_status)
        except RuntimeError:
            return False
        self._status_running = True
        return True

    def _run_status(self) -> None:
        while True:
            with self._lock:
                # Binds first: the apiserver's time goes to what starts pods, and a newer session's
                # status that comes meanwhile replaces this one (written once, not twice).
                since = self._next_since if self._next_since is not None else self.writer.clock()
                self._writes_until = since + self.status_after_binds
                self._expected_until = since + min(self.status_after_binds, self.status_for_pipelined)
                self._wait_for_binds()
                job = self._take_next()
                if job is None and not self._closed:
                    job = self._held_job()
                if job is None:
                    self._status_running = False
                    self._lock.notify_all()
                    return
            report = self._status_job(job)
            with self._lock:
                self._status_done.writes += report.writes
                self._status_done.events += report.events
                self._status_done.errors.extend(report.errors)

    def _held_job(self) -> Callable[[], StatusReport] | None:
        """(Under ``_lock``, no session's status waiting.) The Queue statuses the writer held back
        (their figures only, see ``KubeWriter.queue_status_every``): once their time is up, a job that
        writes them; until then this thread waits, and a session's status that comes meanwhile is
        written first (its Queues' figures with it, or held again). None: nothing held, or closed."""
        while (due := self.writer.held_due()) is not None:
            if self._closed:
                return None
            if self._status_next is not None:
                return self._take_next()
            left = due - self.writer.clock()
            if left <= 0:
                return self._write_held
            self._waiting_held = True
            self._lock.notify_all()  # (``drain`` does not wait for it)
            try:
                self._lock.wait(left)
            finally:
                self._waiting_held = False
        return None

    def _take_next(self) -> Callable[[], StatusReport] | None:
        """(Under ``_lock``.) The session's status to write next, if any, no longer waiting."""
        job, self._status_next, self._status_next_result = self._status_next, None, None
        self._next_since = None
        return job

    def _wait_for_binds(self) -> None:
        """(Under ``_lock``.) Wait while binds are in flight or to come (pods pipelined), or a later
        session runs, until the status job's time is up."""
        if self._binds_due() is not None:
            self.status_held += 1
        while (until := self._binds_due()) is not None:
            self._lock.wait(min(until - self.writer.clock(), _HOLD_SLICE))

    def _binds_due(self) -> float | None:
        """(Under ``_lock``.) Until when the status writes wait for binds (some in flight, or to come, or
        a later session's, running), None when they do not (any more)."""
        if self._closed:
            return None
        now = self.writer.clock()
        if self._binds_in_flight > self._volume_binds and now < self._writes_until:
            return self._writes_until
        if self._session_running and not self._draining and now < self._writes_until:
            self.status_held_for_session += 1
            return self._writes_until
        if self._binds_expected and not self._draining and now < self._expected_until:
            return self._expected_until
        return None

    def _hold_write(self, droppable: bool) -> bool:
        """Called by the writer before each write of a session's status job (the status thread): waits
        while binds are in flight (until the job's time is up), then says whether to send it. Not once
        the port is closed; nor, for a ``droppable`` one (a status, a pod's condition or nominated
        node: not an event), when a newer session's status waits, which writes it as it is then."""
        with self._lock:
            self._wait_for_binds()
            if self._closed:
                return False
            if droppable and self._status_next is not None:
                self.status_dropped += 1
                return False
            return True

    def _write_held(self) -> StatusReport:
        writes, events, errors = self.writer.write_held()
        return StatusReport(writes=writes, events=events, errors=errors)

    def _status_job(self, job: Callable[[], StatusReport]) -> StatusReport:
        """Run one session's status writes (or the held Queue figures); note whether they left something
        for a later session to retry: an error, an event held back, a write the fence refused. The held
        figures alone retry nothing a session owes, so they never clear what one left owed."""
        limited, fenced = self.writer.events.limited, self.writer.fenced
        try:
            report = job()
        except Exception as exc:
            report = StatusReport(errors=[f"status writes: {error_summary(exc)}"])
        owed = bool(report.errors) or self.writer.events.limited != limited or self.writer.fenced != fenced
        with self._lock:
            self._status_owed = owed or (job == self._write_held and self._status_owed)
        return report

    def owes(self) -> bool:
        """Whether something waits that only a session's status writes do: writes the last ones could
        not make (an error, an event held back by its object's rate), writes not finished yet, or a
        pass over the PodGroups an earlier version left behind that is due. (Skipped sessions write
        nothing: see ``volsched.cycle.IdleSkip.owed``.)"""
        with self._lock:
            running = self._status_running and not self._waiting_held  # (held figures go out alone)
            if self._status_owed or running or self._status_next is not None:
                return True
        return self.left_behind.due()

    def _write_status(
        self,
        result: SessionResult,
        *,
        derived: list[Any],
        conflicts: dict[tuple[str, str], str],
        volcano_uids: dict[tuple[str, str], str],
        queues: dict[str, str],
        podgroups: dict[str, str],
        uids: dict[str, str],
        pods: Mapping[str, Raw],
        pods_now: Callable[[Iterable[str] | None], Mapping[str, Raw]] | None = None,
        extra_events: list[tuple[EventTarget, Event]],
        referred: Callable[[str], bool] | None = None,
    ) -> StatusReport:
        errors = self.podgroups.ensure(derived)
        if referred is not None:  # the PodGroups an earlier version left behind, while a pass is due
            errors += self.left_behind.sweep(referred)
        errors += self.conflicts.report(conflicts, volcano_uids)
        writes, events, status_errors = self.writer.write_status(
            result,
            queues=queues,
            podgroups=podgroups,
            uids=uids,
            pods=pods,
            pods_now=pods_now,
            extra_events=extra_events,
            hold=self._hold_write if self.background else None,
        )
        return StatusReport(writes=writes, events=events, errors=errors + status_errors)

    # --- hand-over ---------------------------------------------------------------------------------------

    def drain(self, timeout: float) -> bool:
        """Wait until no bind or status write is in flight or waiting (at most ``timeout`` seconds).
        Call it after the fence closed: what has not started then is refused unsent, FENCED."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._draining = True  # (status writes no longer wait for binds to come: none will)
            self._lock.notify_all()
            # (the status thread waiting only for held Queue figures is not waited for)
            while (
                self._binds_in_flight
                or self._status_next is not None
                or (self._status_running and not self._waiting_held)
            ):
                left = deadline - time.monotonic()
                if left <= 0:
                    self._draining = False
                    return False
                self._lock.wait(left)
            self._draining = False
        return True

    def close(self) -> None:
        """Stop: binds being sent finish; binds still waiting come back FAILED, unsent (each bind handed
        over gets its one outcome); a status write not started is dropped."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()  # (the status thread waiting for held Queue figures stops)
            while self._starting:  # every worker started is listed (the chain stops at the next)
                self._lock.wait()
            workers = list(self._workers)
        for _ in workers:
            self._queue.put(None)
        for worker in workers:
            worker.join()
        if self.volume_binder is not None:
            self.volume_binder.close()
        if self._status is not None:
            self._status.shutdown(wait=True, cancel_futures=True)


def rejection_events(feeder: Feeder) -> list[tuple[EventTarget, Event]]:
    """An event on each object the cache refused, and on each pod whose record it does not take as not
    verified (``admitted.NOT_VERIFIED``; the writer sends each message once)."""
    out = []
    for r in feeder.rejected.copy().values():
        target = EventTarget(r.kind, r.api_version, r.namespace, r.name, r.uid)
        event = Event(kind=r.kind, namespace=r.namespace, name=r.name, reason=REJECTED, message=r.message)
        out.append((target, event))
    state = feeder.state
    for key, message in state.not_verified.copy().items():
        task = state.tasks.get(key)
        if task is None:
            continue
        target = EventTarget("Pod", "v1", task.namespace, task.name, task.uid)
        event = Event(
            kind="Pod", namespace=task.namespace, name=task.name, reason=NOT_VERIFIED, message=message
        )
        out.append((target, event))
    return out
