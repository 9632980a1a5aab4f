"""Node usage aggregated from metricbeat documents in Elasticsearch (``type: elasticsearch``).

One search over ``<index>`` (default ``metricbeat-*``) restricted to ``@timestamp >= now-<period>``,
with a ``terms`` aggregation on the hostname field (default ``host.hostname``; it must be a keyword
field, as in metricbeat's template) and, per host, ``extended_stats`` of
``system.cpu.total.norm.pct`` and ``system.memory.actual.used.pct`` (fractions 0..1, turned into
percentages: ``avg`` is the usage, ``std_deviation`` the fluctuation) plus ``max(@timestamp)`` as
``measured_at``. Hosts are matched to nodes by name or by the addresses given for a node.

Uses the official ``elasticsearch`` Python client, major version 7 (pinned ``>=7.17,<8`` in
pyproject), matching the Elasticsearch 7.10 server the tests run; the 8.x client refuses 7.x servers.
This module is a synchronous source; :mod:`volsched.metrics.collector` polls it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from elasticsearch import Elasticsearch

from volsched.metrics.config import MetricsConfig
from volsched.metrics.source import NodeIndex, NodeTargets, SourceError, clean_percent
from volsched.model.usage import NodeUsage
from volsched.redaction import error_summary

__all__ = ["CPU_FIELD", "MEMORY_FIELD", "ElasticsearchSource", "build_query"]

log = logging.getLogger(__name__)

CPU_FIELD = "system.cpu.total.norm.pct"
MEMORY_FIELD = "system.memory.actual.used.pct"
MAX_HOSTS = 10000


def build_query(period: float, hostname_field: str) -> dict[str, Any]:
    """The search body (``size``, ``query``, ``aggs``) for one fetch."""
    return {
        "size": 0,
        "query": {"range": {"@timestamp": {"gte": f"now-{max(1, math.ceil(period))}s"}}},
        "aggs": {
            "hosts": {
                "terms": {"field": hostname_field, "size": MAX_HOSTS},
                "aggs": {
                    "cpu": {"extended_stats": {"field": CPU_FIELD}},
                    "mem": {"extended_stats": {"field": MEMORY_FIELD}},
                    "last": {"max": {"field": "@timestamp"}},
                },
            }
        },
    }


class ElasticsearchSource:
    """Fetches node CPU/memory usage from metricbeat data in Elasticsearch."""

    name = "elasticsearch"

    def __init__(
        self,
        address: str,
        *,
        index: str = "metricbeat-*",
        hostname_field: str = "host.hostname",
        period: float = 300.0,
        timeout: float = 10.0,
        verify_tls: bool = True,
        auth: tuple[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.address = address.rstrip("/")
        self.index = index
        self.hostname_field = hostname_field
        self.period = period
        self.timeout = timeout
        self._clock = clock
        kwargs: dict[str, Any] = {
            "timeout": timeout,
            "max_retries": 0,
            "retry_on_timeout": False,
        }
        if self.address.startswith("https://"):
            kwargs["verify_certs"] = verify_tls
            kwargs["ssl_show_warn"] = verify_tls
        if auth is not None:
            kwargs["http_auth"] = auth
        self._client = Elasticsearch([self.address], **kwargs)
        # The client logs every failed request itself, a warning with the whole traceback: once per fetch
        # while the server is down. The collector says it, once per change (see volsched.metrics.collector).
        logging.getLogger("elasticsearch").setLevel(logging.ERROR)

    @classmethod
    def from_config(cls, config: MetricsConfig) -> ElasticsearchSource:
        if not config.address:
            raise ValueError("metrics.address is required for the elasticsearch source")
        return cls(
            config.address,
            index=config.es_index,
            hostname_field=config.es_hostname_field,
            period=config.period,
            timeout=config.timeout,
            verify_tls=config.verify_tls,
            auth=config.basic_auth,
        )

    def close(self) -> None:
        self._client.close()

    def fetch(self, nodes: NodeTargets = None) -> dict[str, NodeUsage]:
        query = build_query(self.period, self.hostname_field)
        try:
            response = self._client.search(
                index=self.index,
                size=query["size"],
                query=query["query"],
                aggs=query["aggs"],
                ignore_unavailable=True,
                allow_no_indices=True,
                request_timeout=self.timeout,
            )
        except Exception as exc:
            raise SourceError(
                f"elasticsearch search failed: {type(exc).__name__}: {error_summary(exc)}"
            ) from exc
        body = getattr(response, "body", response)
        if not isinstance(body, Mapping):
            raise SourceError("elasticsearch: search response is not an object")
        aggs = body.get("aggregations")
        if aggs is None:
            return {}  # no index matched
        buckets = aggs.get("hosts", {}).get("buckets") if isinstance(aggs, Mapping) else None
        if not isinstance(buckets, list):
            raise SourceError("elasticsearch: response has no hosts buckets")
        node_index = NodeIndex(nodes)
        now = float(self._clock())
        usage: dict[str, NodeUsage] = {}
        for bucket in buckets:
            if not isinstance(bucket, Mapping):
                continue
            host = bucket.get("key")
            node = node_index.resolve(str(host)) if host is not None else None
            if node is None:
                continue
            parsed = _bucket_usage(bucket, now)
            if parsed is None:
                log.warning("elasticsearch: dropping host %s with unusable cpu/memory data", host)
                continue
            previous = usage.get(node)
            if previous is None or previous.measured_at < parsed.measured_at:
                usage[node] = parsed
        return usage


def _stats(bucket: Mapping[str, Any], name: str) -> tuple[float, float] | None:
    stats = bucket.get(name)
    if not isinstance(stats, Mapping) or not stats.get("count"):
        return None
    avg = stats.get("avg")
    mean = clean_percent(avg * 100) if isinstance(avg, int | float) else None
    std_raw = stats.get("std_deviation")
    std = float(std_raw) * 100 if isinstance(std_raw, int | float) else 0.0
    if mean is None or not math.isfinite(std) or std < 0:
        return None
    return mean, std


def _bucket_usage(bucket: Mapping[str, Any], now: float) -> NodeUsage | None:
    cpu = _stats(bucket, "cpu")
    mem = _stats(bucket, "mem")
    if cpu is None or mem is None:
        return None
    last = bucket.get("last")
    last_ms = last.get("value") if isinstance(last, Mapping) else None
    measured_at = float(last_ms) / 1000.0 if isinstance(last_ms, int | float) else now
    return NodeUsage(
        cpu=cpu[0], memory=mem[0], measured_at=measured_at, cpu_fluctuation=cpu[1], mem_fluctuation=mem[1]
    )
