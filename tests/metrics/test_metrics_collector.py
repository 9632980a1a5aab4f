"""UsageCollector: polling off the scheduling path, staleness, and never raising on source faults.
Fault cases use a real Prometheus (down at start, dying mid-run) and fake in-process sources."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from metricslib import PromServer, copy_blocks, free_port, http_server, node_addresses, start_prometheus
from prometheus_client import CollectorRegistry

from volsched.metrics import UsageCollector, build_source, parse_metrics_config
from volsched.metrics.custom_metrics import CustomMetricsSource
from volsched.metrics.elasticsearch import ElasticsearchSource
from volsched.metrics.prometheus import PrometheusSource
from volsched.metrics.source import NodeTargets, SourceError, UsageSource
from volsched.model.usage import NodeUsage
from volsched.redaction import redact


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class ScriptedSource:
    """Answers (or fails) from a script; ``None`` entries raise SourceError."""

    name = "scripted"

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.calls: list[NodeTargets] = []
        self.closed = False

    def fetch(self, nodes: NodeTargets = None) -> dict[str, NodeUsage]:
        self.calls.append(nodes)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return answer()  # type: ignore[no-any-return]
        return answer  # type: ignore[no-any-return]

    def close(self) -> None:
        self.closed = True


def usage(at: float, cpu: float = 10.0) -> NodeUsage:
    return NodeUsage(cpu=cpu, memory=20.0, measured_at=at)


def sample(registry: CollectorRegistry, name: str, source: str) -> float:
    value = registry.get_sample_value(name, {"source": source})
    return 0.0 if value is None else value


def test_source_protocol() -> None:
    assert isinstance(ScriptedSource([{}]), UsageSource)
    assert isinstance(PrometheusSource("http://127.0.0.1:1"), UsageSource)


def test_merge_staleness_and_counting() -> None:
    clock = Clock(1000.0)
    registry = CollectorRegistry()
    source = ScriptedSource(
        [
            {"a": usage(1000), "b": usage(1000)},
            {"a": usage(1030, cpu=50)},  # b missing from this answer: keeps its old value until stale
            SourceError("down"),
        ]
    )
    nodes_seen: list[int] = []

    def nodes() -> list[str]:
        nodes_seen.append(1)
        return ["a", "b"]

    collector = UsageCollector(
        source,
        interval=30,
        stale_after=90,
        registry=registry,
        clock=clock,
        nodes=nodes,
    )
    assert collector.snapshot() == {}
    assert collector.refresh_once() is True
    assert source.calls == [["a", "b"]]
    clock.now = 1030
    assert collector.refresh_once() is True
    snap = collector.snapshot()
    assert snap["a"].cpu == 50 and snap["b"].measured_at == 1000

    clock.now = 1060
    assert collector.refresh_once() is False  # never raises
    assert sample(registry, "volsched_metrics_fetch_errors_total", "scripted") == 1
    assert collector.last_error == "SourceError: down"
    assert set(collector.snapshot()) == {"a", "b"}  # old data kept

    assert set(collector.snapshot(now=1095)) == {"a"}  # b is 95 s old > 90
    assert sample(registry, "volsched_metrics_stale_nodes", "scripted") == 1
    assert collector.stale_nodes(now=1095) == ["b"]
    assert collector.snapshot(now=1200) == {}
    assert sample(registry, "volsched_metrics_stale_nodes", "scripted") == 2
    assert sample(registry, "volsched_metrics_stale_dropped_total", "scripted") == 3
    assert sample(registry, "volsched_metrics_fetches_total", "scripted") == 2
    assert len(nodes_seen) == 3

    # snapshot is a copy
    snap = collector.snapshot(now=1061)
    snap.clear()
    assert collector.snapshot(now=1061)


@pytest.mark.parametrize(
    "bad",
    [
        ValueError("garbage"),
        KeyError("data"),
        TypeError("x"),
        RuntimeError("boom"),
        lambda: None,
        lambda: ["not", "a", "dict"],
        lambda: {"a": "not usage", 3: usage(1000), "ok": usage(1000)},
    ],
)
def test_any_source_failure_is_contained(bad: Any) -> None:
    registry = CollectorRegistry()
    collector = UsageCollector(ScriptedSource([bad]), interval=1, registry=registry, clock=Clock(1000))
    result = collector.refresh_once()
    if callable(bad) and isinstance(bad(), dict):
        assert result is True and set(collector.snapshot()) == {"ok"}
    else:
        assert result is False
        assert sample(registry, "volsched_metrics_fetch_errors_total", "scripted") == 1


def test_forget_very_old_entries() -> None:
    clock = Clock(1000.0)
    source = ScriptedSource([{"a": usage(1000)}, {"b": usage(2000)}])
    collector = UsageCollector(source, interval=10, stale_after=30, registry=CollectorRegistry(), clock=clock)
    collector.refresh_once()
    clock.now = 2000
    collector.refresh_once()
    assert collector.stale_nodes() == []  # a (1000 s old > 10 x 30 s) is forgotten, not just stale


def test_background_thread_and_stop() -> None:
    calls = threading.Event()
    count = [0]

    pollers: set[threading.Thread] = set()  # the threads that fetched

    def answer() -> dict[str, NodeUsage]:
        pollers.add(threading.current_thread())
        count[0] += 1
        if count[0] >= 3:
            calls.set()
        return {"a": usage(time.time())}

    source = ScriptedSource([answer])
    collector = UsageCollector(source, interval=0.05, registry=CollectorRegistry())
    with collector:
        assert collector.running
        collector.start()  # idempotent
        assert calls.wait(5)
        assert "a" in collector.snapshot()
    assert not collector.running
    assert source.closed
    assert pollers and not any(t.is_alive() for t in pollers)  # no thread is left to fetch again


def test_snapshot_does_not_wait_for_a_slow_fetch() -> None:
    release = threading.Event()
    started = threading.Event()
    finished = threading.Event()

    def slow() -> dict[str, NodeUsage]:
        started.set()
        release.wait(5)
        finished.set()
        return {"a": usage(time.time())}

    collector = UsageCollector(ScriptedSource([slow]), interval=10, registry=CollectorRegistry())
    collector.start()
    try:
        assert started.wait(5)
        assert collector.snapshot() == {}
        assert not finished.is_set()  # the snapshot came back while the fetch was still held up
    finally:
        release.set()
        collector.stop(timeout=5)


def test_arefresh() -> None:
    import asyncio

    collector = UsageCollector(
        ScriptedSource([{"a": usage(1000)}]), registry=CollectorRegistry(), clock=Clock()
    )
    assert asyncio.run(collector.arefresh()) is True
    assert "a" in collector.snapshot()


def test_default_registry_shared_safely() -> None:
    # two collectors on the global registry must not collide on metric registration
    first = UsageCollector(ScriptedSource([{}]), interval=1)
    second = UsageCollector(ScriptedSource([{}]), interval=1)
    assert first._metrics is second._metrics


def test_logs_never_contain_credentials(caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    config = parse_metrics_config(
        {
            "type": "elasticsearch",
            "address": f"http://beat:s3cret-pw@127.0.0.1:{port}",
            "timeout": "1s",
            "elasticsearch": {"username": "beat", "password": "s3cret-pw"},
        },
        env={},
    )
    assert config is not None
    collector = UsageCollector.from_config(config, registry=CollectorRegistry())
    assert isinstance(collector.source, ElasticsearchSource)
    with caplog.at_level(logging.DEBUG):
        assert collector.refresh_once() is False
        collector.close()
    assert "fetch failed" in caplog.text
    assert "s3cret-pw" not in caplog.text
    assert collector.last_error is not None and "s3cret-pw" not in collector.last_error
    assert redact("http://u:pw1@h:1/x and pw1", ["pw1"]) == "http://***@h:1/x and ***"


def test_build_source_by_type() -> None:
    prom = parse_metrics_config({"address": "http://127.0.0.1:9"}, env={})
    assert prom is not None and isinstance(build_source(prom), PrometheusSource)
    adaptor = parse_metrics_config({"type": "prometheus_adapt"}, env={})
    assert adaptor is not None
    assert isinstance(build_source(adaptor, api_client=object()), CustomMetricsSource)


def test_custom_metrics_source_without_a_client_reads_the_kubeconfig(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of a cluster the adaptor source builds its client from the kubeconfig (kube.client's loading);
    ``address`` and ``insecureSkipVerify`` then override the server and the certificate check."""
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
        "users: [{name: u, user: {token: t0k}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    # (kube.client reads $KUBECONFIG when asked, and hands the client's loader the file it names.)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    plain = parse_metrics_config({"type": "prometheus_adapt"}, env={})
    custom = parse_metrics_config(
        {"type": "prometheus_adapt", "address": "https://10.0.0.9:443", "tls": {"insecureSkipVerify": True}},
        env={},
    )
    assert plain is not None and custom is not None
    from_kubeconfig = build_source(plain)
    overridden = build_source(custom)
    assert isinstance(from_kubeconfig, CustomMetricsSource) and isinstance(overridden, CustomMetricsSource)
    assert from_kubeconfig.api_client.configuration.host == "https://127.0.0.1:6443"
    assert from_kubeconfig.api_client.configuration.verify_ssl
    assert overridden.api_client.configuration.host == "https://10.0.0.9:443"
    assert not overridden.api_client.configuration.verify_ssl


