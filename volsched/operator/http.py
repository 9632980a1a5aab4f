"""The operator's HTTP server: ``/healthz`` (liveness), ``/readyz`` (readiness), ``/metrics``
(Prometheus) and the ``/ui`` dashboard on one aiohttp site (:class:`HttpServer`).

aiohttp's import is a sixth of the operator's CPU to ready, and nothing on the way to ready needs it
but the health answers: :meth:`HttpServer.serve_health` answers ``/healthz`` and ``/readyz`` from the
operator's first moments with the standard library's server (every other path: 503, "starting"), and
:meth:`HttpServer.start`, once the cache is synced, hands its listening sockets to aiohttp's server,
which serves everything from then on (a connection waiting to be accepted meanwhile is accepted there).

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
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from volsched.gate import Gate, RateLimit, Refused
from volsched.operator.settings import HttpSettings
from volsched.ui import LiveState, add_routes, refused_response

if TYPE_CHECKING:
    from aiohttp import web
    from prometheus_client import CollectorRegistry

log = logging.getLogger("volsched.operator")

#: Seconds the metrics text is served again before it is made anew.
METRICS_TTL = 1.0
#: Seconds between the health server's checks for its hand-over (its accept loop's poll).
HANDOVER_POLL = 0.02
#: What the health server answers for every other path, until aiohttp's serves it.
STARTING = b"starting: served once the cache is synced\n"


def _listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for ``host`` (every address it resolves to, as asyncio's server binds them) on
    ``port`` (0: the first picks a free one, the others take the same)."""
    out: list[socket.socket] = []
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    try:
        for family, type_, proto, _, addr in dict.fromkeys(infos):
            sock = socket.socket(family, type_, proto)
            out.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if out[0] is not sock:
                addr = (addr[0], out[0].getsockname()[1], *addr[2:])
            sock.bind(addr)
            sock.listen(128)
    except OSError:
        for sock in out:
            sock.close()
        raise
    return out


class _HealthServer(ThreadingHTTPServer):
    """The standard library's server on a socket bound already (see :func:`_listen`)."""

    daemon_threads = True

    def __init__(self, sock: socket.socket, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(sock.getsockname()[:2], handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock


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
        registry: CollectorRegistry | Callable[[], CollectorRegistry],
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
        #: The standard library's servers answering health until :meth:`start` (see :meth:`serve_health`).
        self._health: list[tuple[_HealthServer, threading.Thread]] = []

    async def _healthz(self, _request: web.Request) -> web.Response:
        from aiohttp import web

        problem = self.liveness()
        if problem is not None:
            return web.Response(status=503, text=f"{problem}\n")
        return web.Response(text="ok\n")

    async def _readyz(self, _request: web.Request) -> web.Response:
        from aiohttp import web

        problem = self.readiness()
        notice = self.notice()
        warning = f"warning: {notice}\n" if notice else ""
        if problem is not None:
            return web.Response(status=503, text=f"{problem}\n{warning}")
        return web.Response(text=f"ok\n{warning}")

    async def _metrics(self, request: web.Request) -> web.Response:
        from aiohttp import web
        from prometheus_client import generate_latest
        from prometheus_client.exposition import CONTENT_TYPE_LATEST

        if not self.limit.take(request.remote or ""):
            return web.Response(status=429, text="too many requests\n", headers={"Retry-After": "1"})
        try:
            await self.gate.check(await self.gate.caller(request.headers.get("Authorization")), "/metrics")
        except Refused as refused:
            return refused_response(refused)
        now = time.monotonic()
        kept = self._metrics_text
        if kept is None or now - kept[0] >= METRICS_TTL:
            registry = self.registry() if callable(self.registry) else self.registry
            kept = self._metrics_text = (now, await asyncio.to_thread(generate_latest, registry))
        return web.Response(body=kept[1], headers={"Content-Type": CONTENT_TYPE_LATEST})

    def _health_answer(self, path: str) -> tuple[int, bytes]:
        """What the health server answers for ``path`` (see :meth:`_healthz`, :meth:`_readyz`)."""
        path = path.split("?", 1)[0]
        if path == "/healthz":
            problem = self.liveness()
            return (503, f"{problem}\n".encode()) if problem is not None else (200, b"ok\n")
        if path == "/readyz":
            problem, notice = self.readiness(), self.notice()
            warning = f"warning: {notice}\n" if notice else ""
            if problem is not None:
                return 503, f"{problem}\n{warning}".encode()
            return 200, f"ok\n{warning}".encode()
        return 503, STARTING

    def serve_health(self) -> None:
        """Answer ``/healthz`` and ``/readyz`` now, on every address of the settings (port 0: any free
        one, then ``port`` says which), with the standard library's server on a thread per address, until
        :meth:`start` hands the sockets over to aiohttp's."""
        answer = self._health_answer

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, body: bool) -> None:
                status, text = answer(self.path)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(text)))
                if status == 503 and text == STARTING:
                    self.send_header("Retry-After", "1")
                self.end_headers()
                if body:
                    self.wfile.write(text)

            def do_GET(self) -> None:
                self._answer(True)

            def do_HEAD(self) -> None:
                self._answer(False)

            def log_message(self, format: str, *args: object) -> None:
                pass  # no access log (aiohttp's has none either)

        hosts = self._hosts()
        port = self.settings.port
        sockets: list[socket.socket] = []
        try:
            for host in hosts:
                sockets.extend(_listen(host, port))
                port = port or sockets[0].getsockname()[1]
        except OSError:
            for sock in sockets:
                sock.close()
            raise
        for sock in sockets:
            server = _HealthServer(sock, Handler)
            thread = threading.Thread(
                target=server.serve_forever, args=(HANDOVER_POLL,), name="volsched-health", daemon=True
            )
            thread.start()
            self._health.append((server, thread))
        self.port = port
        log.info(
            "serving /healthz and /readyz on %s:%s%s (/metrics and /ui once the cache is synced)",
            hosts[0], self.port, "".join(f", {h}:{self.port}" for h in hosts[1:]),
        )  # fmt: skip

    def _hosts(self) -> list[str]:
        # One site per address ("10.1.2.3,127.0.0.1": the pod's IP, and loopback for port-forward);
        # with port 0 the first picks a free port and the others take the same.
        return [h.strip() for h in self.settings.host.split(",") if h.strip()] or ["0.0.0.0"]

    def _handover(self) -> list[socket.socket]:
        """The health servers stop accepting (a request being answered ends on its own thread); their
        listening sockets, still open, are returned."""
        sockets = []
        for server, thread in self._health:
            server.shutdown()
            thread.join()
            sockets.append(server.socket)
        self._health = []
        return sockets

    async def start(self) -> None:
        """Serve everything with aiohttp's server: on the health server's sockets when it runs (imported
        here, on a thread: the caller's loop goes on), else on sockets bound now."""
        if self._health:
            await asyncio.to_thread(__import__, "aiohttp.web")
        from aiohttp import web

        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        add_routes(app, self.ui, gate=self.gate, limit=self.limit)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        self._runner = runner
        hosts = self._hosts()
        if self._health:
            for sock in self._handover():
                await web.SockSite(runner, sock).start()
        else:
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
        if self._health:  # never handed over (the start failed first)
            for sock in await asyncio.to_thread(self._handover):
                sock.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
