"""Node usage metrics: config parsing, sources (Prometheus, custom metrics API, Elasticsearch) and
the background collector that keeps a fresh per-node :class:`~volsched.model.usage.NodeUsage` store.

This package measures; it does not score or filter nodes (that is the usage plugin's job) and it is
never called on the scheduling path except through :meth:`UsageCollector.snapshot`. The source
modules import their client libraries (``prometheus-api-client``, ``elasticsearch``; the ``metrics``
extra) only when used.
"""

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
