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
