"""Pods of ours on a node whose PodGroup was deleted while they ran, carrying the record their bind wrote
(``scheduling.volsched.io/bound-under``): orphans. The defect: they were foreign to every session,
counted by no queue and evicted by nothing, so a tenant who deleted its running gang's PodGroup held that
capacity outside every share. Each is now a pod standing alone in the queue it was bound under, at that
priority: its queue counts it, reclaim and preempt may take it (a job of one pod is no gang), and it is
told why. Its group made again, it is the group's member again, held to the record
(tests/unit/test_podgroup_recreated.py). One without a record (removed, never written, or not one volsched
reads) counts in its namespace's default queue at its own priority (tests/unit/test_stray_pods.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders import namespace, node, pod, podgroup, priority_class, queue
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session
from volsched.model.admitted import BOUND_UNDER, bound_under
from volsched.model.cluster import ClusterSnapshot
from volsched.model.vocabulary import NAMESPACE_QUEUE_KEY

PREEMPT = load_config(
    text=(Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml").read_text()
)
Obj = dict[str, Any]


def _record(queue_name: str = "q", *, priority: int = 1, cls: str = "low", min_member: int = 4) -> str:
    return bound_under(
        uid="lo-1", queue=queue_name, priority_class=cls, priority=priority, min_member=min_member
    )


def _bound(name: str, *, record: str | None, cpu: str = "1", **kwargs: Any) -> Obj:
    notes = {BOUND_UNDER: record} if record is not None else None
    return pod(name, ns="ns", cpu=cpu, group="lo", node="n1", annotations=notes, **kwargs)


def _state(*objs: Obj) -> ClusterState:
    state = ClusterState()
    for obj in objs:
        state.apply(obj)
    return state


def _cluster(record: str | None, *, queue_name: str = "q") -> list[Obj]:
    """qa's gang lo of 4 (minMember 4, bound under ``record``) fills n1; hi (queue q2) waits for 2 cpu."""
    return [
        node("n1", cpu="4"),
        queue("q"),
        queue("q2"),
        priority_class("low", 1),
        podgroup("lo", ns="ns", queue=queue_name, phase="Running", min_member=4, priority_class="low"),
        *[_bound(f"lo-{i}", record=record, priority_class="low") for i in range(4)],
        podgroup("hi", ns="ns", queue="q2", phase="Inqueue"),
        pod("hi-0", ns="ns", cpu="2", group="hi"),
    ]


def _cpu(snap: ClusterSnapshot, queue_name: str) -> float:
    cpu = snap.space.index("cpu")
    return sum(float(j.allocated[cpu]) for j in snap.jobs.values() if j.queue == queue_name)


