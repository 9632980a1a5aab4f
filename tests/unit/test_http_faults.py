"""What the operator's requests make of whatever a peer sends back (fault injection over a raw socket).

Each answer below is sent as raw bytes, in one piece or a few bytes at a time, to a request through
:class:`~volsched.kube.rest.LeanRest`, over its direct path and over aiohttp's client alike: a well-formed answer is read whole (status, body, the headers an
error is judged by); an informational 1xx is skipped for the final answer; a malformed one, or a framing
two readers could read apart (a folded header line), is never taken as an
answer (:class:`ResponseLost`: the request may have been sent); an answer that keeps trickling or never
ends is cut off at the call's deadline; and bytes a peer sends past an answer are never read as the next
request's answer. (How the direct path's reader agrees with http.client's: test_lean_response.py.)
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.unit._raw_server import RawServer, requests_on
from tests.unit._scripted_server import loopback_config
from volsched.kube.errors import ApiException
from volsched.kube.rest import LeanRest, ResponseLost


class RawPeer(RawServer):
    """Answers every request with ``answer`` (or ``answers``, one per request, then the last again), as raw
    bytes, ``piece`` bytes per send (an empty one: the connection closed unanswered); ``then``: "keep"
    the connection open, "close" it, or "trickle"
    (send ``answer``'s bytes then one byte of ``tail`` every ``gap`` seconds until the peer goes)."""

    def __init__(
        self,
        answers: list[bytes],
        *,
        piece: int = 65536,
        then: str = "keep",
        tail: bytes = b"",
        gap: float = 0.02,
    ) -> None:
        self.answers = answers
        self.piece = piece
        self.then = then
        self.tail = tail
        self.gap = gap
        self.requests = 0
        super().__init__()

    def serve(self, conn: socket.socket, number: int) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in requests_on(conn):
            answer = self.answers[min(self.requests, len(self.answers) - 1)]
            self.requests += 1
            if not answer:  # no answer at all: the connection closed under the request
                return
            try:
                for i in range(0, len(answer), self.piece):
                    conn.sendall(answer[i : i + self.piece])
                if self.then == "close":
                    return
                if self.then == "trickle":
                    self._trickle(conn)
                    return
            except OSError:
                return

    def _trickle(self, conn: socket.socket) -> None:
        """``tail`` byte by byte, round and round, until the caller hangs up (a write fails)."""
        for i in range(10**6):
            conn.sendall(self.tail[i % len(self.tail) : i % len(self.tail) + 1])
            time.sleep(self.gap)


#: The deadline of a call the peer never answers in full (the call must end there, not hang).
TIMEOUT = 1.0
#: The timeout of a call the peer answers: long, so that a loaded machine never cuts a good answer off.
PATIENT = 30.0


@pytest.fixture(params=[True, False], ids=["direct", "aiohttp"])
def peer(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A peer and a LeanRest to it over each path: the direct one (the writer's, the watches') and
    aiohttp's client (the reads, the Lease, a configuration with a proxy or a TLS server name)."""
    made: list[tuple[RawPeer, LeanRest]] = []

    def make(*answers: bytes, **kw: Any) -> tuple[RawPeer, LeanRest]:
        server = RawPeer(list(answers), **kw)
        made.append((server, LeanRest(client.ApiClient(loopback_config(server.port)), direct=request.param)))
        return made[-1]

    yield make
    for server, rest in made:
        rest.close()
        server.close()


def answered(rest: LeanRest) -> tuple[int, bytes, str | None]:
    """(status, body, Retry-After) of a bind-like POST; an error status is read from its ApiException."""
    try:
        return 200, rest.request("POST", "/x", {"a": 1}, timeout=PATIENT), None
    except ApiException as exc:
        headers = exc.headers or {}
        return int(exc.status), (exc.body or "").encode(), headers.get("Retry-After")


CREATED = (
    b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nAudit-Id: 42\r\nContent-Length: 2\r\n\r\n{}"
)
#: name: (the answer, the peer closes after it, what the caller reads: status (200 for any 2xx), body, Retry-After)
ANSWERS: dict[str, tuple[bytes, bool, tuple[int, bytes, str | None]]] = {
    "created": (CREATED, False, (200, b"{}", None)),
    "chunked": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n",
        False,
        (200, b"abcde", None),
    ),
    "an error that closes": (
        b"HTTP/1.1 409 Conflict\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx",
        True,
        (409, b"x", None),
    ),
    "throttled": (
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
        False,
        (429, b"", "1"),
    ),
    "a body that ends with the connection": (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end",
        True,
        (200, b"to the end", None),
    ),
    "no content, whatever its length says": (
        b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
        False,
        (200, b"", None),
    ),
    "http/1.0 keep-alive": (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok", False, (200, b"ok", None)),
    "http/1.0": (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", True, (200, b"ok", None)),
    "100 Continue first": (
        b"HTTP/1.1 100 Continue\r\nX: y\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1",
        False,
        (200, b"1", None),
    ),
    "103 Early Hints twice first (a proxy's)": (
        b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n" * 2 + CREATED,
        False,
        (200, b"{}", None),
    ),
    "spaces and case": (b"HTTP/1.1 200 OK\r\ncontent-LENGTH:   4  \r\nX-Odd:a:b\r\n\r\nabcd", False, (200, b"abcd", None)),
    "99 headers": (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 98 + b"Content-Length: 2\r\n\r\nok", False, (200, b"ok", None)),
}  # fmt: skip
PIECES = [65536, 7, 1]


@pytest.mark.parametrize("piece", PIECES, ids=[f"{p} bytes a send" for p in PIECES])
@pytest.mark.parametrize(("data", "closes", "reads"), ANSWERS.values(), ids=ANSWERS.keys())
def test_a_well_formed_answer_is_read_whole_however_it_arrives(
    peer: Any, data: bytes, closes: bool, reads: tuple[int, bytes, str | None], piece: int
) -> None:
    _, rest = peer(data, piece=piece, then="close" if closes else "keep")
    assert answered(rest) == reads
    assert answered(rest) == reads  # and the next request on the same (or a new) connection too


#: A folded Transfer-Encoding: a reader that joins the folded line reads a chunked body, one that does
#: not a body of length 5 (and the rest as the next answer). Never acted on.
FOLDED = (
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n"
    b"0\r\n\r\nHTTP/1.1 201 Created\r\n"
)
MALFORMED: dict[str, bytes] = {
    "unknown protocol": b"HTTP/2 200 OK\r\n\r\n",
    "a long header line": b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70000 + b"\r\n\r\n",
    "too many headers": b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 200 + b"Content-Length: 0\r\n\r\n",
    "nothing": b"",
    "a status that is not a number": b"HTTP/1.1 2x0 OK\r\n\r\n",
    "not HTTP": b"ICY 200 OK\r\n\r\n",
    "a body shorter than its length": b"HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\nshort",
    "a chunk cut short": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
    "a bad chunk size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
    "a folded header line": FOLDED,
    "a header line folded by a tab": FOLDED.replace(b"\r\n ", b"\r\n\t"),
}


@pytest.mark.parametrize("piece", [65536, 7], ids=["all at once", "7 bytes a send"])
@pytest.mark.parametrize("data", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_answer_is_never_taken_for_one(peer: Any, data: bytes, piece: int) -> None:
    """The peer closes after it: whatever was read, the request may have been sent (a bind may have
    taken), so it is ResponseLost, which the writer settles by reading the pod back."""
    _, rest = peer(data, piece=piece, then="close")
    with pytest.raises(ResponseLost):
        rest.request("POST", "/x", {"a": 1}, timeout=PATIENT)


def test_a_peer_that_never_ends_its_answer_is_cut_off_at_the_deadline(peer: Any) -> None:
    """Chunks keep coming, each well inside any read timeout: only a deadline on the whole call ends it
    (the peer never stops on its own)."""
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    _, rest = peer(head, then="trickle", tail=b"1\r\na\r\n", gap=0.01)
    with pytest.raises(ResponseLost) as lost:
        rest.request("POST", "/x", {"a": 1}, timeout=TIMEOUT)
    assert isinstance(lost.value.__cause__, TimeoutError)


def test_a_head_that_trickles_in_is_cut_off_at_the_deadline(peer: Any) -> None:
    _, rest = peer(b"HTTP/1.1 200 OK\r\n", then="trickle", tail=b"X-Slow: y\r\n", gap=0.05)
    with pytest.raises(ResponseLost) as lost:
        rest.request("POST", "/x", {"a": 1}, timeout=TIMEOUT)
    assert isinstance(lost.value.__cause__, TimeoutError)


@pytest.mark.parametrize(
    "extra",
    [
        b"HTTP/1.1 200 OK\r\n",  # the start of another answer
        b"HTTP/1.1 202 Accepted\r\nContent-Length: 3\r\n\r\nbad",  # a whole other answer
    ],
    ids=["part of an answer", "a whole answer"],
)
def test_bytes_past_an_answer_are_never_read_as_the_next_requests_answer(peer: Any, extra: bytes) -> None:
    second = b'HTTP/1.1 201 Created\r\nContent-Length: 7\r\n\r\n"again"'
    _, rest = peer(CREATED + extra, second)
    assert answered(rest) == (200, b"{}", None)
    assert answered(rest) == (200, b'"again"', None)


def test_a_kept_alive_connection_serves_the_next_request(peer: Any) -> None:
    server, rest = peer(CREATED)
    for _ in range(3):
        assert answered(rest) == (200, b"{}", None)
    assert server.connections == 1


@pytest.mark.parametrize("method", ["PUT", "DELETE", "POST", "PATCH"])
def test_a_write_whose_answer_was_lost_is_not_sent_again_here(peer: Any, method: str) -> None:
    """Not even a PUT or a DELETE, which HTTP calls idempotent: a Lease's renewal sent twice is a 409
    that reads as the Lease lost. Whether to send again is the caller's to know."""
    server, rest = peer(CREATED, b"", CREATED)  # the second request's answer is lost (the peer closes)
    assert rest.request(method, "/x", {"a": 1}, timeout=PATIENT) == b"{}"
    with pytest.raises(ResponseLost):
        rest.request(method, "/x", {"a": 1}, timeout=PATIENT)
    assert server.requests == 2


def test_a_proxy_that_no_proxy_names_the_apiserver_in_is_bypassed(peer: Any) -> None:
    """As the Kubernetes client reads ``no_proxy``: the apiserver named there is reached directly."""
    server, _ = peer(CREATED)
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{server.port}"
    cfg.proxy = "http://127.0.0.1:9"  # nothing listens there
    cfg.no_proxy = "localhost,127.0.0.1"
    rest = LeanRest(client.ApiClient(cfg))
    try:
        assert rest.request("POST", "/x", {"a": 1}, timeout=PATIENT) == b"{}"
    finally:
        rest.close()


@pytest.mark.parametrize(
    ("setting", "value", "named"),
    [("assert_hostname", "other.example", "assert_hostname"), ("socket_options", [], "socket_options")],
)
def test_a_client_setting_that_cannot_be_honoured_is_refused_at_start(
    setting: str, value: str, named: str
) -> None:
    cfg = client.Configuration()
    cfg.host = "https://127.0.0.1:6443"
    setattr(cfg, setting, value)
    with pytest.raises(ValueError, match=named):
        LeanRest(client.ApiClient(cfg))
