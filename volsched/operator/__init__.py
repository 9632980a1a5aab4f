"""The volsched operator: watches feed the cache, a session runs every period, volsched.kube writes.

* Every kind the cache holds comes through a :class:`~volsched.kube.watch.ListWatch` of its own (a
  paged listing, then a watch from the listing's resourceVersion, on its own thread and connection):
  Pods and Nodes (pruned as they arrive), namespaces, resourcequotas, priorityclasses,
  persistentvolumes and their claims, queues, podgroups, poddisruptionbudgets. The watch starts where
  the listing ended (nothing deleted in between is missed), and when it must list again (410 Gone,
  after an outage or a compaction) whatever the new listing lacks is handed over as deleted: a budget,
  a Queue or a PodGroup deleted meanwhile never lingers in the cache. Volcano's PodGroups and Queues
  come through a ``ListWatch`` each too, while the cluster serves them: looked for at start and every
  ``session.volcano_check_every`` seconds, so CRDs installed (or removed) later are followed without a
  restart. All feed a :class:`~volsched.cache.feeder.Feeder`, after one full listing, so the first
  session sees the whole cluster. kopf runs the operator's life-cycle (start, login, stop); it watches
  nothing: a kopf watch that lists again after an error hands over no deletion for what vanished.
* Every ``session.period`` seconds, and ``session.min_gap`` after the last one when the cache's doorbell
  rings (a pod of ours arrived; capacity freed while pods wait: :mod:`~volsched.operator.pacing`),
  the leader (a coordination.k8s.io Lease) runs one cycle
  (:func:`~volsched.cycle.run_cycle`, the simulator's too) behind a background
  :class:`~volsched.kube.port.KubePort`: binds are assumed in the cache when decided and handed to the
  port's workers as the session commits each job (the session goes on placing the next), and the
  next session already plans on them; their outcomes are settled by a later
  cycle (a failed bind puts the pod back pending). Status writes go out in the background too.
* The scheduler config is read from a ConfigMap and reloaded when it changes; a bad one is rejected
  with an event and a log line and the last good one stays in force. One loaded between far-apart
  sessions (as the Lease is renewed) rings the doorbell: a session acts on it soon.
* With a ``metrics:`` section, a :class:`~volsched.usagefeed.UsageFeed` polls node usage on its own
  thread and its fresh snapshot goes into the cache right before each session. Pods that shuffle
  evicted keep their owner off the node they left (``ClusterState.moved_off``).
* ``/healthz``, ``/readyz``, ``/metrics`` and the ``/ui`` dashboard (:mod:`volsched.ui`) are served by aiohttp.

This module is the replica's lifecycle (:class:`Operator`: watches, prelist, Lease, the session loop,
shutdown) and :func:`main`. Its parts live beside it: :mod:`~volsched.operator.settings` (the settings
dataclasses and ``volsched run``'s command line), :mod:`~volsched.operator.metrics` (the Prometheus
series), :mod:`~volsched.operator.http` (the HTTP server), :mod:`~volsched.operator.health` (what
healthy and ready mean), :mod:`~volsched.operator.pacing` (when the
next session runs), :mod:`~volsched.operator.reload` (the ConfigMap reload) and
:mod:`~volsched.operator.volcano` (which of Volcano's kinds the cluster serves, and their watches). It decides nothing
itself: the engine schedules, ``volsched.kube`` writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import kopf

from volsched.cache.doorbell import CONFIG, RETRY
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cache.volcano import VOLCANO_GROUP, VOLCANO_PODGROUP, VOLCANO_QUEUE
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
from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import SessionResult
from volsched.framework.registry import placement_gap
from volsched.gate import Gate
from volsched.gcpause import pause_collector, resume_collector
from volsched.kube.client import bearer_token, load_configuration, new_api_client
from volsched.kube.configsource import read_config_map
from volsched.kube.health import ApiHealth, QuietRetries, back_pressure, is_throttled, is_unreachable
from volsched.kube.latency import PodLatency
from volsched.kube.lease import LeaderLease
from volsched.kube.lister import LIST_TIMEOUT, WATCHED, pods_of
from volsched.kube.port import KubePort
from volsched.kube.prune import PRUNERS, prune_pod
from volsched.kube.rest import LeanRest
from volsched.kube.reviews import AccessReviews
from volsched.kube.watch import ApiError, ListWatch
from volsched.kube.writer import KubeWriter
from volsched.model.vocabulary import API_GROUP, QUEUE_FINALIZER
from volsched.operator.admission import Admission, ServiceWebhookServer, parse_service
from volsched.operator.admission import register as register_webhooks
from volsched.operator.health import health_problem, readiness_problem
from volsched.operator.http import HttpServer
from volsched.operator.metrics import Metrics
from volsched.operator.pacing import Pacer, pods_wait
from volsched.operator.reload import ConfigReloader
from volsched.operator.settings import Settings, build_parser, parse_log_levels, settings_from_args
from volsched.operator.volcano import VolcanoKinds
from volsched.redaction import install_log_redaction
from volsched.ui import LiveState
from volsched.usagefeed import UsageFeed

__all__ = ["Operator", "Settings", "main"]

log = logging.getLogger("volsched.operator")

#: Session events that are routine (logged nowhere: the object's event and condition say it all).
ROUTINE_EVENTS = frozenset({"FailedScheduling", "Unschedulable", "Scheduled"})

#: Seconds a thread holds the GIL before one waiting for it is let in (``sys.setswitchinterval``;
#: Python's default is 5 ms). While a session computes, the bind workers and the watch threads need the
#: GIL back after each send and receive: at 5 ms each such wait, a bind's few of them cost more than its
#: round trip. In-process, 64 threads doing loopback round trips beside one thread computing made 53-64%
#: more round trips at 1 ms than at 5 ms, their p90 7.3-14 -> 2.6-4.3 ms, the computing thread's
#: progress within the noise.
SWITCH_INTERVAL = 0.001
#: Seconds before a Queue's finalizer is written again after a write failed.
GUARD_RETRY = 60.0
#: The many (pruned as they arrive): their events wait until the few other kinds are in the cache.
LEAN_KINDS = ("Node", "Pod")


# --- the operator ----------------------------------------------------------------------------------------


class Operator:
    """One scheduler replica. ``await run(stop)``; everything it writes goes through ``self.writer``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # Connections for the bind workers, the writer's own (status, evictions, events) and the reads.
        self.kcfg = load_configuration(settings.kubeconfig, pool_size=settings.writer.pool_size())
        self.api = new_api_client(self.kcfg)
        #: Reads at start and between sessions (the ConfigMap, discovery, listings) as plain JSON on the
        #: client's pooled connections: the client's typed APIs would import their models first.
        self.reads = LeanRest(self.api, direct=False)
        self.state = ClusterState(scheduler_names=settings.scheduler_names)
        self.feeder = Feeder(self.state, assume_ttl=settings.session.assume_ttl)
        settings.lease.normalise()
        self.health = ApiHealth()
        self.lease = LeaderLease(self.api, settings.lease, settings.identity, health=self.health)
        settings.writer.scheduler_names = settings.scheduler_names
        self.writer = KubeWriter(
            self.api,
            settings.writer,
            fence=self.lease if settings.lease.enabled else None,
            health=self.health,
        )
        #: Binds and status writes go out in the background: a session never waits on the network. A bind
        #: that fails there rings the doorbell for a retry: the pod is placed again soon (about a second
        #: later, see Pacer.retry_gap), not a period later, and not in a loop every min_gap.
        #: Where each pod's time goes, at DEBUG on ``volsched.latency`` (see its module).
        self.latency = PodLatency()
        self.port = KubePort(
            self.writer,
            background=True,
            on_failed=lambda: self.state.doorbell.ring(RETRY),
            latency=self.latency if self.latency.on else None,
        )
        self.podgroup_creator = self.port.podgroups
        #: Every kind of ``WATCHED`` (Volcano's are in ``self.volcano``): listed and watched on its own
        #: thread, with its own connection (the writer's pool stays free for writes); Pods and Nodes
        #: pruned as they arrive.
        self.watch_api = new_api_client(self.kcfg)
        self.lean = {
            k.kind: ListWatch(
                self.watch_api,
                k,
                on_event=self._lean_handler(k.kind),
                prune=PRUNERS.get(k.kind),
                health=self.health,
                announce_recovery=False,  # the Lease, read every second, says when it answers again
            )
            for k in WATCHED
        }
        #: Set once the other kinds are in the cache: pods wait for it (their priorities need the
        #: PriorityClasses, which would otherwise re-parse every pod listed so far).
        self._prelisted = threading.Event()
        #: Volcano's kinds the cluster serves, each listed and watched on its own thread.
        self.volcano = VolcanoKinds(
            reads=self.reads,
            new_watch=lambda kind, on_event: ListWatch(
                self.watch_api, kind, on_event=on_event, health=self.health, announce_recovery=False
            ),
            session=settings.session,
            on_event=self.handle_event,
        )
        self.metrics = Metrics()
        self.usage = UsageFeed(
            self.state, registry=self.metrics.registry, api_client_factory=lambda: new_api_client(self.kcfg)
        )
        config = settings.config
        self.reloader = ConfigReloader(
            config,
            health=self.health,
            writer=self.writer,
            reloads=self.metrics.reloads,
            read=lambda at_start: read_config_map(
                self.reads, config.namespace, config.name, config.key, at_start=at_start
            ),
            on_load=lambda loaded: self.usage.configure(loaded.metrics),
        )
        # A poll read behind the sessions found another version: a session loads it and acts on it.
        self.reloader.on_fetched = lambda: self.state.doorbell.ring(CONFIG)
        self.last_tick = 0.0
        self.synced = threading.Event()
        #: Monotonic time the last consistent read of the pods was sent (prelist or catch-up).
        self.pods_read_at = 0.0
        #: Set by :func:`main`: the event SIGTERM/SIGINT set (re-installed over kopf's handlers).
        self._signal_stop: asyncio.Event | None = None
        self._kopf_started = asyncio.Event()
        self.sessions = 0
        #: Skips sessions that would decide nothing new (none with ``session.max_idle`` 0).
        self.idle = (
            IdleSkip(max_idle=settings.session.max_idle, owed=self.port.owes)
            if settings.session.max_idle > 0
            else None
        )
        self.last_result: SessionResult | None = None
        #: The last session left pods of ours waiting (:func:`~volsched.operator.pacing.pods_wait`):
        #: capacity freeing calls for a session then.
        self.waiting = False
        #: The processor time (the session thread's CPU seconds) the last cycle took: the pacer's gap.
        self.session_cpu: float | None = None
        self.ui = LiveState()  # what the /ui dashboard shows
        #: Queue name -> when its finalizer is tried again after a failed write (monotonic).
        self._guard_failed: dict[str, float] = {}
        self._problems: dict[str, str] = {}
        self.http = HttpServer(
            settings.http,
            liveness=self._liveness,
            readiness=self._readiness,
            notice=lambda: placement_gap(self.reloader.config),
            registry=self.metrics.registry,
            ui=self.ui,
            gate=Gate(AccessReviews(self.reads) if settings.http.auth == "kubernetes" else None),
        )
        self.metrics.ready.set_function(lambda: 0.0 if self._readiness() else 1.0)
        self.metrics.dashboard_builds.set_function(lambda: float(self.ui.builds))
        self.registry = self._build_registry()
        if settings.webhook.port:
            register_webhooks(
                self.registry,
                Admission(self.state, scheduler_names=settings.scheduler_names),
                fail_open=settings.webhook.fail_open,
            )

    # --- watches -----------------------------------------------------------------------------------------

    def _build_registry(self) -> kopf.OperatorRegistry:
        registry = kopf.OperatorRegistry()

        @kopf.on.startup(registry=registry)
        async def started(**_: Any) -> None:
            self._kopf_started.set()

        @kopf.on.login(registry=registry)
        def login(**_: Any) -> kopf.ConnectionInfo:
            cfg = self.kcfg
            return kopf.ConnectionInfo(
                server=cfg.host,
                ca_path=cfg.ssl_ca_cert,
                insecure=not cfg.verify_ssl,
                username=cfg.username or None,
                password=cfg.password or None,
                scheme="Bearer" if bearer_token(cfg) else None,
                token=bearer_token(cfg),
                certificate_path=cfg.cert_file,
                private_key_path=cfg.key_file,
            )

        return registry

    def handle_event(self, kind: str, type_: str | None, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if kind == "Pod" and self.latency.on:
            self._trace_pod(type_, meta, obj.get("spec") or {})
        if type_ == "DELETED":
            self.feeder.delete(kind, obj)
            self.writer.forget(kind, str(meta.get("uid") or ""))  # conditions and events written to it
        else:
            self.feeder.apply(kind, obj)
        if kind in ("PodGroup", "Queue", VOLCANO_PODGROUP, VOLCANO_QUEUE) and type_ in ("ADDED", "DELETED"):
            ns = meta.get("namespace")
            key = f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))
            self.writer.forget("Queue" if kind in ("Queue", VOLCANO_QUEUE) else "PodGroup", key)
            if kind == "PodGroup" and type_ == "DELETED":
                self.podgroup_creator.forget(key)
        if kind in ("Queue", VOLCANO_QUEUE):  # events go to the object in force under the name
            name = str(meta.get("name"))
            self.writer.queue_uid(name, self.state.queue_uid(name))

    def _trace_pod(self, type_: str | None, meta: dict[str, Any], spec: dict[str, Any]) -> None:
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if type_ == "DELETED":
            self.latency.gone(key)
        elif not spec.get("nodeName") and spec.get("schedulerName") in self.settings.scheduler_names:
            self.latency.saw(key)

    def _lean_handler(self, kind: str) -> Callable[[str, dict[str, Any]], None]:
        if kind not in LEAN_KINDS:  # one of the few: into the cache at once

            def handle(type_: str, obj: dict[str, Any]) -> None:
                self.handle_event(kind, type_, obj)

            return handle

        def on_event(type_: str, obj: dict[str, Any]) -> None:
            while not self._prelisted.wait(0.5):
                if self.lean[kind].stopped:
                    return
            self.handle_event(kind, type_, obj)

        return on_event

    def start_watches(self) -> None:
        """Watch every kind (Volcano's too) from where :meth:`prelist` listed it, each on its own thread."""
        for w in (*self.lean.values(), *self.volcano.started()):
            w.start()

    def stop_watches(self) -> None:
        # A session still running (stuck at shutdown) changes or starts no more.
        watches = (*self.lean.values(), *self.volcano.stopped())
        for w in watches:  # every one told first, then each waited for: twelve threads stuck in a read
            w.stop(timeout=0)  # wait out one timeout together, not one after another
        for w in watches:
            w.stop()

    def prelist(self) -> None:
        """Read every watched kind once, all at once, so the first session sees the whole cluster (every
        node, every bound pod): each kind's :meth:`ListWatch.relist`, which its watch then follows from
        (nothing changed in between is missed). Everything streams into the cache page by page as it is
        listed; Pods and Nodes wait for the other kinds, few (a PriorityClass applied after the pods
        would parse them all again)."""
        started = time.monotonic()
        # The listing allocates millions of objects, none of them in a reference cycle: collections
        # meanwhile free nothing and cost a third of its CPU. Once listed, what the cache holds lives
        # long: frozen, later collections do not walk it again (replaced objects are still freed).
        # Paused through the counted section a snapshot or a YAML load on another thread shares: turned
        # back on here under one of them, the collector would scan the heap that one is building.
        pause_collector()
        try:
            self._prelist()
        finally:
            resume_collector()
        gc.freeze()
        self.pods_read_at = started
        self.synced.set()
        log.info(
            "cache synced: %d nodes, %d pods, %d podgroups, %d queues",
            len(self.state.nodes), len(self.state.raw_pods), len(self.state.podgroups), len(self.state.queues),
        )  # fmt: skip

    def _prelist(self) -> None:
        """Every kind's first listing at once. The few kinds go into the cache as they stream in, Pods
        and Nodes once the few are in (``_prelisted``). A listing that fails the start (anything but a
        CRD not installed, or Volcano's) fails it as soon as it does: the other listings are stopped at
        once (a page on its way given up), not waited for to the end (the pods' may take a minute on a
        large cluster)."""
        from concurrent.futures import ThreadPoolExecutor, as_completed

        many = [w for w in self.lean.values() if w.kind.kind in LEAN_KINDS]
        few = [w for w in self.lean.values() if w.kind.kind not in LEAN_KINDS]
        volcano = list(self.volcano.watches.values())
        every = (*many, *few, *volcano)
        pool = ThreadPoolExecutor(len(every), thread_name_prefix="volsched-list")
        failed = True
        try:
            lean = {pool.submit(w.first_list): w for w in many}  # wait for _prelisted to hand over
            lists = {pool.submit(w.first_list): w for w in (*few, *volcano)}  # into the cache at once
            waiting = set(lists)
            if not waiting:
                self._prelisted.set()
            for future in as_completed((*lists, *lean)):
                w = lists.get(future) or lean[future]
                try:
                    future.result()
                except Exception as exc:  # its watch lists again when started
                    if future not in lists:
                        raise
                    if w.kind.group == VOLCANO_GROUP:
                        log.warning("listing Volcano %s failed (%s); retrying", w.kind.plural, exc)
                    elif isinstance(exc, ApiError) and exc.status == 404:  # a CRD not installed
                        log.warning(
                            "%s are not served by this cluster (is the CRD installed?)", w.kind.plural
                        )
                    else:
                        raise
                waiting.discard(future)
                if not waiting:
                    self._prelisted.set()
            failed = False
        finally:
            self._prelisted.set()  # the pods' listing is not left waiting
            if failed:
                for w in every:
                    w.stop(timeout=0)  # each listing ends now, a page on its way given up
            pool.shutdown(wait=not failed, cancel_futures=failed)

    # --- config ------------------------------------------------------------------------------------------

    @property
    def config(self) -> SchedulerConfig:
        """The scheduler config in force (see :class:`~volsched.operator.reload.ConfigReloader`)."""
        return self.reloader.config

    def reload_config(self, *, force: bool = False) -> bool:
        """Load the ConfigMap when its resourceVersion changed; keep the last good config on errors.
        Returns whether a new config is in force."""
        return self.reloader.reload(force=force)

    # --- sessions ----------------------------------------------------------------------------------------

    def catch_up(self) -> bool:
        """After taking the Lease over: read our pods from the apiserver, so binds the previous leader made
        just before it let go count even when the watch has not delivered them yet. Returns whether it
        read them all: it runs on the session thread, and never holds it past what the Lease allows.
        The listing comes in pages, the Lease renewed between them when due; a page's request never
        outlasts the fenced window; a 429 is not waited out (raised: the next session, after renewing,
        reads again). False when the Lease was lost meanwhile (the next holder catches up)."""
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
        log.info("caught up after taking the lease over: %d pods read", read)
        return True

    def _fenced_timeout(self) -> float:
        """A read's timeout on the session thread: never past the Lease's fenced window."""
        return max(0.001, min(LIST_TIMEOUT, self.lease.time_left()))

    def keep_up(self) -> None:
        """A quiet leader between far-apart sessions: what a session does before it runs, without the
        session: the Lease renewed (it would lapse), the ConfigMap and Volcano's CRDs looked at on their
        own schedules (``--volcano-check-every`` holds whatever the period). ``volsched_leader`` says
        what the renewal found, as after a session's. A new config loaded here rings the doorbell: a
        session acts on it soon, not a period later. Blocking: run it in a thread."""
        self.metrics.leader.set(1 if self.lease.ensure() else 0)
        if self.reload_config():
            self.state.doorbell.ring(CONFIG)
        self.volcano.follow()

    def run_once(self) -> tuple[SessionResult, CycleReport] | None:
        """One cycle (only while holding the lease): the session, its writes through the port, the
        outcomes back into the cache; a session that would decide nothing new is skipped (see
        :class:`~volsched.cycle.IdleSkip`: ``report.skipped``, an empty result). Blocking: run it in a
        thread (its CPU time on that thread is ``session_cpu``, for the pacer)."""
        cpu = time.thread_time()
        try:
            return self._run_once()
        finally:
            self.session_cpu = time.thread_time() - cpu

    def _run_once(self) -> tuple[SessionResult, CycleReport] | None:
        leader = self.lease.ensure()
        holding = self.writer.holding()  # the holding of the Lease this session is planned under
        self.metrics.leader.set(1 if leader else 0)
        self.reload_config()
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
        now = time.time()
        self.usage.refresh(now)  # the collector's fresh snapshot (no I/O on this path)
        self.port.plan_under(holding)  # its binds are never sent under a later holding
        self.latency.session()
        report = run_cycle(self.feeder, self.config, self.port, now=now, idle=self.idle)
        self._log_outcomes(report)
        if report.skipped:
            self.metrics.skipped.inc()
            self.metrics.observe_outcomes(report)
            log.debug("session skipped: nothing changed since the last one, which decided nothing")
            return report.result, report
        result = report.result
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
            log.info(
                "session %d: %d to bind, %d bound, %d evicted, %d unschedulable (%.1f ms)",
                self.sessions, len(result.binds), report.count(BOUND), report.evicted(),
                len(result.unschedulable_pods), 1000 * result.timings.get("session", 0.0),
            )  # fmt: skip
        return result, report

    def _guard_queues(self, result: SessionResult) -> None:
        """Our Queues carry :data:`QUEUE_FINALIZER` (added to one that lacks it); a Queue being deleted
        keeps it, Closing, while jobs still hold it, and loses it once the session found it Closed
        (none left): then the apiserver deletes it. Volcano's Queues are left alone."""
        if not self.lease.is_leader:
            return
        now = time.monotonic()
        for q in list(self.state.queues.values()):
            if q.api_group != API_GROUP or self._guard_failed.get(q.name, 0.0) > now:
                continue
            guarded = QUEUE_FINALIZER in q.finalizers
            if not q.deleting and not guarded:
                error = self.writer.guard_queue(q.name, q.finalizers, keep=True)
            elif (
                q.deleting
                and guarded
                and (s := result.queues.get(q.name)) is not None
                and s.state == "Closed"
            ):
                error = self.writer.guard_queue(q.name, q.finalizers, keep=False)
                if error is None:
                    log.info("Queue %s: no job holds it any more; its deletion goes ahead", q.name)
            else:
                continue
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
            if ev.result == BLOCKED:
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

    async def _take_signals_back(self) -> None:
        """kopf installs its own SIGTERM/SIGINT handlers as it starts (just before its startup handlers run);
        they would stop the watches, for seconds, before the Lease is released. Take them back: ours set
        ``stop``, which hands the Lease over first and then stops kopf."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._kopf_started.wait(), timeout=60)
        await asyncio.sleep(0.05)
        if self._signal_stop is not None and threading.current_thread() is threading.main_thread():
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self._signal_stop.set)

    async def session_loop(self, stop: asyncio.Event) -> None:
        """A session every period while leading, and sooner when the cache's doorbell rings (a pod of
        ours arrived; capacity freed while pods wait), at least ``session.min_gap`` after the last one
        ended (see :class:`~volsched.operator.pacing.Pacer`). One session at a time; ``stop`` ends the
        wait at once. A follower reads the Lease every ``lease.retry_every`` and runs its first session
        as soon as it acquires it; the doorbell does not call it. A leader waiting longer than
        ``lease.renew_every`` (a period longer than that) renews the Lease meanwhile, without a session,
        so a quiet leader never lets it lapse between sessions (:meth:`keep_up`). A bind whose outcome
        is unknown keeps its pod assumed for ``session.assume_ttl``: when that ends between sessions,
        the loop lets the assumption go then (the pod waits again, and the doorbell rings)."""
        s = self.settings.session
        pacer = Pacer(period=s.period, min_gap=s.min_gap)
        loop = asyncio.get_running_loop()
        nudge = asyncio.Event()  # a hint to look again: the doorbell itself says what rang

        def rang() -> None:  # on a watch thread
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
                loop.call_soon_threadsafe(nudge.set)

        bell = self.state.doorbell
        bell.listen(rang)
        try:
            while not stop.is_set():
                started = time.monotonic()
                bell.take()  # what rings from now on calls for the next session
                self.session_cpu = None  # unknown, should the cycle not get to measure it
                try:
                    await asyncio.to_thread(self.run_once)
                except Exception as exc:
                    if is_unreachable(exc):
                        self.health.failed("session", exc)
                    else:
                        log.exception("session failed; the next one runs in %.1fs", s.period)
                self.last_tick = ended = time.monotonic()
                while not stop.is_set():
                    nudge.clear()  # before peeking: a ring after the peek sets it again
                    # An unknown bind's time to live over: its pod waits again, and the doorbell rings.
                    if (expiry := self.feeder.unsure_expiry_in()) <= 0:
                        self.feeder.expire()
                        expiry = self.feeder.unsure_expiry_in()
                    leader = self.lease.is_leader
                    wait = pacer.next_wait(
                        started=started,
                        ended=ended,
                        now=time.monotonic(),
                        rings=bell.peek(),
                        waiting=self.waiting,
                        leader=leader,
                        retry_every=self.settings.lease.retry_every,
                        busy=self.session_cpu,
                    )
                    if wait <= 0:
                        if leader and time.monotonic() < started + s.period:
                            self.metrics.woken.inc()
                        break
                    wait = min(wait, max(expiry, 0.0))  # looked at again when the first one expires
                    renew = self.settings.lease.renew_every
                    if leader and wait > renew:  # a long wait: keep the Lease meanwhile, no session
                        await _first_of(stop, nudge, timeout=renew)
                        if not stop.is_set():
                            await asyncio.to_thread(self.keep_up)
                            self.last_tick = time.monotonic()  # alive between far-apart sessions
                    else:
                        await _first_of(stop, nudge, timeout=wait)
        finally:
            bell.listen(None)

    @property
    def http_port(self) -> int | None:
        """The port /healthz, /metrics and /ui are served on (known once ``run`` started serving)."""
        return self.http.port

    def _liveness(self) -> str | None:
        # The loop ticks after each session and, while a leader waits for a session further off than
        # that, at least every lease.renew_every (a follower every lease.retry_every, within the period).
        return health_problem(
            synced=self.synced.is_set(),
            last_tick=self.last_tick,
            period=min(self.settings.session.period, self.settings.lease.renew_every),
            now=time.monotonic(),
        )

    def _readiness(self) -> str | None:
        c = self.settings.config
        return readiness_problem(
            liveness=self._liveness(),
            config_read=self.reloader.known,
            config=f"ConfigMap {c.namespace}/{c.name}: {self.reloader.unread}",
            rejected=self.reloader.standing_in,
        )

    # --- lifecycle ---------------------------------------------------------------------------------------

    def kopf_settings(self) -> kopf.OperatorSettings:
        s = kopf.OperatorSettings()
        s.posting.enabled = False  # kopf's own events; ours go through volsched.kube
        s.scanning.disabled = True  # no CRD/namespace scanning: fewer permissions
        s.watching.server_timeout = 300
        s.watching.client_timeout = 330
        s.networking.request_timeout = 60
        # kopf watches nothing (every kind comes through volsched.kube.watch). Should it call the API, it
        # retries a failed call soon and then every second (kopf's default waits up to 21 s between
        # attempts), as long in total as kopf's default (about a minute): an apiserver that answers 5xx
        # while it starts must not exhaust them.
        s.networking.error_backoffs = (0.2, 0.4, 0.8, *([1.0] * 60))
        w = self.settings.webhook
        if w.port:
            # Only with webhooks: cryptography costs a few hundred ms of import at every start.
            from volsched.operator.certs import from_dir, self_signed

            service = parse_service(w.service) if w.service else None
            url_host = f"{service[1]}.{service[0]}.svc" if service else (w.url_host or w.host)
            certs = from_dir(Path(w.cert_dir)) if w.cert_dir else self_signed([url_host, w.host])
            server_type = kopf.WebhookServer if service is None else ServiceWebhookServer.of(service)
            s.admission.server = server_type(
                addr=w.host,
                port=w.port,
                host=url_host,
                certfile=str(certs.certfile),
                pkeyfile=str(certs.pkeyfile),
                cafile=str(certs.cafile),
            )
            s.admission.managed = "volsched.io"  # kopf keeps the webhook configurations of this name
        return s

    async def _hand_over(self, sessions: asyncio.Task[None] | None) -> None:
        """On shutdown, first: stop writing, let the writes in flight end, release the Lease at once.

        Bounded: the session and the writes in flight get one deadline together (the lease duration and a
        second: every call's timeout ends before the Lease can expire), the release
        :data:`~volsched.kube.lease.RELEASE_WITHIN` after it; with the default 15 s lease that is 21 s at
        most, inside the pod's default 30 s grace period."""
        self.lease.stop_writing()  # every write not yet sent is refused from now on
        if sessions is not None:
            # In-flight calls time out before the Lease can expire; a session stuck longer keeps the
            # Lease (it then expires on its own) rather than letting a successor write beside it.
            limit = self.settings.lease.duration + 1.0
            deadline = time.monotonic() + limit
            try:
                await asyncio.wait_for(asyncio.shield(sessions), timeout=limit)
            except (TimeoutError, asyncio.CancelledError):
                log.warning("a session still runs after %.0fs; not releasing the lease", limit)
                return
            except Exception:
                pass
            # Binds and status writes still in flight end (or come back fenced, unsent) first.
            if not await asyncio.to_thread(self.port.drain, max(0.0, deadline - time.monotonic())):
                log.warning("writes still in flight after %.0fs; not releasing the lease", limit)
                return
        await asyncio.to_thread(self.lease.release)

    async def run(self, stop: asyncio.Event) -> None:
        await self.http.start()
        kopf_stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        tasks: list[asyncio.Task[None]] = []
        sessions: asyncio.Task[None] | None = None
        signals: asyncio.Task[None] | None = None
        try:
            await asyncio.to_thread(self.lease.ensure)  # before the listing: it is fresh for the lease
            await asyncio.to_thread(self.reload_config, force=True)  # failed: retried before each session
            await asyncio.to_thread(self.volcano.discover)
            await asyncio.to_thread(self.prelist)
            self.start_watches()
            tasks.append(
                asyncio.create_task(
                    kopf.operator(
                        registry=self.registry,
                        settings=self.kopf_settings(),
                        standalone=True,
                        clusterwide=True,
                        stop_flag=kopf_stop,
                    )
                )
            )
            # Created before kopf's first step: kopf cancels the tasks created after it started, on its exit.
            sessions = asyncio.create_task(self.session_loop(stop))
            tasks.append(sessions)
            signals = asyncio.create_task(self._take_signals_back())
            done_wait = asyncio.create_task(stop.wait())
            await asyncio.wait([done_wait, *tasks], return_when=asyncio.FIRST_COMPLETED)
            done_wait.cancel()
            for t in tasks:
                if t.done() and t.exception() is not None:
                    log.error("operator task ended: %r", t.exception())
        finally:
            log.info("stopping (%s)", "signal" if stop.is_set() else "a task ended")
            stop.set()
            self.health.closing()  # what fails from now on is our own shutdown, not an outage
            if signals is not None:
                signals.cancel()
            await self._hand_over(sessions)
            if not kopf_stop.done():
                kopf_stop.set_result(None)
            for t in tasks:
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                    await asyncio.wait_for(t, timeout=10)
            await asyncio.to_thread(self.stop_watches)
            await asyncio.to_thread(self.usage.close)
            await self.http.stop()
            self.port.close()
            self.writer.close()
            self.api.close()  # type: ignore[no-untyped-call]
            self.watch_api.close()  # type: ignore[no-untyped-call]


async def _first_of(*events: asyncio.Event, timeout: float) -> None:
    """Wait until one of ``events`` is set, or ``timeout`` seconds."""
    waits = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(argv or [])
    if argv[:1] == ["--"]:
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    if args.period <= 0:
        print("volsched run: --period must be > 0", flush=True)
        return 2
    if args.min_gap < 0:
        print("volsched run: --min-gap must be >= 0", flush=True)
        return 2
    levels = parse_log_levels(str(args.log_level))
    logging.basicConfig(level=levels.pop(""), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kopf").setLevel(logging.WARNING)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    install_log_redaction()  # no credential reaches the log, whoever logs it
    sys.setswitchinterval(SWITCH_INTERVAL)
    settings = settings_from_args(args)
    operator = Operator(settings)
    quiet = QuietRetries(operator.health)
    for handler in logging.getLogger().handlers:
        handler.addFilter(quiet)

    async def amain() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        operator._signal_stop = stop
        await operator.run(stop)

    asyncio.run(amain())
    return 0
