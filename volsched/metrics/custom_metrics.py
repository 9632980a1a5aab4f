"""Node usage from the Kubernetes custom metrics API (``type: prometheus_adaptor``).

Reads ``GET /apis/custom.metrics.k8s.io/<version>/nodes/*/node_cpu_usage_avg`` and
``.../node_memory_usage_avg`` through a ``kubernetes.client.ApiClient`` (so in-cluster auth, kubeconfig
and TLS settings are the caller's), accepting both the ``v1beta1`` (``metricName``) and ``v1beta2``
(``metric.name``) ``MetricValueList`` shapes.

Units: values are Kubernetes quantities (``"250m"``, ``"0.25"``) parsed with
``kubernetes.utils.parse_quantity``. By default they are read as **ratios 0..1** and multiplied by 100,
because the prometheus-adapter rules in the usage-based scheduling design
(``avg_over_time((1 - avg(irate(idle)))[10m:30s])`` and ``1 - MemAvailable/MemTotal``) yield ratios.
Pass ``unit="percent"`` if your adapter rules already produce 0..100.

The API serves one already-averaged value per node, so ``cpu_fluctuation``/``mem_fluctuation`` are
0.0 for this source and ``measured_at`` is the item's ``timestamp``. This module does no polling or
caching; :mod:`volsched.metrics.collector` does.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal, cast

from kubernetes.utils import parse_quantity as _k8s_parse_quantity

from volsched.metrics.source import NodeIndex, NodeTargets, SourceError, clean_percent
from volsched.model.usage import NodeUsage
from volsched.redaction import error_summary

__all__ = ["CPU_METRIC", "MEMORY_METRIC", "CustomMetricsSource", "parse_metric_value_list"]

log = logging.getLogger(__name__)

CPU_METRIC = "node_cpu_usage_avg"
MEMORY_METRIC = "node_memory_usage_avg"
GROUP = "custom.metrics.k8s.io"

_parse_quantity = cast(Callable[[object], Any], _k8s_parse_quantity)


class CustomMetricsSource:
    """Fetches per-node usage from ``custom.metrics.k8s.io`` (served by prometheus-adapter)."""

    name = "prometheus_adaptor"

    def __init__(
        self,
        api_client: Any,
        *,
        api_version: str = "v1beta1",
        unit: Literal["ratio", "percent"] = "ratio",
        timeout: float = 10.0,
        cpu_metric: str = CPU_METRIC,
        memory_metric: str = MEMORY_METRIC,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if unit not in ("ratio", "percent"):
            raise ValueError(f"unit must be 'ratio' or 'percent', got {unit!r}")
        self.api_client = api_client
        self.api_version = api_version
        self.unit = unit
        self.timeout = timeout
        self.cpu_metric = cpu_metric
        self.memory_metric = memory_metric
        self._clock = clock

    def close(self) -> None:
        close = getattr(self.api_client, "close", None)
        if callable(close):
            close()

    def path(self, metric: str) -> str:
        return f"/apis/{GROUP}/{self.api_version}/nodes/*/{metric}"

    def _get(self, metric: str) -> Any:
        try:
            raw = _raw_get(self.api_client, self.path(metric), self.timeout)
        except SourceError:
            raise
        except Exception as exc:
            raise SourceError(
                f"custom metrics GET {metric} failed: {type(exc).__name__}: {error_summary(exc)}"
            ) from exc
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise SourceError(f"custom metrics GET {metric}: body is not JSON") from exc

    def fetch(self, nodes: NodeTargets = None) -> dict[str, NodeUsage]:
        index = NodeIndex(nodes)
        now = float(self._clock())
        scale = 100.0 if self.unit == "ratio" else 1.0
        cpu = parse_metric_value_list(self._get(self.cpu_metric), self.cpu_metric, index, scale, now)
        mem = parse_metric_value_list(self._get(self.memory_metric), self.memory_metric, index, scale, now)
        usage = {
            node: NodeUsage(
                cpu=cpu[node][0], memory=mem[node][0], measured_at=min(cpu[node][1], mem[node][1])
            )
            for node in cpu.keys() & mem.keys()
        }
        incomplete = cpu.keys() ^ mem.keys()
        if incomplete:
            log.warning("custom metrics: nodes with only one of cpu/memory dropped: %s", sorted(incomplete))
        return usage


def parse_metric_value_list(
    body: Any, metric: str, index: NodeIndex, scale: float, now: float
) -> dict[str, tuple[float, float]]:
    """node -> (percent, timestamp) from a ``MetricValueList``; bad items are skipped one by one."""
    if not isinstance(body, Mapping) or body.get("kind") != "MetricValueList":
        raise SourceError(f"custom metrics {metric}: expected a MetricValueList")
    items = body.get("items")
    if items is None:
        return {}
    if not isinstance(items, list):
        raise SourceError(f"custom metrics {metric}: items is not a list")
    out: dict[str, tuple[float, float]] = {}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        described = item.get("describedObject")
        name = described.get("name") if isinstance(described, Mapping) else None
        item_metric = item.get("metricName")
        if item_metric is None and isinstance(item.get("metric"), Mapping):
            item_metric = item["metric"].get("name")
        if item_metric not in (None, metric) or not isinstance(name, str):
            continue
        node = index.resolve(name)
        if node is None:
            continue
        value = _quantity(item.get("value"))
        percent = clean_percent(value * scale) if value is not None else None
        if percent is None:
            log.warning("custom metrics %s: dropping unusable value for node %s", metric, node)
            continue
        out[node] = (percent, _timestamp(item.get("timestamp"), now))
    return out


def _quantity(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(_parse_quantity(value))
    except (ValueError, TypeError, ArithmeticError):
        return None


def _timestamp(value: object, default: float) -> float:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return default


def _raw_get(api_client: Any, path: str, timeout: float) -> bytes:
    """GET ``path`` with the client's auth and TLS settings; raise on non-2xx. Works with both the
    current (``param_serialize`` + ``call_api(method, url)``) and the legacy kubernetes client API."""
    headers = {"Accept": "application/json"}
    if hasattr(api_client, "param_serialize"):
        method, url, header_params, body, post_params = api_client.param_serialize(
            "GET", path, header_params=headers, auth_settings=["BearerToken"]
        )
        response = api_client.call_api(
            method,
            url,
            header_params=header_params,
            body=body,
            post_params=post_params,
            _request_timeout=timeout,
        )
        data = response.read()
        status = int(response.status)
    else:  # kubernetes client generated by python-legacy (e.g. 29.x-31.x)
        response = api_client.call_api(
            path,
            "GET",
            header_params=headers,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=timeout,
        )
        data = response.data
        status = int(response.status)
    if not 200 <= status <= 299:
        raise SourceError(f"GET {path}: HTTP {status}")
    return bytes(data)
