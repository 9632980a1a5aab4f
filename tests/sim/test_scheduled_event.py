"""A PodGroup that waited gets a Normal ``Scheduled`` event in the session that places its gang up to
minMember, so its last event is no longer the Unschedulable warning from before; one placed in one go
says so too, and one that gets more pods past its minimum says nothing again."""

from __future__ import annotations

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import Event, SessionResult
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session


def _session(state: ClusterState, now: float) -> SessionResult:
    result = run_session(state.snapshot(now=now), load_config())
    for b in result.binds:  # bound, as the operator's writes and the watch would tell the cache
        ns, name = b.pod.split("/")
        bound = pod(name, ns=ns, group=name.rsplit("-", 1)[0], node=b.node, phase="Running")
        state.apply(bound)
    return result


def _events(result: SessionResult, reason: str) -> list[Event]:
    return [e for e in result.events if e.kind == "PodGroup" and e.reason == reason]


def test_a_gang_placed_after_waiting_gets_a_scheduled_event() -> None:
    state = ClusterState()
    for obj in [node("n1", cpu="2"), queue("default"), podgroup("g", ns="ns", min_member=3)]:
        state.apply(obj)
    for i in range(3):
        state.apply(pod(f"g-{i}", ns="ns", group="g"))
    first = _session(state, 1.0)
    assert not first.binds and _events(first, "Unschedulable") and not _events(first, "Scheduled")

    state.apply(node("n2", cpu="2"))  # room for the whole gang now
    second = _session(state, 2.0)
    assert len(second.binds) == 3
    [event] = _events(second, "Scheduled")
    assert event.type == "Normal" and event.name == "g" and event.namespace == "ns"
    assert event.message == "3 of 3 minimum member(s) placed (3 bound this time, on n1, n2)"
    assert not _events(second, "Unschedulable")

    state.apply(pod("g-3", ns="ns", group="g"))  # one more past minMember: nothing new to say
    third = _session(state, 3.0)
    assert len(third.binds) == 1 and not _events(third, "Scheduled")
