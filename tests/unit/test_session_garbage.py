"""A session leaves no reference cycle behind: once ``run_session`` returns, the session, its plugins and
the callbacks they registered are freed at once (reference counts), not left for the cyclic collector,
whose young collections would otherwise walk every session's objects again (a replay runs a session at
nearly every arrival and end). The result stays whole."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import gang, node, pod, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session
from volsched.framework.session import Session
from volsched.plugins.proportion import QueueAttr

TIERS = (Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml").read_text()


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cyclic collector off: what the test finds alive is held by references alone."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _sessions_alive() -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, Session))


@pytest.mark.parametrize(
    "config", [pytest.param(None, id="default-config"), pytest.param(TIERS, id="reclaim-preempt-tiers")]
)
def test_no_session_outlives_its_run(no_collector: None, config: str | None) -> None:
    state = ClusterState()
    for obj in [
        node("n1", cpu="4"),
        queue("q"),
        *gang("g", size=2, phase="Pending"),
        pod("lone", ns="ns", cpu="1"),
        pod("too-big", ns="ns", cpu="64"),
    ]:
        state.apply(obj)
    before = _sessions_alive()
    result = run_session(state.snapshot(now=1.0), load_config(text=config) if config else load_config())
    assert _sessions_alive() == before
    assert {b.pod for b in result.binds} == {"ns/g-0", "ns/g-1", "ns/lone"}
    assert "Pod ns/too-big" in result.rejections
    assert result.podgroups["ns/g"].scheduled == 2


def _queue_attrs_alive() -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, QueueAttr))


@pytest.mark.parametrize(
    "config", [pytest.param(None, id="default-config"), pytest.param(TIERS, id="reclaim-preempt-tiers")]
)
def test_no_queue_of_the_fair_share_outlives_its_session(no_collector: None, config: str | None) -> None:
    # A tree of queues (root, a parent, two leaves): each queue's path, root first, ends with the queue.
    state = ClusterState()
    for obj in [
        node("n1", cpu="4"),
        queue("org"),
        queue("q", parent="org"),
        queue("b", parent="org"),
        *gang("g", size=2, phase="Pending"),  # in queue q
    ]:
        state.apply(obj)
    before = _queue_attrs_alive()
    result = run_session(state.snapshot(now=1.0), load_config(text=config) if config else load_config())
    assert _queue_attrs_alive() == before
    assert {b.pod for b in result.binds} == {"ns/g-0", "ns/g-1"}
    assert result.queues["org"].parent is None and result.queues["q"].parent == "org"
