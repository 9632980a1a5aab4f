"""The operator with a ``metrics:`` config on a real apiserver: pods placed away from the node a REAL
Prometheus says is loaded, and a metrics source that is down never stops scheduling."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.operator_fixtures import (
    OPERATOR_NS,
    Kube,
    Start,
    free_port,
    node,
    pod,
    wait_for,
)
from tests.metrics import metricslib as lib

pytestmark = pytest.mark.cluster

CM, KEY = "volsched-scheduler-config", "volsched-scheduler.conf"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus with backfilled node_exporter series (tests/metrics/metricslib.demo_nodes)
    ending now: node-a at 40 % cpu, node-e at 90 % cpu."""
    import time

    root = tmp_path_factory.mktemp("prometheus")
    try:
        subprocess.run(["bash", str(lib.HACK / "install-prometheus.sh")], check=True, timeout=900)
        om = root / "node_exporter.om.txt"
        lib.write_openmetrics(om, float(int(time.time()) - 5))
        lib.backfill(om, root / "blocks")
        lib.copy_blocks(root / "blocks", root / "data")
        proc = lib.start_prometheus(root / "data", root / "prometheus.log")
    except (subprocess.SubprocessError, OSError, RuntimeError) as exc:
        pytest.fail(f"could not start a real Prometheus: {exc}", pytrace=False)
    try:
        yield proc.url
    finally:
        proc.stop()


def config(metrics: str) -> str:
    return f"""\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: usage
    arguments:
      thresholds: {{cpu: 80, mem: 70}}
      staleAfter: 30m
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
metrics:
{metrics}"""


def node_at(name: str, *addresses: tuple[str, str]) -> dict[str, Any]:
    obj = node(name, cpu="8")
    obj["status"]["addresses"] = [{"type": t, "address": a} for t, a in addresses]
    return obj


def set_config(k: Kube, text: str) -> None:
    k.core.create_namespaced_config_map(OPERATOR_NS, {"metadata": {"name": CM}, "data": {KEY: text}})


@pytest.mark.prometheus
def test_pods_go_away_from_the_node_prometheus_says_is_loaded(
    k: Kube, start_operator: Start, prometheus: str
) -> None:
    # Matched to the series by InternalIP (node-a) and by hostname (node-e), as the scheduler sees them.
    k.nodes(
        node_at("node-a", ("InternalIP", "10.0.0.1")),
        node_at("node-e", ("InternalIP", "10.0.0.5"), ("Hostname", "worker-e.example")),
    )
    set_config(k, config(f"  address: {prometheus}\n  interval: 1s\n  period: 5m\n  staleAfter: 30m\n"))
    op = start_operator()
    wait_for(
        lambda: op.metric("volsched_metrics_fresh_nodes", source="prometheus") == 2,
        30,
        what=f"usage of both nodes collected (log: {op.log_path})",
    )
    ns = k.namespace("by-prometheus")
    k.pods(ns, *(pod(f"p-{i}", cpu="1") for i in range(4)))
    bound = wait_for(lambda: len(k.bound(ns)) == 4 and k.bound(ns), 30, what="four pods bound")
    assert set(bound.values()) == {"node-a"}  # node-e runs at 90 % cpu, over the 80 % threshold


def test_a_metrics_source_that_is_down_never_stops_scheduling(
    k: Kube, start_operator: Start, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secret = "s3cret-never-logged"
    monkeypatch.setenv("VOLSCHED_METRICS_USERNAME", "volsched")
    monkeypatch.setenv("VOLSCHED_METRICS_PASSWORD", secret)
    k.nodes(node("n1", cpu="4"), node("n2", cpu="4"))
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    set_config(k, config(f"  address: {dead}\n  interval: 1s\n"))
    op = start_operator()
    ns = k.namespace("source-down")
    k.pods(ns, *(pod(f"p-{i}", cpu="1") for i in range(3)))
    wait_for(lambda: len(k.bound(ns)) == 3, 30, what="pods bound with the source down")
    wait_for(
        lambda: op.metric("volsched_metrics_fetch_errors_total", source="prometheus") >= 2, 20, what="errors"
    )
    assert op.metric("volsched_metrics_fresh_nodes", source="prometheus") == 0
    log = op.log()
    assert "fetch failed" in log and secret not in log
