"""PrometheusSource against a real Prometheus (backfilled node_exporter series) and, for faults,
against a small fault-injecting HTTP server of our own."""

from __future__ import annotations

import math
import time
from urllib.parse import parse_qs, urlparse

import pytest
from metricslib import PromServer, count_connects, http_server, node_addresses, prom_matrix, refused_port

from volsched.metrics.prometheus import PrometheusSource
from volsched.metrics.source import SourceError

PERIOD = 600.0


@pytest.mark.prometheus
def test_real_prometheus_averages_and_fluctuation(prometheus_server: PromServer) -> None:
    source = PrometheusSource(prometheus_server.url, period=PERIOD, clock=lambda: prometheus_server.t0)
    usage = source.fetch(node_addresses())
    source.close()

    # node-c has no memory series, node-d has impossible memory, node-x has no data at all
    assert set(usage) == {"node-a", "node-b", "node-e"}

    a, b, e = usage["node-a"], usage["node-b"], usage["node-e"]
    assert a.cpu == pytest.approx(40.0, abs=0.01)
    assert a.memory == pytest.approx(25.0, abs=0.01)
    assert e.cpu == pytest.approx(90.0, abs=0.01)
    assert e.memory == pytest.approx(50.0, abs=0.01)
    # the swinging node averages about 50 % but fluctuates a lot more than the steady ones
    assert b.cpu == pytest.approx(50.0, abs=5.0)
    assert b.memory == pytest.approx(50.0, abs=5.0)
    assert a.cpu_fluctuation < 0.5 and a.mem_fluctuation < 0.5
    assert b.cpu_fluctuation > 15.0 and b.mem_fluctuation > 15.0
    assert b.cpu_fluctuation > a.cpu_fluctuation + 10

    for node in usage.values():
        assert abs(node.measured_at - prometheus_server.t0) <= 1.0


@pytest.mark.prometheus
def test_real_prometheus_without_node_list(prometheus_server: PromServer) -> None:
    source = PrometheusSource(prometheus_server.url, period=PERIOD, clock=lambda: prometheus_server.t0)
    usage = source.fetch(None)
    # keyed by `node` label, else by instance host without port
    assert set(usage) == {"10.0.0.1", "node-b", "worker-e.example"}
    assert usage["10.0.0.1"].cpu == pytest.approx(40.0, abs=0.01)


@pytest.mark.prometheus
def test_real_prometheus_with_only_names(prometheus_server: PromServer) -> None:
    source = PrometheusSource(prometheus_server.url, period=PERIOD, clock=lambda: prometheus_server.t0)
    # node-a is only known by its IP, so a plain name list finds only node-b (node label)
    assert set(source.fetch(["node-a", "node-b"])) == {"node-b"}


@pytest.mark.prometheus
def test_real_prometheus_nothing_in_window(prometheus_server: PromServer) -> None:
    source = PrometheusSource(prometheus_server.url, period=60, clock=lambda: prometheus_server.t0 + 3600)
    assert source.fetch(node_addresses()) == {}


# -- faults, from our own loopback server ------------------------------------------------------


def _is_cpu(path: str) -> bool:
    query = parse_qs(urlparse(path).query).get("query", [""])[0]
    return "node_cpu_seconds_total" in query


def test_bad_series_are_dropped_one_by_one() -> None:
    now = time.time()
    ts = [now - 20, now - 10, now]

    def handler(path: str) -> tuple[int, bytes, float]:
        if _is_cpu(path):
            return (
                200,
                prom_matrix(
                    [
                        ({"instance": "10.0.0.1:9100"}, [(t, 30) for t in ts]),
                        ({"instance": "10.0.0.2:9100", "node": "node-b"}, [(t, "NaN") for t in ts]),
                        ({"instance": "10.0.0.3:9100"}, [(t, -20) for t in ts]),
                        ({"instance": "10.0.0.4:9100"}, [(t, "abc") for t in ts]),
                        ({"instance": "10.0.0.5:9100"}, [(ts[0], 10), (ts[1], "NaN"), (ts[2], 30)]),
                        ({"instance": "10.0.0.6:9100"}, []),
                        ({"instance": "10.0.0.7:9100"}, [[1, 2, 3]]),
                        ({"job": "no-instance"}, [(t, 50) for t in ts]),
                    ]
                ),
                0,
            )
        return (
            200,
            prom_matrix([({"instance": f"10.0.0.{i}:9100"}, [(t, 60) for t in ts]) for i in range(1, 8)]),
            0,
        )

    nodes = {f"n{i}": {f"10.0.0.{i}"} for i in range(1, 8)} | {"node-b": set()}
    with http_server(handler) as server:
        usage = PrometheusSource(server.url, period=60, clock=lambda: now).fetch(nodes)
    assert set(usage) == {"n1", "n5"}
    assert usage["n1"].cpu == 30 and usage["n1"].memory == 60
    assert usage["n5"].cpu == 20 and usage["n5"].cpu_fluctuation == 10
    assert math.isclose(usage["n5"].measured_at, now)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (200, b"<html>not json</html>"),
        (200, b'{"status": "success", "data": {}}'),
        (200, b'{"status": "success", "data": {"result": "x"}}'),
        (200, b"[]"),
        (500, b'{"status": "error"}'),
        (503, b""),
    ],
)
def test_malformed_responses_raise_source_error(status: int, body: bytes) -> None:
    with http_server(lambda path: (status, body, 0)) as server:
        source = PrometheusSource(server.url, period=60)
        with pytest.raises(SourceError):
            source.fetch(["n1"])


def test_slow_response_times_out() -> None:
    body = prom_matrix([])
    with http_server(lambda path: (200, body, 3.0)) as server:
        source = PrometheusSource(server.url, period=60, timeout=0.3)
        with pytest.raises(SourceError, match="Timeout"):  # the answer comes after 3 s: 0.3 s was applied
            source.fetch(["n1"])
        assert len(server.requests) == 1  # asked once: no retries, and no second query after the failure


def test_connection_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = count_connects(monkeypatch)
    with refused_port() as port:
        source = PrometheusSource(f"http://127.0.0.1:{port}", period=60, timeout=1)
        with pytest.raises(SourceError, match="ConnectionError"):
            source.fetch(["n1"])
    assert attempts == [("127.0.0.1", 1)]  # one attempt, within the timeout: no retries


def test_basic_auth_and_queries_sent() -> None:
    with http_server(lambda path: (200, prom_matrix([]), 0)) as server:
        PrometheusSource(server.url, period=300, auth=("u", "pw")).fetch(["n1"])
        assert len(server.requests) == 2
        first = server.requests[0]
        assert first.headers.get("authorization", "").startswith("Basic ")
        params = parse_qs(urlparse(first.path).query)
        assert params["step"] == ["10s"]
        assert int(params["end"][0]) - int(params["start"][0]) == 300
