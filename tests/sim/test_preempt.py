"""preempt: inside a queue, higher priority first, then drf evens job shares and weighted namespace
shares, with a strict margin so that equals never trade pods back and forth."""

from __future__ import annotations

import pytest

from tests.builders import node, priority_class, queue, quota
from tests.sim._eviction_helpers import Staged, eviction_config, job
from volsched.framework.registry import load_config

PRIORITIES = [priority_class("high", 1000), priority_class("low", 10)]


def _base() -> list[dict]:
    return [node("n1", cpu="8"), queue("q"), *PRIORITIES]


@pytest.mark.parametrize(
    ("a_priority", "a_min", "b_priority", "b_size", "expect_a", "expect_b"),
    [
        pytest.param("low", 1, "high", 4, 4, 4, id="higher-priority-takes-what-it-needs"),
        pytest.param("low", 3, "high", 8, 3, 5, id="higher-priority-stops-at-the-victims-min-member"),
        pytest.param("high", 1, "low", 4, 8, 0, id="lower-priority-never-preempts"),
    ],
)
def test_preempt_by_priority_within_a_queue(a_priority, a_min, b_priority, b_size, expect_a, expect_b):
    before = [*_base(), *job("a", ns="ns", queue="q", size=8, min_member=a_min, priority_class=a_priority)]
    after = job("b", ns="ns", queue="q", size=b_size, priority_class=b_priority)
    s = Staged(before, after, eviction_config())
    assert (s.running("ns/a-"), s.running("ns/b-")) == (expect_a, expect_b)
    assert {e["action"] for e in s.data["evictions"]} <= {"preempt"}
    assert len(s.evicted("ns/a-")) == expect_b
    assert s.settled() and s.stays_settled()


@pytest.mark.parametrize(
    ("b_size", "expect_a", "expect_b"),
    [
        pytest.param(8, 4, 4, id="equal-jobs-split-evenly"),
        pytest.param(3, 5, 3, id="small-job-takes-what-it-asks"),
        pytest.param(1, 7, 1, id="one-pod"),
    ],
)
def test_equal_priority_jobs_even_out_by_share_and_never_trade_pods(b_size, expect_a, expect_b):
    before = [*_base(), *job("a", ns="ns", queue="q", size=8)]
    after = job("b", ns="ns", queue="q", size=b_size)
    s = Staged(before, after, eviction_config())
    assert (s.running("ns/a-"), s.running("ns/b-")) == (expect_a, expect_b)
    assert s.evicted("ns/b-") == []  # the newcomer never loses a pod back
    assert s.settled() and s.stays_settled(30)


@pytest.mark.parametrize(
    ("weights", "expect_a", "expect_b"),
    [
        pytest.param((1, 1), 4, 4, id="equal-weights"),
        pytest.param((1, 3), 2, 6, id="weight-3-gets-three-quarters"),
        pytest.param((3, 1), 6, 2, id="weight-3-keeps-three-quarters"),
    ],
)
def test_namespace_weights_are_evened_by_preempt(weights, expect_a, expect_b):
    before = [*_base(), quota("ns-a", weights[0]), quota("ns-b", weights[1])]
    before += job("a", ns="ns-a", queue="q", size=8)
    after = job("b", ns="ns-b", queue="q", size=8)
    s = Staged(before, after, eviction_config())
    assert (s.running("ns-a/"), s.running("ns-b/")) == (expect_a, expect_b)
    assert s.evicted("ns-b/") == []
    assert s.settled() and s.stays_settled(30)


@pytest.mark.parametrize(
    ("victim_kwargs", "preemptor_kwargs"),
    [
        pytest.param({"preemptable": False}, {}, id="victims-annotated-not-preemptable"),
        pytest.param({}, {"preemption_policy": "Never"}, id="preemptor-with-preemption-policy-never"),
    ],
)
def test_protected_pods_and_never_policy_cause_no_preemption(victim_kwargs, preemptor_kwargs):
    # The queue lets its jobs declare themselves not preemptable (tests/sim/test_tenancy.py: one that
    # does not, and the annotation protects nothing).
    before = [
        node("n1", cpu="8"),
        queue("q", allowNotPreemptable=True),
        *PRIORITIES,
        *job("a", ns="ns", queue="q", size=8, priority_class="low", **victim_kwargs),
    ]
    after = job("b", ns="ns", queue="q", size=4, priority_class="high", **preemptor_kwargs)
    s = Staged(before, after, eviction_config())
    assert s.evicted() == []
    assert (s.running("ns/a-"), s.running("ns/b-")) == (8, 0)


def test_a_preemptor_whose_priority_class_says_never_preempts_nobody():
    # The defect (the simulator): the apiserver's Priority admission gives a pod its class's
    # preemptionPolicy; the simulator read the pod's own only, and evicted four pods for one whose
    # class said Never.
    never = {**priority_class("urgent-no-preempt", 100), "preemptionPolicy": "Never"}
    before = [node("n1", cpu="8"), queue("q"), *PRIORITIES, never]
    before += job("a", ns="ns", queue="q", size=8, priority_class="low")
    after = job("b", ns="ns", queue="q", size=4, priority_class="urgent-no-preempt")
    after[1]["spec"]["template"]["spec"]["priorityClassName"] = "urgent-no-preempt"  # the pods' own class
    s = Staged(before, after, eviction_config())
    assert s.evicted() == []
    assert (s.running("ns/a-"), s.running("ns/b-")) == (8, 0)


def test_preempt_never_takes_from_another_queue():
    conf = load_config(
        text=(
            "actions: 'enqueue, allocate, preempt, backfill'\n"
            "tiers:\n"
            "- plugins: [{name: priority, enablePreemptable: false}, {name: gang}, {name: conformance},"
            " {name: drf}, {name: overcommit}, {name: proportion}]\n"
            "- plugins: [{name: predicates}, {name: nodeorder}, {name: binpack}]\n"
        )
    )
    before = [
        node("n1", cpu="8"),
        queue("qa"),
        *PRIORITIES,
        *job("a", ns="ns", queue="qa", size=8, priority_class="low"),
    ]
    after = [queue("qb"), *job("b", ns="ns", queue="qb", size=4, priority_class="high")]
    s = Staged(before, after, conf)
    assert s.evicted() == []
    assert (s.running("ns/a-"), s.running("ns/b-")) == (8, 0)


def test_each_preemption_names_the_beneficiary_and_becomes_an_event():
    before = [*_base(), *job("a", ns="ns", queue="q", size=8, priority_class="low")]
    after = job("b", ns="ns", queue="q", size=1, priority_class="high")
    s = Staged(before, after, eviction_config())
    [eviction] = s.data["evictions"]
    assert eviction["action"] == "preempt"
    assert "for ns/b-0 (job ns/b, priority 1000" in eviction["reason"]
    assert "priority 10" in eviction["reason"] and "holds cpu 8 -> cpu 7" in eviction["reason"]
    events = [e for r in s.history for e in r.events if e.reason == "Preempted"]
    assert [(e.object, e.message) for e in events] == [(f"Pod {eviction['pod']}", eviction["reason"])]