@pytest.mark.parametrize("kept", [True, False], ids=["incremental", "from-scratch"])
def test_a_running_pod_whose_group_is_gone_is_a_pod_standing_alone_in_the_queue_it_was_bound_under(
    kept: bool,
) -> None:
    objs = [*_cluster(_record()), pod("lo-4", ns="ns", group="lo")]  # (and one of lo's pods pending)
    state = _state(*objs)
    snap = state.snapshot(now=1.0)
    assert _cpu(snap, "q") == 4.0 and sorted(snap.jobs["ns/lo"].tasks) == [f"ns/lo-{i}" for i in range(5)]
    if not kept:
        state = _state(*objs)
    state.delete("PodGroup", "ns", "lo")
    snap = state.snapshot(now=2.0)
    assert "ns/lo" not in snap.jobs and snap.foreign_tasks == []
    for i in range(4):
        job = snap.jobs[f"ns/lo-{i}"]
        [task] = job.tasks.values()
        assert (job.queue, job.priority, job.min_member, job.podgroup) == ("q", 1, 1, None)
        assert (task.job_key, task.priority, task.priority_class) == (f"ns/lo-{i}", 1, "low")
        assert task.schedulable_by_us
        assert f"ns/lo-{i}" in snap.nodes.tasks[snap.nodes.index["n1"]]
    assert _cpu(snap, "q") == 4.0  # before: 0, no queue counted them
    assert float(snap.nodes.idle[0, snap.space.index("cpu")]) == 0.0  # (they still hold their room)
    told = {obj: (reason, message) for obj, reason, message in snap.problems}
    assert told["Pod ns/lo-4"] == ("PodGroupNotFound", "pod group lo does not exist")  # pending: waits
    assert told["Pod ns/lo-0"] == (
        "PodGroupGone",
        "pod group lo does not exist, and this pod runs: it counts in queue q, the one it was bound under "
        "(priority 1), as a pod standing alone, which reclaim and preempt may evict (without its "
        "PodGroup, no gang of its pods is kept whole)",
    )
    result = run_session(snap, PREEMPT)
    assert "Pod ns/lo-0" not in result.rejections  # (told, not refused: it runs)

    state.apply(podgroup("lo", ns="ns", queue="q", phase="Running", min_member=4))  # made again
    snap = state.snapshot(now=3.0)
    assert sorted(snap.jobs["ns/lo"].tasks) == [f"ns/lo-{i}" for i in range(5)]
    assert not any(k.startswith("ns/lo-") for k in snap.jobs) and snap.problems == []
    assert snap.jobs["ns/lo"].podgroup is not None and snap.jobs["ns/lo"].podgroup.admitted_min_member == 4


def _evicted(record: str | None, *, delete: bool) -> list[str]:
    state = _state(*_cluster(record))
    state.snapshot(now=1.0)
    if delete:
        state.delete("PodGroup", "ns", "lo")
    return [e.pod for e in run_session(state.snapshot(now=2.0), PREEMPT).evictions]


def test_reclaim_takes_back_what_the_orphans_of_a_queue_past_its_share_hold() -> None:
    assert _evicted(_record(), delete=False) == []  # the control: a gang at its minMember (4) is kept
    # no record: in its namespace's default queue, which owes q2 as well (before: foreign, none taken)
    assert _evicted(None, delete=True) == ["ns/lo-3", "ns/lo-2"]
    assert _evicted(_record(), delete=True) == ["ns/lo-3", "ns/lo-2"]  # q held 4 of 4, owes q2 its 2


def test_an_orphan_is_counted_in_the_queue_of_its_record_not_of_the_pod_or_a_group_made_elsewhere() -> None:
    state = _state(*_cluster(_record("q2")))  # bound under q2 (say its group was moved, with no policy)
    state.snapshot(now=1.0)
    state.delete("PodGroup", "ns", "lo")
    snap = state.snapshot(now=2.0)
    assert _cpu(snap, "q2") == 4.0 and _cpu(snap, "q") == 0.0


def test_preempt_takes_an_orphan_at_the_priority_it_was_bound_under() -> None:
    """The pods say priority 1000 (their own spec.priority), the record 1: a pod of priority 100 in the
    same queue preempts two of them."""
    objs = [o for o in _cluster(_record()) if o["metadata"]["name"] not in ("hi", "hi-0")]
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["priority"] = 1000
    state = _state(
        *objs,
        priority_class("high", 100),
        podgroup("hi", ns="ns", queue="q", phase="Inqueue", priority_class="high"),
        pod("hi-0", ns="ns", cpu="2", group="hi", priority_class="high"),
    )
    state.snapshot(now=1.0)
    state.delete("PodGroup", "ns", "lo")
    result = run_session(state.snapshot(now=2.0), PREEMPT)
    assert [e.pod for e in result.evictions] == ["ns/lo-3", "ns/lo-2"]


def test_an_orphan_of_a_group_refused_as_invalid_is_told_so() -> None:
    state = _state(*_cluster(_record()))
    state.snapshot(now=1.0)
    state.delete("PodGroup", "ns", "lo")
    state.refuse("PodGroup", "ns", "lo", "PodGroup ns/lo: spec.minMember must be a number")
    snap = state.snapshot(now=2.0)
    told = {obj: message for obj, reason, message in snap.problems if reason == "PodGroupGone"}
    assert told["Pod ns/lo-0"].startswith(
        "pod group lo was rejected by volsched: spec.minMember must be a number, and this pod runs: "
    )


