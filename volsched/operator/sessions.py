"""The session loop: when a session runs (:class:`~volsched.pacing.Pacer` answers), each cycle
run (:func:`~volsched.cycle.run_cycle` behind the port, under the Lease), and what it leaves behind (the
loop's last tick, which ``/healthz`` reads to tell a stalled loop; the metrics; the dashboard's state).

:class:`SessionLoop` decides nothing itself (the engine does) and owns none of its collaborators: the
operator builds them and hands them in. Between far-apart sessions it only keeps the Lease, the
ConfigMap and Volcano's kinds current (:meth:`SessionLoop.keep_up`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable

from volsched.cache.doorbell import CONFIG
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cycle import (
    BLOCKED,
    BOUND,
    CONFLICT,
    EVICTED,
    FENCED,
    GONE,
    SKIPPED,
    UNKNOWN,
    CycleReport,
    IdleSkip,
    run_cycle,
)
from volsched.framework.decisions import SessionResult
from volsched.framework.messages import render_eviction
from volsched.framework.registry import PluginsAhead, make_plugins_ahead
from volsched.kube.health import ApiHealth, back_pressure, is_throttled, is_unreachable
from volsched.kube.latency import PodLatency
from volsched.kube.lease import LeaderLease
from volsched.kube.lister import LIST_TIMEOUT, pods_of
from volsched.kube.port import KubePort
from volsched.kube.prune import prune_pod
from volsched.kube.recordkey import KeyKeeper
from volsched.kube.rest import LeanRest
from volsched.kube.writer import KubeWriter
from volsched.model.vocabulary import API_GROUP, QUEUE_FINALIZER, QueueSpec
from volsched.operator.aside import Activity
from volsched.operator.metrics import Metrics
from volsched.operator.reload import ConfigReloader
from volsched.operator.settings import Settings
from volsched.operator.volcano import VolcanoKinds
from volsched.pacing import Pacer, pods_wait
from volsched.redaction import redact
from volsched.threadslice import ask_short_slice
from volsched.ui import LiveState
from volsched.usagefeed import UsageFeed

__all__ = ["Nudge", "SessionLines", "SessionLoop"]

log = logging.getLogger("volsched.operator")

#: Session events that are routine (logged nowhere: the object's event and condition say it all).
ROUTINE_EVENTS = frozenset({"FailedScheduling", "Unschedulable", "Scheduled"})

#: Seconds before a Queue's finalizer is written again after a write failed.
GUARD_RETRY = 60.0


class Nudge:
    """A flag the session thread waits on and the watch threads set (``set``, ``clear``, ``wait``, as
    :class:`threading.Event`), made of one bare lock held while the flag is clear: setting it is one
    release, and the thread waiting for it returns from one acquire. An Event goes through a Condition:
    a dozen Python calls on each side and a second lock the woken thread takes again, on an arriving
    pod's way to its session, where each costs many times its warm cost after a wait. For one waiting
    thread at a time."""

    __slots__ = ("_clear",)

    def __init__(self) -> None:
        self._clear = threading.Lock()
        self._clear.acquire()

    def set(self) -> None:
        try:  # noqa: SIM105 (not contextlib.suppress: a context manager's calls on the pod's way)
            self._clear.release()
        except RuntimeError:  # set already
            pass

    def clear(self) -> None:
        self._clear.acquire(blocking=False)

    def is_set(self) -> bool:
        return not self._clear.locked()

    def wait(self, timeout: float) -> bool:
        """Until it is set, at most ``timeout`` seconds (not at all when 0 or less); whether it is. It
        stays set."""
        if timeout > 0:
            taken = self._clear.acquire(timeout=min(timeout, threading.TIMEOUT_MAX))
        else:
            taken = self._clear.acquire(blocking=False)
        if taken:  # taken to see that it was set: set again (a set() meanwhile did already)
            self.set()
        return taken


#: Seconds at least between two INFO lines that tell routine sessions (see :class:`SessionLines`).
ROUTINE_LINE_EVERY = 10.0

_SESSION_LINE = "session %d: %d to bind, %d bound, %d evicted, %d unschedulable (%.1f ms)"


class SessionLines:
    """The INFO line of each session that bound or evicted, written so that a steady stream of arriving
    pods does not cost a line each: a *routine* session (every bind outcome it settled was bound, nothing
    evicted) has its own line only when no line was written for
    ``every`` seconds (the first pod after a quiet spell); the routine sessions after it are counted,
    their own lines at DEBUG, and told in one INFO line (``sessions A-B: ...``, their sums and their
    fastest and slowest session) once ``every`` seconds have passed since the last line, at the next
    session or :meth:`tick`. Any other session (an eviction, a bind that failed or is unknown) has its
    own line at once, after the count of the routine sessions before it.

    A line costs the session thread CPU after the wait for a pod (the record, the redaction, the
    format, the write): a line per arriving pod was a share of what the pod costs worth saving
    (docs/operating.md)."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        every: float = ROUTINE_LINE_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log, self.every, self.clock = logger, every, clock
        self._last = -math.inf  # when the last INFO line was written
        self._first = self._latest = 0
        self._sessions = self._to_bind = self._bound = self._unschedulable = 0
        self._fastest, self._slowest = math.inf, 0.0

    def session(
        self,
        number: int,
        *,
        to_bind: int,
        bound: int,
        evicted: int,
        unschedulable: int,
        ms: float,
        routine: bool,
    ) -> None:
        """Session ``number`` bound or evicted something (its figures)."""
        now = self.clock()
        if routine and (self._sessions or now - self._last < self.every):
            if not self._sessions:
                self._first = number
            self._latest = number
            self._sessions += 1
            self._to_bind += to_bind
            self._bound += bound
            self._unschedulable += unschedulable
            self._fastest, self._slowest = min(self._fastest, ms), max(self._slowest, ms)
            self.log.debug(_SESSION_LINE, number, to_bind, bound, evicted, unschedulable, ms)
            if now - self._last >= self.every:
                self._tell(now)
            return
        if self._sessions:
            self._tell(now)
        self.log.info(_SESSION_LINE, number, to_bind, bound, evicted, unschedulable, ms)
        self._last = now

    def tick(self) -> None:
        """The routine sessions counted, told if their line is due."""
        if self._sessions and self.clock() - self._last >= self.every:
            self._tell(self.clock())

    def _tell(self, now: float) -> None:
        first, latest = self._first, self._latest
        self.log.info(
            "sessions %s: %d to bind, %d bound, 0 evicted, %d unschedulable (%d sessions, %.1f-%.1f ms)",
            f"{first}-{latest}" if latest != first else first,
            self._to_bind, self._bound, self._unschedulable, self._sessions, self._fastest, self._slowest,
        )  # fmt: skip
        self._last = now
        self._sessions = self._to_bind = self._bound = self._unschedulable = 0
        self._fastest, self._slowest = math.inf, 0.0


