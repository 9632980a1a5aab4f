"""aiohttp imported once the cache is synced: until then the operator's reads, its Lease and its listings
go over the direct path (http.client) and its health answers over the standard library's server; from
then on the reads and listings go through aiohttp's client (the Lease stays on the direct path),
aiohttp's server serves everything on the same port, and the
replica schedules, writes and watches as before (real apiserver; the operator in-process, to read its
connections; that nothing imports aiohttp before: tests/unit/test_startup_imports.py)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.operator_fixtures import OPERATOR_NS, Kube, node, operator_on_a_thread, pod, wait_for
from volsched.operator import Operator, Settings
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster


def _status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.fixture
def operator(cluster: LocalControlPlane, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """An operator (Lease on, any free port) run on a thread; what its connections were once synced."""
    seen: dict[str, Any] = {}
    listed = Operator.prelist

    def prelist(op: Operator) -> None:
        listed(op)
        lists = [w._lists for w in op.feed.lean.values() if w._lists is not None]
        seen["synced"] = {
            "reads": (op.reads.connects, op.reads._aio.connects),
            "lease": (op.lease.rest.connects, op.lease.rest._aio.connects),
            "lists": (sum(r.connects for r in lists), sum(r._aio.connects for r in lists)),
            "aio_ready": op.aio_ready.is_set(),
            "metrics": _status(op.http_port or 0, "/metrics"),
        }

    monkeypatch.setattr(Operator, "prelist", prelist)
    settings = Settings(kubeconfig=str(cluster.kubeconfig_path))
    settings.http.host, settings.http.port, settings.http.auth = "127.0.0.1", 0, "none"
    settings.lease.namespace = OPERATOR_NS
    with operator_on_a_thread(Operator(settings)) as op:
        seen["op"] = op
        yield seen


def test_before_ready_the_direct_path_after_it_aiohttp_and_the_replica_binds_as_before(
    k: Kube, operator: dict[str, Any]
) -> None:
    op: Operator = operator["op"]
    wait_for(lambda: op.aio_ready.is_set(), 60, what="the cache synced and aiohttp's server up")
    synced = operator["synced"]
    assert synced["reads"][0] >= 1 and synced["reads"][1] == 0  # the ConfigMap, discovery, the rights
    assert synced["lease"][0] >= 1 and synced["lease"][1] == 0
    assert synced["lists"][0] >= 1 and synced["lists"][1] == 0  # the few kinds' listings
    assert not synced["aio_ready"] and synced["metrics"] == 503  # the health server's "starting"

    port = op.http_port or 0
    assert _status(port, "/healthz") == 200 and _status(port, "/metrics") == 200  # aiohttp's, same port
    # The Lease is renewed (every renew_every) over the direct path still, on the connection its renewals
    # hand on (never through aiohttp's client), and a pod that comes after is watched, bound and written
    # as before.
    ready = time.monotonic()
    wait_for(lambda: op.lease._last_renew > ready, 30, what="a Lease renewal after aiohttp's")
    assert op.lease.rest._aio.connects == 0
    k.nodes(node("late-n1"))
    ns = k.namespace("late")
    k.pods(ns, pod("p1"))
    wait_for(lambda: k.bound(ns) == {f"{ns}/p1": "late-n1"}, 60, what="the pod bound")
    assert op.reads.get("/version", timeout=30)["major"]  # a read now: aiohttp's client
    assert op.reads._aio.connects >= 1
