"""The operator's side of usage-based scheduling: one :class:`~volsched.metrics.UsageCollector` for the
scheduler config's ``metrics:`` section, fed with the cache's nodes, read into the cache before a session.

* :meth:`UsageFeed.configure` is called with every loaded scheduler config. It builds and starts a
  collector when a ``metrics:`` section appears, rebuilds it when the parsed section changed (type,
  address, interval, credentials ...), and stops it when the section is removed. The collector polls on
  its own daemon thread, never on the session's path.
* :meth:`UsageFeed.refresh` is called right before each session: it copies the collector's fresh
  snapshot (a lock and a dict copy, no I/O) into the cache with ``ClusterState.set_usage``, so the usage
  and rescheduling plugins see ``session.nodes.usage``. Without a collector it leaves the cache alone.
* A source that is down never stops scheduling: the collector swallows fetch errors and its data goes
  stale (left out of snapshots), see :mod:`volsched.metrics.collector`.

Credentials come from the config or from ``VOLSCHED_METRICS_USERNAME``/``VOLSCHED_METRICS_PASSWORD``
(:func:`~volsched.metrics.parse_metrics_config`); nothing here prints them (addresses and errors go
through :func:`volsched.redaction.redact`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from volsched.cache.state import ClusterState
from volsched.metrics.config import MetricsConfig, SourceType, parse_metrics_config
from volsched.redaction import error_summary, redact

if TYPE_CHECKING:  # imported when a collector is built: prometheus_client with it
    from prometheus_client import CollectorRegistry

    from volsched.metrics.collector import UsageCollector

__all__ = ["CollectorFactory", "UsageFeed"]

log = logging.getLogger("volsched.usagefeed")

#: Builds a (not yet started) collector for a parsed ``metrics:`` section.
CollectorFactory = Callable[[MetricsConfig], "UsageCollector"]


def _describe(config: MetricsConfig) -> str:
    where = f" at {redact(config.address, config.secrets)}" if config.address else ""
    return f"{config.type.value}{where} every {config.interval:g}s"


class UsageFeed:
    """Owns at most one running collector, matching the current scheduler config. ``registry``: where its
    series go (or what makes it, called when a collector is built)."""

    def __init__(
        self,
        state: ClusterState,
        *,
        registry: CollectorRegistry | Callable[[], CollectorRegistry] | None = None,
        api_client_factory: Callable[[], Any] | None = None,
        factory: CollectorFactory | None = None,
    ) -> None:
        self.state = state
        self._registry = registry
        self._api_client_factory = api_client_factory
        self._factory = factory or self._build
        self._lock = threading.Lock()
        self.config: MetricsConfig | None = None
        self.collector: UsageCollector | None = None
        #: How many collectors were built (a rebuild on reload counts).
        self.builds = 0

    def _build(self, config: MetricsConfig) -> UsageCollector:
        from volsched.metrics.collector import UsageCollector

        registry = self._registry() if callable(self._registry) else self._registry
        api_client = None
        if config.type is SourceType.PROMETHEUS_ADAPTOR and self._api_client_factory is not None:
            # Its own ApiClient from the operator's configuration: closing the source closes it.
            api_client = self._api_client_factory()
        return UsageCollector.from_config(
            config, nodes=self.state.node_targets, registry=registry, api_client=api_client
        )

    def configure(self, raw: Mapping[str, Any] | None) -> bool:
        """Match the collector to a config's ``metrics:`` section. Returns whether anything changed.

        Raises ``MetricsConfigError`` (a ``ValueError``) for a bad section, before touching anything,
        so the caller can reject the config as a whole. A source that cannot be built (say, a missing
        client library) is logged and leaves usage-based scheduling without data. The old collector is
        stopped on a thread of its own: a fetch in flight never holds up a session.
        """
        config = parse_metrics_config(raw)
        with self._lock:
            if config == self.config and (config is None or self.collector is not None):
                return False
            old, self.collector, self.config = self.collector, None, config
        if old is not None:
            threading.Thread(target=old.close, name="volsched-metrics-close", daemon=True).start()
            log.info(
                "metrics collector stopped (%s)", "section removed" if config is None else "config changed"
            )
        if config is None:
            self.state.set_usage({})
            return True
        try:
            collector = self._factory(config)
        except Exception as exc:
            log.error(
                "metrics source %s cannot be built: %s: %s",
                config.type.value, type(exc).__name__, error_summary(exc, secrets=config.secrets),
            )  # fmt: skip
            self.state.set_usage({})
            return True
        collector.start()
        with self._lock:
            self.collector = collector
            self.builds += 1
        log.info("metrics collector started: %s", _describe(config))
        return True

    def refresh(self, now: float) -> int:
        """Put the collector's fresh snapshot into the cache; returns how many nodes have usage."""
        collector = self.collector
        if collector is None:
            return len(self.state.usage)
        usage = collector.snapshot(now)
        self.state.set_usage(usage)
        return len(usage)

    def close(self) -> None:
        with self._lock:
            collector, self.collector = self.collector, None
        if collector is not None:
            collector.close()
