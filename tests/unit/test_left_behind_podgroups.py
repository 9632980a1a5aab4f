"""Which PodGroups an upgrade leaves behind: those an earlier volsched created for a controller owner
under its old name ``<kind>-<name>``, before it named them ``podgroup-<owner uid>``. Only these are
ever deleted (and only when no pod refers to them: tests/e2e/test_operator_volcano.py)."""

from __future__ import annotations

import pytest

from tests.builders import Obj, owned_by, podgroup
from volsched.kube.podgroups import CREATED_BY_LABEL, old_owner_name, owner_podgroup_body
from volsched.model.vocabulary import OwnerRef, PodGroupPhase, PodGroupSpec

OURS = {CREATED_BY_LABEL: "volsched"}


def made(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    kind: str = "Job",
    owner: str = "train",
    uid: str = "u-1",
) -> Obj:
    """A PodGroup with ``labels`` (ours by default), owned by ``kind`` ``owner``."""
    obj = owned_by(podgroup(name, ns="team"), kind=kind, owner=owner, uid=uid)
    obj["metadata"]["labels"] = OURS if labels is None else labels
    return obj


def two_owners() -> Obj:
    obj = made("job-train")
    obj["metadata"]["ownerReferences"].append({**obj["metadata"]["ownerReferences"][0], "uid": "u-2"})
    return obj


def no_uid() -> Obj:
    obj = made("job-train")
    del obj["metadata"]["ownerReferences"][0]["uid"]
    return obj


@pytest.mark.parametrize(
    ("obj", "old"),
    [
        pytest.param(made("job-train"), "job-train", id="ours-under-its-owners-old-name"),
        pytest.param(made("volcanojob-mpi", kind="VolcanoJob", owner="mpi"), "volcanojob-mpi", id="any-kind"),
        pytest.param(made("podgroup-u-1"), None, id="ours-under-the-new-name"),
        pytest.param(made("job-train", labels={}), None, id="without-our-label"),
        pytest.param(made("job-train", labels={CREATED_BY_LABEL: "someone"}), None, id="labelled-by-another"),
        pytest.param(made("job-other"), None, id="named-after-another-owner"),
        pytest.param(made("replicaset-train"), None, id="named-after-another-kind"),
        pytest.param(two_owners(), None, id="two-owners"),
        pytest.param(no_uid(), None, id="an-owner-without-uid"),
        pytest.param(
            {**podgroup("job-train"), "metadata": {"name": "job-train", "labels": OURS}}, None, id="no-owner"
        ),
    ],
)
def test_only_a_podgroup_volsched_made_under_its_owners_old_name_is_left_behind(
    obj: Obj, old: str | None
) -> None:
    assert old_owner_name(obj) == old


def test_what_volsched_creates_now_is_never_left_behind() -> None:
    owner = OwnerRef(api_version="batch/v1", kind="Job", name="train", uid="u-1")
    spec = PodGroupSpec(
        namespace="team", name=owner.group_name, min_member=1, min_resources=None, queue="default",
        priority_class_name="", phase=PodGroupPhase.PENDING, owner=owner,
    )  # fmt: skip
    body = owner_podgroup_body(spec)
    assert body["metadata"]["labels"] == OURS
    assert old_owner_name(body) is None
    body["metadata"]["name"] = "job-train"  # what an earlier version created for the same owner
    assert old_owner_name(body) == "job-train"
