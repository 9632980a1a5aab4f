"""Background polling of a metrics source into a thread-safe store of fresh node usage.

:class:`UsageCollector` calls a source's blocking ``fetch`` every ``interval`` seconds on its own
daemon thread (``start()``/``stop()``), or once on demand (``refresh_once()``, for tests and for an
asyncio caller through ``await collector.arefresh()``). The scheduling path only ever calls
:meth:`UsageCollector.snapshot`, which takes a lock, copies and filters: it never does I/O.

Failure policy: a source that is down, slow (its request timeout), or answers garbage never raises
out of the collector. The failure is logged (credentials redacted) once per change of state, as the
apiserver's health is: a warning when fetches start failing or fail another way, one line when one
works again (every failure in between at debug level), and counted in
``volsched_metrics_fetch_errors_total{source}``; the previously stored values are kept and simply
go stale. Entries whose ``measured_at`` is older than ``stale_after`` are left out of snapshots and
counted in the ``volsched_metrics_stale_nodes{source}`` gauge. A node missing from one answer keeps
its last value until that goes stale.

This module is not a source and knows no backend protocol; :func:`build_source` only picks one of
:mod:`volsched.metrics.prometheus`, :mod:`volsched.metrics.custom_metrics`,
:mod:`volsched.metrics.elasticsearch` from a :class:`~volsched.metrics.config.MetricsConfig`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from volsched.metrics.config import MetricsConfig, SourceType
from volsched.metrics.source import NodeTargets, UsageSource
from volsched.model.usage import NodeUsage
from volsched.records import dataclass
from volsched.redaction import error_summary, redact, register_secrets

__all__ = ["CollectorMetrics", "UsageCollector", "build_source"]

log = logging.getLogger(__name__)

_DIGITS = re.compile(r"\d+")

#: Entries older than this many ``stale_after`` are forgotten entirely (bounded memory).
FORGET_AFTER_STALE = 10


@dataclass(frozen=True)
class CollectorMetrics:
    """The prometheus_client instruments of all collectors that share one registry."""

    fetch_errors: Counter
    fetches: Counter
    fetch_seconds: Histogram
    stale_nodes: Gauge
    fresh_nodes: Gauge
    dropped_stale: Counter
    last_success: Gauge


_metrics_lock = threading.Lock()
_metrics_by_registry: dict[int, tuple[CollectorRegistry, CollectorMetrics]] = {}


def _metrics_for(registry: CollectorRegistry) -> CollectorMetrics:
    with _metrics_lock:
        entry = _metrics_by_registry.get(id(registry))
        if entry is not None and entry[0] is registry:
            return entry[1]
        labels = ("source",)
        metrics = CollectorMetrics(
            fetch_errors=Counter(
                "volsched_metrics_fetch_errors",
                "Failed fetches from the node usage source.",
                labels,
                registry=registry,
            ),
            fetches=Counter(
                "volsched_metrics_fetches",
                "Successful fetches from the node usage source.",
                labels,
                registry=registry,
            ),
            fetch_seconds=Histogram(
                "volsched_metrics_fetch_duration_seconds",
                "Duration of one fetch (success or failure).",
                labels,
                registry=registry,
            ),
            stale_nodes=Gauge(
                "volsched_metrics_stale_nodes",
                "Nodes whose stored usage is older than staleAfter.",
                labels,
                registry=registry,
            ),
            fresh_nodes=Gauge(
                "volsched_metrics_fresh_nodes",
                "Nodes with usable (fresh) usage data.",
                labels,
                registry=registry,
            ),
            dropped_stale=Counter(
                "volsched_metrics_stale_dropped",
                "Stale node entries left out of snapshots.",
                labels,
                registry=registry,
            ),
            last_success=Gauge(
                "volsched_metrics_last_success_timestamp_seconds",
                "Unix time of the last successful fetch.",
                labels,
                registry=registry,
            ),
        )
        _metrics_by_registry[id(registry)] = (registry, metrics)
        return metrics


class UsageCollector:
    """Polls a :class:`~volsched.metrics.source.UsageSource` off the scheduling path."""

    def __init__(
        self,
        source: UsageSource,
        *,
        interval: float = 30.0,
        stale_after: float | None = None,
        nodes: Callable[[], NodeTargets] | None = None,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.time,
        secrets: Iterable[str | None] = (),
    ) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.source = source
        self.interval = float(interval)
        self.stale_after = float(stale_after if stale_after is not None else 3 * interval)
        self._nodes = nodes
        self._clock = clock
        self._secrets = tuple(s for s in secrets if s)
        register_secrets(*self._secrets)  # every log line masks them from now on, whoever logs
        self._label = redact(str(getattr(source, "name", type(source).__name__)))
        self._metrics = _metrics_for(registry if registry is not None else REGISTRY)
        self._lock = threading.Lock()
        self._store: dict[str, NodeUsage] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_success: float | None = None
        self.last_error: str | None = None
        self.consecutive_failures = 0
        #: The failure last logged as a warning (digits masked), None while fetches work.
        self._failing: str | None = None
        # Make the labelled series exist (at 0) before the first failure.
        self._metrics.fetch_errors.labels(self._label)
        self._metrics.stale_nodes.labels(self._label).set(0)

    @classmethod
    def from_config(
        cls,
        config: MetricsConfig,
        *,
        nodes: Callable[[], NodeTargets] | None = None,
        registry: CollectorRegistry | None = None,
        api_client: Any = None,
    ) -> UsageCollector:
        """A collector over :func:`build_source` with the config's interval and staleness."""
        return cls(
            build_source(config, api_client=api_client),
            interval=config.interval,
            stale_after=config.stale_after,
            nodes=nodes,
            registry=registry,
            secrets=config.secrets,
        )

    # -- polling -----------------------------------------------------------------------------

    def refresh_once(self) -> bool:
        """Fetch once and merge into the store. Never raises; returns whether the fetch worked."""
        started = time.monotonic()
        try:
            targets = self._nodes() if self._nodes is not None else None
            fetched = self.source.fetch(targets)
            if not isinstance(fetched, dict):
                raise TypeError(f"source returned {type(fetched).__name__}, expected dict")
            valid = {n: u for n, u in fetched.items() if isinstance(n, str) and isinstance(u, NodeUsage)}
        except Exception as exc:
            self._metrics.fetch_seconds.labels(self._label).observe(time.monotonic() - started)
            self._metrics.fetch_errors.labels(self._label).inc()
            self.consecutive_failures += 1
            self.last_error = f"{type(exc).__name__}: {error_summary(exc, secrets=self._secrets)}"
            kind = _DIGITS.sub("#", self.last_error)  # the same failure, whatever port or timing it names
            say = log.warning if kind != self._failing else log.debug
            self._failing = kind
            say(
                "metrics source %s: fetch failed (%d in a row), keeping old data until stale: %s%s",
                self._label,
                self.consecutive_failures,
                self.last_error,
                "; said again when it fails otherwise or works" if say is log.warning else "",
            )
            self._update_gauges(self._clock())
            return False
        self._metrics.fetch_seconds.labels(self._label).observe(time.monotonic() - started)
        now = self._clock()
        with self._lock:
            self._store.update(valid)
            forget = FORGET_AFTER_STALE * self.stale_after
            for name in [n for n, u in self._store.items() if now - u.measured_at > forget]:
                del self._store[name]
        self._metrics.fetches.labels(self._label).inc()
        self._metrics.last_success.labels(self._label).set(now)
        self.last_success = now
        if self._failing is not None:
            log.info(
                "metrics source %s: fetch works again after %d failure(s)",
                self._label,
                self.consecutive_failures,
            )
            self._failing = None
        self.last_error = None
        self.consecutive_failures = 0
        self._update_gauges(now)
        return True

    async def arefresh(self) -> bool:
        """:meth:`refresh_once` in a worker thread, for asyncio callers (kopf handlers)."""
        return await asyncio.to_thread(self.refresh_once)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.refresh_once()
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def start(self) -> None:
        """Start the background thread (first fetch immediately). Idempotent."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"volsched-metrics-{self._label}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Ask the thread to stop and wait for it (at most ``timeout``, default one request timeout)."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(
                timeout if timeout is not None else max(1.0, getattr(self.source, "timeout", 10.0) + 1)
            )
            if thread.is_alive():
                log.warning("metrics source %s: poller still busy in a request; left as daemon", self._label)
        self._thread = None

    def close(self) -> None:
        """Stop polling and close the source's connections."""
        self.stop()
        try:
            self.source.close()
        except Exception as exc:
            log.debug("metrics source %s: close failed: %s", self._label, redact(str(exc), self._secrets))

    def __enter__(self) -> UsageCollector:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- reading -----------------------------------------------------------------------------

    def _partition(self, now: float) -> tuple[dict[str, NodeUsage], int]:
        with self._lock:
            items = list(self._store.items())
        fresh = {n: u for n, u in items if now - u.measured_at <= self.stale_after}
        return fresh, len(items) - len(fresh)

    def _update_gauges(self, now: float) -> tuple[dict[str, NodeUsage], int]:
        fresh, stale = self._partition(now)
        self._metrics.stale_nodes.labels(self._label).set(stale)
        self._metrics.fresh_nodes.labels(self._label).set(len(fresh))
        return fresh, stale

    def snapshot(self, now: float | None = None) -> dict[str, NodeUsage]:
        """Fresh usage per node (a copy). Stale entries are left out and counted."""
        fresh, stale = self._update_gauges(self._clock() if now is None else now)
        if stale:
            self._metrics.dropped_stale.labels(self._label).inc(stale)
        return fresh

    def stale_nodes(self, now: float | None = None) -> list[str]:
        """Names of stored nodes whose data is too old to be used."""
        t = self._clock() if now is None else now
        with self._lock:
            return sorted(n for n, u in self._store.items() if t - u.measured_at > self.stale_after)


def build_source(config: MetricsConfig, *, api_client: Any = None) -> UsageSource:
    """The source for ``config.type``. For ``prometheus_adaptor`` without ``api_client``, a
    kubernetes ApiClient is built from the in-cluster config or else the kubeconfig; a configured
    ``address`` then overrides its API server URL."""
    if config.type is SourceType.PROMETHEUS:
        from volsched.metrics.prometheus import PrometheusSource

        return PrometheusSource.from_config(config)
    if config.type is SourceType.ELASTICSEARCH:
        from volsched.metrics.elasticsearch import ElasticsearchSource

        return ElasticsearchSource.from_config(config)
    from volsched.metrics.custom_metrics import CustomMetricsSource

    if api_client is None:
        from volsched.kube.client import library_api_client, load_configuration

        configuration = load_configuration()
        if config.address:
            configuration.host = config.address
        if config.insecure_skip_verify:
            configuration.verify_ssl = False
        api_client = library_api_client(configuration)
    return CustomMetricsSource(api_client, timeout=config.timeout)
