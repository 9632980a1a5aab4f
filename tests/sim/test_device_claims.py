"""Pods that claim devices through Dynamic Resource Allocation (spec.resourceClaims), through the
simulator (the real engine): never placed where their claims are not allocated, and told why."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import Obj, claiming, node, pod, podgroup, run
from volsched.model.decode import build_task
from volsched.model.errors import InputError


def reason(data: dict[str, Any], key: str) -> str:
    return next(
        e["message"]
        for e in data["events"]
        if e["object"] == f"Pod {key}" and e["reason"] == "FailedScheduling"
    )


def test_a_pod_whose_claims_volsched_cannot_allocate_stays_pending_and_says_why() -> None:
    data = run([node("n1"), node("n2"), claiming("gpu-job", "gpu"), pod("plain")])
    assert data["pods"]["default/gpu-job"]["node"] is None
    assert data["pods"]["default/plain"]["node"] is not None
    said = reason(data, "default/gpu-job")
    assert said.startswith("0/2 nodes fit: 2 "), said
    assert "resourceClaims gpu" in said, said


def test_a_gang_with_one_claiming_member_is_not_placed_at_all() -> None:
    objs: list[Obj] = [node("n1"), podgroup("g", min_member=2)]
    objs += [pod("g-0", group="g"), claiming("g-1", "gpu", group="g")]
    data = run(objs)
    assert data["pods"]["default/g-0"]["node"] is None
    assert data["pods"]["default/g-1"]["node"] is None


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{"resourceClaimName": "gpu"}], "spec.resourceClaims[0]: missing field name"),
        ([{"name": "a"}], "exactly one of resourceClaimName and resourceClaimTemplateName"),
        (
            [{"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}],
            "exactly one of resourceClaimName and resourceClaimTemplateName",
        ),
        (
            [{"name": "a", "resourceClaimName": "x"}, {"name": "a", "resourceClaimName": "y"}],
            "spec.resourceClaims[1]: name 'a' is given twice",
        ),
        ("gpu", "spec.resourceClaims: expected a list"),
    ],
)
def test_malformed_resource_claims_are_refused_naming_the_field(entries: Any, message: str) -> None:
    raw = pod("p")
    raw["spec"]["resourceClaims"] = entries
    with pytest.raises(InputError, match="Pod default/p: ") as err:
        build_task(raw, priority_classes={})
    assert message in str(err.value)


def test_a_template_claim_takes_the_name_the_controller_gave_it() -> None:
    raw = claiming("p", templates=("gpu-template",))
    task = build_task(raw, priority_classes={})
    assert [(c.name, c.claim, c.template) for c in task.resource_claims] == [
        ("t-gpu-template", "", "gpu-template")
    ]
    raw["status"] = {"resourceClaimStatuses": [{"name": "t-gpu-template", "resourceClaimName": "p-t-gpu-x1"}]}
    task = build_task(raw, priority_classes={})
    assert [c.claim for c in task.resource_claims] == ["p-t-gpu-x1"]
