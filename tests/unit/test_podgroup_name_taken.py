"""A pod standing alone (it names no PodGroup and has no controller owner) whose name is also a PodGroup's
in its namespace (note14 Found 11). Its job key is its own key, which was the PodGroup's too, so it
joined that PodGroup's job: a tenant who created a PodGroup named like its running pod, minMember 4,
kept the pod from reclaim as a gang below its minimum (and moved it into the PodGroup's queue), and a
pending pod so named was placed as one of the gang's members. A pod standing alone made before the
PodGroup keeps its name, and the PodGroup is no job while it exists, told why, its pods waiting as a
missing group's; one made after the PodGroup is its member, as a pod naming it would be, so that one pod
made in a namespace does not unmake a running gang there (note15 Found 1). Whichever came first, by the
creation times (docs/tenancy.md "A PodGroup named like a pod standing alone")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache import names
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session
from volsched.model.admitted import BOUND_UNDER, STANDING_ALONE, bound_under, read_bound
from volsched.model.cluster import ClusterSnapshot
from volsched.model.decode import build_podgroup, build_task

PREEMPT = load_config(
    text=(Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml").read_text()
)
Obj = dict[str, Any]
TAKEN = (
    "pod x, which names no pod group, was made before this PodGroup and has its name: a pod standing alone "
    "is a job of its own, under its name, and never joins a PodGroup of that name made after it; while pod "
    "x exists this PodGroup is taken by none, and its pods wait (rename the PodGroup, or delete the pod)"
)


def _state(*objs: Obj) -> ClusterState:
    state = ClusterState()
    for obj in objs:
        state.apply(obj)
    return state


def _told(snap: ClusterSnapshot) -> dict[str, tuple[str, str]]:
    return {obj: (reason, message) for obj, reason, message in snap.problems}


def _running() -> list[Obj]:
    """qa's pods a1-a3 and x (the newest), standing alone, fill n1; qb's hi waits for 2 cpu."""
    return [
        node("n1", cpu="4"),
        queue("qa"),
        queue("qb"),
        *[
            pod(n, ns="ns", cpu="1", node="n1", queue="qa", created=f"2026-01-01T00:00:0{i}Z")
            for i, n in enumerate(["a1", "a2", "a3", "x"])
        ],
        podgroup("hi", ns="nb", queue="qb", phase="Inqueue"),
        pod("hi-0", ns="nb", cpu="2", group="hi"),
    ]


@pytest.mark.parametrize("kept", [True, False], ids=["incremental", "from-scratch"])
@pytest.mark.parametrize("group_queue", ["qa", "qb"])
@pytest.mark.parametrize("created", [None, "2026-01-01T00:00:03Z", "2026-01-01T00:01:00Z"])
def test_a_podgroup_named_like_a_running_pod_standing_alone_neither_protects_nor_moves_it(
    kept: bool, group_queue: str, created: str | None
) -> None:
    """The PodGroup made after pod x (made at 00:00:03), in the same second, or at a time not known: x
    came first and keeps its name."""
    state = _state(*_running())
    control = [e.pod for e in run_session(state.snapshot(now=1.0), PREEMPT).evictions]
    assert control == ["ns/x", "ns/a3"]  # (the newest first)
    if not kept:
        state = _state(*_running())
    state.apply(podgroup("x", ns="ns", queue=group_queue, min_member=4, phase="Running", created=created))
    snap = state.snapshot(now=2.0)
    job = snap.jobs["ns/x"]
    assert (job.podgroup, job.queue, job.min_member, list(job.tasks)) == (None, "qa", 1, ["ns/x"])
    assert _told(snap)["PodGroup ns/x"] == ("PodGroupNameTaken", TAKEN)
    # before: ["ns/a3", "ns/a2"], x kept as a gang of minMember 4 (in qa); none, x counted in qb (in qb)
    assert [e.pod for e in run_session(snap, PREEMPT).evictions] == control


def test_a_pending_pod_standing_alone_is_not_placed_as_a_member_of_a_podgroup_of_its_name() -> None:
    state = _state(
        node("n1", cpu="4"),
        queue("q"),
        podgroup("x", ns="ns", queue="q", min_member=2),
        pod("x", ns="ns", cpu="1"),  # names no group
        pod("x-0", ns="ns", cpu="1", group="x"),
    )
    snap = state.snapshot(now=1.0)
    assert list(snap.jobs["ns/x"].tasks) == ["ns/x"] and snap.jobs["ns/x"].podgroup is None
    told = _told(snap)
    assert told["Pod ns/x-0"] == ("PodGroupNotFound", f"pod group x was rejected by volsched: {TAKEN}")
    assert told["PodGroup ns/x"] == ("PodGroupNameTaken", TAKEN)
    result = run_session(snap, PREEMPT)
    assert [b.pod for b in result.binds] == ["ns/x"]  # before: ns/x and ns/x-0, as gang x of two

    state.delete("Pod", "ns", "x")  # the name free again: the PodGroup is a job, its pods placed
    snap = state.snapshot(now=2.0)
    assert snap.jobs["ns/x"].podgroup is not None and list(snap.jobs["ns/x"].tasks) == ["ns/x-0"]
    assert "PodGroup ns/x" not in _told(snap) and "Pod ns/x-0" not in _told(snap)


@pytest.mark.parametrize(
    ("pod_made", "joins"), [("00:00:05", True), ("00:00:01", False), ("00:00:00", False)]
)
def test_a_pending_pod_standing_alone_made_after_a_podgroup_of_its_name_is_its_member(
    pod_made: str, joins: bool
) -> None:
    """PodGroup x made at 00:00:01: a pod x standing alone made after it is its member, as a pod naming it
    would be (it takes nothing a group annotation would not give it); one made in the same second, or
    before, keeps its name."""
    state = _state(
        node("n1", cpu="4"),
        queue("q"),
        podgroup("x", ns="ns", queue="q", min_member=2, created="2026-01-01T00:00:01Z"),
        pod("x", ns="ns", cpu="1", created=f"2026-01-01T{pod_made}Z"),  # names no group
        pod("x-0", ns="ns", cpu="1", group="x", created="2026-01-01T00:00:02Z"),
    )
    snap = state.snapshot(now=1.0)
    job = snap.jobs["ns/x"]
    if joins:
        assert job.podgroup is not None and sorted(job.tasks) == ["ns/x", "ns/x-0"]
        assert snap.problems == []
        assert sorted(b.pod for b in run_session(snap, PREEMPT).binds) == ["ns/x", "ns/x-0"]  # gang x of two
    else:
        assert job.podgroup is None and list(job.tasks) == ["ns/x"]
        assert _told(snap)["PodGroup ns/x"] == ("PodGroupNameTaken", TAKEN)


def _gang(made: str) -> list[Obj]:
    """Gang x (queue qa, minMember 4, made at ``made``) runs its 4 pods, each bound under it (its
    record), on n1; qb's hi waits for 2 cpu. qa holds all of n1: past its share, but a gang at its
    minimum, which reclaim never takes below it."""
    pg = podgroup("x", ns="ns", queue="qa", min_member=4, phase="Running", created=made)
    pg["metadata"]["uid"] = "x-uid"
    record = bound_under(uid="x-uid", queue="qa", priority_class="", priority=0, min_member=4)
    return [
        node("n1", cpu="4"),
        queue("qa"),
        queue("qb"),
        pg,
        *[
            pod(
                f"x-{i}",
                ns="ns",
                cpu="1",
                group="x",
                node="n1",
                annotations={BOUND_UNDER: record},
                created="2026-01-01T00:00:02Z",
            )
            for i in range(4)
        ],
        podgroup("hi", ns="nb", queue="qb", phase="Inqueue"),
        pod("hi-0", ns="nb", cpu="2", group="hi"),
    ]


@pytest.mark.parametrize("kept", [True, False], ids=["incremental", "from-scratch"])
def test_a_pod_standing_alone_made_after_a_running_podgroup_of_its_name_does_not_unmake_it(
    kept: bool,
) -> None:
    """note15 Found 1: pod x, naming no group, made in gang x's namespace after gang x ran took PodGroup x
    (a pod standing alone kept its name whichever came first): x's running pods were left without their
    group, orphans, which reclaim took one by one below minMember 4. The PodGroup came first: it stays
    gang x's, and pod x is its member, as a pod naming it would be."""
    objs = _gang("2026-01-01T00:00:01Z")
    state = _state(*objs)
    assert run_session(state.snapshot(now=1.0), PREEMPT).evictions == []  # (the gang at its minimum)
    if not kept:
        state = _state(*objs)
    state.apply(pod("x", ns="ns", cpu="1", queue="qa", created="2026-01-01T00:05:00Z"))  # names no group
    snap = state.snapshot(now=2.0)
    job = snap.jobs["ns/x"]
    assert job.podgroup is not None and sorted(job.tasks) == ["ns/x", *[f"ns/x-{i}" for i in range(4)]]
    assert [(obj, reason) for obj, reason, _ in snap.problems] == []  # (before: PodGroupNameTaken, 4 orphans)
    assert run_session(snap, PREEMPT).evictions == []  # before: ["ns/x-3", "ns/x-2"], the gang below 4


