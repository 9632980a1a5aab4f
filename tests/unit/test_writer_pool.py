"""Pooled connections are only reused once their response was read to the end (fault injection).

The server below answers every request with its headers first and its body a moment later, the way a
loaded apiserver's response can arrive in two pieces. A client that returns the connection to the pool
after the headers (without reading the body) sends its next request on that connection and reads the
late body as the next status line (``BadStatusLine``). The Lease and the ConfigMap reads keep one
connection each (aiohttp's client); the writer's requests go over its worker's own kept-alive
connection (``volsched.kube.rest``'s direct path), which must be as clean: each write is followed here
by reads on the others' connections and by the next write on the writer's.
"""

from __future__ import annotations

import itertools
import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.unit._raw_server import RawServer, requests_on
from tests.unit._scripted_server import loopback_config
from volsched.cycle import BOUND, EVICTED
from volsched.framework.decisions import Bind, Evict, EvictionReason
from volsched.kube.configsource import read_config_map
from volsched.kube.lease import LeaderLease, LeaseSettings
from volsched.kube.rest import LeanRest
from volsched.kube.writer import EventTarget, KubeWriter, WriterSettings
from volsched.model.vocabulary import SCHEDULER_NAME

BODY_DELAY = 0.05


class SplitResponseServer(RawServer):
    """HTTP/1.1 keep-alive on loopback: headers, a pause, then the body. Counts connections."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        super().__init__()

    def serve(self, conn: socket.socket, number: int) -> None:
        for request in requests_on(conn):
            self.requests.append(f"{request.method} {request.target}")
            body = json.dumps(self._answer(request.method, request.target)).encode()
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
            )
            time.sleep(BODY_DELAY)
            conn.sendall(body)

    @staticmethod
    def _answer(method: str, path: str) -> dict[str, Any]:
        if "/configmaps/" in path:
            return {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cfg", "namespace": "ns", "resourceVersion": "7", "uid": "u"},
                "data": {"key": "text"},
            }
        if "/leases/" in path:
            return {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": "lease", "namespace": "ns", "resourceVersion": "3"},
                "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 15,
                         "renewTime": "2099-01-01T00:00:00.000000Z"},
            }  # fmt: skip
        return {"apiVersion": "v1", "kind": "Status", "status": "Success"}


@pytest.fixture
def server() -> Iterator[SplitResponseServer]:
    s = SplitResponseServer()
    yield s
    s.close()


@pytest.fixture
def api(server: SplitResponseServer) -> Iterator[client.ApiClient]:
    # One connection every call reuses; no retry (it would hide the stale read).
    with client.ApiClient(loopback_config(server.port, retries=False, pool_size=1)) as api:
        yield api


def _pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name},
        "spec": {"schedulerName": SCHEDULER_NAME},
    }


_n = itertools.count()
WRITES: list[tuple[str, Callable[[KubeWriter], Any]]] = [
    ("bind", lambda w: w.bind(Bind(pod="ns/p", uid="p", node="n1"), _pod("p")).result == BOUND),
    (
        "evict",
        lambda w: (
            w.evict(
                Evict(pod="ns/p", uid="p", node="n1", reason=EvictionReason(action="preempt", detail="r")),
                _pod("p"),
            ).result
            == EVICTED
        ),
    ),
    ("queue status", lambda w: w._write_queue("q", {"state": "Open"}) == (1, 0, None)),
    ("podgroup status", lambda w: w._write_podgroup("ns/pg", {"phase": "Running"}, "t") == (1, 0, None)),
    ("pod condition", lambda w: w._write_condition("ns/p", "p", "no fit", "t") == (1, 0, None)),
    (
        # A new message each time, in other words (the same one is never sent twice, nor one that only
        # moves the numbers of the last within event_every).
        "event",
        lambda w: (
            w.post_object_event(
                EventTarget("Pod", "v1", "ns", "p", "p"),
                reason="FailedScheduling",
                message=f"no fit on node {'abcdefgh'[next(_n) % 8]}",
            )
            == (1, None, False)
        ),
    ),
]


@pytest.mark.parametrize(("what", "write"), WRITES, ids=[w[0] for w in WRITES])
def test_a_write_leaves_its_pooled_connection_clean_for_the_next_call(
    server: SplitResponseServer, api: client.ApiClient, what: str, write: Callable[[KubeWriter], Any]
) -> None:
    writer = KubeWriter(api, WriterSettings(workers=1))
    reads = LeanRest(api, direct=False)  # the operator's reads: through aiohttp's client, as the Lease's
    lease = LeaderLease(api, LeaseSettings(namespace="ns", name="lease"), "me")
    try:
        for _ in range(3):
            assert write(writer), f"{what} failed"
            cm = read_config_map(reads, "ns", "cfg", "key")  # the next call on the same connection
            assert cm is not None and cm.text == "text"
            assert lease.ensure() is False  # read (held by someone else), no error
    finally:
        writer.close()
        reads.close()
        lease.rest.close()
    assert writer.rest.connects == 1, "the writer's connection was dropped instead of reused"
    assert reads._aio.connects == 1, "a reader's connection was dropped"
    assert (lease.rest.connects, lease.rest._aio.connects) == (1, 0), "the Lease's connection was dropped"
    assert server.connections == 3, "a connection was dropped instead of reused"


def test_zero_workers_still_send_through_one_of_each(
    server: SplitResponseServer, api: client.ApiClient
) -> None:
    # `--workers 0 --bind-workers 0`: at least one of each runs (as the pool's size counts them), so
    # binds and the other writes still go out, rather than the writer failing to start.
    writer = KubeWriter(api, WriterSettings(workers=0, bind_workers=0))
    try:
        reason = EvictionReason(action="preempt", detail="r")
        evicted = writer.evict_all(
            [Evict(pod="ns/p", uid="p", node="n1", reason=reason)], {"ns/p": _pod("p")}
        )
        bound = writer.bind_all([Bind(pod="ns/p", uid="p", node="n1")], {"ns/p": _pod("p")})
    finally:
        writer.close()
    assert [o.result for o in evicted] == [EVICTED]
    assert [o.result for o in bound] == [BOUND]
