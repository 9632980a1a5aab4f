"""The time mode's clock (``volsched simulate --replay``): pods arrive at their creationTimestamp, run for
their duration and free their room; an evicted pod loses its work and is made again; finished jobs leave
the cache; the session's clock and the pods' start times are the virtual clock's."""

from __future__ import annotations

import json
from typing import Any

import yaml
from pytest import approx

from tests.builders import batch_job, node, pod, podgroup, priority_class, queue
from tests.sim._eviction_helpers import eviction_config
from volsched.cli import main
from volsched.simulate import Document, Replay, ReplayResult, replay_json
from volsched.simulate.annotations import DURATION_ANNOTATION, EVICTION_POLICY_ANNOTATION
from volsched.simulate.documents import EPOCH, iso

Obj = dict[str, Any]


def at(seconds: float) -> str:
    return iso(EPOCH + seconds)


def run(objs: list[Obj], **kwargs: Any) -> ReplayResult:
    return Replay([Document(f"test: document {i + 1}", o) for i, o in enumerate(objs)], **kwargs).run()


def times(result: ReplayResult) -> dict[str, tuple[float | None, float | None]]:
    """Every pod's (started, finished), in seconds from the replay's start."""

    def rel(t: float | None) -> float | None:
        return None if t is None else t - result.start

    return {k: (rel(r.started), rel(r.finished)) for k, r in result.runs.items()}


def created(obj: Obj, seconds: float) -> Obj:
    obj["metadata"]["creationTimestamp"] = at(seconds)
    return obj


def timed_pod(name: str, *, created: float, duration: str, **kwargs: Any) -> Obj:
    return pod(name, created=at(created), annotations={DURATION_ANNOTATION: duration}, **kwargs)


def test_pods_wait_for_the_room_that_finished_pods_free():
    # One node of 2 cpu. a0, a1 fill it at 0 and 1; a2 waits for a0 (10 s); b0 of queue b, arriving at 5,
    # takes the room a0 frees before a2, which arrived earlier (queue b holds nothing: the lower share).
    objs = [node("n0", cpu="2"), queue("a"), queue("b")]
    objs += [timed_pod(f"a{i}", created=i, duration="10s", queue="a") for i in range(4)]
    objs += [timed_pod("b0", created=5, duration="1m", queue="b")]
    result = run(objs)
    assert times(result) == {
        "default/a0": (0, 10),
        "default/a1": (1, 11),
        "default/b0": (10, 70),
        "default/a2": (11, 21),
        "default/a3": (21, 31),
    }
    assert result.end - result.start == 70


def test_finished_jobs_leave_the_cache():
    objs = [node("n0", cpu="4"), queue("a")]
    objs += [created(podgroup("g", queue="a", min_member=2), 0)]
    objs += [timed_pod(f"g-{i}", created=0, duration="30s", group="g") for i in range(2)]
    objs += [created(batch_job("j", parallelism=2, annotations={DURATION_ANNOTATION: "20s"}), 5)]
    result = run(objs)
    assert times(result) == {
        "default/g-0": (0, 30),
        "default/g-1": (0, 30),
        "default/j-0": (5, 25),
        "default/j-1": (5, 25),
    }
    state = result.simulation.state
    assert state.raw_pods == {} and state.tasks == {}
    assert "default/g" not in state.podgroups
    assert result.jobs_finished == 2


def test_an_evicted_pod_loses_its_work_and_is_made_again():
    # A Job of low priority runs two pods from 0 on the node's 2 cpu; a high-priority pod arrives at 100
    # and preempts one of them (a job keeps its minMember, 1): its 100 s are lost, and the Job's
    # controller makes its next pod, pending, which runs its full 300 s once the high one is done. The
    # high one is bound by the session after the eviction (the session evicts; the next binds), which the
    # Job's new pod arriving calls for at once: the evicting session found one job to place, so arrivals
    # are sparse and wait no min_gap (a replay's session takes no time), as in the operator.
    objs = [node("n0", cpu="2"), queue("q"), priority_class("low", 1), priority_class("high", 100)]
    objs += [created(podgroup("low", queue="q", priority_class="low"), 0)]
    objs += [
        created(batch_job("low", parallelism=2, group="low", annotations={DURATION_ANNOTATION: "300s"}), 0)
    ]
    objs += [created(podgroup("high", queue="q", priority_class="high"), 100)]
    objs += [timed_pod("high", created=100, duration="50s", group="high", priority_class="high")]
    result = run(objs, config=eviction_config())
    got = times(result)
    [evicted] = [r for r in result.runs.values() if r.evicted is not None]
    assert (evicted.started, evicted.evicted, evicted.lost) == (result.start, result.start + 100, 100)
    kept = ({"default/low-0", "default/low-1"} - {evicted.key}).pop()
    assert got[kept] == (0, 300)
    assert got["default/high"] == (approx(100.0), approx(150.0))  # evicted for at 100
    assert got["default/low-2"] == (
        approx(150.0),
        approx(450.0),
    )  # made again at 100, started when high left
    assert result.runs["default/low-2"].job == evicted.job
    assert [(e.eviction.pod, e.eviction.action) for e in result.simulation.eviction_outcomes] == [
        (evicted.key, "preempt")
    ]
    assert result.simulation.state.raw_pods == {}  # all done: the Job and its pods are gone


