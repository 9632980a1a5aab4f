"""The custom metrics API through the REAL kube-apiserver: an aggregated APIService in front of our own
minimal ``custom.metrics.k8s.io`` server (tests/e2e/custom_metrics_server.py), read by
``CustomMetricsSource`` and by the operator (``metrics.type: prometheus_adaptor``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.controlplanes import running
from tests.e2e.custom_metrics_server import (
    CustomMetricsServer,
    custom_metrics_server,
    register,
    wait_available,
)
from tests.e2e.netns import netns_host
from tests.e2e.operator_fixtures import OPERATOR_NS, Kube, OperatorProcess, apply_crds, node, pod, wait_for
from volsched.metrics.custom_metrics import CustomMetricsSource
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

CPU, MEM = "node_cpu_usage_avg", "node_memory_usage_avg"


@dataclass
class Aggregated:
    cp: LocalControlPlane
    server: CustomMetricsServer


@pytest.fixture(scope="module")
def aggregated() -> Iterator[Aggregated]:
    """An aggregating control plane (CRDs applied) with the APIService Available, and our server."""
    with (
        running(LocalControlPlane(aggregation=True)) as cp,
        netns_host() as host,
        custom_metrics_server(host) as server,
        cp.api_client() as api,
    ):
        apply_crds(api)
        client.CoreV1Api(api).create_namespace({"metadata": {"name": OPERATOR_NS}})
        register(api, server, "custom-metrics")
        wait_available(api, timeout=60)
        yield Aggregated(cp, server)


def test_the_source_reads_per_node_usage_through_the_apiserver(aggregated: Aggregated) -> None:
    server = aggregated.server
    server.set(CPU, {"n1": "250m", "n2": "0.9", "n4": "lots", "stranger": "0.5"})
    server.set(MEM, {"n1": "0.5", "n2": "400m", "n4": "0.3", "stranger": "0.5"})
    before = len(server.requests_through_aggregator())
    source = CustomMetricsSource(aggregated.cp.api_client(), timeout=10)
    try:
        usage = source.fetch(["n1", "n2", "n3", "n4"])
    finally:
        source.close()
    # n3 has no data, n4's cpu is malformed (dropped, the others unaffected), "stranger" is no node of ours
    assert {n: (round(u.cpu, 6), round(u.memory, 6)) for n, u in usage.items()} == {
        "n1": (25.0, 50.0),
        "n2": (90.0, 40.0),
    }
    seen = server.requests_through_aggregator()[before:]
    assert {s.path.rsplit("/", 1)[-1] for s in seen} >= {CPU, MEM}
    assert all(s.user == "volsched-admin" for s in seen if s.path.endswith((CPU, MEM)))


def _usage_config() -> str:
    return """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: usage
    arguments:
      usage.weight: 5
      thresholds: {cpu: 80, mem: 70}
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
metrics:
  type: prometheus_adaptor
  interval: 1s
"""


def test_the_operator_places_pods_by_custom_metrics_usage(aggregated: Aggregated, tmp_path: Path) -> None:
    server = aggregated.server
    server.set(CPU, {"busy": "0.95", "idle": "0.1"})
    server.set(MEM, {"busy": "0.5", "idle": "0.2"})
    with aggregated.cp.api_client() as api:
        k = Kube(api)
        k.nodes(node("busy", cpu="8"), node("idle", cpu="8"))
        k.core.create_namespaced_config_map(
            OPERATOR_NS,
            {
                "metadata": {"name": "volsched-scheduler-config"},
                "data": {"volsched-scheduler.conf": _usage_config()},
            },
        )
        op = OperatorProcess(aggregated.cp.kubeconfig_path, tmp_path / "operator.log").start()
        try:
            wait_for(
                lambda: op.metric("volsched_metrics_fresh_nodes", source="prometheus_adaptor") == 2,
                30,
                what=f"usage of both nodes collected (log: {op.log_path})",
            )
            ns = k.namespace("by-usage")
            k.pods(ns, *(pod(f"first-{i}", cpu="1") for i in range(3)))
            bound = wait_for(lambda: len(k.bound(ns)) == 3 and k.bound(ns), 30, what="three pods bound")
            assert set(bound.values()) == {"idle"}  # busy is over the cpu threshold

            # The load moves: new pods follow it (the collector keeps polling, the cache is refreshed).
            fetches = op.metric("volsched_metrics_fetches_total", source="prometheus_adaptor")
            server.set(CPU, {"busy": "0.1", "idle": "0.95"})
            wait_for(
                lambda: (
                    op.metric("volsched_metrics_fetches_total", source="prometheus_adaptor") >= fetches + 2
                ),
                30,
                what="two more fetches after the load moved",
            )
            k.pods(ns, *(pod(f"second-{i}", cpu="1") for i in range(2)))
            bound = wait_for(lambda: len(k.bound(ns)) == 5 and k.bound(ns), 30, what="two more pods bound")
            assert {bound[f"{ns}/second-{i}"] for i in range(2)} == {"busy"}
        finally:
            op.stop()
