"""The writer's lean response readers read an answer as http.client's own does (status, headers, length,
chunking, whether the connection closes, the body): the streams' (without the email package's header
parser) and the requests' (straight from the socket, whatever pieces it arrives in)."""

from __future__ import annotations

import http.client
import io
import time
from typing import Any

import pytest

from volsched.kube.rest import _LeanResponse, _receive


class RawSocket:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, _mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self.data))  # type: ignore[arg-type]


def read(cls: type[http.client.HTTPResponse], data: bytes, method: str = "POST") -> dict[str, Any]:
    resp = cls(RawSocket(data), method=method)  # type: ignore[arg-type]
    resp.begin()
    return {
        "status": resp.status,
        "reason": resp.reason,
        "version": resp.version,
        "headers": resp.getheaders(),
        "retry-after": resp.getheader("retry-after"),
        "chunked": resp.chunked,
        "length": resp.length,
        "will_close": resp.will_close,
        "body": resp.read(),
    }


JSON_HEADERS = b"Content-Type: application/json\r\nAudit-Id: 42\r\n"
ANSWERS = {
    "created": b"HTTP/1.1 201 Created\r\n" + JSON_HEADERS + b"Content-Length: 2\r\n\r\n{}",
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    "closing": b"HTTP/1.1 409 Conflict\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx",
    "throttled": b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
    "no length": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end",
    "no content": b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
    "bad length": b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\nbody",
    "http/1.0 keep-alive": b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok",
    "http/1.0": b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "http/1.0 proxy keep-alive": b"HTTP/1.0 200 OK\r\nProxy-Connection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
    "interim first": b"HTTP/1.1 100 Continue\r\nX: y\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1",
    "spaces and case": b"HTTP/1.1 200 OK\r\ncontent-LENGTH:   4  \r\nX-Odd:a:b\r\n\r\nabcd",
    "a line ended by a bare LF": b"HTTP/1.1 200 OK\r\nX: y\nContent-Length: 8\r\n\r\n\r\n\r\nabcd",
    "an empty line of a bare LF": b"HTTP/1.1 200 OK\r\nConnection: close\r\n\nab\r\n\r\ncd",
    "99 headers": b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 98 + b"Content-Length: 2\r\n\r\nok",
    "the status line alone": b"HTTP/1.1 204 No Content\r\n\r\n",
}


@pytest.mark.parametrize("data", ANSWERS.values(), ids=ANSWERS.keys())
def test_an_answer_reads_as_http_client_reads_it(data: bytes) -> None:
    assert read(_LeanResponse, data) == read(http.client.HTTPResponse, data)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"HTTP/2 200 OK\r\n\r\n", http.client.UnknownProtocol),
        (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70000 + b"\r\n\r\n", http.client.LineTooLong),
        (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n", http.client.HTTPException),
        (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 100 + b"\r\n", http.client.HTTPException),
        (b"", http.client.RemoteDisconnected),
    ],
    ids=[
        "unknown protocol",
        "long header line",
        "too many headers",
        "100 headers, the empty line counted",
        "nothing",
    ],
)
def test_a_malformed_answer_is_refused_as_http_client_refuses_it(data: bytes, error: type[Exception]) -> None:
    for cls in (http.client.HTTPResponse, _LeanResponse):
        with pytest.raises(error):
            read(cls, data)


class PieceSocket:
    """A socket whose ``recv`` hands over at most ``piece`` bytes at a time, then b"" (the peer closed)."""

    def __init__(self, data: bytes, piece: int) -> None:
        self.data = data
        self.piece = piece
        self.timeouts: list[float] = []

    def settimeout(self, timeout: float) -> None:
        self.timeouts.append(timeout)

    def recv(self, size: int) -> bytes:
        out, self.data = self.data[: min(size, self.piece)], self.data[min(size, self.piece) :]
        return out


def received(data: bytes, piece: int, method: str = "POST") -> dict[str, Any]:
    reply = _receive(PieceSocket(data, piece), method, time.monotonic() + 10)
    return {
        "status": reply.status,
        "reason": reply.reason,
        "version": reply.version,
        "headers": list(reply.headers.items()),
        "retry-after": reply.headers.get("retry-after"),
        "body": reply.data,
        "will_close": not reply.reusable,
    }


def as_http_client_reads(data: bytes, method: str = "POST") -> dict[str, Any]:
    answer = read(http.client.HTTPResponse, data, method)
    return {k: v for k, v in answer.items() if k not in ("chunked", "length")}


PIECES = [1, 7, 65536]

#: A folded Transfer-Encoding: http.client's email parser would join " chunked" to it and read a chunked
#: body; a reader of the first line alone, a body of length 5. Refused by both of ours.
FOLDED = (
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n"
    b"0\r\n\r\nHTTP/1.1 201 Created\r\n"
)


