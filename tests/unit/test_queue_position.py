"""Where a waiting job stands in its queue: 1 is next, in the session's job order (priority first here),
among the jobs of that queue waiting to start (pods alone count, running jobs do not); each queue on its
own."""

from __future__ import annotations

from tests.builders import node, pod, podgroup, priority_class, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config, make_actions
from volsched.framework.runner import close_session, open_session


def test_positions_follow_the_job_order_per_queue() -> None:
    objects = [
        node("n1", cpu="1"),
        queue("q"),
        queue("other"),
        priority_class("high", 100),
        pod("busy", cpu="1", node="n1", queue="q"),
        podgroup("low", queue="q", phase="Inqueue", min_member=1),
        pod("low-0", group="low", created="2025-01-01T00:00:00Z"),
        podgroup("high", queue="q", phase="Inqueue", min_member=1, priority_class="high"),
        pod("high-0", group="high", priority_class="high", created="2025-01-01T00:00:03Z"),
        pod("alone", queue="q", priority_class="high", created="2025-01-01T00:00:01Z"),  # no status, in line
        podgroup("elsewhere", queue="other", phase="Inqueue", min_member=1),
        pod("elsewhere-0", group="elsewhere"),
    ]
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    config = load_config(
        text='actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
    )
    session = open_session(state.snapshot(now=1.0), config)
    for action in make_actions(config):
        action.execute(session)
    result = close_session(session)
    positions = {key: s.queue_position for key, s in result.podgroups.items()}
    assert positions == {"default/high": 1, "default/low": 3, "default/elsewhere": 1}