def test_slow_source_counts_as_error() -> None:
    from metricslib import prom_matrix

    registry = CollectorRegistry()
    with http_server(lambda path: (200, prom_matrix([]), 2.0)) as server:
        collector = UsageCollector(
            PrometheusSource(server.url, period=60, timeout=0.3), interval=1, registry=registry
        )
        assert collector.refresh_once() is False
        assert len(server.requests) == 1  # asked once, not again
    assert sample(registry, "volsched_metrics_fetch_errors_total", "prometheus") == 1
    # The answer comes after 2 s: the fetch gave up at the source's 0.3 s timeout.
    assert collector.last_error is not None and "Timeout" in collector.last_error


# -- with the real Prometheus ------------------------------------------------------------------


@pytest.mark.prometheus
def test_source_down_at_start_then_up(prometheus_server: PromServer) -> None:
    registry = CollectorRegistry()
    clock = Clock(prometheus_server.t0)
    down = PrometheusSource(f"http://127.0.0.1:{free_port()}", period=600, timeout=1, clock=clock)
    collector = UsageCollector(
        down, interval=30, stale_after=90, registry=registry, clock=clock, nodes=node_addresses
    )
    assert collector.refresh_once() is False
    assert collector.refresh_once() is False
    assert collector.snapshot() == {}
    assert sample(registry, "volsched_metrics_fetch_errors_total", "prometheus") == 2
    assert collector.consecutive_failures == 2

    collector.source = PrometheusSource(prometheus_server.url, period=600, clock=clock)
    assert collector.refresh_once() is True
    assert set(collector.snapshot()) == {"node-a", "node-b", "node-e"}
    assert collector.consecutive_failures == 0


