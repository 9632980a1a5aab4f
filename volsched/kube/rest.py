"""Lean JSON requests and watch streams to the apiserver: a hand-written HTTP/1.1 path for the writer's
and the watches' hot path, aiohttp's client for everything else.

A bind through ``CoreV1Api`` builds ``V1Binding``/``V1ObjectMeta`` models, serialises them through the
client's generic sanitiser and walks its parameter machinery: most of the operator's CPU per bind.
:class:`LeanRest` sends the JSON body as it is, with the configuration's credentials (read again every second,
so a refreshed token is used), and reads every response to its end so a kept-alive connection is always
clean for the next call. An error status is raised as :class:`~volsched.kube.errors.ApiException`, which
has the client's exception's attributes.

The direct path (the writer's binds, evictions and status writes; the watches): one persistent
``http.client`` connection per calling thread, with the TLS settings of the client configuration (CA,
client certificate and key, verification). A request goes out with its body in one write, and its answer
is read straight from the socket by :func:`_receive` (http.client's rules for status, headers, length,
chunking and keep-alive, every informational 1xx skipped, a folded header refused, each read bounded by
the call's deadline; a connection that got more than the answer is not used again). aiohttp's client
costs several times its CPU per request, which on the bind benchmark cost more than a tenth of bind
throughput: docs/design/http-client.md. A kept-alive connection the apiserver closed while it was idle is
noticed before sending and reopened; a request that failed after it may have been sent raises
:class:`ResponseLost` (never sent again here: whether that is safe is the caller's to know).

Everything else (``direct=False``: the reads at start, the listings, the Lease; and any configuration
the direct path does not cover: a proxy, a TLS server name) goes through aiohttp's client (:class:`_Aio`),
under the same rules: nothing sent again but a read, a whole call bounded by its timeout, an informational
answer skipped, a malformed one never taken for an answer. aiohttp is imported at the first request that
takes it: the operator's reads, Lease and listings go over the direct path until its cache is synced
(``direct_until``), so that its import (a sixth of the CPU to ready) is not on the way there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import http.client
import json
import re
import select
import socket
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Generator, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote, urlsplit

import orjson

from volsched.kube import parked
from volsched.kube.errors import ApiException
from volsched.kube.kubeconfig import AnyApi, AnySettings, tls_context
from volsched.kube.ratelimit import retry_after

if TYPE_CHECKING:
    import aiohttp
    from yarl import URL

JSON = "application/json"
#: Seconds a request's credentials are reused before the client's settings are read again (client-go
#: reads a token file again every minute); reading them each time was a fifth of a bind's CPU.
AUTH_TTL = 1.0
#: http.client's limits on a response's header lines.
_MAX_LINE = 65536
_MAX_HEADERS = 100
#: How a folded header line starts (:func:`_header_lines` refuses one).
_FOLDED = (b" ", b"\t")


class ResponseLost(ConnectionError):
    """The request may have reached the apiserver (and taken effect) but no whole answer came back."""


class Detached(Exception):
    """A write was sent and its answer had not come within the caller's ``patience``: the answer is left
    to :attr:`pending` (read it on another thread with :meth:`Pending.answer`); this thread's connection
    went with it."""

    def __init__(self, pending: Pending) -> None:
        super().__init__("answer not come yet: left to another thread")
        self.pending = pending


class StreamBroken(ConnectionError):
    """A streamed answer ended before its last chunk (the connection closed or was cut), or its chunked
    framing is broken: as a connection that failed."""


def _dumps(body: Any) -> bytes:
    """A request body as compact JSON: orjson (a bind's body in a tenth of json's CPU), or json for what
    orjson refuses (a key that is not a string, an integer past 64 bits)."""
    try:
        return orjson.dumps(body)
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(body, separators=(",", ":")).encode()


#: Methods http.client sends ``Content-Length: 0`` for when they carry no body.
_BODY_METHODS = frozenset(("PATCH", "POST", "PUT"))
#: What http.client refuses in a request target (control characters and spaces).
_BAD_TARGET = re.compile("[\x00-\x20\x7f]")


def loads(data: bytes | str) -> Any:
    """An answer's JSON (a request's, a watch's event) by orjson (a listing's pods in about a third of
    json's CPU); what orjson refuses (NaN, which the apiserver never sends) by json, which may take it."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def _header_line(name: str, value: str) -> bytes:
    """One header line, refused as http.client refuses it (a name that is not a token, a value that
    could end the line: a header injected through a token, say)."""
    raw_name, raw_value = name.encode("ascii"), value.encode("latin-1")
    if not http.client._is_legal_header_name(raw_name):  # type: ignore[attr-defined]
        raise ValueError(f"Invalid header name {raw_name!r}")
    if http.client._is_illegal_header_value(raw_value):  # type: ignore[attr-defined]
        raise ValueError(f"Invalid header value for {name}")
    return raw_name + b": " + raw_value + b"\r\n"