@pytest.mark.parametrize("data", [FOLDED, FOLDED.replace(b"\r\n ", b"\r\n\t")], ids=["space", "tab"])
def test_a_folded_header_line_is_refused_by_the_stream_reader_too(data: bytes) -> None:
    with pytest.raises(http.client.HTTPException):
        read(_LeanResponse, data)


@pytest.mark.parametrize("piece", PIECES, ids=[f"{p} bytes a read" for p in PIECES])
@pytest.mark.parametrize("data", ANSWERS.values(), ids=ANSWERS.keys())
def test_an_answer_received_straight_from_the_socket_reads_as_http_client_reads_it(
    data: bytes, piece: int
) -> None:
    assert received(data, piece) == as_http_client_reads(data)


def test_a_head_answer_has_no_body_whatever_its_length_says() -> None:
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n"
    assert received(data, 65536, "HEAD") == as_http_client_reads(data, "HEAD")


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"HTTP/2 200 OK\r\n\r\n", http.client.UnknownProtocol),
        (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70000 + b"\r\n\r\n", http.client.LineTooLong),
        (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n", http.client.HTTPException),
        (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 100 + b"\r\n", http.client.HTTPException),
        (b"", http.client.RemoteDisconnected),
        (b"HTTP/1.1 2x0 OK\r\n\r\n", http.client.BadStatusLine),
        (b"ICY 200 OK\r\n\r\n", http.client.BadStatusLine),
        (b"HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\nshort", http.client.IncompleteRead),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", http.client.IncompleteRead),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
            http.client.IncompleteRead,
        ),
        (FOLDED, http.client.HTTPException),
        (FOLDED.replace(b"\r\n ", b"\r\n\t"), http.client.HTTPException),
    ],
    ids=[
        "unknown protocol",
        "long header line",
        "too many headers",
        "100 headers, the empty line counted",
        "nothing",
        "a status that is not a number",
        "not HTTP",
        "a body shorter than its length",
        "a chunk cut short",
        "a bad chunk size",
        "a folded header line",
        "a header line folded by a tab",
    ],
)
@pytest.mark.parametrize("piece", [7, 65536], ids=["7 bytes a read", "all at once"])
def test_a_malformed_answer_received_straight_from_the_socket_is_refused(
    data: bytes, error: type[Exception], piece: int
) -> None:
    with pytest.raises(error):
        received(data, piece)


@pytest.mark.parametrize(
    "data",
    [
        ANSWERS["created"] + b"HTTP/1.1 200 OK\r\n",  # more than the answer: not the next one's to read
        ANSWERS["closing"],
        ANSWERS["no length"],
        ANSWERS["http/1.0"],
    ],
    ids=["bytes past the answer", "Connection: close", "a body that ends with the connection", "HTTP/1.0"],
)
def test_a_connection_is_used_again_only_when_the_answer_ended_it_exactly_and_it_stays_open(
    data: bytes,
) -> None:
    assert not _receive(PieceSocket(data, 65536), "POST", time.monotonic() + 10).reusable


def test_each_read_is_bounded_by_what_is_left_of_the_deadline() -> None:
    sock = PieceSocket(ANSWERS["created"], 7)
    _receive(sock, "POST", time.monotonic() + 10)
    assert len(sock.timeouts) > 1
    assert all(0 < t <= 10 for t in sock.timeouts)
    assert sock.timeouts == sorted(sock.timeouts, reverse=True)


class EndlessChunks:
    """A peer that sends an answer's head, then chunks forever: the second read comes only once the
    deadline has passed, the later ones at once (a peer sending fast enough that no single read waits)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.reads = 0

    def settimeout(self, timeout: float) -> None:
        pass

    def recv(self, size: int) -> bytes:
        self.reads += 1
        if self.reads == 1:
            return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n"
        if self.reads == 2:
            time.sleep(max(0.0, self.deadline - time.monotonic()) + 0.01)
        if self.reads > 1000:
            raise AssertionError("still reading long after the deadline")
        return b"1\r\na\r\n"


def test_an_answer_still_arriving_at_the_deadline_is_cut_off_there() -> None:
    deadline = time.monotonic() + 0.05
    sock = EndlessChunks(deadline)
    with pytest.raises(TimeoutError):
        _receive(sock, "POST", deadline)
    assert sock.reads == 2


EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"


@pytest.mark.parametrize("piece", [7, 65536], ids=["7 bytes a read", "all at once"])
def test_an_informational_answer_is_skipped_for_the_final_one_as_go_skips_it(piece: int) -> None:
    data = EARLY_HINTS + EARLY_HINTS + ANSWERS["created"]
    reply = _receive(PieceSocket(data, piece), "POST", time.monotonic() + 10)
    assert (reply.status, reply.data, reply.reusable) == (201, b"{}", True)


def test_a_switching_protocols_answer_is_final_and_its_connection_not_used_again() -> None:
    data = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    reply = _receive(PieceSocket(data, 65536), "POST", time.monotonic() + 10)
    assert (reply.status, reply.data, reply.reusable) == (101, b"", False)
