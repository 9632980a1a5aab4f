"""The operator's reads, Lease and listings before its cache is synced: over the direct path while the
event they are given is not set (aiohttp not imported yet), through aiohttp's client once it is, the
calling thread's connection of before parked for the next thread that opens one on the direct path (not
left idle); a configuration the direct path cannot carry (a proxy)
goes through aiohttp's client from the first request."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.unit._raw_server import RawServer, requests_on
from tests.unit._scripted_server import loopback_config
from volsched.kube.rest import LeanRest

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


class Peer(RawServer):
    """Answers every request 200 ``{}`` and keeps the connection; counts requests per connection."""

    def __init__(self) -> None:
        self.by_connection: dict[int, int] = {}
        super().__init__()

    def serve(self, conn: socket.socket, number: int) -> None:
        for _ in requests_on(conn):
            self.by_connection[number] = self.by_connection.get(number, 0) + 1
            conn.sendall(OK)


@pytest.fixture
def peer() -> Iterator[Peer]:
    server = Peer()
    yield server
    server.close()


def test_reads_go_direct_until_the_event_is_set_then_through_aiohttp(peer: Peer) -> None:
    until = threading.Event()
    rest = LeanRest(client.ApiClient(loopback_config(peer.port)), direct=False, direct_until=until)
    try:
        assert rest.get("/a", timeout=30) == {}
        assert rest.request("PUT", "/b", {"x": 1}, timeout=30) == b"{}"  # the Lease's writes too
        assert (rest.connects, rest._aio.connects) == (1, 0)  # one direct connection, kept alive
        direct = rest._local.conn
        until.set()
        assert rest.get("/c", timeout=30) == {}
        assert rest.get("/d", timeout=30) == {}
        assert (rest.connects, rest._aio.connects) == (1, 1)
        assert direct.sock is None and rest._local.conn is None  # not left idle on this thread...
        assert sorted(peer.by_connection.values()) == [2, 2]  # two on each path
        writer = LeanRest(client.ApiClient(loopback_config(peer.port)))  # ...but taken by the next
        assert writer.get("/e", timeout=30) == {}
        assert (writer.connects, writer.adopted) == (0, 1)
        assert sorted(peer.by_connection.values()) == [2, 3]
        writer.close()
    finally:
        rest.close()


def test_each_thread_parks_its_direct_connection_at_its_first_request_after(peer: Peer) -> None:
    until = threading.Event()
    rest = LeanRest(client.ApiClient(loopback_config(peer.port)), direct=False, direct_until=until)
    conns: list[object] = []

    def read() -> None:
        rest.get("/x", timeout=30)
        conns.append(getattr(rest._local, "conn", None))

    try:
        for _ in range(2):
            t = threading.Thread(target=read)
            t.start()
            t.join()
        assert rest.connects == 2 and all(c is not None for c in conns)  # one per thread
        until.set()
        read()
        assert conns[-1] is None and rest._aio.connects == 1
    finally:
        rest.close()


def test_without_an_event_or_with_a_proxy_the_reads_go_through_aiohttp_from_the_first(peer: Peer) -> None:
    plain = LeanRest(client.ApiClient(loopback_config(peer.port)), direct=False)
    proxied_cfg = loopback_config(peer.port)
    proxied_cfg.proxy = f"http://127.0.0.1:{peer.port}"
    proxied = LeanRest(client.ApiClient(proxied_cfg), direct=False, direct_until=threading.Event())
    try:
        assert plain.get("/a", timeout=30) == {}
        assert (plain.connects, plain._aio.connects) == (0, 1)
        assert not proxied._goes_direct()
    finally:
        plain.close()
        proxied.close()
