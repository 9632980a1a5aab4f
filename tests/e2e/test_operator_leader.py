"""At most one writer: the Lease fences every write, and hands over at once on a clean shutdown (real apiserver).

Times are never asserted here (bench/bench_recovery.py measures them); what is asserted are orderings: a
holder fences itself off before its Lease can be taken, a follower takes a *released* Lease after a
SIGTERM and an *expired* one after a kill -9, and two operators never put a node over its allocatable.
A write whose answer a slow network lost (fault injection: a proxy that delays the request) may still
land after the pod is read back: its outcome says so (UNKNOWN), never a failure that frees the pod's room.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import (
    OPERATOR_NS,
    Kube,
    OperatorProcess,
    node,
    node_usage,
    pod,
    queue,
    wait_for,
)
from tests.e2e.slowproxy import SlowProxy, kubeconfig_via
from tests.fences import ClosingFence
from volsched.cycle import BOUND, FENCED, UNKNOWN
from volsched.framework.decisions import Bind, Evict, EvictionReason
from volsched.kube.client import load_configuration, new_api_client
from volsched.kube.lease import LeaderLease, LeaseSettings
from volsched.kube.writer import KubeWriter, WriterSettings
from volsched.model.vocabulary import QUEUE_ANNOTATION
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster


def _lease(api: client.ApiClient, identity: str, duration: float = 6.0) -> LeaderLease:
    """A Lease of ``duration`` seconds: long enough that a loaded machine's round trips (over a second
    seen under load) neither end it between two calls nor time its reads out (duration / 2)."""
    settings = LeaseSettings(namespace=OPERATOR_NS, name="fence-test", duration=duration, retry_every=0.0)
    settings.normalise()
    return LeaderLease(api, settings, identity)


def test_a_holder_fences_itself_before_its_lease_can_be_taken(k: Kube) -> None:
    a, b, c = (_lease(k.api, name) for name in ("a", "b", "c"))
    assert a.ensure() and a.acquired_how == "created"
    assert 0 < a.time_left() <= a.settings.duration - a.settings.margin
    assert not b.ensure() and not b.renew_if_due()

    a.release()  # clean shutdown: stops writing, gives the Lease up
    assert a.time_left() <= 0 and not a.ensure()
    assert b.ensure() and b.acquired_how == "released"

    # b stops renewing (a crash, a partition): c may take over only after b's own fence has closed.
    fenced_first = []

    def c_acquires() -> bool:
        fenced_first.append(b.time_left() <= 0)
        return c.ensure()

    wait_for(c_acquires, 20, interval=0.05, what="c takes the expired lease")
    assert c.acquired_how == "expired"
    assert fenced_first[-1], "b could still write when c took the lease over"
    assert not b.renew_if_due() and b.time_left() <= 0  # b learns it lost the lease and stays fenced
    assert not b.ensure()  # held by c


def test_of_two_replicas_racing_for_a_released_lease_the_one_that_read_it_first_but_wrote_second_loses(
    k: Kube,
) -> None:
    settings = LeaseSettings(namespace=OPERATOR_NS, name="race-test", duration=30.0, retry_every=0.0)
    first, a, b = (LeaderLease(k.api, settings, name) for name in ("first", "a", "b"))
    assert first.ensure()
    first.release()
    read = a._read
    seen = read(5.0)  # a reads the released Lease ...
    assert b.ensure() and b.acquired_how == "released"  # ... b takes it meanwhile ...
    a._read = lambda timeout: seen  # type: ignore[method-assign]  # ... a writes over what it read
    assert not a.ensure() and a.time_left() <= 0  # its resourceVersion is stale: the apiserver refuses
    assert read(5.0)["spec"]["holderIdentity"] == "b" and b.is_leader


def test_a_write_the_fence_refuses_is_never_sent(k: Kube) -> None:
    k.nodes(node("n1", cpu="16"))
    ns = k.namespace("fenced")
    k.pods(ns, *(pod(f"p{i}") for i in range(6)))
    pods = {
        f"{ns}/{p.metadata.name}": k.api.sanitize_for_serialization(p)
        for p in k.core.list_namespaced_pod(ns).items
    }
    writer = KubeWriter(k.api, WriterSettings(workers=1), fence=ClosingFence(open_for=2))
    try:
        binds = [Bind(pod=key, uid=pods[key]["metadata"]["uid"], node="n1") for key in sorted(pods)]
        outcomes = writer.bind_all(binds, pods)
    finally:
        writer.close()
    assert [o.result for o in outcomes] == [BOUND, BOUND, FENCED, FENCED, FENCED, FENCED]
    assert sorted(k.bound(ns)) == sorted(pods)[:2]


class _LingeringProxy(SlowProxy):
    """A SlowProxy that keeps a connection open a moment after the client left, so the apiserver reads a
    request that arrives late whole before its connection ends (as a network that delayed it would)."""

    @staticmethod
    def _shut(*socks: socket.socket) -> None:
        time.sleep(2.0)
        SlowProxy._shut(*socks)


@contextmanager
def _writer_through(
    proxy: SlowProxy, fence: Any, *, cluster: LocalControlPlane, tmp_path: Path
) -> Iterator[KubeWriter]:
    """A one-worker writer (1 s request timeout) whose requests go through ``proxy``, fenced by
    ``fence``; closed with its client and the proxy."""
    api = new_api_client(
        load_configuration(
            str(kubeconfig_via(cluster.kubeconfig_path, proxy.url, tmp_path / "slow.kubeconfig"))
        )
    )
    writer = KubeWriter(api, WriterSettings(workers=1, request_timeout=1.0), fence=fence)
    try:
        yield writer
    finally:
        writer.close()
        api.close()  # type: ignore[no-untyped-call]
        proxy.close()


class _LostThenFenced:
    """A fence open for the first write; as the second is checked, the Lease is lost and the network is
    fast again (the pod is read back at once, before the delayed first request lands)."""

    def __init__(self, proxy: SlowProxy) -> None:
        self.proxy = proxy
        self.checks = 0

    def renew_if_due(self) -> bool:
        return self.checks < 1

    def time_left(self) -> float:
        self.checks += 1
        if self.checks > 1:
            self.proxy.delay = 0.0
            return 0.0
        return 1.0

    def call_timeout(self, wanted: float) -> float:
        return wanted


def test_a_bind_whose_answer_was_lost_and_whose_resend_was_fenced_keeps_its_room_as_it_may_land_late(
    cluster: LocalControlPlane, k: Kube, tmp_path: Path
) -> None:
    """The bind is on its way (slow network: no answer within the writer's timeout) when the Lease is
    lost: the resend is fenced, and the pod read back is still unbound. The first request lands after
    all: the outcome must not say "not sent" (the cycle would free the pod's room) but UNKNOWN (the pod
    stays assumed until the watch shows it)."""
    ns = k.namespace("lost-then-fenced")
    k.pods(ns, pod("p"))
    uid = k.core.read_namespaced_pod("p", ns).metadata.uid
    proxy = _LingeringProxy(cluster.host, delay=0.0)
    with _writer_through(proxy, _LostThenFenced(proxy), cluster=cluster, tmp_path=tmp_path) as writer:
        raw = writer.read_pod(ns, "p")  # the connection is open (TLS done) before the network slows down
        proxy.delay = 3.0
        out = writer.bind(Bind(pod=f"{ns}/p", uid=uid, node="n1"), raw)
        assert out.result == UNKNOWN, out.detail
        assert "not bound" in out.detail  # read back before the first request landed
        wait_for(lambda: k.bound(ns) == {f"{ns}/p": "n1"}, 30, what="the delayed bind landing")


class _SlowForTheEviction:
    """A fence always open that slows the network down for the first write (the eviction: a pod the
    eviction deletes at once gets no condition before it, and its event comes with the next status
    writes) and makes it fast again half a second later, before the writer's timeout: the pod is read
    back before the delayed eviction lands."""

    def __init__(self, proxy: SlowProxy) -> None:
        self.proxy = proxy
        self.checks = 0

    def renew_if_due(self) -> bool:
        return True

    def time_left(self) -> float:
        self.checks += 1
        if self.checks == 1:
            self.proxy.delay = 3.0
            threading.Timer(0.5, setattr, (self.proxy, "delay", 0.0)).start()
        return 1.0

    def call_timeout(self, wanted: float) -> float:
        return wanted


def test_an_eviction_whose_answer_was_lost_is_unknown_while_the_pod_runs_as_it_may_land_late(
    cluster: LocalControlPlane, k: Kube, tmp_path: Path
) -> None:
    """No answer to the eviction within the writer's timeout, and the pod read back still runs: the
    eviction lands after all, so the outcome is UNKNOWN, not a failure."""
    ns = k.namespace("lost-eviction")
    k.pods(ns, pod("v"))
    uid = k.core.read_namespaced_pod("v", ns).metadata.uid
    proxy = _LingeringProxy(cluster.host, delay=0.0)
    with _writer_through(proxy, _SlowForTheEviction(proxy), cluster=cluster, tmp_path=tmp_path) as writer:
        raw = writer.read_pod(ns, "v")
        assert raw is not None
        eviction = Evict(pod=f"{ns}/v", uid=uid, node="n1", reason=EvictionReason(action="preempt"))
        out = writer.evict(eviction, raw)
        assert out.result == UNKNOWN, out.detail
        assert "not evicted yet" in out.detail  # read back before the eviction landed
        wait_for(lambda: not k.core.list_namespaced_pod(ns).items, 30, what="the delayed eviction landing")


# --- two operators ---------------------------------------------------------------------------------------


@pytest.fixture
def operators(tmp_path: Path) -> Iterator[list[OperatorProcess]]:
    started: list[OperatorProcess] = []
    yield started
    for op in started:
        op.stop(signal.SIGKILL)


def _operator(started: list[OperatorProcess], kubeconfig: Path, log: Path, *extra: str) -> OperatorProcess:
    op = OperatorProcess(kubeconfig, log, *extra)
    started.append(op)
    return op.start()


def _in_queue(obj: dict[str, Any], name: str) -> dict[str, Any]:
    obj["metadata"].setdefault("annotations", {})[QUEUE_ANNOTATION] = name
    return obj


def _leader(op: OperatorProcess) -> bool:
    return op.metric("volsched_leader") == 1


def test_two_operators_with_a_slow_leader_never_overcommit_a_node(
    cluster: LocalControlPlane, k: Kube, tmp_path: Path, operators: list[OperatorProcess]
) -> None:
    k.nodes(*(node(f"n{i}", cpu="10") for i in range(4)))
    k.queue(queue("first"))
    k.queue(queue("second"))
    ns = k.namespace("two")
    proxy = SlowProxy(cluster.host, delay=0.2)  # every request of the leader takes 0.2 s longer
    direct = SlowProxy(cluster.host, delay=0.0)  # (the other's: to know when its writes are answered)
    try:
        slow_cfg = kubeconfig_via(cluster.kubeconfig_path, proxy.url, tmp_path / "slow.kubeconfig")
        fast_cfg = kubeconfig_via(cluster.kubeconfig_path, direct.url, tmp_path / "fast.kubeconfig")
        # One bind worker: the leader's binds take 0.2 s each, far longer in total than the 3 s lease.
        slow = _operator(
            operators, slow_cfg, tmp_path / "slow.log", "--lease-duration", "3", "--bind-workers", "1"
        )
        wait_for(lambda: _leader(slow), 30, what="the slow operator leads")
        fast = _operator(operators, fast_cfg, tmp_path / "fast.log", "--lease-duration", "3")
        # 48 cpu asked of 40 (what the default overcommit factor, 1.2, lets in): 36 cpu in one queue ...
        k.pods(ns, *(_in_queue(pod(f"a-{i:02}"), "first") for i in range(36)))
        wait_for(lambda: len(k.bound(ns)) >= 3, 60, what="the slow leader binding")
        # ... and 12 in a queue below its fair share, which comes first in any later session: a second
        # writer would place these beside the slow leader's remaining binds.
        k.pods(ns, *(_in_queue(pod(f"b-{i:02}"), "second") for i in range(12)))
        wait_for(lambda: len(k.bound(ns)) >= 40, 90, what="the cluster filled")
        # Both stopped, every write either sent is under way no more once the apiserver answered it.
        for op in (slow, fast):
            op.stop(signal.SIGKILL)
        wait_for(
            lambda: proxy.settled() and direct.settled(), 60, what="every request the operators sent answered"
        )
        over = {n: (used, alloc) for n, (used, alloc) in node_usage(k).items() if used > alloc}
        assert not over, f"nodes over allocatable: {over}\n{slow.log()}\n{fast.log()}"
        assert len(k.bound(ns)) == 40
    finally:
        proxy.close()
        direct.close()


def test_sigterm_hands_the_lease_over_and_kill_9_lets_it_expire(
    cluster: LocalControlPlane, k: Kube, tmp_path: Path, operators: list[OperatorProcess]
) -> None:
    k.nodes(node("n1", cpu="8"))
    ns = k.namespace("handover")
    cfg = cluster.kubeconfig_path
    first = _operator(operators, cfg, tmp_path / "first.log")
    wait_for(lambda: _leader(first), 30, what="the first operator leads")
    second = _operator(operators, cfg, tmp_path / "second.log")
    k.pods(ns, pod("a"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/a"), 30, what="a bound")
    assert not _leader(second)

    assert first.stop(signal.SIGTERM) == 0
    assert "released by" in first.log()
    k.pods(ns, pod("b"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/b"), 30, what="b bound by the follower")
    assert "(it was released)" in second.log()  # taken over because released, not because expired

    third = _operator(operators, cfg, tmp_path / "third.log")
    second.stop(signal.SIGKILL)
    k.pods(ns, pod("c"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/c"), 30, what="c bound after the crash")
    assert "(expired, was " in third.log()
    assert "caught up after taking the lease over" in third.log()
