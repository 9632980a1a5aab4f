"""The dashboard: one self-contained HTML page (inline JS and CSS, no external assets, no build step).

The page renders the ``volsched simulate -o json`` document: queues (as a tree when entries name a
``parent``) with allocated, deserved, guarantee and capability as bars; PodGroups with their phase and
why they wait; evictions with their reasons; the events that say why pods wait.

* ``volsched simulate -o html`` writes it with the document embedded (:func:`page`).
* The operator serves it on its metrics port at ``/ui``; with nothing embedded, the page polls
  ``/ui/state.json``, which :class:`LiveState` builds from the last session and the recent evictions
  (:func:`add_routes`). Read-only: no route changes anything.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Any

from volsched.framework.messages import render_eviction

if TYPE_CHECKING:
    from aiohttp import web

    from volsched.cycle import CycleReport
    from volsched.framework.decisions import SessionResult

PLACEHOLDER = "/*DATA*/"
#: How many evictions the operator's page lists (the latest).
RECENT_EVICTIONS = 100
#: Eviction outcomes (volsched.kube.writer's) that are no news: not our pod, already gone (a later
#: session asking again before the watch saw the first eviction land), or not sent (fenced: this
#: replica was not sure it still held the Lease).
NOT_NEWS = frozenset({"skipped", "gone", "fenced"})


def _template() -> str:
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

    ``record`` runs on the session thread, ``state`` on the HTTP server's loop; a published
    SessionResult is never changed afterwards, so only the references are guarded.
    """

    def __init__(self, *, keep: int = RECENT_EVICTIONS) -> None:
        self._lock = threading.Lock()
        self._last: SessionResult | None = None
        self._at: float | None = None
        self._sessions = 0
        self._evictions: deque[dict[str, Any]] = deque(maxlen=keep)

    def record(self, result: SessionResult, report: CycleReport | None) -> None:
        now = time.time()
        done = []
        for ev in report.evictions if report is not None else []:
            if ev.result in NOT_NEWS:
                continue
            e = ev.eviction
            done.append(
                {"pod": e.pod, "node": e.node, "action": e.action, "reason": render_eviction(e),
                 "result": ev.result, "time": _iso(now)}
            )  # fmt: skip
        with self._lock:
            self._last, self._at = result, now
            self._sessions += 1
            self._evictions.extend(done)

    def state(self) -> dict[str, Any]:
        from volsched.simulate import session_json

        with self._lock:
            last, at, sessions, evictions = self._last, self._at, self._sessions, list(self._evictions)
        body = (
            session_json(last)
            if last is not None
            else {"podgroups": {}, "queues": {}, "namespaces": {}, "events": []}
        )
        return {
            "source": "operator",
            "sessions": sessions,
            "generatedAt": _iso(at) if at is not None else None,
            **body,
            "evictions": evictions,
        }


def add_routes(app: web.Application, live: LiveState) -> None:
    """``GET /ui`` (the page) and ``GET /ui/state.json`` (its data) on the operator's HTTP server."""
    from aiohttp import web

    html = page(None)

    async def ui(_request: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-store"})

    async def state(_request: web.Request) -> web.Response:
        # Off the event loop: on a big cluster the document takes a while, and /healthz shares the loop.
        body = await asyncio.to_thread(lambda: json.dumps(live.state(), separators=(",", ":")))
        return web.Response(text=body, content_type="application/json", headers={"Cache-Control": "no-store"})

    app.router.add_get("/ui", ui)
    app.router.add_get("/ui/", ui)
    app.router.add_get("/ui/state.json", state)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