def _gang_with_spare(policy: str | None) -> list[Obj]:
    """A 3-pod gang (minMember 2) of low priority fills the node's 3 cpu from 0; a 1-cpu pod of high
    priority arrives at 60 and preempts one member (never below minMember)."""
    objs = [node("n0", cpu="3"), queue("q"), priority_class("low", 1), priority_class("high", 100)]
    ann = {DURATION_ANNOTATION: "10m", **({EVICTION_POLICY_ANNOTATION: policy} if policy else {})}
    objs += [created(podgroup("g", queue="q", min_member=2, priority_class="low"), 0)]
    objs += [pod(f"g-{i}", group="g", priority_class="low", annotations=ann, created=at(0)) for i in range(3)]
    objs += [timed_pod("high", created=60, duration="1m", queue="q", priority_class="high")]
    return objs


def test_a_gang_restarts_whole_when_its_policy_says_so():
    result = run(_gang_with_spare("RestartJob"), config=eviction_config())
    members = [r for k, r in result.runs.items() if k.startswith("default/g-") and r.replaces is None]
    assert len(members) == 3
    assert all(r.evicted == result.start + 60 and r.lost == 60 for r in members)
    assert result.restarted == 2  # the two the session did not evict, deleted with their gang
    again = [r for r in result.runs.values() if r.replaces is not None]
    assert len(again) == 3 and all(r.finished is not None for r in again)


def test_a_gang_above_its_minimum_runs_on_by_default():
    result = run(_gang_with_spare(None), config=eviction_config())
    evicted = [r for r in result.runs.values() if r.evicted is not None]
    assert len(evicted) == 1 and result.restarted == 0
    others = [
        r
        for k, r in result.runs.items()
        if k.startswith("default/g-") and r.replaces is None and r.evicted is None
    ]
    assert [r.finished for r in others] == [result.start + 600] * 2


def test_sessions_see_the_virtual_clock_and_start_times():
    # A pod bound at tick 7 has status.startTime 7 s after the start; the cache's task carries it.
    objs = [node("n0", cpu="1"), queue("q")]
    objs += [timed_pod("early", created=0, duration="7s", queue="q")]
    objs += [pod("late", created=at(1), queue="q")]  # no duration: runs until the end
    result = run(objs)
    task = result.simulation.state.tasks["default/late"]
    assert task.start_time == result.start + 7 == result.runs["default/late"].started
    assert result.runs["default/late"].finished is None


def test_quiet_stretches_are_jumped_not_ticked():
    # Two pods a day apart, at a 1 s period: a handful of sessions, not 86,400 ticks.
    objs = [node("n0", cpu="1"), queue("q")]
    objs += [timed_pod("first", created=0, duration="1h", queue="q")]
    objs += [timed_pod("second", created=86_400, duration="1h", queue="q")]
    result = run(objs)
    assert times(result) == {"default/first": (0, 3600), "default/second": (86_400, 90_000)}
    assert result.sessions + result.skipped < 20


def _write(tmp_path, objs) -> str:
    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


