"""The writer's lean response reader reads an answer as http.client's own does (status, headers, length,
chunking, whether the connection closes, the body), without the email package's header parser."""

from __future__ import annotations

import http.client
import io
from typing import Any

import pytest

from volsched.kube.rest import _LeanResponse


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
