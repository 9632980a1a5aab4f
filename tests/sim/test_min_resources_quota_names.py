"""A PodGroup's ``minResources`` as Volcano's controllers write it: from the ResourceQuota evaluator's
usage of the pods (Volcano's job controller since 2022, its PodGroup controller for a pod with no group),
so beside ``cpu`` and ``memory`` it holds ``requests.cpu``, ``limits.cpu``, ``count/pods``, ``pods`` and,
for an extended resource, ``requests.<name>`` (the PodGroup controller writes no other spelling of it).

``requests.<name>`` is the request of ``<name>``; ResourceQuota's ``limits.<name>`` and ``count/<kind>``
say nothing about what the gang needs to start; ``pods`` is the pods its minimum holds. Before, every
such name was read as a resource no node has: the gang "can never run as it stands" and its pods waited
for ever, where Volcano runs them. Two spellings of one request that disagree are refused, naming both."""

from __future__ import annotations

import pytest

from tests.builders import Obj, node, pod, podgroup, run, volcano
from volsched.model.errors import InputError

#: What Volcano's job controller writes for a job of two pods, each asking cpu 1, memory 1Gi and one GPU
#: with limits cpu 2 (``util.GetPodQuotaUsage``: the quota usage, ``requests.<extended>`` also trimmed).
JOB_CONTROLLER = {
    "count/pods": "2", "pods": "2",
    "cpu": "2", "requests.cpu": "2", "limits.cpu": "4",
    "memory": "2Gi", "requests.memory": "2Gi",
    "nvidia.com/gpu": "2", "requests.nvidia.com/gpu": "2",
}  # fmt: skip
#: What Volcano's PodGroup controller writes for one such pod (``PodUsageFunc``: the extended resource as
#: ``requests.<name>`` only).
PODGROUP_CONTROLLER = {
    "count/pods": "1", "pods": "1",
    "cpu": "1", "requests.cpu": "1", "limits.cpu": "2",
    "memory": "1Gi", "requests.memory": "1Gi", "limits.memory": "1Gi",
    "requests.nvidia.com/gpu": "1",
}  # fmt: skip


def _gang(min_resources: dict[str, str], *, size: int, in_volcano: bool = True) -> list[Obj]:
    group = podgroup("g", min_member=size, min_resources=min_resources)
    return [
        volcano(group) if in_volcano else group,
        *(pod(f"g-{i}", group="g", cpu="1", memory="1Gi", gpu="1") for i in range(size)),
    ]


@pytest.mark.parametrize(
    ("min_resources", "size"),
    [(JOB_CONTROLLER, 2), (PODGROUP_CONTROLLER, 1)],
    ids=["volcano-job-controller", "volcano-podgroup-controller"],
)
@pytest.mark.parametrize("in_volcano", [True, False], ids=["volcano-podgroup", "volsched-podgroup"])
def test_a_gang_whose_min_resources_volcano_wrote_runs(
    min_resources: dict[str, str], size: int, in_volcano: bool
) -> None:
    data = run([node("n1", gpu="4"), *_gang(min_resources, size=size, in_volcano=in_volcano)])
    group = data["podgroups"]["default/g"]
    assert group["phase"] == "Running", group["reason"]
    assert [p["node"] for p in data["pods"].values()] == ["n1"] * size


def test_the_requests_spelling_still_asks_what_it_says() -> None:
    # requests.nvidia.com/gpu 8 on a node of 4: the gang may never run, and says so in the resource's name.
    data = run([node("n1", gpu="4"), *_gang({"cpu": "1", "requests.nvidia.com/gpu": "8"}, size=1)])
    reason = data["podgroups"]["default/g"]["reason"]
    assert reason.startswith(
        "can never run as it stands: its minResources ask nvidia.com/gpu 8, more than all the ready nodes "
        "have (nvidia.com/gpu 4)"
    ), reason


def test_two_spellings_of_one_request_that_differ_are_refused_naming_both() -> None:
    with pytest.raises(InputError, match=r"spec\.minResources: cpu 1 and requests\.cpu 2 are one request"):
        run([node("n1"), *_gang({"cpu": "1", "requests.cpu": "2"}, size=1, in_volcano=False)])
