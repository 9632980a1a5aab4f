"""The operator's Prometheus metrics (:class:`Metrics`): session, action and plugin latencies, schedule
attempts and evictions by result, each queue's deserved/allocated/share, leadership and config reloads.

Only the series and how a session's result and writes are counted into them; serving ``/metrics`` is
:mod:`volsched.operator.http`, node usage metrics are :mod:`volsched.usagefeed`'s.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from volsched.cycle import BOUND, CycleReport
from volsched.framework.decisions import SessionResult
from volsched.model.fairshare import ROOT as ROOT_QUEUE


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        buckets = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
        self.session = Histogram(
            "volsched_session_duration_seconds", "Scheduling session latency", registry=r, buckets=buckets
        )
        self.action = Histogram(
            "volsched_action_duration_seconds", "Latency per action", ["action"], registry=r, buckets=buckets
        )
        self.plugin = Histogram(
            "volsched_plugin_duration_seconds",
            "Latency per plugin callback group",
            ["plugin", "point"],
            registry=r,
            buckets=buckets,
        )
        self.attempts = Counter(
            "volsched_schedule_attempts_total", "Schedule attempts by result", ["result"], registry=r
        )
        self.evictions = Counter("volsched_evictions_total", "Evictions by result", ["result"], registry=r)
        # "parent" is the queue's parent in the queue tree ("root" at the top); a parent's figures are its
        # whole subtree's.
        self.deserved = Gauge(
            "volsched_queue_deserved",
            "Queue deserved share by resource",
            ["queue", "parent", "resource"],
            registry=r,
        )
        self.allocated = Gauge(
            "volsched_queue_allocated",
            "Queue allocated resources",
            ["queue", "parent", "resource"],
            registry=r,
        )
        self.share = Gauge(
            "volsched_queue_share",
            "Queue share (allocated / deserved, dominant)",
            ["queue", "parent"],
            registry=r,
        )
        self.leader = Gauge("volsched_leader", "1 when this replica holds the scheduler lease", registry=r)
        #: Its value is asked when scraped (see the operator's readiness, as /readyz answers it).
        self.ready = Gauge(
            "volsched_ready",
            "1 when /readyz answers 200: the cache synced and the scheduler config read (sessions may run)",
            registry=r,
        )
        self.reloads = Counter(
            "volsched_config_reloads_total",
            "Scheduler config reads by result: loaded, rejected, throttled (a poll answered 429)",
            ["result"],
            registry=r,
        )
        self.sessions = Counter("volsched_sessions_total", "Sessions run", registry=r)
        #: Its value is asked when scraped (the dashboard's LiveState.builds).
        self.dashboard_builds = Gauge(
            "volsched_dashboard_builds",
            "Times the dashboard's document was built (at most once per session, whatever the viewers)",
            registry=r,
        )
        self.skipped = Counter(
            "volsched_sessions_skipped_total",
            "Sessions skipped: nothing changed since the last one, which decided nothing",
            registry=r,
        )
        self.woken = Counter(
            "volsched_sessions_woken_total",
            "Cycles started before their period because the watches brought something to act on",
            registry=r,
        )
        self._queue_series: dict[Gauge, set[tuple[str, ...]]] = {}

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
        seen: dict[Gauge, set[tuple[str, ...]]] = {
            self.deserved: set(),
            self.allocated: set(),
            self.share: set(),
        }
        for name, q in result.queues.items():
            parent = q.parent or ROOT_QUEUE
            for gauge, amounts in ((self.deserved, q.deserved or {}), (self.allocated, q.allocated)):
                for res, amount in amounts.items():
                    gauge.labels(name, parent, res).set(amount)
                    seen[gauge].add((name, parent, res))
            if q.share is not None:
                self.share.labels(name, parent).set(q.share)
                seen[self.share].add((name, parent))
        # A queue that moved to another parent, or is gone, leaves no stale series behind.
        for gauge, current in seen.items():
            for labels in self._queue_series.get(gauge, set()) - current:
                gauge.remove(*labels)
        self._queue_series = seen
