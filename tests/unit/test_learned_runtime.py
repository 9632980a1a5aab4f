"""The expected run time of a pod that says none: what the pods of its namespace and queue took before,
as the cache learned it from pods seen to succeed (the operator, from the pod's status; the simulator,
as its kubelet ends a pod), the longest of the last runs once three are known."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.model.history import KEEP, RuntimeHistory
from volsched.plugins.shared.runtimes import runtimes_of
from volsched.simulate.documents import iso

Obj = dict[str, Any]
NOW = 1_000_000.0
EXPECTED = "scheduling.volsched.io/expected-runtime"


@pytest.mark.parametrize(
    ("runs", "estimate"),
    [
        ([], None),
        ([600.0, 900.0], None),  # two runs: too few to say
        ([600.0, 900.0, 300.0], 900.0),  # the longest
        ([600.0, 0.0, -5.0, 900.0], None),  # what ran no time says nothing
        ([5000.0] + [600.0] * KEEP, 600.0),  # only the last runs count
    ],
)
def test_the_estimate_is_the_longest_of_the_last_runs(runs: list[float], estimate: float | None) -> None:
    history = RuntimeHistory()
    for seconds in runs:
        history.learn("ns", "q", seconds)
    assert history.estimates().get(("ns", "q")) == estimate


def running(name: str, *, started: float, **kw: Any) -> Obj:
    obj = pod(name, ns="ns", node="n1", **kw)
    obj["status"]["startTime"] = iso(started)
    return obj


def succeeded(obj: Obj, *, finished: float | None, phase: str = "Succeeded") -> Obj:
    status: Obj = {**obj["status"], "phase": phase}
    if finished is not None:
        terminated = {"exitCode": 0, "finishedAt": iso(finished)}
        status["containerStatuses"] = [{"name": "main", "state": {"terminated": terminated}}]
    return {**obj, "status": status}


def learned(*, phase: str = "Succeeded", finished: bool = True, **kw: Any) -> dict[tuple[str, str], float]:
    """What the cache learns from three pods that ran 10, 20 and 30 minutes and ended ``phase``."""
    state = ClusterState()
    for obj in (node("n1", cpu="64"), queue("q"), queue("other"), podgroup("g", ns="ns", queue="other")):
        state.apply(obj)
    for i, minutes in enumerate((10, 20, 30)):
        obj = running(f"p{i}", started=NOW, **kw)
        state.apply(obj)
        state.apply(succeeded(obj, finished=NOW + 60 * minutes if finished else None, phase=phase))
    return dict(state.snapshot(now=NOW + 3600).learned_runtimes or {})


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"queue": "q"}, {("ns", "q"): 1800.0}),
        ({"group": "g"}, {("ns", "other"): 1800.0}),  # a gang's pods: its PodGroup's queue
        ({}, {("ns", "default"): 1800.0}),
        ({"queue": "q", "phase": "Failed"}, {}),  # a failed pod says nothing of how long the work takes
        ({"queue": "q", "finished": False}, {}),  # no container says when it ended: nothing learned
    ],
    ids=[
        "its-queue",
        "its-podgroup's-queue",
        "the-default-queue",
        "not-from-a-failed-pod",
        "not-without-an-end",
    ],
)
def test_the_cache_learns_from_pods_seen_to_succeed(kw: dict[str, Any], expected: Obj) -> None:
    assert learned(**kw) == expected


def test_a_restarted_operator_learns_from_the_pods_it_first_sees_succeeded_and_once_only() -> None:
    state = ClusterState()
    for obj in (node("n1", cpu="64"), queue("q")):
        state.apply(obj)
    for i, minutes in enumerate((10, 20, 30)):
        done = succeeded(running(f"p{i}", started=NOW, queue="q"), finished=NOW + 60 * minutes)
        state.apply(done)
        state.apply({**done, "metadata": {**done["metadata"], "resourceVersion": "2"}})  # listed again
    assert state.snapshot(now=NOW).learned_runtimes == {("ns", "q"): 1800.0}
    assert list(state.runtimes._runs[("ns", "q")]) == [600.0, 1200.0, 1800.0]


def test_what_the_watch_keeps_of_a_pod_is_enough_to_learn_from() -> None:
    from volsched.kube.prune import prune_pod

    state = ClusterState()
    for obj in (node("n1", cpu="64"), queue("q")):
        state.apply(obj)
    for i in range(3):
        obj = running(f"p{i}", started=NOW, queue="q")
        state.apply(prune_pod(obj))
        state.apply(prune_pod(succeeded(obj, finished=NOW + 600)))
    assert state.snapshot(now=NOW).learned_runtimes == {("ns", "q"): 600.0}


def test_the_simulator_tells_the_cache_when_its_kubelet_ends_a_pod() -> None:
    state = ClusterState()
    for obj in (node("n1"), queue("q")):
        state.apply(obj)
    for i in range(3):
        state.apply(running(f"p{i}", started=NOW, queue="q"))
        state.pod_finished(f"ns/p{i}", NOW + 600 * (i + 1))
    state.pod_finished("ns/gone", NOW + 99_999)  # a pod the cache does not hold: nothing
    assert state.snapshot(now=NOW).learned_runtimes == {("ns", "q"): 1800.0}


def test_a_pod_that_says_its_run_time_keeps_it_and_one_that_says_none_takes_its_queues() -> None:
    state = ClusterState()
    for obj in (node("n1", cpu="64"), queue("q"), queue("other")):
        state.apply(obj)
    for i in range(3):
        obj = running(f"done-{i}", started=NOW - 7200, queue="q")
        state.apply(obj)
        state.apply(succeeded(obj, finished=NOW - 3600))
    state.apply(pod("says", ns="ns", queue="q", annotations={EXPECTED: "5m"}))
    state.apply(pod("silent", ns="ns", queue="q"))
    state.apply(pod("elsewhere", ns="ns", queue="other"))
    session = open_session(
        state.snapshot(now=NOW),
        load_config(text='actions: "allocate"\ntiers:\n- plugins: [{name: priority}]\n'),
    )
    of = runtimes_of(session)
    tasks = {t.name: t for job in session.jobs.values() for t in job.tasks.values()}
    assert (of(tasks["says"]), of(tasks["silent"]), of(tasks["elsewhere"])) == (300.0, 3600.0, None)