class _Turns:
    """What the session thread and the pod watch's thread share to run sessions one at a time: the lock a
    session (or a renewal between sessions) holds, on whichever of the two runs it; when the last session
    started and ended; and whether the pod watch's thread rang the doorbell and owes the decision of who
    runs the session it called for (:meth:`offer`, once its event is in the cache).

    An arriving pod's session runs on the pod watch's thread itself when that thread rang for it, the
    pacer calls for a session at once, the last session found at most one job to place (``sparse``), this
    replica leads (a follower's reads of the Lease, and the catching up after it takes the Lease over,
    stay the session thread's), the ConfigMap and Volcano's kinds are not due a look
    (:meth:`SessionLoop.chores_due`: a config loaded, API discovery, a watch stopped, which held the pod
    watch up to seconds, stay the session thread's too) and none is running: the session thread, woken, would
    have taken the processor and the interpreter from
    that thread for the same session, a wake-up and a hand-over of the GIL later. Anything else wakes the
    session thread as before. An arriving pod's session is the first since a pod arrived (the doorbell
    calls its listener only as a kind goes from quiet to rung): it places that pod and what waited
    already, so the pod watch is not held for long, and the bind it sends alone goes out on that
    thread's own connection (opened as the watch starts: :meth:`SessionLoop.pod_thread_started`)."""

    def __init__(self, loop: SessionLoop, *, halt: threading.Event, nudge: Nudge) -> None:
        self.loop = loop
        self.halt = halt
        self.nudge = nudge
        s = loop.settings.session
        self.pacer = Pacer(period=s.period, min_gap=s.min_gap)
        #: Held while a session runs (or the Lease is renewed between sessions), on either thread.
        self.running = threading.Lock()
        self.started = self.ended = 0.0
        #: Whether the pod watch's thread is running a session now (a ring of that session's own wakes
        #: the session thread, as any other thread's does).
        self.inline_now = False
        #: That thread rang and has not offered yet (see :meth:`offer`).
        self.owed = False
        #: The first session has run (the session thread's connection is opened after it).
        self.connected = False
        #: When the builder was last brought up to date between sessions (:meth:`ahead`), and whether the
        #: pod watch's thread has woken the session thread for that since (:meth:`fell_behind`).
        self.ahead_ended = 0.0
        self.ahead_asked = False

    def wait(self, now: float) -> float:
        """(Holding ``running``) Seconds until the next session, as the pacer answers: 0 to run it now."""
        loop = self.loop
        return self.pacer.next_wait(
            started=self.started,
            ended=self.ended,
            now=now,
            rings=loop.state.doorbell.peek(),
            waiting=loop.waiting,
            leader=loop.lease.is_leader,
            retry_every=loop.settings.lease.retry_every,
            busy=loop.session_cpu,
            sparse=loop.sparse,
        )

    def session(self, *, woken: bool) -> None:
        """(Holding ``running``) One session: what rang so far is its to act on. ``woken``: called for by
        the doorbell (counted when before the period)."""
        loop = self.loop
        started = time.monotonic()
        if woken and loop.lease.is_leader and started < self.started + loop.settings.session.period:
            loop.metrics.woken.inc()
        self.started = started
        loop.state.doorbell.take()  # what rings from now on calls for the next session
        loop.session_cpu = None  # unknown, should the cycle not get to measure it
        loop.latency.calling()
        loop.activity.begin()
        try:
            loop.run_once()
        except Exception as exc:
            if is_unreachable(exc):
                loop.health.failed("session", exc)
            else:
                log.exception("session failed; the next one runs in %.1fs", loop.settings.session.period)
        finally:
            loop.activity.end()
            loop.last_tick = self.ended = time.monotonic()

    def ahead(self, now: float) -> float:
        """(Holding ``running``, on the session thread about to wait for the next session) The next
        snapshot's work for the tasks that changed since the last one (the pod a session bound, shown
        bound and running) done now (``ClusterState.build_ahead``), so that the pod arriving next has a
        snapshot of its own change alone to build. Only while this replica leads and no session is owed
        (nothing rang: that session's snapshot does it), and ``min_gap`` after the last session or such
        work ended at the earliest (a stream of pod events costs a few of these a second, as it costs
        sessions, not one an event). Returns the seconds until it is due (``inf``: none called for,
        or done now). A failure is logged: the next snapshot reads the cache whole."""
        loop = self.loop
        state = loop.state
        if self.halt.is_set() or not loop.lease.is_leader or not state.behind() or state.doorbell.peek():
            self.ahead_asked = False  # (looked at: a change from now on asks again)
            return math.inf
        due = max(self.ended, self.ahead_ended) + loop.settings.session.min_gap
        if now < due:
            return due - now
        self.ahead_asked = False  # (before the view is taken: a change after it asks again)
        try:
            state.build_ahead()
        except Exception:
            log.exception(
                "bringing the next snapshot up to date between sessions failed; it reads the cache whole"
            )
        self.ahead_ended = time.monotonic()
        return math.inf

    def fell_behind(self) -> None:
        """On the pod watch's thread after an event that called for no session (or once the session it
        called for ran there): when the cache changed since the last snapshot, the session thread is woken
        to do that snapshot's work ahead (:meth:`ahead`), once until it has."""
        if self.ahead_asked or self.owed or not self.loop.state.behind():
            return
        self.ahead_asked = True
        self.nudge.set()

    def rang(self) -> None:
        """The doorbell went from quiet to rung (on the thread that rang it): the session thread is woken,
        unless the pod watch's thread rang while handing an event over (it offers first: :meth:`offer`)."""
        if threading.get_ident() == self.loop.inline_thread and not self.inline_now:
            self.owed = True
        else:
            self.nudge.set()

    def offer(self) -> None:
        """On the pod watch's thread once an event is in the cache: when that event rang, the session it
        called for runs here now if it may (see the class), else the session thread is woken for it."""
        if not self.owed or threading.get_ident() != self.loop.inline_thread:
            return
        self.owed = False
        if not self.running.acquire(blocking=False):
            self.nudge.set()  # a session (or its pacing) under way: that thread looks again after it
            return
        ran = False
        try:
            loop = self.loop
            now = time.monotonic()
            if (
                not self.halt.is_set()
                and loop.sparse
                and loop.lease.is_leader
                and not loop.chores_due(now)
                and self.wait(now) <= 0
            ):
                self.inline_now = True
                try:
                    self.session(woken=True)
                finally:
                    self.inline_now = False
                ran = True
        finally:
            self.running.release()
        if not ran:
            self.nudge.set()


