"""A lean list+watch for every kind the cache holds (Pods and Nodes the most): read-only, no client models.

kopf delivers each event through its handler machinery (a task, a thread-pool hop, a progress
bookkeeping) and the Kubernetes client's watch parses every object into its models; at 10,000 pods
that was most of the operator's CPU. :class:`ListWatch` is what client-go's reflector does, on one
thread per kind:

* a paginated list (``limit``/``continue``, :func:`~volsched.kube.lister.paginate`), each page decoded once, pruned (:mod:`volsched.kube.prune`)
  and handed over before the next page is decoded, so the cache fills while the list streams in;
* then a watch from the list's ``resourceVersion`` with ``allowWatchBookmarks`` (bookmarks only move the
  resourceVersion on);
* on ``410 Gone`` (the resourceVersion is older than what the apiserver keeps: after a compaction or a
  long outage) a relist: objects the new list lacks are handed over as deleted, objects it shows
  unchanged are not handed over again;
* after an outage, a reconnect with a short backoff from the last resourceVersion seen; failures go to
  :class:`~volsched.kube.health.ApiHealth` (a few log lines per outage, not one per attempt).

Events are handed to ``on_event(type, obj)`` in the order the apiserver sent them, on the watcher's
thread; the receiver (the operator's Feeder) drops stale resourceVersions.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future, InvalidStateError
from contextlib import AbstractContextManager
from typing import Any, NoReturn, ParamSpec, TypeVar
from urllib.parse import quote, urlencode

from volsched.kube.early import EarlyListing
from volsched.kube.errors import ApiException, status_message
from volsched.kube.health import ApiHealth, back_pressure, is_unreachable
from volsched.kube.kubeconfig import AnyApi
from volsched.kube.lister import SERVED_EVERYWHERE, Page, WatchedKind, paginate
from volsched.kube.ratelimit import retry_after
from volsched.kube.rest import LeanRest, loads
from volsched.model.raw import RawDict, meta_of, uid_of, version_of

log = logging.getLogger("volsched.kube")

#: ``on_event(type, obj)``: type is ADDED, MODIFIED or DELETED; obj the (pruned) object with its kind set.
EventSink = Callable[[str, RawDict], None]
Prune = Callable[[RawDict], RawDict]

#: The most objects of a listing's page handed over under one hold of the receiver's locks
#: (``ListWatch(hold_page=...)``): a session waiting for the cache meanwhile waits a millisecond or two,
#: not the whole page's.
HELD_AT_MOST = 100
#: Seconds between attempts after a failure: soon at first, then every second.
BACKOFF = (0.2, 0.4, 0.8, 1.0)
#: After an answer that refuses the kind (a 404: its CRD not installed; a 403: not allowed), which no
#: retry changes until someone does: the wait doubles from the first to the last, as client-go's
#: reflector backs off (0.8 s to 30 s, without its jitter): not once a second forever, and an installed
#: CRD is picked up within the last.
REFUSED_BACKOFF = (0.8, 30.0)
#: What a 404 listing a kind says, by whether every kube-apiserver serves it (:data:`~volsched.kube.lister.
#: SERVED_EVERYWHERE`).
_NOT_FOUND = {False: "is its CRD installed?", True: "not served: is the server a kube-apiserver?"}


class Expired(Exception):
    """The resourceVersion asked for is gone from the apiserver (410): list again."""


class Stopped(Exception):
    """The watch was stopped while it listed: the listing ends at the page it was handing over."""


class ApiError(Exception):
    """An answer other than success (a 403, a 404...): not an outage, worth a log line. A 429 (the
    apiserver's flow control, or "storage is (re)initializing" for a moment after it starts) carries the
    ``retry_after`` seconds it asked for."""

    def __init__(self, status: int, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.retry_after = retry_after


P = ParamSpec("P")
T = TypeVar("T")


class _Pages(Executor):
    """Where a listing fetches its next page while it hands this one over: each page on a daemon thread
    of its own, given up by :meth:`abandon` (a stopped listing). A page given up ends its wait at once
    (its future raises :class:`Stopped`), and the request, still on its way, ends on its own, its answer
    dropped; a ThreadPoolExecutor would wait for it on leaving, and its worker is joined at the
    process's exit (a page's read may take a minute)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._pending: set[Future[Any]] = set()
        self._abandoned = ""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        future.set_running_or_notify_cancel()

        def fetch() -> None:
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                with contextlib.suppress(InvalidStateError):  # given up meanwhile
                    future.set_exception(exc)
            else:
                with contextlib.suppress(InvalidStateError):
                    future.set_result(result)
            finally:
                with self._lock:
                    self._pending.discard(future)

        with self._lock:
            if self._abandoned:
                future.set_exception(Stopped(self._abandoned))
                return future
            self._pending.add(future)
        threading.Thread(target=fetch, name=self.name, daemon=True).start()
        return future

    def abandon(self, why: str) -> None:
        """Give up every page on its way, and every one asked for from now on."""
        with self._lock:
            self._abandoned = why
            pending, self._pending = list(self._pending), set()
        for future in pending:
            with contextlib.suppress(InvalidStateError):  # answered just now
                future.set_exception(Stopped(why))


