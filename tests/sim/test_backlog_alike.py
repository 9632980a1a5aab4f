"""A backlog of jobs alike (one queue's, one class's, as a trace makes them): preempt and reclaim ask for
one job of a shape while nothing is evicted, enqueue while nothing is admitted and gives the others the same answer, in their own names. Every
session decides exactly what it decides when each job is asked (a plugin that does not declare
``answers_by_shape`` turns the reuse off), and each success is followed by a fresh look."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

import volsched.actions.eviction as eviction
import volsched.simulate.replay as replay_module
from tests.builders import node, priority_class, queue
from tests.sim._eviction_helpers import Staged, eviction_config, job
from volsched.framework.points import PointTables
from volsched.framework.registry import load_config
from volsched.plugins.priority import Priority
from volsched.simulate import Document, Replay
from volsched.simulate.scenarios import RECLAIM_PREEMPT_CONFIG
from volsched.simulate.trace import TraceJob

PRIORITIES = [priority_class("high", 1000), priority_class("low", 10)]

#: (class, pods, cpu a pod, priority, seconds between arrivals, runtime): low-priority jobs fill the
#: queue, higher ones keep arriving and preempt them, the lowest can never preempt; two classes of one
#: priority take turns (one's eviction changes what the next of the other may take).
CLASSES = [
    ("small", 1, 1, 50, 0.25, 3.0),
    ("medium", 1, 3, 100, 1.0, 4.0),
    ("tiny", 1, 1, 100, 0.5, 2.0),
    ("gang", 2, 2, 150, 3.0, 5.0),
    ("large", 1, 6, 200, 4.0, 6.0),
]


def _trace(queues: list[str], jobs_per_class: int) -> list[TraceJob]:
    out = []
    for q in queues:
        for name, pods, cpu, priority, every, runtime in CLASSES:
            for i in range(jobs_per_class):
                out.append(
                    TraceJob(
                        name=f"{name}-{i}",
                        namespace=q,
                        submit=round(i * every, 3),
                        queue=q,
                        requests={"cpu": str(cpu)},
                        duration=runtime,
                        pods=pods,
                        priority=priority,
                        job_class=name,
                    )
                )
    return sorted(out, key=lambda j: j.submit)


#: With the reservation (its node filter exempts the job it holds nodes for) and minruntime (its delay
#: reads a pod's age): both tell the jobs they answer apart to the shapes (``add_shape_fn``).
STARVATION_CONFIG = RECLAIM_PREEMPT_CONFIG.replace(
    "  - name: proportion\n",
    "  - name: proportion\n  - name: reservation\n  - name: minruntime\n"
    "    arguments: {minRuntime: 1s, preemptionDelay: 2s, weighWork: false}\n",
)


def _replay(queues: list[str], jobs_per_class: int, config: str = RECLAIM_PREEMPT_CONFIG) -> list[Any]:
    """Every session's decisions and refusals, in order."""
    objs = [node("n0", cpu="8"), node("n1", cpu="8")] + [queue(q) for q in queues]
    objs += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": q}} for q in queues]
    sessions: list[Any] = []
    run_cycle = replay_module.run_cycle

    def recording(*args: Any, **kwargs: Any) -> Any:
        report = run_cycle(*args, **kwargs)
        r = report.result
        if not report.skipped:
            sessions.append(
                (r.binds, r.evictions, r.admitted, sorted(r.rejections.items()), sorted(r.podgroups.items()))
            )
        return report

    replay_module.run_cycle = recording
    try:
        docs = [Document(f"test: object {i}", o) for i, o in enumerate(objs)]
        Replay(docs, load_config(text=config), trace=_trace(queues, jobs_per_class)).run()
    finally:
        replay_module.run_cycle = run_cycle
    return sessions


