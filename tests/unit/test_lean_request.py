"""The writer's requests go out as http.client would write them, their heads built from the lines that
do not change between requests: the same request line, headers (Host, Accept-Encoding, the client's
defaults, type, credentials, length) and body; a header that could inject another is refused, without
the credential in the message."""

from __future__ import annotations

import http.client
from typing import Any
from urllib.parse import quote

import pytest
from kubernetes import client

from volsched.kube.rest import LeanRest, _dumps, event_path, pod_path

TOKEN = "s3cret-token"


class Capture:
    """A socket that keeps what is sent."""

    def __init__(self) -> None:
        self.sent = b""

    def sendall(self, data: bytes) -> None:
        self.sent += data


def parsed(raw: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
    """(request line, headers sorted by lower-cased name, body) of a request's bytes."""
    head, _, body = raw.partition(b"\r\n\r\n")
    line, *headers = head.decode("latin-1").split("\r\n")
    pairs = sorted((name.lower(), value) for name, _, value in (h.partition(": ") for h in headers))
    return line, pairs, body


def as_http_client(rest: LeanRest, method: str, path: str, body: Any, content_type: str | None) -> bytes:
    """What http.client writes for the request LeanRest used to hand it (the same headers dict)."""
    host, port = rest._netloc
    conn = (http.client.HTTPSConnection if rest._https else http.client.HTTPConnection)(host, port)
    capture = Capture()
    conn.sock = capture  # type: ignore[assignment]
    data = None if body is None else _dumps(body)
    conn.request(
        method, rest._prefix + path, body=data, headers=rest._headers(content_type if data else None)
    )
    return capture.sent


def lean(rest: LeanRest, method: str, path: str, body: Any, content_type: str | None) -> bytes:
    data = None if body is None else _dumps(body)
    return rest._head(method, path, content_type if data else None, data) + (data or b"")


def rest_for(host: str, *, token: str | None = TOKEN) -> LeanRest:
    cfg = client.Configuration()
    cfg.host = host
    if token:
        cfg.api_key = {"authorization": token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
    return LeanRest(client.ApiClient(cfg), direct=True)


BINDING = {"kind": "Binding", "metadata": {"name": "p", "namespace": "ns"}, "target": {"name": "naïve-node"}}
REQUESTS: dict[str, tuple[str, str, str, Any, str | None]] = {
    "a bind": ("http://127.0.0.1:6443", "POST", "/api/v1/namespaces/ns/pods/p/binding", BINDING, "application/json"),
    "a status merge patch": (
        "http://127.0.0.1:6443", "PATCH", "/apis/g/v1/namespaces/ns/podgroups/a/status", {"status": {"phase": "Running"}},
        "application/merge-patch+json",
    ),
    "a read: no body, no length": ("http://127.0.0.1:6443", "GET", "/api/v1/namespaces/ns/pods/p", None, "application/json"),
    "a delete with preconditions": (
        "http://127.0.0.1:6443", "DELETE", "/apis/g/v1/namespaces/ns/podgroups/a", {"preconditions": {"uid": "u"}},
        "application/json",
    ),
    "a post without body: length 0": ("http://127.0.0.1:6443", "POST", "/x", None, "application/json"),
    "https on its default port: no port in Host": ("https://api.example.com", "GET", "/version", None, None),
    "a path prefix and an IPv6 host": ("http://[::1]:8080/prefix", "GET", "/api?watch=true&x=a%20b", None, None),
}  # fmt: skip


@pytest.mark.parametrize("host, method, path, body, content_type", REQUESTS.values(), ids=REQUESTS.keys())
@pytest.mark.parametrize("token", [TOKEN, None], ids=["with a token", "without credentials"])
def test_a_request_is_written_as_http_client_writes_it(
    host: str, method: str, path: str, body: Any, content_type: str | None, token: str | None
) -> None:
    rest = rest_for(host, token=token)
    assert parsed(lean(rest, method, path, body, content_type)) == parsed(
        as_http_client(rest, method, path, body, content_type)
    )


def test_a_token_that_would_inject_a_header_is_refused_without_showing_it() -> None:
    rest = rest_for("http://127.0.0.1:6443", token="abc\r\nX-Evil: 1")
    with pytest.raises(ValueError) as refused:
        rest._head("POST", "/x", "application/json", b"{}")
    assert "abc" not in str(refused.value) and "Evil" not in str(refused.value)


@pytest.mark.parametrize("path", ["/a b", "/a\r\nX-Evil: 1", "/a\x00"])
def test_a_path_that_would_break_the_request_line_is_refused(path: str) -> None:
    with pytest.raises(http.client.InvalidURL):
        rest_for("http://127.0.0.1:6443")._head("GET", path, None, None)


def test_a_rotated_token_is_sent_once_read_again() -> None:
    now = [0.0]
    cfg = client.Configuration()
    cfg.host = "http://127.0.0.1:6443"
    cfg.api_key = {"authorization": "old"}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    rest = LeanRest(client.ApiClient(cfg), direct=True, clock=lambda: now[0])
    assert b"authorization: Bearer old\r\n" in rest._head("GET", "/x", None, None)
    cfg.api_key = {"authorization": "new"}
    assert b"Bearer old" in rest._head("GET", "/x", None, None)  # within AUTH_TTL: the same line
    now[0] = 5.0
    assert b"authorization: Bearer new\r\n" in rest._head("GET", "/x", None, None)


SEGMENTS = ["p00001", "web-0.a_b~c", "", "a b", "a/b", "naïve", "%41", "x?y#z", "A.B-C"]


@pytest.mark.parametrize("name", SEGMENTS, ids=[repr(s) for s in SEGMENTS])
def test_a_path_segment_is_quoted_as_quote_quotes_it(name: str) -> None:
    quoted = quote(name, safe="")
    assert pod_path(name, name, "binding") == f"/api/v1/namespaces/{quoted}/pods/{quoted}/binding"
    assert event_path(name, "e") == f"/api/v1/namespaces/{quoted}/events/e"
    assert event_path("ns", name) == (
        f"/api/v1/namespaces/ns/events/{quoted}" if name else "/api/v1/namespaces/ns/events"
    )