def _direct_ok(cfg: AnySettings) -> bool:
    """Whether http.client can do all the configuration asks (else aiohttp's client is used)."""
    return (
        urlsplit(str(cfg.host)).scheme in ("http", "https")
        and not cfg.proxy
        and cfg.assert_hostname is None
        and not cfg.tls_server_name
        and cfg.socket_options is None
    )


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """An idle kept-alive connection the peer closed (or wrote to unasked): it reads as ready."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        return _readable(sock, 0)
    except (OSError, ValueError):
        return True


def _readable(sock: Any, timeout: float) -> bool:
    """Whether ``sock`` has something to read within ``timeout`` seconds (waiting without the
    interpreter's lock). ``poll``, not ``select``: select refuses a descriptor past FD_SETSIZE (1024),
    which a process with many open files hands out."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(timeout * 1000))


def _header_lines(fp: Any) -> list[bytes]:
    """A response's header lines up to the empty one (excluded), as http.client reads them (its limit
    counts the empty line), from ``fp``'s ``readline(limit)`` (a file's or a :class:`_Bytes`'). A folded
    line (one that starts with a space or a tab, obsolete since RFC 7230, which Go never sends) is
    refused: the email package would join it to the line before, the framing read here would not, and
    an answer two readers frame differently is not one to act on."""
    lines: list[bytes] = []
    while True:
        line = fp.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise http.client.LineTooLong("header line")
        if len(lines) >= _MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {_MAX_HEADERS} headers")
        if line in (b"\r\n", b"\n", b""):
            return lines
        if line[:1] in _FOLDED:
            raise http.client.HTTPException("a folded header line")
        lines.append(line)


def chunked_lines(read: Callable[[], bytes]) -> Generator[bytes, None, bool]:
    """The non-blank newline-separated lines of a chunked HTTP/1.1 body (a watch's events), decoded from
    ``read()`` (whatever bytes the connection has next; b"" at its end), yielded as each line's last
    byte arrives. Returns (as the generator's value) whether the answer ended exactly: the last chunk and
    the trailer read, nothing read past them (the connection is clean for the next request). Raises
    :class:`StreamBroken` when the connection ends first or the framing is broken.

    What urllib3 and http.client do per chunk (a line read for its size, a read for its data, a read for
    its CRLF, each through a few layers) was most of a watch event's cost besides its decoding; here a
    read takes whatever arrived, however many chunks, and the framing is found in it."""
    buf, pos = b"", 0
    partial: list[bytes] = []  # the line not ended yet (split across chunks)

    def more(keep: int) -> tuple[bytes, int]:
        data = read()
        if not data:
            raise StreamBroken("the answer ended before its last chunk")
        return buf[keep:] + data, 0

    def line_end(what: str) -> int:
        """Where the line at ``pos`` ends (its CRLF), reading more until it has arrived."""
        nonlocal buf, pos
        end = buf.find(b"\r\n", pos)
        while end < 0:
            if len(buf) - pos > _MAX_LINE:
                raise StreamBroken(f"{what} too long")
            buf, pos = more(pos)
            end = buf.find(b"\r\n")
        return end

    while True:
        end = line_end("a chunk size line")
        field = buf[pos:end].split(b";", 1)[0].strip()  # a chunk extension is ignored
        if not field or field.strip(b"0123456789abcdefABCDEF"):
            raise StreamBroken(f"a bad chunk size {buf[pos:end][:40]!r}")
        size = int(field, 16)
        pos = end + 2
        if size == 0:
            break
        while len(buf) < pos + size + 2:
            buf, pos = more(pos)
        stop = pos + size
        if buf[stop : stop + 2] != b"\r\n":
            raise StreamBroken("a chunk not ended by CRLF")
        data = buf[pos:stop]
        pos = stop + 2
        start = 0
        nl = data.find(b"\n")
        while nl >= 0:
            if partial:
                partial.append(data[start:nl])
                line = b"".join(partial)
                partial.clear()
            else:
                line = data[start:nl]
            if line.strip():
                yield line
            start = nl + 1
            nl = data.find(b"\n", start)
        if start < len(data):
            partial.append(data[start:])
    if partial and (line := b"".join(partial)).strip():
        yield line
    while True:  # the trailer: header lines up to an empty one
        end = line_end("a trailer line")
        empty = end == pos
        pos = end + 2
        if empty:
            return pos == len(buf)


#: The most a response read takes from the socket at once (whatever has arrived, up to this).
_READ = 65536
#: Header names :func:`_receive` reads (lower-cased), of all an answer has: framing and keep-alive.
_FRAMING = frozenset(
    (b"content-length", b"transfer-encoding", b"connection", b"keep-alive", b"proxy-connection")
)


class _Bytes:
    """An answer's bytes as they arrive on a socket, with what was read past what was asked kept for
    the next read (``recv`` straight into Python, not through ``makefile``'s socket reader and buffer).
    Each ``recv`` is bounded by what is left of ``deadline``, and none starts past it: a peer that keeps
    sending (endless chunks, a trickle) cannot hold the caller beyond its timeout."""

    __slots__ = ("buf", "deadline", "eof", "pos", "sock")

    def __init__(self, sock: Any, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.buf = b""
        self.pos = 0
        self.eof = False

    def _more(self) -> bytes:
        """The next bytes the socket has (b"" at its end)."""
        if self.eof:
            return b""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the answer was still arriving at the call's deadline")
        self.sock.settimeout(left)
        data: bytes = self.sock.recv(_READ)
        if not data:
            self.eof = True
        return data

    def readline(self, limit: int) -> bytes:
        """As a buffered reader's ``readline(limit)``: up to and with the next b"\n", at most ``limit``
        bytes, what is left at the end."""
        while True:
            buf, pos = self.buf, self.pos
            end = buf.find(b"\n", pos, pos + limit)
            if end >= 0:
                self.pos = end + 1
                return buf[pos : end + 1]
            if len(buf) - pos >= limit:
                self.pos = pos + limit
                return buf[pos : pos + limit]
            data = self._more()
            if not data:
                self.pos = len(buf)
                return buf[pos:]
            self.buf, self.pos = buf[pos:] + data, 0

    def read(self, size: int) -> bytes:
        """Exactly ``size`` bytes (:class:`http.client.IncompleteRead` when the answer ends first)."""
        buf, pos = self.buf, self.pos
        have = len(buf) - pos
        if have >= size:
            self.pos = pos + size
            return buf[pos : pos + size]
        parts = [buf[pos:]]
        while have < size:
            data = self._more()
            if not data:
                raise http.client.IncompleteRead(b"".join(parts), size - have)
            parts.append(data)
            have += len(data)
        self.buf, self.pos = b"".join(parts), size
        return self.buf[:size]

    def rest(self) -> bytes:
        """Everything up to the socket's end."""
        parts = [self.buf[self.pos :]]
        while data := self._more():
            parts.append(data)
        self.buf, self.pos = b"", 0
        return b"".join(parts)

    @property
    def left(self) -> bool:
        """Bytes were read past what was asked."""
        return self.pos < len(self.buf)


def _status_line(reader: _Bytes) -> tuple[str, int, str]:
    """An answer's status line as http.client's ``_read_status`` reads and refuses it."""
    raw = reader.readline(_MAX_LINE + 1)
    if len(raw) > _MAX_LINE:
        raise http.client.LineTooLong("status line")
    if not raw:
        raise http.client.RemoteDisconnected("Remote end closed connection without response")
    return _parse_status(raw)


def _parse_status(raw: bytes) -> tuple[str, int, str]:
    line = raw.decode("iso-8859-1")
    parts = line.split(None, 2)
    if len(parts) == 3:
        version, status, reason = parts
    elif len(parts) == 2:
        (version, status), reason = parts, ""
    else:
        version, status, reason = "", "", ""
    if not version.startswith("HTTP/"):
        raise http.client.BadStatusLine(line)
    try:
        code = int(status)
    except ValueError:
        raise http.client.BadStatusLine(line) from None
    if code < 100 or code > 999:
        raise http.client.BadStatusLine(line)
    return version, code, reason


def _message(lines: list[bytes]) -> http.client.HTTPMessage:
    """Header lines as an :class:`http.client.HTTPMessage` (for both response readers), as http.client's
    email parser stores them."""
    headers = http.client.HTTPMessage()
    for line in lines:
        name, colon, value = line.decode("iso-8859-1").partition(":")
        if colon:  # as the email package stores it (a folded line, which Go never sends, is not)
            headers[name] = value.lstrip(" \t").rstrip("\r\n")
    return headers


class _Reply:
    """One answer read whole by :func:`_receive`: what the caller and :class:`ApiException` read of it."""

    __slots__ = ("data", "lines", "reason", "reusable", "status", "version")

    def __init__(
        self, status: int, reason: str, version: int, lines: list[bytes], data: bytes, reusable: bool
    ) -> None:
        self.status = status
        self.reason = reason
        self.version = version
        self.lines = lines
        self.data = data
        #: Read exactly to its end, nothing past it, and the peer keeps the connection open.
        self.reusable = reusable

    @property
    def headers(self) -> http.client.HTTPMessage:
        return _message(self.lines)


def _chunked(reader: _Bytes) -> bytes:
    """A chunked body, as http.client's ``_read_chunked`` reads it (a chunk extension ignored, the
    trailer read and dropped), its framing refused as :class:`http.client.IncompleteRead`."""
    parts: list[bytes] = []
    while True:
        line = reader.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise http.client.LineTooLong("chunk size")
        try:
            size = int(line.split(b";", 1)[0], 16)
        except ValueError:
            raise http.client.IncompleteRead(b"".join(parts)) from None
        if size < 0:
            raise http.client.IncompleteRead(b"".join(parts))
        if size == 0:
            break
        parts.append(reader.read(size))
        reader.read(2)  # the chunk's CRLF
    while True:  # the trailer
        line = reader.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE:
            raise http.client.LineTooLong("trailer line")
        if line in (b"\r\n", b"\n", b""):
            return b"".join(parts)


def _interim(status: int) -> bool:
    """An informational answer that comes before the final one (100 Continue, 103 Early Hints): skipped,
    as Go's client skips it. http.client skips only 100, and would give a proxy's 103 as a bind's
    answer (a success with no body), the real one left on the connection for the next request.
    101 Switching Protocols is final."""
    return 100 <= status < 200 and status != http.client.SWITCHING_PROTOCOLS


def _plain_head(reader: _Bytes) -> tuple[str, int, str, list[bytes]] | None:
    """An answer's status line and header lines when its first read holds its whole head, every line
    ended by CRLF, within http.client's limits, and it is not an interim 1xx (the apiserver's answers):
    split in one go, the reader moved past the head. None (nothing read from the reader): the head is
    read line by line, as http.client reads it, which refuses what it refuses."""
    buf = reader.buf
    end = buf.find(b"\r\n\r\n")
    if end < 0 or end > _MAX_LINE:
        return None
    head = buf[:end]
    if head.count(b"\n") != head.count(b"\r\n"):
        return None  # a line ended by a bare LF
    lines = head.split(b"\r\n")
    if b"\n " in head or b"\n\t" in head:
        return None  # a folded line: refused line by line
    if len(lines) > _MAX_HEADERS:  # the status line and 99 headers at most (the empty line counts)
        return None
    version, status, reason = _parse_status(lines[0] + b"\r\n")
    if _interim(status):
        return None
    reader.pos = end + 4
    del lines[0]
    return version, status, reason, lines


def _receive(sock: Any, method: str, deadline: float) -> _Reply:
    """An answer read whole from ``sock``: the status, headers, length, chunking and keep-alive rules of
    :class:`_LeanResponse` (http.client's, every informational 1xx skipped: :func:`_interim`), the body
    read to its end, straight from the socket. The headers are kept as lines (an
    :class:`http.client.HTTPMessage` is made only if asked: an error's). It may be reused only when
    nothing came past its end."""
    reader = _Bytes(sock, deadline)
    reader.buf = reader._more()
    plain = _plain_head(reader)
    if plain is not None:
        version, status, reason, lines = plain
    else:
        while True:
            version, status, reason = _status_line(reader)
            if not _interim(status):
                break
            _header_lines(reader)  # an interim answer's headers: skipped
        lines = _header_lines(reader)
    if version in ("HTTP/1.0", "HTTP/0.9"):
        http_version = 10
    elif version.startswith("HTTP/1."):
        http_version = 11
    else:
        raise http.client.UnknownProtocol(version)
    found: dict[bytes, str] = {}
    for line in lines:
        name, colon, value = line.partition(b":")
        if colon and (key := name.lower()) in _FRAMING and key not in found:  # the first, as get() reads
            found[key] = value.decode("iso-8859-1").lstrip(" \t").rstrip("\r\n")
    chunked = (found.get(b"transfer-encoding") or "").lower() == "chunked"
    conn = (found.get(b"connection") or "").lower()
    if http_version == 11:
        will_close = "close" in conn
    else:
        will_close = not (
            found.get(b"keep-alive")
            or "keep-alive" in conn
            or "keep-alive" in (found.get(b"proxy-connection") or "").lower()
        )
    length: int | None = None
    declared = found.get(b"content-length")
    if declared and not chunked:
        with contextlib.suppress(ValueError):
            length = int(declared) if int(declared) >= 0 else None
    if status in (204, 304) or 100 <= status < 200 or method == "HEAD":
        length = 0
    if method == "HEAD":
        data = b""
    elif chunked:
        data = _chunked(reader)
    elif length is not None:
        data = reader.read(length)
    else:
        data, will_close = reader.rest(), True  # the body ends when the connection does
    if status == http.client.SWITCHING_PROTOCOLS:
        will_close = True  # what follows is another protocol's
    return _Reply(status, reason.strip(), http_version, lines, data, not will_close and not reader.left)


class _LeanResponse(http.client.HTTPResponse):
    """http.client's response, its headers read without the email package's parser (which took most
    of what http.client spends on a small answer): the same status, headers, length, chunking and
    keep-alive rules as ``HTTPResponse.begin``."""

    def begin(self) -> None:
        while True:
            version, status, reason = self._read_status()  # type: ignore[attr-defined]
            if status != http.client.CONTINUE:
                break
            _header_lines(self.fp)  # an interim answer's headers: skipped
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.code = self.status = status
        self.reason = reason.strip()
        headers = _message(_header_lines(self.fp))
        self.headers = self.msg = headers
        self.chunked = (headers.get("transfer-encoding") or "").lower() == "chunked"
        self.chunk_left = None
        self.will_close = self._check_close()  # type: ignore[attr-defined]
        self.length = None
        length = headers.get("content-length")
        if length and not self.chunked:
            with contextlib.suppress(ValueError):
                self.length = int(length) if int(length) >= 0 else None
        if status in (204, 304) or 100 <= status < 200 or self._method == "HEAD":  # type: ignore[attr-defined]
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # the body ends when the connection does


class _Connection(http.client.HTTPConnection):
    """A request with its body in one write (http.client writes the body apart, and sets TCP_NODELAY:
    two TLS records and two TCP segments per bind, for both ends to handle), the answer read by
    :class:`_LeanResponse`."""

    response_class = _LeanResponse

    def _send_output(self, message_body: Any = None, encode_chunked: bool = False) -> None:
        if not isinstance(message_body, bytes) or encode_chunked:
            super()._send_output(message_body, encode_chunked)  # type: ignore[misc]
            return
        buffer: list[bytes] = self._buffer  # type: ignore[attr-defined]
        buffer.extend((b"", message_body))  # joined: the headers, the empty line, the body
        msg = b"\r\n".join(buffer)
        del buffer[:]
        self.send(msg)


#: The TLS session of the latest connection of the direct path to a server with a context (the host, the
#: port, the context: one for the same settings, ``tls_context``), for the next one to resume (see
#: :class:`_TLSConnection`): taken from a connection once it has read its first answer (TLS 1.3 gives the
#: session to resume after the handshake, with the first data).
_SESSIONS: dict[tuple[str, int, ssl.SSLContext | None], ssl.SSLSession] = {}


class _TLSConnection(_Connection, http.client.HTTPSConnection):
    """Its handshake resumes ``session`` (the TLS session of an earlier connection made with the same
    context to the same server, :data:`_SESSIONS`) where there is one: the server proves itself again
    with the key agreed then instead of signing with its certificate's key, and the client does not check
    a certificate chain again (the apiserver signs nothing with its certificate's key: less of its CPU
    per connection). A session the server no longer takes makes a full handshake, as without one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The session the next :meth:`connect` resumes (None: a full handshake).
        self.session: ssl.SSLSession | None = None
        #: Connected, and no answer read on it yet (its own session not taken yet).
        self.fresh = False

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)  # TCP, TCP_NODELAY (no tunnel: _direct_ok)
        self.sock = self._context.wrap_socket(  # type: ignore[attr-defined]
            self.sock, server_hostname=self.host, session=self.session
        )


def _refuse_unsupported(cfg: AnySettings) -> None:
    """A client setting this path cannot honour is refused, never ignored."""
    if cfg.host and urlsplit(str(cfg.host)).scheme not in ("http", "https"):
        raise ValueError(f"the apiserver's address {cfg.host!r}: only http and https are supported")
    if cfg.assert_hostname not in (None, True, False):
        raise ValueError("assert_hostname naming another host is not supported (use tls-server-name)")
    if cfg.socket_options is not None:
        raise ValueError("socket_options are not supported by volsched's API client")
    if cfg.proxy and urlsplit(str(cfg.proxy)).scheme.lower().startswith("socks"):
        raise ValueError(f"a SOCKS proxy ({cfg.proxy}) is not supported: use an HTTP proxy")
    if cfg.proxy and getattr(cfg, "proxy_ssl_context", None) is not None:
        raise ValueError("a TLS context of the proxy's own is not supported")


class _Loop:
    """The one event loop every LeanRest's requests run on, on a daemon thread of its own, started at
    the first request."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="volsched-http", daemon=True).start()
                cls._loop = loop
            return cls._loop


def _aiohttp() -> ModuleType:
    """aiohttp, imported here at its client's first use and never at this module's import: the
    operator's reads go direct until its cache has synced (``LeanRest(direct_until=...)``), so that
    aiohttp's import is not on its way to ready (tests/unit/test_startup_imports.py)."""
    import aiohttp

    return aiohttp


def _url(text: str) -> URL:
    """``text`` as aiohttp's URL, sent as the caller quoted it (yarl comes with aiohttp's import)."""
    from yarl import URL

    return URL(text, encoded=True)


def _aio_unsent(exc: BaseException) -> bool:
    """A failure to connect at all (to the apiserver or a proxy): nothing was sent."""
    aiohttp = _aiohttp()
    return isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError)


def _close_sessions(loop: asyncio.AbstractEventLoop, sessions: list[aiohttp.ClientSession]) -> None:
    """Close these sessions on the loop, waiting a moment for it (the loop may be gone at exit)."""
    while sessions:
        session = sessions.pop()
        with contextlib.suppress(RuntimeError, TimeoutError, concurrent.futures.TimeoutError):
            asyncio.run_coroutine_threadsafe(session.close(), loop).result(2)


class _AioAnswer:
    """An error answer as :class:`ApiException` reads it."""

    __slots__ = ("data", "headers", "reason", "status")

    def __init__(self, status: int, reason: str, headers: Mapping[str, str], data: bytes) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.data = data

    def getheaders(self) -> Mapping[str, str]:
        return self.headers


T = TypeVar("T")


def _bypassed(hostname: str, no_proxy: str) -> bool:
    """Whether ``no_proxy`` names ``hostname`` (read as urllib reads ``NO_PROXY``; imported here, only
    with a proxy: ``urllib.request`` imports ``tempfile`` and the like)."""
    from urllib.request import proxy_bypass_environment  # type: ignore[attr-defined]

    return bool(proxy_bypass_environment(hostname, {"no": no_proxy}))


class _Aio:
    """A LeanRest's requests through aiohttp's client: its own session (connection pool, sized by the
    configuration's ``connection_pool_maxsize``) on the one loop of :class:`_Loop`, made at the first
    request; the caller's thread waits for each. A whole request is bounded by its timeout (an answer
    that trickles or never ends is cut off there); an informational 1xx is skipped; a framing two
    readers could read apart is refused."""

    def __init__(self, cfg: AnySettings, host: str) -> None:
        _refuse_unsupported(cfg)
        self.host = host
        https = urlsplit(host).scheme == "https"
        # assert_hostname false, as urllib3 reads it: the certificate, not its name, checked
        self.tls = tls_context(cfg, check_hostname=cfg.assert_hostname is not False) if https else None
        no_proxy = getattr(cfg, "no_proxy", None)
        bypass = not cfg.proxy or bool(no_proxy and _bypassed(urlsplit(host).hostname or "", no_proxy))
        self.options: dict[str, Any] = {"allow_redirects": False}
        if cfg.proxy and not bypass:
            self.options["proxy"] = cfg.proxy
            if cfg.proxy_headers:
                self.options["proxy_headers"] = cfg.proxy_headers
        if cfg.tls_server_name and https:
            self.options["server_hostname"] = cfg.tls_server_name
        self.limit = max(1, int(cfg.connection_pool_maxsize or 4))
        self.session: aiohttp.ClientSession | None = None  # made on the loop, at the first request
        #: The session, for closing it when the LeanRest is dropped unclosed (or at exit).
        self.made: list[aiohttp.ClientSession] = []
        self._finalizer: weakref.finalize[Any, Any] | None = None
        #: Connections opened (for tests and benchmarks).
        self.connects = 0

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop every request runs on (started at the first one: a direct-path LeanRest never does)."""
        return _Loop.get()

    def run(self, coro: Coroutine[Any, Any, T], wait: float | None) -> T:
        """Run ``coro`` on the loop and wait for it (``wait``: a bound of last resort past its own)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(wait)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError("no answer within the call's deadline") from None

    def sessions(self) -> aiohttp.ClientSession:
        if self.session is None:
            aiohttp = _aiohttp()
            trace = aiohttp.TraceConfig()
            trace.on_connection_create_end.append(self._connected)
            self.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    ssl=self.tls if self.tls is not None else True, limit=self.limit
                ),
                trace_configs=[trace],
                auto_decompress=False,
                # No Accept-Encoding: the apiserver gzips a response over 128 KiB for a client that
                # accepts it, and the bodies here are read as they come (a listing of a few hundred nodes).
                skip_auto_headers=("User-Agent", "Accept-Encoding"),
            )
            # aiohttp sends a GET, PUT or DELETE once more when a kept-alive connection fails under it;
            # whether sending again is safe is the caller's to know (a Lease's PUT sent twice is a 409
            # that reads as the Lease lost), so it never does here (as its own test client turns it off;
            # tests/unit/test_http_faults.py pins it).
            self.session._retry_connection = False
            self.made.append(self.session)
            if self._finalizer is None:
                self._finalizer = weakref.finalize(self, _close_sessions, self.loop, self.made)
        return self.session

    async def _connected(self, *_: Any) -> None:
        self.connects += 1

    async def _send(
        self, method: str, url: URL, data: bytes | None, headers: dict[str, str], timeout: float
    ) -> tuple[int, str, Mapping[str, str], bytes]:
        async with self.sessions().request(
            method,
            url,
            data=data,
            headers=headers,
            timeout=_aiohttp().ClientTimeout(total=timeout),
            **self.options,
        ) as resp:
            body = await resp.read()
            return resp.status, resp.reason or "", resp.headers, body

    def request(
        self, method: str, path: str, data: bytes | None, headers: dict[str, str], timeout: float
    ) -> bytes:
        """As :meth:`LeanRest.request`: a GET asked once more within what is left of ``timeout``."""
        url = _url(self.host + path)
        deadline = time.monotonic() + timeout
        for attempt in (0, 1):
            left = max(0.001, deadline - time.monotonic())
            try:
                status, reason, answered, out = self.run(
                    self._send(method, url, data, headers, left), left + 5
                )
            except (_aiohttp().ClientError, OSError, TimeoutError) as exc:
                if _aio_unsent(exc):
                    raise
                if method == "GET" and attempt == 0 and deadline > time.monotonic():
                    continue  # a read changes nothing: asked once more
                raise ResponseLost(f"{method} {path}: no answer ({type(exc).__name__})") from exc
            if status >= 400:
                raise ApiException(http_resp=_AioAnswer(status, reason, answered, out))
            return out
        raise AssertionError("unreachable")  # pragma: no cover

    def stream(self, path: str, headers: dict[str, str], timeout: float, connect_timeout: float) -> AioStream:
        url = _url(self.host + path)
        limits = _aiohttp().ClientTimeout(total=None, connect=connect_timeout, sock_read=timeout)

        async def open_() -> aiohttp.ClientResponse:
            return await self.sessions().get(url, headers=headers, timeout=limits, **self.options)

        for attempt in (0, 1):
            try:
                return AioStream(self, self.run(open_(), connect_timeout + timeout + 5))
            except (_aiohttp().ClientError, OSError, TimeoutError) as exc:
                if attempt == 1:
                    raise StreamBroken(f"GET {path}: no answer ({type(exc).__name__})") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self.session = None
        if self.made:
            _close_sessions(self.loop, self.made)


