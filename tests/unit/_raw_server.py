"""A loopback TCP server for fault injection below HTTP (answers written as raw bytes, cut, delayed or
never sent): it accepts connections, counts them and serves each on a thread of its own with the
subclass's ``serve``; :func:`requests_on` reads the requests a client sends on one connection. What each
test's server answers stays in its test; the HTTP server that answers scripted statuses per path is
:mod:`tests.unit._scripted_server`'s."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class RawRequest:
    method: str
    target: str
    headers: dict[str, str]  # names lower-cased
    body: bytes


def requests_on(conn: socket.socket) -> Iterator[RawRequest]:
    """The requests the client sends on ``conn``, one by one (Content-Length bodies), until it closes it."""
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                return
            buf += chunk
        head, _, buf = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
        need = int(headers.get("content-length", "0"))
        while len(buf) < need:
            chunk = conn.recv(65536)
            if not chunk:
                return
            buf += chunk
        body, buf = buf[:need], buf[need:]
        method, target = lines[0].split(" ")[:2]
        yield RawRequest(method, target, headers, body)


class RawServer:
    """Listens on a free loopback port (``port``) and hands each connection to ``serve`` with its number
    (1 for the first); ``connections``: how many were accepted. ``close`` stops accepting."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.connections = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                number = self.connections
            threading.Thread(target=self._serve, args=(conn, number), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        with conn:
            self.serve(conn, number)

    def serve(self, conn: socket.socket, number: int) -> None:
        """Answer on ``conn`` (the ``number``-th connection); it is closed when this returns."""
        raise NotImplementedError

    def close(self) -> None:
        self.sock.close()