@pytest.mark.parametrize(
    ("queues", "jobs", "expect_fewer"),
    [(["team-a"], 24, ["preempt"]), (["team-a", "team-b"], 12, ["preempt", "reclaim", "enqueue"])],
)
def test_jobs_alike_get_the_answer_each_would_get_asked_alone(monkeypatch, queues, jobs, expect_fewer):
    tried: list[str] = []
    place = eviction.place_by_evicting

    def counted(*args: Any, **kwargs: Any) -> Any:
        tried.append(kwargs["action"])
        return place(*args, **kwargs)

    monkeypatch.setattr(eviction, "place_by_evicting", counted)
    vote = PointTables.job_enqueueable

    def voted(self: PointTables, job: Any) -> Any:
        tried.append("enqueue")
        return vote(self, job)

    monkeypatch.setattr(PointTables, "job_enqueueable", voted)
    preemptive = PointTables.preemptive

    def refused(self: PointTables, queue: Any, task: Any) -> Any:
        tried.append("reclaim")  # a job reclaim asks about: refused here, or tried node by node after
        return preemptive(self, queue, task)

    monkeypatch.setattr(PointTables, "preemptive", refused)
    reused = _replay(queues, jobs)
    asked_reused = Counter(tried)
    tried.clear()
    monkeypatch.setattr(Priority, "answers_by_shape", False)  # one plugin that does not say so: each asked
    each = _replay(queues, jobs)
    asked_each = Counter(tried)
    assert any(evictions for _, evictions, *_ in each)  # evictions: jobs after them were asked again
    assert reused == each
    for action in expect_fewer:
        assert asked_reused[action] < asked_each[action]
    assert asked_reused["preempt"] < asked_each["preempt"] / 2


def test_the_reservation_and_minimum_run_time_answer_jobs_alike_alike(monkeypatch):
    """With the reservation and minruntime in the config, jobs alike are asked once a shape too (before,
    neither declared answers_by_shape, so every job was asked), and every session decides the same."""
    asked: Counter[str] = Counter()
    vote = PointTables.job_enqueueable

    def voted(self: PointTables, job: Any) -> Any:
        asked["enqueue"] += 1
        return vote(self, job)

    monkeypatch.setattr(PointTables, "job_enqueueable", voted)
    place = eviction.place_by_evicting

    def counted(*args: Any, **kwargs: Any) -> Any:
        asked[kwargs["action"]] += 1
        return place(*args, **kwargs)

    monkeypatch.setattr(eviction, "place_by_evicting", counted)
    reused = _replay(["team-a", "team-b"], 12, STARVATION_CONFIG)
    asked_reused = +asked
    asked.clear()
    monkeypatch.setattr(Priority, "answers_by_shape", False)
    each = _replay(["team-a", "team-b"], 12, STARVATION_CONFIG)
    assert any(evictions for _, evictions, *_ in each)
    assert any(r.reservation for *_, podgroups in each for _, r in podgroups)
    assert reused == each
    assert asked_reused["preempt"] < asked["preempt"] and asked_reused["enqueue"] < asked["enqueue"]


def test_jobs_alike_with_another_between_them_that_evicts(monkeypatch):
    # One node of 8 cpu full of a low-priority job. a-big and c-big ask 9 cpu: nowhere, whatever is
    # evicted; b-one, between them in job order, evicts a pod and takes its room. Each session refuses
    # the big ones in the very words it uses when each is asked.
    before = [node("n1", cpu="8"), queue("q"), *PRIORITIES, *job("low", ns="ns", queue="q", size=8)]
    after = [
        *job("a-big", ns="ns", queue="q", size=1, cpu="9", priority_class="high"),
        *job("b-one", ns="ns", queue="q", size=1, priority_class="high"),
        *job("c-big", ns="ns", queue="q", size=1, cpu="9", priority_class="high"),
    ]
    reused = Staged(before, after, eviction_config())
    monkeypatch.setattr(Priority, "answers_by_shape", False)
    each = Staged(before, after, eviction_config())
    assert reused.evicted("ns/low-") == each.evicted("ns/low-") != []
    assert [h.rejections for h in reused.history] == [h.rejections for h in each.history]
    assert "c-big-0" in json.dumps(reused.data["podgroups"]["ns/c-big"])
