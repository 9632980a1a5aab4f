"""Victim selection: pods another plugin protects leave the candidate list before any plugin counts its
budget (what a queue holds beyond deserved, a gang's members beyond minMember, a job's drf share),
whichever tier protects them and whichever tier counts the budget.

In every case the protected pods are the youngest, so they come first in victim order: a plugin that
counted its budget over them would spend it all on pods that may never be evicted."""

from __future__ import annotations

import pytest

from tests.builders import node, pod, podgroup, priority_class, queue
from tests.sim._eviction_helpers import Staged, eviction_config, job, volcano_two_tier_config

PROTECTIONS = {
    "preemptable-false": {"annotations": {"scheduling.volsched.io/preemptable": "false"}},
    "system-critical": {"priority_class": "system-cluster-critical"},
}


def _holder(
    *, name: str, q: str, min_member: int, regular: int, protected: int, protection: str
) -> list[dict]:
    """A running job on n1: ``regular`` old pods, then ``protected`` younger ones."""
    objs: list[dict] = [podgroup(name, ns="ns-a", queue=q, min_member=min_member, phase="Running")]
    for i in range(regular + protected):
        kwargs = PROTECTIONS[protection] if i >= regular else {}
        objs.append(
            pod(
                f"{name}-{i}",
                ns="ns-a",
                group=name,
                node="n1",
                created=f"2026-01-01T00:00:{i:02d}Z",
                **kwargs,
            )
        )
    return objs


@pytest.mark.parametrize("layout", ["one-tier", "volcano-two-tier"])
@pytest.mark.parametrize("protection", sorted(PROTECTIONS))
@pytest.mark.parametrize(
    ("action", "min_member", "regular", "protected", "expect_evicted"),
    [
        # qa holds 8 of 8, deserves 4 once qb asks: proportion's budget is 4 pods, all regular ones.
        pytest.param("reclaim", 1, 4, 4, 4, id="reclaim-queue-budget"),
        # the gang may lose 2 (minMember 6 of 8): gang's budget is the 2 regular pods.
        pytest.param("reclaim", 6, 2, 6, 2, id="reclaim-gang-budget"),
        # inside one queue: the low-priority gang may lose 2 of 4 (minMember 2).
        pytest.param("preempt", 2, 2, 2, 2, id="preempt-gang-budget"),
    ],
)
def test_protected_pods_do_not_use_up_the_victim_budget(
    layout, protection, action, min_member, regular, protected, expect_evicted
):
    size = regular + protected
    # qa lets its jobs use the protection (a queue must allow the annotation, and a system-critical
    # class outside kube-system: tests/sim/test_tenancy.py)
    before = [
        node("n1", cpu=str(size)),
        priority_class("high", 1000),
        queue("qa", allowNotPreemptable=True, priorityClasses=["system-cluster-critical", "high"]),
    ]
    before += _holder(
        name="a", q="qa", min_member=min_member, regular=regular, protected=protected, protection=protection
    )
    if action == "reclaim":
        after = [queue("qb"), *job("b", ns="ns-b", queue="qb", size=size // 2)]
    else:
        after = job("b", ns="ns-b", queue="qa", size=regular, priority_class="high")
    conf = eviction_config() if layout == "one-tier" else volcano_two_tier_config()
    s = Staged(before, after, conf)
    evicted = s.evicted("ns-a/")
    assert sorted(evicted) == [f"ns-a/a-{i}" for i in range(expect_evicted)]  # only regular pods
    assert {e["action"] for e in s.data["evictions"]} == {action}
    assert s.running("ns-b/") == expect_evicted
    assert s.settled() and s.stays_settled()
