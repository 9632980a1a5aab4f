"""``volsched run`` whose first listing a throttling kube-apiserver answers 429 again and again (its flow
control, or "storage is (re)initializing" just after it started): the start says once that it waits,
asks again after each Retry-After until the apiserver answers, then syncs and schedules as any start (real
apiserver, behind a proxy answering the pods' listings 429: fault injection). The defect (note18 Found 4):
the eleventh 429 running ended the start in the listing's traceback."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from tests.e2e.faultproxy import Answer, FaultProxy, status
from tests.e2e.operator_fixtures import Kube, OperatorProcess, node, pod, wait_for
from tests.e2e.slowproxy import kubeconfig_via
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

THROTTLED = "cache not synced: its first listing is throttled by the kube-apiserver (listing pods: 429"
#: The pods' listings answered 429: more than the ten 429s running the start took before (the early
#: listing, volsched.kube.early, takes the first one and gives up quietly).
TIMES = 13


def test_a_start_whose_listing_is_throttled_waits_it_out_then_schedules(
    cluster: LocalControlPlane, k: Kube, tmp_path: Path
) -> None:
    k.nodes(node("n1"))
    ns = k.namespace("startthrottled")
    lock = threading.Lock()
    left = [TIMES]

    def throttle_pods_lists(method: str, path: str) -> Answer | None:
        if method != "GET" or not path.startswith("/api/v1/pods?") or "watch=" in path:
            return None
        with lock:
            if not left[0]:
                return None
            left[0] -= 1
        return (
            429,
            {"Retry-After": "1"},
            status(429, "TooManyRequests", "too many requests, please try again later"),
        )

    proxy = FaultProxy(cluster.kubeconfig_path, throttle_pods_lists)
    try:
        kubeconfig = kubeconfig_via(cluster.kubeconfig_path, proxy.url, tmp_path / "config")
        op = OperatorProcess(kubeconfig, tmp_path / "operator.log")
        try:
            op.start()  # returns once it serves everything: after the cache is synced
            k.pods(ns, pod("p"))
            wait_for(lambda: k.bound(ns).get(f"{ns}/p"), 30, what="pod bound", operator=op)
            assert op.stop(signal.SIGTERM) == 0, op.log()
        finally:
            op.stop(signal.SIGKILL)
    finally:
        proxy.close()
    said = op.log()
    assert len(proxy.faulted) == TIMES, proxy.faulted  # every 429 was answered, and asked again after
    assert said.count(THROTTLED) == 1, said  # once, not once a 429
    assert said.index(THROTTLED) < said.index("cache synced")
    assert "Traceback" not in said, said
