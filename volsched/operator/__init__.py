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
  session sees the whole cluster. kopf serves the admission webhooks when they are on (neither imported
  nor run without them); it watches nothing: a kopf watch that lists again after an error hands over no
  deletion for what vanished.
* Every ``session.period`` seconds, and ``session.min_gap`` after the last one when the cache's doorbell
  rings (a pod of ours arrived; capacity freed while pods wait: :mod:`~volsched.pacing`),
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
* ``/healthz``, ``/readyz``, ``/metrics`` and the ``/ui`` dashboard (:mod:`volsched.ui`) are served by aiohttp,
  imported after ready at the sessions' first lull, stepping aside while they work
  (:mod:`~volsched.operator.aside`); until then the standard library's server answers the health checks.

This module is the wiring and the replica's lifecycle (:class:`Operator`: builds the collaborators,
the imports after ready, kopf's start and stop with the webhooks, shutdown) and :func:`main`. Its parts live beside it, one job each:
:mod:`~volsched.operator.settings` (the settings dataclasses and ``volsched run``'s command line),
:mod:`~volsched.operator.watches` (the watch feed: every kind's watch into the cache, the first
listing), :mod:`~volsched.operator.sessions` (the session loop: pacing, the
cycles, the last tick a stalled loop shows), :mod:`~volsched.pacing` (when the next session
runs), :mod:`~volsched.operator.volcano` (which of Volcano's kinds the cluster serves, and their
watches), :mod:`~volsched.operator.reload` (the ConfigMap reload), :mod:`~volsched.operator.health`
(what healthy and ready mean), :mod:`~volsched.operator.http` (the HTTP server),
:mod:`~volsched.operator.metrics` (the Prometheus series), :mod:`~volsched.operator.admission` (the
webhooks), :mod:`~volsched.operator.kopfrun` (kopf's start, login and settings; the signal handlers
taken back from it) and :mod:`~volsched.operator.aside` (the imports after ready). It decides nothing
itself: the engine schedules, ``volsched.kube`` writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from volsched.cache.doorbell import CONFIG, RETRY
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cache.volcano import VOLCANO_GROUP
from volsched.framework.config import SchedulerConfig
from volsched.framework.registry import placement_gap
from volsched.gate import Gate
from volsched.gcpause import freeze_all, pause_collector, resume_collector
from volsched.kube import early, tlsahead
from volsched.kube.client import bearer_token, library_api_client, load_configuration, new_api_client
from volsched.kube.configsource import CONFIG_MAP, name_selector, read_config_map
from volsched.kube.health import ApiHealth, QuietRetries
from volsched.kube.latency import PodLatency
from volsched.kube.lease import LeaderLease
from volsched.kube.podgroups import fit_to_rights
from volsched.kube.port import KubePort
from volsched.kube.recordkey import SECRETS, KeyKeeper
from volsched.kube.rest import LeanRest
from volsched.kube.reviews import AccessReviews, self_may
from volsched.kube.tlsahead import DefaultContexts
from volsched.kube.watch import ListWatch
from volsched.kube.writer import KubeWriter
from volsched.model.errors import InputError
from volsched.model.vocabulary import API_GROUP
from volsched.operator.admission import Admission
from volsched.operator.aside import LONGEST_PAUSE, import_aside, lull_for, until_idle
from volsched.operator.health import health_problem, readiness_problem
from volsched.operator.http import HttpServer
from volsched.operator.metrics import Metrics
from volsched.operator.reload import ConfigReloader
from volsched.operator.sessions import SessionLoop
from volsched.operator.settings import (
    Settings,
    build_parser,
    parse_log_levels,
    parse_service,
    settings_from_args,
)
from volsched.operator.volcano import VolcanoKinds
from volsched.operator.watches import WRITTEN_KINDS, WatchFeed
from volsched.records import make_ahead
from volsched.redaction import error_summary, install_log_redaction
from volsched.threadslice import ask_short_slice
from volsched.ui import LiveState
from volsched.usagefeed import UsageFeed

if TYPE_CHECKING:
    import kopf

    from volsched.kube.secret import SecretStore
    from volsched.model.admitted import RecordKeys
    from volsched.operator.certs import SharedCerts

__all__ = ["Operator", "Settings", "main"]

log = logging.getLogger("volsched.operator")

#: Seconds a thread holds the GIL before one waiting for it is let in (``sys.setswitchinterval``;
#: Python's default is 5 ms). While a session computes, the bind workers and the watch threads need the
#: GIL back after each send and receive: at 5 ms each such wait, a bind's few of them cost more than its
#: round trip. In-process, threads doing loopback round trips beside one thread computing made more of
#: them, sooner, at the shorter interval, and the computing thread lost nothing measurable
#: (``bench/gil_switch.py``; the figures: docs/benchmarks/2026-11-29.md).
SWITCH_INTERVAL = 0.001
#: Seconds between reads of the webhook certificates' shared Secret (``--webhook-cert-secret``).
CERTS_CHECK_EVERY = 30.0


# --- the operator ----------------------------------------------------------------------------------------


class Operator:
    """One scheduler replica. ``await run(stop)``; everything it writes goes through ``self.writer``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # Connections for the bind workers, the writer's own (status, evictions, events) and the reads.
        #: The Pods' and Nodes' first pages, asked for at the process's start (``volsched run``), and the
        #: configuration they were read with; else the configuration is read here.
        claimed = early.claim(settings.kubeconfig)
        self.early_listed_at: float | None = None
        if claimed is not None:
            self.kcfg, early_listings, self.early_listed_at = claimed
            self.kcfg.connection_pool_maxsize = max(settings.writer.pool_size(), 4)
        else:
            self.kcfg = load_configuration(settings.kubeconfig, pool_size=settings.writer.pool_size())
            early_listings = {}
        self.api = new_api_client(self.kcfg)
        #: Set once the cache is synced and aiohttp imported (:meth:`run`): until then the reads, the
        #: Lease and the listings go over the direct path (http.client), aiohttp's client from then on.
        self.aio_ready = threading.Event()
        #: Reads at start and between sessions (the ConfigMap, discovery, listings) as plain JSON on the
        #: client's pooled connections: the client's typed APIs would import their models first.
        self.reads = LeanRest(self.api, direct=False, direct_until=self.aio_ready)
        #: Set when a signal ends the start before the cache is listed (:meth:`_listed_unless`).
        self._start_stopped = threading.Event()
        self.state = ClusterState(scheduler_names=settings.scheduler_names)
        self.feeder = Feeder(self.state, assume_ttl=settings.session.assume_ttl)
        settings.lease.normalise()
        self.health = ApiHealth()
        self.lease = LeaderLease(
            self.api, settings.lease, settings.identity, health=self.health, direct_until=self.aio_ready
        )
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
            cache=self.state,
        )
        #: Every watch (each kind of ``WATCHED``, Volcano's), listed and watched on its own thread, with
        #: its own connection (the writer's pool stays free for writes), feeding the cache.
        self.watch_api = new_api_client(self.kcfg)
        self.feed = WatchFeed(
            api=self.watch_api,
            state=self.state,
            feeder=self.feeder,
            writer=self.writer,
            podgroups=self.port.podgroups,
            health=self.health,
            latency=self.latency,
            scheduler_names=settings.scheduler_names,
            early=early_listings,
            direct_until=self.aio_ready,
            on_pod_thread=self._pod_thread_started,
            volcano=lambda on_event: VolcanoKinds(
                reads=self.reads,
                new_watch=lambda kind, handler: ListWatch(
                    self.watch_api,
                    kind,
                    on_event=handler,
                    health=self.health,
                    announce_recovery=False,
                    direct_until=self.aio_ready,
                ),
                session=settings.session,
                on_event=on_event,
                on_status_subresource=lambda plural, served: self.writer.status_subresource(
                    VOLCANO_GROUP, plural, served=served
                ),
            ),
        )
        self.volcano = self.feed.volcano
        #: Its series made after ready (prometheus_client imported then: :attr:`after_ready`).
        self.metrics = Metrics(
            ready=lambda: 0.0 if self._readiness() else 1.0,
            dashboard_builds=lambda: float(self.ui.builds),
            made_later=True,
        )
        self.usage = UsageFeed(
            self.state,
            registry=lambda: self.metrics.registry,
            api_client_factory=lambda: library_api_client(self.kcfg),
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
        # A poll read behind the sessions, or the watch, found another version: a session loads it and
        # acts on it.
        self.reloader.on_fetched = lambda: self.state.doorbell.ring(CONFIG)
        #: The ConfigMap watched (started once read at start): the reloader polls only while the watch is
        #: not answered (not started, refused, or the apiserver away), not every poll_every throughout.
        self.config_watch = ListWatch(
            self.watch_api,
            CONFIG_MAP,
            on_event=self.reloader.watched,
            health=self.health,
            announce_recovery=False,
            direct_until=self.aio_ready,
            namespace=config.namespace,
            field_selector=name_selector(config.name),
        )
        self.reloader.watching = lambda: self.config_watch.answering
        #: The records' key kept in its Secret while the operator runs (the leader puts it back), and that
        #: Secret's watch (started once the key is read: :meth:`_keep_keys`).
        self.keeper = KeyKeeper(
            leading=lambda: self.lease.is_leader, adopt=self._adopt_keys, tell=self._tell_of_keys
        )
        self.key_watch: ListWatch | None = None
        self.synced = threading.Event()
        #: Set by :func:`main`: the event SIGTERM/SIGINT set (re-installed over kopf's handlers).
        self._signal_stop: asyncio.Event | None = None
        self._kopf_started = asyncio.Event()
        self.ui = LiveState()  # what the /ui dashboard shows
        #: The session loop: pacing, the cycles, what a stalled loop shows (its last tick).
        self.loop = SessionLoop(
            settings,
            state=self.state,
            feeder=self.feeder,
            reads=self.reads,
            lease=self.lease,
            writer=self.writer,
            port=self.port,
            health=self.health,
            reloader=self.reloader,
            keeper=self.keeper,
            volcano=self.volcano,
            usage=self.usage,
            latency=self.latency,
            metrics=self.metrics,
            ui=self.ui,
        )
        # An arriving pod's session may run on the pod watch's thread, once its event is in the cache.
        self.feed.lean["Pod"].after_event = self.loop.after_pod_event
        self.http = HttpServer(
            settings.http,
            liveness=self._liveness,
            readiness=self._readiness,
            notice=lambda: placement_gap(self.reloader.config),
            registry=lambda: self.metrics.registry,
            ui=self.ui,
            gate=Gate(AccessReviews(self.reads) if settings.http.auth == "kubernetes" else None),
        )
        # The Lease's renewal and the ConfigMap's poll, read behind every two seconds as a session starts,
        # wait for the sessions to be quiet first: they shared the interpreter with that session's pod.
        self.lease.wait_quiet = self.reloader.wait_quiet = self.loop.activity.wait_quiet
        #: The webhooks' decisions, when they are served (on kopf's registry, made once kopf is imported:
        #: see :meth:`_kopf_registry`).
        self.admission = (
            Admission(self.state, scheduler_names=settings.scheduler_names) if settings.webhook.port else None
        )
        #: Imported once the cache is synced, at the sessions' first lull (without the webhooks:
        #: :func:`~volsched.operator.aside.until_idle`), stepping aside while they work
        #: (:func:`~volsched.operator.aside.import_aside`): aiohttp (``/metrics``, ``/ui``, the reads'
        #: client), prometheus_client (the series: :class:`~volsched.operator.metrics.Metrics` keeps what
        #: is counted before) and, with the webhooks on, kopf (which serves them; without them kopf has
        #: nothing to do, and neither is imported nor run) and cryptography (the webhooks' certificates).
        self.after_ready: list[str] = ["aiohttp.web", "prometheus_client"]
        #: aiohttp's two default TLS contexts (unused by volsched, made by its import), made on a thread of
        #: their own from ready on, while that import reaches aiohttp's connector, and handed to it
        #: (:mod:`~volsched.kube.tlsahead`).
        self.tls_ahead: DefaultContexts = tlsahead.AHEAD
        if self.admission is not None:
            # kopf, and the certificates' module (cryptography) its settings import
            self.after_ready += ["volsched.operator.kopfrun", "volsched.operator.certs"]

    # --- the first listing ------------------------------------------------------------------------------

    def prelist(self) -> None:
        """The first listing of every watched kind (:meth:`WatchFeed.prelist`); then the cache is synced."""
        started = time.monotonic()
        lease = self.lease
        if (
            self.early_listed_at is not None
            and lease.acquired_at > self.early_listed_at
            and lease.acquired_how != "created"
        ):
            # The Lease taken over from another holder after the pages were asked for: its last writes (binds,
            # PodGroups made, claims allocated) may be missing from them. The kinds it writes are listed
            # now, after the take-over, as without them.
            for kind in WRITTEN_KINDS:
                self.feed.forgo_early(kind)
        self.feed.prelist()
        self.loop.pods_read_at = started
        self.synced.set()
        log.info(
            "cache synced: %d nodes, %d pods, %d podgroups, %d queues",
            len(self.state.nodes), len(self.state.raw_pods), len(self.state.podgroups), len(self.state.queues),
        )  # fmt: skip
        self._say_unverified()

    def _say_unverified(self) -> None:
        """Once, at start: pods whose signed record no key verifies (their Secret deleted and a new key
        made, most likely), each told ``BoundUnderNotVerified`` as well."""
        count = self.state.signed_not_verified()
        if not count:
            return
        namespace, name = self.settings.config.namespace, self.settings.record_key_secret
        why = (
            f"the key Secret {namespace}/{name} was not found and a new key was made at this start: it was "
            "deleted"
            if self.keeper.store is not None and self.keeper.store.made
            else f"the key Secret {namespace}/{name} holds none of the keys they were signed with"
        )
        log.warning(
            "bound-under records: %d pod(s) carry a record signed by a key this scheduler does not hold "
            "(%s): their records are not taken (an orphan among them counts in its namespace's default "
            "queue); put their key back in the Secret (a backup: docs/install.md) and restart to have them taken",
            count, why,
        )  # fmt: skip

    # --- config ------------------------------------------------------------------------------------------

    @property
    def config(self) -> SchedulerConfig:
        """The scheduler config in force (see :class:`~volsched.operator.reload.ConfigReloader`)."""
        return self.reloader.config

    def reload_config(self, *, force: bool = False) -> bool:
        """Load the ConfigMap when its resourceVersion changed; keep the last good config on errors.
        Returns whether a new config is in force."""
        return self.reloader.reload(force=force)

    # --- health ------------------------------------------------------------------------------------------

    @property
    def http_port(self) -> int | None:
        """The port /healthz, /metrics and /ui are served on (known once ``run`` started serving)."""
        return self.http.port

    def _pod_thread_started(self) -> None:
        """First on the pod watch's thread: a short slice asked (``--thread-slice``), and the thread made
        ready to run an arriving pod's session (:meth:`SessionLoop.pod_thread_started`)."""
        if self.settings.session.thread_slice:
            ask_short_slice(self.settings.session.thread_slice)
        self.loop.pod_thread_started()

    def _liveness(self) -> str | None:
        # The loop ticks after each session and, while a leader waits for a session further off than
        # that, at least every lease.renew_every (a follower every lease.retry_every, within the period).
        return health_problem(
            synced=self.synced.is_set(),
            last_tick=self.loop.last_tick,
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

    def _kopf_registry(self) -> kopf.OperatorRegistry:
        """kopf's registry: its start and login, and the webhooks. Imports kopf (on the thread that calls
        it: the operator calls it, with the webhooks on, once :attr:`after_ready` imported kopf)."""
        from volsched.operator.kopfrun import new_registry, register_webhooks

        registry = new_registry(on_started=self._kopf_started, credentials=self._login)
        if self.admission is not None:
            register_webhooks(registry, self.admission, fail_open=self.settings.webhook.fail_open)
        return registry

    def _login(self) -> kopf.ConnectionInfo:
        """kopf's credentials: the client configuration's."""
        import kopf

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

    def _fit_to_rights(self) -> None:
        """What the operator may do with PodGroups (SelfSubjectAccessReviews): what it may not is turned off,
        and said why, rather than tried and refused every session. Unknown (the review failed): kept on."""
        try:
            may = {
                verb: self_may(self.reads, verb=verb, group=API_GROUP, resource="podgroups")
                for verb in ("create", "delete")
            }
        except Exception as exc:
            log.debug("cannot review the rights on PodGroups (%s)", exc)
            return
        for line in fit_to_rights(
            self.port.podgroups, self.port.left_behind, may_create=may["create"], may_delete=may["delete"]
        ):
            log.info("%s", line)

    def _read_at_start(self) -> None:
        """What the first session needs besides the cache, read while the cache is listed: the rights on
        PodGroups, the scheduler config (a failed read is retried before each session), then the
        ConfigMap's watch started (listed and watched while the cache is listed, not beside a session)."""
        self._fit_to_rights()
        self.reload_config(force=True)
        self.config_watch.start()

    def _record_keys(self) -> bool:
        """The key the pods' bound-under records are signed with, read (or made) as the first listing
        begins, before any pod is taken: the writer signs each bind's record with it, the cache checks
        each record it takes. An apiserver that does not answer (refused, timed out, a 5xx, a 429) is
        asked again, as the listing would be, until it answers or the start is stopped (False); one that
        refuses (credentials or rights missing, a Secret without a key) ends the start in a line saying
        why (an InputError: ``volsched run`` exits 2), as a refused first listing does."""
        from volsched.kube import recordkey
        from volsched.kube.errors import ApiException
        from volsched.kube.health import is_unreachable
        from volsched.kube.secret import SecretStore

        namespace, name = self.settings.config.namespace, self.settings.record_key_secret
        store = SecretStore(self.reads, namespace, name, kind="Opaque")
        delay, said = 0.5, False
        while True:
            try:
                keys = recordkey.load(store)
                break
            except Exception as exc:
                status = exc.status if isinstance(exc, ApiException) else None
                if not (is_unreachable(exc) or (status is not None and (status >= 500 or status == 429))):
                    refused = _record_keys_refused(exc, namespace=namespace, name=name)
                    if refused is not None:
                        raise refused from None
                    self._record_keys_failed(exc, namespace=namespace, name=name)
                    raise
                if not said:
                    said = True
                    log.warning(
                        "cache not synced: its first listing waits for the kube-apiserver (listing after "
                        "the records' key, Secret %s/%s: %s); the sessions start once it answers",
                        namespace, name, error_summary(exc),
                    )  # fmt: skip
                if self._start_stopped.wait(delay):
                    return False
                delay = min(2 * delay, 10.0)
        self._adopt_keys(keys)
        self._keep_keys(store, keys)
        return True

    def _adopt_keys(self, keys: RecordKeys) -> None:
        """The cache checks records with ``keys`` (those it holds not verified checked again: a key taken
        while it runs, ``ClusterState.adopt_keys``), the writer signs with the first (any thread)."""
        self.state.adopt_keys(keys)
        self.writer.record_key = keys.keys[0]

    def _keep_keys(self, store: SecretStore, keys: RecordKeys) -> None:
        """The key Secret, as read at start, watched from now on: the keeper puts it back
        (:class:`~volsched.kube.recordkey.KeyKeeper`). The watch starts knowing it as read, so that its
        first listing hands it over only when deleted or changed since."""
        self.keeper.hold(store, keys)
        namespace, name = store.namespace, store.name
        watch = ListWatch(
            self.watch_api,
            SECRETS,
            on_event=self.keeper.watched,
            health=self.health,
            announce_recovery=False,
            direct_until=self.aio_ready,
            namespace=namespace,
            field_selector=name_selector(name),
        )
        watch.known[f"{namespace}/{name}"] = (store.version, store.uid)
        self.key_watch = watch
        watch.start()

    def _tell_of_keys(self, reason: str, message: str, uid: str) -> None:
        """An Event on the key Secret (the keeper put it back)."""
        from volsched.kube.writer import EventTarget

        namespace, name = self.settings.config.namespace, self.settings.record_key_secret
        target = EventTarget(kind="Secret", api_version="v1", namespace=namespace, name=name, uid=uid)
        _, error, _ = self.writer.post_object_event(target, reason=reason, message=message)
        if error:
            log.info("cannot tell of the records' key: %s", error)

    def _record_keys_failed(self, exc: BaseException, *, namespace: str, name: str) -> None:
        log.error(
            "bound-under records: cannot read or create the key Secret %s/%s (%s); the operator's "
            "service account needs get on that one and create on Secrets in its namespace (the chart "
            "and manifests/10-rbac.yaml grant them)",
            namespace, name, error_summary(exc),
        )  # fmt: skip

    async def _shared_certs(self) -> SharedCerts:
        """The webhook certificates in the Secret every replica shares (made by the first one), in files."""
        from volsched.kube.secret import SecretStore
        from volsched.operator.certs import SharedCerts

        w = self.settings.webhook
        assert w.cert_secret
        if w.service:
            namespace, name, _ = parse_service(w.service)
            hosts = [f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"]
        else:
            hosts = [w.url_host or w.host]
        shared = SharedCerts(SecretStore(self.reads, self.settings.config.namespace, w.cert_secret), hosts)
        try:
            data = await asyncio.to_thread(shared.sync)
        except Exception as exc:
            where = f"Secret {self.settings.config.namespace}/{w.cert_secret}"
            log.error(
                "webhook certificates: cannot read or create %s (%s); the operator's service account needs "
                "create on Secrets and get, update on that one in its namespace (the chart grants them)",
                where, error_summary(exc),
            )  # fmt: skip
            raise
        if data is not None:
            shared.write(data)
        return shared

    async def _import_after_ready(self) -> None:
        """:attr:`after_ready` imported on a thread that steps aside while the sessions work."""
        activity = self.loop.activity
        pauses, paused, started = activity.pauses, activity.paused, time.monotonic()

        def importing() -> None:
            with self.tls_ahead.handed(wait=TLS_AHEAD_WAIT):
                import_aside(self.after_ready, activity)
            self.metrics.make()  # (its series, prometheus_client's: imported above)

        await asyncio.to_thread(importing)
        log.info(
            "imported %s after ready in %.0f ms, %d pauses for the sessions (%.0f ms; the longest it went "
            "on once they were busy: %.1f ms)%s",
            ", ".join(self.after_ready), 1000 * (time.monotonic() - started), activity.pauses - pauses,
            1000 * (activity.paused - paused), 1000 * activity.longest_lag,
            "; its TLS contexts made ahead" if self.tls_ahead.handed_over == 3 else "",
        )  # fmt: skip

    def _freeze_after_ready(self) -> None:
        """What the imports after ready, aiohttp's server and kopf's registry made (the collector
        paused since the imports' start), out of the cyclic collector's way for good, as the
        cache is at sync: ``gc.freeze`` at once, with no collection first. Left to the collector, those
        objects (the modules' classes and functions: tens of thousands) were walked by every collection of
        the middle generation until they reached the old one, and then by the first full collection, on
        whichever thread allocated then: a session, the watch with an arriving pod, the event loop. A collection first would walk them all once more, and cannot pause; what it
        would free (the cyclic garbage of the imports and of the sessions meanwhile) is small, and kept."""
        log.info("after ready: about %d objects frozen for the cyclic collector", freeze_all())

    def _keyed_prelist(self) -> None:
        """The records' key (:meth:`_record_keys`), then the first listing (:meth:`prelist`): no pod is
        taken before its record can be checked. Nothing listed when the start was stopped meanwhile."""
        if self._record_keys():
            self.prelist()

    async def _listed_unless(self, stop: asyncio.Event) -> bool:
        """The first listing (:meth:`_keyed_prelist`); False when ``stop`` came first (a signal while it waited
        for an apiserver not up yet, which it asks again until it answers, or while a long listing ran):
        the watches are stopped, which ends the listing, and the start ends without an error."""
        listing = asyncio.ensure_future(asyncio.to_thread(self._keyed_prelist))
        halt = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([listing, halt], return_when=asyncio.FIRST_COMPLETED)
        finally:
            halt.cancel()
        if listing.done():
            listing.result()
            return True
        self._start_stopped.set()  # (the records' key asked again no more)
        await asyncio.to_thread(self.feed.stop)
        with contextlib.suppress(Exception):
            await listing
        return False

    async def run(self, stop: asyncio.Event) -> None:
        self.http.serve_health()  # aiohttp's server, and its import, once the cache is synced
        kopf_stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        tasks: list[asyncio.Task[None]] = []
        sessions: asyncio.Task[None] | None = None
        signals: asyncio.Task[None] | None = None
        self.latency.watch_collections()  # (at DEBUG on volsched.latency only)
        try:
            # The Lease (before the listing: it is fresh for the lease) and which of Volcano's kinds the
            # cluster serves (before the listing: it lists them) are read at once, neither waiting for
            # the other's round trips.
            discovery = asyncio.ensure_future(asyncio.to_thread(self.volcano.discover))
            try:
                await asyncio.to_thread(self.lease.ensure)
            finally:
                await asyncio.wait([discovery])  # never left running (each read has its timeout)
                discovery.exception()  # retrieved: the Lease's failure, if any, is the one raised
            discovery.result()
            # The rights and the config are read while the cache is listed (their round trips under the
            # listing's work, not before it), and both before the first session.
            reads = asyncio.ensure_future(asyncio.to_thread(self._read_at_start))
            try:
                listed = await self._listed_unless(stop)
            finally:
                await asyncio.wait([reads])  # never left running (each read has its timeout)
                reads.exception()  # retrieved: the listing's failure, if any, is the one raised
            if not listed:
                return  # stopped (a signal) before the cache was listed
            reads.result()
            self.feed.start()
            # Ready from here (synced): the sessions start before aiohttp and kopf are imported, and
            # before kopf's first step: kopf cancels the tasks created after it started, on its exit.
            sessions = asyncio.create_task(self.loop.run(stop))
            tasks.append(sessions)
            # The records an arriving object's way compares or hashes (a pod's runtime as its pod is
            # decoded, a PodGroup's spec, a claim's devices): their methods made before the first one
            # arrives, not in its watch event's or its session's way (volsched.records.made_ahead).
            await asyncio.to_thread(make_ahead)
            # Without the webhooks, what comes after ready (the imports, aiohttp's TLS contexts, its
            # server) waits for the sessions' first lull (aside.until_idle): the first pods are placed
            # without it beside them. With them on, kopf serves the webhooks: not held back.
            lull = time.monotonic()
            quiet = lull_for(self.settings.session.period)
            if self.admission is None and await until_idle(self.loop.activity, stop, quiet=quiet):
                log.debug("after ready: a lull after %.0f ms", 1000 * (time.monotonic() - lull))
            if stop.is_set():  # stopped meanwhile: nothing after ready is imported for the shutdown alone
                return
            # aiohttp's TLS contexts are made from here, beside its import's first modules, not from the
            # start: reading the CA bundle twice was on the listing's way on a busy
            # machine, and its import waits for them (TLS_AHEAD_WAIT) rather than make its own.
            self.tls_ahead.start()
            # aiohttp and kopf were not imported so far (what aiohttp's import cost the way to ready:
            # docs/design/http-client.md): they are now, on a thread that steps aside while the sessions
            # work (see volsched.operator.aside and _switching_often). Then aiohttp's server takes the
            # health server's sockets over, and its client carries the reads, as before ready.
            # With the webhooks on, kopf's registry is made then too. The cyclic collector is paused
            # from the imports' start, and what they made is frozen at the end (see _freeze_after_ready).
            with _switching_often():
                pause_collector()
                try:
                    await self._import_after_ready()
                    await asyncio.to_thread(self.loop.activity.wait_quiet, LONGEST_PAUSE)
                    await self.http.start()
                    self.aio_ready.set()
                    registry = await asyncio.to_thread(self._kopf_registry) if self.admission else None
                    self._freeze_after_ready()
                finally:
                    resume_collector()
            if registry is not None:  # kopf serves the webhooks (and keeps their configurations)
                await asyncio.to_thread(self.loop.activity.wait_quiet, LONGEST_PAUSE)
                import kopf

                from volsched.operator.kopfrun import kopf_settings, take_signals_back

                certs = None
                if self.settings.webhook.cert_secret:
                    shared = await self._shared_certs()
                    certs = shared.files
                    tasks.append(asyncio.create_task(shared.keep(stop, every=CERTS_CHECK_EVERY)))
                tasks.append(
                    asyncio.create_task(
                        kopf.operator(
                            registry=registry,
                            settings=kopf_settings(
                                self.settings.webhook, certs=certs, is_leader=lambda: self.lease.is_leader
                            ),
                            standalone=True,
                            clusterwide=True,
                            stop_flag=kopf_stop,
                        )
                    )
                )
                signals = asyncio.create_task(take_signals_back(self._kopf_started, self._signal_stop))
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
            self.config_watch.stop(timeout=0)  # told with the others, waited for after them
            if self.key_watch is not None:
                self.key_watch.stop(timeout=0)
            await asyncio.to_thread(self.feed.stop)
            await asyncio.to_thread(self.config_watch.stop)
            if self.key_watch is not None:
                await asyncio.to_thread(self.key_watch.stop)
            await asyncio.to_thread(self.usage.close)
            await self.http.stop()
            self.port.close()
            self.writer.close()
            self.api.close()
            self.watch_api.close()
            self.latency.unwatch_collections()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(argv or [])
    if argv[:1] == ["--"]:
        argv = argv[1:]
    args = build_parser().parse_args(argv)
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


#: Seconds aiohttp's import after ready waits at most for its TLS contexts made ahead (else it makes them).
TLS_AHEAD_WAIT = 2.0
#: The interpreter's switch interval (seconds) while kopf is imported beside the sessions.
IMPORT_SWITCH_INTERVAL = 0.0005


@contextlib.contextmanager
def _switching_often() -> Iterator[None]:
    """The interpreter hands the GIL over every :data:`IMPORT_SWITCH_INTERVAL` seconds meanwhile, not every
    5 ms: kopf's import holds the GIL for long stretches (compiling and running its modules) on a thread
    of its own while the first sessions run, and the session thread or a bind's answer waiting for the
    GIL waited up to the default interval each time (the first arriving pods after ready bound several
    times slower than the next ones). Restored after."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, IMPORT_SWITCH_INTERVAL))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _record_keys_refused(exc: BaseException, *, namespace: str, name: str) -> InputError | None:
    """The records' key Secret refused by an answer (401, 403, another 4xx but 429:
    :func:`~volsched.kube.refused.refused_at_start`, as for a first listing) or holding no usable key
    (ValueError) as what ends the start in a line, or None for another failure."""
    from volsched.kube.refused import refused_at_start

    where = f"the records' key, Secret {namespace}/{name},"
    if isinstance(exc, ValueError):
        return InputError(
            f"{where} is not usable ({exc}); put back the key it held (docs/tenancy.md: the signed record)"
        )
    return refused_at_start(
        exc,
        said=lambda answer: f"{where} could not be read or made (refused, {answer})",
        rights=(
            f"the operator's user needs get on that Secret and create on Secrets in namespace {namespace} "
            "(the chart and manifests/10-rbac.yaml grant them)"
        ),
    )
