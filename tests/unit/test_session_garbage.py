"""A session leaves no reference cycle behind: once ``run_session`` returns, the session, its plugins and
the callbacks they registered are freed at once (reference counts), not left for the cyclic collector,
whose young collections would otherwise walk every session's objects again (a replay runs a session at
nearly every arrival and end). The result stays whole."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.builders import gang, node, pod, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import SessionResult
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


CONFIGS = [pytest.param(None, id="default-config"), pytest.param(TIERS, id="reclaim-preempt-tiers")]


def _alive(kind: type) -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, kind))


def _session(objs: list[dict[str, Any]], config: str | None) -> SessionResult:
    """One session over a cache of ``objs``, under ``config`` (None: the default)."""
    state = ClusterState()
    for obj in objs:
        state.apply(obj)
    return run_session(state.snapshot(now=1.0), load_config(text=config) if config else load_config())


@pytest.mark.parametrize("config", CONFIGS)
def test_no_session_outlives_its_run(no_collector: None, config: str | None) -> None:
    objs = [
        node("n1", cpu="4"),
        queue("q"),
        *gang("g", size=2, phase="Pending"),
        pod("lone", ns="ns", cpu="1"),
        pod("too-big", ns="ns", cpu="64"),
    ]
    before = _alive(Session)
    result = _session(objs, config)
    assert _alive(Session) == before
    assert {b.pod for b in result.binds} == {"ns/g-0", "ns/g-1", "ns/lone"}
    assert "Pod ns/too-big" in result.rejections
    assert result.podgroups["ns/g"].scheduled == 2


@pytest.mark.parametrize("config", CONFIGS)
def test_no_queue_of_the_fair_share_outlives_its_session(no_collector: None, config: str | None) -> None:
    # A tree of queues (root, a parent, two leaves): each queue's path, root first, ends with the queue.
    objs = [
        node("n1", cpu="4"),
        queue("org"),
        queue("q", parent="org"),
        queue("b", parent="org"),
        *gang("g", size=2, phase="Pending"),  # in queue q
    ]
    before = _alive(QueueAttr)
    result = _session(objs, config)
    assert _alive(QueueAttr) == before
    assert {b.pod for b in result.binds} == {"ns/g-0", "ns/g-1"}
    assert result.queues["org"].parent is None and result.queues["q"].parent == "org"
