"""A Pod's or a Node's labels or annotations that are not a map (a string, a list, a number) are refused
with the object and the field named (:class:`InputError`), never read as a map (``dict("ab")``) nor let
through as another error: the cache refuses that one object and keeps the others."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod
from tests.unit._cycle_harness import CONFIG, FakePort, cache
from volsched.cycle import run_cycle
from volsched.model.decode import build_node, build_task
from volsched.model.errors import InputError

CASES = [
    ("annotations", "oops", "str"),
    ("labels", "ab", "str"),
    ("labels", ["ab", "cd"], "list"),  # was read as {"a": "b", "c": "d"}
    ("annotations", 5, "int"),
]


def _with(obj: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], field: value}}


@pytest.mark.parametrize(("field", "value", "kind"), CASES)
def test_a_pod_or_node_whose_labels_or_annotations_are_no_map_is_refused_naming_the_field(
    field: str, value: Any, kind: str
) -> None:
    with pytest.raises(InputError) as task_error:
        build_task(_with(pod("a"), field, value), priority_classes={})
    assert str(task_error.value) == f"Pod default/a: metadata.{field} must be a map, got {kind}"
    with pytest.raises(InputError) as node_error:
        build_node(_with(node("n1"), field, value))
    assert str(node_error.value) == f"Node n1: metadata.{field} must be a map, got {kind}"


@pytest.mark.parametrize(("field", "value", "kind"), CASES)
def test_the_cache_refuses_that_pod_alone_and_the_others_are_placed(
    field: str, value: Any, kind: str
) -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"), pod("c"))
    bad = _with(pod("b"), field, value)
    bad["metadata"].update(resourceVersion="10", uid="uid-b")
    assert not feeder.apply("Pod", bad)
    assert "default/b" not in feeder.state.tasks
    assert feeder.rejected["Pod default/b"].message.endswith(
        f"Pod default/b: metadata.{field} must be a map, got {kind}"
    )
    report = run_cycle(feeder, CONFIG, FakePort(), now=5000.0)
    assert sorted(b.pod for b in report.result.binds) == ["default/a", "default/c"]
