"""An eviction sent (or possibly sent) counts in the cache at once, as an assumed bind does: the pod is
releasing from its outcome on, not running until the watch delivers its deletion, so the next session
plans around it (a gang's victim filter counts its spare from what is really left)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tests.builders import node, pod, podgroup, priority_class, queue
from tests.sim._eviction_helpers import eviction_config
from tests.unit._cycle_harness import Clock, FakePort, cache
from volsched.cycle import BLOCKED, EVICTED, FAILED, GONE, UNKNOWN, EvictOutcome, run_cycle
from volsched.framework.decisions import Evict
from volsched.model.vocabulary import TaskStatus

CONFIG = eviction_config()


HOST = "kubernetes.io/hostname"


def _cluster(clock: Clock | None = None) -> Any:
    """n1 and n2 full with a running gang of 4 (minMember 3, low priority), two pods on each; hi-0 (high
    priority, 1 cpu, for n2) waits: it may take one gang pod's room, no more."""
    return cache(
        *[node(n, cpu="2", labels={HOST: n}) for n in ("n1", "n2")],
        queue("q"),
        priority_class("low", 1),
        priority_class("high", 100),
        priority_class("higher", 200),
        podgroup("lo", ns="ns", queue="q", min_member=3, phase="Running", priority_class="low"),
        *[pod(f"lo-{i}", ns="ns", group="lo", node=f"n{i // 2 + 1}", priority_class="low") for i in range(4)],
        _preemptor("hi-0", "n2", "high"),
        clock=clock,
    )


def _preemptor(name: str, node_name: str, priority: str) -> Any:
    return pod(name, ns="ns", queue="q", priority_class=priority, node_selector={HOST: node_name})


class Answering(FakePort):
    """Answers every eviction with ``result`` and, like the API, leaves the pod to the watch to delete."""

    def __init__(self, result: str = EVICTED) -> None:
        super().__init__()
        self.result = result
        self.evicted: list[str] = []

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Any]) -> list[EvictOutcome]:
        self.evicted += [e.pod for e in evictions]
        return [EvictOutcome(e, self.result) for e in evictions]


def _running(feeder: Any, prefix: str) -> int:
    return sum(
        1
        for key, t in feeder.state.tasks.items()
        if key.startswith(prefix) and t.status in (TaskStatus.RUNNING, TaskStatus.BOUND)
    )


@pytest.mark.parametrize("result", [EVICTED, UNKNOWN])
def test_sessions_in_a_row_before_the_watch_delivers_the_deletion_never_take_a_gang_below_min_member(
    result: str,
) -> None:
    feeder = _cluster()
    port = Answering(result)
    run_cycle(feeder, CONFIG, port, now=5000.0)
    assert len(port.evicted) == 1 and port.evicted[0] in ("ns/lo-2", "ns/lo-3")  # hi-0's room on n2
    # A preemptor of a higher priority arrives, for n1; the watch has not delivered the deletion yet.
    late = _preemptor("hi-1", "n1", "higher")
    late["metadata"].update(resourceVersion="100", uid="uid-hi-1")
    assert feeder.apply("Pod", late)
    for _ in range(3):
        run_cycle(feeder, CONFIG, port, now=5000.0)
    # Before: the next session counted the gang's spare from 4 running and evicted a pod on n1 for hi-1
    # (the gang left with 2, minMember 3), and hi-0's victim again (a second eviction, a second event).
    assert len(port.evicted) == 1, port.evicted
    assert feeder.state.tasks[port.evicted[0]].status is TaskStatus.RELEASING
    assert _running(feeder, "ns/lo-") == 3


@pytest.mark.parametrize("result", [BLOCKED, FAILED])
def test_an_eviction_refused_leaves_the_pod_running(result: str) -> None:
    feeder = _cluster()
    port = Answering(result)
    run_cycle(feeder, CONFIG, port, now=5000.0)
    assert len(port.evicted) == 1
    assert _running(feeder, "ns/lo-") == 4
    assert not any((raw["metadata"]).get("deletionTimestamp") for raw in feeder.state.raw_pods.values())


def _evicted_once(result: str = EVICTED, clock: Clock | None = None) -> tuple[Any, str]:
    feeder = _cluster(clock)
    port = Answering(result)
    run_cycle(feeder, CONFIG, port, now=5000.0)
    (victim,) = port.evicted
    return feeder, victim


def _event(feeder: Any, key: str, *, rv: int, deleting: bool = False, **status: Any) -> dict[str, Any]:
    """A watch event of ``key`` as the API has it (without the cache's assumption), ``status`` merged."""
    raw = feeder.state.raw_pods[key]
    meta = {k: v for k, v in raw["metadata"].items() if k != "deletionTimestamp"}
    meta["resourceVersion"] = str(rv)
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:10:00Z"
    return {**raw, "metadata": meta, "status": {**raw["status"], **status}}


def test_the_watch_showing_the_deletion_ends_the_assumption_and_is_no_change() -> None:
    feeder, victim = _evicted_once()
    assert feeder.is_evicting(victim)
    changes = feeder.state.changes
    assert feeder.apply("Pod", _event(feeder, victim, rv=200, deleting=True))
    assert not feeder.is_evicting(victim)
    assert feeder.state.tasks[victim].status is TaskStatus.RELEASING
    assert feeder.state.changes == changes  # what the cache showed already: no session for it
    feeder.delete("Pod", _event(feeder, victim, rv=201))
    assert victim not in feeder.state.tasks


def test_an_event_older_than_the_eviction_does_not_bring_the_pod_back() -> None:
    feeder, victim = _evicted_once()
    assert feeder.apply("Pod", _event(feeder, victim, rv=200, podIP="10.0.0.9"))  # a status update
    assert feeder.state.tasks[victim].status is TaskStatus.RELEASING
    assert feeder.is_evicting(victim)


@pytest.mark.parametrize(
    ("result", "after"), [(UNKNOWN, TaskStatus.RUNNING), (EVICTED, TaskStatus.RELEASING)]
)
def test_when_the_watch_never_shows_the_deletion_a_perhaps_evicted_pod_runs_again(
    result: str, after: TaskStatus
) -> None:
    clock = Clock()
    feeder, victim = _evicted_once(result, clock)
    clock.now += 29
    feeder.expire()
    assert feeder.state.tasks[victim].status is TaskStatus.RELEASING
    clock.now += 2  # past the assumption's 30 s
    changes = feeder.state.changes
    assert feeder.expire() == 1
    assert not feeder.is_evicting(victim)
    assert feeder.state.tasks[victim].status is after
    assert feeder.state.changes > changes  # the next session runs on it


def test_an_eviction_of_a_pod_replaced_by_another_of_that_name_marks_nothing() -> None:
    feeder = _cluster()
    raw = feeder.state.raw_pods["ns/lo-0"]
    assert not feeder.assume_evicted("ns/lo-0", "uid-of-an-older-pod", at=5000.0)
    assert feeder.state.raw_pods["ns/lo-0"] is raw and not feeder.is_evicting("ns/lo-0")
    assert feeder.state.tasks["ns/lo-0"].status is TaskStatus.RUNNING


def test_an_eviction_answered_gone_drops_the_pod() -> None:
    feeder = _cluster()
    run_cycle(feeder, CONFIG, Answering(GONE), now=5000.0)
    assert sum(1 for key in feeder.state.tasks if key.startswith("ns/lo-")) == 3
