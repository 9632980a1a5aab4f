"""The e2e tests' operator process is found on the port it bound itself, never on one a probe found free
(another process, e.g. another test run's operator, may take that port before it is bound)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import tests.e2e.operator_fixtures as fixtures
from tests.e2e.operator_fixtures import Start

pytestmark = pytest.mark.cluster


class Squatter(BaseHTTPRequestHandler):
    """Another process's server on the port: it answers /healthz too."""

    def do_GET(self) -> None:
        body = b"ok\n" if self.path == "/healthz" else b"# not volsched\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def squatter() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Squatter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_the_operator_is_found_on_its_own_port_when_another_process_took_the_free_one(
    start_operator: Start, squatter: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race made certain: the port a free-port probe returns is taken by the time it is used.
    monkeypatch.setattr(fixtures, "free_port", lambda: squatter)
    op = start_operator()
    assert op.port != squatter
    op.check_running()
    assert "volsched_sessions_total" in op.metrics()
