"""preempt in a queue at its limit: idle capacity the queue may not take is no option, so a
higher-priority job takes room from lower-priority jobs of its own queue instead of starving."""

from __future__ import annotations

import pytest

from tests.builders import node, priority_class, queue
from tests.sim._eviction_helpers import Staged, eviction_config, job

PRIORITIES = [priority_class("high", 1000), priority_class("low", 10)]


@pytest.mark.parametrize(
    ("queues", "b_size", "b_min", "expect_a", "expect_b", "a_min"),
    [
        pytest.param([queue("q", capability={"cpu": "4"})], 2, 1, 2, 2, 1, id="at-capability"),
        pytest.param([queue("q", capability={"cpu": "4"})], 2, 2, 2, 2, 1, id="at-capability-gang"),
        pytest.param(
            [queue("q", capability={"cpu": "4"})], 6, 1, 2, 2, 2, id="takes-all-but-the-victims-min-member"
        ),
        # a of minMember 1 is no gang: all of it may go (before, gang kept one pod of it)
        pytest.param(
            [queue("q", capability={"cpu": "4"})], 6, 1, 0, 4, 1, id="takes-all-of-a-job-of-min-member-1"
        ),
        # the other queue's guarantee keeps q's realCapability (so its deserved) at 4: the idle 4 are not q's
        pytest.param(
            [queue("q"), queue("held", guarantee={"cpu": "4"})],
            2,
            1,
            2,
            2,
            1,
            id="at-deserved-idle-held-for-a-guarantee",
        ),
    ],
)
def test_a_higher_priority_job_in_a_capped_queue_preempts_instead_of_starving(
    queues, b_size, b_min, expect_a, expect_b, a_min
):
    before = [node("n1", cpu="8"), *PRIORITIES, *queues]
    before += job("a", ns="ns", queue="q", size=4, min_member=a_min, priority_class="low")
    after = job("b", ns="ns", queue="q", size=b_size, min_member=b_min, priority_class="high")
    s = Staged(before, after, eviction_config())
    assert s.running("ns/a-", before=True) == 4
    assert (s.running("ns/a-"), s.running("ns/b-")) == (expect_a, expect_b)
    assert {e["action"] for e in s.data["evictions"]} == {"preempt"}
    assert len(s.evicted("ns/a-")) == 4 - expect_a
    assert s.held("q") <= 4
    assert s.settled() and s.stays_settled()
