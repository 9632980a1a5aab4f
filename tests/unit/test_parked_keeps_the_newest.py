"""The parked connections (``volsched.kube.parked``): once as many are kept as it holds, parking one more
closes the one parked longest ago and keeps the new one, so connections left behind for a server no thread
asks for any more (or closed by the apiserver while idle) never keep a fresh one from being taken."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from volsched.kube import parked


@pytest.fixture
def pool() -> Iterator[list[socket.socket]]:
    """An empty pool for the test (what others parked is closed), and the sockets' far ends to close."""
    parked.close_all()
    ends: list[socket.socket] = []
    yield ends
    parked.close_all()
    for end in ends:
        end.close()


def _sock(ends: list[socket.socket]) -> socket.socket:
    near, far = socket.socketpair()
    ends.append(far)
    return near


def test_a_full_pool_closes_its_oldest_and_keeps_the_new_one(pool: list[socket.socket]) -> None:
    stale = [_sock(pool) for _ in range(parked.MOST)]
    for sock in stale:
        parked.park("gone", 1, None, sock)
    fresh = _sock(pool)
    parked.park("apiserver", 443, None, fresh)
    assert parked.take("apiserver", 443, None) is fresh
    assert stale[0].fileno() == -1  # the oldest, closed
    assert all(sock.fileno() != -1 for sock in stale[1:])
    assert parked.take("gone", 1, None) is stale[-1]  # the latest parked first


def test_below_the_most_nothing_is_closed(pool: list[socket.socket]) -> None:
    socks = [_sock(pool) for _ in range(parked.MOST)]
    for sock in socks:
        parked.park("apiserver", 443, None, sock)
    assert all(sock.fileno() != -1 for sock in socks)
    assert [parked.take("apiserver", 443, None) for _ in socks] == socks[::-1]
    assert parked.take("apiserver", 443, None) is None
