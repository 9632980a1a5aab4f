"""Open connections to the apiserver that their thread is done with, kept for the next thread that needs one.

A connection (and its TLS handshake, CPU on both sides) is made per thread on the direct path (:class:`~volsched.kube.rest.LeanRest`). Threads that are done with theirs (the early listings',
:mod:`~volsched.kube.early`) park it here, and a thread about to open one takes a parked one
instead (the reads at start, then the watches): the operator's start makes fewer connections.

A connection is parked with what it was made with (the host, the port and the TLS context: one context for
the same settings, :func:`~volsched.kube.kubeconfig.tls_context`) and taken only for the same: the
credentials go with each request, not with the connection. A connection parked with an answer unread
never is (the caller parks only one read to its end); one the apiserver closed meanwhile (it closes one
idle for 90 s) is found so by the taker, which opens another. At most :data:`MOST` are kept: parking one
more closes the one parked longest ago (the likeliest to have been closed by the apiserver, or to be for a
server no thread asks for any more). Standard library only: imported before the rest of the operator.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading

#: Connections kept at most (parking one more closes the oldest).
MOST = 8

_lock = threading.Lock()
_parked: list[tuple[tuple[str, int, ssl.SSLContext | None], socket.socket]] = []


def park(host: str, port: int, context: ssl.SSLContext | None, sock: socket.socket) -> None:
    """Keep ``sock`` (connected to ``host:port`` with ``context``, None for plain http; nothing unread on
    it) for :func:`take`; the oldest kept is closed when :data:`MOST` are kept already."""
    with _lock:
        _parked.append(((host, port, context), sock))
        oldest = _parked.pop(0)[1] if len(_parked) > MOST else None
    if oldest is not None:
        with contextlib.suppress(OSError):
            oldest.close()


def take(host: str, port: int, context: ssl.SSLContext | None) -> socket.socket | None:
    """A connection parked for ``host:port`` with ``context`` (the latest parked), or None."""
    key = (host, port, context)
    with _lock:
        for i in range(len(_parked) - 1, -1, -1):
            if _parked[i][0] == key:
                return _parked.pop(i)[1]
    return None


def close_all() -> int:
    """Close every parked connection; returns how many."""
    with _lock:
        socks = [sock for _, sock in _parked]
        _parked.clear()
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.close()
    return len(socks)
