"""What a queue holds (``Session.queue_allocated``, what reclaim's reasons say of the victim's queue and
its own): summed once a session, then kept current by every status change; it must say what a fresh
sum over the queue's jobs says after any allocation, eviction, or undo of either."""

from __future__ import annotations

import numpy as np
import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import EvictionReason
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.resources import Vector


def _session() -> Session:
    state = ClusterState()
    for obj in [
        node("n1", cpu="8"),
        node("n2", cpu="8"),
        queue("a"),
        queue("b"),
        podgroup("run-a", queue="a", min_member=1, phase="Running"),
        podgroup("run-b", queue="b", min_member=1, phase="Running"),
        podgroup("new-a", queue="a", min_member=1, phase="Inqueue"),
        pod("a-0", group="run-a", cpu="0.1", node="n1"),
        pod("a-1", group="run-a", cpu="0.2", node="n2"),
        pod("b-0", group="run-b", cpu="1.5", node="n1"),
        pod("new-0", group="new-a", cpu="0.3"),
    ]:
        state.apply(obj)
    return open_session(state.snapshot(now=5.0), load_config(), may_evict=True)


def _fresh(session: Session, name: str) -> Vector:
    out = session.space.zeros()
    for job in session.jobs.values():
        if job.queue == name:
            out += job.allocated
    return out


def _cpu(session: Session, held: Vector) -> float:
    return float(held[session.space.names.index("cpu")])


STEPS = [
    pytest.param([], {"a": 0.3, "b": 1.5}, id="as-the-snapshot-has-it"),
    pytest.param([("evict", "default/a-0")], {"a": 0.2, "b": 1.5}, id="an-eviction-gives-it-back"),
    pytest.param([("allocate", "default/new-0")], {"a": 0.6, "b": 1.5}, id="an-allocation-adds"),
    pytest.param([("pipeline", "default/new-0")], {"a": 0.3, "b": 1.5}, id="a-pipelined-task-holds-nothing-yet"),
    pytest.param(
        [("evict", "default/b-0"), ("evict", "default/a-1"), ("allocate", "default/new-0"), ("discard", "")],
        {"a": 0.3, "b": 1.5},
        id="a-discarded-statement-gives-it-all-back",
    ),
    pytest.param(
        [("evict", "default/b-0"), ("commit", ""), ("evict", "default/a-1"), ("discard", "")],
        {"a": 0.3, "b": 0.0},
        id="only-the-committed-eviction-stays",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("steps", "holds"), STEPS)
@pytest.mark.parametrize("asked_first", [True, False], ids=["asked-before", "asked-after"])
def test_a_queue_holds_what_a_fresh_sum_of_its_jobs_says(
    steps: list[tuple[str, str]], holds: dict[str, float], asked_first: bool
) -> None:
    session = _session()
    tasks = {k: t for job in session.jobs.values() for k, t in job.tasks.items()}
    if asked_first:  # the sum is made before the changes and kept current through them
        assert _cpu(session, session.queue_allocated("a")) == pytest.approx(0.3)
    statement = Statement(session)
    for op, key in steps:
        if op == "evict":
            statement.evict(tasks[key], reason=EvictionReason(action="test"))
        elif op in ("allocate", "pipeline"):
            getattr(statement, op)(tasks[key], session.nodes.index["n2"])
        elif op == "discard":
            statement.discard()
        else:
            statement.commit()
    for name, cpu in holds.items():
        held = session.queue_allocated(name)
        assert _cpu(session, held) == pytest.approx(cpu)
        assert np.allclose(held, _fresh(session, name), rtol=0, atol=1e-12)
    assert not session.queue_allocated("nobody").any()
    session.queue_allocated("a")[:] = 99.0  # a copy: the caller's to change
    assert _cpu(session, session.queue_allocated("a")) == pytest.approx(holds["a"])
