"""A pod's ``ephemeral-storage`` and ``hugepages-*`` requests are placed by as kube-scheduler's
NodeResourcesFit places them: within what each node has allocatable, what its pods ask counted against
it. volsched left both out of its resources: two pods asking 8Gi of ephemeral storage went to a node of
10Gi, a pod asking 2Gi of huge pages to a node of 1Gi, and the kubelet refused them (OutOfephemeral-storage,
OutOfhugepages-2Mi: the pod Failed). Neither is part of a queue's fair share (as the pods count)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import Obj, node, pod, queue, run


def _node(name: str, **allocatable: str) -> Obj:
    out = node(name, cpu="8")
    out["status"]["allocatable"].update(allocatable)
    out["status"].setdefault("capacity", {}).update(allocatable)
    return out


def _asking(name: str, **requests: str) -> Obj:
    out = pod(name, cpu="1", queue=requests.pop("queue", None))
    out["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", **requests}}
    return out


@pytest.mark.parametrize(
    ("resource", "node_has", "each_asks"),
    [
        ("ephemeral-storage", "10Gi", "8Gi"),
        ("hugepages-2Mi", "1Gi", "600Mi"),
        ("hugepages-1Gi", "2Gi", "2Gi"),
    ],
)
def test_a_node_holds_no_more_than_its_allocatable(resource: str, node_has: str, each_asks: str) -> None:
    data = run(
        [_node("n1", **{resource: node_has}), *(_asking(f"p{i}", **{resource: each_asks}) for i in range(2))]
    )
    placed = sorted(p["node"] or "" for p in data["pods"].values())
    assert placed == ["", "n1"], data["pods"]
    [told] = [e["message"] for e in data["events"] if e["reason"] == "FailedScheduling"]
    assert f"insufficient {resource} (needs {each_asks}" in told, told


def test_a_node_that_reports_none_holds_none() -> None:
    """As kube-scheduler: a request of a resource the node does not report (0 allocatable) fits nowhere."""
    data = run([node("n1", cpu="8"), _asking("p", **{"ephemeral-storage": "1Gi"})])
    assert data["pods"]["default/p"]["node"] is None


def test_they_are_no_part_of_a_queues_fair_share() -> None:
    """Two queues of equal weight on 8 cpu: each deserves 4 cpu, whatever storage their pods ask."""
    objs: list[Any] = [_node("n1", **{"ephemeral-storage": "100Gi"}), queue("a"), queue("b")]
    objs += [_asking(f"a{i}", queue="a", **{"ephemeral-storage": "10Gi"}) for i in range(6)]
    objs += [_asking(f"b{i}", queue="b") for i in range(6)]
    data = run(objs)
    deserved = {q: data["queues"][q]["deserved"] for q in ("a", "b")}
    assert deserved["a"].get("cpu") == deserved["b"].get("cpu") == 4, deserved
    assert "ephemeral-storage" not in deserved["a"], deserved
    assert data["queues"]["a"]["allocated"]["ephemeral-storage"] == 40 * 2**30  # what its 4 pods hold
