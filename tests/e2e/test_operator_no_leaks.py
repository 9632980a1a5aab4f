"""No credential reaches a log line, an event or /metrics: the operator runs with a metrics URL that
carries credentials, against a source that fails and echoes them back in its error body, and then gets
a config whose rejection message would quote the URL."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.e2e.operator_fixtures import OPERATOR_NS, Kube, Start, node, pod, wait_for
from volsched.redaction import basic_credential

pytestmark = pytest.mark.cluster

USER, PASSWORD = "scraper", "pr0m-s3cret-in-url"


class _Echo(BaseHTTPRequestHandler):
    """A metrics backend that refuses everyone and echoes what it was sent, credentials included."""

    def _answer(self) -> None:
        body = (  # what a careless proxy says: the credentials first, within any length limit
            f"denied {PASSWORD} Authorization: {self.headers.get('Authorization')} password={PASSWORD}"
            f" user={USER} for {self.command} {self.path}"
        ).encode()
        self.send_response(401)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def echoing_source() -> Iterator[tuple[str, list[str]]]:
    """The source's base URL (host:port) and the Authorization headers it received."""
    seen: list[str] = []

    class Handler(_Echo):
        def _answer(self) -> None:
            seen.append(str(self.headers.get("Authorization")))
            super()._answer()

        do_GET = do_POST = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _config(address: str) -> str:
    return f"""\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: usage
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
metrics:
  address: {address}
  interval: 1s
"""


def test_credentials_in_the_metrics_url_never_reach_logs_events_or_metrics(
    k: Kube, start_operator: Start, echoing_source: tuple[str, list[str]]
) -> None:
    host, seen = echoing_source
    credential = basic_credential(USER, PASSWORD)
    k.nodes(node("n1", cpu="4"))
    k.set_config(_config(f"http://{USER}:{PASSWORD}@{host}"))
    op = start_operator("--log-level", "DEBUG")
    ns = k.namespace("no-leaks")
    k.pods(ns, pod("p-0"))
    wait_for(lambda: k.bound(ns), 30, what="a pod bound while the source fails")
    wait_for(
        lambda: op.metric("volsched_metrics_fetch_errors_total", source="prometheus") >= 2, 20, what="errors"
    )
    assert any(credential in h for h in seen)  # the credentials were really used, and echoed back

    # A config rejected for its address: the rejection names the field, never the credentials.
    k.set_config(_config(f"ftp://{USER}:{PASSWORD}@{host}"))
    events = wait_for(
        lambda: [
            e for e in k.core.list_namespaced_event(OPERATOR_NS).items if e.reason == "InvalidSchedulerConfig"
        ],
        20,
        what="InvalidSchedulerConfig event",
    )
    assert "metrics.address" in events[0].message

    printed = {
        "log": op.log(),
        "events": "\n".join(str(e.to_dict()) for e in k.core.list_event_for_all_namespaces().items),
        "/metrics": op.metrics(),
        "/ui/state.json": urllib.request.urlopen(f"http://127.0.0.1:{op.port}/ui/state.json", timeout=5)
        .read()
        .decode(),
    }
    assert "fetch failed" in printed["log"] and "metrics collector started" in printed["log"]
    for where, text in printed.items():
        for secret in (PASSWORD, credential):
            assert secret not in text, f"{secret!r} printed in {where}"
