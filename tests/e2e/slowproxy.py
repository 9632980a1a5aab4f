"""A loopback TCP proxy in front of the real kube-apiserver that makes one client slow (fault injection).

Every chunk the client sends reaches the apiserver ``delay`` seconds later (in order; TLS passes through
untouched), so each request of that client takes ``delay`` longer. Answers are not delayed. Point a
kubeconfig at :attr:`SlowProxy.url` (:func:`kubeconfig_via`) and the client's TLS still verifies: the
apiserver's certificate is valid for 127.0.0.1.

When a client goes away, what it sent still reaches the apiserver, and the apiserver's side of the
connection is kept open until the apiserver answered what it got last (or closed it): a request on its
way is handled whole, never cut off halfway by the client's end. :meth:`SlowProxy.settled` says when
every request that came through was answered: once the clients are gone, no write of theirs is still
under way (HTTP/1.1 sends a request only after the answer to the one before).
"""

from __future__ import annotations

import contextlib
import heapq
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass
class _Link:
    """One client connection as the proxy carries it (changed under :attr:`SlowProxy._lock`)."""

    #: Chunks sent on to the apiserver, and how many had been when the apiserver last sent something.
    delivered: int = 0
    answered: int = 0
    #: Chunks received and not sent on yet.
    queued: int = 0
    client_gone: bool = False
    upstream_gone: bool = False

    @property
    def settled(self) -> bool:
        """The client is gone, all it sent was delivered, and the apiserver answered (or hung up) since."""
        return (
            self.client_gone and not self.queued and (self.answered == self.delivered or self.upstream_gone)
        )


class SlowProxy:
    def __init__(self, upstream: str, delay: float, *, port: int = 0) -> None:
        """``port``: the loopback port it listens on (0: any free one)."""
        host, _, upstream_port = upstream.removeprefix("https://").partition(":")
        self.upstream = (host, int(upstream_port))
        self.delay = delay
        self.sock = socket.create_server(("127.0.0.1", port))
        self.port = int(self.sock.getsockname()[1])
        self.url = f"https://127.0.0.1:{self.port}"
        self._closed = threading.Event()
        self._conns: list[socket.socket] = []
        self._lock = threading.Condition()
        self._links: list[_Link] = []
        threading.Thread(target=self._accept, daemon=True, name="slowproxy-accept").start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            self._conns += [client, server]
            link = _Link()
            with self._lock:
                self._links.append(link)
            threading.Thread(target=self._delayed, args=(client, server, link), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, link), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, link: _Link) -> None:
        """Forward the apiserver's answers (src) to the client (dst) as they come."""
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                with self._lock:
                    link.answered = link.delivered
                    self._lock.notify_all()
                dst.sendall(data)
        with self._lock:
            link.upstream_gone = True
            self._lock.notify_all()
        self._shut(src, dst)

    def _delayed(self, src: socket.socket, dst: socket.socket, link: _Link) -> None:
        """Forward src -> dst, each chunk ``delay`` seconds after it arrived. Once src is gone and all
        it sent was delivered, dst is kept until it answered (:attr:`_Link.settled`), then shut."""
        queue: list[tuple[float, int, bytes]] = []
        cond = threading.Condition()
        done = threading.Event()

        def sender() -> None:
            while True:
                with cond:
                    while not queue and not done.is_set():
                        cond.wait()
                    if not queue:
                        break
                    due, _, data = queue[0]
                    wait = due - time.monotonic()
                    if wait > 0:
                        cond.wait(wait)
                        continue
                    heapq.heappop(queue)
                with self._lock:
                    link.queued -= 1
                    link.delivered += 1
                try:
                    dst.sendall(data)
                except OSError:
                    break
            with self._lock:
                link.queued = 0  # (what was not sent never will be)
                self._lock.wait_for(lambda: link.settled or self._closed.is_set())
            self._shut(src, dst)

        threading.Thread(target=sender, daemon=True).start()
        seq = 0
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                with self._lock:
                    link.queued += 1
                with cond:
                    seq += 1
                    heapq.heappush(queue, (time.monotonic() + self.delay, seq, data))
                    cond.notify()
        with self._lock:
            link.client_gone = True
            self._lock.notify_all()
        with cond:
            done.set()
            cond.notify()

    @staticmethod
    def _shut(*socks: socket.socket) -> None:
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def settled(self) -> bool:
        """Whether every client that came through is gone and each request it sent was answered."""
        with self._lock:
            return all(link.settled for link in self._links)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            self._lock.notify_all()
        self.sock.close()
        for s in self._conns:
            with contextlib.suppress(OSError):
                s.close()


def kubeconfig_via(kubeconfig: Path, url: str, out: Path) -> Path:
    """A copy of ``kubeconfig`` whose server is ``url``."""
    cfg: dict[str, Any] = yaml.safe_load(kubeconfig.read_text())
    for cluster in cfg["clusters"]:
        cluster["cluster"]["server"] = url
    out.write_text(yaml.safe_dump(cfg))
    return out
