"""The operator's Prometheus metrics (:class:`Metrics`): session, action and plugin latencies, schedule
attempts and evictions by result (those deleted past a disruption budget also apart), each queue's
deserved/allocated/share, leadership and config reloads.

Only the series and how a session's result and writes are counted into them; serving ``/metrics`` is
:mod:`volsched.operator.http`, node usage metrics are :mod:`volsched.usagefeed`'s.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from volsched.cycle import BOUND, CycleReport
from volsched.framework.decisions import SessionResult
from volsched.model.fairshare import ROOT as ROOT_QUEUE

#: Sessions whose timings :meth:`Metrics.observe` keeps before counting them in, all together.
FOLD_AT = 16


class Metrics:
    """The operator's series, on a registry of their own. ``ready`` and ``dashboard_builds``: the values of
    ``volsched_ready`` and ``volsched_dashboard_builds``, asked for when scraped. Thread-safe."""

    attempts: Counter
    evictions: Counter
    past_budget: Counter
    deserved: Gauge
    allocated: Gauge
    share: Gauge
    leader: Gauge
    ready: Gauge
    reloads: Counter
    sessions: Counter
    dashboard_builds: Gauge
    skipped: Counter
    woken: Counter

    def __init__(
        self,
        *,
        ready: Callable[[], float] | None = None,
        dashboard_builds: Callable[[], float] | None = None,
    ) -> None:
        self._lock = threading.RLock()
        series = _series()
        if ready is not None:
            series["ready"].set_function(ready)
        if dashboard_builds is not None:
            series["dashboard_builds"].set_function(dashboard_builds)
        self._registry: CollectorRegistry = series.pop("registry")
        self.__dict__.update(series)
        #: The session, action and plugin latencies (``volsched_*_duration_seconds``).
        self.timings = Timings(self._lock)
        self._registry.register(self.timings)
        self._queue_series: dict[str, set[tuple[str, ...]]] = {}
        #: Each labelled series (a child) by its series' name and labels, asked of prometheus_client once
        #: (its ``labels`` checks and locks at every call), and each queue gauge's value as last set (a
        #: session that leaves it as it was sets nothing).
        self._children: dict[tuple[str, tuple[str, ...]], Any] = {}
        self._gauge_values: dict[tuple[str, tuple[str, ...]], float] = {}
        #: Sessions' timings not counted into their histograms yet (see :meth:`observe`).
        self._timings: list[Mapping[str, float]] = []

    @property
    def registry(self) -> CollectorRegistry:
        """The series' registry (what ``/metrics`` serves), with every session observed so far counted
        in (see :meth:`observe`)."""
        self.fold()
        return self._registry

    def _child(self, name: str, labels: tuple[str, ...]) -> Any:
        """The series ``name`` with ``labels``, the child kept (see ``_children``)."""
        child = self._children.get((name, labels))
        if child is None:
            child = self._children[name, labels] = getattr(self, name).labels(*labels)
        return child

    def fold(self) -> None:
        """Count the sessions' timings observed so far into their histograms."""
        with self._lock:
            pending, self._timings = self._timings, []
            add = self.timings.add
            for timings in pending:
                for label, seconds in timings.items():
                    series = _timing_series(label)
                    if series is not None:
                        add(series, seconds)

    def observe_outcomes(self, report: CycleReport) -> None:
        """The bind and eviction outcomes a cycle settled (a skipped one's too)."""
        for outcome in report.binds:
            result = "scheduled" if outcome.result == BOUND else f"bind_{outcome.result}"
            self._child("attempts", (result,)).inc()
        for ev in report.evictions:
            self._child("evictions", (ev.result,)).inc()
            if ev.eviction.deletes:  # taken past its disruption budget: deleted, not evicted
                self._child("past_budget", (ev.result,)).inc()

    def observe(self, result: SessionResult, report: CycleReport | None) -> None:
        """Count a session in. Its timings (three dozen histograms, each with its locks) are counted in
        :data:`FOLD_AT` sessions at a time, or when the registry is read (a scrape sees every session
        observed before it): one session's alone, after the wait for an arriving pod, cost several
        times as much, the histograms' code and data gone from the processor's caches meanwhile."""
        self.sessions.inc()
        with self._lock:
            self._timings.append(result.timings)
            full = len(self._timings) >= FOLD_AT
        if full:
            self.fold()
        if report is not None:
            self.observe_outcomes(report)
        unschedulable = result.unschedulable_pods
        if unschedulable:
            self._child("attempts", ("unschedulable",)).inc(len(unschedulable))
        seen: dict[str, set[tuple[str, ...]]] = {"deserved": set(), "allocated": set(), "share": set()}
        values = self._gauge_values
        for name, q in result.queues.items():
            parent = q.parent or ROOT_QUEUE
            for which, amounts in (("deserved", q.deserved or {}), ("allocated", q.allocated)):
                for res, amount in amounts.items():
                    labels = (name, parent, res)
                    seen[which].add(labels)
                    if values.get((which, labels)) != amount:  # (NaN is never equal: set again)
                        self._child(which, labels).set(amount)
                        values[which, labels] = amount
            if q.share is not None:
                pair = (name, parent)
                seen["share"].add(pair)
                if values.get(("share", pair)) != q.share:
                    self._child("share", pair).set(q.share)
                    values["share", pair] = q.share
        # A queue that moved to another parent, or is gone, leaves no stale series behind.
        for which, current in seen.items():
            for gone in self._queue_series.get(which, set()) - current:
                getattr(self, which).remove(*gone)
                self._children.pop((which, gone), None)
                values.pop((which, gone), None)
        self._queue_series = seen


