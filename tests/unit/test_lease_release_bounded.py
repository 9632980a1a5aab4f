"""A release (shutdown) does not wait on a renewal in flight whose answer hangs, and the renewal writes
nothing once the holder stopped: the Lease is given up at once where it can be, and a successor may take
it. Fault injection: a loopback server that serves one Lease as the apiserver does (a PUT whose
resourceVersion is not the current one is refused with 409) and holds chosen requests back.

Whether the release waited for the renewal is told by what was still under way when it returned, never
by a clock."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client

from tests.unit._scripted_server import loopback_config
from volsched.kube.lease import LeaderLease, LeaseSettings, lease_path

NS, NAME = "volsched-system", "volsched-scheduler"
#: Seconds a held request waits at most for what it waits on (then it goes on: a test that fails ends).
HOLD = 10.0


@dataclass
class Hold:
    """Request number ``n`` (in arrival order) waits for ``until`` before it is applied (``stage``
    "apply") or, applied already, before it is answered ("answer": a write that landed, its answer late)."""

    stage: str
    until: threading.Event


@dataclass
class LeaseServer:
    """One Lease of ``me``'s (resourceVersion 1); ``holds`` by request number; ``seen`` the requests
    in arrival order (method, holder written for a PUT, status answered)."""

    holds: dict[int, Hold] = field(default_factory=dict)
    seen: list[tuple[str, str, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lease: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": NAME, "namespace": NS, "resourceVersion": "1"},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15, "leaseTransitions": 0},
        }
        self.arrived: defaultdict[int, threading.Event] = defaultdict(threading.Event)
        self.applied: defaultdict[int, threading.Event] = defaultdict(threading.Event)
        self._lock = threading.Lock()
        self._count = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, payload = outer.handle(self.command, self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def handle(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        assert path == lease_path(NS, NAME), path
        with self._lock:
            n, self._count = self._count, self._count + 1
            self.arrived[n].set()
        hold = self.holds.get(n)
        if hold is not None and hold.stage == "apply":
            hold.until.wait(HOLD)
        with self._lock:
            if method == "GET":
                status, payload = 200, json.loads(json.dumps(self.lease))
            elif body["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
                status, payload = 409, {"kind": "Status", "code": 409, "reason": "Conflict"}
            else:
                version = int(self.lease["metadata"]["resourceVersion"]) + 1
                body["metadata"]["resourceVersion"] = str(version)
                self.lease = payload = body
                status = 200
            written = str(body.get("spec", {}).get("holderIdentity", "")) if method == "PUT" else ""
            self.seen.append((method, written, status))
            self.applied[n].set()
        if hold is not None and hold.stage == "answer":
            hold.until.wait(HOLD)
        return status, payload

    @property
    def holder(self) -> str:
        with self._lock:
            return str(self.lease["spec"].get("holderIdentity") or "")

    def writes(self) -> list[tuple[str, int]]:
        with self._lock:
            return [(holder, status) for method, holder, status in self.seen if method == "PUT"]


def served() -> Iterator[LeaseServer]:
    """A Lease server for a test (a fixture's body), shut down after it."""
    s = LeaseServer()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def renewed(lease: LeaderLease) -> bool:
    """One renewal, due now (the last one 3 s ago), on this thread."""
    lease._won(time.monotonic() - 3.0)
    return lease._renew(acquire=False)


def _renewing_holder(server: LeaseServer) -> LeaderLease:
    """The holder, its Lease renewed 3 s ago (ours 7 s more): its next renewal is made behind."""
    api = client.ApiClient(loopback_config(server.httpd.server_address[1], retries=False))
    lease = LeaderLease(api, LeaseSettings(namespace=NS, name=NAME, duration=15.0, renew_every=2.0), "me")
    lease._won(time.monotonic() - 3.0, how="created")
    return lease


#: (case, the request held and at which stage) -- request 0 is the renewal's read, 1 its write.
HUNG: list[tuple[str, int, str]] = [
    ("the renewal's read hangs", 0, "answer"),
    ("the renewal's write landed, its answer hangs", 1, "answer"),
]


@pytest.mark.parametrize(("case", "n", "stage"), HUNG, ids=[h[0] for h in HUNG])
def test_a_release_gives_the_lease_up_without_waiting_for_a_renewal_whose_answer_hangs(
    case: str, n: int, stage: str
) -> None:
    server, go = LeaseServer(), threading.Event()
    server.holds[n] = Hold(stage, go)
    lease = _renewing_holder(server)
    try:
        assert lease.renew_if_due()  # a renewal starts behind ...
        assert server.arrived[n].wait(HOLD)  # ... and hangs
        renewal = lease._behind
        assert renewal is not None

        lease.release()
        assert renewal.is_alive(), "the release waited for the renewal's answer"
        assert server.holder == ""  # given up: a successor takes it at once
        assert lease.time_left() <= 0 and not lease.ensure()
    finally:
        go.set()
    renewal.join(HOLD)
    assert not renewal.is_alive()
    # The renewal wrote nothing once the holder stopped: the release's write is the last one.
    assert server.writes()[-1] == ("", 200)
    assert server.holder == ""
    assert lease.time_left() <= 0 and not lease.renew_if_due()


def test_a_renewal_write_landing_between_the_releases_read_and_write_is_read_again_and_released() -> None:
    server = LeaseServer()
    # The renewal's write (request 1) is sent, then lands only once the release's write (3) arrived,
    # which is applied after it: the release read the Lease before the renewal's write (2).
    server.holds[1] = Hold("apply", server.arrived[3])
    server.holds[3] = Hold("apply", server.applied[1])
    lease = _renewing_holder(server)
    assert lease.renew_if_due()
    assert server.arrived[1].wait(HOLD)
    lease.release()
    assert server.holder == ""
    assert server.writes() == [("me", 200), ("", 409), ("", 200)]
    assert lease._behind is not None
    lease._behind.join(HOLD)
    assert lease.time_left() <= 0 and server.holder == ""
