"""The operator's Prometheus metrics (:class:`Metrics`): session, action and plugin latencies, schedule
attempts and evictions by result (those deleted past a disruption budget also apart), each queue's
deserved/allocated/share, leadership and config reloads.

Only the series and how a session's result and writes are counted into them; serving ``/metrics`` is
:mod:`volsched.operator.http`, node usage metrics are :mod:`volsched.usagefeed`'s.

prometheus_client is not imported on the way to ready: the operator imports it after ready, at the
sessions' first lull (its ``after_ready``), and the series are made then (:meth:`Metrics.make`) or when first
read (:attr:`Metrics.registry`). What is counted before that (a config loaded at start, the Lease held)
is kept by a stand-in of each series (:class:`EarlySeries`: a counter's sum, a gauge's last value, by
labels) and handed to the series as they are made.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, cast

from volsched.cycle import BOUND, CycleReport
from volsched.framework.decisions import SessionResult
from volsched.model.vocabulary import ROOT_QUEUE
from volsched.operator.series import CounterSeries, GaugeSeries

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import HistogramMetricFamily
    from prometheus_client.registry import Collector

#: Sessions whose timings :meth:`Metrics.observe` keeps before counting them in, all together.
FOLD_AT = 16
#: The series by name: whether each is a counter (else a gauge), and its name, help and label names.
SERIES: dict[str, tuple[bool, str, str, tuple[str, ...]]] = {
    "attempts": (True, "volsched_schedule_attempts_total", "Schedule attempts by result", ("result",)),
    "evictions": (True, "volsched_evictions_total", "Evictions by result", ("result",)),
    # Of those, the victims reclaim and preempt took past their PodDisruptionBudget as a last resort
    # (deleted, not evicted), by the same result: how often budgets were gone past.
    "past_budget": (
        True,
        "volsched_evictions_past_budget_total",
        "Evictions by result of pods taken past their PodDisruptionBudget (deleted, not evicted); "
        "also counted in volsched_evictions_total",
        ("result",),
    ),
    # "parent" is the queue's parent in the queue tree ("root" at the top); a parent's figures are its
    # whole subtree's.
    "deserved": (
        False,
        "volsched_queue_deserved",
        "Queue deserved share by resource",
        ("queue", "parent", "resource"),
    ),
    "allocated": (
        False,
        "volsched_queue_allocated",
        "Queue allocated resources",
        ("queue", "parent", "resource"),
    ),
    "share": (
        False,
        "volsched_queue_share",
        "Queue share (allocated / deserved, dominant)",
        ("queue", "parent"),
    ),
    "leader": (False, "volsched_leader", "1 when this replica holds the scheduler lease", ()),
    # Its value is asked when scraped (see the operator's readiness, as /readyz answers it).
    "ready": (
        False,
        "volsched_ready",
        "1 when /readyz answers 200: the cache synced and the scheduler config read (sessions may run)",
        (),
    ),
    "reloads": (
        True,
        "volsched_config_reloads_total",
        "Scheduler config reads by result: loaded, rejected, throttled (a poll answered 429)",
        ("result",),
    ),
    "sessions": (True, "volsched_sessions_total", "Sessions run", ()),
    # Its value is asked when scraped (the dashboard's LiveState.builds).
    "dashboard_builds": (
        False,
        "volsched_dashboard_builds",
        "Times the dashboard's document was built (at most once per session, whatever the viewers)",
        (),
    ),
    "skipped": (
        True,
        "volsched_sessions_skipped_total",
        "Sessions skipped: nothing changed since the last one, which decided nothing",
        (),
    ),
    "woken": (
        True,
        "volsched_sessions_woken_total",
        "Cycles started before their period because the watches brought something to act on",
        (),
    ),
}


class EarlySeries:
    """A series of :data:`SERIES` before prometheus_client is imported, or one labelled child of it: a
    counter's increments summed (``inc``), a gauge's last value (``set``, ``set_function``), children
    by labels (``labels``, ``remove``); once the series is made (:meth:`Metrics.make`) what was kept is
    handed to it and every call goes to it. Thread-safe (the :class:`Metrics`' lock)."""

    def __init__(self, lock: threading.RLock, counter: bool) -> None:
        self._lock = lock
        self.counter = counter
        #: The series (or child) made, once :meth:`Metrics.make` made it. (A counter's is a
        #: prometheus_client Counter, which has no ``set``: :class:`Metrics` types a counter's stand-in as a
        #: :class:`CounterSeries`, so it is never asked to.)
        self.real: GaugeSeries | None = None
        self.value = 0.0
        self.value_set = False
        self.function: Callable[[], float] | None = None
        self.children: dict[tuple[str, ...], EarlySeries] = {}

    def inc(self, amount: float = 1.0) -> None:
        with self._lock:
            if self.real is None:
                self.value += amount
                self.value_set = True
                return
        self.real.inc(amount)

    def set(self, value: float) -> None:
        with self._lock:
            if self.real is None:
                self.value, self.value_set = float(value), True
                return
        self.real.set(value)

    def set_function(self, function: Callable[[], float]) -> None:
        with self._lock:
            if self.real is None:
                self.function = function
                return
        self.real.set_function(function)

    def labels(self, *labels: str) -> GaugeSeries:
        with self._lock:
            if self.real is None:
                child = self.children.get(labels)
                if child is None:
                    child = self.children[labels] = EarlySeries(self._lock, self.counter)
                return child
        return self.real.labels(*labels)

    def remove(self, *labels: str) -> None:
        with self._lock:
            if self.real is None:
                self.children.pop(labels, None)
                return
        self.real.remove(*labels)

    def hand_to(self, real: CounterSeries) -> None:
        """(Under the lock.) What was kept, handed to the series (or child) ``real``, of its kind (a
        gauge's stand-in's to a gauge); calls go to it."""
        gauge = cast("GaugeSeries", real)  # (a counter's stand-in is only ever called as a CounterSeries)
        if self.function is not None:
            gauge.set_function(self.function)
        elif self.value_set:
            if self.counter:
                real.inc(self.value)
            else:
                gauge.set(self.value)
        for labels, child in self.children.items():
            child.hand_to(real.labels(*labels))
        self.children.clear()
        self.real = gauge


class Metrics:
    """The operator's series, on a registry of their own. ``ready`` and ``dashboard_builds``: the values of
    ``volsched_ready`` and ``volsched_dashboard_builds``, asked for when scraped. ``made_later``: the
    series are stand-ins until :meth:`make` (the operator's: prometheus_client imported after ready),
    else made at once. Thread-safe."""

    # Each a prometheus_client Counter or Gauge (as SERIES says), or its stand-in (EarlySeries) until made.
    attempts: CounterSeries
    evictions: CounterSeries
    past_budget: CounterSeries
    deserved: GaugeSeries
    allocated: GaugeSeries
    share: GaugeSeries
    leader: GaugeSeries
    ready: GaugeSeries
    reloads: CounterSeries
    sessions: CounterSeries
    dashboard_builds: GaugeSeries
    skipped: CounterSeries
    woken: CounterSeries

    def __init__(
        self,
        *,
        ready: Callable[[], float] | None = None,
        dashboard_builds: Callable[[], float] | None = None,
        made_later: bool = False,
    ) -> None:
        self._lock = threading.RLock()
        self._registry: CollectorRegistry | None = None
        for name, (counter, _, _, _) in SERIES.items():
            early: GaugeSeries = EarlySeries(self._lock, counter)
            setattr(self, name, early)
        if ready is not None:
            self.ready.set_function(ready)
        if dashboard_builds is not None:
            self.dashboard_builds.set_function(dashboard_builds)
        #: The session, action and plugin latencies (``volsched_*_duration_seconds``).
        self.timings = Timings(self._lock)
        self._queue_series: dict[str, set[tuple[str, ...]]] = {}
        #: Each labelled series (a child) by its series' name and labels, asked of prometheus_client once
        #: (its ``labels`` checks and locks at every call), and each queue gauge's value as last set (a
        #: session that leaves it as it was sets nothing).
        self._counters: dict[tuple[str, tuple[str, ...]], CounterSeries] = {}
        self._gauges: dict[tuple[str, tuple[str, ...]], GaugeSeries] = {}
        self._gauge_values: dict[tuple[str, tuple[str, ...]], float] = {}
        #: Sessions' timings not counted into their histograms yet (see :meth:`observe`).
        self._timings: list[Mapping[str, float]] = []
        if not made_later:
            self.make()

    def make(self) -> None:
        """The registry and its series made (prometheus_client imported, if it was not), what their
        stand-ins kept handed to them; at once again once made."""
        if self._registry is not None:
            return
        from prometheus_client import CollectorRegistry, Counter, Gauge

        with self._lock:
            if self._registry is not None:
                return
            registry = CollectorRegistry()
            made: dict[str, CounterSeries] = {}
            for name, (counter, metric, text, labels) in SERIES.items():
                series: CounterSeries = (Counter if counter else Gauge)(
                    metric, text, labels, registry=registry
                )
                early: EarlySeries = getattr(self, name)
                early.hand_to(series)
                made[name] = series
            registry.register(cast("Collector", self.timings))
            self.__dict__.update(made)
            self._counters.clear()  # (stand-ins of children: asked of the series made from now on)
            self._gauges.clear()
            self._registry = registry

    @property
    def registry(self) -> CollectorRegistry:
        """The series' registry (what ``/metrics`` serves), made if it was not, with every session observed
        so far counted in (see :meth:`observe`)."""
        self.make()
        self.fold()
        assert self._registry is not None
        return self._registry

    def _counter(self, name: str, labels: tuple[str, ...]) -> CounterSeries:
        """The counter ``name`` with ``labels``, the child kept (see ``_counters``)."""
        child = self._counters.get((name, labels))
        if child is None:
            series: CounterSeries = getattr(self, name)
            child = self._counters[name, labels] = series.labels(*labels)
        return child

    def _gauge(self, name: str, labels: tuple[str, ...]) -> GaugeSeries:
        """The gauge ``name`` with ``labels``, the child kept (see ``_gauges``)."""
        child = self._gauges.get((name, labels))
        if child is None:
            series: GaugeSeries = getattr(self, name)
            child = self._gauges[name, labels] = series.labels(*labels)
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
            self._counter("attempts", (result,)).inc()
        for ev in report.evictions:
            self._counter("evictions", (ev.result,)).inc()
            if ev.eviction.deletes:  # taken past its disruption budget: deleted, not evicted
                self._counter("past_budget", (ev.result,)).inc()

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
            self._counter("attempts", ("unschedulable",)).inc(len(unschedulable))
        seen: dict[str, set[tuple[str, ...]]] = {"deserved": set(), "allocated": set(), "share": set()}
        values = self._gauge_values
        for name, q in result.queues.items():
            parent = q.parent or ROOT_QUEUE
            for which, amounts in (("deserved", q.deserved or {}), ("allocated", q.allocated)):
                for res, amount in amounts.items():
                    labels = (name, parent, res)
                    seen[which].add(labels)
                    if values.get((which, labels)) != amount:  # (NaN is never equal: set again)
                        self._gauge(which, labels).set(amount)
                        values[which, labels] = amount
            if q.share is not None:
                pair = (name, parent)
                seen["share"].add(pair)
                if values.get(("share", pair)) != q.share:
                    self._gauge("share", pair).set(q.share)
                    values["share", pair] = q.share
        # A queue that moved to another parent, or is gone, leaves no stale series behind.
        for which, current in seen.items():
            gauge: GaugeSeries = getattr(self, which)
            for gone in self._queue_series.get(which, set()) - current:
                gauge.remove(*gone)
                self._gauges.pop((which, gone), None)
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


class Timings:
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

    def add(self, series: tuple[str, tuple[str, ...]], seconds: float) -> None:
        """One observation (under the caller's lock)."""
        row = self._rows.get(series)
        if row is None:
            row = self._rows[series] = [0.0] * (len(self._upper) + 2)
        row[bisect_left(self._upper, seconds)] += 1  # (the first bucket whose bound is at least it)
        row[-1] += seconds

    def collect(self) -> Iterator[HistogramMetricFamily]:
        from prometheus_client.core import HistogramMetricFamily
        from prometheus_client.utils import floatToGoString

        les = [*map(floatToGoString, self._upper), "+Inf"]
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
            for le, n in zip(les, row[:-1], strict=True):
                cumulative += n
                buckets.append((le, cumulative))
            families[name].add_metric(list(labels), buckets, sum_value=row[-1])
        yield from families.values()

    def describe(self) -> Iterator[HistogramMetricFamily]:
        from prometheus_client.core import HistogramMetricFamily

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
