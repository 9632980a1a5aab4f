"""A test host of our own: a network namespace joined to this one by a veth pair.

The aggregator reaches an extension server only through an EndpointSlice, and EndpointSlices reject
loopback addresses; so the server listens on an address of a test host the test makes itself, in a
network namespace, and nothing is sent anywhere else. Needs root and iproute2 (``ip``).

A socket created while a thread has joined the namespace stays in it, so the server keeps running
in-process: :func:`listen_in` binds the listening socket inside the namespace from a short-lived thread.
"""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

CLONE_NEWNET = 0x40000000


@dataclass(frozen=True)
class NetnsHost:
    netns: str
    address: str  # the test host's address, inside the namespace
    gateway: str  # this side of the veth pair


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@contextmanager
def netns_host(subnet: int = 203) -> Iterator[NetnsHost]:
    """Create a namespace with ``10.<subnet>.x.2/30`` reachable from here via ``10.<subnet>.x.1``."""
    tag = uuid.uuid4().hex[:6]
    name, host_if, peer_if = f"volsched-{tag}", f"vsh{tag}", f"vsn{tag}"
    third = int(tag[:2], 16)
    gateway, address = f"10.{subnet}.{third}.1", f"10.{subnet}.{third}.2"
    _ip("netns", "add", name)
    try:
        _ip("link", "add", host_if, "type", "veth", "peer", "name", peer_if, "netns", name)
        _ip("addr", "add", f"{gateway}/30", "dev", host_if)
        _ip("link", "set", host_if, "up")
        _ip("-n", name, "addr", "add", f"{address}/30", "dev", peer_if)
        _ip("-n", name, "link", "set", peer_if, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        yield NetnsHost(netns=name, address=address, gateway=gateway)
    finally:
        subprocess.run(["ip", "link", "del", host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def listen_in(host: NetnsHost, port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host.address`` inside the test host's namespace."""
    out: dict[str, object] = {}

    def join_and_bind() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/run/netns/{host.netns}", os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                out["error"] = OSError(ctypes.get_errno(), "setns failed")
                return
        finally:
            os.close(fd)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.address, port))
        sock.listen(64)
        out["socket"] = sock

    thread = threading.Thread(target=join_and_bind, name="netns-bind")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    sock = out["socket"]
    assert isinstance(sock, socket.socket)
    return sock
