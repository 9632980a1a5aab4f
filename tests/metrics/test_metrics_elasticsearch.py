"""ElasticsearchSource against a real Elasticsearch 7.10.2 node holding metricbeat-shaped documents."""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from elasticsearch import Elasticsearch, helpers
from metricslib import EsServer, free_port

from volsched.metrics.elasticsearch import ElasticsearchSource
from volsched.metrics.source import SourceError

pytestmark = pytest.mark.elasticsearch

MAPPING = {
    "properties": {
        "@timestamp": {"type": "date"},
        "host": {"properties": {"hostname": {"type": "keyword"}, "name": {"type": "keyword"}}},
        "agent": {"properties": {"hostname": {"type": "keyword"}}},
        "system": {
            "properties": {
                "cpu": {
                    "properties": {
                        "total": {"properties": {"norm": {"properties": {"pct": {"type": "float"}}}}}
                    }
                },
                "memory": {
                    "properties": {
                        "actual": {"properties": {"used": {"properties": {"pct": {"type": "float"}}}}}
                    }
                },
            }
        },
    }
}

B_CPU = [0.2, 0.8] * 6
B_MEM = [0.3, 0.7] * 6


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def doc(host: str, ts: float, cpu: float | None, mem: float | None, **extra: Any) -> dict[str, Any]:
    system: dict[str, Any] = {}
    if cpu is not None:
        system["cpu"] = {"total": {"norm": {"pct": cpu}}, "cores": 4}
    if mem is not None:
        system["memory"] = {"actual": {"used": {"pct": mem}}}
    return {
        "@timestamp": iso(ts),
        "host": {"hostname": host, "name": host},
        "metricset": {"name": "cpu"},
        "system": system,
        **extra,
    }


@pytest.fixture(scope="module")
def metricbeat(elasticsearch_server: EsServer) -> dict[str, float]:
    es = Elasticsearch([elasticsearch_server.url])
    now = time.time()
    newest = now - 10
    docs: list[tuple[str, dict[str, Any]]] = []
    for i in range(12):
        ts = newest - (11 - i) * 20  # every 20 s over the last ~4 minutes
        docs.append(("metricbeat-7.10.2-a", doc("node-a", ts, 0.40, 0.25)))
        docs.append(("metricbeat-7.10.2-b", doc("worker-b.example", ts, B_CPU[i], B_MEM[i])))
        docs.append(("metricbeat-7.10.2-a", doc("node-c", ts, 0.5, None)))  # memory missing
        docs.append(("metricbeat-7.10.2-a", doc("node-d", ts, 5.0, 0.5)))  # 500 % CPU: garbage
        docs.append(("metricbeat-7.10.2-a", doc("node-old", ts - 7200, 0.5, 0.5)))  # outside period
        docs.append(("other-index", doc("node-z", ts, 0.5, 0.5)))  # not matched by metricbeat-*
        docs.append(("custom-idx", doc("ignored", ts, 0.1, 0.2, agent={"hostname": "node-f"})))
    for index in {i for i, _ in docs}:
        es.indices.create(index=index, mappings=MAPPING)
    helpers.bulk(es, ({"_index": index, "_source": source} for index, source in docs), refresh="wait_for")
    es.close()
    return {"newest": newest}


def test_aggregates_per_host(elasticsearch_server: EsServer, metricbeat: dict[str, float]) -> None:
    source = ElasticsearchSource(elasticsearch_server.url, period=600)
    nodes = {
        "node-a": set(),
        "node-b": {"10.0.0.2", "worker-b.example"},
        "node-c": set(),
        "node-d": set(),
        "node-old": set(),
        "node-z": set(),
    }
    usage = source.fetch(nodes)
    source.close()
    assert set(usage) == {"node-a", "node-b"}
    a, b = usage["node-a"], usage["node-b"]
    assert a.cpu == pytest.approx(40.0, abs=1e-3)
    assert a.memory == pytest.approx(25.0, abs=1e-3)
    assert a.cpu_fluctuation == pytest.approx(0.0, abs=1e-3)
    assert b.cpu == pytest.approx(50.0, abs=1e-3)
    assert b.memory == pytest.approx(50.0, abs=1e-3)
    assert b.cpu_fluctuation == pytest.approx(statistics.pstdev(B_CPU) * 100, abs=1e-3)  # 30 pp
    assert b.mem_fluctuation == pytest.approx(statistics.pstdev(B_MEM) * 100, abs=1e-3)  # 20 pp
    assert b.cpu_fluctuation > a.cpu_fluctuation + 10
    assert a.measured_at == pytest.approx(metricbeat["newest"], abs=0.01)


def test_all_hosts_and_short_period(elasticsearch_server: EsServer, metricbeat: dict[str, float]) -> None:
    usage = ElasticsearchSource(elasticsearch_server.url, period=600).fetch(None)
    assert set(usage) == {"node-a", "worker-b.example"}
    # only the newest docs fall in a 60 s window
    short = ElasticsearchSource(elasticsearch_server.url, period=60).fetch(None)
    assert set(short) == {"node-a", "worker-b.example"}
    assert short["node-a"].cpu == pytest.approx(40.0, abs=1e-3)


def test_custom_index_and_hostname_field(
    elasticsearch_server: EsServer, metricbeat: dict[str, float]
) -> None:
    source = ElasticsearchSource(
        elasticsearch_server.url, index="custom-idx", hostname_field="agent.hostname", period=600
    )
    usage = source.fetch(["node-f"])
    assert usage["node-f"].cpu == pytest.approx(10.0, abs=1e-3)
    assert usage["node-f"].memory == pytest.approx(20.0, abs=1e-3)


def test_no_matching_index(elasticsearch_server: EsServer) -> None:
    assert ElasticsearchSource(elasticsearch_server.url, index="nothing-here-*").fetch(None) == {}


def test_down() -> None:
    source = ElasticsearchSource(f"http://127.0.0.1:{free_port()}", timeout=1)
    with pytest.raises(SourceError, match="ConnectionError"):
        source.fetch(None)
