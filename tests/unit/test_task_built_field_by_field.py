"""A pod's task is built as a copy of one blank task, filled field by field (not the dataclass's call with
three dozen keywords, which matches each keyword against fifty parameters): every field is what the
dataclass's construction with the same values gives, no task holds a dict or list of the blank's (each
field whose default is made per task is set from the pod), and filling or changing one task never
changes the blank or another task."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from volsched.model import decode
from volsched.model.decode import build_task
from volsched.model.vocabulary import Task

POD: dict[str, Any] = {
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "uid": "u-p",
        "creationTimestamp": "2026-11-29T22:36:13Z",
        "labels": {"app": "bench"},
        "annotations": {"scheduling.volsched.io/expected-runtime": "10m"},
        "ownerReferences": [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j1", "controller": True}
        ],
    },
    "spec": {
        "schedulerName": "volsched",
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}],
    },
    "status": {"phase": "Pending", "nominatedNodeName": "n1"},
}


def _pods() -> list[dict[str, Any]]:
    bare = copy.deepcopy(POD)
    del bare["metadata"]["labels"], bare["metadata"]["annotations"], bare["metadata"]["ownerReferences"]
    del bare["spec"]["nodeSelector"], bare["spec"]["tolerations"]
    bound = copy.deepcopy(POD)
    bound["spec"]["nodeName"] = "n2"
    bound["status"] = {"phase": "Running", "startTime": "2026-11-29T22:40:00Z"}
    return [POD, bare, bound]


def test_each_field_is_what_the_dataclass_gives_with_the_same_values() -> None:
    for pod in _pods():
        task = build_task(pod, priority_classes={})
        values = {f.name: getattr(task, f.name) for f in dataclasses.fields(Task) if f.init}
        made = Task(**values)
        for f in dataclasses.fields(Task):
            assert getattr(task, f.name) is getattr(made, f.name), f.name  # (the same objects: each set)
        assert task.key == "ns/p"


def test_no_task_holds_a_dict_or_list_of_the_blank() -> None:
    blank = decode._BLANK_TASK
    made = [f.name for f in dataclasses.fields(Task) if f.default_factory is not dataclasses.MISSING]
    assert "labels" in made and "node_selector" in made
    for pod in _pods():
        task = build_task(pod, priority_classes={})
        for name in made:
            if name == "request":  # one shared read-only array, as the dataclass's default gives
                assert task.request is Task(**_required()).request
                continue
            assert getattr(task, name) is not getattr(blank, name), name


def test_changing_a_task_leaves_the_blank_and_other_tasks_as_they_were() -> None:
    blank = decode._BLANK_TASK
    request = blank.request
    before = {
        f.name: copy.copy(getattr(blank, f.name)) for f in dataclasses.fields(Task) if f.name != "request"
    }
    a, b = (build_task(copy.deepcopy(_pods()[1]), priority_classes={}) for _ in range(2))
    a.labels["x"] = "1"  # (a pod's own map; the parse's selector and tolerations are shared by design)
    a.annotations["y"] = "2"
    a.avoid_nodes = ("n1",)
    a.nominated_node = "n3"
    a.placement_key = "k"
    assert b.labels == {} and b.annotations == {} and b.avoid_nodes == () and b.nominated_node == "n1"
    assert {name: getattr(blank, name) for name in before} == before and blank.request is request


def _required() -> dict[str, Any]:
    return {
        f.name: getattr(decode._BLANK_TASK, f.name)
        for f in dataclasses.fields(Task)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
