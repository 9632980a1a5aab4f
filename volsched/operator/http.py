"""The operator's HTTP server: ``/healthz`` (liveness), ``/readyz`` (readiness), ``/metrics``
(Prometheus) and the ``/ui`` dashboard on one aiohttp site (:class:`HttpServer`).

The health endpoints answer anyone; ``/metrics`` and the dashboard's data go through a
:class:`~volsched.gate.Gate` (the caller's bearer token, TokenReview and SubjectAccessReview) and a
:class:`~volsched.gate.RateLimit`; the metrics text is made at most once a second however many scrape.

It serves what it is handed (liveness and readiness checks, a metrics registry, the dashboard's
:class:`LiveState`) and owns none of it: what makes the operator healthy and ready is
:mod:`volsched.operator.health`; the series are :mod:`volsched.operator.metrics`, the page is
:mod:`volsched.ui`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from volsched.gate import Gate, RateLimit, Refused
from volsched.operator.settings import HttpSettings
from volsched.ui import LiveState, add_routes, refused_response

log = logging.getLogger("volsched.operator")

#: Seconds the metrics text is served again before it is made anew.
METRICS_TTL = 1.0


class HttpServer:
    """``await start()`` serves on ``settings.host:settings.port`` (0: any free port, then ``port`` says
    which); ``await stop()`` closes it."""

    def __init__(
        self,
        settings: HttpSettings,
        *,
        liveness: Callable[[], str | None],
        readiness: Callable[[], str | None] | None = None,
        notice: Callable[[], str | None] | None = None,
        registry: CollectorRegistry,
        ui: LiveState,
        gate: Gate | None = None,
        limit: RateLimit | None = None,
    ) -> None:
        self.settings = settings
        self.liveness = liveness
        self.readiness = readiness or liveness
        #: What ``/readyz`` adds on a ``warning:`` line, ready or not: something the user should know that
        #: is no reason to hold traffic (a config that places no pod, which a descheduler-only one means).
        self.notice = notice or (lambda: None)
        self.registry = registry
        self.ui = ui
        self.gate = gate or Gate(None)
        self.limit = limit or RateLimit()
        self._metrics_text: tuple[float, bytes] | None = None
        self.port: int | None = None
        self._runner: web.AppRunner | None = None

    async def _healthz(self, _request: web.Request) -> web.Response:
        problem = self.liveness()
        if problem is not None:
            return web.Response(status=503, text=f"{problem}\n")
        return web.Response(text="ok\n")

    async def _readyz(self, _request: web.Request) -> web.Response:
        problem = self.readiness()
        notice = self.notice()
        warning = f"warning: {notice}\n" if notice else ""
        if problem is not None:
            return web.Response(status=503, text=f"{problem}\n{warning}")
        return web.Response(text=f"ok\n{warning}")

    async def _metrics(self, request: web.Request) -> web.Response:
        if not self.limit.take(request.remote or ""):
            return web.Response(status=429, text="too many requests\n", headers={"Retry-After": "1"})
        try:
            await self.gate.check(await self.gate.caller(request.headers.get("Authorization")), "/metrics")
        except Refused as refused:
            return refused_response(refused)
        now = time.monotonic()
        kept = self._metrics_text
        if kept is None or now - kept[0] >= METRICS_TTL:
            kept = self._metrics_text = (now, await asyncio.to_thread(generate_latest, self.registry))
        return web.Response(body=kept[1], headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        add_routes(app, self.ui, gate=self.gate, limit=self.limit)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        self._runner = runner
        # One site per address ("10.1.2.3,127.0.0.1": the pod's IP, and loopback for port-forward);
        # with port 0 the first picks a free port and the others take the same.
        hosts = [h.strip() for h in self.settings.host.split(",") if h.strip()] or ["0.0.0.0"]
        port = self.settings.port
        for host in hosts:
            site = web.TCPSite(runner, host, port)
            await site.start()
            sockets = getattr(site._server, "sockets", None) or []
            if sockets and not port:
                port = sockets[0].getsockname()[1]
        self.port = port
        log.info(
            "serving /healthz, /readyz, /metrics and /ui on %s:%s%s (%s)",
            hosts[0], self.port, "".join(f", {h}:{self.port}" for h in hosts[1:]),
            "open to anyone" if self.gate.open else "metrics and dashboard data need a bearer token",
        )  # fmt: skip

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
