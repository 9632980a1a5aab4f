"""Binds and evictions over kept-alive connections: a lost answer, a connection the apiserver closed.

A fault-injection server (the apiserver's bind rules: a pod is bound once, a second bind is 409, a bind
naming another UID is 409; an eviction makes the pod terminating) that can take a bind or an eviction
and drop the connection without answering, drop reads, or close a kept-alive connection after an answer.
A request whose answer was lost may have taken effect: the outcome says what the pod read back shows,
or UNKNOWN when it cannot be read (never a failure that would free the pod's room in the cache).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client

from tests.fences import ClosingFence
from tests.unit._scripted_server import loopback_config
from volsched.cycle import BOUND, CONFLICT, EVICTED, UNKNOWN
from volsched.framework.decisions import Bind, Evict, EvictionReason
from volsched.kube.rest import AUTH_TTL
from volsched.kube.writer import KubeWriter
from volsched.model.vocabulary import SCHEDULER_NAME

TOKEN = "s3cret-token-value"


class BindServer:
    """Pods ``ns/<name>`` (uid, nodeName). ``drops``: what the next binds do instead of answering
    (``"bind"``: bind the pod, then drop; ``"lose"``: drop unread; ``"other-node"``: another binder
    puts the pod on n2, then drop; ``"evict"``: evict the pod, then drop). ``unread``: how many reads
    are dropped unanswered. ``close_after``: close the connection after each answer."""

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, str]] = {}
        self.drops: list[str] = []
        self.unread = 0
        self.evicted: list[str] = []
        self.close_after = False
        self.posts: list[str] = []
        self.tokens: list[str] = []  # each bind's Authorization header
        self.binds_done: list[tuple[str, str]] = []
        self.closed = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                if outer.close_after:
                    self.close_connection = True

            def do_GET(self) -> None:
                if outer.unread:
                    outer.unread -= 1
                    self.close_connection = True  # no answer
                    return
                name = self.path.rsplit("/", 1)[-1]
                pod = outer.pods.get(name)
                if pod is None:
                    self._reply(404, {"kind": "Status", "message": "not found"})
                    return
                meta = {"name": name, "namespace": "ns", "uid": pod["uid"]}
                if name in outer.evicted:
                    meta["deletionTimestamp"] = "2026-11-22T20:00:00Z"
                self._reply(
                    200,
                    {
                        "metadata": meta,
                        "spec": {"schedulerName": SCHEDULER_NAME, "nodeName": pod["nodeName"]},
                    },
                )

            def do_PATCH(self) -> None:  # a pod's condition
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._reply(200, {})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                if self.path.endswith("/events"):
                    self._reply(201, body)
                    return
                name = self.path.split("/")[-2]
                if self.path.endswith("/eviction"):
                    self._evict(name)
                    return
                outer.posts.append(name)
                outer.tokens.append(self.headers.get("Authorization") or "")
                drop = outer.drops.pop(0) if outer.drops else ""
                if drop:
                    if drop == "bind":
                        self._bind(name, body)
                    elif drop == "other-node":
                        outer.pods[name]["nodeName"] = "n2"
                    self.close_connection = True  # no answer at all
                    return
                status, message = self._bind(name, body)
                self._reply(status, {"kind": "Status", "message": message})

            def _evict(self, name: str) -> None:
                drop = outer.drops.pop(0) if outer.drops else ""
                if drop != "lose":
                    outer.evicted.append(name)
                if drop:
                    self.close_connection = True  # no answer at all
                    return
                self._reply(201, {"kind": "Status", "status": "Success"})

            def _bind(self, name: str, body: dict[str, Any]) -> tuple[int, str]:
                pod = outer.pods[name]
                if body["metadata"].get("uid") not in (None, pod["uid"]):
                    return 409, "uid precondition failed"
                if pod["nodeName"]:
                    return 409, f"pod {name} is already assigned to node {pod['nodeName']}"
                pod["nodeName"] = body["target"]["name"]
                outer.binds_done.append((name, pod["nodeName"]))
                return 201, "bound"

        class Server(ThreadingHTTPServer):
            def shutdown_request(self, request: Any) -> None:
                super().shutdown_request(request)  # the connection is closed now
                outer.closed.set()

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def server() -> Iterator[BindServer]:
    s = BindServer()
    yield s
    s.httpd.shutdown()


def _writer(server: BindServer, path: str, **kw: Any) -> Iterator[KubeWriter]:
    cfg = loopback_config(server.port, token=TOKEN)
    if path == "proxy":
        cfg.proxy = cfg.host  # the fault-injection server serves the proxied requests itself
    elif path == "tls-server-name":
        cfg.tls_server_name = "apiserver.example"
    with client.ApiClient(cfg) as api:
        w = KubeWriter(api, **kw)
        assert w.rest.direct == (path == "direct")
        yield w
        w.close()


@pytest.fixture
def writer(server: BindServer) -> Iterator[KubeWriter]:
    yield from _writer(server, "direct")


@pytest.fixture(params=["direct", "proxy", "tls-server-name"])
def any_writer(server: BindServer, request: pytest.FixtureRequest) -> Iterator[KubeWriter]:
    """A writer over each request path: direct http.client, or aiohttp's client (which a proxy or a TLS
    server name needs)."""
    yield from _writer(server, request.param)


def _pod(name: str, uid: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": uid},
        "spec": {"schedulerName": SCHEDULER_NAME},
    }


@pytest.mark.parametrize(
    ("drops", "uid_on_server", "result", "posts", "binds", "node"),
    [
        (["bind"], "u1", BOUND, 2, [("p", "n1")], "n1"),  # the lost bind took: bound once, by us
        (["lose"], "u1", BOUND, 2, [("p", "n1")], "n1"),  # it never arrived: the second one binds
        (["other-node"], "u1", CONFLICT, 2, [], "n2"),  # another binder got there: not ours
        # No answer twice, read back unbound: either may land yet, so the pod stays assumed (UNKNOWN).
        (["lose", "lose"], "u1", UNKNOWN, 2, [], ""),
        (["bind", "lose"], "u1", BOUND, 2, [("p", "n1")], "n1"),  # no answer twice, but the first took
        (["bind", "lose", "unread"], "u1", UNKNOWN, 2, [("p", "n1")], "n1"),  # ... and it cannot be read
        # The lost bind took, the resend is refused (409), and the pod cannot be read: it may be ours.
        (["bind", "unread"], "u1", UNKNOWN, 2, [("p", "n1")], "n1"),
    ],
    ids=[
        "lost-answer-bound",
        "lost-request",
        "bound-elsewhere",
        "lost-twice",
        "lost-twice-bound",
        "unread",
        "refused-resend-unread",
    ],
)
def test_a_bind_whose_answer_was_lost_is_sent_once_more_and_is_ours_only_on_our_node(
    server: BindServer,
    any_writer: KubeWriter,
    drops: list[str],
    uid_on_server: str,
    result: str,
    posts: int,
    binds: list[tuple[str, str]],
    node: str,
) -> None:
    server.pods["p"] = {"uid": uid_on_server, "nodeName": ""}
    server.drops = [d for d in drops if d != "unread"]
    server.unread = 2 if "unread" in drops else 0  # a read is asked once more on a new connection
    out = any_writer.bind(Bind(pod="ns/p", uid="u1", node="n1"), _pod("p", "u1"))
    assert out.result == result, out.detail
    assert len(server.posts) == posts
    assert server.binds_done == binds
    assert server.pods["p"]["nodeName"] == node
    assert TOKEN not in out.detail
    if result == CONFLICT:
        assert out.pod is not None and out.pod["spec"]["nodeName"] == "n2"  # the cache is corrected


@pytest.mark.parametrize(
    ("drop", "unread", "result", "node"),
    [
        ("bind", 0, BOUND, "n1"),  # the first took: the pod read back is on our node
        ("lose", 0, UNKNOWN, ""),  # read back unbound: it may land yet (a real one: tests/e2e)
        ("bind", 2, UNKNOWN, "n1"),  # it took, but the pod cannot be read: it may be bound
    ],
    ids=["first-took", "first-lost", "unread"],
)
def test_a_bind_whose_answer_was_lost_and_whose_resend_is_fenced_says_what_the_first_did(
    server: BindServer, drop: str, unread: int, result: str, node: str
) -> None:
    """The Lease lost between the bind and its resend: the first request may have bound the pod, so the
    outcome is not FENCED "not sent" (which frees the pod's room in the cache) but what a read shows."""
    server.pods["p"] = {"uid": "u1", "nodeName": ""}
    server.drops, server.unread = [drop], unread
    fenced = _writer(server, "direct", fence=ClosingFence(open_for=1))
    writer = next(fenced)
    try:
        out = writer.bind(Bind(pod="ns/p", uid="u1", node="n1"), _pod("p", "u1"))
    finally:
        fenced.close()
    assert out.result == result, out.detail
    assert server.posts == ["p"]  # the resend was fenced: sent once
    assert server.pods["p"]["nodeName"] == node
    if result != BOUND:
        assert "no answer" in out.detail and "Lease" in out.detail


def _evict(writer: KubeWriter) -> Any:
    e = Evict(pod="ns/p", uid="u1", node="n1", reason=EvictionReason(action="preempt"))
    return writer.evict(e, {**_pod("p", "u1"), "spec": {"schedulerName": SCHEDULER_NAME, "nodeName": "n1"}})


@pytest.mark.parametrize(
    ("drop", "unread", "result"),
    [
        ("evict", 0, EVICTED),  # it took: the pod read back is terminating
        ("lose", 0, UNKNOWN),  # read back running: it may land yet
        ("evict", 2, UNKNOWN),  # it took, but the pod cannot be read: it may be evicted
    ],
    ids=["took", "lost-request", "unread"],
)
def test_an_eviction_whose_answer_was_lost_says_what_the_pod_read_back_shows(
    server: BindServer, writer: KubeWriter, drop: str, unread: int, result: str
) -> None:
    server.pods["p"] = {"uid": "u1", "nodeName": "n1"}
    server.drops = [drop]
    server.unread = unread
    out = _evict(writer)
    assert out.result == result, out.detail
    assert "no answer" in out.detail
    assert server.evicted == ([] if drop == "lose" else ["p"])


def test_a_pod_bound_to_our_node_under_another_uid_is_a_conflict_after_a_lost_answer(
    server: BindServer, any_writer: KubeWriter
) -> None:
    # A new pod by that name, already on n1: the bind naming the old UID is not ours.
    server.pods["p"] = {"uid": "u2", "nodeName": "n1"}
    server.drops = ["lose"]
    out = any_writer.bind(Bind(pod="ns/p", uid="u1", node="n1"), _pod("p", "u1"))
    assert out.result == CONFLICT
    assert server.binds_done == []


def test_a_kept_alive_connection_the_apiserver_closed_is_reopened_and_the_bind_sent_once(
    server: BindServer, writer: KubeWriter
) -> None:
    server.pods = {"a": {"uid": "ua", "nodeName": ""}, "b": {"uid": "ub", "nodeName": ""}}
    server.close_after = True
    first = writer.bind(Bind(pod="ns/a", uid="ua", node="n1"), _pod("a", "ua"))
    assert server.closed.wait(5)
    server.close_after = False
    second = writer.bind(Bind(pod="ns/b", uid="ub", node="n1"), _pod("b", "ub"))
    assert (first.result, second.result) == (BOUND, BOUND)
    assert server.posts == ["a", "b"]  # nothing sent twice
    assert server.binds_done == [("a", "n1"), ("b", "n1")]
    assert writer.rest.connects == 2
    assert writer.health.failures == 0


def test_binds_keep_their_connection_alive(server: BindServer, writer: KubeWriter) -> None:
    server.pods = {f"p{i}": {"uid": f"u{i}", "nodeName": ""} for i in range(5)}
    outcomes = [
        writer.bind(Bind(pod=f"ns/p{i}", uid=f"u{i}", node="n1"), _pod(f"p{i}", f"u{i}")) for i in range(5)
    ]
    assert [o.result for o in outcomes] == [BOUND] * 5
    assert writer.rest.connects == 1


def test_a_connection_opened_ahead_is_the_one_the_threads_next_bind_goes_out_on(
    server: BindServer, writer: KubeWriter
) -> None:
    """The session thread opens its connection after its first session: the first arriving pod's bind,
    sent on that thread, does not wait for a handshake. An answer that is an error status (here 404:
    the server serves no /version) leaves it open all the same."""
    server.pods = {"a": {"uid": "ua", "nodeName": ""}}
    writer.connect_ahead()
    assert writer.rest.connects == 1
    assert writer.bind(Bind(pod="ns/a", uid="ua", node="n1"), _pod("a", "ua")).result == BOUND
    assert writer.rest.connects == 1  # the same connection
    assert server.binds_done == [("a", "n1")]
    assert writer.health.failures == 0


def test_connecting_ahead_to_an_apiserver_that_does_not_answer_raises_nothing(
    server: BindServer, writer: KubeWriter
) -> None:
    server.unread = 2  # the read and its second try dropped unanswered
    writer.connect_ahead()
    server.pods = {"a": {"uid": "ua", "nodeName": ""}}
    assert writer.bind(Bind(pod="ns/a", uid="ua", node="n1"), _pod("a", "ua")).result == BOUND


class CountingSocket:
    """A connection's socket that counts its writes."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.writes = 0

    def sendall(self, data: bytes) -> None:
        self.writes += 1
        self.sock.sendall(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


def test_a_bind_and_its_body_go_out_in_one_write(server: BindServer, writer: KubeWriter) -> None:
    server.pods = {"a": {"uid": "ua", "nodeName": ""}, "b": {"uid": "ub", "nodeName": ""}}
    assert writer.bind(Bind(pod="ns/a", uid="ua", node="n1"), _pod("a", "ua")).result == BOUND
    conn = writer.rest._local.conn
    counting = conn.sock = CountingSocket(conn.sock)
    assert writer.bind(Bind(pod="ns/b", uid="ub", node="n1"), _pod("b", "ub")).result == BOUND
    assert counting.writes == 1
    assert server.binds_done == [("a", "n1"), ("b", "n1")]


def test_credentials_are_read_again_once_a_second_so_a_rotated_token_is_used(
    server: BindServer, writer: KubeWriter
) -> None:
    now = [100.0]
    writer.rest._clock = lambda: now[0]
    cfg = writer.api.configuration
    reads = []

    def refresh(c: client.Configuration) -> None:  # what a kubeconfig's hook does: the token again
        reads.append(now[0])

    cfg.refresh_api_key_hook = refresh
    server.pods = {f"p{i}": {"uid": f"u{i}", "nodeName": ""} for i in range(4)}

    def bind(i: int) -> None:
        assert (
            writer.bind(Bind(pod=f"ns/p{i}", uid=f"u{i}", node="n1"), _pod(f"p{i}", f"u{i}")).result == BOUND
        )

    bind(0)
    now[0] += AUTH_TTL / 2
    bind(1)
    cfg.api_key = {"authorization": "rotated-token"}
    bind(2)  # within the second: the token read before
    now[0] += AUTH_TTL
    bind(3)
    assert server.tokens == [f"Bearer {TOKEN}"] * 3 + ["Bearer rotated-token"]
    assert reads == [100.0, 100.0 + 1.5 * AUTH_TTL]
