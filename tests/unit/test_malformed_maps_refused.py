"""A Pod's or a Node's labels or annotations that are not a map (a string, a list, a number) are refused
with the object and the field named (:class:`InputError`), never read as a map (``dict("ab")``) nor let
through as another error: the cache refuses that one object and keeps the others."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from tests.unit._cycle_harness import CONFIG, FakePort, cache
from volsched.cycle import run_cycle
from volsched.model.decode import build_node, build_podgroup, build_queue, build_task
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


@pytest.mark.parametrize("value", [["x"], {"name": "x"}], ids=["list", "map"])
def test_a_pod_whose_priority_class_name_is_no_string_is_refused_not_looked_up(value: Any) -> None:
    """A simulator's pod without ``spec.priority`` takes it from its class: a name that is no string is
    refused naming the field, never looked up (a list raised TypeError, and the simulator stopped with a
    traceback)."""
    bad = pod("a")
    bad["spec"]["priorityClassName"] = value
    with pytest.raises(InputError, match=r"Pod default/a: spec.priorityClassName must be a string"):
        build_task(bad, priority_classes={"low": 10})


def _nested(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    bad = pod("a")
    bad["spec"]["affinity"] = {}
    bad["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    bad["spec"]["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]
    at: Any = bad
    for part in path[:-1]:
        at = at[part]
    at[path[-1]] = value
    return bad


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        (("spec", "affinity", "nodeAffinity"), "x", "spec.affinity.nodeAffinity must be a map, got str"),
        (("spec", "containers", 0, "ports"), -1, "spec.containers[0].ports: expected a list, got int"),
        (("spec", "initContainers"), 5, "spec.initContainers: expected a list, got int"),
        (("spec", "volumes"), -1, "spec.volumes: expected a list, got int"),
    ],
    ids=["nodeAffinity", "ports", "initContainers", "volumes"],
)
def test_a_pod_field_of_the_wrong_shape_is_refused_naming_it(
    path: tuple[str | int, ...], value: Any, said: str
) -> None:
    """A simulator's pod (the apiserver's are typed) whose field is not the list or map it must be is
    refused naming it, never read as one: a nodeAffinity, ports or volumes of the wrong shape raised
    AttributeError or TypeError, and the simulator stopped with a traceback."""
    with pytest.raises(InputError) as error:
        build_task(_nested(path, value), priority_classes={})
    assert str(error.value) == f"Pod default/a: {said}"


def test_a_podgroup_or_queue_whose_status_is_no_map_is_refused_naming_it() -> None:
    """A simulator's Volcano PodGroup or Queue whose ``status`` is no map (the CRDs type it; a file need
    not) is refused naming it: its phase or state was read with ``.get`` and raised AttributeError."""
    group, bad_queue = podgroup("g"), queue("q")
    group["status"] = bad_queue["status"] = "Running"
    with pytest.raises(InputError, match=r"^PodGroup default/g: status must be a map, got str$"):
        build_podgroup(group)
    with pytest.raises(InputError, match=r"^Queue q: status must be a map, got str$"):
        build_queue(bad_queue)
