"""Volcano's usual two-tier layout (priority, gang, conformance first; proportion, drf in the second tier)
under reclaim and preempt: every plugin that answers must accept a victim, whatever its tier, so
proportion's budget (what a queue holds beyond its deserved share) still bounds reclaim, shares end as
deserved, and evictions stop instead of going back and forth between the queues."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, queue
from tests.sim._eviction_helpers import Staged, job, volcano_two_tier_config
from volsched.simulate import Document, to_json

Obj = dict[str, Any]


def _staged(actions: str) -> Staged:
    """Three 4-cpu nodes, three equal queues (4 cpu deserved each). b settles on n0 at its share, a
    borrows the rest; then c asks for its share. The node freeing the least comes first and, among
    equals, n0: holding only b's pods, which a victim rule without proportion's budget would take."""
    nodes: list[Obj] = [node(f"n{i}", cpu="4") for i in range(3)]
    start = Staged(
        [*nodes, queue("a"), queue("b"), queue("c"), *job("hold", ns="ns-b", queue="b", size=4)],
        job("lend", ns="ns-a", queue="a", size=12),
        volcano_two_tier_config(actions),
        sessions=10,
    )
    start.first_data = start.data  # "before": a lends, c has not asked yet
    start.sim.add([Document(f"c {i}", o) for i, o in enumerate(job("want", ns="ns-c", queue="c", size=8))])
    start.second = start.sim.run(30)
    start.data = to_json(start.second)
    return start


@pytest.mark.parametrize(
    "actions",
    ["enqueue, allocate, reclaim, backfill", "enqueue, allocate, reclaim, preempt, backfill"],
)
def test_two_tier_layout_takes_back_only_what_is_beyond_deserved_and_settles(actions: str) -> None:
    staged = _staged(actions)
    assert staged.running("ns-a/", before=True) == 8  # a borrowed c's idle share
    assert staged.running("ns-b/", before=True) == 4

    # c took back what a held beyond its deserved share, and only that: b, at its share, lost nothing
    for q in "abc":
        assert staged.deserved(q) == pytest.approx(4)
        assert staged.held(q) == pytest.approx(4)
    assert staged.evicted("ns-b/") == []
    assert staged.evicted("ns-c/") == []
    assert len(staged.evicted("ns-a/")) == 4
    assert staged.settled()
    # and stays: ten further sessions decide nothing (no eviction ping-pong)
    assert staged.stays_settled(10)