@pytest.mark.parametrize("text", ["", "{", '{"podGroup": "x"}', "x" * 3000])
def test_a_pod_with_no_record_volsched_reads_counts_in_its_namespaces_default_queue(text: str) -> None:
    state = _state(*_cluster(text))
    state.snapshot(now=1.0)
    state.delete("PodGroup", "ns", "lo")
    snap = state.snapshot(now=2.0)
    assert snap.foreign_tasks == []  # before: all four, counted by no queue
    assert _cpu(snap, "q") == 0.0 and _cpu(snap, "default") == 4.0
    assert {snap.jobs[f"ns/lo-{i}"].priority for i in range(4)} == {1}  # (its own: class low)


def test_a_finished_pod_whose_group_is_gone_is_no_orphan() -> None:
    state = _state(
        node("n1", cpu="4"),
        queue("q"),
        _bound("lo-0", record=_record(), phase="Succeeded"),
        _bound("lo-1", record=_record(), phase="Running"),
    )
    snap = state.snapshot(now=1.0)
    assert "ns/lo-0" not in snap.jobs and "ns/lo-1" in snap.jobs
    assert [obj for obj, _, _ in snap.problems] == ["Pod ns/lo-1"]


def _patched(obj: Obj, record: str | None) -> Obj:
    """``obj`` as a tenant's update leaves it: its record changed (None: removed), a new resourceVersion."""
    notes = {k: v for k, v in obj["metadata"].get("annotations", {}).items() if k != BOUND_UNDER}
    if record is not None:
        notes[BOUND_UNDER] = record
    return {**obj, "metadata": {**obj["metadata"], "annotations": notes, "resourceVersion": "9"}}


@pytest.mark.parametrize("change", ["another queue", "removed"])
def test_a_record_changed_after_the_bind_is_not_taken(change: str) -> None:
    """Without the pod policy (Kubernetes before 1.30, or podQueueFixed: false), a tenant who may patch
    its pods rewrote the record (note13 Found 4): its orphans then counted in the queue it named (or,
    the record removed, in none), and a group made again was held to it. The record the cache took
    first stands for the pod's life; a new operator reads the pods as they are then."""
    objs = _cluster(_record())
    state = _state(*objs)
    state.snapshot(now=1.0)
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("lo-"):
            state.apply(_patched(obj, _record("q2", priority=50) if change == "another queue" else None))
    assert state.podgroups["ns/lo"].queue == "q"  # the group held to the record taken
    state.delete("PodGroup", "ns", "lo")
    snap = state.snapshot(now=2.0)
    assert _cpu(snap, "q") == 4.0 and _cpu(snap, "q2") == 0.0
    assert {snap.jobs[f"ns/lo-{i}"].priority for i in range(4)} == {1}
    raw = state.raw_pods["ns/lo-0"]  # (the cache keeps the pod as the API has it)
    assert (BOUND_UNDER in raw["metadata"]["annotations"]) is (change == "another queue")


# A record checked against its queue's rules (note14 Found 1). Without the pod admission policy a tenant
# may write its pods' records (before an operator starts: one changed while it runs is not taken). A
# record forged so charged another team's queue, at a priority the tenant chose; it is now asked what a
# PodGroup is asked, and where refused its pod counts in its namespace's default queue, at its own.


def _tenants(record: str, *, team: str = "a", **qb: Any) -> list[Obj]:
    """Namespace ns (team ``team``, default queue qa) runs lo-0..3 (class low), their group gone, bound
    under ``record``; qa takes team a, qb team b (and ``qb``'s other rules)."""
    return [
        node("n1", cpu="4"),
        namespace("ns", labels={"team": team, NAMESPACE_QUEUE_KEY: "qa"}),
        queue("qa", namespaceSelector={"matchLabels": {"team": "a"}}, maxPriority=100),
        queue("qb", namespaceSelector={"matchLabels": {"team": "b"}}, **qb),
        priority_class("low", 1),
        priority_class("high", 50),
        *[_bound(f"lo-{i}", record=record, priority_class="low") for i in range(4)],
    ]


