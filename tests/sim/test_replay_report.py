"""The replay's report (``report`` in ``volsched simulate --replay -o json``): waits, completion times,
slowdown, utilisation, held shares, evictions and work lost per queue and per job class, worked out by
hand on small workloads, and the jobs still waiting at the end with why."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.builders import batch_job, node, pod, podgroup, priority_class, queue
from tests.sim._eviction_helpers import eviction_config
from tests.sim.test_replay_clock import at as at_
from tests.sim.test_replay_clock import created, run, timed_pod
from volsched.cli import main
from volsched.simulate import replay_json
from volsched.simulate.annotations import CLASS_ANNOTATION, DURATION_ANNOTATION
from volsched.simulate.report import distribution


def _report(objs, **kwargs):
    return replay_json(run(objs, **kwargs))["report"]


def test_waits_completions_and_slowdown_per_queue_and_class():
    # One node of 1 cpu. a0 runs 0..100. At 100 both queues hold nothing: equal shares, and queue a, made
    # first, goes first: a1 (arrived 20) runs 100..110, then b0 (arrived 10) 110..160. Queue a waits 0
    # and 80; b 100. Class "long" is a0 and b0, "short" a1.
    objs = [node("n0", cpu="1"), queue("a"), queue("b")]

    def job(name: str, at: int, duration: str, queue: str, cls: str) -> dict:
        annotations = {DURATION_ANNOTATION: duration, CLASS_ANNOTATION: cls}
        return pod(name, created=at_(at), queue=queue, annotations=annotations)

    objs += [
        job("a0", 0, "100s", "a", "long"),
        job("b0", 10, "50s", "b", "long"),
        job("a1", 20, "10s", "a", "short"),
    ]
    report = _report(objs)
    a, b = report["queues"]["a"], report["queues"]["b"]
    assert (a["jobs"], a["finished"], a["waiting"]) == (2, 2, 0)
    assert a["wait"] == {"count": 2, "mean": 40.0, "p50": 40.0, "p95": 76.0, "p99": 79.2, "max": 80.0}
    assert b["wait"]["max"] == 100.0 and b["completion"]["max"] == 150.0
    assert a["completion"]["max"] == 100.0  # a0: 0 -> 100; a1: 20 -> 110
    # Bounded slowdown: a0 100/100 = 1, a1 90/max(10, 10) = 9; b0 150/50 = 3.
    assert a["slowdown"]["max"] == 9.0 and a["slowdown"]["p50"] == 5.0
    assert b["slowdown"]["mean"] == 3.0
    assert report["classes"]["long"]["jobs"] == 2 and report["classes"]["short"]["wait"]["max"] == 80.0
    # The node is busy from 0 to 160: the run ends at 160, so utilisation is 100%.
    assert report["end"] == 160.0 and report["makespan"] == 160.0
    assert report["resources"]["cpu"] == {"capacity": 1.0, "meanUtilisation": 100.0}
    assert a["meanHeld"]["cpu"] == pytest.approx(110 / 160, abs=1e-3)
    assert b["meanHeld"]["cpu"] == pytest.approx(50 / 160, abs=1e-3)
    assert report["waitingAtEnd"] == []
    assert sorted(report["waits"]["queues"]["a"]) == [0.0, 80.0]


def test_work_lost_to_an_eviction_is_counted_in_resource_hours():
    # The preemption of test_replay_clock: a 1-cpu pod of the low Job ran 100 s before its eviction.
    objs = [node("n0", cpu="2"), queue("q"), priority_class("low", 1), priority_class("high", 100)]
    objs += [created(podgroup("low", queue="q", priority_class="low"), 0)]
    objs += [
        created(batch_job("low", parallelism=2, group="low", annotations={DURATION_ANNOTATION: "300s"}), 0)
    ]
    objs += [created(podgroup("high", queue="q", priority_class="high"), 100)]
    objs += [timed_pod("high", created=100, duration="50s", group="high", priority_class="high")]
    report = _report(objs, config=eviction_config())
    q = report["queues"]["q"]
    assert q["evictions"] == {"preempt": 1}
    assert q["lostHours"] == {"cpu": round(100 / 3600, 3)}
    assert report["all"]["lostGpuHours"] == 0.0


def test_jobs_still_waiting_at_the_end_say_why():
    objs = [node("n0", cpu="2"), queue("a")]
    objs += [timed_pod("fits", created=0, duration="60s", queue="a")]
    objs += [timed_pod("huge", created=5, duration="60s", queue="a", cpu="8")]
    report = _report(objs)
    assert report["queues"]["a"]["waiting"] == 1
    [waiting] = report["waitingAtEnd"]
    assert waiting["job"] == "default/huge" and waiting["waiting"] == 55.0
    assert "cpu" in waiting["reason"], waiting["reason"]
    assert report["queues"]["a"]["stillWaitingMax"] == 55.0


def test_the_series_follow_what_queues_held_over_time():
    objs = [node("n0", cpu="4"), queue("a"), queue("b")]
    objs += [timed_pod("a0", created=0, duration="100s", queue="a", cpu="2")]
    objs += [timed_pod("b0", created=50, duration="100s", queue="b", cpu="1")]
    series = _report(objs)["series"]
    at = dict(zip(series["t"], range(len(series["t"])), strict=True))
    assert series["held"]["a"]["cpu"][at[0.0]] == 2 and series["held"]["b"]["cpu"][at[0.0]] == 0
    assert series["held"]["b"]["cpu"][at[50.0]] == 1
    assert series["utilisation"]["cpu"][at[50.0]] == 75.0
    assert series["utilisation"]["cpu"][at[100.0]] == 25.0  # a0 ended at 100


def test_distribution_of_nothing_is_empty():
    assert distribution([]) == {"count": 0, "mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    assert distribution([3.0])["p99"] == 3.0


def test_json_output_carries_the_report(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text(
        yaml.safe_dump_all(
            [node("n0", cpu="1"), queue("q"), timed_pod("a", created=0, duration="1m", queue="q")]
        )
    )
    assert main(["simulate", "--replay", "-f", str(path), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["report"]
    assert set(report) == {
        "start", "end", "makespan", "resources", "all", "queues", "classes", "series", "waitingAtEnd", "waits",
    }  # fmt: skip
    assert set(report["queues"]["q"]) >= {
        "jobs", "finished", "running", "waiting", "wait", "completion", "slowdown", "evictions", "lostHours",
        "lostGpuHours", "meanHeld", "meanShare", "guaranteeUsage", "meanDeserved", "stillWaitingMax",
    }  # fmt: skip


def test_series_keep_at_most_their_limit_by_doubling_their_step():
    from volsched.simulate.report import Series

    series = Series(step=1.0, limit=8)
    for t in range(100):
        series.sample(float(t), {"q": {"cpu": float(t)}}, {})
    assert len(series.t) <= 8 and series.step >= 8.0
    assert series.t == sorted(series.t) and series.t[0] == 0.0
    assert all(h["q"]["cpu"] == t for t, h in zip(series.t, series.held, strict=True))
