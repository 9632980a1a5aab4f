"""The operator's health answers before aiohttp is imported: the standard library's server answers
``/healthz`` and ``/readyz`` from the start as aiohttp's does (every other path 503, "starting"), and
aiohttp's server takes its listening sockets over: the same port, nothing refused in between, everything
served from then on."""

from __future__ import annotations

import asyncio
import socket
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from volsched.operator.http import HttpServer
from volsched.operator.settings import HttpSettings
from volsched.ui import LiveState


def get(port: int, path: str, host: str = "127.0.0.1") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def server(host: str = "127.0.0.1", **checks: Callable[[], str | None]) -> HttpServer:
    registry = CollectorRegistry()
    Gauge("volsched_probe", "a series /metrics shows", registry=registry).set(1)
    return HttpServer(
        HttpSettings(host=host, port=0, auth="none"),
        liveness=checks.get("liveness", lambda: None),
        readiness=checks.get("readiness"),
        notice=checks.get("notice"),
        registry=registry,
        ui=LiveState(),
    )


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_health_is_answered_before_aiohttp_as_after_and_the_same_port_serves_everything_after() -> None:
    problems: dict[str, str | None] = {"live": "not synced", "ready": "not synced"}
    http = server(
        liveness=lambda: problems["live"],
        readiness=lambda: problems["ready"],
        notice=lambda: "no allocate action",
    )

    async def scenario() -> list[tuple[int, str]]:
        http.serve_health()
        port = http.port
        assert port
        seen = [await asyncio.to_thread(get, port, p) for p in ("/healthz", "/readyz", "/metrics", "/ui")]
        problems["live"] = problems["ready"] = None
        seen += [await asyncio.to_thread(get, port, p) for p in ("/healthz", "/readyz?verbose")]
        early = socket.create_connection(("127.0.0.1", port))  # waits to be accepted across the hand-over
        await http.start()
        assert http.port == port
        early.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        answer = await asyncio.to_thread(early.recv, 4096)
        early.close()
        seen.append((int(answer.split()[1]), ""))
        seen += [await asyncio.to_thread(get, port, p) for p in ("/healthz", "/readyz")]
        status, text = await asyncio.to_thread(get, port, "/metrics")
        seen.append((status, "served" if "volsched_probe 1.0" in text else text))
        await http.stop()
        return seen

    assert run(scenario()) == [
        (503, "not synced\n"),
        (503, "not synced\nwarning: no allocate action\n"),
        (503, "starting: served once the cache is synced\n"),
        (503, "starting: served once the cache is synced\n"),
        (200, "ok\n"),
        (200, "ok\nwarning: no allocate action\n"),
        (200, ""),
        (200, "ok\n"),
        (200, "ok\nwarning: no allocate action\n"),
        (200, "served"),
    ]


def test_the_health_server_listens_on_each_address_given_and_stops_with_the_server() -> None:
    http = server(host="127.0.0.1,127.0.0.2")

    async def scenario() -> list[Any]:
        http.serve_health()
        port = http.port
        assert port
        out: list[Any] = []
        for host in ("127.0.0.1", "127.0.0.2", "127.0.0.3"):
            try:
                out.append((await asyncio.to_thread(get, port, "/healthz", host))[0])
            except OSError as exc:
                out.append(type(exc).__name__)
        await http.stop()  # never handed over (a start that failed): the sockets are closed
        try:
            await asyncio.to_thread(get, port, "/healthz")
        except OSError as exc:
            out.append(type(exc).__name__)
        return out

    assert run(scenario()) == [200, 200, "URLError", "URLError"]