class AioStream:
    """:class:`Stream`'s counterpart on aiohttp's client: :meth:`lines` for a 2xx, :meth:`body` for an
    error, then :meth:`close`; :meth:`shutdown`, from another thread, ends a read waiting for the body."""

    def __init__(self, aio: _Aio, response: aiohttp.ClientResponse) -> None:
        self.aio = aio
        self.response = response
        self.status = response.status
        self.reason = response.reason or ""
        self.headers = response.headers

    def body(self) -> bytes:
        try:
            return self.aio.run(self.response.read(), None)
        except (_aiohttp().ClientError, OSError, TimeoutError) as exc:
            raise StreamBroken(f"the answer's body: {type(exc).__name__}") from exc

    def lines(self) -> Iterator[bytes]:
        """The body's non-blank lines, each as soon as it ended (:class:`StreamBroken` when it is cut
        short or its framing is broken)."""
        content = self.response.content
        pending = b""
        while True:
            try:
                data = self.aio.run(content.readany(), None)
            except (_aiohttp().ClientError, OSError) as exc:
                raise StreamBroken(f"the answer's body: {type(exc).__name__}: {exc}") from exc
            if not data:
                break
            *got, pending = (pending + data).split(b"\n")
            yield from (line for line in got if line.strip())
        if pending.strip():
            yield pending

    def shutdown(self) -> None:
        self.aio.loop.call_soon_threadsafe(self.response.close)

    def close(self) -> None:
        async def done() -> None:
            if self.response.content.at_eof():
                self.response.release()
            else:
                self.response.close()

        with contextlib.suppress(RuntimeError, TimeoutError):
            self.aio.run(done(), 10)