class SessionLoop:
    """``await run(stop)``: a session every period while leading, sooner when the doorbell rings."""

    def __init__(
        self,
        settings: Settings,
        *,
        state: ClusterState,
        feeder: Feeder,
        reads: LeanRest,
        lease: LeaderLease,
        writer: KubeWriter,
        port: KubePort,
        health: ApiHealth,
        reloader: ConfigReloader,
        volcano: VolcanoKinds,
        usage: UsageFeed,
        latency: PodLatency,
        metrics: Metrics,
        ui: LiveState,
        keeper: KeyKeeper | None = None,
    ) -> None:
        self.settings = settings
        self.state = state
        self.feeder = feeder
        self.reads = reads
        self.lease = lease
        self.writer = writer
        self.port = port
        self.health = health
        self.reloader = reloader
        self.volcano = volcano
        self.usage = usage
        self.latency = latency
        self.metrics = metrics
        self.ui = ui
        #: The records' key Secret's keeper: what a follower found owed, the leader puts back.
        self.keeper = keeper
        #: Monotonic time the loop last ticked (after each session, and each renewal between far-apart ones).
        self.last_tick = 0.0
        #: Monotonic time the last consistent read of the pods was sent (prelist or catch-up).
        self.pods_read_at = 0.0
        #: Monotonic time the cache's pods were last looked at for disruption targets an earlier holder of
        #: the Lease left (:meth:`withdraw_stale`): once a holding, before its first session (0: never).
        self.targets_looked_at = 0.0
        self.sessions = 0
        #: Skips sessions that would decide nothing new (none with ``session.max_idle`` 0).
        self.idle = (
            IdleSkip(max_idle=settings.session.max_idle, owed=port.owes)
            if settings.session.max_idle > 0
            else None
        )
        self.last_result: SessionResult | None = None
        #: The last session left pods of ours waiting (:func:`~volsched.pacing.pods_wait`):
        #: capacity freeing calls for a session then.
        self.waiting = False
        #: The processor time (the session thread's CPU seconds) the last cycle took: the pacer's gap.
        self.session_cpu: float | None = None
        #: The last session that ran found at most one job to place (the pacer's ``sparse``).
        self.sparse = False
        #: The plugins of a config made after the last session, for the next one if its config is the
        #: same object: made while this thread's caches are warm from the session it just ran, not on the
        #: next arriving pod's way to its bind after the thread waited (fresh objects: the same decisions).
        self._plugins_ahead: PluginsAhead | None = None
        #: Queue name -> when its finalizer is tried again after a failed write (monotonic).
        self._guard_failed: dict[str, float] = {}
        #: A session on the pod watch's thread found a Queue's finalizer to write, left to the session
        #: thread (:meth:`_guard_queues`).
        self._guard_owed = False
        self._problems: dict[str, str] = {}
        #: Busy from a pod's arrival (the doorbell) or a session's start to the session's end: what the
        #: imports after ready step aside for (:mod:`~volsched.operator.aside`).
        self.activity = Activity()
        #: The sessions' INFO lines (routine ones counted between lines).
        self.lines = SessionLines(log)
        #: The pod watch's thread (:meth:`pod_thread_started`): an arriving pod's session may run there.
        self.inline_thread: int | None = None
        #: Who runs the next session, while :meth:`run` runs.
        self._turns: _Turns | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """A session every period while leading, and sooner when the cache's doorbell rings (a pod of
        ours arrived; capacity freed while pods wait), at least ``session.min_gap`` after the last one
        ended (see :class:`~volsched.pacing.Pacer`). One session at a time; ``stop`` ends the
        wait at once. A follower reads the Lease every ``lease.retry_every`` and runs its first session
        as soon as it acquires it; the doorbell does not call it. A leader waiting longer than
        ``lease.renew_every`` (a period longer than that) renews the Lease meanwhile, without a session,
        so a quiet leader never lets it lapse between sessions (:meth:`keep_up`). A bind whose outcome
        is unknown keeps its pod assumed for ``session.assume_ttl``: when that ends between sessions,
        the loop lets the assumption go then (the pod waits again, and the doorbell rings).

        The loop, its waits and its sessions run on one thread of their own (``volsched-sessions``),
        which the doorbell wakes directly from the watch thread that rang it: a session used to be
        called through the event loop and handed to a pooled thread, two wake-ups before an arriving
        pod's session began, and its lone bind went out on whichever pooled thread's connection. An
        arriving pod's session may run on the pod watch's thread itself, still one session at a time
        (:class:`_Turns`). This coroutine only waits for ``stop`` (or the thread's end) and then for the
        thread, and for a session on the pod watch's thread."""
        loop = asyncio.get_running_loop()
        halt = threading.Event()  # stop, as the thread sees it
        nudge = Nudge()  # a hint to look again: the doorbell itself says what rang
        turns = _Turns(self, halt=halt, nudge=nudge)
        ended: asyncio.Future[object] = loop.create_future()

        def finish(exc: BaseException | None) -> None:  # on the loop
            if not ended.done():
                if exc is None:
                    ended.set_result(None)
                else:
                    ended.set_exception(exc)

        def sessions() -> None:
            outcome: BaseException | None = None
            if self.settings.session.thread_slice:  # an arriving pod's session runs here
                ask_short_slice(self.settings.session.thread_slice)
            try:
                _session_loop(self, turns=turns)
            except BaseException as exc:  # the loop's own failure ends run(), as it did on the loop
                outcome = exc
            with contextlib.suppress(RuntimeError):  # the event loop closed: nobody waits any more
                loop.call_soon_threadsafe(finish, outcome)

        def turn_taken() -> None:  # a session running on the pod watch's thread ends first
            with turns.running:
                pass

        bell = self.state.doorbell
        activity = self.activity
        stamp = self.latency.rang if self.latency.on else None
        wake = turns.rang

        def rang() -> None:  # on the watch thread that rang
            if stamp is not None:
                stamp()
            activity.begin()
            wake()

        self._turns = turns
        bell.listen(rang)
        thread = threading.Thread(target=sessions, name="volsched-sessions", daemon=True)
        thread.start()
        stopped: asyncio.Future[object] = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait((stopped, ended), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            halt.set()
            nudge.set()
            bell.listen(None)
            self._turns = None
            await asyncio.to_thread(thread.join)  # a session running ends first (hand-over waits for it)
            await asyncio.to_thread(turn_taken)
        if ended.done() and ended.exception() is not None:
            raise ended.exception()  # type: ignore[misc]

    def pod_thread_started(self) -> None:
        """Called first on the pod watch's thread: an arriving pod's session may run there (see
        :class:`_Turns`), its lone bind sent on that thread's own connection, opened now (before the
        watch's first event, not by the first arriving pod's bind). Only a direct connection is the
        thread's own (aiohttp's client, when the configuration needs it, is no thread's)."""
        self.inline_thread = threading.get_ident()
        if getattr(self.writer.rest, "direct", False):
            self.writer.connect_ahead()

    def after_pod_event(self) -> None:
        """Called on the pod watch's thread after each event (or listing's page) it handed over, outside
        every lock: the session that event called for runs here if it may (:meth:`_Turns.offer`); else,
        the cache changed, the session thread does the next snapshot's work ahead
        (:meth:`_Turns.fell_behind`)."""
        turns = self._turns
        if turns is not None:
            turns.offer()
            turns.fell_behind()

    def catch_up(self) -> bool:
        """After taking the Lease over: read our pods from the apiserver, so binds the previous leader made
        just before it let go count even when the watch has not delivered them yet. Returns whether it
        read them all: it runs on the session thread, and never holds it past what the Lease allows.
        The listing comes in pages, the Lease renewed between them when due; a page's request never
        outlasts the fenced window; a 429 is not waited out (raised: the next session, after renewing,
        reads again). False when the Lease was lost meanwhile (the next holder catches up).
        Read them all, the plugins' carryover from an earlier holding is dropped: the first session
        starts from what the cluster says, as a freshly started replica's does (another leader may have
        nominated pods, reserved or evicted meanwhile)."""
        started = time.monotonic()
        read = 0
        for name in sorted(self.settings.scheduler_names):
            for page in pods_of(self.reads, name, timeout=self._fenced_timeout):
                for obj in page:  # older than what the watch gave: dropped by resourceVersion
                    self.feeder.apply("Pod", prune_pod(obj))
                read += len(page)
                if not self.lease.renew_if_due():
                    log.info("lost the lease while catching up (%d pods read); not scheduling", read)
                    return False
        self.pods_read_at = started
        self.state.carryover = {}
        log.info("caught up after taking the lease over: %d pods read", read)
        return True

    def withdraw_stale(self) -> None:
        """At the start of a holding of the Lease: the pods a scheduler marked as disruption targets and
        that are not being deleted, in the cache once it read them all, were told of an eviction that did
        not happen (the holder before stopped in between, or its eviction failed): each is told so now
        (:meth:`KubeWriter.withdraw_stale`), not minutes later by the disruption controller."""
        self.targets_looked_at = time.monotonic()
        done = self.writer.withdraw_stale(self.feeder.pods().values())
        if done:
            log.info("%d pod(s) marked for an eviction that did not happen told they were not evicted", done)

    def withdraw_unsettled(self) -> None:
        """The pods marked as disruption targets whose eviction's outcome was not known (its answer lost,
        or not sent for the fence), looked at again now that it is: those still there, marked and not
        being deleted are told they were not evicted (:meth:`KubeWriter.withdraw_unsettled`)."""
        done = self.writer.withdraw_unsettled()
        if done:
            log.info(
                "%d pod(s) marked for an eviction whose outcome was unknown told they were not evicted", done
            )

    def _fenced_timeout(self) -> float:
        """A read's timeout on the session thread: never past the Lease's fenced window."""
        return max(0.001, min(LIST_TIMEOUT, self.lease.time_left()))

    def keep_up(self) -> None:
        """A quiet leader between far-apart sessions: what a session does before it runs, without the
        session: the Lease renewed (it would lapse), the ConfigMap and Volcano's CRDs looked at on their
        own schedules (``--volcano-check-every`` holds whatever the period), the records' key Secret
        put back if owed (:meth:`_mend_keys`). ``volsched_leader`` says
        what the renewal found, as after a session's. A new config loaded here rings the doorbell: a
        session acts on it soon, not a period later. Blocking: run it in a thread."""
        leader = self.lease.ensure()
        self.metrics.leader.set(1 if leader else 0)
        if self.reloader.reload():
            self.state.doorbell.ring(CONFIG)
        self.volcano.follow()
        if leader:
            self._mend_keys()

    def _mend_keys(self) -> None:
        """The records' key Secret put back where the keeper found it owed (deleted or changed while
        this replica did not lead, or a write that failed: :meth:`KeyKeeper.due`)."""
        if self.keeper is not None and self.keeper.due():
            self.keeper.mend()

    def chores_due(self, now: float) -> bool:
        """Whether the next session would do more before it runs than look at the clock: judge or read
        the ConfigMap (:meth:`ConfigReloader.due`), look for Volcano's kinds (:meth:`VolcanoKinds.due`),
        put the records' key Secret back (:meth:`KeyKeeper.due`), or, after it, write a Queue's finalizer that a session on the pod watch's thread left owed
        (:meth:`_guard_queues`), or look for disruption targets left before this holding of the Lease
        (:meth:`withdraw_stale`) or whose eviction's outcome is known by now
        (:meth:`KubeWriter.withdraw_unsettled`). Such a session runs on the session thread, never on the
        pod watch's (:class:`_Turns`)."""
        return (
            self._guard_owed
            or (self.keeper is not None and self.keeper.due())
            or self.reloader.due(now)
            or self.volcano.due(now)
            or self._targets_due()
            or self.writer.unsettled_due()
        )

    def _targets_due(self) -> bool:
        """Whether this holding of the Lease has not looked for disruption targets yet (without a Lease,
        ``--no-lease``, never acquired: whether the replica never looked)."""
        if not self.settings.lease.enabled:
            return not self.targets_looked_at
        return self.lease.acquired_at > self.targets_looked_at

    def run_once(self) -> tuple[SessionResult, CycleReport] | None:
        """One cycle (only while holding the lease): the session, its writes through the port, the
        outcomes back into the cache; a session that would decide nothing new is skipped (see
        :class:`~volsched.cycle.IdleSkip`: ``report.skipped``, an empty result). Blocking: run it in a
        thread (its CPU time on that thread is ``session_cpu``, for the pacer)."""
        self.latency.woke()
        cpu = time.thread_time()
        try:
            return self._run_once()
        finally:
            self.session_cpu = time.thread_time() - cpu
            self.lines.tick()  # the routine sessions counted, told when due: after the session's bind

    def _run_once(self) -> tuple[SessionResult, CycleReport] | None:
        leader = self.lease.ensure()
        holding = self.writer.holding()  # the holding of the Lease this session is planned under
        self.metrics.leader.set(1 if leader else 0)
        turns = self._turns
        if turns is None or not turns.inline_now:  # (not on the pod watch's thread: see chores_due)
            self.reloader.reload()
            self.volcano.follow()
        if not leader or not self.reloader.known:  # never a session under a config not the user's
            return None
        if self.lease.acquired_at > self.pods_read_at:
            try:
                if not self.catch_up():
                    return None
            except Exception as exc:
                if not back_pressure(self.health, throttled=is_throttled(exc)):
                    raise
                log.info(
                    "catching up after taking the lease over: throttled (429); reading again next session"
                )
                return None
        if self._targets_due():
            self.withdraw_stale()
        if turns is None or not turns.inline_now:
            self._mend_keys()
        if (turns is None or not turns.inline_now) and self.writer.unsettled_due():
            self.withdraw_unsettled()
        now = time.time()
        self.usage.refresh(now)  # the collector's fresh snapshot (no I/O on this path)
        config = self.reloader.config
        # Its binds are never sent under a later holding. From here on the port holds the status writes
        # handed over before for this session: whatever ends it, raising too, says it ended.
        self.port.plan_under(holding)
        try:
            self.latency.session()
            plugins, self._plugins_ahead = self._plugins_ahead, None  # (the session checks their config)
            report = run_cycle(self.feeder, config, self.port, now=now, idle=self.idle, plugins=plugins)
        finally:
            self.port.session_ended()  # (status writes held for it go on: skipped or failed too)
            self._plugins_ahead = make_plugins_ahead(config)
        self._log_outcomes(report)
        if report.skipped:
            self.metrics.skipped.inc()
            self.metrics.observe_outcomes(report)
            log.debug("session skipped: nothing changed since the last one, which decided nothing")
            return report.result, report
        result = report.result
        self.sparse = report.sparse
        self.latency.session_done(result.timings, binds=len(result.binds))
        self.waiting = pods_wait(result)
        self._log_problems(result)
        for error in [] if self.health.down else report.errors[:5]:
            log.warning("%s", error)
        fenced = report.count(FENCED) + report.evicted(FENCED)
        if fenced or not self.lease.is_leader:
            log.warning(
                "stopped writing: not sure this replica still holds the lease (%d binds/evictions not sent)",
                fenced,
            )
        self.metrics.observe(result, report)
        self._guard_queues(result)
        self.ui.record(result, report)
        self.sessions += 1
        self.last_result = result
        if result.binds or report.binds or report.evictions:
            to_bind, bound = len(result.binds), report.count(BOUND)
            self.lines.session(
                self.sessions,
                to_bind=to_bind,
                bound=bound,
                evicted=report.evicted(),
                unschedulable=len(result.unschedulable_pods),
                ms=1000 * result.timings.get("session", 0.0),
                routine=bound == len(report.binds) and not report.evictions,
            )
        return result, report

    def _guard_queues(self, result: SessionResult) -> None:
        """Our Queues carry :data:`QUEUE_FINALIZER` (added to one that lacks it); a Queue being deleted
        keeps it, Closing, while jobs still hold it, and loses it once the session found it Closed
        (none left): then the apiserver deletes it. Volcano's Queues are left alone. After a session on
        the pod watch's thread the writes are owed instead (``_guard_owed``, a chore: see
        :meth:`chores_due`): the session thread's next session makes them, the pod watch not held meanwhile."""
        if not self.lease.is_leader:
            return
        now = time.monotonic()
        writes: list[tuple[QueueSpec, bool]] = []
        for q in list(self.state.queues.values()):
            if q.api_group != API_GROUP or self._guard_failed.get(q.name, 0.0) > now:
                continue
            guarded = QUEUE_FINALIZER in q.finalizers
            if not q.deleting and not guarded:
                writes.append((q, True))
            elif (
                q.deleting
                and guarded
                and (s := result.queues.get(q.name)) is not None
                and s.state == "Closed"
            ):
                writes.append((q, False))
        turns = self._turns
        if turns is not None and turns.inline_now:
            self._guard_owed = bool(writes)
            return
        self._guard_owed = False
        for q, keep in writes:
            error = self.writer.guard_queue(q.name, q.finalizers, keep=keep)
            if error is None and not keep:
                log.info("Queue %s: no job holds it any more; its deletion goes ahead", q.name)
            if error is not None:
                self._guard_failed[q.name] = now + GUARD_RETRY  # not again every session
                if not self.health.down:
                    log.warning("%s (again in %.0fs)", error, GUARD_RETRY)

    def _log_outcomes(self, report: CycleReport) -> None:
        """A line for each bind or eviction that did not go as decided (the cycle has corrected the
        cache); failures are not news while the apiserver is known to be down."""
        for outcome in report.binds:
            b = outcome.bind
            if outcome.result == GONE:
                log.info("bind %s -> %s: pod is gone", b.pod, b.node)
            elif outcome.result == CONFLICT:
                log.info("bind %s -> %s: conflict (%s); cache corrected", b.pod, b.node, outcome.detail)
            elif outcome.result == UNKNOWN:
                log.info(
                    "bind %s -> %s: kept assumed until the watch shows it (%s)", b.pod, b.node, outcome.detail
                )
            elif outcome.result not in (BOUND, SKIPPED, FENCED) and not self.health.down:
                log.warning("bind %s -> %s failed: %s", b.pod, b.node, outcome.detail)
        for ev in report.evictions:
            if ev.eviction.deletes and ev.result == EVICTED:
                # Past a disruption budget: which one, and why, in the decision's words.
                log.info("evict %s: %s", ev.eviction.pod, redact(render_eviction(ev.eviction)))
            elif ev.result == BLOCKED:
                log.info("evict %s: blocked by a PodDisruptionBudget (%s)", ev.eviction.pod, ev.detail)
            elif ev.result == UNKNOWN:
                log.info("evict %s: the watch will tell (%s)", ev.eviction.pod, ev.detail)
            elif ev.result not in (EVICTED, GONE, CONFLICT, SKIPPED, FENCED) and not self.health.down:
                log.warning("evict %s failed: %s", ev.eviction.pod, ev.detail)

    def _log_problems(self, result: SessionResult) -> None:
        """One log line when an object the session could not use (a pod whose PodGroup is missing)
        appears or its reason changes; its event and condition are the writer's."""
        now = {e.object: f"{e.reason}: {e.message}" for e in result.events if e.reason not in ROUTINE_EVENTS}
        for obj, why in sorted(now.items()):
            if self._problems.get(obj) != why:
                log.warning("%s: %s", obj, why)
        self._problems = now


def _session_loop(self: SessionLoop, *, turns: _Turns) -> None:
    """:meth:`SessionLoop.run`'s loop, on its own thread: a session at once, then each one when the pacer
    calls for it (its wait cut short by the nudge), until ``halt``; an arriving pod's session may run on
    the pod watch's thread meanwhile (:class:`_Turns`): each wait's answer is asked again after it."""
    halt, nudge = turns.halt, turns.nudge
    first = True
    while not halt.is_set():
        renew = 0.0  # > 0: a long wait, the Lease renewed after it
        with turns.running:  # a session on the pod watch's thread ends first
            if halt.is_set():
                break
            nudge.clear()  # before peeking: a ring after the peek sets it again
            # An unknown bind's time to live over: its pod waits again, and the doorbell rings.
            if (expiry := self.feeder.unsure_expiry_in()) <= 0:
                self.feeder.expire()
                expiry = self.feeder.unsure_expiry_in()
            wait = 0.0 if first else turns.wait(time.monotonic())
            if wait <= 0:
                turns.session(woken=not first)
                first = False
                if not turns.connected:
                    # This thread sends a lone bind itself (``KubePort.bind``): its connection is opened
                    # now, after the first session, not by the first arriving pod's bind (a TLS handshake).
                    self.writer.connect_ahead()
                    turns.connected = True
                continue
            wait = min(wait, max(expiry, 0.0))  # looked at again when the first one expires
            # The next snapshot's work for what changed since the last, done while nothing waits for it.
            wait = min(wait, turns.ahead(time.monotonic()))
            if self.lease.is_leader and wait > self.settings.lease.renew_every:
                renew = self.settings.lease.renew_every  # keep the Lease meanwhile, no session
        if renew:
            nudge.wait(renew)
            if not halt.is_set():
                with turns.running:
                    self.keep_up()
                    self.last_tick = time.monotonic()  # alive between far-apart sessions
        else:
            nudge.wait(wait)
