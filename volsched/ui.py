"""The dashboard: one self-contained HTML page (inline JS and CSS, no external assets, no build step).

The page renders the ``volsched simulate -o json`` document: queues (as a tree when entries name a
``parent``) with allocated, deserved, guarantee and capability as bars; PodGroups with their phase and
why they wait; evictions with their reasons; the events that say why pods wait.

* ``volsched simulate -o html`` writes it with the document embedded (:func:`page`).
* The operator serves it on its metrics port at ``/ui``; with nothing embedded, the page polls
  ``/ui/state.json``, which :class:`LiveState` builds from the last session and the recent evictions
  (:func:`add_routes`). Read-only: no route changes anything. Its messages are redacted
  (:func:`volsched.redaction.redact`), as the events the writer sends are.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from volsched.framework.messages import render_eviction_told
from volsched.model.scalars import rfc3339
from volsched.redaction import redact
from volsched.sessiondoc import eviction_json, session_json

if TYPE_CHECKING:
    from aiohttp import web

    from volsched.cycle import CycleReport
    from volsched.framework.decisions import SessionResult
    from volsched.gate import Gate, RateLimit, Refused

PLACEHOLDER = "/*DATA*/"
#: A PodGroup's texts on the page (the rest are names and figures).
_PODGROUP_TEXTS = ("reason", "reservation", "noReservation")
#: An eviction's reason as the victim's namespace is told it, kept beside the whole one (see :func:`visible`).
_TOLD = "told"
#: How many evictions the operator's page lists (the latest).
RECENT_EVICTIONS = 100
#: Eviction outcomes (volsched.kube.writer's) that are no news: not our pod, already gone (a later
#: session asking again before the watch saw the first eviction land), or not sent (fenced: this
#: replica was not sure it still held the Lease).
NOT_NEWS = frozenset({"skipped", "gone", "fenced"})


def _template() -> str:
    from importlib import resources  # (it imports tempfile and shutil: the page is read after ready)

    return (resources.files("volsched") / "ui_page.html").read_text(encoding="utf-8")


def embed(data: Mapping[str, Any] | None) -> str:
    """JSON that is safe inside a <script> element: no ``<``, ``>`` or ``&`` can end it early."""
    if data is None:
        return ""
    text = json.dumps(data, separators=(",", ":"), sort_keys=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page(data: Mapping[str, Any] | None = None) -> str:
    """The dashboard; with ``data`` (the ``-o json`` document) embedded, else polling ``state.json``."""
    template = _template()
    if PLACEHOLDER not in template:  # pragma: no cover - a broken package
        raise RuntimeError("ui_page.html lost its data placeholder")
    return template.replace(PLACEHOLDER, embed(data), 1)


class LiveState:
    """What the operator's ``/ui/state.json`` serves: the last session and the recent evictions.

    ``record`` runs on the session thread; the document is built once per recorded session, on the
    first request after it (:meth:`document`), however many viewers ask, and kept with the narrowed
    copies asked since (per set of namespaces). A published SessionResult is never changed
    afterwards, so only the references are guarded.
    """

    def __init__(self, *, keep: int = RECENT_EVICTIONS) -> None:
        self._lock = threading.Lock()
        self._last: SessionResult | None = None
        self._at: float | None = None
        self._sessions = 0
        self._evictions: deque[dict[str, Any]] = deque(maxlen=keep)
        #: One build at a time; the built document, the version (sessions recorded) it is of, the
        #: namespaces it names, and its JSON by the namespaces it was narrowed to (None: all).
        self._build_lock = threading.Lock()
        self._built: tuple[int, dict[str, Any], frozenset[str]] | None = None
        self._bodies: dict[frozenset[str] | None, bytes] = {}
        #: How many times the document was built (a test reads it: once per session, not per viewer).
        self.builds = 0

    def record(self, result: SessionResult, report: CycleReport | None) -> None:
        now = time.time()
        done = []
        for ev in report.evictions if report is not None else []:
            if ev.result in NOT_NEWS:
                continue
            told = render_eviction_told(ev.eviction)  # (what a caller of the victim's namespace reads)
            done.append({**eviction_json(ev), _TOLD: told, "time": rfc3339(now)})
        with self._lock:
            self._last, self._at = result, now
            self._sessions += 1
            self._evictions.extend(done)

    def state(self) -> dict[str, Any]:
        with self._lock:
            last, at, sessions, evictions = self._last, self._at, self._sessions, list(self._evictions)
        body = (
            session_json(last)
            if last is not None
            else {"podgroups": {}, "queues": {}, "namespaces": {}, "events": []}
        )
        # The messages as users read them, without credentials (as the writer sends events): a rejected
        # object's value, a URL's user-info, a registered secret.
        for e in body["events"]:
            e["message"] = redact(e["message"])
        for pg in body["podgroups"].values():
            for field in _PODGROUP_TEXTS:
                if pg.get(field):
                    pg[field] = redact(pg[field])
        evictions = [{**e, "reason": redact(e["reason"]), _TOLD: redact(e[_TOLD])} for e in evictions]
        return {
            "source": "operator",
            "sessions": sessions,
            "generatedAt": rfc3339(at) if at is not None else None,
            **body,
            "evictions": evictions,
        }

    def namespaces(self) -> frozenset[str]:
        """The namespaces the current document names (built if it is not yet)."""
        return self._current()[2]

    def document(self, namespaces: frozenset[str] | None = None) -> bytes:
        """The current document as JSON, narrowed to ``namespaces`` (None: all of it)."""
        with self._build_lock:
            _version, doc, _ = self._current_locked()
            body = self._bodies.get(namespaces)
            if body is None:
                shown = whole(doc) if namespaces is None else visible(doc, namespaces)
                body = json.dumps(shown, separators=(",", ":")).encode()
                if len(self._bodies) < _BODIES_KEPT:
                    self._bodies[namespaces] = body
            return body

    def _current(self) -> tuple[int, dict[str, Any], frozenset[str]]:
        with self._build_lock:
            return self._current_locked()

    def _current_locked(self) -> tuple[int, dict[str, Any], frozenset[str]]:
        with self._lock:
            version = self._sessions
        built = self._built
        if built is None or built[0] != version:
            doc = self.state()
            built = self._built = (doc["sessions"], doc, named_namespaces(doc))
            self._bodies = {}
            self.builds += 1
        return built


#: Narrowed copies of one document kept (distinct sets of namespaces asked for).
_BODIES_KEPT = 256


def _ns_of(key: str) -> str | None:
    """The namespace of ``ns/name`` or of an event's ``Kind ns/name``; None for a cluster object."""
    ref = key.rsplit(" ", 1)[-1]
    return ref.split("/", 1)[0] if "/" in ref else None


