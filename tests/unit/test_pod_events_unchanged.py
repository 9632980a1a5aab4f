"""A pod event that shows nothing the cache keeps but a new resourceVersion (the watch confirming a bind,
a condition the pruner drops) keeps the cached task as it is, unparsed; any other difference is parsed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

import pytest

import volsched.cache.state as state_module
from tests.builders import Obj, node, pod
from tests.unit._cycle_harness import cache
from volsched.cache.feeder import Feeder
from volsched.model.cluster import Task, TaskStatus
from volsched.model.decode import build_task

KEY = "default/a"


def again(feeder: Feeder, *, rv: int, node_name: str | None = None, **changes: Any) -> Obj:
    """The cached pod ``a`` as the API would send it again: another resourceVersion, ``changes``
    (top-level fields, ``metadata`` merged) and, with ``node_name``, bound there."""
    raw = feeder.state.raw_pods[KEY]
    spec = {k: v for k, v in raw["spec"].items() if k != "nodeName"}
    if node_name:
        spec["nodeName"] = node_name
    meta = {**raw["metadata"], "resourceVersion": str(rv), **changes.pop("metadata", {})}
    return {**raw, "spec": spec, "metadata": meta, **changes}


#: (what the event shows, the event, whether the bind to n1 is assumed first, the task kept as it was)
EVENTS: list[tuple[str, Callable[[Feeder], Obj], bool, bool]] = [
    ("the assumed bind confirmed", lambda f: again(f, rv=50, node_name="n1"), True, True),
    ("a pending pod unchanged", lambda f: again(f, rv=50), False, True),
    ("an assumed pod still unbound", lambda f: again(f, rv=50), True, True),
    ("another node than assumed", lambda f: again(f, rv=50, node_name="n2"), True, False),
    ("bound without an assumption", lambda f: again(f, rv=50, node_name="n1"), False, False),
    ("a new label", lambda f: again(f, rv=50, metadata={"labels": {"x": "y"}}), False, False),
    ("another phase", lambda f: again(f, rv=50, status={"phase": "Failed"}), False, False),
    ("a field more", lambda f: again(f, rv=50, extra={}), False, False),
    (
        "a deletion started",
        lambda f: again(f, rv=50, node_name="n1", metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"}),
        True,
        False,
    ),
]


@pytest.mark.parametrize(("what", "event", "assumed", "kept"), EVENTS, ids=[e[0] for e in EVENTS])
def test_a_pod_event_is_parsed_only_when_it_shows_something_new(
    what: str, event: Callable[[Feeder], Obj], assumed: bool, kept: bool
) -> None:
    feeder = cache(node("n1", cpu="4"), node("n2", cpu="4"), pod("a", phase="Pending"))
    if assumed:
        feeder.assume(KEY, "uid-a", "n1")
    task = feeder.state.tasks[KEY]
    obj = event(feeder)
    assert feeder.apply("Pod", obj)
    assert feeder.state.raw_pods[KEY]["metadata"]["resourceVersion"] == "50"
    assert (feeder.state.tasks[KEY] is task) is kept


def test_a_confirmed_bind_keeps_the_pod_bound_once_its_assumption_is_gone() -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"))
    feeder.assume(KEY, "uid-a", "n1")
    feeder.finish(KEY)
    feeder.apply("Pod", again(feeder, rv=50, node_name="n1"))
    assert not feeder.is_assumed(KEY)
    feeder.forget(KEY)  # a late forget finds nothing assumed: the API's bound pod stays
    task = feeder.state.tasks[KEY]
    assert (task.node_name, task.status) == ("n1", TaskStatus.BOUND)
    assert feeder.state.raw_pods[KEY]["spec"]["nodeName"] == "n1"


def _task_fields(task: Task) -> dict[str, Any]:
    return {f.name: getattr(task, f.name) for f in fields(Task) if f.name != "request"} | {
        "request": task.request.tolist()
    }


#: (what the echo of the bind to n1 (assumed, for a pod of ours) shows, the pod as cached before, the echo). Each is fed to a
#: cache that keeps its task when the echo shows nothing new and to one that always builds it again.
ECHOES: list[tuple[str, Callable[[], Obj], Callable[[Feeder], Obj]]] = [
    ("a plain confirmation", lambda: pod("a", phase="Pending"), lambda f: again(f, rv=50, node_name="n1")),
    (
        "a confirmation with a relabel",
        lambda: pod("a", phase="Pending", labels={"x": "y"}),
        lambda f: again(f, rv=50, node_name="n1", metadata={"labels": {"x": "z"}}),
    ),
    (
        "a confirmation with the pod Running",
        lambda: pod("a", phase="Pending"),
        lambda f: again(
            f, rv=50, node_name="n1", status={"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
        ),
    ),
    (
        "a confirmation with a Ready condition",
        lambda: pod("a", phase="Pending"),
        lambda f: again(
            f,
            rv=50,
            node_name="n1",
            status={"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]},
        ),
    ),
    (
        "a confirmation with a deletion started",
        lambda: pod("a", phase="Pending"),
        lambda f: again(f, rv=50, node_name="n1", metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"}),
    ),
    (
        "the pod recreated under another uid and bound there",
        lambda: pod("a", phase="Pending"),
        lambda f: again(f, rv=50, node_name="n1", metadata={"uid": "uid-a2"}),
    ),
    (
        "a confirmation with a changed annotation",
        lambda: pod("a", phase="Pending", annotations={"scheduling.volsched.io/preemptable": "true"}),
        lambda f: again(
            f,
            rv=50,
            node_name="n1",
            metadata={"annotations": {"scheduling.volsched.io/preemptable": "false"}},
        ),
    ),
    (
        "a confirmation with another owner",
        lambda: pod("a", phase="Pending", owner="Job/j1"),
        lambda f: again(
            f,
            rv=50,
            node_name="n1",
            metadata={
                "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": "j2", "controller": True}
                ]
            },
        ),
    ),
    (
        "a confirmation with another priority",
        lambda: pod("a", phase="Pending"),
        lambda f: again(f, rv=50, node_name="n1", spec={**f.state.raw_pods[KEY]["spec"], "priority": 7}),
    ),
    (
        "a pod of another scheduler bound",
        lambda: pod("a", phase="Pending", scheduler="default-scheduler"),
        lambda f: again(f, rv=50, node_name="n1"),
    ),
]


@pytest.mark.parametrize(("what", "cached", "echo"), ECHOES, ids=[e[0] for e in ECHOES])
def test_the_echo_of_an_assumed_bind_leaves_the_task_a_full_build_makes_and_counts_as_one_does(
    what: str, cached: Callable[[], Obj], echo: Callable[[Feeder], Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[dict[str, Any], int, dict[str, int], bool]] = []
    for full in (False, True):
        if full:  # the old path: every event parsed again
            monkeypatch.setattr(state_module, "_shows_nothing_new", lambda cached, obj: False)
        feeder = cache(node("n1", cpu="4"), cached())
        if feeder.state.tasks[KEY].schedulable_by_us:  # kube-scheduler binds the other pods: none assumed
            feeder.assume(KEY, "uid-a", "n1")
            feeder.finish(KEY)
        state = feeder.state
        assumed = state.tasks[KEY]
        changes, rings = state.changes, dict(state.doorbell.count)
        assert feeder.apply("Pod", echo(feeder))
        task = state.tasks[KEY]
        rebuilt = build_task(
            state.raw_pods[KEY],
            priority_classes=state.priority_classes,
            default_priority=state.default_priority,
            scheduler_names=state.scheduler_names,
        )
        assert _task_fields(task) == _task_fields(rebuilt)
        rung = {k: n - rings[k] for k, n in state.doorbell.count.items()}
        seen.append((_task_fields(task), state.changes - changes, rung, task is assumed))
    (kept, changed, rung, reused), (built, changed_full, rung_full, _) = seen
    assert kept == built
    assert (changed, rung) == (changed_full, rung_full)
    assert reused is (what == "a plain confirmation")
