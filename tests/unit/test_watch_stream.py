"""The lean watch reads its chunked stream itself (volsched.kube.rest.chunked_lines, not urllib3's
machinery): every event whole and in order however the bytes are cut into chunks and reads, the end of
an answer found exactly (its kept-alive connection serves the next watch), a cut or garbled stream a
failure the watch recovers from (from its last resourceVersion), 410 Gone a relist."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.unit._raw_server import RawServer, requests_on
from tests.unit._scripted_server import loopback_config
from volsched.kube.health import is_unreachable
from volsched.kube.lister import WATCHED
from volsched.kube.rest import LeanRest, StreamBroken, chunked_lines
from volsched.kube.watch import Expired, ListWatch

PODS = next(k for k in WATCHED if k.kind == "Pod")
END = b"0\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def lines_of(reads: list[bytes]) -> tuple[list[bytes], bool]:
    """What chunked_lines yields from these reads, and whether the answer ended exactly."""
    pieces = iter(reads)
    out: list[bytes] = []
    gen = chunked_lines(lambda: next(pieces, b""))
    while True:
        try:
            out.append(next(gen))
        except StopIteration as stop:
            return out, bool(stop.value)


def every_byte(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


EV1, EV2, EV3 = b'{"type":"ADDED","n":1}', b'{"type":"MODIFIED","n":2}', b'{"type":"DELETED","n":3}'
ONE_PER_CHUNK = chunk(EV1 + b"\n") + chunk(EV2 + b"\n") + chunk(EV3 + b"\n") + END

CASES: dict[str, tuple[list[bytes], list[bytes], bool]] = {
    # name: (reads, lines, ended exactly)
    "one event per chunk, one read": ([ONE_PER_CHUNK], [EV1, EV2, EV3], True),
    "one event per chunk, one read each": (
        [chunk(EV1 + b"\n"), chunk(EV2 + b"\n"), chunk(EV3 + b"\n"), END],
        [EV1, EV2, EV3],
        True,
    ),
    "every read one byte": (every_byte(ONE_PER_CHUNK), [EV1, EV2, EV3], True),
    "a line split mid-line across chunks": (
        [chunk(EV1[:7]) + chunk(EV1[7:] + b"\n" + EV2[:3]) + chunk(EV2[3:] + b"\n") + END],
        [EV1, EV2],
        True,
    ),
    "a chunk split mid-data across reads": (
        [ONE_PER_CHUNK[:9], ONE_PER_CHUNK[9:40], ONE_PER_CHUNK[40:]],
        [EV1, EV2, EV3],
        True,
    ),
    "a chunk size line split across reads": ([b"1", b"7\r", b"\n" + EV1 + b"\n\r\n", END], [EV1], True),
    "the newline in a chunk of its own": ([chunk(EV1) + chunk(b"\n") + END], [EV1], True),
    "several events in one chunk": ([chunk(EV1 + b"\n" + EV2 + b"\n") + END], [EV1, EV2], True),
    "blank lines skipped": ([chunk(b"\n" + EV1 + b"\n\n  \n") + END], [EV1], True),
    "the last line without its newline": ([chunk(EV1 + b"\n" + EV2) + END], [EV1, EV2], True),
    "a chunk extension and upper-case hex": (
        [b"%X;name=v\r\n%s\r\n" % (len(EV1) + 1, EV1 + b"\n"), END],
        [EV1],
        True,
    ),
    "a trailer": ([chunk(EV1 + b"\n") + b"0\r\nX-Trailer: 1\r\n\r\n"], [EV1], True),
    "an empty body": ([END], [], True),
    "bytes past the end (the connection is not reused)": (
        [chunk(EV1 + b"\n") + END + b"HTTP/1.1 200 OK\r\n"],
        [EV1],
        False,
    ),
}


@pytest.mark.parametrize("reads, lines, exact", CASES.values(), ids=CASES.keys())
def test_every_event_comes_whole_and_in_order_however_the_stream_is_cut(
    reads: list[bytes], lines: list[bytes], exact: bool
) -> None:
    assert lines_of(reads) == (lines, exact)


BROKEN: dict[str, list[bytes]] = {
    "the connection ends mid-chunk": [chunk(EV1 + b"\n")[:-5]],
    "the connection ends between chunks": [chunk(EV1 + b"\n")],
    "the connection ends in the trailer": [chunk(EV1 + b"\n") + b"0\r\n"],
    "a chunk size that is not hex": [b"zz\r\n" + EV1],
    "a negative chunk size": [b"-1\r\n" + EV1],
    "an empty chunk size": [b"\r\n" + EV1],
    "a chunk not ended by CRLF": [b"%x\r\n%sXY" % (len(EV1), EV1) + END],
    "a chunk size line without end": [b"1" * 70000],
}


@pytest.mark.parametrize("reads", BROKEN.values(), ids=BROKEN.keys())
def test_a_cut_or_garbled_stream_is_a_broken_connection(reads: list[bytes]) -> None:
    with pytest.raises(StreamBroken):
        lines_of(reads)
    assert issubclass(StreamBroken, ConnectionError)  # what the watch counts as the apiserver gone


# --- the watch over a scripted raw HTTP/1.1 server ----------------------------------------------------------


def event(type_: str, name: str, rv: str) -> bytes:
    obj = {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": f"u-{name}"}}
    return json.dumps({"type": type_, "object": obj}).encode() + b"\n"


def bookmark(rv: str) -> bytes:
    return json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": rv}}}).encode() + b"\n"


def watch_answer(*events: bytes, end: bool = True) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    return head + b"".join(chunk(e) for e in events) + (END if end else b"")


def status_answer(code: int, reason: str, message: str) -> bytes:
    body = json.dumps({"kind": "Status", "code": code, "message": message}).encode()
    return b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        code,
        reason.encode(),
        len(body),
        body,
    )


class Cut(bytes):
    """An answer after which the server closes the connection."""


class ScriptedRawServer(RawServer):
    """Answers the n-th request with the n-th scripted answer, as raw bytes, on kept-alive connections
    (closed after a :class:`Cut` answer, or instead of a None one). Records each request's target and
    connection."""

    def __init__(self, answers: list[bytes | None]) -> None:
        self.answers = answers
        self.requests: list[tuple[int, str]] = []  # (connection number, request target)
        super().__init__()

    def serve(self, conn: socket.socket, number: int) -> None:
        for request in requests_on(conn):
            with self._lock:
                self.requests.append((number, request.target))
                answer = self.answers.pop(0) if self.answers else None
            if answer is None:
                return
            conn.sendall(answer)
            if isinstance(answer, Cut):
                return


@pytest.fixture
def serve() -> Iterator[Callable[[list[bytes | None]], tuple[ScriptedRawServer, client.ApiClient]]]:
    made: list[tuple[ScriptedRawServer, client.ApiClient]] = []

    def make(answers: list[bytes | None]) -> tuple[ScriptedRawServer, client.ApiClient]:
        server = ScriptedRawServer(answers)
        made.append((server, client.ApiClient(loopback_config(server.port))))
        return made[-1]

    yield make
    for server, api in made:
        server.close()
        api.close()


def recorder() -> tuple[list[str], Callable[[str, dict[str, Any]], None]]:
    seen: list[str] = []
    return seen, lambda t, obj: seen.append(
        f"{t} {obj['metadata']['name']} {obj['metadata']['resourceVersion']}"
    )


@pytest.mark.parametrize("direct", [True, False], ids=["lean", "aiohttp (a proxy configured)"])
def test_a_watch_that_ends_leaves_its_connection_for_the_next_one_from_its_last_resource_version(
    serve: Callable[[list[bytes | None]], tuple[ScriptedRawServer, client.ApiClient]], direct: bool
) -> None:
    server, api = serve(
        [
            watch_answer(event("ADDED", "a", "11"), event("MODIFIED", "a", "12"), bookmark("15")),
            watch_answer(event("DELETED", "a", "16")),
        ]
    )
    seen, sink = recorder()
    w = ListWatch(api, PODS, on_event=sink)
    w._rest = LeanRest(api, direct=direct)
    assert w.watch_once("10") == "15"  # the bookmark moves it on
    assert w.watch_once(w.resource_version) == "16"
    assert seen == ["ADDED a 11", "MODIFIED a 12", "DELETED a 16"]
    (c1, first), (c2, second) = server.requests
    assert "resourceVersion=10" in first and "watch=true" in first and "allowWatchBookmarks=true" in first
    assert "resourceVersion=15" in second
    assert c1 == c2 == 1 and server.connections == 1  # kept alive: one connection for both


def test_410_gone_on_the_watch_is_expired_and_its_connection_is_kept(
    serve: Callable[[list[bytes | None]], tuple[ScriptedRawServer, client.ApiClient]],
) -> None:
    server, api = serve(
        [
            status_answer(410, "Gone", "too old resource version: 10 (20)"),
            watch_answer(event("ADDED", "a", "21")),
        ]
    )
    seen, sink = recorder()
    w = ListWatch(api, PODS, on_event=sink)
    with pytest.raises(Expired, match="too old resource version"):
        w.watch_once("10")
    assert w.watch_once("20") == "21"
    assert seen == ["ADDED a 21"] and server.connections == 1


def test_410_gone_inside_the_stream_is_expired(
    serve: Callable[[list[bytes | None]], tuple[ScriptedRawServer, client.ApiClient]],
) -> None:
    gone = json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "gone"}})
    _, api = serve([watch_answer(event("ADDED", "a", "11"), gone.encode() + b"\n")])
    seen, sink = recorder()
    w = ListWatch(api, PODS, on_event=sink)
    with pytest.raises(Expired):
        w.watch_once("10")
    assert seen == ["ADDED a 11"] and w.resource_version == "11"


def test_a_stream_cut_mid_event_is_a_failure_and_the_next_watch_resumes_on_a_new_connection(
    serve: Callable[[list[bytes | None]], tuple[ScriptedRawServer, client.ApiClient]],
) -> None:
    cut = watch_answer(event("ADDED", "a", "11"), end=False) + b"40\r\n" + event("ADDED", "b", "12")[:20]
    server, api = serve([Cut(cut), watch_answer(event("ADDED", "b", "12"))])
    seen, sink = recorder()
    w = ListWatch(api, PODS, on_event=sink)
    with pytest.raises(StreamBroken):
        w.watch_once("10")
    assert is_unreachable(StreamBroken())  # an outage to the watch's loop: retried, from its last version
    assert w.resource_version == "11"
    assert w.watch_once(w.resource_version) == "12"
    assert seen == ["ADDED a 11", "ADDED b 12"]
    assert server.connections == 2 and "resourceVersion=11" in server.requests[-1][1]


def test_stop_ends_a_watch_waiting_for_its_next_event(
    serve: Callable[[list[bytes | None]], tuple[ScriptedRawServer, client.ApiClient]],
) -> None:
    _, api = serve([watch_answer(event("ADDED", "a", "11"), end=False)])
    seen, sink = recorder()
    w = ListWatch(api, PODS, on_event=sink)
    w.resource_version = "10"  # listed already: straight to the watch
    w.start()
    while not seen:
        threading.Event().wait(0.01)
    w.stop(timeout=30)
    assert w._thread is not None and not w._thread.is_alive()
    assert seen == ["ADDED a 11"]


def test_one_object_its_receiver_fails_on_stops_neither_the_watch_nor_the_objects_after_it(
    serve: Callable[[list[bytes | None]], tuple[ScriptedRawServer, client.ApiClient]],
) -> None:
    """As a kopf handler's error was: the failing event is logged and passed over (the watch does not
    stall re-reading it), and its object stays due for the next relist (its last good version kept)."""
    _, api = serve(
        [
            watch_answer(
                event("ADDED", "bad", "11"), event("ADDED", "good", "12"), event("MODIFIED", "bad", "13")
            )
        ]
    )
    seen, record = recorder()

    def sink(type_: str, obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == "bad":
            raise TypeError("a decoder bug")
        record(type_, obj)

    w = ListWatch(api, PODS, on_event=sink)
    assert w.watch_once("10") == "13"
    assert seen == ["ADDED good 12"]
    assert "ns/bad" not in w.known and w.known["ns/good"] == ("12", "u-good")


def test_dropping_a_removed_kind_hands_every_object_over_as_deleted_though_one_fails(
    serve: Callable[[list[bytes | None]], tuple[ScriptedRawServer, client.ApiClient]],
) -> None:
    _, api = serve([])
    seen, record = recorder()

    def sink(type_: str, obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == "a":
            raise TypeError("a receiver's bug")
        record(type_, obj)

    w = ListWatch(api, PODS, on_event=sink)
    w.known = {"ns/a": ("11", "u-a"), "ns/b": ("12", "u-b")}
    assert w.drop_known() == 2
    assert seen == ["DELETED b 12"] and w.known == {}


def test_after_each_event_handed_over_the_watch_calls_after_event_on_its_thread(
    serve: Callable[[list[bytes | None]], tuple[ScriptedRawServer, client.ApiClient]],
) -> None:
    """Where the operator runs an arriving pod's session on the pod watch's thread: after each event is
    in the receiver's hands (none held back for the next), outside the watch's lock (a session there may
    take as long as it needs without holding up ``drop_known``)."""
    _, api = serve([watch_answer(event("ADDED", "a", "11"), event("MODIFIED", "a", "12"), bookmark("15"))])
    seen, sink = recorder()
    calls: list[tuple[int, bool]] = []
    w = ListWatch(api, PODS, on_event=sink)
    w.after_event = lambda: calls.append((len(seen), w._handing.locked()))
    assert w.watch_once("10") == "15"
    assert calls == [(1, False), (2, False), (2, False)]  # the bookmark's too: a call costs nothing then
