"""A plugin that says it does not read the clock (``reads_clock = False``) decides the same at any time:
the operator's IdleSkip relies on it to run no session for time alone where no configured plugin reads
the clock. Every registered plugin that says so is configured (the list is read from the registry, so a
new plugin that says so is held to it too), with every action that decides only for pending pods, on a
backlog with priorities, gangs, queue capabilities and a PodDisruptionBudget; the same cache at very
different times gives the same binds, evictions, admissions and refusals; and on a full cluster where
preempt and reclaim evict."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pdb, pod, priority_class, queue
from tests.sim.test_backlog_decisions import backlog
from volsched.cache.state import ClusterState
from volsched.framework.registry import ACTIONS, PLUGINS, load_builtins, load_config
from volsched.framework.runner import run_session

Obj = dict[str, Any]


def clock_free_config() -> str:
    load_builtins()
    plugins = [name for name, cls in PLUGINS.items() if not getattr(cls, "reads_clock", True)]
    actions = [name for name, cls in ACTIONS.items() if getattr(cls, "pending_only", False)]
    assert {"proportion", "drf", "pdb"} <= set(plugins) and "preempt" in actions
    listed = ", ".join(f"{{name: {p}}}" for p in plugins)
    return f'actions: "{", ".join(actions)}"\ntiers:\n- plugins: [{listed}]\n'


def decisions(objects: list[Obj], *, now: float) -> list[Any]:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    result = run_session(state.snapshot(now=now), load_config(text=clock_free_config()))
    return [
        [(b.pod, b.node) for b in result.binds],
        [e.pod for e in result.evictions],
        [(a.job, a.phase) for a in result.admits],
        sorted((key, [s.render() for s in statuses]) for key, statuses in result.rejections.items()),
    ]


def contention() -> list[Obj]:
    """Queue a fills three nodes with low-priority pods (ns1's kept by a budget); high-priority pods of a
    preempt, and pods of queue b reclaim a's share beyond deserved."""
    objs: list[Obj] = [priority_class("low", 1), priority_class("high", 100), queue("a"), queue("b")]
    objs += [node(f"n{i}", cpu="4") for i in range(3)]
    objs += [
        pod(
            f"r-{i}",
            ns=f"ns{1 + i % 2}",
            queue="a",
            node=f"n{i % 3}",
            priority_class="low",
            owner="ReplicaSet/r",
        )
        for i in range(12)
    ]
    objs += [pod(f"hi-{i}", ns="ns2", queue="a", priority_class="high") for i in range(2)]
    objs += [pod(f"b-{i}", ns="ns3", queue="b") for i in range(4)]
    return [*objs, pdb("keep", {}, ns="ns1", maxUnavailable=0)]


def test_plugins_that_read_no_clock_evict_the_same_at_any_time() -> None:
    early = decisions(contention(), now=1.0)
    assert early[1]  # something is evicted
    for now in (1_767_225_600.0, 4_102_444_800.0):
        assert decisions(contention(), now=now) == early


@pytest.mark.parametrize(
    "seed", [pytest.param(1, id="small-cluster"), pytest.param(3, id="tight-capabilities")]
)
def test_plugins_that_read_no_clock_decide_the_same_at_any_time(seed: int) -> None:
    objects = [*backlog(seed, nodes=8, jobs=120), pdb("keep", {}, ns="ns0", maxUnavailable=0)]
    early = decisions(objects, now=1.0)
    assert early[0]  # something is decided
    for now in (1_767_225_600.0, 4_102_444_800.0):  # 2026-01-01 (the pods' creation), 2100-01-01
        assert decisions(objects, now=now) == early
