"""Pods that name no PodGroup but have a controller owner are one job per owner: two owners never share
a job, whatever their kinds and names (the job is keyed by the owner's UID, as Volcano's
``podgroup-<owner uid>``)."""

from __future__ import annotations

import pytest

from tests.builders import Obj, owned, pod, podgroup
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState

CASES = [
    pytest.param(
        [
            owned("a", kind="Job", owner="train", uid="u-1"),
            owned("b", kind="Job", owner="train", uid="u-2", api_version="batch.volcano.sh/v1alpha1"),
        ],
        id="the-same-kind-and-name-in-two-api-groups",
    ),
    pytest.param(
        [owned("a", kind="Job", owner="train", uid="u-1"), pod("job-train")],
        id="a-lone-pod-named-like-the-owner",
    ),
    pytest.param(
        [
            owned("a", kind="Job", owner="train", uid="u-1"),
            podgroup("job-train"),
            pod("b", group="job-train"),
        ],
        id="a-podgroup-named-like-the-owner",
    ),
    pytest.param(
        [
            owned("a", kind="ReplicaSet", owner="r" * 250 + "-a", uid="u-1"),
            owned("b", kind="ReplicaSet", owner="r" * 250 + "-b", uid="u-2"),
        ],
        id="long-names-alike-but-for-their-end",
    ),
    pytest.param(
        [owned("a", kind="Job", owner="train", uid="u-1"), owned("b", kind="Job", owner="train", uid="u-2")],
        id="an-owner-deleted-and-created-again",
    ),
]


@pytest.mark.parametrize("objects", CASES)
def test_two_owners_never_share_a_job(objects: list[Obj]) -> None:
    feeder = Feeder(ClusterState())
    for rv, obj in enumerate(objects, start=1):
        obj["metadata"].update(resourceVersion=str(rv))
        obj["metadata"].setdefault("uid", f"pod-{rv}")
        assert feeder.apply(obj["kind"], obj)
    a, b = feeder.state.tasks["default/a"], next(t for k, t in feeder.state.tasks.items() if k != "default/a")
    assert a.job_key != b.job_key
    feeder.state.snapshot()
    derived = {g.key: g for g in feeder.state.last_derived}
    assert a.job_key in derived and derived[a.job_key].name == "podgroup-u-1"


def test_pods_of_one_owner_share_its_job() -> None:
    feeder = Feeder(ClusterState())
    for rv, name in enumerate(["a", "b"], start=1):
        obj = owned(name, kind="Job", owner="train", uid="u-1")
        obj["metadata"].update(resourceVersion=str(rv), uid=f"pod-{name}")
        feeder.apply("Pod", obj)
    feeder.state.snapshot()
    [group] = feeder.state.last_derived
    assert group.key == "default/podgroup-u-1"
    assert {t.job_key for t in feeder.state.tasks.values()} == {group.key}
