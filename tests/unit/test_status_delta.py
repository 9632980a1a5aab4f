"""The PodGroup phases a cycle writes back, looked at only where a result says they may have changed
(``SessionResult.podgroups_delta``): the settled run's PodGroups kept their phase since the last result,
so the cycle and the pacer look at the others alone; after every cycle the cache holds the phase of every
PodGroup the session gave, as a cycle comparing them all would leave it. When the last result's phases
were not written back (the cycle ended early), the next cycle compares them all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue, running_gangs
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cycle import CycleReport, EvictOutcome, NullPort, run_cycle
from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import Evict, SessionResult
from volsched.framework.registry import load_config
from volsched.model.raw import Raw
from volsched.pacing import pods_wait

EVICTING = load_config(Path(__file__).parents[2] / "examples" / "reclaim-preempt-scheduler.yaml")
NAMESPACES = ["ns0", "ns1", "ns2"]


def _cluster() -> list[dict[str, Any]]:
    """Two nodes, queues a and b, 20 running gangs of two (their PodGroups Running)."""
    return running_gangs(20, node_cpu="64")


def _cycle(state: ClusterState, config: SchedulerConfig, now: float, port: Any = None) -> CycleReport:
    return run_cycle(Feeder(state), config, port or NullPort(), now=now)


def _phases_as_given(state: ClusterState, result: SessionResult) -> None:
    """Every PodGroup with an object has, in the cache, the phase the session gave it."""
    for key, status in result.podgroups.items():
        pg = state.podgroups.get(key)
        if pg is not None:
            assert pg.phase.value == status.phase, key


def _full_pods_wait(result: SessionResult) -> bool:
    return (
        bool(result.unschedulable_pods)
        or result.pipelined > 0
        or any(s.pending for s in result.podgroups.values())
    )


@pytest.mark.parametrize("config", [load_config(None), EVICTING], ids=["default", "evicting"])
def test_phases_written_back_from_the_delta_are_those_a_full_comparison_writes(
    config: SchedulerConfig,
) -> None:
    state = ClusterState()
    for obj in _cluster():
        state.apply(obj)
    small = completed = 0
    for cycle in range(8):
        report = _cycle(state, config, 10.0 + cycle)
        result = report.result
        _phases_as_given(state, result)
        assert pods_wait(result) is _full_pods_wait(result), cycle
        delta = result.podgroups_delta
        assert delta is not None and set(delta.keys) <= result.podgroups.keys()
        small += len(delta.keys) < len(result.podgroups) // 2
        completed += sum(s.phase == "Completed" for s in result.podgroups.values())
        for b in result.binds:  # the binds confirmed: the pods run
            ns, _, name = b.pod.partition("/")
            group = name.rsplit("-", 1)[0]
            state.apply(pod(name, ns=ns, group=group, cpu="1", node=b.node))
        for i in (cycle * 2 + 1,):  # a gang in the middle of the order finishes and leaves
            ns = NAMESPACES[i % 3]
            for k in range(2):
                state.delete("Pod", ns, f"g{i}-{k}")
            state.delete("PodGroup", ns, f"g{i}")
        i = cycle * 2 + 2  # a gang's pods succeed: its PodGroup, in the run, is Completed from now on
        for k in range(2):
            state.apply(
                pod(
                    f"g{i}-{k}",
                    ns=NAMESPACES[i % 3],
                    group=f"g{i}",
                    cpu="1",
                    node=f"n{k + 1}",
                    phase="Succeeded",
                )
            )
        # A gang arrives, its PodGroup Inqueue (admitted elsewhere) and its pods pending: bound by the
        # next session, the one after finds it Running.
        ns = NAMESPACES[cycle % 3]
        state.apply(podgroup(f"new{cycle}", ns=ns, queue="b", min_member=2, phase="Inqueue"))
        for k in range(2):
            state.apply(pod(f"new{cycle}-{k}", ns=ns, group=f"new{cycle}", cpu="1"))
    assert small >= 4  # the delta names few of the statuses in most sessions
    assert completed >= 7

    # Nothing arrives or leaves any more: once the last arrivals are bound and Running, a session has
    # nothing to look at.
    sizes = []
    for cycle in range(3):
        report = _cycle(state, config, 30.0 + cycle)
        _phases_as_given(state, report.result)
        delta = report.result.podgroups_delta
        assert delta is not None
        sizes.append(len(delta.keys))
        for b in report.result.binds:
            ns, _, name = b.pod.partition("/")
            state.apply(pod(name, ns=ns, group=name.rsplit("-", 1)[0], cpu="1", node=b.node))
    assert sizes[-1] == 0, sizes


class _EvictFails(NullPort):
    """A port whose evict raises: the cycle ends before writing its phases back."""

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Raw]) -> list[EvictOutcome]:
        raise RuntimeError("the port broke")


def test_a_cycle_that_ended_before_writing_phases_back_leaves_the_next_to_compare_them_all() -> None:
    # A gang admitted elsewhere (Inqueue) whose pods all run: it joins the settled run, and the session
    # says it is Running. The first cycle ends before writing that back; the next session finds the
    # very same job in the run (nothing it reads changed), so its delta does not name it: only knowing
    # the last phases were not written makes the cycle look at it.
    state = ClusterState()
    for obj in [
        node("n1", cpu="8"),
        queue("a"),
        podgroup("g", ns="ns0", queue="a", min_member=2, phase="Inqueue"),
    ]:
        state.apply(obj)
    for k in range(2):
        state.apply(pod(f"g-{k}", ns="ns0", group="g", cpu="1", node="n1"))
    config = load_config(None)
    with pytest.raises(RuntimeError, match="the port broke"):
        _cycle(state, config, 10.0, port=_EvictFails())
    assert state.podgroups["ns0/g"].phase.value == "Inqueue"
    report = _cycle(state, config, 11.0)
    delta = report.result.podgroups_delta
    assert delta is not None and "ns0/g" not in delta.keys
    assert state.podgroups["ns0/g"].phase.value == "Running"
    assert report.phases_changed == ["ns0/g"]
