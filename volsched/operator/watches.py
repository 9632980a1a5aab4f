"""The watch feed (:class:`WatchFeed`): every watched kind listed once at start, then watched, into the cache.

Each kind of ``WATCHED`` gets a :class:`~volsched.kube.watch.ListWatch` on its own thread and connection
(Pods and Nodes pruned as they arrive), Volcano's kinds come through :class:`~volsched.operator.volcano.
VolcanoKinds`; every event goes through :meth:`WatchFeed.handle_event` into the
:class:`~volsched.cache.feeder.Feeder`, and what the writer remembers of an object (conditions, events,
a PodGroup it created) is forgotten when the object goes. :meth:`WatchFeed.prelist` is the first listing
of all kinds at once, Pods and Nodes held back until the few other kinds are in.

It is not the watch itself (listing, resuming, 410s: :mod:`volsched.kube.watch`), nor the cache's decoding
(:mod:`volsched.cache`), nor when the operator counts as synced (the operator's wiring says so).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cache.volcano import VOLCANO_PODGROUP, VOLCANO_QUEUE
from volsched.cache.workload import WORKLOAD_PODGROUP
from volsched.gcpause import pause_collector, resume_after_start, resume_collector
from volsched.kube.early import EarlyListing
from volsched.kube.health import ApiHealth
from volsched.kube.latency import PodLatency
from volsched.kube.lister import SERVED_EVERYWHERE, WATCHED
from volsched.kube.podgroups import PodGroupCreator
from volsched.kube.prune import EVENT_DECODERS, PAGE_DECODERS, PRUNERS
from volsched.kube.refused import refused_at_start
from volsched.kube.watch import ApiError, ListWatch
from volsched.kube.writer import KubeWriter
from volsched.model.errors import InputError
from volsched.model.raw import meta_of, uid_of
from volsched.operator.volcano import OPTIONAL_WATCHED, VolcanoKinds
from volsched.redaction import error_summary

log = logging.getLogger("volsched.operator")

#: The many (pruned as they arrive): their events wait until the few other kinds are in the cache.
LEAN_KINDS = ("Node", "Pod")
#: The kinds a leader writes (binds and pod status, PodGroups made and their status, Queues' status,
#: claims' allocations): a replica that takes the Lease over at start lists them after the take-over.
WRITTEN_KINDS = ("Pod", "PodGroup", "Queue", "ResourceClaim")


class WatchFeed:
    """Every watch the operator runs (``lean`` by kind, Volcano's in ``volcano``), feeding the cache."""

    def __init__(
        self,
        *,
        api: Any,
        state: ClusterState,
        feeder: Feeder,
        writer: KubeWriter,
        podgroups: PodGroupCreator,
        health: ApiHealth,
        latency: PodLatency,
        scheduler_names: frozenset[str],
        volcano: Callable[[Callable[[str, str, dict[str, Any]], None]], VolcanoKinds],
        early: Mapping[str, EarlyListing] | None = None,
        direct_until: threading.Event | None = None,
        on_pod_thread: Callable[[], object] | None = None,
    ) -> None:
        """``api``: the watches' own client (the writer's pool stays free for writes); ``volcano``: builds
        the Volcano kinds handing their events to the handler it is given; ``early``: listings asked for
        at the process's start, by kind (:mod:`~volsched.kube.early`), which those kinds' first listings
        take; ``direct_until``: the listings over the direct path until it is set (aiohttp's client after:
        :class:`~volsched.kube.rest.LeanRest`); ``on_pod_thread``: called first on the pod watch's thread
        (an arriving pod's way: a short slice asked, :mod:`volsched.threadslice`)."""
        self.state = state
        self.feeder = feeder
        self.writer = writer
        self.podgroups = podgroups
        self.latency = latency
        self.scheduler_names = scheduler_names
        #: What the first listing said it waits for (once for every kind): a throttled listing (True), an
        #: apiserver not reached (False).
        self._said_waiting: set[bool] = set()
        self._said_lock = threading.Lock()
        self.lean = {
            k.kind: ListWatch(
                api,
                k,
                on_event=self._lean_handler(k.kind),
                prune=PRUNERS.get(k.kind),
                decode_page=PAGE_DECODERS.get(k.kind),
                decode_event=EVENT_DECODERS.get(k.kind),
                on_line=latency.line_read if k.kind == "Pod" and latency.on else None,
                health=health,
                announce_recovery=False,  # the Lease, read every second, says when it answers again
                early=(early or {}).get(k.kind),
                direct_until=direct_until,
                on_thread=on_pod_thread if k.kind == "Pod" else None,
                hold_page=functools.partial(self._held, k.kind),
                waiting=self._waiting,
            )
            for k in WATCHED
        }
        #: Set once the other kinds are in the cache: pods wait for it (their priorities need the
        #: PriorityClasses, which would otherwise re-parse every pod listed so far).
        self._prelisted = threading.Event()
        #: Volcano's kinds the cluster serves, each listed and watched on its own thread.
        self.volcano = volcano(self.handle_event)

    def handle_event(self, kind: str, type_: str | None, obj: dict[str, Any]) -> None:
        """One event of any kind into the cache; what the writer keeps of an object that went, dropped."""
        meta = meta_of(obj)
        if kind == "Pod" and self.latency.on:
            self._trace_pod(type_, meta, obj.get("spec") or {})
        if type_ == "DELETED":
            self.feeder.delete(kind, obj)
            self.writer.forget(kind, uid_of(obj))  # conditions and events written to it
        else:
            self.feeder.apply(kind, obj)
        if kind in ("PodGroup", "Queue", VOLCANO_PODGROUP, VOLCANO_QUEUE, WORKLOAD_PODGROUP) and type_ in (
            "ADDED",
            "DELETED",
        ):
            ns = meta.get("namespace")
            key = f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))
            self.writer.forget("Queue" if kind in ("Queue", VOLCANO_QUEUE) else "PodGroup", key)
            if kind == "PodGroup" and type_ == "DELETED":
                self.podgroups.forget(key)
        if kind in ("Queue", VOLCANO_QUEUE):  # events go to the object in force under the name
            name = str(meta.get("name"))
            self.writer.queue_uid(name, self.state.queue_uid(name))

    def _trace_pod(self, type_: str | None, meta: Any, spec: dict[str, Any]) -> None:
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if type_ == "DELETED":
            self.latency.gone(key)
        elif not spec.get("nodeName") and spec.get("schedulerName") in self.scheduler_names:
            self.latency.saw(key)

    def _lean_handler(self, kind: str) -> Callable[[str, dict[str, Any]], None]:
        if kind not in LEAN_KINDS:  # one of the few: into the cache at once

            def handle(type_: str, obj: dict[str, Any]) -> None:
                self.handle_event(kind, type_, obj)

            return handle

        traced = kind == "Pod" and self.latency.on  # (read once: the log's level is set at start)

        def on_event(type_: str, obj: dict[str, Any]) -> None:
            if not (self._prelisted.is_set() or self._wait_prelisted(kind)):
                return
            if type_ == "DELETED" or traced:
                self.handle_event(kind, type_, obj)
            else:  # all that handle_event does of a Node or a Pod added or changed, and not traced
                self.feeder.apply(kind, obj)

        return on_event

    def _wait_prelisted(self, kind: str) -> bool:
        """Wait until the few other kinds are in the cache (at once once they are); False if ``kind``'s
        watch was stopped meanwhile."""
        while not self._prelisted.wait(0.5):
            if self.lean[kind].stopped:
                return False
        return True

    @contextlib.contextmanager
    def _held(self, kind: str) -> Iterator[None]:
        """Around a listing's page of ``kind`` handed over: the feeder's and the cache's locks held for
        it (:meth:`Feeder.page`), taken once the few kinds are in for Pods and Nodes (never held while
        waiting for them: their listings take these locks)."""
        if kind in LEAN_KINDS and not self._prelisted.is_set() and not self._wait_prelisted(kind):
            yield  # stopped: its handler hands nothing over
            return
        with self.feeder.page():
            yield

    def forgo_early(self, kind: str) -> None:
        """``kind``'s first listing asks for every page itself: what was listed early is dropped."""
        self.lean[kind].forgo_early()

    def start(self) -> None:
        """Watch every kind (Volcano's too) from where :meth:`prelist` listed it, each on its own thread."""
        for w in (*self.lean.values(), *self.volcano.started()):
            w.start()

    def stop(self) -> None:
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
        resume_after_start()  # (paused from volsched run's start: its imports' objects are frozen too)

    def _waiting(self, watch: ListWatch, exc: BaseException) -> None:
        """The first listing of ``watch``'s kind did not reach the apiserver, or was throttled (``exc``, a
        429): said once for all kinds, each of the two, why the cache is not synced yet (the health
        tracker's one line of an outage may be the Lease's, or any other call's; a throttled listing is
        waited out quietly, and the start would otherwise be silent until it answers)."""
        throttled = isinstance(exc, ApiError) and exc.status == 429
        with self._said_lock:
            said = throttled in self._said_waiting
            self._said_waiting.add(throttled)
        if said:
            return
        if throttled:
            log.warning(
                "cache not synced: its first listing is throttled by the kube-apiserver (listing %s: %s); "
                "asked again after each Retry-After it gives, the sessions start once it answers",
                watch.kind.plural,
                error_summary(exc),
            )
        else:
            log.warning(
                "cache not synced: its first listing waits for the kube-apiserver (listing %s: %s); the "
                "sessions start once it answers",
                watch.kind.plural,
                error_summary(exc),
            )

    def _prelist(self) -> None:
        """Every kind's first listing at once. The few kinds go into the cache as they stream in, Pods
        and Nodes once the few are in (``_prelisted``). A listing that fails the start (anything but a
        CRD not installed, or Volcano's) fails it as soon as it does: the other listings are stopped at
        once (a page on its way given up), not waited for to the end (the pods' may take a minute on a
        large cluster)."""
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
                    refused = _refused_at_start(w, exc)
                    if future not in lists:
                        if refused is not None:
                            raise refused from None
                        raise
                    if w.kind in OPTIONAL_WATCHED:
                        log.warning("listing %s %s failed (%s); retrying", w.kind.group, w.kind.plural, exc)
                    elif refused is None and isinstance(exc, ApiError) and exc.status == 404:  # a CRD
                        log.warning(
                            "%s are not served by this cluster (is the CRD installed?)", w.kind.plural
                        )
                    elif refused is not None:
                        raise refused from None
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


