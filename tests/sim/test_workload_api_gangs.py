"""``volsched simulate`` reads Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1) as the operator does:
a gang of minCount pods is placed whole or not at all; a basic group's pods go one by one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, placed, pod, run
from volsched.model.errors import InputError


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


def test_a_kubernetes_podgroup_naming_a_queue_not_in_the_input_is_refused_as_ours_is() -> None:
    """The defect: a volsched PodGroup naming a queue the input lacks was refused at load, naming it; a
    Kubernetes PodGroup naming one (its queue-name annotation) loaded, and its pods waited for ever."""
    group = k8s_podgroup("train", {"gang": {"minCount": 1}})
    group["metadata"]["annotations"] = {"scheduling.volsched.io/queue-name": "nope"}
    with pytest.raises(
        InputError, match=r"PodGroup default/train: .* names queue 'nope', which is not in the input"
    ):
        run([node("n1", cpu="4"), group, member("w-0", "train", cpu="1")])


def test_a_pods_queue_annotation_is_not_checked_when_its_kubernetes_podgroup_decides() -> None:
    """The defect: a pod of a Kubernetes PodGroup (spec.schedulingGroup) whose queue-name annotation names a
    queue the input lacks was refused, though its group's queue is the one that counts (as for a pod
    that names its group by annotation)."""
    worker = member("w-0", "train", cpu="1")
    worker["metadata"]["annotations"]["scheduling.volsched.io/queue-name"] = "nope"
    data = run([node("n1", cpu="4"), k8s_podgroup("train", {"gang": {"minCount": 1}}), worker])
    assert placed(data) == {"default/w-0": "n1"}
