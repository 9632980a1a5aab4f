"""``volsched simulate`` reads Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1) as the operator does:
a gang of minCount pods is placed whole or not at all; a basic group's pods go one by one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, placed, pod, run


def k8s_podgroup(name: str, policy: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": policy},
    }


def member(name: str, group: str, cpu: str) -> dict[str, Any]:
    obj = pod(name, cpu=cpu)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


@pytest.mark.parametrize(
    ("policy", "expect_placed"),
    [
        pytest.param({"gang": {"minCount": 3}}, 0, id="gang-of-3-on-room-for-2-places-none"),
        pytest.param({"gang": {"minCount": 2}}, 2, id="gang-of-2-places-two"),
        pytest.param({"basic": {}}, 2, id="basic-places-what-fits"),
    ],
)
def test_a_kubernetes_podgroup_is_a_gang_of_its_min_count(policy: dict[str, Any], expect_placed: int) -> None:
    objs = [
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        k8s_podgroup("train", policy),
        *[member(f"w-{i}", "train", cpu="3") for i in range(3)],
    ]
    data = run(objs, sessions=5)
    assert len(placed(data)) == expect_placed
