"""Closing a session renders queue and namespace status from every job: pods standing alone (no
PodGroup, no owner, each its own job) add what they hold to their queue and namespace, in the jobs'
order to the last bit, and a pending one adds what it asks to its queue's request."""

from __future__ import annotations

import numpy as np
import pytest

from tests.builders import node, pod
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import close_session, open_session
from volsched.model.cluster import sum_rows

# Amounts whose sum depends on the order they are added in (0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1).
CPUS = ["100m", "200m", "300m", "700m", "100m", "1100m"]


def test_lone_pods_add_what_they_hold_to_their_queue_and_namespace_in_order() -> None:
    state = ClusterState()
    state.apply(node("n1", cpu="64"))
    for i, cpu in enumerate(CPUS):
        state.apply(pod(f"p{i}", ns=f"ns{i % 2}", cpu=cpu, node="n1", phase="Running"))
    state.apply(pod("waiting", ns="ns1", cpu="3", node=None))
    session = open_session(state.snapshot(now=1.0), load_config())
    result = close_session(session)
    cpu = session.space.index("cpu")
    loop: dict[str, float] = {"ns0": 0.0, "ns1": 0.0}
    held = asked = 0.0
    for job in session.jobs.values():  # the jobs' order, one at a time
        loop[job.namespace] += float(job.allocated[cpu])
        held += float(job.allocated[cpu])
        asked += float(job.total_request()[cpu])
    assert result.namespaces["ns0"]["allocated"]["cpu"] == loop["ns0"]
    assert result.namespaces["ns1"]["allocated"]["cpu"] == loop["ns1"]
    assert result.queues["default"].allocated["cpu"] == held
    assert result.queues["default"].request["cpu"] == asked
    assert asked == pytest.approx(held + 3.0)
    assert result.waiting == 1
    assert result.podgroups == {}
    assert result.queues["default"].podgroups == {}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adding_rows_gives_a_loops_sums_to_the_last_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.random((500, 3)) * 10.0
    rows = rng.integers(0, 4, 500)
    out = sum_rows(values, rows, 4)
    loop = np.zeros((4, 3))
    for k in range(500):
        loop[rows[k]] = loop[rows[k]] + values[k]
    assert out.tobytes() == loop.tobytes()
