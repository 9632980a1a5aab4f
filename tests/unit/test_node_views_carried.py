"""A session takes over the last session's node views and brings them up to date on the nodes that changed
since: every view it serves must equal a fresh evaluation over all nodes, whatever changed between the
two sessions (pods arriving, bound, finishing, deleted; nodes added, removed, relabelled or not ready;
queues, volumes, avoided nodes; the config reloaded), or a pod would be placed by what the nodes were."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tests.builders import node, pod, queue
from tests.unit.test_cache_snapshot import RandomPort, Walk
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cycle import NullPort, run_cycle
from volsched.framework import nodeviews
from volsched.framework.nodeviews import KEPT_VIEWS, NodeViews
from volsched.framework.registry import load_config
from volsched.model.usage import NodeUsage
from volsched.model.vocabulary import Task
from volsched.plugins import nodeorder, predicates

MOST_REQUESTED = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: predicates}, {name: proportion},
            {name: nodeorder, arguments: {mostrequested.weight: 2, balancedresource.weight: 0}},
            {name: binpack}]
"""
WITH_USAGE = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: gang}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: usage}]
"""
FIELDS = ("predicate", "fits_idle", "fits_future", "score", "ready_score")


class Served:
    """Counts the views sessions took over and checks every view served against a fresh evaluation."""

    def __init__(self) -> None:
        self.taken = 0  # views taken over from the last session
        self.checked = 0  # views served after some were taken, each equal to a fresh one


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    out = Served()
    take, view = NodeViews._take_carried, NodeViews._view

    def taking(self: NodeViews) -> None:
        before = len(self._views)
        take(self)
        out.taken += len(self._views) - before
        self._took = len(self._views) > before  # type: ignore[attr-defined]

    def checked(self: NodeViews, task: Task) -> Any:
        got = view(self, task)
        if getattr(self, "_took", False):
            fresh = self._evaluate(task, self._all_nodes, None)
            for name in FIELDS:
                assert np.array_equal(getattr(got, name), getattr(fresh, name)), (name, task.key)
            out.checked += 1
        return got

    monkeypatch.setattr(NodeViews, "_take_carried", taking)
    monkeypatch.setattr(NodeViews, "_view", checked)
    yield out


@pytest.mark.parametrize("seed", range(8))
def test_views_taken_over_equal_a_fresh_evaluation_through_random_changes(seed: int, served: Served) -> None:
    walk = Walk(seed)
    rng = random.Random(seed)
    configs = [load_config(), load_config(text=MOST_REQUESTED)]
    config = configs[0]
    for i in range(600):
        walk.step()
        if rng.random() < 0.05:  # a config reloaded (a new object, equal or not)
            config = load_config(text=MOST_REQUESTED) if rng.random() < 0.5 else load_config()
        if i % 2 == 0:
            walk.now += 1
            run_cycle(walk.feeder, config, RandomPort(rng), now=walk.now)
    assert served.taken >= 10 and served.checked >= 20


def _cluster() -> tuple[Feeder, list[dict[str, Any]]]:
    feeder = Feeder(ClusterState())
    objs = [node(f"n{i}", cpu="8", labels={"zone": "a" if i % 2 else "b"}) for i in range(8)]
    objs += [pod(f"run{i}", cpu="1", node=f"n{i % 8}") for i in range(12)]
    for obj in objs:
        feeder.apply(obj["kind"], obj)
    return feeder, objs


def _cycle(feeder: Feeder, config: Any, name: str, now: float, **spec: Any) -> Any:
    feeder.apply("Pod", pod(name, cpu="1", **spec))
    return run_cycle(feeder, config, NullPort(), now=now)


def test_each_change_between_two_sessions_leaves_views_equal_to_fresh_ones(served: Served) -> None:
    feeder, _ = _cluster()
    config = load_config()
    now = 1000.0
    for k, change in enumerate(
        [
            lambda: None,  # nothing but the pod arriving
            lambda: feeder.apply("Pod", pod("late", cpu="3", node="n3")),  # a pod bound elsewhere
            lambda: feeder.delete("Pod", pod("run5", node="n5")),  # a pod finished
            lambda: feeder.apply("Queue", queue("default", weight=3)),  # a queue's weight
            lambda: feeder.apply("Node", node("n2", cpu="8", labels={"zone": "c"})),  # a node relabelled
            lambda: feeder.apply("Node", node("n9", cpu="8")),  # a node added
            lambda: feeder.delete("Node", node("n9")),  # and removed
            lambda: None,
        ]
    ):
        change()
        now += 1
        report = _cycle(feeder, config, f"p{k}", now, node_selector={"zone": "a"} if k % 2 else None)
        assert report.result.binds
    assert served.taken >= 3 and served.checked >= 3


def test_a_config_reloaded_or_a_node_changed_makes_the_views_anew(served: Served) -> None:
    feeder, _ = _cluster()
    config = load_config()
    _cycle(feeder, config, "a", 1.0)
    kept = feeder.state._builder.kept
    assert isinstance(kept.get(KEPT_VIEWS), nodeviews.CarriedViews)
    _cycle(feeder, config, "b", 2.0)
    assert served.taken == 1  # the same config, the same nodes
    _cycle(feeder, load_config(), "c", 3.0)  # an equal config, another object: its plugins may differ
    assert served.taken == 1
    _cycle(feeder, config := load_config(), "d", 4.0)
    _cycle(feeder, config, "e", 5.0)
    assert served.taken == 2
    feeder.apply("Node", node("n0", cpu="16"))  # a node's spec: another table
    _cycle(feeder, config, "f", 6.0)
    assert served.taken == 2


def test_views_are_not_carried_for_a_plugin_that_reads_the_clock(served: Served) -> None:
    feeder, _ = _cluster()
    config = load_config(text=WITH_USAGE)
    state = feeder.state
    state.usage = {f"n{i}": NodeUsage(cpu=10.0 * i, memory=10.0, measured_at=1.0) for i in range(8)}
    for k in range(3):
        _cycle(feeder, config, f"p{k}", 2.0 + k)
    assert KEPT_VIEWS not in state._builder.kept
    assert served.taken == 0


@pytest.mark.parametrize("seed", range(4))
def test_masks_and_inverses_kept_with_the_node_table_equal_fresh_ones(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # predicates' per-placement-spec masks and nodeorder's 1/allocatable live in the node table's memo,
    # shared by every session on the same nodes: each must be what a table with nothing kept computes.
    checked = {"masks": 0, "inverse": 0}
    combined = predicates._StaticChecks.combined

    def compared(self: Any, task: Task) -> Any:
        got = combined(self, task)
        blank = copy.copy(self.nodes)
        blank.memo = {}
        assert np.array_equal(got, combined(predicates._StaticChecks(blank), task)), task.key
        assert not got.flags.writeable
        checked["masks"] += 1
        return got

    opened = nodeorder.NodeOrder.on_session_open

    def opening(self: Any, session: Any) -> None:
        opened(self, session)
        for key, kept in session.nodes.memo.items():
            if key.startswith("nodeorder.columns "):
                alloc = session.nodes.allocatable[:, kept.dims]
                fresh = np.divide(1.0, alloc, out=np.zeros_like(alloc), where=alloc > 0)
                assert kept.space is session.space
                assert kept.inv.tobytes() == fresh.tobytes() and not kept.inv.flags.writeable
                checked["inverse"] += 1

    monkeypatch.setattr(predicates._StaticChecks, "combined", compared)
    monkeypatch.setattr(nodeorder.NodeOrder, "on_session_open", opening)
    walk = Walk(seed)
    rng = random.Random(seed)
    for i in range(300):
        walk.step()
        if i % 2 == 0:
            walk.now += 1
            run_cycle(walk.feeder, load_config(), RandomPort(rng), now=walk.now)
    assert checked["masks"] > 20 and checked["inverse"] > 20


def test_a_view_not_asked_for_in_a_session_is_brought_up_to_date_on_what_changed_before_it(
    served: Served,
) -> None:
    """The defect: a view taken over and not asked for in a session was carried to the next with only
    the nodes that session changed to bring up to date, not the ones it was taken over with: pods bound
    elsewhere between the first and second sessions were never seen by the view of a shape asked for in
    the first and third only (``served`` compares each view served with a fresh one)."""
    feeder, _ = _cluster()
    config = load_config()

    def cycle(name: str, now: float, cpu: str) -> Any:
        feeder.apply("Pod", pod(name, cpu=cpu))
        report = run_cycle(feeder, config, NullPort(), now=now)
        for b in report.result.binds:  # the binds confirmed: the pod runs, no longer asked for
            feeder.apply("Pod", pod(b.pod.partition("/")[2], cpu=cpu, node=b.node))
        return report

    cycle("x0", 1.0, "5")  # shape x: 5 cpu, asked for here
    for i in range(7):  # pods bound elsewhere on every node but n7, between the sessions
        feeder.apply("Pod", pod(f"late{i}", cpu="2", node=f"n{i}"))
    cycle("y0", 2.0, "1")  # another shape: x's view is taken over, not asked for
    cycle("x1", 3.0, "5")  # x again: its view must know what n0-n6 hold now
    assert served.taken >= 2 and served.checked >= 1