def named_namespaces(doc: Mapping[str, Any]) -> frozenset[str]:
    """Every namespace the document names (its PodGroups', namespaces', events' and evictions')."""
    out = set(doc.get("namespaces") or ())
    out.update(ns for k in doc.get("podgroups") or () if (ns := _ns_of(k)))
    out.update(ns for e in doc.get("events") or () if (ns := _ns_of(str(e.get("object", "")))))
    out.update(ns for e in doc.get("evictions") or () if (ns := _ns_of(str(e.get("pod", "")))))
    return frozenset(out)


def whole(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` as a caller who may list every pod sees it: all of it, each eviction's whole reason."""
    out = dict(doc)
    out["evictions"] = [_said(e, e.get("reason")) for e in doc.get("evictions") or ()]
    return out


def _said(eviction: Mapping[str, Any], reason: Any) -> dict[str, Any]:
    """An eviction of the document with ``reason`` as its reason, if any (and not the other wording)."""
    out = {k: v for k, v in eviction.items() if k != _TOLD}
    if reason is not None:
        out["reason"] = reason
    return out


def visible(doc: Mapping[str, Any], namespaces: frozenset[str]) -> dict[str, Any]:
    """``doc`` as a caller who may list pods in ``namespaces`` only sees it: their PodGroups, namespace
    shares, events and evictions (their reasons as the victim's namespace is told them, naming no pod of
    another namespace: ``render_eviction_told``); the queues' totals; no event about a cluster-scoped
    object."""
    out = dict(doc)
    out["podgroups"] = {k: v for k, v in (doc.get("podgroups") or {}).items() if _ns_of(k) in namespaces}
    out["namespaces"] = {k: v for k, v in (doc.get("namespaces") or {}).items() if k in namespaces}
    out["events"] = [e for e in doc.get("events") or () if _ns_of(str(e.get("object", ""))) in namespaces]
    out["evictions"] = [
        _said(e, e.get(_TOLD, e.get("reason")))
        for e in doc.get("evictions") or ()
        if _ns_of(str(e.get("pod", ""))) in namespaces
    ]
    out["namespacesShown"] = sorted(namespaces)
    return out


def add_routes(
    app: web.Application, live: LiveState, *, gate: Gate | None = None, limit: RateLimit | None = None
) -> None:
    """``GET /ui`` (the page: no data in it, served to anyone) and ``GET /ui/state.json`` (its data:
    behind ``gate``, narrowed to the caller's namespaces, at most as often as ``limit`` lets)."""
    from aiohttp import web

    from volsched.gate import Gate, RateLimit, Refused

    gate = gate or Gate(None)
    limit = limit or RateLimit()
    html = page(None)

    async def ui(_request: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})

    async def state(request: web.Request) -> web.Response:
        if not limit.take(request.remote or ""):
            return web.Response(status=429, text="too many requests\n", headers={"Retry-After": "1"})
        try:
            caller = await gate.caller(request.headers.get("Authorization"))
            await gate.check(caller, "/ui")
            shown = None
            if caller is not None:
                names = await asyncio.to_thread(live.namespaces)
                shown = await gate.namespaces(caller, sorted(names))
        except Refused as refused:
            return refused_response(refused)
        # Off the event loop: on a big cluster the document takes a while (once per session), and
        # /healthz shares the loop.
        body = await asyncio.to_thread(live.document, shown)
        return web.Response(body=body, content_type="application/json", headers={"Cache-Control": "no-store"})

    app.router.add_get("/ui", ui)
    app.router.add_get("/ui/", ui)
    app.router.add_get("/ui/state.json", state)


def refused_response(refused: Refused) -> web.Response:
    from aiohttp import web

    headers = {"WWW-Authenticate": 'Bearer realm="volsched"'} if refused.status == 401 else {}
    return web.Response(status=refused.status, text=f"{refused.reason}\n", headers=headers)
