"""A pod event that shows nothing the cache keeps but a new resourceVersion (the watch confirming a bind,
a condition the pruner drops) keeps the cached task as it is, unparsed; any other difference is parsed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.builders import Obj, node, pod
from tests.unit._cycle_harness import cache
from volsched.cache.feeder import Feeder
from volsched.model.cluster import TaskStatus

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
