"""A PodGroup deleted and made again over its running pods is held to what they were bound under.

The defect: a gang's queue, priority class and minMember-at-start were the PodGroup object's, and the
admission policies fix them on update only. Deleted and created again (same name, a new uid), the group's
running pods moved to the new object's queue and class, and its minMember (raised to the pods running)
became the one the gang "started with". Each bind now writes what the pod is bound under on the pod
(``volsched.model.admitted.BOUND_UNDER``, in the Binding itself), and the cache holds a group to its
running pods' record (``admitted.inherit``) until none holds a node."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import namespace, node, pod, podgroup, priority_class, queue
from volsched.cache.state import RECORD_REFUSED, ClusterState
from volsched.cache.volcano import VOLCANO_PODGROUP
from volsched.model import admitted
from volsched.model.admitted import BOUND_UNDER, BoundUnder
from volsched.model.vocabulary import PodGroupPhase

Obj = dict[str, Any]
RECORD = admitted.bound_under(uid="uid-1", queue="qa", priority_class="low", priority=10, min_member=2)
#: The classes the records name (a record is asked what an orphan's is: its class gives its priority).
CLASSES = (priority_class("low", 10), priority_class("high", 100))


def _group(uid: str, *, queue_name: str, min_member: int, kind: str = "PodGroup", cls: str = "low") -> Obj:
    obj = podgroup("a", ns="ns", queue=queue_name, min_member=min_member, priority_class=cls)
    obj["metadata"]["uid"] = uid
    if kind == VOLCANO_PODGROUP:
        obj["apiVersion"], obj["kind"] = "scheduling.volcano.sh/v1beta1", VOLCANO_PODGROUP
    return obj


def _member(i: int, record: str | None = RECORD, *, bound: bool = True) -> Obj:
    obj = pod(f"a-{i}", ns="ns", group="a", node="n1" if bound else None)
    if record is not None:
        obj["metadata"]["annotations"][BOUND_UNDER] = record
    return obj


def test_the_record_reads_back_what_a_bind_writes_and_nothing_else() -> None:
    assert admitted.read_bound(RECORD) == BoundUnder(
        queue="qa", priority_class="low", priority=10, min_member=2, uid="uid-1"
    )
    for bad in (
        "",
        "{",
        "[]",
        '{"podGroup":"u","queue":"q","priorityClassName":"","priority":1}',
        RECORD.replace('"minMember":2', '"minMember":0'),
        RECORD.replace('"priority":10', '"priority":"10"'),
        RECORD.replace('"queue":"qa"', '"queue":""'),
    ):
        assert admitted.read_bound(bad) is None, bad


@pytest.mark.parametrize("kind", ["PodGroup", VOLCANO_PODGROUP], ids=["ours", "volcano"])
@pytest.mark.parametrize("group_first", [True, False], ids=["group-first", "pods-first (a restart)"])
def test_a_group_made_again_over_running_pods_keeps_their_queue_class_and_min_member(
    kind: str, group_first: bool
) -> None:
    state = ClusterState()
    for obj in (node("n1", cpu="8"), queue("qa"), queue("qc"), *CLASSES):
        state.apply(obj)
    made_again = _group("uid-2", queue_name="qc", min_member=4, kind=kind, cls="high")
    objs = [made_again, *(_member(i) for i in range(4))]
    for obj in objs if group_first else objs[::-1]:
        state.apply(obj)
    pg = state.podgroups["ns/a"]
    assert (pg.queue, pg.priority_class_name, pg.priority, pg.admitted_min_member) == ("qa", "low", 10, 2)
    assert pg.min_member == 4 and pg.uid == "uid-2"  # the rest as the object says
    assert admitted.protected(pg.min_member, pg.admitted_min_member) == 2  # on main: 4, every pod kept
    job = state.snapshot(now=1.0).jobs["ns/a"]
    assert (job.queue, job.priority) == ("qa", 10)
    # Once none of them holds a node, the object says again (it starts anew, through enqueue).
    for i in range(4):
        state.delete("Pod", "ns", f"a-{i}")
    pg = state.podgroups["ns/a"]
    assert (pg.queue, pg.priority_class_name, pg.priority, pg.admitted_min_member) == (
        "qc",
        "high",
        None,
        None,
    )


def test_only_pods_holding_a_node_count_and_a_malformed_record_counts_for_nothing() -> None:
    state = ClusterState()
    for obj in (
        node("n1", cpu="8"),
        queue("qa"),
        queue("qc"),
        *CLASSES,
        _group("uid-2", queue_name="qc", min_member=1),
    ):
        state.apply(obj)
    state.apply(_member(0, bound=False))  # pending: what it says it was bound under is no record
    state.apply(_member(1, record="not json"))
    assert state.podgroups["ns/a"].queue == "qc"
    state.apply(_member(0))  # bound
    assert state.podgroups["ns/a"].queue == "qa"


def test_a_phase_or_record_the_sessions_write_keeps_the_object_as_it_says() -> None:
    # The sessions' own writes go to the object the cache holds, not to the view inherited: once the
    # old pods are gone, the object's queue is back, not the inherited one copied into it.
    state = ClusterState()
    for obj in (
        node("n1", cpu="8"),
        queue("qa"),
        queue("qc"),
        *CLASSES,
        _group("uid-2", queue_name="qc", min_member=4),
    ):
        state.apply(obj)
    state.apply(_member(0))
    assert state.set_podgroup_phase("ns/a", PodGroupPhase.RUNNING)
    assert state.set_podgroup_admitted("ns/a", 2)
    assert state.podgroups["ns/a"].queue == "qa"
    state.delete("Pod", "ns", "a-0")
    pg = state.podgroups["ns/a"]
    assert (pg.queue, pg.phase, pg.admitted_min_member) == ("qc", PodGroupPhase.RUNNING, 2)


def _forged_state(record: str) -> ClusterState:
    """ns's gang a (class low) made again in qa over four running pods whose record says ``record``
    (forged where no pod policy fixes records); qb takes only namespaces labelled team=b."""
    state = ClusterState()
    for obj in (
        node("n1", cpu="8"),
        namespace("ns", labels={"team": "a"}),
        queue("qa"),
        queue("qb", namespaceSelector={"matchLabels": {"team": "b"}}),
        *CLASSES,
        _group("uid-2", queue_name="qa", min_member=4),
        *(_member(i, record) for i in range(4)),
    ):
        state.apply(obj)
    return state


def _told(snap: Any) -> list[str]:
    return [
        message
        for obj, reason, message in snap.problems
        if (obj, reason) == ("PodGroup ns/a", RECORD_REFUSED)
    ]


@pytest.mark.parametrize(
    ("forged", "why"),
    [
        (dict(queue="qb"), "queue qb does not take jobs of namespace ns (its namespaceSelector: team=b)"),
        (dict(priority=50), "priority 50 is above the 10 its priority class low gives"),
        (dict(queue="nowhere"), "queue nowhere does not exist"),
    ],
    ids=["another team's queue", "above its class", "no such queue"],
)
def test_a_group_made_again_is_not_held_to_a_record_an_orphans_would_be_refused(
    forged: Obj, why: str
) -> None:
    """note15 Found 5: a record is asked what a PodGroup is asked where it makes an orphan (8d4ff7a), but a
    group made again over the pods was held to it as it was: a tenant who may patch its pods (no pod
    policy) and delete and create its PodGroups had its gang counted in another team's queue, or at a
    priority above what its class gives (kept from preemption). The record a group is held to is asked
    the same (``orphans.refusal``); refused, the group counts as its object says (as a PodGroup made
    anew does, judged by its queue's rules), and it is told why."""
    fields = dict(queue="qa", priority_class="low", priority=10, min_member=4) | forged
    record = admitted.bound_under(uid="uid-1", **fields)  # type: ignore[arg-type]
    state = _forged_state(record)
    pg = state.podgroups["ns/a"]
    assert (pg.queue, pg.priority, pg.admitted_min_member) == ("qa", None, None)  # before: the record's
    snap = state.snapshot(now=1.0)
    assert (snap.jobs["ns/a"].queue, snap.jobs["ns/a"].priority) == ("qa", 10)
    (message,) = _told(snap)
    assert message == (
        f"the record its running pods were bound under (queue {fields['queue']}, priority {fields['priority']}, "
        f"minMember 4) is not taken: {why}; it counts as its object says (queue qa), as a PodGroup made anew does"
    )


def test_a_record_is_asked_again_as_the_rules_change_and_a_legitimate_one_is_held() -> None:
    """Asked again in the next snapshot whenever what it is asked changes (the namespace's labels, a
    Queue, a PriorityClass), as an orphan's is; a record the rules take holds the group as before."""
    record = admitted.bound_under(uid="uid-1", queue="qb", priority_class="low", priority=10, min_member=2)
    state = _forged_state(record)
    assert state.snapshot(now=1.0).jobs["ns/a"].queue == "qa"
    state.apply(namespace("ns", labels={"team": "b"}))  # qb takes ns now: the record holds
    snap = state.snapshot(now=2.0)
    assert (snap.jobs["ns/a"].queue, _told(snap)) == ("qb", [])
    assert state.podgroups["ns/a"].admitted_min_member == 2
    state.apply(queue("qb", namespaceSelector={"matchLabels": {"team": "c"}}))  # and not now
    snap = state.snapshot(now=3.0)
    assert snap.jobs["ns/a"].queue == "qa" and len(_told(snap)) == 1
    state.apply(queue("qb"))
    state.apply(priority_class("low", 5))  # the class gives less than the record's priority now
    snap = state.snapshot(now=4.0)
    assert snap.jobs["ns/a"].queue == "qa"
    assert _told(snap) == [
        "the record its running pods were bound under (queue qb, priority 10, minMember 2) is not taken: "
        "priority 10 is above the 5 its priority class low gives; it counts as its object says (queue qa), "
        "as a PodGroup made anew does"
    ]
    for i in range(4):
        state.delete("Pod", "ns", f"a-{i}")
    snap = state.snapshot(now=5.0)
    assert (snap.jobs["ns/a"].queue, _told(snap)) == ("qa", [])  # no pod holds a node: nothing to tell
