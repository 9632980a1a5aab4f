"""The operator's HTTP server: ``/healthz`` (liveness), ``/readyz`` (readiness), ``/metrics``
(Prometheus) and the ``/ui`` dashboard on one aiohttp site (:class:`HttpServer`).

It serves what it is handed (liveness and readiness checks, a metrics registry, the dashboard's
:class:`LiveState`) and owns none of it: what makes the operator healthy is :func:`health_problem`,
and ready :func:`readiness_problem`; the series are :mod:`volsched.operator.metrics`, the page is
:mod:`volsched.ui`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from volsched.operator.settings import HttpSettings
from volsched.ui import LiveState, add_routes

log = logging.getLogger("volsched.operator")


def health_problem(*, synced: bool, last_tick: float, period: float, now: float) -> str | None:
    """Why ``/healthz`` answers 503 (the cache is not synced yet, or the session loop stalled), or None.

    ``period``: the longest a healthy session loop goes without a tick (besides a session's own time)."""
    stale = max(30.0, 10 * period)
    if not synced:
        return "cache not synced"
    if last_tick and now - last_tick > stale:
        return "session loop stalled"
    return None


def readiness_problem(
    *, liveness: str | None, config_read: bool, config: str, rejected: str | None = None
) -> str | None:
    """Why ``/readyz`` answers 503, or None: what ``/healthz`` fails on, the scheduler config not read
    yet (sessions are held: a replica that could not read it decides nothing, and a restart would not
    help, so it is no liveness failure), and the user's config rejected with none of theirs loaded
    before (``rejected``: where and why; the built-in default runs meanwhile, which the user did not
    choose). ``config`` names the ConfigMap and why it is unread."""
    problems = [liveness] if liveness else []
    if not config_read:
        problems.append(f"scheduler config not read ({config}): no session runs until it is")
    if rejected:
        problems.append(
            f"scheduler config rejected ({rejected}): the built-in default runs until a config of yours loads"
        )
    return "; ".join(problems) or None


class HttpServer:
    """``await start()`` serves on ``settings.host:settings.port`` (0: any free port, then ``port`` says
    which); ``await stop()`` closes it."""

    def __init__(
        self,
        settings: HttpSettings,
        *,
        liveness: Callable[[], str | None],
        readiness: Callable[[], str | None] | None = None,
        registry: CollectorRegistry,
        ui: LiveState,
    ) -> None:
        self.settings = settings
        self.liveness = liveness
        self.readiness = readiness or liveness
        self.registry = registry
        self.ui = ui
        self.port: int | None = None
        self._runner: web.AppRunner | None = None

    async def _healthz(self, _request: web.Request) -> web.Response:
        problem = self.liveness()
        if problem is not None:
            return web.Response(status=503, text=f"{problem}\n")
        return web.Response(text="ok\n")

    async def _readyz(self, _request: web.Request) -> web.Response:
        problem = self.readiness()
        if problem is not None:
            return web.Response(status=503, text=f"{problem}\n")
        return web.Response(text="ok\n")

    async def _metrics(self, _request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        add_routes(app, self.ui)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        self._runner = runner
        site = web.TCPSite(runner, self.settings.host, self.settings.port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.settings.port
        log.info("serving /healthz, /readyz, /metrics and /ui on %s:%s", self.settings.host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
