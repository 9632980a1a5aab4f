"""A Closed queue takes no new work: its jobs neither reclaim from other queues nor preempt their
neighbours, while what already runs in it keeps running."""

from __future__ import annotations

import pytest

from tests.builders import node, pod, podgroup, priority_class, queue
from tests.sim._eviction_helpers import Staged, eviction_config, job

PRIORITIES = [priority_class("high", 1000), priority_class("low", 10)]


def _admitted(name: str, *, q: str, running: int, pending: int, priority: str | None = None) -> list[dict]:
    """A job admitted before its queue closed: ``running`` pods on n1 and ``pending`` more."""
    objs: list[dict] = [
        podgroup(name, ns="ns-c", queue=q, phase="Running" if running else "Inqueue", priority_class=priority)
    ]
    objs += [
        pod(f"{name}-{i}", ns="ns-c", group=name, node="n1" if i < running else None)
        for i in range(running + pending)
    ]
    return objs


@pytest.mark.parametrize(
    ("state", "running", "expect_evicted"),
    [
        pytest.param("Open", 0, 4, id="open-queue-reclaims"),  # the rule's control case
        pytest.param("Closed", 0, 0, id="closed-queue-admitted-job-does-not-reclaim"),
        pytest.param("Closed", 1, 0, id="closed-queue-running-job-does-not-grow-by-reclaim"),
    ],
)
def test_a_closed_queue_does_not_reclaim(state, running, expect_evicted):
    before = [node("n1", cpu="8"), queue("qa"), *job("a", ns="ns-a", queue="qa", size=8 - running)]
    after = [queue("qc", state=state), *_admitted("c", q="qc", running=running, pending=4)]
    s = Staged(before, after, eviction_config())
    assert len(s.evicted("ns-a/")) == expect_evicted
    assert s.running("ns-c/") == running + expect_evicted
    assert s.settled() and s.stays_settled()


@pytest.mark.parametrize(
    ("state", "expect_evicted"),
    [
        pytest.param("Open", 2, id="open-queue-preempts"),
        pytest.param("Closed", 0, id="closed-queue-does-not-preempt"),
    ],
)
def test_a_closed_queue_does_not_preempt_and_its_running_work_keeps_running(state, expect_evicted):
    before = [node("n1", cpu="4"), *PRIORITIES, queue("q", state=state)]
    before += [podgroup("low", ns="ns-c", queue="q", phase="Running", priority_class="low")]
    before += [pod(f"low-{i}", ns="ns-c", group="low", node="n1") for i in range(4)]
    after = _admitted("high", q="q", running=0, pending=2, priority="high")
    s = Staged(before, after, eviction_config())
    assert len(s.evicted("ns-c/low-")) == expect_evicted
    assert s.running("ns-c/low-") == 4 - expect_evicted
    assert s.running("ns-c/high-") == expect_evicted
    if state == "Closed":
        assert any("queue q is closed" in e["message"] for e in s.data["events"] if "high" in e["object"])


@pytest.mark.parametrize(
    ("state", "running", "shown"),
    [
        pytest.param("Closed", 1, "Closing", id="closed-with-work-left-is-closing"),
        pytest.param("Closed", 0, "Closed", id="closed-and-empty"),
        pytest.param("Open", 1, "Open", id="open"),
    ],
)
def test_a_closed_queue_says_closing_while_jobs_hold_it(state, running, shown):
    from tests.builders import run

    objs = [node("n1", cpu="8"), queue("qc", state=state), queue("other")]
    objs += _admitted("c", q="qc", running=running, pending=0) if running else []
    assert run(objs)["queues"]["qc"]["state"] == shown