def _gone(objs: list[Obj], *, kept: bool) -> tuple[ClusterState, ClusterSnapshot]:
    """The cache of ``objs`` with lo's PodGroup deleted after a snapshot (``kept``), or read at a start."""
    state = _state(*objs, podgroup("lo", ns="ns", queue="qa", phase="Running", min_member=4))
    state.snapshot(now=1.0)
    if not kept:
        state = _state(*objs)
    state.delete("PodGroup", "ns", "lo")
    return state, state.snapshot(now=2.0)


def _told(snap: ClusterSnapshot, key: str) -> str:
    [message] = [m for obj, reason, m in snap.problems if obj == f"Pod {key}" and reason == "PodGroupGone"]
    return message


@pytest.mark.parametrize("kept", [True, False], ids=["incremental", "from-scratch"])
def test_a_record_naming_a_queue_whose_selector_refuses_the_namespace_is_not_taken(kept: bool) -> None:
    _, snap = _gone(_tenants(_record("qb", priority=1)), kept=kept)
    assert (_cpu(snap, "qa"), _cpu(snap, "qb")) == (4.0, 0.0)  # before: (0, 4), team b's queue charged
    job = snap.jobs["ns/lo-0"]
    assert (job.queue, job.priority, job.tasks["ns/lo-0"].priority_class) == ("qa", 1, "low")
    assert _told(snap, "ns/lo-0") == (
        "pod group lo does not exist, and this pod runs: it counts in queue qa, its namespace's default "
        "queue, at its own priority 1, as a pod standing alone (not in queue qb at priority 1, as the "
        "record of its bind says: queue qb does not take jobs of namespace ns (its namespaceSelector: "
        "team=b)), which reclaim and preempt may evict (without its PodGroup, no gang of its pods is kept "
        "whole)"
    )


@pytest.mark.parametrize(
    ("record", "why"),
    [
        (
            _record("qa", priority=1_000_000, cls="low"),
            "priority 1000000 is above queue qa's maxPriority 100",
        ),
        (_record("qa", priority=90, cls="low"), "priority 90 is above the 1 its priority class low gives"),
        (_record("qa", priority=90, cls=""), "priority 90 is above the pod's own (1), and it names no"),
        (_record("qa", priority=90, cls="made-up"), "and priority class made-up does not exist"),
        (_record("qa", priority=500, cls=""), "priority 500 is above queue qa's maxPriority 100"),
        (
            _record("qa", priority=50, cls="system-node-critical"),
            "priority class system-node-critical is for",
        ),
        (_record("qc", priority=1), "queue qc does not exist"),
    ],
    ids=[
        "far-above-class",
        "above-class",
        "no-class",
        "no-such-class",
        "max-priority",
        "critical",
        "no-queue",
    ],
)
def test_a_record_at_a_priority_its_class_or_queue_does_not_give_is_not_taken(record: str, why: str) -> None:
    """The tenant's own queue (qa) but a priority of its choosing: a pod of its own priority (1) in the
    same queue would be preempted first; the record's 1,000,000 made it everyone else's preemptor."""
    _, snap = _gone(_tenants(record), kept=True)
    assert {snap.jobs[f"ns/lo-{i}"].priority for i in range(4)} == {1}
    assert _cpu(snap, "qa") == 4.0
    assert why in _told(snap, "ns/lo-0")


@pytest.mark.parametrize(
    "record",
    [
        _record("qa", priority=1, cls="low"),
        _record("qa", priority=0, cls="high"),
        _record("qa", priority=1, cls=""),
    ],
    ids=["its-class", "below-its-class", "no-class-own-priority"],
)
def test_a_record_its_queue_takes_is_taken(record: str) -> None:
    _, snap = _gone(_tenants(record), kept=True)
    assert _cpu(snap, "qa") == 4.0
    assert "the one it was bound under" in _told(snap, "ns/lo-0")