class LeanRest:
    def __init__(
        self,
        api: AnyApi,
        *,
        direct: bool | None = None,
        direct_until: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``direct``: send over per-thread http.client connections (None: whenever the configuration
        allows it; False: through aiohttp's client, whose connections outlive the calling threads: the
        reads, the listings' page fetchers, the Lease). ``direct_until`` (with ``direct=False``): the
        direct path until this event is set, where the configuration allows it, aiohttp's client from
        then on: the operator's reads before its cache is synced, while aiohttp is not imported yet
        (a thread's connection of before is parked at its first request after, for the next thread that
        opens one: :mod:`~volsched.kube.parked`)."""
        cfg = api.configuration
        self.api = api
        self.host = str(cfg.host).rstrip("/")
        self._base = {"Accept": JSON, **api.default_headers}
        self.direct = _direct_ok(cfg) if direct is None else direct and _direct_ok(cfg)
        self._direct_until = direct_until if not self.direct and _direct_ok(cfg) else None
        #: Everything but the direct path: aiohttp's client.
        self._aio = _Aio(cfg, self.host)
        url = urlsplit(self.host)
        self._https = url.scheme == "https"
        self._netloc = (url.hostname or "localhost", url.port or (443 if self._https else 80))
        self._prefix = url.path.rstrip("/")
        direct_ever = self.direct or self._direct_until is not None
        self._tls = tls_context(cfg) if direct_ever and self._https else None
        self._local = threading.local()
        #: Connections of the direct path that resumed a session (for tests and benchmarks).
        self.resumed = 0
        #: Connections opened by the direct path, and parked ones it took (:mod:`~volsched.kube.parked`),
        #: for tests and benchmarks.
        self.connects = 0
        self.adopted = 0
        self._count = threading.Lock()
        self._clock = clock
        self._sleep = sleep
        #: When the credentials header was read (see AUTH_TTL), the header, and its line as sent.
        self._auth: tuple[float, tuple[str, str] | None, bytes] | None = None
        #: What every direct request's head says but its request line, type, credentials and length:
        #: http.client's Host and Accept-Encoding, then the client's default headers (checked once here,
        #: as http.client checks each header of each request).
        host, port = self._netloc
        if not host.isascii():  # as http.client: IDNA
            host = host.encode("idna").decode("ascii")
        host = f"[{host}]" if ":" in host else host
        default_port = 443 if self._https else 80
        host_value = host if port == default_port else f"{host}:{port}"
        self._fixed = b"".join(
            _header_line(k, v)
            for k, v in {"Host": host_value, "Accept-Encoding": "identity", **self._base}.items()
        )
        self._types: dict[str, bytes] = {}

    def _credentials(self) -> tuple[str, str] | None:
        return self._read_auth()[1]

    def _read_auth(self) -> tuple[float, tuple[str, str] | None, bytes]:
        """The Authorization header, read from the client's settings at most every ``AUTH_TTL``
        seconds: they call the client's refresh hook (a rotated service-account token, an exec
        plugin), which for a kubeconfig sets up the whole configuration again."""
        now = self._clock()
        cached = self._auth
        if cached is not None and 0 <= now - cached[0] < AUTH_TTL:
            return cached
        auth = self.api.configuration.auth_settings().get("BearerToken")
        header = (str(auth["key"]), str(auth["value"])) if auth and auth.get("value") else None
        cached = (now, header, b"" if header is None else _header_line(*header))
        self._auth = cached  # with its line as sent: one object, read whole by every thread
        return cached

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = dict(self._base)
        if content_type:
            headers["Content-Type"] = content_type
        auth = self._credentials()
        if auth is not None:
            headers[auth[0]] = auth[1]
        return headers

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str | None = JSON,
        timeout: float,
        patience: float | None = None,
    ) -> bytes:
        """Send one request; return the response body (read to its end). Raises ApiException for an
        error status, :class:`ResponseLost` when it may have been sent but no answer came back, another
        OSError or TimeoutError for a failure to talk at all (nothing sent). With ``patience`` (not for a
        GET; the direct path only), :class:`Detached` when it was sent and its answer had not begun
        within that many seconds: the caller reads it elsewhere."""
        if patience is not None and method == "GET":
            raise ValueError(
                "a read is asked again when its answer is lost: it is never left to another thread"
            )
        data = None if body is None else _dumps(body)
        content_type = content_type if data is not None else None
        if self._goes_direct():
            return self._direct(method, path, data, content_type, timeout, patience)
        if _BAD_TARGET.search(self._prefix + path) or not method.isalpha():
            raise http.client.InvalidURL(f"cannot send {method} {self._prefix + path!r}")
        return self._aio.request(method, path, data, self._headers(content_type), timeout)

    def _goes_direct(self) -> bool:
        """Whether this request takes the direct path (else aiohttp's client)."""
        if self.direct:
            return True
        until = self._direct_until
        if until is None:
            return False
        if not until.is_set():
            return True
        # This thread's connection of before: not used again here, parked for the next thread that opens
        # one on the direct path (a bind worker, a watch).
        self.park()
        return False

    def get(self, path: str, *, timeout: float, throttle_retries: int = 10) -> Any:
        """A read's JSON (see :meth:`read`)."""
        return loads(self.read(path, timeout=timeout, throttle_retries=throttle_retries))

    def read(self, path: str, *, timeout: float, throttle_retries: int = 10) -> bytes:
        """A read's body, not decoded yet. A 429 with ``Retry-After`` (API Priority and Fairness did not
        take it; a CRD's storage still starting) is waited out and asked again, up to
        ``throttle_retries`` times: a read changes nothing.
        ``timeout`` bounds each try."""
        for attempt in range(throttle_retries + 1):
            try:
                return self.request("GET", path, timeout=timeout)
            except ApiException as exc:
                wait = retry_after(exc.status, exc.headers, exc.body)
                if wait is None or attempt == throttle_retries:
                    raise
                self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None and _dropped(conn):
            conn.close()  # closed by the apiserver while idle: nothing of ours was sent on it
        if conn is None:
            host, port = self._netloc
            if self._https:
                conn = _TLSConnection(host, port, timeout=timeout, context=self._tls)
            else:
                conn = _Connection(host, port, timeout=timeout)
            self._local.conn = conn
        conn.timeout = timeout
        if conn.sock is None:
            conn.sock = parked.take(*self._netloc, self._tls if self._https else None)
            if conn.sock is not None and _dropped(conn):
                conn.close()  # closed by the apiserver while parked
            if conn.sock is not None:
                with self._count:
                    self.adopted += 1
        if conn.sock is None:
            if isinstance(conn, _TLSConnection):
                conn.session = _SESSIONS.get((*self._netloc, self._tls))
            conn.connect()  # a failure here sent nothing
            with self._count:
                self.connects += 1
                if isinstance(conn, _TLSConnection):
                    conn.fresh = True
                    self.resumed += conn.sock.session_reused  # type: ignore[attr-defined]
        else:
            conn.sock.settimeout(timeout)
        return conn

    def _head(self, method: str, path: str, content_type: str | None, data: bytes | None) -> bytes:
        """A request's head as http.client would write it (the same headers, checked as it checks them),
        from the lines that do not change between requests."""
        target = self._prefix + path
        if _BAD_TARGET.search(target) or not method.isalpha():
            raise http.client.InvalidURL(f"cannot send {method} {target!r}")
        auth_line = self._read_auth()[2]  # read again when due
        type_line = b""
        if content_type:
            type_line = self._types.get(content_type) or self._types.setdefault(
                content_type, _header_line("Content-Type", content_type)
            )
        if data is not None:
            length = b"Content-Length: %d\r\n" % len(data)
        elif method in _BODY_METHODS:
            length = b"Content-Length: 0\r\n"
        else:
            length = b""
        return b"".join(
            (
                f"{method} {target} HTTP/1.1\r\n".encode("ascii"),
                self._fixed,
                type_line,
                auth_line,
                length,
                b"\r\n",
            )
        )

    def _direct(
        self,
        method: str,
        path: str,
        data: bytes | None,
        content_type: str | None,
        timeout: float,
        patience: float | None = None,
    ) -> bytes:
        """One request over this thread's connection: its head and body in one write, built from the
        lines that do not change (not through http.client's request machinery), its answer read by
        :func:`_receive` to its end. With ``patience`` (a write's), an answer not begun within that
        many seconds of the send is left to another thread: :class:`Detached`."""
        deadline = time.monotonic() + timeout  # the whole call
        message = self._head(method, path, content_type, data) + (data or b"")
        for attempt in (0, 1):
            conn = self._connection(max(0.001, deadline - time.monotonic()))  # a second try: what is left
            try:
                conn.sock.sendall(message)
                if patience is not None and not _answer_begun(conn.sock, patience):
                    self._local.conn = None  # the connection goes with its answer
                    raise Detached(Pending(self, conn, method, path, deadline))
                reply = _receive(conn.sock, method, deadline)  # to its end
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if method == "GET" and attempt == 0 and deadline > time.monotonic():
                    continue  # a read changes nothing: asked once more on a new connection
                raise ResponseLost(f"{method} {path}: no answer ({type(exc).__name__})") from exc
            return self._answered(conn, reply)
        raise AssertionError("unreachable")  # pragma: no cover

    def _answered(self, conn: http.client.HTTPConnection, reply: _Reply) -> bytes:
        """A direct request's answer read whole on ``conn``: its body, or its error raised."""
        if isinstance(conn, _TLSConnection) and conn.fresh and conn.sock is not None:
            # Its first answer read: its session, for the next connection to resume, is here now.
            conn.fresh = False
            session = conn.sock.session
            if session is not None:
                _SESSIONS[(*self._netloc, self._tls)] = session
        if not reply.reusable:  # the peer closes it, or sent more than the answer
            conn.close()
        if reply.status >= 400:
            raise ApiException(http_resp=reply)
        return reply.data

    def stream(self, path: str, *, timeout: float, connect_timeout: float = 10.0) -> Stream | AioStream:
        """Send a GET on this thread's connection and return its answer with the body unread (a watch):
        ``connect_timeout`` bounds the connect, ``timeout`` each read. A kept-alive connection that fails
        before an answer came is replaced once (a read changes nothing)."""
        headers = self._headers(None)
        if not self._goes_direct():
            return self._aio.stream(path, headers, timeout, connect_timeout)
        for attempt in (0, 1):
            conn = self._connection(connect_timeout)
            try:
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                conn.request("GET", self._prefix + path, headers=headers)
                return Stream(conn, conn.getresponse())
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if attempt == 1:
                    raise StreamBroken(f"GET {path}: no answer ({type(exc).__name__})") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def park(self) -> None:
        """This thread is done with its direct connection (a page fetcher's thread, which ends): kept open
        for the next thread that opens one (:mod:`~volsched.kube.parked`), where it is idle and clean."""
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is None:
            return
        sock, conn.sock = conn.sock, None
        conn.close()
        if sock is not None:  # a connection whose answer was not read to its end was closed already
            parked.park(*self._netloc, self._tls if self._https else None, sock)

    def close(self) -> None:
        """Close this thread's connection (others close with their threads) and aiohttp's."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._aio.close()


def _answer_begun(sock: Any, patience: float) -> bool:
    """Whether an answer's first bytes are on ``sock`` within ``patience`` seconds (waiting without the
    interpreter's lock)."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    return _readable(sock, patience)


class Pending:
    """A direct write sent, its answer not read yet (:class:`Detached`): :meth:`answer` reads it, on any
    thread, once, as :meth:`LeanRest.request` would have (its body, or ApiException, or ResponseLost); the
    connection is then parked for the next thread that opens one (:mod:`~volsched.kube.parked`)."""

    def __init__(
        self, rest: LeanRest, conn: http.client.HTTPConnection, method: str, path: str, deadline: float
    ) -> None:
        self._rest, self._conn, self._method, self._path, self._deadline = rest, conn, method, path, deadline

    def answer(self) -> bytes:
        conn = self._conn
        try:
            reply = _receive(conn.sock, self._method, self._deadline)  # to its end
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise ResponseLost(f"{self._method} {self._path}: no answer ({type(exc).__name__})") from exc
        try:
            return self._rest._answered(conn, reply)
        finally:
            sock, conn.sock = conn.sock, None
            conn.close()
            if sock is not None:  # clean (read to its end, reusable): the next thread to open one takes it
                rest = self._rest
                parked.park(*rest._netloc, rest._tls if rest._https else None, sock)


class Stream:
    """An answer whose body is read as it arrives (:meth:`LeanRest.stream`): :meth:`lines` for a 2xx,
    :meth:`body` for an error; then :meth:`close` (the connection stays open for the next request only
    when the answer was read exactly to its end). :meth:`shutdown`, from another thread, ends a read
    waiting on the socket."""

    #: The most read at once: whatever has arrived, up to this.
    READ = 65536

    def __init__(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
        self.conn = conn
        self.response = response
        self.status = response.status
        self.reason = response.reason
        self.headers = response.msg
        #: The body was read to its end and nothing past it: the connection may be used again.
        self.clean = False

    def body(self) -> bytes:
        """The whole body (an error's Status)."""
        data = self.response.read()
        self.clean = self.response.isclosed() and not self.response.will_close
        return data

    def lines(self) -> Iterator[bytes]:
        """The body's non-blank lines, each as soon as it ended."""
        resp = self.response
        fp = resp.fp
        if fp is None:
            return
        if resp.chunked:
            read1 = fp.read1
            self.clean = yield from chunked_lines(lambda: read1(self.READ))
            if not self.clean:  # bytes read past the answer: the connection is not reused
                resp.will_close = True
            resp.close()  # what http.client does at a body's end (the socket stays open)
            return
        pending = b""  # a length-delimited body, or one that ends with the connection
        while data := resp.read1(self.READ):
            *lines, pending = (pending + data).split(b"\n")
            yield from (line for line in lines if line.strip())
        if pending.strip():
            yield pending
        self.clean = not resp.will_close

    def shutdown(self) -> None:
        sock = self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RD)

    def close(self) -> None:
        """Done with the answer: the connection is closed unless it was read exactly to its end."""
        if not self.clean or self.response.will_close:
            self.conn.close()
        else:
            self.response.close()


#: What ``quote(s, safe="")`` leaves as it is (every Kubernetes name is): such a path segment is not quoted.
_UNQUOTED = re.compile("[A-Za-z0-9_.~-]*")


def _segment(value: str) -> str:
    """``value`` as one path segment (``quote(value, safe="")``; in a third of its time when it needs
    no quoting, as every Kubernetes name)."""
    return value if _UNQUOTED.fullmatch(value) else quote(value, safe="")


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    path = f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(name)}"
    return f"{path}/{sub}" if sub else path


def event_path(namespace: str, name: str = "") -> str:
    path = f"/api/v1/namespaces/{_segment(namespace)}/events"
    return f"{path}/{_segment(name)}" if name else path


def custom_path(
    group: str, version: str, plural: str, name: str, *, namespace: str | None = None, sub: str = ""
) -> str:
    """A custom object's path (namespaced when ``namespace`` is given), optionally a subresource."""
    ns = f"/namespaces/{quote(namespace, safe='')}" if namespace else ""
    path = f"/apis/{group}/{version}{ns}/{plural}/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def custom_collection(group: str, version: str, plural: str, *, namespace: str) -> str:
    return f"/apis/{group}/{version}/namespaces/{quote(namespace, safe='')}/{plural}"
