"""Which PodGroups an upgrade leaves behind: those an earlier volsched created for a controller owner
under its old name ``<kind>-<name>``, before it named them ``podgroup-<owner uid>``. Only these are
ever deleted, only when no pod refers to them, and only as they were read (here against a fake writer;
against the apiserver: tests/e2e/test_operator_volcano.py)."""

from __future__ import annotations

from typing import cast

import pytest

from tests.builders import Obj, owned_by, pod, podgroup
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.kube.podgroups import (
    CREATED_BY_LABEL,
    LeftBehind,
    groups_referred_to,
    old_owner_name,
    owner_podgroup_body,
)
from volsched.kube.writer import KubeWriter
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


class Writer:
    """The two calls a sweep makes: the PodGroups listed, and the deletes asked (each answered from
    ``answers``, else deleted)."""

    def __init__(self, items: list[Obj], answers: dict[str, tuple[bool, str | None]] | None = None) -> None:
        self.items = items
        self.answers = answers or {}
        self.selectors: list[str] = []
        self.deletes: list[tuple[str, str, str]] = []  # (ns/name, uid, resourceVersion)

    def list_podgroups(self, label_selector: str) -> list[Obj]:
        self.selectors.append(label_selector)
        return self.items

    def delete_podgroup(
        self, namespace: str, name: str, *, uid: str, resource_version: str
    ) -> tuple[bool, str | None]:
        key = f"{namespace}/{name}"
        self.deletes.append((key, uid, resource_version))
        return self.answers.get(key, (True, None))


def listed(obj: Obj, *, uid: str, rv: str = "7", deleting: bool = False) -> Obj:
    obj["metadata"].update(uid=uid, resourceVersion=rv)
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


def sweeper(writer: Writer, now: list[float]) -> LeftBehind:
    return LeftBehind(cast(KubeWriter, writer), every=300.0, clock=lambda: now[0])


def test_a_sweep_deletes_only_what_is_left_behind_and_no_pod_refers_to_as_it_was_read() -> None:
    writer = Writer(
        [
            listed(made("job-train"), uid="pg-1", rv="41"),  # left behind, no pod in it: deleted
            listed(made("job-serve", owner="serve", uid="u-2"), uid="pg-2"),  # a pod names it: kept
            listed(made("podgroup-u-3", uid="u-3"), uid="pg-3"),  # today's name: kept
            listed(made("job-mine", owner="mine", labels={}), uid="pg-4"),  # not ours: kept
            listed(made("job-gone", owner="gone"), uid="pg-5", deleting=True),  # going already
        ]
    )
    now = [0.0]
    left = sweeper(writer, now)
    assert left.due()
    assert left.sweep({"team/job-serve"}.__contains__) == []
    assert writer.selectors == [f"{CREATED_BY_LABEL}=volsched"]
    assert writer.deletes == [("team/job-train", "pg-1", "41")]  # preconditions: the object read
    assert not left.done and not left.due()  # job-serve is still referred to: another pass later
    now[0] = 300.0
    assert left.due()
    writer.deletes.clear()
    writer.items = writer.items[1:]  # job-train is gone now
    assert left.sweep(set().__contains__) == []
    assert writer.deletes == [("team/job-serve", "pg-2", "7")]
    assert left.done and not left.due()


@pytest.mark.parametrize(
    ("answer", "errors"),
    [
        pytest.param((False, None), [], id="changed-since-it-was-read"),
        pytest.param((False, "delete PodGroup team/job-train: 403 Forbidden"), ["403"], id="refused"),
    ],
)
def test_a_podgroup_not_deleted_keeps_the_sweeps_going(
    answer: tuple[bool, str | None], errors: list[str]
) -> None:
    writer = Writer([listed(made("job-train"), uid="pg-1")], {"team/job-train": answer})
    now = [0.0]
    left = sweeper(writer, now)
    said = left.sweep(set().__contains__)
    assert len(said) == len(errors) and all(w in e for w, e in zip(errors, said, strict=True))
    assert not left.done
    now[0] = 299.0
    assert not left.due()
    now[0] = 300.0
    assert left.due()


def test_a_sweep_that_cannot_list_says_so_and_tries_again_later() -> None:
    class Down(Writer):
        def list_podgroups(self, label_selector: str) -> list[Obj]:
            raise OSError("connection refused")

    writer = Down([])
    now = [0.0]
    left = sweeper(writer, now)
    [error] = left.sweep(set().__contains__)
    assert error.startswith("list PodGroups created by volsched:") and "connection refused" in error
    assert writer.deletes == [] and not left.done
    now[0] = 300.0
    assert left.due()


def test_a_pod_the_cache_holds_or_refused_keeps_the_podgroup_it_names() -> None:
    """A pod the cache refused (here a request it cannot read) is not held, but it still names its
    PodGroup: deleting that group would strand the pod once it is fixed."""
    feeder = Feeder(ClusterState())
    assert feeder.apply("Pod", pod("serve-0", ns="team", group="job-serve"))
    assert not feeder.apply("Pod", pod("train-0", ns="team", group="job-train", cpu="lots"))
    writer = Writer(
        [
            listed(made("job-train"), uid="pg-1"),  # the refused pod names it: kept
            listed(made("job-serve", owner="serve", uid="u-2"), uid="pg-2"),  # a held pod names it: kept
            listed(made("job-idle", owner="idle", uid="u-3"), uid="pg-3"),  # nothing names it: deleted
        ]
    )
    assert sweeper(writer, [0.0]).sweep(groups_referred_to(feeder)) == []
    assert [key for key, _, _ in writer.deletes] == ["team/job-idle"]