@pytest.mark.parametrize("how", ["group annotation", "controller owner"])
def test_a_pod_that_names_its_group_is_its_member_whatever_its_name(how: str) -> None:
    named = pod("x", ns="ns", cpu="1", group="x") if how == "group annotation" else None
    objs = [node("n1", cpu="4"), queue("q"), podgroup("x", ns="ns", queue="q", min_member=1)]
    if named is not None:
        objs.append(named)
    else:  # (owned: its job is its owner's group, not its name)
        objs.append(pod("x", ns="ns", cpu="1", owner="Job/train"))
    snap = _state(*objs).snapshot(now=1.0)
    assert "PodGroup ns/x" not in _told(snap)
    assert snap.jobs["ns/x"].podgroup is not None
    assert ("ns/x" in snap.jobs["ns/x"].tasks) is (how == "group annotation")


def _orphans(how: str) -> list[Obj]:
    """Gang lo's 4 pods, each bound under a record naming queue q, fill n1; q2's hi waits for 2 cpu; a
    PodGroup named like each of lo's pods waits in queue q3 (minMember 2). PodGroup lo is gone ("deleted")
    or taken by a pod standing alone named lo ("taken", filling n2)."""
    record = bound_under(uid="lo-1", queue="q", priority_class="", priority=0, min_member=4)
    lo = [
        pod(f"lo-{i}", ns="ns", cpu="1", group="lo", node="n1", annotations={BOUND_UNDER: record})
        for i in range(4)
    ]
    taken = [
        podgroup("lo", ns="ns", queue="q", min_member=4, phase="Running"),
        node("n2", cpu="1"),
        pod("lo", ns="ns", node="n2"),  # (names no group: PodGroup lo is no job)
    ]
    return [
        node("n1", cpu="4"),
        queue("q"),
        queue("q2"),
        queue("q3"),
        *lo,
        *(taken if how == "taken" else []),
        *[podgroup(f"lo-{i}", ns="ns", queue="q3", min_member=2) for i in range(4)],
        podgroup("hi", ns="ns", queue="q2", phase="Inqueue"),
        pod("hi-0", ns="ns", cpu="2", group="hi"),
    ]


