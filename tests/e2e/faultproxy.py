"""A loopback reverse proxy in front of the real kube-apiserver that answers chosen requests itself (fault
injection at the HTTP level: a 429 with Retry-After, a 404), and passes every other one through.

The client speaks plain HTTP to the proxy (:func:`~tests.e2e.slowproxy.kubeconfig_via` with
:attr:`FaultProxy.url`), which speaks TLS to the apiserver (verified with the kubeconfig's CA) and passes
the client's headers on, its bearer token too. Answers passed through are streamed as they come, neither decoded nor recompressed: a
watch's events arrive as they would. ``fault(method, path)`` (the path with its query) is asked about each
request: an answer ``(status, headers, body)`` is sent instead of the apiserver's, None passes it through.
:attr:`FaultProxy.faulted` lists what was answered so, in order.

Not :mod:`tests.e2e.slowproxy`, which passes TLS through untouched and so cannot see a request.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web
from multidict import CIMultiDict

#: What the proxy sends instead of the apiserver's answer: status, headers, a JSON body.
Answer = tuple[int, dict[str, str], dict[str, Any]]
Fault = Callable[[str, str], Answer | None]

#: Headers of one hop, not passed on (aiohttp sets its own).
_HOP = frozenset(
    ("host", "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade")
)


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    """A Status object as the apiserver answers a failure with."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class FaultProxy:
    def __init__(self, kubeconfig: Path, fault: Fault) -> None:
        """``kubeconfig``: the apiserver's (its current cluster's server and CA)."""
        cfg: dict[str, Any] = yaml.safe_load(kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        self.upstream = str(cluster["server"]).rstrip("/")
        self.tls = ssl.create_default_context(cafile=cluster.get("certificate-authority"))
        self.fault = fault
        self.faulted: list[str] = []
        self._lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._loop = asyncio.new_event_loop()
        self._serving = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._serve(),), daemon=True
        )
        self._thread.start()
        self._serving.wait()

    async def _serve(self) -> None:
        self._stopped = asyncio.Event()
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)
        async with aiohttp.ClientSession(
            auto_decompress=False, skip_auto_headers=("Accept-Encoding", "User-Agent"), timeout=timeout
        ) as session:
            self._session = session
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self._handle)
            runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0)
            await runner.setup()
            await web.SockSite(runner, self.sock).start()
            self._serving.set()
            try:
                await self._stopped.wait()
            finally:
                await runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        answer = self.fault(request.method, request.path_qs)
        if answer is not None:
            code, headers, body = answer
            with self._lock:
                self.faulted.append(f"{request.method} {request.path_qs}")
            return web.Response(
                status=code, headers=headers, text=json.dumps(body), content_type="application/json"
            )
        data = await request.read()
        headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in _HOP)
        async with self._session.request(
            request.method, self.upstream + request.path_qs, headers=headers, data=data or None, ssl=self.tls
        ) as up:
            back = CIMultiDict(
                (k, v)
                for k, v in up.headers.items()
                if k.lower() not in _HOP and k.lower() != "content-length"
            )
            resp = web.StreamResponse(status=up.status, reason=up.reason, headers=back)
            await resp.prepare(request)
            async for chunk in up.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp

    def close(self) -> None:
        stopped = self._stopped
        if stopped is not None:
            self._loop.call_soon_threadsafe(stopped.set)
        self._thread.join(10)
