"""The operator's series are made after ready (``Metrics.make``, prometheus_client imported then): what is
counted into them before is kept and counted in when they are made, so ``/metrics`` answers from its first
scrape as if they had been made at start; once made, the stand-ins handed out before count straight in."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import generate_latest

from volsched.cycle import BOUND, CycleReport
from volsched.framework.decisions import QueueStatus, SessionResult
from volsched.operator import metrics as metrics_module
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


def _report() -> CycleReport:
    report = CycleReport()
    report.binds.append(type("Outcome", (), {"result": BOUND})())  # type: ignore[arg-type]
    return report


#: Uses of the series, as the operator's parts make them (the reloader, the session loop), in order.
USES: dict[str, list[Callable[[Metrics], object]]] = {
    "config read at start": [lambda m: m.reloads.labels("loaded").inc()],
    "a session": [
        lambda m: m.reloads.labels("loaded").inc(),
        lambda m: m.leader.set(1),
        lambda m: m.observe(_session("area-a"), _report()),
        lambda m: m.woken.inc(),
    ],
    "a queue moved to another parent": [
        lambda m: m.observe(_session("area-a"), None),
        lambda m: m.observe(_session("area-b"), None),
    ],
    "a queue gone": [
        lambda m: m.observe(_session(None), None),
        lambda m: m.observe(_session(None, gone=True), None),
    ],
    "skipped sessions, the Lease lost": [
        lambda m: m.leader.set(1),
        lambda m: m.skipped.inc(),
        lambda m: m.observe_outcomes(_report()),
        lambda m: m.leader.set(0),
        lambda m: m.reloads.labels("throttled").inc(2),
    ],
}


def _text(m: Metrics) -> str:
    """What ``/metrics`` serves, without the series' creation times (when each was made)."""
    return re.sub(r"(?m)^.*_created.*\n", "", generate_latest(m.registry).decode())


@pytest.mark.parametrize("made_after", [0, 1, 2, 99], ids=lambda n: f"made-after-{n}-uses")
@pytest.mark.parametrize("case", sorted(USES))
def test_what_is_counted_before_the_series_are_made_shows_as_if_made_first(
    case: str, made_after: int
) -> None:
    uses = USES[case]
    first = Metrics(ready=lambda: 1.0, dashboard_builds=lambda: 3.0)
    first.make()
    for use in uses:
        use(first)
    later = Metrics(ready=lambda: 1.0, dashboard_builds=lambda: 3.0)
    for i, use in enumerate(uses):
        if i == made_after:
            later.make()
        use(later)
    assert later.made is (made_after < len(uses))
    assert _text(later) == _text(first)  # the registry read makes them, with what was kept
    assert later.made


def test_a_stand_in_handed_out_before_counts_into_its_series_once_made() -> None:
    m = Metrics()
    reloads = m.reloads  # as the reloader is given it, at the operator's start
    reloads.labels("loaded").inc()
    assert not m.made
    m.make()
    assert m.reloads is not reloads  # the series itself from now on
    reloads.labels("rejected").inc()
    assert m.registry.get_sample_value("volsched_config_reloads_total", {"result": "loaded"}) == 1.0
    assert m.registry.get_sample_value("volsched_config_reloads_total", {"result": "rejected"}) == 1.0


def test_too_much_kept_makes_the_series(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_module, "KEPT_AT_MOST", 3)
    m = Metrics()
    for _ in range(2):
        m.sessions.inc()
    assert not m.made
    m.sessions.inc()
    assert m.made
    m.sessions.inc()
    assert m.registry.get_sample_value("volsched_sessions_total") == 4.0


def test_the_ready_and_dashboard_gauges_ask_their_functions_when_scraped() -> None:
    ready = [0.0]
    m = Metrics(ready=lambda: ready[0], dashboard_builds=lambda: 7.0)
    assert m.registry.get_sample_value("volsched_ready") == 0.0
    ready[0] = 1.0
    assert m.registry.get_sample_value("volsched_ready") == 1.0
    assert m.registry.get_sample_value("volsched_dashboard_builds") == 7.0


def test_a_name_that_is_no_series_is_an_attribute_error() -> None:
    m = Metrics()
    with pytest.raises(AttributeError):
        m.nonsense  # noqa: B018
    assert not m.made


def test_a_session_counted_while_the_series_are_made_leaves_no_stale_queue_series() -> None:
    """The series made after ready on a thread of their own, beside a session being counted: the queue
    series it replaces are still removed, and the ones it leaves are removed by the next."""
    m = Metrics()

    class MadeOnRead(dict[str, QueueStatus]):
        def items(self) -> Any:
            m.make()  # the session's counting has begun: its gauges were taken as stand-ins
            return super().items()

    m.observe(_session("area-a"), None)
    during = _session("area-b")
    during.queues = MadeOnRead(during.queues)
    m.observe(during, None)
    assert m.made
    assert 'parent="area-a"' not in _text(m)
    m.observe(_session("area-c"), None)
    text = _text(m)
    assert 'parent="area-b"' not in text and 'queue="q"' in text and 'parent="area-c"' in text