@pytest.mark.parametrize("kept", [True, False], ids=["incremental", "from-scratch"])
@pytest.mark.parametrize("how", ["deleted", "taken"])
@pytest.mark.parametrize("older", [False, True], ids=["podgroups-newer", "podgroups-older"])
def test_a_podgroup_named_like_an_orphan_neither_protects_nor_moves_it(
    kept: bool, how: str, older: bool
) -> None:
    """An orphan (its group gone, its record its bind's) is a pod standing alone too, and keeps its name:
    before, orphan lo-0 joined PodGroup lo-0 (queue q3, minMember 2), counted in q3 and kept from reclaim
    as a gang below its minimum, so PodGroups named like a deleted gang's pods floored them all again.
    Whatever their age: a PodGroup lo-0 made before pod lo-0 was not what it was bound under (and who may
    delete lo could delete it as well)."""
    objs = _orphans(how)
    for obj in objs:
        meta = obj["metadata"]
        if older and meta["name"].startswith("lo-"):  # (pods lo-0..3 at 00:00:05, PodGroups lo-0..3 before)
            pg = obj["kind"] == "PodGroup"
            meta["creationTimestamp"] = "2026-01-01T00:00:01Z" if pg else "2026-01-01T00:00:05Z"
    state = _state(*objs[:-6] if kept else objs)  # (incremental: the PodGroups named like pods come later)
    if kept:
        state.snapshot(now=1.0)
        for obj in objs[-6:]:
            state.apply(obj)
    snap = state.snapshot(now=2.0)
    for i in range(4):
        job = snap.jobs[f"ns/lo-{i}"]
        assert (job.podgroup, job.queue, job.min_member, list(job.tasks)) == (None, "q", 1, [f"ns/lo-{i}"])
        assert _told(snap)[f"PodGroup ns/lo-{i}"] == (
            "PodGroupNameTaken",
            f"pod lo-{i}, bound under its record and running without its pod group lo, has its name: a pod "
            "standing alone is a job of its own, under its name, and never joins a PodGroup of that name; "
            f"while pod lo-{i} exists this PodGroup is taken by none, and its pods wait (rename the "
            "PodGroup, or delete the pod)",
        )
    assert _told(snap)["Pod ns/lo-0"][0] == "PodGroupGone"
    # q holds 4 of 4 and owes q2 its share: reclaim takes 2 (before: none, each a gang below its minimum)
    assert [e.pod for e in run_session(snap, PREEMPT).evictions] == ["ns/lo-3", "ns/lo-2"]


