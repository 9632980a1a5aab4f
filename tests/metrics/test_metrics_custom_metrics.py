"""CustomMetricsSource through a real kubernetes ApiClient talking HTTP to a tiny loopback server
of our own that serves the ``custom.metrics.k8s.io`` MetricValueList shapes (v1beta1 and v1beta2).
Running it against a real apiserver + prometheus-adapter is a separate, cluster-level test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pytest
from kubernetes import client as k8s
from metricslib import count_connects, http_server, refused_port

from volsched.metrics.custom_metrics import CustomMetricsSource
from volsched.metrics.source import SourceError

TS = "2026-01-02T03:04:05Z"
TS_UNIX = 1767323045.0


def item(node: str, metric: str, value: Any, version: str = "v1beta1") -> dict[str, Any]:
    out: dict[str, Any] = {
        "describedObject": {"kind": "Node", "name": node, "apiVersion": "/v1"},
        "timestamp": TS,
        "value": value,
    }
    if version == "v1beta1":
        out["metricName"] = metric
        out["windowSeconds"] = 600
    else:
        out["metric"] = {"name": metric, "selector": None}
    return out


def value_list(items: list[dict[str, Any]], version: str = "v1beta1") -> bytes:
    return json.dumps(
        {
            "kind": "MetricValueList",
            "apiVersion": f"custom.metrics.k8s.io/{version}",
            "metadata": {},
            "items": items,
        }
    ).encode()


def api_client(url: str, token: str = "t0ken") -> Any:
    cfg = k8s.Configuration()
    cfg.host = url
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    cfg.retries = 0
    return k8s.ApiClient(cfg)


CPU: dict[str, str | None] = {
    "n1": "250m",  # 0.25 -> 25 %
    "n2": "0.9",
    "n3": "abc",  # garbage -> dropped
    "n4": "-3",  # negative -> dropped
    "n5": "1500m",  # 150 % -> dropped
    "n6": "0.5",
}
MEM: dict[str, str | None] = {"n1": "0.5", "n2": "100m", "n3": "0.1", "n4": "0.1", "n5": "0.1", "n6": None}


@pytest.fixture(params=["v1beta1", "v1beta2"])
def adapter(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    version: str = request.param

    def handler(path: str) -> tuple[int, bytes, float]:
        path = unquote(path)
        prefix = f"/apis/custom.metrics.k8s.io/{version}/nodes/*/"
        if not path.startswith(prefix):
            return 404, b'{"kind":"Status","code":404}', 0
        metric = path[len(prefix) :]
        tables: dict[str, dict[str, str | None]] = {"node_cpu_usage_avg": CPU, "node_memory_usage_avg": MEM}
        table = tables.get(metric)
        if table is None:
            return 404, b'{"kind":"Status","code":404}', 0
        return 200, value_list([item(n, metric, v, version) for n, v in table.items()], version), 0

    with http_server(handler) as server:
        yield version, server


def test_reads_both_api_versions(adapter: tuple[str, Any]) -> None:
    version, server = adapter
    source = CustomMetricsSource(api_client(server.url), api_version=version)
    usage = source.fetch(["n1", "n2", "n3", "n4", "n5", "n6", "n7"])
    source.close()
    assert set(usage) == {"n1", "n2"}
    assert usage["n1"].cpu == pytest.approx(25.0)
    assert usage["n1"].memory == pytest.approx(50.0)
    assert usage["n2"].cpu == pytest.approx(90.0)
    assert usage["n2"].memory == pytest.approx(10.0)
    assert usage["n1"].measured_at == TS_UNIX
    assert usage["n1"].cpu_fluctuation == 0.0
    seen = server.requests[0]
    assert seen.headers.get("authorization") == "Bearer t0ken"
    assert unquote(seen.path) == f"/apis/custom.metrics.k8s.io/{version}/nodes/*/node_cpu_usage_avg"


def test_percent_unit_and_address_mapping() -> None:
    def handler(path: str) -> tuple[int, bytes, float]:
        metric = unquote(path).rsplit("/", 1)[-1]
        return 200, value_list([item("ip-10-0-0-1", metric, "42")]), 0

    with http_server(handler) as server:
        source = CustomMetricsSource(api_client(server.url), unit="percent", clock=lambda: 5.0)
        usage = source.fetch({"node-a": {"ip-10-0-0-1"}})
    assert usage["node-a"].cpu == 42 and usage["node-a"].memory == 42


def test_version_not_served_is_an_error(adapter: tuple[str, Any]) -> None:
    version, server = adapter
    other = "v1beta2" if version == "v1beta1" else "v1beta1"
    with pytest.raises(SourceError, match="404"):
        CustomMetricsSource(api_client(server.url), api_version=other).fetch(None)


@pytest.mark.parametrize(
    "body", [b"not json", b"{}", b'{"kind": "Status"}', b'{"kind": "MetricValueList", "items": 3}']
)
def test_malformed_bodies(body: bytes) -> None:
    with http_server(lambda path: (200, body, 0)) as server, pytest.raises(SourceError):
        CustomMetricsSource(api_client(server.url)).fetch(None)


def test_empty_list_and_no_items() -> None:
    with http_server(lambda path: (200, b'{"kind": "MetricValueList", "items": null}', 0)) as server:
        assert CustomMetricsSource(api_client(server.url)).fetch(None) == {}


def test_slow_and_down(monkeypatch: pytest.MonkeyPatch) -> None:
    with http_server(lambda path: (200, value_list([]), 2.0)) as server:
        # The answer comes after 2 s: the fetch gives up at the source's 0.3 s timeout.
        with pytest.raises(SourceError, match="ReadTimeoutError"):
            CustomMetricsSource(api_client(server.url), timeout=0.3).fetch(None)
        assert len(server.requests) == 1  # asked once: no second metric after the failure
    attempts = count_connects(monkeypatch)
    with refused_port() as port, pytest.raises(SourceError):
        CustomMetricsSource(api_client(f"http://127.0.0.1:{port}"), timeout=1).fetch(None)
    assert attempts == [("127.0.0.1", 1)]
