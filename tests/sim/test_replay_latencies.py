"""The time mode's latencies (``--start-delay``, ``--bind-delay``, ``--finish-delay``, ``--create-delay``):
what takes time in a real cluster beside the scheduler's sessions, each in a case worked out by hand.
Without them a pod runs from its bind and its room frees when it ends."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import batch_job, node, queue
from tests.sim.test_replay_session_triggers import at, replay, started, timed_pod
from volsched.model.errors import InputError
from volsched.simulate import ReplayResult
from volsched.simulate.annotations import DURATION_ANNOTATION
from volsched.simulate.latencies import Latencies

Obj = dict[str, Any]


def finished(result: ReplayResult) -> dict[str, float | None]:
    return {
        k: None if r.finished is None else round(r.finished - result.start, 6) for k, r in result.runs.items()
    }


def test_a_pod_runs_its_duration_from_its_start_and_its_room_frees_once_its_end_is_seen():
    # One 1-cpu node. a is bound at 0, runs from 0.5 (start delay) for 10 s, and its end is seen 0.2 s
    # later (finish delay): its room frees at 10.7, and b, waiting since 1, is bound then.
    objs = [node("n0", cpu="1"), queue("q")]
    objs += [
        timed_pod("a", created=0, duration="10s", queue="q"),
        timed_pod("b", created=1, duration="10s", queue="q"),
    ]
    result = replay(objs, latencies=Latencies(start=0.5, finish=0.2))
    assert started(result) == {"default/a": 0, "default/b": 10.7}
    assert finished(result) == {"default/a": 10.7, "default/b": 21.4}
    plain = replay(objs)
    assert started(plain) == {"default/a": 0, "default/b": 10}


def waits(result: ReplayResult) -> dict[str, float]:
    return {
        k.split("/")[1]: round(j.admitted - j.submitted, 6)
        for k, j in result.jobs.items()
        if j.admitted is not None
    }


def test_a_bind_lands_after_its_session_ends_the_wait_then_and_holds_its_room_from_the_session():
    # One 1-cpu node. The session at 0 binds a; its bind lands 0.3 s later (bind delay): a's wait is 0.3,
    # and it runs from 0.8 (start delay 0.5 after the bind landed) for 10 s, its room freeing at 10.8.
    # b, made at 1, is not bound before (a's room was held from the session at 0); the session at 10.8
    # binds it, its bind lands at 11.1 (wait 10.1), and it ends at 11.1 + 0.5 + 10 = 21.6.
    objs = [node("n0", cpu="1"), queue("q")]
    objs += [
        timed_pod("a", created=0, duration="10s", queue="q"),
        timed_pod("b", created=1, duration="10s", queue="q"),
    ]
    result = replay(objs, latencies=Latencies(bind=0.3, start=0.5))
    assert started(result) == {"default/a": 0, "default/b": 10.8}
    assert finished(result) == {"default/a": 10.8, "default/b": 21.6}
    assert waits(result) == {"a": 0.3, "b": 10.1}
    assert waits(replay(objs)) == {"a": 0, "b": 9}


def test_a_jobs_pods_come_after_it_and_its_wait_counts_from_the_job():
    # A Job made at 2 whose pods the Job controller makes 0.3 s later: they are bound at 2.3, and the
    # job's wait is 0.3 (from the Job's creation), not 0.
    job = batch_job("j", parallelism=2, annotations={DURATION_ANNOTATION: "5s"})
    job["metadata"]["creationTimestamp"] = at(2)
    objs = [node("n0", cpu="2"), queue("default"), timed_pod("first", created=0, duration="1s"), job]
    result = replay(objs, latencies=Latencies(create=0.3))
    assert started(result) == {"default/first": 0, "default/j-0": 2.3, "default/j-1": 2.3}
    [record] = [j for j in result.jobs.values() if j.key != "default/first"]
    assert record.admitted is not None and round(record.admitted - record.submitted, 6) == 0.3


@pytest.mark.parametrize("value", [-1.0, 1e17], ids=["negative", "past-a-day"])
@pytest.mark.parametrize("field", ["start", "bind", "finish", "create", "session"])
def test_a_latency_out_of_its_range_is_refused(field: str, value: float):
    """Past a day: a session taking 10^17 s bound its pods at a time past the year 9999 (a traceback)."""
    with pytest.raises(InputError, match=field):
        replay([node("n0", cpu="1")], latencies=Latencies(**{field: value}))


def test_drawn_latencies_vary_around_their_means_and_a_seed_replays_the_same():
    # 300 one-cpu pods a second apart on a roomy node, each bound as it arrives: with a seed each draws
    # its start delay (exponential, mean 0.2 s): they differ, average near 0.2, and the same seed gives
    # the same replay, another seed another.
    objs = [node("n0", cpu="400"), queue("q")]
    objs += [timed_pod(f"p{i}", created=i, duration="10s", queue="q") for i in range(300)]

    def delays(seed: int) -> list[float]:
        result = replay(objs, latencies=Latencies(start=0.2, seed=seed))
        return [round(r.delay, 9) for r in result.runs.values()]

    first = delays(1)
    assert len(set(first)) == 300
    assert 0.17 < sum(first) / 300 < 0.23
    assert delays(1) == first and delays(2) != first
    assert {round(r.delay, 9) for r in replay(objs, latencies=Latencies(start=0.2)).runs.values()} == {0.2}
