"""reclaim: queues below their deserved share take back what others hold beyond theirs, and no more."""

from __future__ import annotations

import pytest

from tests.builders import node, podgroup, pods, queue
from tests.sim._eviction_helpers import Staged, eviction_config, job


def _cluster(cpu: str = "8") -> list[dict]:
    return [node("n1", cpu=cpu)]


@pytest.mark.parametrize(
    ("weights", "b_size", "expect_a", "expect_b"),
    [
        pytest.param((1, 1), 8, 4, 4, id="equal-weights-half-each"),
        pytest.param((1, 3), 8, 2, 6, id="weight-3-takes-three-quarters"),
        pytest.param((1, 1), 2, 6, 2, id="asks-less-than-deserved-takes-only-what-it-asks"),
    ],
)
def test_a_queue_reclaims_exactly_its_deserved_share_and_no_more(weights, b_size, expect_a, expect_b):
    before = [*_cluster(), queue("qa", weight=weights[0]), *job("a", ns="ns-a", queue="qa", size=8)]
    after = [queue("qb", weight=weights[1]), *job("b", ns="ns-b", queue="qb", size=b_size)]
    s = Staged(before, after, eviction_config())
    assert s.running("ns-a/", before=True) == 8  # qa filled the cluster first
    assert (s.running("ns-a/"), s.running("ns-b/")) == (expect_a, expect_b)
    assert len(s.evicted("ns-a/")) == expect_b
    assert s.held("qb") <= s.deserved("qb")
    assert s.settled() and s.stays_settled()


@pytest.mark.parametrize(
    ("a_size", "b_running_size", "b_extra", "expect_a", "expect_b"),
    [
        # qa holds exactly its deserved 4; qb (at its deserved 4) wants 4 more: nothing moves.
        pytest.param(4, 4, 4, 4, 4, id="victim-queue-at-deserved"),
        # qa holds 2 and asks 5: it is under its deserved and takes 2 back from qb, which keeps 4.
        pytest.param(5, 6, 0, 4, 4, id="victim-queue-under-deserved-takes-back"),
    ],
)
def test_a_queue_at_or_under_its_deserved_share_never_loses_pods(
    a_size, b_running_size, b_extra, expect_a, expect_b
):
    before = [
        *_cluster(),
        queue("qa"),
        queue("qb"),
        *job("b", ns="ns-b", queue="qb", size=b_running_size),
        *job("a", ns="ns-a", queue="qa", size=min(a_size, 8 - b_running_size)),
    ]
    after = (
        [*job("a2", ns="ns-a", queue="qa", size=a_size - min(a_size, 8 - b_running_size))]
        if a_size > 8 - b_running_size
        else []
    )
    after += job("b2", ns="ns-b", queue="qb", size=b_extra) if b_extra else []
    s = Staged(before, after, eviction_config())
    assert s.evicted("ns-a/") == []
    reclaimed_from_b = [
        e for e in s.data["evictions"] if e["action"] == "reclaim" and e["pod"].startswith("ns-b/")
    ]
    assert len(reclaimed_from_b) == max(0, b_running_size - 4)  # only what qb held beyond its deserved 4
    assert (s.running("ns-a/"), s.running("ns-b/")) == (expect_a, expect_b)
    assert s.settled() and s.stays_settled()


def test_a_queue_at_its_deserved_share_keeps_its_pods_even_on_the_first_node_tried():
    # qa (4 of 12 cpu, its deserved 4) sits alone on n1, the node reclaim looks at first; qb holds 8
    # on n2. When qc arrives (deserved 4 each), only qb gives back.
    before = [node("n1", cpu="4"), node("n2", cpu="8"), queue("qa"), queue("qb")]
    before += [
        podgroup("a", ns="ns-a", queue="qa", phase="Running"),
        *pods("a", 4, ns="ns-a", group="a", node="n1"),
    ]
    before += [
        podgroup("b", ns="ns-b", queue="qb", phase="Running"),
        *pods("b", 8, ns="ns-b", group="b", node="n2"),
    ]
    after = [queue("qc"), *job("c", ns="ns-c", queue="qc", size=4)]
    s = Staged(before, after, eviction_config())
    assert s.evicted("ns-a/") == []
    assert len(s.evicted("ns-b/")) == 4
    assert (s.running("ns-a/"), s.running("ns-b/"), s.running("ns-c/")) == (4, 4, 4)
    assert s.settled() and s.stays_settled()


