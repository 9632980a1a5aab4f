"""A session is counted into the operator's series without asking prometheus_client for what it already
gave: each labelled series is asked for once, a queue gauge whose value did not change is not set again,
and the sessions' timings are counted into their histograms a few sessions at a time, or when the
registry is read (a scrape sees every session observed before it)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

from volsched.framework.decisions import QueueStatus, SessionResult
from volsched.operator.metrics import BUCKETS, FOLD_AT, Metrics, Timings


def _session(
    *, allocated: float = 2.0, share: float = 0.5, seconds: float = 0.02, queue: str = "q"
) -> SessionResult:
    result = SessionResult()
    result.timings.update(
        {
            "session": seconds,
            "action:allocate": seconds / 2,
            "plugin:gang:open": seconds / 4,
            "plugin:gang:close": seconds / 8,
            "cycle:bind": 1.0,  # not exported
        }
    )
    result.queues[queue] = QueueStatus(
        name=queue, state="Open", weight=1, allocated={"cpu": allocated}, request={}, guarantee={},
        capability=None, deserved={"cpu": 4.0}, share=share,
    )  # fmt: skip
    return result


class _Calls:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.labels = self.sets = self.observes = 0
        labels, set_, observe = MetricWrapperBase.labels, Gauge.set, Timings.add

        def counted_labels(series: Any, *args: Any, **kwargs: Any) -> Any:
            self.labels += 1
            return labels(series, *args, **kwargs)

        def counted_set(gauge: Any, value: float) -> None:
            self.sets += 1
            set_(gauge, value)

        def counted_observe(timings: Any, series: tuple[str, tuple[str, ...]], amount: float) -> None:
            self.observes += 1
            observe(timings, series, amount)

        monkeypatch.setattr(MetricWrapperBase, "labels", counted_labels)
        monkeypatch.setattr(Gauge, "set", counted_set)
        monkeypatch.setattr(Timings, "add", counted_observe)


def test_a_session_like_the_last_asks_for_no_series_and_sets_no_gauge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = Metrics()
    for _ in range(FOLD_AT):  # every series used once (and the timings counted in)
        m.observe(_session(), None)
    calls = _Calls(monkeypatch)
    m.observe(_session(), None)
    m.fold()
    assert (calls.labels, calls.sets) == (0, 0)
    assert calls.observes == 4  # the session's, allocate's, the gang's two
    m.observe(_session(allocated=3.0), None)
    assert (calls.labels, calls.sets) == (0, 1)  # only the gauge that changed
    assert m.registry.get_sample_value(
        "volsched_queue_allocated", {"queue": "q", "parent": "root", "resource": "cpu"}
    ) == pytest.approx(3.0)


def test_timings_are_counted_in_a_few_sessions_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    m = Metrics()
    calls = _Calls(monkeypatch)
    for _ in range(FOLD_AT - 1):
        m.observe(_session(), None)
    assert calls.observes == 0
    m.observe(_session(), None)
    assert calls.observes == 4 * FOLD_AT


@pytest.mark.parametrize("sessions", [1, FOLD_AT - 1, FOLD_AT, FOLD_AT + 3, 3 * FOLD_AT])
def test_the_registry_read_shows_every_session_observed_before_it(sessions: int) -> None:
    m = Metrics()
    seconds = [0.0005 * (i % 7 + 1) for i in range(sessions)]
    for i, s in enumerate(seconds):
        m.observe(_session(seconds=s, allocated=float(i), queue="q" if i % 5 else "r"), None)
    r = m.registry
    assert r.get_sample_value("volsched_sessions_total") == sessions
    assert r.get_sample_value("volsched_session_duration_seconds_count") == sessions
    assert r.get_sample_value("volsched_session_duration_seconds_sum") == pytest.approx(sum(seconds))
    assert r.get_sample_value(
        "volsched_plugin_duration_seconds_sum", {"plugin": "gang", "point": "close"}
    ) == pytest.approx(sum(seconds) / 8)
    assert r.get_sample_value(
        "volsched_action_duration_seconds_bucket", {"action": "allocate", "le": "0.001"}
    ) == sum(s / 2 <= 0.001 for s in seconds)
    last = "q" if (sessions - 1) % 5 else "r"
    gone = "r" if last == "q" else "q"
    labels = {"parent": "root", "resource": "cpu"}
    assert r.get_sample_value("volsched_queue_allocated", {"queue": last, **labels}) == sessions - 1
    assert r.get_sample_value("volsched_queue_allocated", {"queue": gone, **labels}) is None
    m.observe(_session(seconds=1.0), None)  # a session after the read is counted by the next read
    assert m.registry.get_sample_value("volsched_session_duration_seconds_count") == sessions + 1


def test_a_gauge_set_to_nan_is_set_again() -> None:
    m = Metrics()
    m.observe(_session(share=math.nan), None)
    m.observe(_session(share=0.25), None)
    assert m.registry.get_sample_value("volsched_queue_share", {"queue": "q", "parent": "root"}) == 0.25


def test_the_timings_show_as_prometheus_clients_histograms_would() -> None:
    """The same names, labels, buckets, counts and sums as a ``Histogram`` of the same buckets shows."""
    m = Metrics()
    reference = CollectorRegistry()
    session = Histogram("volsched_session_duration_seconds", "", registry=reference, buckets=BUCKETS)
    action = Histogram(
        "volsched_action_duration_seconds", "", ["action"], registry=reference, buckets=BUCKETS
    )
    plugin = Histogram(
        "volsched_plugin_duration_seconds", "", ["plugin", "point"], registry=reference, buckets=BUCKETS
    )
    for k, seconds in enumerate([0.0, 0.001, 0.0010001, 0.003, 0.05, 0.2, 1.0, 2.5, 7.0, 11.0, 300.0]):
        r = _session(seconds=seconds)
        r.timings["action:backfill" if k % 2 else "action:enqueue"] = seconds
        m.observe(r, None)
        session.observe(seconds)
        action.labels("allocate").observe(seconds / 2)
        action.labels("backfill" if k % 2 else "enqueue").observe(seconds)
        plugin.labels("gang", "open").observe(seconds / 4)
        plugin.labels("gang", "close").observe(seconds / 8)

    def samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in registry.collect()
            if family.name.endswith("_duration_seconds")
            for s in family.samples
            if not s.name.endswith("_created")
        }

    ours, theirs = samples(m.registry), samples(reference)
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value), key


def test_the_sessions_histogram_shows_before_any_session() -> None:
    assert Metrics().registry.get_sample_value("volsched_session_duration_seconds_count") == 0
