"""``volsched run`` started before the kube-apiserver answers (not up yet, or cut off at the time): the start
says why it is not synced and asks again until the apiserver answers, then syncs and schedules as any start
(real apiserver, reached through a loopback proxy that is not listening yet: fault injection). The defect:
the first listing's connection refused ended the start in a traceback at once."""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.e2e.operator_fixtures import Kube, OperatorProcess, free_port, node, pod, wait_for
from tests.e2e.slowproxy import SlowProxy, kubeconfig_via
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

WAITING = "cache not synced: its first listing waits for the kube-apiserver (listing "


def test_a_start_before_the_apiserver_answers_waits_for_it_then_schedules(
    cluster: LocalControlPlane, k: Kube, tmp_path: Path
) -> None:
    k.nodes(node("n1"))
    ns = k.namespace("startunreachable")
    port = free_port()  # nothing listens there until the proxy does
    kubeconfig = kubeconfig_via(cluster.kubeconfig_path, f"https://127.0.0.1:{port}", tmp_path / "config")
    op = OperatorProcess(kubeconfig, tmp_path / "operator.log")
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(op.start)  # returns once it serves everything: after the cache is synced
        try:

            def waiting() -> bool:
                if op.proc is None:
                    return False
                op.check_running()  # (not ended by the refused listing)
                return WAITING in op.log()

            wait_for(waiting, 60, what="the listing waiting")
            assert "cache synced" not in op.log()
            proxy = SlowProxy(cluster.host, 0.0, port=port)  # the apiserver answers there from now on
            try:
                started.result()
                k.pods(ns, pod("p"))
                wait_for(lambda: k.bound(ns).get(f"{ns}/p"), 30, what="pod bound", operator=op)
                assert op.stop(signal.SIGTERM) == 0, op.log()
            finally:
                proxy.close()
        finally:
            op.stop(signal.SIGKILL)
    said = op.log()
    assert said.count(WAITING) == 1, said  # once for every kind listed
    assert "Traceback" not in said, said
