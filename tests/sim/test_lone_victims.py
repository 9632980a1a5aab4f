"""A job that is no gang (minMember 1: a lone pod, a controller owner's pods, a PodGroup of minMember 1) is
a victim of reclaim and preempt like any pod, down to none of it: with ``gang`` in the tiers it was never
one (gang's rule kept minMember pods, which is all of a one-pod job), so a queue holding twice its share in
lone pods kept it. A gang of two or more keeps its minMember: it is never evicted whole (docs/starvation.md)."""

from __future__ import annotations

import pytest

from tests.builders import batch_job, node, priority_class, queue
from tests.sim._eviction_helpers import Staged, eviction_config, job, volcano_two_tier_config

Obj = dict[str, object]
PRIORITIES = [priority_class("high", 1000), priority_class("low", 10)]
CONFIGS = [
    pytest.param(eviction_config, id="example-config"),
    pytest.param(volcano_two_tier_config, id="volcano-two-tiers"),
]


def lone(name: str, count: int, *, ns: str, queue: str, priority: str | None = None) -> list[Obj]:
    """``count`` lone pods: a batch/v1 Job of one pod each, naming no PodGroup (the simulator makes an
    evicted pod again, as the Job controller does)."""
    out: list[Obj] = []
    for i in range(count):
        j = batch_job(f"{name}-{i}", ns=ns, annotations={"scheduling.volsched.io/queue-name": queue})
        if priority:
            j["spec"]["template"]["spec"]["priorityClassName"] = priority  # type: ignore[index]
        out.append(j)
    return out


def one_pod_groups(name: str, count: int, *, ns: str, queue: str) -> list[Obj]:
    """``count`` PodGroups of minMember 1, one pod each."""
    return [o for i in range(count) for o in job(f"{name}-{i}", ns=ns, queue=queue, size=1)]


@pytest.mark.parametrize("conf", CONFIGS)
@pytest.mark.parametrize("make", [lone, one_pod_groups], ids=["lone-pods", "one-pod-podgroups"])
def test_a_queue_holding_twice_its_share_in_lone_pods_gives_it_back(conf, make) -> None:
    before = [node("n1", cpu="8"), queue("qa"), *make("a", 8, ns="ns-a", queue="qa")]
    after = [queue("qb"), *make("b", 4, ns="ns-b", queue="qb")]
    s = Staged(before, after, conf())
    assert s.running("ns-a/", before=True) == 8  # qa was lent the whole cluster
    assert (s.running("ns-a/"), s.running("ns-b/")) == (4, 4)
    assert len(s.evicted("ns-a/")) == 4 and s.evicted("ns-b/") == []
    assert {e["action"] for e in s.data["evictions"]} == {"reclaim"}
    assert s.settled() and s.stays_settled(30)


@pytest.mark.parametrize("conf", CONFIGS)
def test_a_lone_pod_of_higher_priority_preempts_lone_pods_of_lower(conf) -> None:
    before = [node("n1", cpu="8"), queue("q"), *PRIORITIES, *lone("a", 8, ns="ns", queue="q", priority="low")]
    after = lone("b", 3, ns="ns", queue="q", priority="high")
    s = Staged(before, after, conf())
    assert (s.running("ns/a-"), s.running("ns/b-")) == (5, 3)
    assert len(s.evicted("ns/a-")) == 3 and s.evicted("ns/b-") == []
    assert {e["action"] for e in s.data["evictions"]} == {"preempt"}
    assert s.settled() and s.stays_settled(30)


@pytest.mark.parametrize("conf", CONFIGS)
def test_lone_pods_of_equal_priority_do_not_trade_places(conf) -> None:
    # Two queues at their deserved share in lone pods, a third lone pod each waiting: nobody moves.
    before = [node("n1", cpu="8"), queue("qa"), queue("qb")]
    before += lone("a", 4, ns="ns-a", queue="qa") + lone("b", 4, ns="ns-b", queue="qb")
    after = lone("a2", 1, ns="ns-a", queue="qa") + lone("b2", 1, ns="ns-b", queue="qb")
    s = Staged(before, after, conf())
    assert s.evicted() == []
    assert (s.running("ns-a/"), s.running("ns-b/")) == (4, 4)


@pytest.mark.parametrize("conf", CONFIGS)
def test_a_gang_at_its_min_member_is_never_evicted_whole(conf) -> None:
    # qa holds twice its share in two gangs at their minMember 4: neither is cut below 4, nor evicted
    # whole (the decision in docs/starvation.md#who-may-be-a-victim), so qb waits.
    before = [node("n1", cpu="8"), queue("qa")]
    before += job("g1", ns="ns-a", queue="qa", size=4, min_member=4)
    before += job("g2", ns="ns-a", queue="qa", size=4, min_member=4)
    after = [queue("qb"), *lone("b", 4, ns="ns-b", queue="qb")]
    s = Staged(before, after, conf())
    assert s.evicted() == []
    assert (s.running("ns-a/"), s.running("ns-b/")) == (8, 0)
