"""The first pages of the Pods' and Nodes' listings, asked for in the operator's first moments, while
Python imports the rest of it.

``volsched run`` spends its first few hundred ms of CPU importing (aiohttp, numpy, the cache and the
engine), and the apiserver then spends about as long encoding the listings of Pods and Nodes, one page
after the other, while volsched waits. :func:`start` asks for those pages before the imports, on a
thread per kind with only the standard library (``http.client``, ``ssl``), so the apiserver encodes
them while Python imports; the pages are kept as they came (bytes, not decoded) until the operator's
first listing of the kind takes them (:meth:`EarlyListing.page`). Up to :data:`PAGES` pages a kind
(the memory of a few MB a thousand objects, held a moment); the listing's later pages are asked for as
before, from the last early page's continue token: one consistent listing either way. The other kinds
the operator lists (a few objects each) are asked for too, one after the other over one more connection
(:data:`FEW_PATHS`): the first listing made a connection, and its TLS handshake, for each.

Safe by construction:

* The pages are used only by an operator whose configuration is the one they were read with
  (:func:`claim` compares the ``--kubeconfig`` given; the settings are those this module loaded,
  handed to the operator): never pages of another cluster.
* Only a configuration read by :mod:`volsched.kube.kubeconfig` (no import of the Kubernetes client
  here), over https or http without a proxy or a TLS server name, is used; any other start lists as
  before.
* A page that fails (an error status, a refused connection, a timeout) ends the early listing quietly:
  the operator's own listing asks for that page and everything after it, and reports what fails then.
* The listing starts before the Lease is looked at: a replica that takes the Lease over from another
  holder at start (not one that creates it) drops the Pods' early pages and lists them after the
  take-over, as before (the last holder's last binds may be missing from them); a follower that takes
  it over later catches up as after any take-over (``SessionLoop.catch_up``).

Nothing is logged with a credential; nothing here decodes or caches an object.
"""

from __future__ import annotations

import http.client
import logging
import re
import threading
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode, urlsplit

from volsched.kube import parked
from volsched.kube.kubeconfig import USER_AGENT, ClientConfig, tls_context

log = logging.getLogger("volsched.kube")

#: The kinds listed early each over a connection of its own (the many) and their paths.
PATHS = {"Node": "/api/v1/nodes", "Pod": "/api/v1/pods"}
#: The other kinds the operator lists (:data:`volsched.kube.lister.WATCHED`'s, a few objects each: a
#: request each), listed early one after the other over one connection, in the order the cache wants
#: them. Written out here: this module imports nothing of the operator's.
FEW_PATHS = {
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "Namespace": "/api/v1/namespaces",
    "ResourceQuota": "/api/v1/resourcequotas",
    "Queue": "/apis/scheduling.volsched.io/v1beta1/queues",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "CSINode": "/apis/storage.k8s.io/v1/csinodes",
    "CSIDriver": "/apis/storage.k8s.io/v1/csidrivers",
    "CSIStorageCapacity": "/apis/storage.k8s.io/v1/csistoragecapacities",
    "VolumeAttachment": "/apis/storage.k8s.io/v1/volumeattachments",
    "PodGroup": "/apis/scheduling.volsched.io/v1beta1/podgroups",
    "PodDisruptionBudget": "/apis/policy/v1/poddisruptionbudgets",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    "ResourceClaim": "/apis/resource.k8s.io/v1/resourceclaims",
}
#: Objects a page (the operator's listings' page size too: :mod:`volsched.kube.lister` takes it from here,
#: as an early page and a later one must be alike; client-go's reflector asks for 500) and pages a kind at
#: most.
PAGE_SIZE = 500
PAGES = 20
#: Seconds one early page may take.
TIMEOUT = 60.0
#: A listing's metadata, which the apiserver writes before its items.
_LIST_META = re.compile(rb'"metadata":(\{[^{}]*\})')