def test_orphans_are_decided_again_when_a_queues_rules_or_a_namespaces_labels_change() -> None:
    """Bound under qb, whose selector takes team b: the orphans count in qa while ns is team a, move to
    qb when ns becomes team b or when qb takes team a too, and back; every snapshot as one from scratch
    (the base is built from scratch only when priority classes or default queues change)."""
    objs = _tenants(_record("qb", priority=1))
    state, snap = _gone(objs, kept=True)
    assert (_cpu(snap, "qa"), _cpu(snap, "qb")) == (4.0, 0.0)
    steps: list[tuple[Obj, str]] = [
        (namespace("ns", labels={"team": "b", NAMESPACE_QUEUE_KEY: "qa"}), "qb"),
        (namespace("ns", labels={"team": "a", NAMESPACE_QUEUE_KEY: "qa"}), "qa"),
        (queue("qb", namespaceSelector={"matchExpressions": [{"key": "team", "operator": "Exists"}]}), "qb"),
        (queue("qb", priorityClasses=["high"]), "qa"),  # (its class, low, no longer allowed)
        (queue("qb"), "qb"),
    ]
    for i, (obj, where) in enumerate(steps):
        state.apply(obj)
        objs = [
            o for o in objs if (o["kind"], o["metadata"]["name"]) != (obj["kind"], obj["metadata"]["name"])
        ]
        objs.append(obj)
        snap = state.snapshot(now=3.0 + i)
        assert (_cpu(snap, where), _cpu(snap, "qb" if where == "qa" else "qa")) == (4.0, 0.0), i
        assert ("the one it was bound under" in _told(snap, "ns/lo-0")) is (where == "qb")
        fresh = _state(*objs)
        assert {k: (j.queue, j.priority) for k, j in fresh.snapshot(now=3.0 + i).jobs.items()} == {
            k: (j.queue, j.priority) for k, j in snap.jobs.items()
        }
        held = snap.nodes.tasks[snap.nodes.index["n1"]]
        assert {t.priority for t in held.values()} == {1}


def test_reclaim_takes_back_what_a_forged_record_put_in_the_tenants_own_queue() -> None:
    """Team a's orphans, bound (say) under qa but recorded as qb's: team b's job in qb, owed its share,
    reclaims from qa, where they count; before, qb held them and b waited (its own queue past its share)."""
    objs = [
        *_tenants(_record("qb", priority=1)),
        namespace("nb", labels={"team": "b"}),
        podgroup("hi", ns="nb", queue="qb", phase="Inqueue"),
        pod("hi-0", ns="nb", cpu="2", group="hi"),
    ]
    _, snap = _gone(objs, kept=True)
    assert sorted(e.pod for e in run_session(snap, PREEMPT).evictions) == ["ns/lo-2", "ns/lo-3"]


def test_a_record_added_to_a_pod_seen_running_without_one_is_not_taken() -> None:
    """Without the pod policy, a tenant adds a record to its pods running with none (bound by a volsched
    before records, or by someone else at creation): deleted, their group's pods counted in the queue
    the record named, at its priority. A bind writes its record with the node, before the pod runs: one
    that comes after the API showed the pod running without one is not taken (note14 Found 5, the part
    that holds while an operator runs; a new operator reads the pods as they are)."""
    objs = _cluster(None)
    state = _state(*objs)
    state.snapshot(now=1.0)
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("lo-"):
            state.apply(_patched(obj, _record("q2", priority=50)))
    state.delete("PodGroup", "ns", "lo")
    snap = state.snapshot(now=2.0)
    assert snap.foreign_tasks == [] and _cpu(snap, "default") == 4.0  # (no record: the namespace's queue)
    assert _cpu(snap, "q2") == 0.0  # before: 4, the pods counted in q2 at priority 50
    assert BOUND_UNDER in state.raw_pods["ns/lo-0"]["metadata"]["annotations"]  # (the pod as the API has it)


