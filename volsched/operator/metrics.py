"""The operator's Prometheus metrics (:class:`Metrics`): session, action and plugin latencies, schedule
attempts and evictions by result, each queue's deserved/allocated/share, leadership and config reloads.

Only the series and how a session's result and writes are counted into them; serving ``/metrics`` is
:mod:`volsched.operator.http`, node usage metrics are :mod:`volsched.usagefeed`'s.

The series are made, and ``prometheus_client`` imported, by :meth:`Metrics.make` (or at the first read
of :attr:`Metrics.registry`): nothing on the operator's way to ready needs them, so it makes them after
ready. What is counted into a series before then (the config's read at start, the first sessions) is
kept and counted into it when it is made: the first scrape shows everything.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from volsched.cycle import BOUND, CycleReport
from volsched.framework.decisions import SessionResult
from volsched.model.fairshare import ROOT as ROOT_QUEUE

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: The series :meth:`Metrics.make` makes (before then, each is a :class:`_Kept`).
SERIES = (
    "session", "action", "plugin", "attempts", "evictions", "deserved", "allocated", "share", "leader",
    "ready", "reloads", "sessions", "dashboard_builds", "skipped", "woken",
)  # fmt: skip
#: Uses kept at most before the series are made: past it they are made at once.
KEPT_AT_MOST = 10_000


class Metrics:
    """The operator's series, on a registry of their own. ``ready`` and ``dashboard_builds``: the values of
    ``volsched_ready`` and ``volsched_dashboard_builds``, asked for when scraped. Thread-safe."""

    registry: CollectorRegistry
    session: Histogram
    action: Histogram
    plugin: Histogram
    attempts: Counter
    evictions: Counter
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
        self._functions = (ready, dashboard_builds)
        self._lock = threading.RLock()
        self._made = False
        #: Until the series are made: each one's stand-in, and what was done with them, in order.
        self._kept: dict[str, _Kept] = {name: _Kept(self, ((name, (), {}),)) for name in SERIES}
        self._uses: list[tuple[tuple[_Call, ...], _Call]] = []
        self._queue_series: dict[str, set[tuple[str, ...]]] = {}

    def __getattr__(self, name: str) -> Any:
        # Only for a name not found: the registry or a series before they are made.
        if name == "registry":
            self.make()
            return self.__dict__[name]
        if name.startswith("_") or name not in self._kept:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        with self._lock:
            return self.__dict__[name] if self._made else self._kept[name]

    @property
    def made(self) -> bool:
        """Whether the series are made."""
        return self._made

    def make(self) -> None:
        """Import ``prometheus_client`` and make the series, once; what was done with their stand-ins
        so far is done again on them, in order."""
        with self._lock:
            if self._made:
                return
            series = _series()
            ready, builds = self._functions
            if ready is not None:
                series["ready"].set_function(ready)
            if builds is not None:
                series["dashboard_builds"].set_function(builds)
            for path, call in self._uses:
                _apply(series, path, call)
            self.__dict__.update(series)
            self._uses = []
            self._made = True

    def _use(self, path: tuple[_Call, ...], call: _Call) -> None:
        """``call`` on what ``path`` leads to (a series, then its ``labels``): kept, or done now."""
        with self._lock:
            if not self._made:
                self._uses.append((path, call))
                if len(self._uses) < KEPT_AT_MOST:
                    return
                self.make()
                return
        _apply(self.__dict__, path, call)

    def observe_outcomes(self, report: CycleReport) -> None:
        """The bind and eviction outcomes a cycle settled (a skipped one's too)."""
        for outcome in report.binds:
            self.attempts.labels("scheduled" if outcome.result == BOUND else f"bind_{outcome.result}").inc()
        for ev in report.evictions:
            self.evictions.labels(ev.result).inc()

    def observe(self, result: SessionResult, report: CycleReport | None) -> None:
        self.sessions.inc()
        for label, seconds in result.timings.items():
            if label == "session":
                self.session.observe(seconds)
            elif label.startswith("action:"):
                self.action.labels(label.split(":", 1)[1]).observe(seconds)
            elif label.startswith("plugin:"):
                _, name, point = ([*label.split(":"), "", ""])[:3]
                self.plugin.labels(name, point).observe(seconds)
        if report is not None:
            self.observe_outcomes(report)
        unschedulable = result.unschedulable_pods
        if unschedulable:
            self.attempts.labels("unschedulable").inc(len(unschedulable))
        # By name, not by object: the series made between two sessions (or during one) are the same ones.
        gauges: dict[str, Gauge] = {
            "deserved": self.deserved,
            "allocated": self.allocated,
            "share": self.share,
        }
        seen: dict[str, set[tuple[str, ...]]] = {name: set() for name in gauges}
        for name, q in result.queues.items():
            parent = q.parent or ROOT_QUEUE
            for which, amounts in (("deserved", q.deserved or {}), ("allocated", q.allocated)):
                for res, amount in amounts.items():
                    gauges[which].labels(name, parent, res).set(amount)
                    seen[which].add((name, parent, res))
            if q.share is not None:
                gauges["share"].labels(name, parent).set(q.share)
                seen["share"].add((name, parent))
        # A queue that moved to another parent, or is gone, leaves no stale series behind.
        for which, current in seen.items():
            for labels in self._queue_series.get(which, set()) - current:
                gauges[which].remove(*labels)
        self._queue_series = seen


_Call = tuple[str, tuple[Any, ...], dict[str, Any]]


class _Kept:
    """A series not made yet (or one of its ``labels``): what is done with it is kept by its
    :class:`Metrics` and done on the series once made; once made, it is done on it at once."""

    __slots__ = ("_metrics", "_path")

    def __init__(self, metrics: Metrics, path: tuple[_Call, ...]) -> None:
        self._metrics = metrics
        self._path = path

    def labels(self, *values: Any, **named: Any) -> _Kept:
        return _Kept(self._metrics, (*self._path, ("labels", values, named)))

    def __getattr__(self, method: str) -> Callable[..., None]:
        if method.startswith("_"):
            raise AttributeError(method)

        def use(*args: Any, **named: Any) -> None:
            self._metrics._use(self._path, (method, args, named))

        return use


def _apply(series: dict[str, Any], path: tuple[_Call, ...], call: _Call) -> None:
    (name, _, _), *steps = path
    target = series[name]
    for method, args, named in steps:
        target = getattr(target, method)(*args, **named)
    method, args, named = call
    getattr(target, method)(*args, **named)


def _series() -> dict[str, Any]:
    """The registry and every series on it (imports ``prometheus_client``)."""
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

    r = CollectorRegistry()
    buckets = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
    return {
        "registry": r,
        "session": Histogram(
            "volsched_session_duration_seconds", "Scheduling session latency", registry=r, buckets=buckets
        ),
        "action": Histogram(
            "volsched_action_duration_seconds", "Latency per action", ["action"], registry=r, buckets=buckets
        ),
        "plugin": Histogram(
            "volsched_plugin_duration_seconds",
            "Latency per plugin callback group",
            ["plugin", "point"],
            registry=r,
            buckets=buckets,
        ),
        "attempts": Counter(
            "volsched_schedule_attempts_total", "Schedule attempts by result", ["result"], registry=r
        ),
        "evictions": Counter("volsched_evictions_total", "Evictions by result", ["result"], registry=r),
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
