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