def test_a_record_that_comes_with_the_node_after_an_assumed_bind_is_taken() -> None:
    """The control: the cache assumed the bind (the pod not running yet), and the watch then shows the
    pod bound with the record its bind wrote: taken."""
    state = _state(
        node("n1", cpu="4"),
        queue("q"),
        priority_class("low", 1),
        podgroup("lo", ns="ns", queue="q", phase="Inqueue"),
    )
    pending = pod("lo-0", ns="ns", cpu="1", group="lo")
    state.apply(pending)
    state.snapshot(now=1.0)
    state.set_pod_node(
        {**pending, "spec": {**pending["spec"], "nodeName": "n1"}}, base=state.raw_pods["ns/lo-0"]
    )
    assert state.tasks["ns/lo-0"].node_name == "n1"
    state.apply(_bound("lo-0", record=_record(), phase="Pending"))  # (bound, not running yet)
    state.apply(_bound("lo-0", record=_record()))  # running
    state.delete("PodGroup", "ns", "lo")
    snap = state.snapshot(now=2.0)
    assert snap.jobs["ns/lo-0"].queue == "q" and _cpu(snap, "q") == 1.0


def _gone_with_records_added(*, phase: str, terminating: bool) -> tuple[ClusterState, ClusterSnapshot]:
    """lo's four pods shown by the API on n1 with no record (bound by someone else at creation, or by a
    volsched before records), in ``phase`` (and being deleted, if ``terminating``); a tenant without the
    pod policy then adds a record naming q2 at priority 50 to each, and deletes the PodGroup."""
    objs = [
        {**o, "status": {"phase": phase}} if o["kind"] == "Pod" and o["spec"].get("nodeName") else o
        for o in _cluster(None)
    ]
    state = _state(*objs)
    state.snapshot(now=1.0)
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("lo-"):
            if terminating:
                obj = {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "2026-12-01T01:00:00Z"}}
                state.apply(obj)
            state.apply(_patched(obj, _record("q2", priority=50)))
    state.delete("PodGroup", "ns", "lo")
    return state, state.snapshot(now=2.0)


@pytest.mark.parametrize(
    ("phase", "terminating"),
    [("Pending", False), ("Running", True), ("Pending", True)],
    ids=["on its node, not running yet", "terminating", "terminating before it ran"],
)
def test_a_record_added_to_a_pod_the_api_showed_on_its_node_without_one_is_not_taken(
    phase: str, terminating: bool
) -> None:
    """note15 Found 2: 7d2221e refused a later record only when the cached pod was Running, so a record
    added while the pod sat on its node still Pending (bound at creation by another, its image pulling)
    or while it was being deleted was taken: deleted, its group's pods counted in the queue the record
    named, at its priority. The bind writes its record with the node, in one update: a record that comes
    after the API showed the pod on a node without one is a tenant's, whatever the pod's phase."""
    state, snap = _gone_with_records_added(phase=phase, terminating=terminating)
    for i in range(4):
        assert BOUND_UNDER not in state.tasks[f"ns/lo-{i}"].annotations  # before: the record q2
        job = snap.jobs[f"ns/lo-{i}"]  # (no record: its namespace's default queue, its own priority)
        assert (job.queue, job.priority) == ("default", 1)  # before: q2 at priority 50
    assert _cpu(snap, "q2") == 0.0
    assert snap.foreign_tasks == []


def _feeder_with_lo_pending() -> tuple[Feeder, list[float], Obj]:
    now = [100.0]
    feeder = Feeder(ClusterState(), assume_ttl=30, clock=lambda: now[0])
    for obj in (node("n1", cpu="4"), queue("q"), priority_class("low", 1)):
        feeder.apply(str(obj["kind"]), obj)
    group = podgroup("lo", ns="ns", queue="q", phase="Inqueue")
    feeder.apply("PodGroup", group)
    pending = pod("lo-0", ns="ns", cpu="1", group="lo")
    pending["metadata"].update(uid="u-lo-0", resourceVersion="10")
    feeder.apply("Pod", pending)
    return feeder, now, pending