def test_the_podgroups_named_like_a_gangs_pods_are_taken_once_the_gang_is_gone_and_freed_once_it_is_back() -> (
    None
):
    objs = [o for o in _orphans("deleted")]
    state = _state(*objs, podgroup("lo", ns="ns", queue="q", min_member=4, phase="Running"))
    snap = state.snapshot(now=1.0)  # (lo there: its pods its members, PodGroups lo-0.. are jobs)
    assert sorted(snap.jobs["ns/lo"].tasks) == [f"ns/lo-{i}" for i in range(4)]
    assert snap.jobs["ns/lo-0"].podgroup is not None and "PodGroup ns/lo-0" not in _told(snap)
    state.delete("PodGroup", "ns", "lo")  # (no pod changed: the PodGroups named like them asked again)
    snap = state.snapshot(now=2.0)
    assert [snap.jobs[f"ns/lo-{i}"].podgroup for i in range(4)] == [None] * 4
    assert _told(snap)["PodGroup ns/lo-0"][0] == "PodGroupNameTaken"
    state.apply(podgroup("lo", ns="ns", queue="q", min_member=4, phase="Running"))  # made again
    snap = state.snapshot(now=3.0)
    assert sorted(snap.jobs["ns/lo"].tasks) == [f"ns/lo-{i}" for i in range(4)]
    assert snap.jobs["ns/lo-0"].podgroup is not None and "PodGroup ns/lo-0" not in _told(snap)


def test_pods_named_like_each_others_podgroups_stay_their_members() -> None:
    """Pod p of group g and pod g of group p, both PodGroups there: each pod is its group's member, and
    neither PodGroup is taken (the least answer: a pod is an orphan only once its group is gone)."""
    record = bound_under(uid="u", queue="q", priority_class="", priority=0, min_member=1)
    notes = {BOUND_UNDER: record}
    snap = _state(
        node("n1", cpu="4"),
        queue("q"),
        podgroup("g", ns="ns", queue="q", min_member=1, phase="Running"),
        podgroup("p", ns="ns", queue="q", min_member=1, phase="Running"),
        pod("p", ns="ns", cpu="1", group="g", node="n1", annotations=notes),
        pod("g", ns="ns", cpu="1", group="p", node="n1", annotations=notes),
    ).snapshot(now=1.0)
    assert list(snap.jobs["ns/g"].tasks) == ["ns/p"] and list(snap.jobs["ns/p"].tasks) == ["ns/g"]
    assert snap.problems == []


