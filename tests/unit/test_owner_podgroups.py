"""Pods that name no PodGroup but have a controller owner are one job per owner: two owners never share
a job, whatever their kinds and names (the job is keyed by the owner's UID, as Volcano's
``podgroup-<owner uid>``)."""

from __future__ import annotations

import pytest

from tests.builders import Obj, node, owned, owned_by, pod, podgroup
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session
from volsched.pacing import pods_wait

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


@pytest.mark.parametrize(("cpu", "unschedulable"), [("1", ()), ("4", ("default/mpi-1",))])
def test_a_bound_pod_told_its_owners_min_member_is_bad_is_not_counted_unschedulable(
    cpu: str, unschedulable: tuple[str, ...]
) -> None:
    """The owner's oldest pod runs, so its group takes minMember 1 and that pod is told why: an event,
    not a refusal. It was counted among the pods the session could not place (the session line, the
    metrics, pacing's "pods wait") though it has its node. The pending pod fits (1 cpu) or not (4)."""
    bad = {"scheduling.volsched.io/min-member": "two"}
    state = ClusterState()
    for name, where, asks, at in [("mpi-0", "n1", "1", "05:00"), ("mpi-1", None, cpu, "05:01")]:
        made = pod(name, cpu=asks, node=where, annotations=bad, created=f"2026-11-30T{at}:00Z")
        state.apply(owned_by(made, kind="Job", owner="mpi", uid="u-1"))
    state.apply(node("n1", cpu="3"))
    snap = state.snapshot(now=1.0)
    [(obj, reason, message)] = snap.problems
    assert (obj, reason) == ("Pod default/mpi-0", "InvalidMinMember") and "takes minMember 1" in message
    result = run_session(snap, load_config())
    assert [(e.name, e.reason) for e in result.events if e.kind == "Pod"] == [
        ("mpi-0", "InvalidMinMember"),
        *[("mpi-1", "FailedScheduling") for _ in unschedulable],
    ]
    assert result.unschedulable_pods == unschedulable and list(result.unschedulable) == list(unschedulable)
    assert pods_wait(result) is bool(unschedulable)
