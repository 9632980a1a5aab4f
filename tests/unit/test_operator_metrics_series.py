"""The operator's series: the ready and dashboard gauges ask their functions when scraped, and a queue
that moved to another parent, or is gone, leaves no stale series behind."""

from __future__ import annotations

from prometheus_client import generate_latest

from volsched.framework.decisions import QueueStatus, SessionResult
from volsched.operator.metrics import Metrics


def _session(parent: str | None, *, gone: bool = False, seconds: float = 0.02) -> SessionResult:
    result = SessionResult()
    result.timings.update({"session": seconds, "action:allocate": seconds / 2, "plugin:gang:open": 0.001})
    if not gone:
        result.queues["q"] = QueueStatus(
            name="q", state="Open", weight=1, allocated={"cpu": 2.0}, request={}, guarantee={},
            capability=None, deserved={"cpu": 4.0}, share=0.5, parent=parent,
        )  # fmt: skip
    return result


def test_the_ready_and_dashboard_gauges_ask_their_functions_when_scraped() -> None:
    ready = [0.0]
    m = Metrics(ready=lambda: ready[0], dashboard_builds=lambda: 7.0)
    assert m.registry.get_sample_value("volsched_ready") == 0.0
    ready[0] = 1.0
    assert m.registry.get_sample_value("volsched_ready") == 1.0
    assert m.registry.get_sample_value("volsched_dashboard_builds") == 7.0


def test_a_queue_moved_to_another_parent_or_gone_leaves_no_stale_series() -> None:
    m = Metrics()
    m.observe(_session("area-a"), None)
    m.observe(_session("area-b"), None)
    text = generate_latest(m.registry).decode()
    assert 'parent="area-a"' not in text and 'parent="area-b"' in text
    m.observe(_session(None, gone=True), None)
    assert 'queue="q"' not in generate_latest(m.registry).decode()


def test_a_victim_deleted_past_its_disruption_budget_is_counted_apart() -> None:
    """reclaim's and preempt's last resort deletes a pod past its PodDisruptionBudget: it still counts in
    ``volsched_evictions_total`` as before, and in ``volsched_evictions_past_budget_total`` too, by the
    same result, so a dashboard can tell how often budgets were gone past (and which of those failed)."""
    from volsched.cycle import CONFLICT, EVICTED, CycleReport, EvictOutcome
    from volsched.framework.decisions import Evict, EvictionReason
    from volsched.framework.messages import DELETED

    past = EvictionReason("reclaim", past_budget=("PodDisruptionBudget team-b/keep-all",))
    within = EvictionReason("reclaim")
    report = CycleReport()
    report.evictions += [
        EvictOutcome(Evict("team-b/a", "u1", "n1", past), EVICTED, DELETED),
        EvictOutcome(Evict("team-b/b", "u2", "n1", past), CONFLICT, "another pod by that name"),
        EvictOutcome(Evict("team-c/c", "u3", "n2", within), EVICTED),
        EvictOutcome(Evict("team-c/d", "u4", "n2", within), EVICTED),
    ]
    m = Metrics()
    m.observe_outcomes(report)
    sample = m.registry.get_sample_value
    assert sample("volsched_evictions_total", {"result": "evicted"}) == 3.0
    assert sample("volsched_evictions_total", {"result": "conflict"}) == 1.0
    assert sample("volsched_evictions_past_budget_total", {"result": "evicted"}) == 1.0
    assert sample("volsched_evictions_past_budget_total", {"result": "conflict"}) == 1.0


def test_what_is_counted_before_the_series_are_made_shows_once_they_are() -> None:
    """The operator's series are made after ready (prometheus_client imported then): a config loaded at
    start, the Lease held, the first sessions are counted by stand-ins and handed over; a stand-in held
    elsewhere (the config reloader's) counts into its series from then on; a queue gone before is not
    shown."""
    from volsched.operator.metrics import EarlySeries

    m = Metrics(ready=lambda: 1.0, made_later=True)
    reloads = m.reloads  # as the config reloader holds it, from the operator's construction
    assert isinstance(reloads, EarlySeries)
    reloads.labels("loaded").inc()
    reloads.labels("loaded").inc()
    m.leader.set(0)
    m.leader.set(1)
    m.woken.inc()
    m.observe(_session("area-a"), None)
    m.observe(_session("area-b"), None)  # area-a's series removed before any was made
    m.make()
    assert not isinstance(m.leader, EarlySeries)  # the series themselves from now on
    reloads.labels("rejected").inc()  # the stand-in held: into the series
    reloads.labels("loaded").inc()
    m.woken.inc()
    r = m.registry
    assert r.get_sample_value("volsched_config_reloads_total", {"result": "loaded"}) == 3.0
    assert r.get_sample_value("volsched_config_reloads_total", {"result": "rejected"}) == 1.0
    assert r.get_sample_value("volsched_leader") == 1.0
    assert r.get_sample_value("volsched_sessions_woken_total") == 2.0
    assert r.get_sample_value("volsched_sessions_total") == 2.0
    assert r.get_sample_value("volsched_ready") == 1.0
    assert r.get_sample_value("volsched_session_duration_seconds_count") == 2.0
    text = generate_latest(r).decode()
    assert 'parent="area-a"' not in text
    assert r.get_sample_value("volsched_queue_share", {"queue": "q", "parent": "area-b"}) == 0.5
    m.observe(_session(None, gone=True), None)  # after: removed from the series made
    assert 'queue="q"' not in generate_latest(m.registry).decode()
    m.make()  # once: the same registry
    assert m.registry is r
