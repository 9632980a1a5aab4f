"""minruntime alone: a running pod is a victim of preempt or reclaim only once it has run its minimum
(for every pod, per queue, per priority class: the largest applies), and a pod that has not started
(or started at an unknown time) has run nothing. One session each, at a known clock."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, priority_class, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config, make_actions
from volsched.framework.runner import close_session, open_session
from volsched.model.errors import InputError
from volsched.model.vocabulary import Task, TaskStatus
from volsched.plugins.shared.runtimes import MinRuntimes, ran_for
from volsched.simulate.documents import iso

Obj = dict[str, Any]
NOW = 1_000_000.0


def started(obj: Obj, ago: float | None) -> Obj:
    """``obj`` (a running pod) with ``status.startTime`` ``ago`` seconds before NOW (None: none)."""
    if ago is not None:
        obj["status"]["startTime"] = iso(NOW - ago)
    return obj


def evicted(
    arguments: str | None,
    *,
    ago: float | None,
    victim_class: str = "low",
    q: str = "q",
    waited: float = 0.0,
    expected: str | None = None,
) -> list[str]:
    """Evictions of a session where a high-priority pod needs the node a low-priority pod runs on."""
    plugins = "{name: priority}, {name: gang, enablePreemptable: false}, {name: predicates}"
    if arguments is not None:
        plugins += f", {{name: minruntime, arguments: {arguments}}}"
    objects = [
        node("n1", cpu="2"),
        queue("q"),
        queue("other"),
        priority_class("low", 1),
        priority_class("low-short", 2),
        priority_class("high", 100),
        podgroup("lo", ns="ns", queue=q, min_member=1, phase="Running", priority_class=victim_class),
        started(
            pod(
                "lo-0",
                ns="ns",
                cpu="2",
                group="lo",
                node="n1",
                priority_class=victim_class,
                annotations={"scheduling.volsched.io/expected-runtime": expected} if expected else None,
            ),
            ago,
        ),
        podgroup("hi", ns="ns", queue=q, phase="Inqueue", priority_class="high"),
        pod("hi-0", ns="ns", cpu="2", group="hi", priority_class="high", created=iso(NOW - waited)),
    ]
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    config = load_config(text=f'actions: "preempt"\ntiers:\n- plugins: [{plugins}]\n')
    session = open_session(state.snapshot(now=NOW), config)
    for action in make_actions(config):
        action.execute(session)
    return [e.pod for e in close_session(session).evictions]


CASES = [
    (None, 60.0, {}, True, "without-the-plugin-a-pod-a-minute-old-goes"),
    ("{minRuntime: 10m}", 60.0, {}, False, "a-pod-short-of-its-minimum-is-kept"),
    ("{minRuntime: 10m}", 601.0, {}, True, "a-pod-past-its-minimum-goes"),
    ("{minRuntime: 10m}", None, {}, False, "a-pod-with-no-start-time-has-run-nothing"),
    ("{minRuntime: 0s}", 1.0, {}, True, "a-zero-minimum-protects-nothing"),
    ("{minRuntime: 1m, queues: {q: 30m}}", 900.0, {}, False, "the-queue-minimum-is-longer-and-holds"),
    ("{minRuntime: 1m, queues: {other: 30m}}", 900.0, {}, True, "another-queue-minimum-does-not-apply"),
    ("{minRuntime: 1m, queues: {other: 30m}}", 900.0, {"q": "other"}, False, "its-own-queue-minimum-applies"),
    ("{priorityClasses: {low: 1h}}", 1800.0, {}, False, "the-priority-class-minimum-holds"),
    ("{priorityClasses: {low: 1h}}", 1800.0, {"victim_class": "low-short"}, True,
     "another-priority-class-minimum-does-not-apply"),
    ("{minRuntime: 2h, priorityClasses: {low: 1m}}", 1800.0, {}, False, "the-largest-minimum-applies"),
    ("{preemptionDelay: 10m}", 60.0, {"waited": 300.0}, False, "a-pod-that-waited-less-than-the-delay-evicts-nothing"),
    ("{minRuntime: 1m}", 1800.0, {"expected": "1h"}, False, "a-pod-past-half-its-expected-run-is-kept"),
    ("{minRuntime: 1m}", 1700.0, {"expected": "1h"}, True, "a-pod-short-of-half-its-expected-run-goes"),
    ("{minRuntime: 1m, protectFinishing: false}", 1800.0, {"expected": "1h"}, True,
     "protect-finishing-off-takes-it"),
    # The defect: a pod past its expected end was "finishing" for ever (ran >= expected - ran), so a tenant
    # writing expected-runtime: 1s on its pods made them no victim of preempt or reclaim.
    ("{minRuntime: 1m}", 3600.0, {"expected": "1m"}, True, "a-pod-past-its-expected-end-is-not-finishing"),
    ("{minRuntime: 0s}", 3600.0, {"expected": "1s"}, True, "a-one-second-expected-run-shields-nothing"),
    ("{preemptionDelay: 10m}", 60.0, {"waited": 601.0}, True, "a-pod-that-waited-the-delay-evicts"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("arguments", "ago", "kw", "goes"), [c[:4] for c in CASES], ids=[c[4] for c in CASES]
)
def test_victim_only_past_its_minimum(
    arguments: str | None, ago: float | None, kw: dict[str, Any], goes: bool
) -> None:
    assert evicted(arguments, ago=ago, **kw) == (["ns/lo-0"] if goes else [])


def _task(status: TaskStatus, start: float) -> Task:
    return Task(
        namespace="ns", name="t", uid="u", job_key="ns/t", request_map={}, priority=0, status=status,
        node_name="n1", scheduler_name="volsched", creation=0.0, start_time=start,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("status", "start", "ran"),
    [
        (TaskStatus.RUNNING, NOW - 90, 90.0),
        (TaskStatus.RUNNING, 0.0, 0.0),
        (TaskStatus.RUNNING, NOW + 5, 0.0),  # a clock behind the kubelet's: nothing run yet
        (TaskStatus.BOUND, NOW - 90, 0.0),
        (TaskStatus.ALLOCATED, 0.0, 0.0),
    ],
)
def test_ran_for(status: TaskStatus, start: float, ran: float) -> None:
    assert ran_for(_task(status, start), NOW) == ran


def test_bad_minimum_is_refused_naming_the_key() -> None:
    with pytest.raises(InputError, match=r"queues\.q"):
        load_config(
            text='actions: "preempt"\ntiers:\n- plugins: [{name: minruntime, arguments: {queues: {q: soon}}}]\n'
        )
    assert not MinRuntimes().any


def test_an_eviction_says_how_much_work_it_throws_away() -> None:
    from volsched.framework.decisions import Evict, EvictionReason
    from volsched.framework.messages import render_eviction

    reason = EvictionReason(action="preempt", frees={"nvidia.com/gpu": 4.0}, ran=3900.0)
    text = render_eviction(Evict(pod="ns/a-0", uid="u", node="n1", reason=reason))
    assert "throws away 1h5m of work on nvidia.com/gpu 4" in text
    fresh = EvictionReason(action="preempt", frees={"nvidia.com/gpu": 4.0})
    assert "throws away" not in render_eviction(Evict(pod="ns/a-0", uid="u", node="n1", reason=fresh))


@pytest.mark.parametrize(
    ("annotations", "deadline", "expected"),
    [({}, None, None), ({}, 600, 600.0), ({"scheduling.volsched.io/expected-runtime": "90m"}, 600, 5400.0)],
)
def test_expected_runtime_from_the_annotation_then_the_deadline(
    annotations: dict[str, str], deadline: int | None, expected: float | None
) -> None:
    from volsched.model.decode import build_task
    from volsched.plugins.shared.runtimes import expected_runtime

    raw = pod("p", annotations=annotations)
    if deadline is not None:
        raw["spec"]["activeDeadlineSeconds"] = deadline
    assert expected_runtime(build_task(raw, priority_classes={})) == expected


def test_a_bad_expected_runtime_is_refused_naming_the_annotation() -> None:
    from volsched.model.decode import build_task

    with pytest.raises(InputError, match="expected-runtime"):
        build_task(
            pod("p", annotations={"scheduling.volsched.io/expected-runtime": "soon"}), priority_classes={}
        )
