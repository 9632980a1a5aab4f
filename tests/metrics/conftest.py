"""Session fixtures for the metrics tests: a real Prometheus (Debian package, backfilled with known
node_exporter series) and a real Elasticsearch 7.10.2 node (hack/metrics/es-runner, from Maven
Central). Each is started only when a test asks for it, and a server that cannot be started FAILS
the tests that need it (never a silent skip)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import metricslib as lib
from metricslib import EsServer, PromServer


@pytest.fixture(scope="session")
def prometheus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromServer]:
    root = tmp_path_factory.mktemp("prometheus")
    try:
        subprocess.run(["bash", str(lib.HACK / "install-prometheus.sh")], check=True, timeout=900)
        t0 = float(int(time.time()) - 5)
        om = root / "node_exporter.om.txt"
        lib.write_openmetrics(om, t0)
        blocks = root / "blocks"
        lib.backfill(om, blocks)
        data = root / "data"
        lib.copy_blocks(blocks, data)
        proc = lib.start_prometheus(data, root / "prometheus.log")
    except (subprocess.SubprocessError, OSError, RuntimeError) as exc:
        pytest.fail(f"could not start a real Prometheus: {exc}", pytrace=False)
    print(f"\n[metrics] prometheus ready in {proc.started_in:.2f}s at {proc.url}", file=sys.stderr)
    try:
        yield PromServer(proc.url, t0, blocks, proc)
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def elasticsearch_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EsServer]:
    root = tmp_path_factory.mktemp("elasticsearch")
    try:
        proc = lib.start_elasticsearch(root / "es_home", root / "elasticsearch.log")
    except (subprocess.SubprocessError, OSError, RuntimeError) as exc:
        pytest.fail(f"could not start a real Elasticsearch: {exc}", pytrace=False)
    print(f"\n[metrics] elasticsearch ready in {proc.started_in:.2f}s at {proc.url}", file=sys.stderr)
    try:
        yield EsServer(proc.url, proc)
    finally:
        proc.stop()