#: The timing histograms' upper bounds (seconds; ``+Inf`` after them).
BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

#: Each timing histogram: its name, help and label names.
_TIMING_FAMILIES = {
    "session": ("volsched_session_duration_seconds", "Scheduling session latency", ()),
    "action": ("volsched_action_duration_seconds", "Latency per action", ("action",)),
    "plugin": ("volsched_plugin_duration_seconds", "Latency per plugin callback group", ("plugin", "point")),
}


class Timings(Collector):
    """The sessions' latencies as three histograms (``session``, ``action`` by action, ``plugin`` by plugin
    and point), counted here and shown as prometheus_client shows a ``Histogram`` (the same names,
    labels, buckets, counts and sums; no ``_created``). A session's two or three dozen timings each went
    through a ``Histogram``'s observe (a lock, a walk of the buckets, a lock per counter), on every
    arriving pod's session; here each is a bisection and two additions, under the caller's lock."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        #: Per (series, labels): the observations in each bucket (not cumulative; ``+Inf`` last), then
        #: their sum.
        self._rows: dict[tuple[str, tuple[str, ...]], list[float]] = {}
        self._upper = [float(b) for b in BUCKETS]
        self._les = [*map(floatToGoString, self._upper), "+Inf"]

    def add(self, series: tuple[str, tuple[str, ...]], seconds: float) -> None:
        """One observation (under the caller's lock)."""
        row = self._rows.get(series)
        if row is None:
            row = self._rows[series] = [0.0] * (len(self._upper) + 2)
        row[bisect_left(self._upper, seconds)] += 1  # (the first bucket whose bound is at least it)
        row[-1] += seconds

    def collect(self) -> Iterator[HistogramMetricFamily]:
        with self._lock:
            rows = [(series, row.copy()) for series, row in self._rows.items()]
        families = {
            name: HistogramMetricFamily(metric, text, labels=labels)
            for name, (metric, text, labels) in _TIMING_FAMILIES.items()
        }
        if not any(name == "session" for (name, _), _ in rows):  # (unlabelled: shown from the start)
            rows.append((("session", ()), [0.0] * (len(self._upper) + 2)))
        for (name, labels), row in sorted(rows):
            cumulative, buckets = 0.0, []
            for le, n in zip(self._les, row[:-1], strict=True):
                cumulative += n
                buckets.append((le, cumulative))
            families[name].add_metric(list(labels), buckets, sum_value=row[-1])
        yield from families.values()

    def describe(self) -> Iterator[HistogramMetricFamily]:
        for metric, text, labels in _TIMING_FAMILIES.values():
            yield HistogramMetricFamily(metric, text, labels=labels)


#: A session's timing's series and labels (None: not exported), by the timing's name.
_TIMING_SERIES: dict[str, tuple[str, tuple[str, ...]] | None] = {}


def _timing_series(label: str) -> tuple[str, tuple[str, ...]] | None:
    """``session`` -> the session's histogram (no labels); ``action:NAME`` and ``plugin:NAME:POINT`` ->
    theirs with their labels; anything else (``cycle:``, ``close:``) is not exported."""
    if label in _TIMING_SERIES:
        return _TIMING_SERIES[label]
    series: tuple[str, tuple[str, ...]] | None = None
    if label == "session":
        series = ("session", ())
    elif label.startswith("action:"):
        series = ("action", (label.split(":", 1)[1],))
    elif label.startswith("plugin:"):
        _, name, point = ([*label.split(":"), "", ""])[:3]
        series = ("plugin", (name, point))
    if len(_TIMING_SERIES) < 4096:  # (names come from the plugins and actions: a few dozen)
        _TIMING_SERIES[label] = series
    return series


def _series() -> dict[str, Any]:
    """The registry and every series on it."""
    r = CollectorRegistry()
    return {
        "registry": r,
        "attempts": Counter(
            "volsched_schedule_attempts_total", "Schedule attempts by result", ["result"], registry=r
        ),
        "evictions": Counter("volsched_evictions_total", "Evictions by result", ["result"], registry=r),
        # Of those, the victims reclaim and preempt took past their PodDisruptionBudget as a last resort
        # (deleted, not evicted), by the same result: how often budgets were gone past.
        "past_budget": Counter(
            "volsched_evictions_past_budget_total",
            "Evictions by result of pods taken past their PodDisruptionBudget (deleted, not evicted); "
            "also counted in volsched_evictions_total",
            ["result"],
            registry=r,
        ),
        # "parent" is the queue's parent in the queue tree ("root" at the top); a parent's figures are its
        # whole subtree's.
        "deserved": Gauge(
            "volsched_queue_deserved",
            "Queue deserved share by resource",
            ["queue", "parent", "resource"],
            registry=r,
        ),
        "allocated": Gauge(
            "volsched_queue_allocated",
            "Queue allocated resources",
            ["queue", "parent", "resource"],
            registry=r,
        ),
        "share": Gauge(
            "volsched_queue_share",
            "Queue share (allocated / deserved, dominant)",
            ["queue", "parent"],
            registry=r,
        ),
        "leader": Gauge("volsched_leader", "1 when this replica holds the scheduler lease", registry=r),
        # Its value is asked when scraped (see the operator's readiness, as /readyz answers it).
        "ready": Gauge(
            "volsched_ready",
            "1 when /readyz answers 200: the cache synced and the scheduler config read (sessions may run)",
            registry=r,
        ),
        "reloads": Counter(
            "volsched_config_reloads_total",
            "Scheduler config reads by result: loaded, rejected, throttled (a poll answered 429)",
            ["result"],
            registry=r,
        ),
        "sessions": Counter("volsched_sessions_total", "Sessions run", registry=r),
        # Its value is asked when scraped (the dashboard's LiveState.builds).
        "dashboard_builds": Gauge(
            "volsched_dashboard_builds",
            "Times the dashboard's document was built (at most once per session, whatever the viewers)",
            registry=r,
        ),
        "skipped": Counter(
            "volsched_sessions_skipped_total",
            "Sessions skipped: nothing changed since the last one, which decided nothing",
            registry=r,
        ),
        "woken": Counter(
            "volsched_sessions_woken_total",
            "Cycles started before their period because the watches brought something to act on",
            registry=r,
        ),
    }