def _key(obj: RawDict) -> str:
    meta = meta_of(obj)
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class ListWatch:
    """List then watch one kind on its own thread (:meth:`start`/:meth:`stop`), or step by step
    (:meth:`relist`, :meth:`watch_once`) in tests."""

    def __init__(
        self,
        api: AnyApi,
        kind: WatchedKind,
        *,
        on_event: EventSink,
        prune: Prune | None = None,
        health: ApiHealth | None = None,
        page_size: int = 500,
        timeout_seconds: int = 290,
        backoff: tuple[float, ...] = BACKOFF,
        refused_backoff: tuple[float, float] = REFUSED_BACKOFF,
        announce_recovery: bool = True,
        early: EarlyListing | None = None,
        direct_until: threading.Event | None = None,
        decode_page: Callable[[bytes], RawDict | None] | None = None,
        decode_event: Callable[[bytes], RawDict | None] | None = None,
        namespace: str = "",
        field_selector: str = "",
        on_line: Callable[[], None] | None = None,
        on_thread: Callable[[], object] | None = None,
        after_event: Callable[[], None] | None = None,
        hold_page: Callable[[], AbstractContextManager[object]] | None = None,
        waiting: Callable[[ListWatch, BaseException], None] | None = None,
    ) -> None:
        """``namespace``: that namespace's objects only (else every namespace's); ``field_selector``: the
        objects it selects only, listed and watched (``metadata.name=...``: one object). ``early``: the first
        pages of this kind's first listing, asked for at the process's start
        (:mod:`~volsched.kube.early`); its first listing takes what came, asks for the rest.
        ``direct_until``: the listings' pages over the direct path until it is set (aiohttp's client
        after: :class:`~volsched.kube.rest.LeanRest`). ``decode_page``: decodes a listing's page with its
        items pruned as ``prune`` would (:func:`~volsched.kube.prune.decode_pruned`), or None for a page
        it does not take (decoded whole and pruned then). ``decode_event``: the same for a watch event
        (:func:`~volsched.kube.prune.decode_event_pruned`). ``on_line``: called as each line of the watch
        arrives, before it is decoded (the latency stamps: :mod:`~volsched.kube.latency`). ``on_thread``:
        called first on the thread :meth:`start` starts (a short slice asked: :mod:`volsched.threadslice`).
        ``after_event``: called on the watch's thread after each watch event, and each listing's page and
        its deletions, were handed over, outside every lock (where the operator runs an arriving pod's
        session on this thread: :class:`~volsched.operator.sessions.SessionLoop`). ``hold_page``: entered
        around each listing's page (:data:`HELD_AT_MOST` objects at a time) handed over, inside this
        watch's own lock: the receiver's locks taken once for them (:meth:`~volsched.cache.feeder.Feeder.
        page`), not once an object. ``waiting``: told when :meth:`first_list` first fails to reach the
        apiserver, and when it is first throttled (it asks again until it answers)."""
        self.api = api
        self.kind = kind
        self.on_event = on_event
        self.prune = prune
        self.health = health
        self.page_size = page_size
        self.timeout_seconds = timeout_seconds
        self.backoff = backoff
        self.refused_backoff = refused_backoff
        #: Whether an answer after failures tells ``health`` the apiserver is back. The operator leaves
        #: that to the Lease: a restarting apiserver answers lists before it serves every path.
        self.announce_recovery = announce_recovery
        self.waiting = waiting
        #: Set once the first complete list has been handed over (the cache holds every object).
        self.synced = threading.Event()
        #: The resourceVersion the next watch starts from ("" before the first list).
        self.resource_version = ""
        #: What was handed over, by "ns/name": (resourceVersion, uid). A relist compares against it.
        self.known: dict[str, tuple[str, str]] = {}
        self.lists = 0  # complete lists so far (the first one and each relist)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._response: Any = None  # the watch's answer being read (stop() shuts its socket)
        self._rest: LeanRest | None = None
        self._lists: LeanRest | None = None
        self._pages: _Pages | None = None  # the listing's pages on their way (stop() gives them up)
        self._lock = threading.Lock()
        self._failures = 0
        self._last_error = ""
        #: Set by :meth:`drop_known` (the kind is no longer read): nothing is handed over after it, even
        #: by a thread :meth:`stop` could not end in time. Handing over holds ``_handing``.
        self._retired = False
        self._handing = threading.Lock()
        self._early = early
        self._direct_until = direct_until
        self.decode_page = decode_page
        self.decode_event = decode_event
        base = f"/api/{kind.version}" if not kind.group else f"/apis/{kind.group}/{kind.version}"
        #: Where the kind is listed and watched, and the query every request of it carries.
        self.path = f"{base}/namespaces/{quote(namespace, safe='')}/{kind.plural}" if namespace else kind.path
        self._selector: list[tuple[str, Any]] = [("fieldSelector", field_selector)] if field_selector else []
        #: Whether the last attempt to list or watch was answered (False from a failure until one is).
        self.answering = False
        self.on_line = on_line
        self.on_thread = on_thread
        self.after_event = after_event
        self.hold_page = hold_page

    # --- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.run, name=f"volsched-watch-{self.kind.plural}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._lock:
            resp, pages = self._response, self._pages
        if pages is not None:  # a listing waiting for a page: it ends now, not when the page comes
            pages.abandon(f"listing {self.kind.plural} stopped")
        if resp is not None:  # unblock a read waiting on the socket
            with contextlib.suppress(Exception):  # already closed
                resp.shutdown()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def run(self) -> None:
        """List, then watch from where the list ended; relist on 410; reconnect after failures."""
        if self.on_thread is not None:
            self.on_thread()
        try:
            self._run()
        finally:
            for rest in (self._rest, self._lists):
                if rest is not None:
                    rest.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not self.resource_version:
                    self.relist()
                while not self._stop.is_set():
                    self.watch_once(self.resource_version)
            except Expired as exc:
                log.debug("%s: %s; listing them again", self.kind.plural, exc)
                self.resource_version = ""
                self._failures = 0
            except Exception as exc:
                if self._stop.is_set():
                    break
                self._stop.wait(self._failed(exc))

    def _failed(self, exc: BaseException) -> float:
        """Tell ``health`` (an outage) or the log (an answer worth a line) of a failed attempt; returns
        the seconds to wait before the next one. A 429 that is :func:`~volsched.kube.health.back_pressure`
        is waited out (its Retry-After, at least the backoff) quietly."""
        self.answering = False
        self._failures += 1
        delay = self.backoff[min(self._failures, len(self.backoff)) - 1]
        status = exc.status if isinstance(exc, ApiError) else None
        throttled = status == 429
        if back_pressure(self.health, throttled=throttled):
            wait = max(delay, getattr(exc, "retry_after", None) or 0.0)
            log.debug(
                "%s: throttled by the apiserver (%s); asking again in %.1fs", self.kind.plural, exc, wait
            )
            return wait
        if is_unreachable(exc) or throttled or (status is not None and status >= 500):
            if self.health is not None:
                self.health.failed(f"watch {self.kind.plural}", exc)
            else:
                log.debug("watch %s: %s", self.kind.plural, exc)
            return delay
        then = "retrying"
        if status is not None and 400 <= status < 500:  # refused: asked again less and less often
            first, last = self.refused_backoff
            delay = min(last, first * 2.0 ** min(self._failures - 1, 32))
            then = f"asking again less often each time, at least every {last:g}s"
            if status == 404:
                then = f"{_NOT_FOUND[self.kind in SERVED_EVERYWHERE]} {then}"
        message = f"{type(exc).__name__}: {exc}"
        if message != self._last_error:  # once per distinct error, not once per attempt
            self._last_error = message
            log.warning("watching %s failed (%s); %s", self.kind.plural, message[:300], then)
        return delay

    def _succeeded(self) -> None:
        self.answering = True
        self._failures = 0
        self._last_error = ""
        if self.health is not None and self.announce_recovery:
            self.health.ok()

    # --- requests -------------------------------------------------------------------------------------------

    def _refused(self, status: int, reason: str, headers: Any, body: bytes | str) -> NoReturn:
        """Raise what an answer other than success means: :class:`Expired` for 410, else :class:`ApiError`."""
        message = status_message(body) or reason
        if status == 410:
            raise Expired(message)
        raise ApiError(status, message, retry_after=retry_after(status, headers, body))

    def _stamp(self, obj: RawDict, *, pruned: bool = False) -> RawDict:
        obj["kind"] = self.kind.kind
        obj["apiVersion"] = self.kind.api_version
        return self.prune(obj) if self.prune is not None and not pruned else obj

    # --- list -----------------------------------------------------------------------------------------------

    def _page(self, token: str) -> bytes:
        early = self._early
        if early is not None and (data := early.page(token)) is not None:
            return data
        query: list[tuple[str, Any]] = [*self._selector, ("limit", self.page_size)]
        if token:
            query.append(("continue", token))
        if self._lists is None:  # through aiohttp's pool: the fetching thread is not kept
            self._lists = LeanRest(self.api, direct=False, direct_until=self._direct_until)
        try:
            return self._lists.read(f"{self.path}?{urlencode(query)}", timeout=60, throttle_retries=0)
        finally:  # the thread ends here: a direct connection is kept for the next page's, or the watch's
            self._lists.park()

    def relist(self) -> str:
        """A full paginated list (:func:`~volsched.kube.lister.paginate`), handed over page by page;
        objects the cache had and the list lacks are handed over as DELETED. Returns (and keeps) the
        list's resourceVersion. A listing started again (its continue token expired) counts alone: what
        the broken-off one handed over is not handed over again unchanged, and what it showed that the
        new one lacks is handed over as DELETED."""
        seen: set[str] = set()
        rv = ""
        # The next page is fetched while this one is handed over: the apiserver reads and encodes it
        # meanwhile instead of waiting for the next request. stop() gives up a page on its way.
        fetcher = _Pages(f"volsched-list-{self.kind.plural}")
        with self._lock:
            self._pages = fetcher
        if self._stop.is_set():  # stopped before the listing began
            fetcher.abandon(f"listing {self.kind.plural} stopped")
        try:
            try:
                early = self._early
                for page in paginate(
                    self._page,
                    what=self.kind.plural,
                    ahead=fetcher,
                    decode=self.decode_page,
                    at_hand=early.at_hand if early is not None else None,
                ):
                    if self._stop.is_set():  # not the rest of a long listing: the start may have failed
                        raise Stopped(f"listing {self.kind.plural} stopped")
                    self._succeeded()
                    if page.fresh:
                        seen.clear()
                    rv = page.resource_version or rv
                    self._hand_page(page, seen)
                    del page
                    self._handed()
            except ApiException as exc:
                self._refused(int(exc.status or 0), str(exc.reason), exc.headers, exc.body or b"")
        finally:
            with self._lock:
                self._pages = None
            fetcher.abandon("the listing ended")  # a page fetched ahead and not taken: dropped
            early, self._early = self._early, None
            if early is not None:  # the first listing only; what it did not take is freed
                early.drop()
        with self._handing:  # drop_known may be emptying it
            gone = [k for k in self.known if k not in seen]
        self._gone(gone, resource_version=rv)
        self._handed()
        self.resource_version = rv
        self.lists += 1
        self.synced.set()
        return rv

    def _hand_page(self, page: Page, seen: set[str]) -> None:
        """A listing's page handed over as ADDED (:meth:`_hand`'s rules, its lock and the receiver's
        ``hold_page`` taken once for each :data:`HELD_AT_MOST` of its objects): each object stamped with its kind (pruned, unless decoded so), its key added to ``seen``;
        one handed over already at its version (a relist after an outage) is passed over. A listing
        hands over tens of thousands of objects at start: the steps of the per-object way (a method
        and the lock each, the kind's fields read anew) were a tenth of the listing's own CPU."""
        kind, api_version = self.kind.kind, self.kind.api_version
        prune = self.prune if not page.pruned else None
        items, hold = page.items, self.hold_page
        for at in range(0, len(items), HELD_AT_MOST):
            with self._handing, hold() if hold is not None else contextlib.nullcontext():
                self._hand_items(items[at : at + HELD_AT_MOST], kind, api_version, prune, seen)

    def _hand_items(
        self, items: list[RawDict], kind: str, api_version: str, prune: Prune | None, seen: set[str]
    ) -> None:
        """(Under ``_handing``.) Some of :meth:`_hand_page`'s objects handed over, one by one."""
        known, deliver = self.known, self._deliver
        add = seen.add
        for item in items:
            item["kind"] = kind
            item["apiVersion"] = api_version
            obj = prune(item) if prune is not None else item
            m = obj.get("metadata") or {}
            ns = m.get("namespace")
            key = f"{ns}/{m.get('name')}" if ns else str(m.get("name"))
            add(key)
            version = (str(m.get("resourceVersion") or ""), str(m.get("uid") or ""))
            before = known.get(key)
            if before == version or self._retired:
                continue  # handed over already, unchanged (or the kind is retired)
            known[key] = version
            if not deliver("ADDED", obj, key):
                if before is None:
                    known.pop(key, None)
                else:
                    known[key] = before

    def first_list(self) -> str:
        """:meth:`relist`, what the operator's start lists before it watches, where a failure ends the
        start, asked again until it answers or the watch is stopped (then the failure is raised), as
        kube-scheduler's informers wait for the apiserver: one not reached (refused, reset, timed out; a
        5xx while it starts), after the backoff, told to ``health`` as its watch's failures are; one that
        throttles (a 429: its flow control, or "storage is (re)initializing" just after it started), after
        its ``Retry-After`` (at least the backoff; the backoff alone without one), waited out quietly
        while it is up (:func:`~volsched.kube.health.back_pressure`). ``waiting`` (the constructor's) is
        told of the first failure of each of the two (the start says once why it is not synced: the health
        tracker's one outage line may be another call's, and a throttled apiserver logs none). Any other
        answer (a 401, a 403, a 404) is raised at once. Before, ``volsched run`` against an apiserver not up
        yet ended in the listing's traceback, and one throttling the listing more than ten times running
        too. What a broken-off listing handed over is not handed over again."""
        told: set[bool] = set()  # whether waiting was told of a throttled listing (True), an unreached one
        while True:
            try:
                return self.relist()
            except Stopped:
                raise
            except Exception as exc:
                status = exc.status if isinstance(exc, ApiError) else None
                throttled = status == 429
                if not (throttled or is_unreachable(exc) or (status is not None and status >= 500)):
                    raise
                if self.waiting is not None and throttled not in told:
                    told.add(throttled)
                    self.waiting(self, exc)
                wait = self._failed(exc)
                if throttled:
                    wait = max(wait, getattr(exc, "retry_after", None) or 0.0)
                if self._stop.wait(wait):
                    raise

    def forgo_early(self) -> None:
        """The first listing asks for every page itself: the pages listed early are dropped."""
        early, self._early = self._early, None
        if early is not None:
            early.drop()

    def drop_known(self) -> int:
        """Once stopped, for a kind no longer served (its CRD deleted): hand over everything still known as
        DELETED (the deletions the watch missed), and nothing ever after: a thread that :meth:`stop` could
        not end in time (a page still on its way) hands nothing over once it is back, so a removed kind's
        late objects never return to the cache. Returns how many were dropped."""
        with self._handing:
            self._retired = True
            keys = sorted(self.known)
            self._gone(keys, resource_version=None, retired=True)
        return len(keys)

    def _handed(self) -> None:
        """``after_event``, if any (on the watch's thread, outside every lock)."""
        if self.after_event is not None:
            self.after_event()

    def _hand(self, type_: str, obj: RawDict, key: str, version: tuple[str, str] | None) -> None:
        """Hand one object over and remember it (``version`` None: forget it), unless retired.

        One object the receiver fails on stops neither this kind's watch (re-reading that event forever)
        nor its other objects: the failure is logged and the event passed over, its last good version
        kept, so the next relist hands the object over again."""
        with self._handing:
            if self._retired:
                return
            before = self.known.get(key)
            if version is None:
                self.known.pop(key, None)
            else:
                self.known[key] = version
            if not self._deliver(type_, obj, key):
                if before is None:
                    self.known.pop(key, None)
                else:
                    self.known[key] = before

    def _deliver(self, type_: str, obj: RawDict, key: str) -> bool:
        """``on_event(type_, obj)``; False (logged) when it raised."""
        try:
            self.on_event(type_, obj)
        except Exception:
            log.exception("handling %s %s %s failed; passed over", type_, self.kind.kind, key)
            return False
        return True

    def _gone(self, keys: list[str], *, resource_version: str | None, retired: bool = False) -> None:
        """Hand ``keys`` over as DELETED and forget them (``resource_version`` None: each one's own;
        ``retired``: :meth:`drop_known`'s, which holds ``_handing``)."""
        for key in keys:
            entry = self.known.get(key)
            if entry is None:  # dropped meanwhile (drop_known)
                continue
            version, uid = entry
            ns, _, name = key.rpartition("/")
            gone: RawDict = {
                "kind": self.kind.kind,
                "apiVersion": self.kind.api_version,
                "metadata": {
                    "name": name,
                    "uid": uid,
                    "resourceVersion": version if resource_version is None else resource_version,
                    **({"namespace": ns} if ns else {}),
                },
            }
            if retired:
                del self.known[key]
                self._deliver("DELETED", gone, key)  # one failing stops not the others' removal
            else:
                self._hand("DELETED", gone, key, None)

    # --- watch ----------------------------------------------------------------------------------------------

    def watch_once(self, resource_version: str) -> str:
        """One watch connection from ``resource_version`` until the apiserver ends it (its timeout) or
        :meth:`stop`. Returns the last resourceVersion seen; raises :class:`Expired` on 410."""
        query: list[tuple[str, Any]] = [
            *self._selector,
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", self.timeout_seconds),
        ]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        return self._watch_over(self._streams(), query)

    def _follow(self, lines: Iterable[bytes]) -> None:
        """An answered watch's events, each dispatched as it arrives, until the body ends or :meth:`stop`
        (then none is read)."""
        if self._stop.is_set():
            return
        self._succeeded()
        decode, on_line, after = self.decode_event, self.on_line, self.after_event
        for line in lines:
            if on_line is not None:
                on_line()
            event = decode(line) if decode is not None else None
            if event is None:  # no pruned decoder, or an event it does not take: decoded whole
                self._dispatch(loads(line))
            else:
                self._dispatch(event, pruned=True)
            if after is not None:
                after()
            if self._stop.is_set():
                break

    def _streams(self) -> LeanRest:
        """The watch's own connection: the direct path's when the configuration allows it."""
        if self._rest is None:
            self._rest = LeanRest(self.api)
        return self._rest

    def _watch_over(self, rest: LeanRest, query: list[tuple[str, Any]]) -> str:
        """:meth:`watch_once` over this thread's own kept-alive connection, its chunked body decoded as it
        arrives (:func:`~volsched.kube.rest.chunked_lines`; through aiohttp's client when the
        configuration needs it: a proxy, a TLS server name)."""
        stream = rest.stream(f"{self.path}?{urlencode(query)}", timeout=self.timeout_seconds + 30)
        with self._lock:
            self._response = stream
        try:
            if not 200 <= stream.status <= 299:
                self._refused(stream.status, str(stream.reason), stream.headers, stream.body())
            self._follow(stream.lines())
        finally:
            with self._lock:
                self._response = None
            stream.close()
        return self.resource_version

    def _dispatch(self, event: RawDict, *, pruned: bool = False) -> None:
        """One event handed over (``pruned``: its object decoded pruned already)."""
        type_ = event.get("type")
        obj = event.get("object") or {}
        if type_ == "ERROR":
            code = obj.get("code")
            message = str(obj.get("message") or obj)
            if code == 410:
                raise Expired(message)
            raise ApiError(int(code or 500), message)
        rv = version_of(obj)
        if type_ == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        if type_ not in ("ADDED", "MODIFIED", "DELETED"):
            return
        obj = self._stamp(obj, pruned=pruned)
        key = _key(obj)
        version = None if type_ == "DELETED" else (rv, uid_of(obj))
        self._hand(str(type_), obj, key, version)
        if rv:
            self.resource_version = rv


def wait_synced(watches: list[ListWatch], stop: threading.Event | None = None, poll: float = 0.2) -> bool:
    """Block until every watch has handed its first list over (False when ``stop`` was set first)."""
    for w in watches:
        while not w.synced.wait(poll):
            if (stop is not None and stop.is_set()) or w.stopped:
                return False
    return True