def _refused_at_start(watch: ListWatch, exc: BaseException) -> InputError | None:
    """A kind's first listing refused by an answer as what ends the start in a line (``volsched run``
    exits 2 saying it), or None for another failure: a 401 (credentials not accepted), a 403 (not allowed
    to list it), a 404 for a kind every kube-apiserver serves (:data:`~volsched.kube.lister.
    SERVED_EVERYWHERE`: Pods, Nodes, Namespaces...: said not served, the server not a kube-apiserver or
    the kubeconfig's address with a path it should not have), any other 4xx but a throttling 429 and a
    404 for another kind (a CRD not installed): :func:`~volsched.kube.refused.refused_at_start`, as for
    the records' key. Before, the start ended in the listing's traceback; then a 404 for Pods said
    "refused", and one for Namespaces was warned as a CRD not installed and the start went on without
    them."""
    plural = watch.kind.plural
    if isinstance(exc, ApiError) and exc.status == 404:
        if watch.kind not in SERVED_EVERYWHERE:
            return None
        return InputError(
            f"the first listing of {plural} found them not served ({exc}) at {watch.path}: every "
            "kube-apiserver serves them; is the kubeconfig's server a kube-apiserver, its address without "
            "a path?"
        )
    return refused_at_start(
        exc,
        said=lambda answer: f"the first listing of {plural} was refused ({answer})",
        rights=f"volsched's ClusterRole (manifests/10-rbac.yaml) lets its user list and watch {plural}",
    )