def _shown(
    pending: Obj, *, rv: str, record: str | None, phase: str | None = None, node_name: str | None = "n1"
) -> Obj:
    spec = {**pending["spec"], "nodeName": node_name} if node_name else pending["spec"]
    notes = {**pending["metadata"]["annotations"], **({BOUND_UNDER: record} if record else {})}
    out: Obj = {**pending, "metadata": {**pending["metadata"], "resourceVersion": rv, "annotations": notes}}
    out["spec"] = spec
    if phase:
        out["status"] = {"phase": phase}
    return out


@pytest.mark.parametrize(
    "meanwhile",
    ["nothing", "expired", "evicted"],
    ids=["in its time to live", "its assumption expired", "evicted"],
)
def test_a_record_that_comes_with_the_apis_first_node_after_an_assumed_bind_is_taken(meanwhile: str) -> None:
    """The control, through the feeder: the cache lays its assumed node over the pod (over the API's
    events that show none, too), so the node it holds is its own, not the API's: the watch's first
    event with the node brings the bind's record, and the record is taken, even when the assumption's
    time to live ended before the watch showed the bind (the cached pod keeps the node it laid over), or
    the cache stored the pod again meanwhile (an eviction it laid over it)."""
    feeder, now, pending = _feeder_with_lo_pending()
    state = feeder.state
    assert feeder.assume("ns/lo-0", "u-lo-0", "n1")
    feeder.finish("ns/lo-0")
    labelled = _shown(pending, rv="11", record=None, node_name=None)
    labelled["metadata"]["labels"] = {"seen": "yes"}
    feeder.apply("Pod", labelled)  # an event from before the bind: the assumed node laid over it
    assert state.tasks["ns/lo-0"].node_name == "n1"
    if meanwhile == "expired":
        now[0] += 31
        feeder.expire()
        assert not feeder.is_assumed("ns/lo-0") and state.tasks["ns/lo-0"].node_name == "n1"
    if meanwhile == "evicted":
        assert feeder.assume_evicted("ns/lo-0", "u-lo-0", at=1_800_000_000.0)
    feeder.apply("Pod", _shown(labelled, rv="12", record=_record(), phase="Pending"))
    assert state.tasks["ns/lo-0"].annotations[BOUND_UNDER] == _record()
    if meanwhile == "evicted":
        return  # (its eviction laid over it: a pod being deleted is counted by no job)
    feeder.apply("Pod", _shown(labelled, rv="13", record=_record(), phase="Running"))
    feeder.delete("PodGroup", podgroup("lo", ns="ns", queue="q"))
    snap = state.snapshot(now=2.0)
    assert snap.jobs["ns/lo-0"].queue == "q" and _cpu(snap, "q") == 1.0


def test_a_record_added_after_the_watch_showed_the_node_is_not_taken_through_the_feeder() -> None:
    """The feeder tells the state whose node it holds: the API's first event shows the pod on n1 with no
    record while the cache holds no assumption of it (bound by someone else), and a record added in the
    next event is not taken; an eviction the cache laid over it since (the cached pod stored again)
    does not make the node the cache's own."""
    feeder, _, pending = _feeder_with_lo_pending()
    state = feeder.state
    feeder.apply("Pod", _shown(pending, rv="11", record=None, phase="Pending"))
    assert feeder.assume_evicted("ns/lo-0", "u-lo-0", at=1_800_000_000.0, unsure=True)
    feeder.apply("Pod", _shown(pending, rv="12", record=_record("q", priority=50), phase="Pending"))
    assert BOUND_UNDER not in state.tasks["ns/lo-0"].annotations  # before: taken (the pod not Running)
    assert BOUND_UNDER in state.raw_pods["ns/lo-0"]["metadata"]["annotations"]  # (as the API has it)