def test_a_podgroup_taken_by_a_pod_of_its_name_is_told_so_and_not_that_the_pods_record_is_refused() -> None:
    """Pod x, standing alone and running with a record (a forged one, or its own bind's), takes PodGroup x
    made after it: the PodGroup is no job, told why (``PodGroupNameTaken``). The cache held it to x's
    record too and, the record refused (its queue gone), told it ``BoundUnderRefused`` as well: noise
    about a group that is no job, whose pods the record never counts in."""
    record = bound_under(uid="x-uid", queue="gone", priority_class="", priority=0, min_member=1)
    x = pod("x", ns="ns", node="n1", queue="qa", annotations={BOUND_UNDER: record})
    x["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    state = _state(node("n1", cpu="4"), queue("qa"), x)
    state.apply(podgroup("x", ns="ns", queue="qa", min_member=2, created="2026-01-01T00:01:00Z"))
    told = [
        (reason, message)
        for obj, reason, message in state.snapshot(now=1.0).problems
        if obj == "PodGroup ns/x"
    ]
    assert told == [("PodGroupNameTaken", TAKEN)], told
    # Once pod x is gone, the PodGroup is a job, held to no record (no pod of it holds a node).
    state.delete("Pod", "ns", "x")
    snap = state.snapshot(now=2.0)
    assert "ns/x" in snap.jobs
    assert [p for p in snap.problems if p[0] == "PodGroup ns/x"] == []


# --- note16 Found 1: a pod bound standing alone keeps its name against an older PodGroup ---------------------

TAKEN_BOUND = (
    "pod x, which names no pod group, was bound standing alone while this PodGroup was not in force "
    "(refused, or not yet seen), and has its name: a pod standing alone is a job of its own, under its "
    "name, and never joins a PodGroup of that name once bound so; while pod x exists this PodGroup is "
    "taken by none, and its pods wait (rename the PodGroup, or delete the pod)"
)


def _bound_alone(**over: Any) -> Obj:
    """Pod x of qa on n1, made at 00:00:03, naming no group, carrying the record of a bind standing alone."""
    fields: dict[str, Any] = {
        "ns": "ns",
        "cpu": "1",
        "node": "n1",
        "queue": "qa",
        "created": "2026-01-01T00:00:03Z",
        "annotations": {BOUND_UNDER: STANDING_ALONE},
    }
    return pod("x", **{**fields, **over})


@pytest.mark.parametrize("kept", [True, False], ids=["incremental", "from-scratch"])
@pytest.mark.parametrize("group_queue", ["qa", "qb"])
@pytest.mark.parametrize("phase", [None, "Succeeded"], ids=["running", "finished"])
def test_a_pod_bound_standing_alone_keeps_its_name_against_an_older_podgroup(
    kept: bool, group_queue: str, phase: str | None
) -> None:
    """note16 Found 1: PodGroup x made first (00:00:01) but not in force when pod x (00:00:03) came (refused,
    or its watch event late), so x was bound standing alone; the PodGroup then in force, older, took x as
    its member: a gang below minMember 4, kept from reclaim (and moved into the PodGroup's queue). x's
    bind wrote the record of a bind standing alone: x keeps its name whatever the times."""
    objs = [o for o in _running() if o["metadata"]["name"] != "x"]
    objs.append(_bound_alone(phase=phase))
    state = _state(*objs)
    control = [e.pod for e in run_session(state.snapshot(now=1.0), PREEMPT).evictions]
    assert control == (["ns/x", "ns/a3"] if phase is None else ["ns/a3"])  # (x done: 1 cpu free)
    if not kept:
        state = _state(*objs)
    state.apply(
        podgroup(
            "x", ns="ns", queue=group_queue, min_member=4, phase="Running", created="2026-01-01T00:00:01Z"
        )
    )
    snap = state.snapshot(now=2.0)
    job = snap.jobs["ns/x"]
    assert (job.podgroup, job.queue, list(job.tasks)) == (None, "qa", ["ns/x"])
    assert _told(snap)["PodGroup ns/x"] == ("PodGroupNameTaken", TAKEN_BOUND)
    # before: ["ns/a3", "ns/a2"] (qa), x kept as a gang of minMember 4; none (qb), x counted in qb
    assert [e.pod for e in run_session(snap, PREEMPT).evictions] == control

    state.delete("Pod", "ns", "x")  # the name free again: the PodGroup is a job
    snap = state.snapshot(now=3.0)
    assert snap.jobs["ns/x"].podgroup is not None and "PodGroup ns/x" not in _told(snap)


@pytest.mark.parametrize("how", ["no record", "another record", "pending", "names a group"])
def test_only_a_pod_on_a_node_with_the_record_of_a_bind_standing_alone_keeps_its_name_so(how: str) -> None:
    """A pod on a node without the record (bound at its creation by whoever made it, or by a volsched
    before the record) is no sign of a bind standing alone; nor is a pending pod carrying it (forged where
    no pod policy refuses it: its bind would write the PodGroup's record over it), nor a pod naming a
    group. Each made after PodGroup x is its member, or not pod x's at all, as before."""
    notes = {
        "no record": {},
        "another record": {
            BOUND_UNDER: bound_under(uid="u", queue="qa", priority_class="", priority=0, min_member=1)
        },
    }.get(how, {BOUND_UNDER: STANDING_ALONE})
    x = _bound_alone(
        annotations=notes,
        node=None if how == "pending" else "n1",
        group="other" if how == "names a group" else None,
    )
    state = _state(
        node("n1", cpu="4"),
        queue("qa"),
        podgroup("x", ns="ns", queue="qa", min_member=2, created="2026-01-01T00:00:01Z"),
        x,
        pod("x-0", ns="ns", cpu="1", group="x", created="2026-01-01T00:00:02Z"),
    )
    snap = state.snapshot(now=1.0)
    assert "PodGroup ns/x" not in _told(snap)
    assert snap.jobs["ns/x"].podgroup is not None
    assert ("ns/x" in snap.jobs["ns/x"].tasks) is (how != "names a group")


def _bound_as_watched(state: ClusterState, raw: Obj, node_name: str, record: str) -> None:
    """``raw`` as the watch shows it once bound: on ``node_name``, the bind's record copied onto it."""
    meta = raw["metadata"]
    notes = {**(meta.get("annotations") or {}), **({BOUND_UNDER: record} if record else {})}
    state.apply(
        {**raw, "metadata": {**meta, "annotations": notes}, "spec": {**raw["spec"], "nodeName": node_name}}
    )


def test_the_bind_of_a_pod_standing_alone_writes_its_record_and_a_late_podgroup_does_not_wrap_it() -> None:
    """The lagging watch: PodGroup x made before pod x reaches the cache after x was bound standing
    alone. The bind writes the record of a bind standing alone (before: none), so the older PodGroup,
    once seen, does not take the running pod as a gang below its minMember."""
    x = pod("x", ns="ns", cpu="1", queue="qa", created="2026-01-01T00:00:03Z")
    owned = pod("o", ns="ns", cpu="1", queue="qa", owner="Job/train", created="2026-01-01T00:00:03Z")
    state = _state(node("n1", cpu="4"), queue("qa"), queue("qb"), x, owned)
    binds = {b.pod: b for b in run_session(state.snapshot(now=1.0), PREEMPT).binds}
    assert binds["ns/x"].bound_under == STANDING_ALONE  # before: ""
    assert binds["ns/o"].bound_under == ""  # (an owner's group: no object of it can be made again)
    _bound_as_watched(state, x, binds["ns/x"].node, binds["ns/x"].bound_under)
    state.apply(
        podgroup("x", ns="ns", queue="qb", min_member=4, phase="Running", created="2026-01-01T00:00:01Z")
    )
    snap = state.snapshot(now=2.0)
    assert (snap.jobs["ns/x"].podgroup, snap.jobs["ns/x"].queue) == (None, "qa")  # before: PodGroup x, qb
    assert _told(snap)["PodGroup ns/x"] == ("PodGroupNameTaken", TAKEN_BOUND)


def test_a_pod_standing_alone_that_joins_an_older_podgroup_is_bound_under_its_record() -> None:
    pg = podgroup("x", ns="ns", queue="qa", min_member=1, created="2026-01-01T00:00:01Z")
    pg["metadata"]["uid"] = "x-uid"
    state = _state(
        node("n1", cpu="4"), queue("qa"), pg, pod("x", ns="ns", cpu="1", created="2026-01-01T00:00:03Z")
    )
    [bind] = run_session(state.snapshot(now=1.0), PREEMPT).binds
    record = read_bound(bind.bound_under)
    assert record is not None and (record.uid, record.queue) == ("x-uid", "qa")


def test_names_rule_keeps_a_pod_bound_standing_alone_whatever_the_times() -> None:
    older = build_podgroup(podgroup("x", ns="ns", min_member=2, created="2026-01-01T00:00:01Z"))
    made_after = build_task(pod("x", ns="ns", node="n1", created="2026-01-01T00:00:03Z"), priority_classes={})
    assert not names.keeps_name(older, made_after)  # (the PodGroup came first: x joins it)
    made_after.annotations = {BOUND_UNDER: STANDING_ALONE}
    assert names.bound_standing_alone(made_after) and names.keeps_name(older, made_after)
    assert names.taken({"ns/x": True}, {"ns/x": older}, {"ns/x": made_after}.__getitem__) == {"ns/x": None}
    made_after.node_name = None  # (pending: no bind wrote it)
    assert not names.keeps_name(older, made_after)
    made_after.node_name, made_after.annotations = "n1", {BOUND_UNDER: STANDING_ALONE + " "}
    assert not names.keeps_name(older, made_after)  # (not the text a bind writes)
