"""A GET over the direct path is asked once more on a new connection when the first gets no answer; the
caller's timeout bounds both tries together: the second gets what is left, not the whole timeout again."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.unit._raw_server import RawServer, requests_on
from tests.unit._scripted_server import loopback_config
from volsched.kube.rest import LeanRest

TIMEOUT = 5.0
FIRST_TRY = 0.3  # the first connection is dropped, unanswered, after this long


class _DropsTheFirst(RawServer):
    """Loopback HTTP/1.1: the first connection's request is dropped unanswered after FIRST_TRY seconds;
    later ones get 200 {}."""

    def serve(self, conn: socket.socket, number: int) -> None:
        if next(requests_on(conn), None) is None:
            return
        if number == 1:
            time.sleep(FIRST_TRY)
            return
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")


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
    assert server.connections == 2
    assert TIMEOUT - FIRST_TRY < rest.asked[0] <= TIMEOUT
    assert rest.asked[1] <= TIMEOUT - FIRST_TRY  # the first try's time is spent