def test_a_non_reclaimable_queue_keeps_its_pods():
    before = [*_cluster(), queue("qa", reclaimable=False), *job("a", ns="ns-a", queue="qa", size=8)]
    after = [queue("qb"), *job("b", ns="ns-b", queue="qb", size=4)]
    s = Staged(before, after, eviction_config())
    assert s.evicted() == []
    assert (s.running("ns-a/"), s.running("ns-b/")) == (8, 0)


@pytest.mark.parametrize(
    ("a_min", "b_min", "expect_a", "expect_b"),
    [
        # qa's gang may lose only 2 (8 - minMember 6); qb's gang needs 4 at once: nothing happens.
        pytest.param(6, 4, 8, 0, id="not-enough-spare-members-nothing-evicted"),
        pytest.param(4, 4, 4, 4, id="spare-members-cover-the-gang"),
        # qb's gang of 2 starts; it then grows to its deserved 4, qa never below minMember 4.
        pytest.param(4, 2, 4, 4, id="gang-starts-then-grows"),
    ],
)
def test_gangs_are_never_cut_below_min_member_nor_started_partially(a_min, b_min, expect_a, expect_b):
    before = [*_cluster(), queue("qa"), *job("a", ns="ns-a", queue="qa", size=8, min_member=a_min)]
    after = [queue("qb"), *job("b", ns="ns-b", queue="qb", size=4, min_member=b_min)]
    s = Staged(before, after, eviction_config())
    for result in s.history:
        for key, status in result.podgroups.items():
            if status.scheduled:  # a started gang always has at least minMember pods
                assert status.scheduled >= status.min_member, key
    assert (s.running("ns-a/"), s.running("ns-b/")) == (expect_a, expect_b)
    assert (s.data["podgroups"]["ns-b/b"]["phase"] == "Running") == bool(expect_b)


@pytest.mark.parametrize(
    ("victim_kwargs", "reclaimer_kwargs"),
    [
        pytest.param({"preemptable": False}, {}, id="victims-annotated-not-preemptable"),
        pytest.param({}, {"preemption_policy": "Never"}, id="reclaimer-with-preemption-policy-never"),
    ],
)
def test_protected_pods_and_never_policy_cause_no_eviction(victim_kwargs, reclaimer_kwargs):
    # qa lets its jobs declare themselves not preemptable (tests/sim/test_tenancy.py: a queue that does
    # not, and the annotation protects nothing).
    before = [
        *_cluster(),
        queue("qa", allowNotPreemptable=True),
        *job("a", ns="ns-a", queue="qa", size=8, **victim_kwargs),
    ]
    after = [queue("qb"), *job("b", ns="ns-b", queue="qb", size=4, **reclaimer_kwargs)]
    s = Staged(before, after, eviction_config())
    assert s.evicted() == []
    assert (s.running("ns-a/"), s.running("ns-b/")) == (8, 0)


def test_every_eviction_has_a_reason_with_action_beneficiary_and_numbers_and_an_event():
    before = [*_cluster(), queue("qa"), *job("a", ns="ns-a", queue="qa", size=8)]
    after = [queue("qb"), *job("b", ns="ns-b", queue="qb", size=1)]
    s = Staged(before, after, eviction_config())
    [eviction] = s.data["evictions"]
    assert eviction["action"] == "reclaim"
    assert eviction["node"] == "n1"
    assert "ns-b/b-0" in eviction["reason"] and "queue qb" in eviction["reason"]
    assert "queue qa holds cpu 8" in eviction["reason"] and "-> cpu 7" in eviction["reason"]
    events = [e for r in s.history for e in r.events if e.reason == "Evicted"]
    assert [(e.object, e.message) for e in events] == [(f"Pod {eviction['pod']}", eviction["reason"])]