def test_replay_json_gives_every_pods_times(tmp_path, capsys):
    objs = [node("n0", cpu="1"), queue("q")]
    objs += [
        timed_pod("a", created=0, duration="10m", queue="q"),
        timed_pod("b", created=60, duration="5m", queue="q"),
    ]
    assert main(["simulate", "--replay", "-f", _write(tmp_path, objs), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    pods = data["replay"]["pods"]
    assert {k: (p["created"], p["started"], p["finished"]) for k, p in pods.items()} == {
        "default/a": (0, 0, 600),
        "default/b": (60, 600, 900),
    }
    assert data["replay"]["start"] == at(0) and data["replay"]["end"] == 900


def test_a_bad_duration_is_refused_with_its_place(tmp_path, capsys):
    objs = [node("n0", cpu="1"), queue("q"), timed_pod("a", created=0, duration="soon", queue="q")]
    assert main(["simulate", "--replay", "-f", _write(tmp_path, objs)]) == 2
    err = capsys.readouterr().err
    assert "default/a" in err and DURATION_ANNOTATION in err and "'soon'" in err


def test_the_table_lists_every_pods_times(tmp_path, capsys):
    objs = [node("n0", cpu="1"), queue("q"), timed_pod("a", created=0, duration="10m", queue="q")]
    assert main(["simulate", "--replay", "-f", _write(tmp_path, objs)]) == 0
    out = capsys.readouterr().out
    assert "600 s of cluster time" in out
    assert any(
        line.split("│")[1:6] == [" default/a ", " n0   ", "       0 ", "       0 ", "      600 "]
        for line in out.splitlines()
    )


def test_replay_refuses_options_of_the_instant_mode(tmp_path, capsys):
    f = _write(tmp_path, [node("n0", cpu="1")])
    assert main(["simulate", "--replay", "-f", f, "--then", f]) == 2
    assert "--then" in capsys.readouterr().err


def test_three_queues_every_start_worked_out_by_hand():
    # One node of 2 cpu, three queues of weight 1, 1-cpu pods (the default config: no preemption).
    #   0    a1, a2 start (the node is empty); they run 100 s.
    #   10   b1 arrives (50 s), 40 c1 (20 s): nothing is free until 100.
    #   100  a1, a2 end: b1 and c1 start (one cpu each: what each queue deserves of 2).
    #   110  a3 arrives (30 s): the node is full until c1 ends at 120; a3 runs 120..150.
    #   125  b2 (10 s), 126 c2 (10 s), 130 c3 (5 s) arrive: nothing is free until 150.
    #   150  b1 and a3 end: b2 and c2 start (one each: b deserves 1, c 1; b first, its queue is older);
    #        c3 waits for them and runs 160..165.
    objs = [node("n0", cpu="2"), queue("a"), queue("b"), queue("c")]
    arrivals = [
        ("a1", "a", 0, "100s"),
        ("a2", "a", 0, "100s"),
        ("b1", "b", 10, "50s"),
        ("c1", "c", 40, "20s"),
        ("a3", "a", 110, "30s"),
        ("b2", "b", 125, "10s"),
        ("c2", "c", 126, "10s"),
        ("c3", "c", 130, "5s"),
    ]
    objs += [timed_pod(name, created=t, duration=d, queue=q) for name, q, t, d in arrivals]
    result = run(objs)
    assert times(result) == {
        "default/a1": (0, 100),
        "default/a2": (0, 100),
        "default/b1": (100, 150),
        "default/c1": (100, 120),
        "default/a3": (120, 150),
        "default/b2": (150, 160),
        "default/c2": (150, 160),
        "default/c3": (160, 165),
    }


def test_a_node_made_later_arrives_then_and_a_removed_node_takes_its_pods_work_with_it():
    # n0 (1 cpu) is there from the start and removed at 50; n1 (1 cpu) is made at 100.
    #   0    a and b arrive (100 s each): a runs on n0, b waits.
    #   50   n0 goes: a's 50 s are lost, and its owner makes it again (a-r1), pending.
    #   100  n1 arrives: b, waiting since 0, is older than a-r1 (made at 50): b runs on n1 100..200,
    #        then a-r1 200..300.
    n0 = node("n0", cpu="1")
    n0["metadata"]["annotations"] = {"simulate.volsched.io/remove-after": "50s"}
    n1 = node("n1", cpu="1")
    n1["metadata"]["creationTimestamp"] = at(100)
    objs = [n0, n1, queue("q")]
    objs += [
        timed_pod("a", created=0, duration="100s", queue="q"),
        timed_pod("b", created=0, duration="100s", queue="q"),
    ]
    result = run(objs)
    a = result.runs["default/a"]
    assert (a.node, a.started, a.evicted, a.lost) == ("n0", result.start, result.start + 50, 50)
    assert result.jobs["default/a"].evictions == {"node-removed": 1}
    assert times(result)["default/b"] == (100, 200)
    assert times(result)["default/a-r1"] == (200, 300)
    assert "n0" not in result.simulation.state.nodes and "n1" in result.simulation.state.nodes


def test_a_bad_removal_time_is_refused(tmp_path, capsys):
    n0 = node("n0", cpu="1")
    n0["metadata"]["annotations"] = {"simulate.volsched.io/remove-after": "later"}
    assert main(["simulate", "--replay", "-f", _write(tmp_path, [n0, queue("q")])]) == 2
    assert "Node n0: annotation simulate.volsched.io/remove-after" in capsys.readouterr().err


def test_a_job_ends_when_its_pods_do_not_at_the_next_tick_and_leaves_no_pod_records_when_asked():
    # A 5 s period: the pod bound at 0 succeeds at 2.5 s; the job's completion is 2.5, not 5, and b, which
    # waited for its room, starts then (the freed room calls a session). Without pod records, the
    # finished job keeps only its job record.
    objs = [node("n0", cpu="1"), queue("q"), timed_pod("a", created=0, duration="2500ms", queue="q")]
    objs += [timed_pod("b", created=0, duration="1s", queue="q")]
    result = Replay([Document(f"d{i}", o) for i, o in enumerate(objs)], period=5.0, record_pods=False).run()
    assert result.runs == {}
    jobs = {k: (j.admitted - result.start, j.finished - result.start) for k, j in result.jobs.items()}  # type: ignore[operator]
    assert jobs == {"default/a": (0, 2.5), "default/b": (2.5, 3.5)}


def test_a_bad_duration_hours_into_the_replay_is_refused_before_it_starts(tmp_path, capsys):
    job = created(batch_job("late", annotations={DURATION_ANNOTATION: "a while"}), 5 * 3600)
    objs = [node("n0", cpu="1"), queue("q"), timed_pod("a", created=0, duration="1m", queue="q"), job]
    assert main(["simulate", "--replay", "-f", _write(tmp_path, objs)]) == 2
    err = capsys.readouterr().err
    assert "document 4" in err and "Job default/late" in err and "'a while'" in err


def test_until_ends_the_replay_with_what_still_runs_and_waits():
    objs = [node("n0", cpu="1"), queue("q")]
    objs += [
        timed_pod("a", created=0, duration="1h", queue="q"),
        timed_pod("b", created=10, duration="1h", queue="q"),
    ]
    result = run(objs, until=600.0)
    assert times(result) == {"default/a": (0, None), "default/b": (None, None)}
    report = replay_json(result)["report"]
    assert (
        report["end"] <= 600
        and report["queues"]["q"]["running"] == 1
        and report["queues"]["q"]["waiting"] == 1
    )


def test_a_pod_that_runs_past_the_year_9999_ends_the_replay_not_in_a_traceback(tmp_path, capsys):
    """The defect: the pod waiting for the long one's room was bound once it ended, at a time past the
    year 9999, whose startTime could not be written (OverflowError, ValueError): a traceback. The replay
    now ends before its clock passes what an object's time can say; the waiting pod is still waiting."""
    objs = [node("n0", cpu="1"), queue("q")]
    objs += [
        timed_pod("long", created=0, duration="1e17", queue="q"),
        timed_pod("next", created=1, duration="10s", queue="q"),
    ]
    assert main(["simulate", "--replay", "-f", _write(tmp_path, objs), "-o", "json"]) == 0
    pods = json.loads(capsys.readouterr().out)["replay"]["pods"]
    assert {k: (p["started"], p["finished"]) for k, p in pods.items()} == {
        "default/long": (0, None),
        "default/next": (None, None),
    }


def test_a_replay_that_would_start_in_the_year_9999_is_refused(tmp_path, capsys):
    objs = [node("n0", cpu="1"), queue("q")]
    objs += [pod(f"p{i}", created="9999-12-31T23:00:00Z", cpu="1", queue="q") for i in range(2)]
    assert main(["simulate", "--replay", "-f", _write(tmp_path, objs)]) == 2
    assert "the replay would start at 9999-12-31T23:00:00Z" in capsys.readouterr().err


def test_a_period_far_longer_than_max_idle_still_moves_the_clock_on():
    """The defect: with --period 1e300 the session that max_idle calls for after a session that left a pod
    waiting was due zero periods on, at the same instant, again and again: the replay never ended."""
    objs = [node("n0", cpu="1"), queue("q"), pod("big", created=at(0), cpu="2", queue="q")]
    replay = Replay([Document("test: document", o) for o in objs], period=1e300, until=3600.0)
    replay._events(replay.start)  # the pod arrived; a session ran at the start and left it waiting
    replay.sim.state.doorbell.take()
    nxt = replay._next_session(
        started=replay.start, ended=replay.start, dirty=False, waiting=True, last_run=replay.start
    )
    assert nxt > replay.start
