"""A GET over the direct path is asked once more on a new connection when the first gets no answer; the
caller's timeout bounds both tries together: the second gets what is left, not the whole timeout again."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.unit._scripted_server import loopback_config
from volsched.kube.rest import LeanRest

TIMEOUT = 5.0
FIRST_TRY = 0.3  # the first connection is dropped, unanswered, after this long


class _DropsTheFirst:
    """Loopback HTTP/1.1: the first connection's request is dropped unanswered after FIRST_TRY seconds;
    later ones get 200 {}."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(conn, self.accepted == 1), daemon=True).start()

    def _serve(self, conn: socket.socket, drop: bool) -> None:
        with conn:
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
            if drop:
                time.sleep(FIRST_TRY)
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")

    def close(self) -> None:
        self.sock.close()


class _Recording(LeanRest):
    def __init__(self, api: client.ApiClient) -> None:
        super().__init__(api, direct=True)
        self.asked: list[float] = []

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        self.asked.append(timeout)
        return super()._connection(timeout)


@pytest.fixture
def server() -> Iterator[_DropsTheFirst]:
    s = _DropsTheFirst()
    yield s
    s.close()


def test_a_gets_second_try_gets_only_what_is_left_of_the_timeout(server: _DropsTheFirst) -> None:
    api = client.ApiClient(loopback_config(server.port))
    rest = _Recording(api)
    try:
        assert rest.get("/api/v1/namespaces/x/configmaps/y", timeout=TIMEOUT, throttle_retries=0) == {}
    finally:
        rest.close()
        api.close()  # type: ignore[no-untyped-call]
    assert server.accepted == 2
    assert TIMEOUT - FIRST_TRY < rest.asked[0] <= TIMEOUT
    assert rest.asked[1] <= TIMEOUT - FIRST_TRY  # the first try's time is spent