@pytest.mark.prometheus
def test_source_dying_mid_run(prometheus_server: PromServer, tmp_path: Any) -> None:
    data = tmp_path / "data"
    copy_blocks(prometheus_server.blocks, data)
    proc = start_prometheus(data, tmp_path / "prometheus.log")
    try:
        registry = CollectorRegistry()
        clock = Clock(prometheus_server.t0)
        source = PrometheusSource(proc.url, period=600, timeout=2, clock=clock)
        collector = UsageCollector(
            source, interval=30, stale_after=90, registry=registry, clock=clock, nodes=node_addresses
        )
        assert collector.refresh_once() is True
        before = collector.snapshot()
        assert before["node-a"].cpu == pytest.approx(40.0, abs=0.01)
    finally:
        proc.stop()

    clock.now += 30
    assert collector.refresh_once() is False  # connection refused now
    assert sample(registry, "volsched_metrics_fetch_errors_total", "prometheus") == 1
    assert collector.snapshot() == before  # old data still served while fresh
    assert sample(registry, "volsched_metrics_stale_nodes", "prometheus") == 0

    clock.now += 61  # measured_at + 91 s > staleAfter
    assert collector.refresh_once() is False
    assert collector.snapshot() == {}
    assert sample(registry, "volsched_metrics_stale_nodes", "prometheus") == 3
    assert sample(registry, "volsched_metrics_fetch_errors_total", "prometheus") == 2


def _lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= level]


def test_a_failing_source_is_logged_once_per_change_of_state(caplog: pytest.LogCaptureFixture) -> None:
    refused = SourceError("prometheus query failed: ConnectionError: port 41234 refused")
    refused_again = SourceError("prometheus query failed: ConnectionError: port 41999 refused")
    timeout = SourceError("prometheus query failed: ReadTimeout: read timed out (1.0 s)")
    source = ScriptedSource([refused, refused_again, refused, timeout, timeout, {}, refused, {}])
    collector = UsageCollector(source, interval=1, registry=CollectorRegistry())
    with caplog.at_level(logging.DEBUG, logger="volsched.metrics"):
        results = [collector.refresh_once() for _ in range(8)]
    assert results == [False, False, False, False, False, True, False, True]
    warnings = _lines(caplog, logging.WARNING)
    assert len(warnings) == 3, warnings  # it fails; it fails otherwise; it fails again after working
    assert "fetch failed (1 in a row)" in warnings[0] and "refused" in warnings[0]
    assert "fetch failed (4 in a row)" in warnings[1] and "ReadTimeout" in warnings[1]
    assert "fetch failed (1 in a row)" in warnings[2]
    works = [line for line in _lines(caplog, logging.INFO) if "works again" in line]
    assert works == [
        "metrics source scripted: fetch works again after 5 failure(s)",
        "metrics source scripted: fetch works again after 1 failure(s)",
    ]
    assert sum("fetch failed" in r.getMessage() for r in caplog.records) == 6  # each at debug, at least


def test_a_failing_elasticsearch_source_logs_one_line_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    collector = UsageCollector(
        ElasticsearchSource(f"http://127.0.0.1:{free_port()}", timeout=1),
        interval=1,
        registry=CollectorRegistry(),
    )
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            assert collector.refresh_once() is False
        collector.close()
    lines = _lines(caplog, logging.WARNING)
    assert len(lines) == 1 and "fetch failed (1 in a row)" in lines[0], lines  # before: 6, 3 with tracebacks
    assert not any(r.exc_info for r in caplog.records) and "Traceback" not in caplog.text
