"""A loopback TCP proxy in front of the real kube-apiserver that makes one client slow (fault injection).

Every chunk the client sends reaches the apiserver ``delay`` seconds later (in order; TLS passes through
untouched), so each request of that client takes ``delay`` longer. Answers are not delayed. Point a
kubeconfig at :attr:`SlowProxy.url` (:func:`kubeconfig_via`) and the client's TLS still verifies: the
apiserver's certificate is valid for 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import heapq
import socket
import threading
import time
from pathlib import Path
from typing import Any

import yaml


class SlowProxy:
    def __init__(self, upstream: str, delay: float) -> None:
        host, _, port = upstream.removeprefix("https://").partition(":")
        self.upstream = (host, int(port))
        self.delay = delay
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.url = f"https://127.0.0.1:{self.port}"
        self._closed = threading.Event()
        self._conns: list[socket.socket] = []
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
            threading.Thread(target=self._delayed, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        self._shut(src, dst)

    def _delayed(self, src: socket.socket, dst: socket.socket) -> None:
        """Forward src -> dst, each chunk ``delay`` seconds after it arrived."""
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
                try:
                    dst.sendall(data)
                except OSError:
                    break
            self._shut(src, dst)

        threading.Thread(target=sender, daemon=True).start()
        seq = 0
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                with cond:
                    seq += 1
                    heapq.heappush(queue, (time.monotonic() + self.delay, seq, data))
                    cond.notify()
        with cond:
            done.set()
            cond.notify()

    @staticmethod
    def _shut(*socks: socket.socket) -> None:
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed.set()
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
