"""Node usage read straight from Prometheus (node_exporter series), via prometheus-api-client.

Two range queries over the averaging period, one request each:

* CPU %: ``100 * (1 - avg by (instance, node) (rate(node_cpu_seconds_total{mode="idle"}[1m])))``
* memory %: ``100 * (1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)``

The mean of each returned series is the usage, its population standard deviation the fluctuation,
and the timestamp of its newest point ``measured_at``. A series is matched to a node by its ``node``
label if it has one, else by its ``instance`` label without the port, compared with the node name and
the addresses given for it (InternalIP, hostname).

This module is a synchronous source, not a poller: :mod:`volsched.metrics.collector` schedules it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from prometheus_api_client import PrometheusConnect
from urllib3.util.retry import Retry

from volsched.metrics.config import MetricsConfig, format_duration
from volsched.metrics.source import NodeIndex, NodeTargets, SourceError, summarize
from volsched.model.usage import NodeUsage
from volsched.redaction import error_summary

__all__ = ["CPU_QUERY", "MEMORY_QUERY", "PrometheusSource"]

log = logging.getLogger(__name__)

CPU_QUERY = '100 * (1 - avg by (instance, node) (rate(node_cpu_seconds_total{{mode="idle"}}[{window}])))'
MEMORY_QUERY = "100 * (1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)"

#: Number of points a range query asks for over the period (fluctuation resolution).
RANGE_POINTS = 30


class PrometheusSource:
    """Fetches node CPU/memory usage from a Prometheus server."""

    name = "prometheus"

    def __init__(
        self,
        address: str,
        *,
        period: float = 300.0,
        timeout: float = 10.0,
        verify_tls: bool = True,
        auth: tuple[str, str] | None = None,
        rate_window: str = "1m",
        step: float | None = None,
        clock: Any = time.time,
    ) -> None:
        self.address = address.rstrip("/")
        self.period = period
        self.timeout = timeout
        self.rate_window = rate_window
        self.step = step if step is not None else max(1.0, period / RANGE_POINTS)
        self._clock = clock
        self._client = PrometheusConnect(
            url=self.address,
            disable_ssl=not verify_tls,
            auth=auth,
            retry=Retry(total=False),  # no retries: errors surface as themselves; the collector polls again
            timeout=timeout,  # passed to requests as is (annotated int upstream)
        )

    @classmethod
    def from_config(cls, config: MetricsConfig) -> PrometheusSource:
        if not config.address:
            raise ValueError("metrics.address is required for the prometheus source")
        return cls(
            config.address,
            period=config.period,
            timeout=config.timeout,
            verify_tls=config.verify_tls,
            auth=config.basic_auth,
        )

    def close(self) -> None:
        self._client._session.close()

    def _range(self, query: str, now: float) -> list[Mapping[str, Any]]:
        end = datetime.fromtimestamp(now, tz=UTC)
        start = datetime.fromtimestamp(now - self.period, tz=UTC)
        try:
            result = self._client.custom_query_range(
                query, start_time=start, end_time=end, step=format_duration(self.step), timeout=self.timeout
            )
        except Exception as exc:  # requests errors, JSON errors, KeyError on a malformed body
            raise SourceError(f"prometheus query failed: {type(exc).__name__}: {error_summary(exc)}") from exc
        if not isinstance(result, list):
            raise SourceError(f"prometheus returned a {type(result).__name__} result, expected a matrix")
        return [series for series in result if isinstance(series, Mapping)]

    def _series_by_node(
        self, result: Sequence[Mapping[str, Any]], index: NodeIndex, what: str
    ) -> dict[str, tuple[float, float, float]]:
        """node -> (mean, stddev, newest timestamp) for each well-formed series."""
        out: dict[str, tuple[float, float, float]] = {}
        for series in result:
            labels = series.get("metric")
            values = series.get("values")
            if not isinstance(labels, Mapping) or not isinstance(values, list):
                log.debug("prometheus %s: skipping malformed series", what)
                continue
            node = index.resolve(labels.get("node"), labels.get("instance"))
            if node is None:
                continue
            points = [p for p in values if isinstance(p, list | tuple) and len(p) == 2]
            stats = summarize(p[1] for p in points)
            newest = _newest(points)
            if stats is None or newest is None:
                log.warning("prometheus %s: dropping unusable series for node %s", what, node)
                continue
            if node in out and out[node][2] >= newest:
                continue
            out[node] = (stats[0], stats[1], newest)
        return out

    def fetch(self, nodes: NodeTargets = None) -> dict[str, NodeUsage]:
        now = float(self._clock())
        index = NodeIndex(nodes)
        cpu = self._series_by_node(self._range(CPU_QUERY.format(window=self.rate_window), now), index, "cpu")
        mem = self._series_by_node(self._range(MEMORY_QUERY, now), index, "memory")
        usage: dict[str, NodeUsage] = {}
        for node in cpu.keys() & mem.keys():
            cpu_mean, cpu_std, cpu_at = cpu[node]
            mem_mean, mem_std, mem_at = mem[node]
            usage[node] = NodeUsage(
                cpu=cpu_mean,
                memory=mem_mean,
                measured_at=min(cpu_at, mem_at),
                cpu_fluctuation=cpu_std,
                mem_fluctuation=mem_std,
            )
        incomplete = cpu.keys() ^ mem.keys()
        if incomplete:
            log.warning("prometheus: nodes with only one of cpu/memory dropped: %s", sorted(incomplete))
        return usage


def _newest(points: Sequence[Sequence[Any]]) -> float | None:
    newest: float | None = None
    for point in points:
        try:
            ts = float(point[0])
        except (TypeError, ValueError):
            continue
        if math.isfinite(ts) and (newest is None or ts > newest):
            newest = ts
    return newest
