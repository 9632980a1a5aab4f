"""A pod whose Queue or PodGroup volsched refused as invalid is told that it was rejected, and why, not
that it does not exist (the user sees the object in kubectl); once it is fixed the pod is placed, once
it is deleted the pod is told it does not exist."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue, volcano
from tests.unit._cycle_harness import CONFIG, FakePort, cache
from volsched.cycle import run_cycle

INVALID_GROUP = r"pod group g was rejected by volsched: .*minMember"
INVALID_QUEUE = r"queue q was rejected by volsched: .*weight"


def _reasons(feeder: Any) -> dict[str, str]:
    report = run_cycle(feeder, CONFIG, FakePort(), now=5000.0)
    assert report.result is not None
    return dict(report.result.unschedulable)


def _bad_group(volcano_kind: bool = False) -> dict[str, Any]:
    group = podgroup("g", min_member=-1)
    return volcano(group) if volcano_kind else group


@pytest.mark.parametrize("volcano_kind", [False, True], ids=["ours", "volcano"])
def test_a_pod_whose_podgroup_was_refused_is_told_why(volcano_kind: bool) -> None:
    feeder = cache(node("n1"))
    group = _bad_group(volcano_kind)
    group["metadata"].update(resourceVersion="50", uid="uid-g")
    assert not feeder.apply(group["kind"], group)
    member = pod("a", group="g")
    member["metadata"].update(resourceVersion="51", uid="uid-a")
    assert feeder.apply("Pod", member)
    reasons = _reasons(feeder)
    assert list(reasons) == ["default/a"]
    assert reasons["default/a"].startswith("pod group g was rejected by volsched: ")  # was: does not exist
    assert "minMember" in reasons["default/a"]

    fixed = podgroup("g", min_member=1)
    fixed = volcano(fixed) if volcano_kind else fixed
    fixed["metadata"].update(resourceVersion="52", uid="uid-g")
    assert feeder.apply(fixed["kind"], fixed)
    assert _reasons(feeder) == {}  # placed
    assert feeder.state.tasks["default/a"].node_name == "n1"


def test_a_pod_whose_podgroup_was_refused_then_deleted_is_told_it_does_not_exist() -> None:
    feeder = cache(node("n1", cpu="0.5"), pod("a", group="g"))
    bad = _bad_group()
    bad["metadata"].update(resourceVersion="50", uid="uid-g")
    feeder.apply("PodGroup", bad)
    assert _reasons(feeder)["default/a"].startswith("pod group g was rejected by volsched: ")
    feeder.delete("PodGroup", {"metadata": {"namespace": "default", "name": "g", "resourceVersion": "51"}})
    assert _reasons(feeder)["default/a"] == "pod group g does not exist"


def test_a_job_whose_queue_was_refused_is_told_why() -> None:
    feeder = cache(node("n1"), podgroup("g", queue="q"), pod("a", group="g"))
    bad = queue("q", weight=0)
    bad["metadata"].update(resourceVersion="50", uid="uid-q")
    assert not feeder.apply("Queue", bad)
    reasons = _reasons(feeder)
    assert reasons["default/a"].startswith("queue q was rejected by volsched: "), (
        reasons
    )  # was: does not exist
    assert "weight" in reasons["default/a"]

    good = queue("q")
    good["metadata"].update(resourceVersion="51", uid="uid-q")
    assert feeder.apply("Queue", good)
    assert _reasons(feeder) == {}
