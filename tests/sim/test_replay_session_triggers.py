"""When the time mode runs a session: the operator's rule (``volsched.pacing.Pacer``, asked on the virtual
clock), each trigger in a case whose session times are worked out by hand. Sessions take no time here
(``session_time`` 0), so a session the doorbell calls for runs ``min_gap`` (0.02 s, the operator's) after
the last one, or at once when that is past (or when a pod arrives after a session that found at most one
job to place)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, priority_class, queue
from tests.sim._eviction_helpers import EXAMPLES
from volsched.framework.registry import load_config
from volsched.simulate import Document, Replay, ReplayResult
from volsched.simulate.annotations import DURATION_ANNOTATION
from volsched.simulate.documents import EPOCH, iso
from volsched.simulate.latencies import Latencies

Obj = dict[str, Any]


def at(seconds: float) -> str:
    """A creationTimestamp ``seconds`` after the epoch, with its fraction when it has one."""
    whole = iso(EPOCH + int(seconds))
    frac = round(seconds - int(seconds), 3)
    return whole if not frac else whole[:-1] + f"{frac:.3f}"[1:] + "Z"


def timed_pod(name: str, *, created: float, duration: str, **kwargs: Any) -> Obj:
    return pod(name, created=at(created), annotations={DURATION_ANNOTATION: duration}, **kwargs)


def started(result: ReplayResult) -> dict[str, float | None]:
    return {k: relative(result, r.started) for k, r in result.runs.items()}


def relative(result: ReplayResult, t: float | None) -> float | None:
    return None if t is None else round(t - result.start, 6)


def gang(name: str, *, created: float, duration: str, pods: int = 1) -> list[Obj]:
    """A job of ``pods`` pods (minMember 1) of priority class ``name`` (low or high) with its PodGroup, in
    queue q."""
    group = podgroup(name, queue="q", priority_class=name)
    group["metadata"]["creationTimestamp"] = at(created)
    return [group] + [
        timed_pod(f"{name}-{i}", created=created, duration=duration, group=name, priority_class=name)
        for i in range(pods)
    ]


def evicted(result: ReplayResult) -> float | None:
    """When the one evicted pod was evicted (seconds from the start)."""
    [run] = [r for r in result.runs.values() if r.evicted is not None]
    return relative(result, run.evicted)


def replay(objs: list[Obj], **kwargs: Any) -> ReplayResult:
    return Replay([Document(f"test: document {i + 1}", o) for i, o in enumerate(objs)], **kwargs).run()


def test_an_arriving_pod_is_placed_at_once_not_at_the_next_period():
    # A 5 s period. a arrives at 0 and runs 1 s; b arrives at 3: the doorbell (a pod of ours arrived)
    # calls a session at 3 (the last ended at 0, more than min_gap ago), not at the period's tick of 5.
    objs = [node("n0", cpu="1"), queue("q")]
    objs += [
        timed_pod("a", created=0, duration="1s", queue="q"),
        timed_pod("b", created=3, duration="1s", queue="q"),
    ]
    assert started(replay(objs, period=5.0)) == {"default/a": 0, "default/b": 3}


def test_a_pod_arriving_just_after_a_session_waits_for_the_least_gap():
    # a1 and a2 arrive at 0 (their session at 0 finds two jobs to place: pods arrive faster than
    # sessions run), b 5 ms later: the next session runs min_gap after the last ended, at 0.02; with
    # min_gap 0.5, at 0.5.
    objs = [node("n0", cpu="3"), queue("q")]
    objs += [
        timed_pod("a1", created=0, duration="10s", queue="q"),
        timed_pod("a2", created=0, duration="10s", queue="q"),
        timed_pod("b", created=0.005, duration="10s", queue="q"),
    ]
    want = {"default/a1": 0, "default/a2": 0}
    assert started(replay(objs)) == {**want, "default/b": 0.02}
    assert started(replay(objs, min_gap=0.5)) == {**want, "default/b": 0.5}


def test_a_pod_arriving_after_a_session_with_one_job_is_placed_at_once():
    # a arrives at 0 alone (its session finds one job to place), b 5 ms later: arrivals are sparse, so b
    # waits no minimum gap, only as long as the last session took (nothing: a replay's sessions are
    # instant), whatever min_gap is (the operator's rule: volsched.pacing).
    objs = [node("n0", cpu="2"), queue("q")]
    objs += [
        timed_pod("a", created=0, duration="10s", queue="q"),
        timed_pod("b", created=0.005, duration="10s", queue="q"),
    ]
    assert started(replay(objs)) == {"default/a": 0, "default/b": 0.005}
    assert started(replay(objs, min_gap=0.5)) == {"default/a": 0, "default/b": 0.005}


def test_room_freed_while_pods_wait_calls_a_session_when_it_frees():
    # A 5 s period; one 1-cpu node. a runs 0..2.5; b, arrived at 0, waits for it: the pod's end frees the
    # room while a pod waits, and the session runs at 2.5, not at the tick of 5.
    objs = [node("n0", cpu="1"), queue("q")]
    objs += [
        timed_pod("a", created=0, duration="2500ms", queue="q"),
        timed_pod("b", created=0, duration="1s", queue="q"),
    ]
    result = replay(objs, period=5.0)
    assert started(result) == {"default/a": 0, "default/b": 2.5}
    assert relative(result, result.jobs["default/b"].finished) == 3.5


def test_an_eviction_frees_the_room_and_the_preemptor_is_bound_a_least_gap_later():
    # One 2-cpu node; low's two pods run from 0 (minMember 1); high (higher priority) arrives at 100 and
    # preempts one: the session
    # at 100 evicts and pipelines high; the eviction frees the room while high waits, and the evicted pod
    # is made again (it arrives): that session found one job to place (high), so the arrival calls the
    # next session at once (a replay's session takes no time), not min_gap after, and it binds high.
    objs = [node("n0", cpu="2"), queue("q"), priority_class("low", 1), priority_class("high", 100)]
    objs += gang("low", created=0, duration="1h", pods=2)
    objs += gang("high", created=100, duration="10s")
    config = load_config(text=(EXAMPLES / "reclaim-preempt-scheduler.yaml").read_text())
    result = replay(objs, config=config)
    assert evicted(result) == 100
    assert started(result)["default/high-0"] == pytest.approx(100.0)


def test_while_pods_wait_for_the_clock_a_session_runs_max_idle_after_the_last_on_its_period_grid():
    # The same, but minruntime protects low's pods for their first 30 s. high arrives at 10.5: its session (at 10.5) cannot
    # evict yet, and nothing rings after it. A plugin reads the clock and a pod waits, so a session runs
    # max_idle (10 s) after the last one, on the period's grid from that one (10.5 + k): at 20.5 (low has
    # run 20.5 s: still protected) and 30.5, which evicts; the freed room (and the evicted pod made again,
    # after a session with one job to place: at once) binds high at 30.5.
    text = (EXAMPLES / "reclaim-preempt-scheduler.yaml").read_text()
    text = text.replace(
        "  - name: gang\n", "  - name: gang\n  - name: minruntime\n    arguments: {minRuntime: 30s}\n"
    )
    objs = [node("n0", cpu="2"), queue("q"), priority_class("low", 1), priority_class("high", 100)]
    objs += gang("low", created=0, duration="1h", pods=2)
    objs += gang("high", created=10.5, duration="10s")
    result = replay(objs, config=load_config(text=text))
    assert evicted(result) == 30.5
    assert started(result)["default/high-0"] == pytest.approx(30.5)


def test_a_node_added_while_pods_wait_calls_a_session_when_it_comes():
    # A 5 s period. The gang (minMember 2) arrives at 0 on one 1-cpu node and waits; a second node is
    # made at 3.2: a node added frees room while pods wait, so a session runs at 3.2 and starts both.
    late = node("n1", cpu="1")
    late["metadata"]["creationTimestamp"] = at(3.2)
    group = podgroup("g", queue="q", min_member=2)
    group["metadata"]["creationTimestamp"] = at(0)
    objs = [node("n0", cpu="1"), late, queue("q"), group]
    objs += [timed_pod(f"g-{i}", created=0, duration="10s", group="g") for i in range(2)]
    assert started(replay(objs, period=5.0)) == {"default/g-0": 3.2, "default/g-1": 3.2}


def test_a_session_that_takes_time_binds_at_its_end_and_keeps_the_next_one_as_far_from_it():
    # Sessions take 0.1 s (--session-time). a arrives at 0: its session runs 0..0.1 and binds it at 0.1.
    # b arrives at 0.05, while that session runs: the next runs once it ended and as long again after
    # (the operator's gap follows the last session's time), 0.2..0.3, and binds b at 0.3.
    objs = [node("n0", cpu="2"), queue("q")]
    objs += [
        timed_pod("a", created=0, duration="10s", queue="q"),
        timed_pod("b", created=0.05, duration="10s", queue="q"),
    ]
    result = replay(objs, latencies=Latencies(session=0.1))
    assert started(result) == {"default/a": 0.1, "default/b": 0.3}