class EarlyListing:
    """One kind's first pages, fetched on a daemon thread of their own; :meth:`page` hands them over."""

    def __init__(
        self, cfg: ClientConfig, path: str, *, page_size: int = PAGE_SIZE, pages: int = PAGES
    ) -> None:
        self.cfg = cfg
        self.path = path
        self.page_size = page_size
        self.pages = pages
        #: Pages fetched and not yet taken, by the continue token that asks for each ("" for the first).
        self._fetched: dict[str, bytes] = {}
        #: The token of the page being fetched next ("" for the first), None once no more will come.
        self._next: str | None = ""
        self._done = threading.Condition()

    def start(self) -> EarlyListing:
        """Fetch this kind's pages on a thread and a connection of its own."""
        in_turn([self], name=f"volsched-early-{self.path}")
        return self

    def page(self, token: str) -> bytes | None:
        """The page after ``token`` ("" for the first), waiting for it if it is on its way; None when it
        will not come early (not fetched, failed, or taken already): then the caller asks for it."""
        with self._done:
            while token not in self._fetched and self._next == token:
                self._done.wait()
            return self._fetched.pop(token, None)

    def at_hand(self, token: str) -> bytes | None:
        """The page after ``token`` if it has come already (taken, as :meth:`page` takes it), else None at
        once, whether it is on its way or will not come: the caller need not wait nor start a thread."""
        with self._done:
            return self._fetched.pop(token, None)

    def drop(self) -> None:
        """The listing is over: pages not taken are freed and no more are fetched."""
        with self._done:
            self._fetched.clear()
            self._next = None
            self._done.notify_all()

    def _fetch(self, conn: http.client.HTTPConnection, prefix: str) -> None:
        """This kind's pages over ``conn``, until the last one, one answered with an error (read to its
        end: ``conn`` may carry the next kind's), :data:`pages` of them, or :meth:`drop`. Raises what
        fails to talk (then ``conn`` is not used again)."""
        try:
            for _ in range(self.pages):
                with self._done:
                    token = self._next
                if token is None:
                    return  # dropped
                query = [("limit", self.page_size), *([("continue", token)] if token else [])]
                headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
                auth = self.cfg.auth_settings().get("BearerToken")
                if auth:
                    headers["Authorization"] = auth["value"]
                conn.request("GET", f"{prefix}{self.path}?{urlencode(query)}", headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if resp.status != 200:
                    log.debug(
                        "early listing of %s: answered %d; the operator lists it", self.path, resp.status
                    )
                    return
                following = _continue(data)
                with self._done:
                    if self._next is None:
                        return  # dropped meanwhile
                    self._fetched[token] = data
                    self._next = following or None
                    self._done.notify_all()
                if not following:
                    return
        finally:
            self._end()

    def _end(self) -> None:
        """No more pages will come (those fetched stay until taken or dropped)."""
        with self._done:
            self._next = None
            self._done.notify_all()


def in_turn(listings: Sequence[EarlyListing], *, name: str) -> None:
    """Fetch ``listings`` (of one configuration) one after the other over one connection, on a daemon
    thread ``name``: a kind of few objects costs a request, not a connection and its TLS handshake."""
    threading.Thread(target=_fetch_in_turn, args=(list(listings),), name=name, daemon=True).start()


def _fetch_in_turn(listings: list[EarlyListing]) -> None:
    conn: http.client.HTTPConnection | None = None
    left = list(listings)
    clean = False  # every answer on ``conn`` read to its end: it may be used again
    try:
        cfg = left[0].cfg
        url = urlsplit(cfg.host)
        host, port = url.hostname or "localhost", url.port or (443 if url.scheme == "https" else 80)
        context = tls_context(cfg) if url.scheme == "https" else None
        if context is not None:
            conn = http.client.HTTPSConnection(host, port, timeout=TIMEOUT, context=context)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
        prefix = url.path.rstrip("/")
        while left:
            listing = left.pop(0)
            try:
                listing._fetch(conn, prefix)
            except Exception as exc:  # the operator's own listing asks again and reports it
                log.debug(
                    "early listing of %s failed (%s); the operator lists it", listing.path, type(exc).__name__
                )
                return
        clean = True
    except Exception as exc:  # no connection: the operator lists them all
        log.debug("no early listing (%s); the operator lists it", type(exc).__name__)
    finally:
        for listing in left:  # not begun: they will not come early
            listing._end()
        if conn is not None:
            sock, conn.sock = (conn.sock, None) if clean else (None, conn.sock)
            conn.close()
            if sock is not None:  # kept alive: the next connection the operator needs
                parked.park(host, port, context, sock)


def _continue(data: bytes) -> str:
    """A listing page's continue token, read from its metadata (written before the items) without
    decoding the page; the whole page decoded when that is not where it is."""
    import json

    m = _LIST_META.search(data, 0, 4096)
    meta: Any = json.loads(m.group(1)) if m else (json.loads(data).get("metadata") or {})
    return str(meta.get("continue") or "")


class _Early:
    """What :func:`start` began: the configuration, the ``--kubeconfig`` it came from, the listings."""

    def __init__(self, kubeconfig: str | None, cfg: ClientConfig, listings: dict[str, EarlyListing]) -> None:
        self.kubeconfig = kubeconfig
        self.cfg = cfg
        self.listings = listings
        self.started = time.monotonic()


_early: _Early | None = None


def kubeconfig_arg(argv: Sequence[str]) -> tuple[bool, str | None]:
    """``volsched run``'s ``--kubeconfig`` in its arguments, read before its parser is imported: (known,
    the path or None). Not known for any spelling but ``--kubeconfig F`` and ``--kubeconfig=F`` (an
    abbreviation, say): then nothing is listed early."""
    found: str | None = None
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            continue
        if arg == "--kubeconfig" and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith("--kubeconfig="):
            found = arg.split("=", 1)[1]
        elif arg.startswith("--kub") or arg in ("-h", "--help"):
            return False, None
    return True, found


def start(argv: Sequence[str]) -> None:
    """Begin the early listings for ``volsched run``'s arguments ``argv``, when its configuration allows
    (see the module's notes); never raises."""
    global _early
    try:
        known, kubeconfig = kubeconfig_arg(argv)
        if not known:
            return
        from volsched.kube.client import read_configuration

        cfg = read_configuration(kubeconfig)  # one the client's loader reads (an exec plugin): not here
        if not isinstance(cfg, ClientConfig) or cfg.proxy or cfg.tls_server_name:
            return
        if urlsplit(cfg.host).scheme not in ("http", "https"):
            return
        listings = {kind: EarlyListing(cfg, path).start() for kind, path in PATHS.items()}
        few = {kind: EarlyListing(cfg, path) for kind, path in FEW_PATHS.items()}
        in_turn(list(few.values()), name="volsched-early-few")
        listings.update(few)
        _early = _Early(kubeconfig, cfg, listings)
    except Exception as exc:  # the operator loads its configuration again and says what is wrong
        log.debug("no early listing (%s)", type(exc).__name__)


def claim(kubeconfig: str | None) -> tuple[ClientConfig, dict[str, EarlyListing], float] | None:
    """The early listings, for an operator started with ``--kubeconfig`` ``kubeconfig``: the
    configuration they were read with, the listings by kind, and when they began (monotonic); None when
    there are none for it (none begun, or begun with another ``--kubeconfig``: dropped). Once."""
    global _early
    early, _early = _early, None
    if early is None:
        return None
    if early.kubeconfig != kubeconfig:
        for listing in early.listings.values():
            listing.drop()
        return None
    return early.cfg, early.listings, early.started
