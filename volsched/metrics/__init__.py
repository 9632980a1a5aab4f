"""Node usage metrics: config parsing, sources (Prometheus, custom metrics API, Elasticsearch) and
the background collector that keeps a fresh per-node :class:`~volsched.model.usage.NodeUsage` store.

This package measures; it does not score or filter nodes (that is the usage plugin's job) and it is
never called on the scheduling path except through :meth:`UsageCollector.snapshot`. The source
modules import their client libraries (``prometheus-api-client``, ``elasticsearch``; the ``metrics``
extra) only when used. Its names are imported from their modules at first use: the operator reads a
config's ``metrics:`` section (:mod:`volsched.metrics.config`) before it is ready, and the collector
(with ``prometheus_client``) only when a section asks for one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from volsched.metrics.collector import UsageCollector, build_source
    from volsched.metrics.config import MetricsConfig, MetricsConfigError, SourceType, parse_metrics_config
    from volsched.metrics.source import NodeTargets, SourceError, UsageSource

__all__ = [
    "MetricsConfig",
    "MetricsConfigError",
    "NodeTargets",
    "SourceError",
    "SourceType",
    "UsageCollector",
    "UsageSource",
    "build_source",
    "parse_metrics_config",
]

#: Where each name is defined.
_MODULES = {
    "UsageCollector": "collector",
    "build_source": "collector",
    "MetricsConfig": "config",
    "MetricsConfigError": "config",
    "SourceType": "config",
    "parse_metrics_config": "config",
    "NodeTargets": "source",
    "SourceError": "source",
    "UsageSource": "source",
}


def __getattr__(name: str) -> object:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"volsched.metrics.{module}"), name)
