"""The catch-up listing after a takeover runs on the session thread: it never holds it past what the
Lease allows (pages, the Lease renewed between them, no 429 waited out, no request past the fence)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client

from tests.unit._cycle_harness import operator_at
from volsched.kube.errors import ApiException
from volsched.kube.rest import LeanRest
from volsched.operator import Operator


class _Answer:
    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status, self.reason, self.data, self.headers = status, "x", b'{"kind":"Status"}', headers


def _pod(name: str, rv: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": str(rv)},
        "spec": {"schedulerName": "volsched", "nodeName": "n1", "containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }


class _Pages(LeanRest):
    """Answers pod listings from a script: a status (429 with a long Retry-After), or a page of pods
    with a continue token for the next one. Records each request's path and timeout, and every sleep."""

    def __init__(self, answers: list[int | list[dict[str, Any]]]) -> None:
        cfg = client.Configuration()
        cfg.host = "http://127.0.0.1:1"  # never connected to: request is scripted
        self.slept: list[float] = []
        super().__init__(client.ApiClient(cfg), direct=False, sleep=self.slept.append)
        self.answers = answers
        self.asked: list[tuple[dict[str, list[str]], float]] = []

    def request(self, method: str, path: str, body: Any = None, *, timeout: float, **_: Any) -> bytes:
        self.asked.append((parse_qs(urlsplit(path).query), timeout))
        answer = self.answers.pop(0)
        if isinstance(answer, int):
            raise ApiException(http_resp=_Answer(answer, {"Retry-After": "10"}))
        more = {"continue": f"page-{len(self.asked)}"} if self.answers else {}
        return json.dumps(
            {"kind": "PodList", "metadata": {"resourceVersion": "9", **more}, "items": answer}
        ).encode()


class _Lease:
    """The Lease as catch-up sees it: renewals scripted (True: still held), the fence 3 s away."""

    def __init__(self, renewals: list[bool]) -> None:
        self.renewals = renewals
        self.renewed = 0

    def renew_if_due(self) -> bool:
        self.renewed += 1
        return self.renewals.pop(0) if self.renewals else True

    def time_left(self) -> float:
        return 3.0


@pytest.fixture
def operator(tmp_path: Path) -> Iterator[Operator]:
    with operator_at(tmp_path, 1) as op:
        yield op


def _take_over(op: Operator, monkeypatch: pytest.MonkeyPatch, reads: _Pages, lease: _Lease) -> None:
    op.loop.reads = reads  # the session loop reads the pods when it catches up
    monkeypatch.setattr(op.lease, "ensure", lambda: True)
    monkeypatch.setattr(op.lease, "renew_if_due", lease.renew_if_due)
    monkeypatch.setattr(op.lease, "time_left", lease.time_left)
    monkeypatch.setattr(op.lease, "acquired_at", 1.0)
    monkeypatch.setattr(op.reloader, "reload", lambda **_: None)
    monkeypatch.setattr(op.reloader, "known", True)  # the ConfigMap was read
    monkeypatch.setattr(op.volcano, "follow", lambda **_: None)
    op.loop.pods_read_at = 0.0


def test_a_throttled_catch_up_is_not_waited_out_and_the_next_session_reads_again(
    operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _Pages([429, [_pod("a", 5)]])
    _take_over(operator, monkeypatch, reads, _Lease([]))
    assert operator.loop.run_once() is None  # no session on a cache that may miss the last leader's binds
    assert reads.slept == []  # Retry-After 10 s, on the session thread: never slept on
    assert operator.loop.pods_read_at == 0.0
    assert operator.loop.catch_up()
    assert "ns/a" in operator.state.raw_pods
    assert operator.loop.pods_read_at > 0.0


def test_the_catch_up_comes_in_pages_each_bounded_by_the_fence_with_the_lease_renewed_between(
    operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _Pages([[_pod("a", 5)], [_pod("b", 6)], [_pod("c", 7)]])
    lease = _Lease([])
    _take_over(operator, monkeypatch, reads, lease)
    assert operator.loop.catch_up()
    assert sorted(k for k in operator.state.raw_pods) == ["ns/a", "ns/b", "ns/c"]
    assert [q.get("continue") for q, _ in reads.asked] == [None, ["page-1"], ["page-2"]]
    assert all(q["limit"] == ["500"] for q, _ in reads.asked)
    assert [t for _, t in reads.asked] == [3.0] * 3  # never past the fenced window
    assert lease.renewed == 3


def test_a_lease_lost_while_catching_up_stops_the_listing_and_the_session(
    operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _Pages([[_pod("a", 5)], [_pod("b", 6)], [_pod("c", 7)]])
    _take_over(operator, monkeypatch, reads, _Lease([True, False]))
    assert operator.loop.run_once() is None
    assert len(reads.asked) == 2  # the third page is never asked for
    assert operator.loop.pods_read_at == 0.0  # the next holding catches up again


def test_what_an_earlier_holding_carried_is_dropped_once_caught_up(
    operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replica that takes the Lease back starts as a fresh one does: its claims and markers from before
    may be stale, and the nominations another leader wrote meanwhile are read again by the first session."""
    reads = _Pages([429, [_pod("a", 5)]])
    _take_over(operator, monkeypatch, reads, _Lease([]))
    carried = {"reservation.nominations-read": True, "reservation.claims": {"ns/b": "n1"}}
    operator.state.carryover = carried
    assert operator.loop.run_once() is None  # throttled: not caught up, nothing dropped yet
    assert operator.state.carryover is carried
    assert operator.loop.catch_up()
    assert operator.state.carryover == {}
