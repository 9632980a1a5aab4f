"""A listing stopped mid-way ends at once: stop() gives up the page on its way (its read may take a
minute), rather than waiting for it, and nothing of that page or after it is handed over. Fault
injection: a loopback server whose answer to one page's request is held back until the test lets it go.
The test stops the listing once the pages before it are handed over: a page is asked for while the one
before it is still being handed over, and a listing stopped then rightly hands that one over no more.

Whether the listing waited is told by what was still held when its thread had ended, never by a clock."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client

from tests.unit._scripted_server import loopback_config
from volsched.kube.lister import WATCHED
from volsched.kube.watch import ListWatch

PODS = next(k for k in WATCHED if k.kind == "Pod")
PAGES = 3
#: Seconds a held answer waits at most (then it goes out: a test that fails ends); the test's own
#: waits are shorter, so a listing that waits for the page is seen still running.
HOLD = 30.0
JOIN = 10.0


class PageServer:
    """``PAGES`` pages of one pod each; the answer to page ``held`` (0-based) waits for ``go``.
    ``asked[n]`` is set when page n's request arrived, ``answered`` lists the pages answered."""

    def __init__(self, held: int) -> None:
        self.held, self.go = held, threading.Event()
        self.asked = [threading.Event() for _ in range(PAGES)]
        self.answered: list[int] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                n = int(query.get("continue", ["0"])[0])
                outer.asked[n].set()
                if n == outer.held:
                    outer.go.wait(HOLD)
                following = str(n + 1) if n + 1 < PAGES else ""
                pod = {
                    "metadata": {"name": f"p{n}", "namespace": "ns", "uid": f"u{n}", "resourceVersion": "5"}
                }
                body = {"metadata": {"resourceVersion": "5", "continue": following}, "items": [pod]}
                data = json.dumps(body).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up the connection
                    return
                outer.answered.append(n)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def serve() -> Iterator[Callable[[int], tuple[PageServer, client.ApiClient]]]:
    made: list[PageServer] = []
    apis: list[client.ApiClient] = []

    def make(held: int) -> tuple[PageServer, client.ApiClient]:
        server = PageServer(held)
        made.append(server)
        apis.append(client.ApiClient(loopback_config(server.httpd.server_address[1], retries=False)))
        return server, apis[-1]

    yield make
    for server in made:
        server.go.set()
        server.httpd.shutdown()
    for a in apis:
        a.close()


@pytest.mark.parametrize("held", [0, 1, 2], ids=["the first page", "the second page", "the last page"])
def test_a_listing_stopped_while_a_page_is_on_its_way_ends_without_waiting_for_it(
    serve: Callable[[int], tuple[PageServer, client.ApiClient]], held: int
) -> None:
    server, kube = serve(held)
    seen: list[str] = []
    before = threading.Event()  # the pages before the held one handed over
    if held == 0:
        before.set()

    def on_event(_type: str, obj: dict[str, Any]) -> None:
        seen.append(obj["metadata"]["name"])
        if len(seen) == held:
            before.set()

    w = ListWatch(kube, PODS, on_event=on_event, page_size=1)
    w.start()
    assert server.asked[held].wait(JOIN)  # the page is on its way, its answer held back
    # It is asked for while the page before it is handed over (fetched ahead): stopped before that page
    # is handed over, the listing rightly hands it over no more.
    assert before.wait(JOIN)
    w.stop(timeout=JOIN)
    assert w._thread is not None
    assert not w._thread.is_alive(), "the listing waited for the page on its way"
    assert held not in server.answered  # ended while the page was still held back
    assert not w.synced.is_set()
    server.go.set()  # the page comes now: nothing of it is handed over
    for t in threading.enumerate():
        if t.name == "volsched-list-pods":
            t.join(JOIN)
    assert seen == [f"p{n}" for n in range(held)]
