"""proportion's unit: the remainder of the queues' shares is handed out in whole pods, the smallest pod
of each queue still pending (a pipelined one is not a pod to place)."""

from __future__ import annotations

import pytest

from tests.builders import node, pod, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.plugins.proportion import _pending_requests
from volsched.plugins.shared.queue_config import queue_config


@pytest.mark.parametrize(
    "pipelined, want_unit_cpu",
    [
        ((), 0.5),  # the smallest pending pod
        (("small",), 2.0),  # pipelined: not a pod to place; the next smallest that is pending
        (("small", "mid"), 3.0),
        (("small", "mid", "big"), 0.0),  # none pending: the queue asks for no unit
    ],
)
def test_proportion_hands_the_remainder_out_in_the_smallest_pod_still_pending(
    pipelined: tuple[str, ...], want_unit_cpu: float
) -> None:
    state = ClusterState()
    for obj in [node("n1", cpu="64"), queue("a")]:
        state.apply(obj)
    for name, cpu in (("big", "3"), ("small", "0.5"), ("mid", "2")):
        state.apply(pod(name, cpu=cpu, queue="a"))
    session = Session(state.snapshot(now=5.0), load_config(None), [])
    statement = Statement(session)
    for name in pipelined:
        statement.pipeline(next(iter(session.jobs[f"default/{name}"].tasks.values())), 0)
    config = queue_config(session)
    unit = _pending_requests(session, config.row, len(config.names))[3]
    assert unit[config.row["a"]][session.space.index("cpu")] == want_unit_cpu
