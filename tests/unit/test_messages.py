"""Eviction reasons are data rendered once, at the edge: what each field adds to the text."""

from __future__ import annotations

import pytest

from volsched.framework.decisions import Evict, EvictionReason
from volsched.framework.messages import eviction_event_reason, render_eviction

GiB = float(1 << 30)

CASES = [
    (
        "preempt names victim, beneficiary, priorities and amounts",
        "preempt",
        EvictionReason(
            action="preempt", victim_job="ns/a", priority=10, beneficiary="ns/b-0", beneficiary_job="ns/b",
            beneficiary_priority=1000, beneficiary_queue="q", needs={"cpu": 1.0, "memory": GiB},
            frees={"cpu": 1.0, "pods": 1.0}, holder="job ns/a", holds_before={"cpu": 2.0}, holds_after={"cpu": 1.0},
        ),
        "preempt: ns/a-0 (job ns/a, priority 10) evicted on n1 for ns/b-0 (job ns/b, priority 1000, queue q,"
        " needs cpu 1, memory 1Gi); frees cpu 1; job ns/a holds cpu 2 -> cpu 1",
        "Preempted",
    ),
    (
        "reclaim adds the beneficiary queue's holdings as a fact",
        "reclaim",
        EvictionReason(
            action="reclaim", victim_job="ns/a", beneficiary="ns/b-0", beneficiary_job="ns/b", beneficiary_queue="qb",
            frees={"cpu": 1.5}, holder="queue qa", holds_before={"cpu": 8.0}, holds_after={"cpu": 6.5},
            facts=(("queue qb holds", {"cpu": 2.0}), ("deserved", "cpu 4")),
        ),
        "reclaim: ns/a-0 (job ns/a) evicted on n1 for ns/b-0 (job ns/b, queue qb); frees cpu 1.5; queue qa holds"
        " cpu 8 -> cpu 6.5; queue qb holds cpu 2; deserved cpu 4",
        "Evicted",
    ),
    (
        "a holder that gives up everything holds nothing",
        "reclaim",
        EvictionReason(action="reclaim", holder="queue qa", holds_before={"cpu": 1.0}, holds_after={"cpu": 0.0}),
        "reclaim: ns/a-0 evicted on n1; queue qa holds cpu 1 -> nothing",
        "Evicted",
    ),
    (
        "shuffle carries the plugin's words",
        "shuffle",
        EvictionReason(action="shuffle", detail="rescheduling (podLifeTime): older than 1h"),
        "shuffle: ns/a-0 evicted on n1; rescheduling (podLifeTime): older than 1h",
        "Rescheduled",
    ),
    (
        "an action with only words gives them as the detail",
        "newaction",
        EvictionReason(action="newaction", detail="the new action's own words"),
        "newaction: ns/a-0 evicted on n1; the new action's own words",
        "Evicted",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "action", "reason", "text", "event_reason"), CASES, ids=[c[0] for c in CASES]
)
def test_an_eviction_reason_renders_every_field_it_has(
    case: str, action: str, reason: EvictionReason, text: str, event_reason: str
) -> None:
    eviction = Evict(pod="ns/a-0", uid="u", node="n1", reason=reason)
    assert render_eviction(eviction) == text
    assert eviction_event_reason(eviction) == event_reason
    assert eviction.action == action
