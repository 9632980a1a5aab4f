"""A minMember raised while a gang runs protects no more of its pods (``volsched.model.admitted``).

The defect: the gang plugin's victim filter kept ``minMember`` pods of a gang, minMember as its PodGroup
says now, so a tenant raising it to the pods running (ours ``spec.minMember``, Volcano's, the Workload
API's ``minCount``) kept every one of them from reclaim and preempt. Now it keeps no more than the
minMember the gang was admitted with, a record the sessions make, the cache keeps against the object's
events, and the status carries across a restart (a condition); a lowered minMember counts at once."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.cache.volcano import VOLCANO_PODGROUP
from volsched.cache.workload import WORKLOAD_PODGROUP
from volsched.framework.decisions import PodGroupStatus
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session
from volsched.kube import status as render
from volsched.model import admitted
from volsched.model.vocabulary import PodGroupPhase

Obj = dict[str, Any]
VOLCANO = "scheduling.volcano.sh/v1beta1"
WORKLOAD = "scheduling.k8s.io/v1beta1"
PENDING, INQUEUE, RUNNING, UNKNOWN = (
    PodGroupPhase.PENDING,
    PodGroupPhase.INQUEUE,
    PodGroupPhase.RUNNING,
    PodGroupPhase.UNKNOWN,
)


def _group(api: str, min_member: int, *, status: Obj | None = None) -> Obj:
    """PodGroup ns/a of ``api``, its minMember ``min_member``."""
    if api == WORKLOAD:
        obj: Obj = {
            "apiVersion": WORKLOAD,
            "kind": WORKLOAD_PODGROUP,  # (the cache's name for the kind, as the feeder hands it over)
            "metadata": {"name": "a", "namespace": "ns", "uid": "uid-a"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_member}}},
        }
    else:
        obj = podgroup("a", ns="ns", queue="q", min_member=min_member)
        obj["apiVersion"] = api
        obj["kind"] = VOLCANO_PODGROUP if api == VOLCANO else "PodGroup"
        obj["metadata"]["uid"] = "uid-a"
    if status is not None:
        obj["status"] = status
    return obj


def _member(i: int, api: str) -> Obj:
    obj = pod(f"a-{i}", ns="ns", group="a", node="n1")
    if api == WORKLOAD:
        obj["metadata"]["annotations"].pop("scheduling.k8s.io/group-name", None)
        obj["spec"]["schedulingGroup"] = {"podGroupName": "a"}
    return obj


def _victims(state: ClusterState) -> int:
    """How many of a's four running pods the gang plugin lets reclaim take for pending pod ns/new."""
    config = load_config(text='actions: "reclaim"\ntiers:\n- plugins: [{name: gang}]\n')
    session = open_session(state.snapshot(now=1.0), config)
    tasks = {t.name: t for job in session.jobs.values() for t in job.tasks.values()}
    return len(session.reclaimable(tasks["new"], [tasks[f"a-{i}"] for i in range(4)]))


def _state(api: str, min_member: int, *, status: Obj | None = None) -> ClusterState:
    state = ClusterState()
    objs = [node("n1", cpu="8"), queue("q"), _group(api, min_member, status=status)]
    objs += [*(_member(i, api) for i in range(4)), pod("new", ns="ns", queue="q")]
    for obj in objs:
        state.apply(obj)
    return state


APIS = pytest.mark.parametrize(
    "api", ["scheduling.volsched.io/v1beta1", VOLCANO, WORKLOAD], ids=["ours", "volcano", "workload"]
)


@APIS
@pytest.mark.parametrize(("started", "taken"), [(2, 2), (1, 4)], ids=["gang-of-2", "no-gang"])
def test_a_min_member_raised_after_admission_keeps_only_what_the_gang_was_admitted_with(
    api: str, started: int, taken: int
) -> None:
    state = _state(api, started)
    assert state.set_podgroup_admitted(
        "ns/a", started
    )  # as a session records it when the gang leaves Pending
    state.apply(_group(api, 4, status={"phase": "Running"}))  # the tenant's raise to the pods running
    assert state.podgroups["ns/a"].min_member == 4
    # Before 9226383: 0 (all four kept). A job started with minMember 1 was no gang: none of it is kept.
    assert _victims(state) == taken


@APIS
def test_the_record_read_back_after_a_restart_holds_against_a_raise(api: str) -> None:
    # A new operator (an empty cache) reads the record from the condition its predecessor wrote.
    kept = admitted.condition(4, 2)
    assert kept is not None
    state = _state(api, 4, status={"phase": "Running", "conditions": [kept]})
    assert state.podgroups["ns/a"].admitted_min_member == 2
    assert _victims(state) == 2


@APIS
def test_a_lowered_min_member_counts_at_once_and_an_admitted_one_keeps_its_gang(api: str) -> None:
    state = _state(api, 3)
    state.set_podgroup_admitted("ns/a", 3)
    assert _victims(state) == 1  # never below the minMember it was admitted with
    state.apply(_group(api, 2, status={"phase": "Running"}))
    assert _victims(state) == 2


def test_a_stale_event_does_not_take_the_record_back_and_a_new_object_does_not_inherit_it() -> None:
    state = _state("scheduling.volsched.io/v1beta1", 2)
    state.set_podgroup_admitted("ns/a", 2)
    # An event from before our status was written (no condition): the sessions' record stands.
    state.apply(_group("scheduling.volsched.io/v1beta1", 4))
    assert state.podgroups["ns/a"].admitted_min_member == 2
    # The object deleted and made again (another uid): its own status says, not the old record.
    fresh = _group("scheduling.volsched.io/v1beta1", 4)
    fresh["metadata"]["uid"] = "uid-b"
    state.apply(fresh)
    assert state.podgroups["ns/a"].admitted_min_member is None


@pytest.mark.parametrize(
    ("before", "phase", "ready", "after"),
    [
        pytest.param(None, PENDING, 0, None, id="pending-not-admitted"),
        pytest.param(None, INQUEUE, 0, None, id="admitted-holding-nothing-not-yet"),
        pytest.param(2, INQUEUE, 0, 2, id="admitted-holding-nothing-keeps-it"),
        pytest.param(None, RUNNING, 2, 4, id="started-records-min-member-now"),
        pytest.param(None, RUNNING, 4, 4, id="first-seen-running-records-it"),
        pytest.param(2, RUNNING, 4, 2, id="a-raise-while-running-moves-nothing"),
        pytest.param(2, UNKNOWN, 3, 2, id="short-of-the-raise-moves-nothing"),
        pytest.param(2, PENDING, 1, 2, id="pending-still-holding-pods-keeps-it"),
        pytest.param(2, PENDING, 0, None, id="back-to-pending-holding-none-forgets"),
    ],
)
def test_the_record_after_a_session(
    before: int | None, phase: PodGroupPhase, ready: int, after: int | None
) -> None:
    assert admitted.after_session(before, min_member=4, phase=phase, ready=ready) == after


@pytest.mark.parametrize(("min_member", "record"), [(4, 4), (6, 4), (2, 4)])
def test_the_condition_says_the_count_kept_and_carries_the_record(min_member: int, record: int) -> None:
    cond = admitted.condition(min_member, record)
    assert cond is not None
    keep = min(min_member, record)
    assert cond["message"].startswith(f"reclaim and preempt keep {keep} of its pods")
    assert cond["reason"] == (admitted.RAISED if min_member > record else admitted.AS_ADMITTED)
    assert admitted.read({"conditions": [{"type": "Other", "message": "x"}, cond]}) == record
    assert admitted.condition(min_member, None) is None
    assert admitted.read({"conditions": [{"type": admitted.CONDITION, "message": "garbled"}]}) is None


def _status(min_member: int, record: int | None, *, scheduled: int = 4) -> PodGroupStatus:
    return PodGroupStatus(
        phase="Running", queue="q", min_member=min_member, running=scheduled, succeeded=0, failed=0,
        pending=0, scheduled=scheduled, admitted_min_member=record,
    )  # fmt: skip


def test_the_status_written_carries_the_condition_for_each_kind() -> None:
    ours = render.podgroup_status(_status(6, 4))
    assert [c["type"] for c in ours["conditions"]] == ["Scheduled", admitted.CONDITION]
    assert admitted.read(ours) == 4
    k8s = render.workload_podgroup_status(_status(6, 4))
    assert [c["type"] for c in k8s["conditions"]] == [render.INITIALLY_SCHEDULED, admitted.CONDITION]
    assert admitted.read(k8s) == 4
    # kube-scheduler's condition is terminal: once written True it stays as written, the gang short or not.
    was = {"type": render.INITIALLY_SCHEDULED, "status": "True", "reason": "Scheduled", "message": "4 of 4"}
    later = render.workload_podgroup_status(_status(6, 4, scheduled=2), scheduled=was)
    assert later["conditions"][0] == was
    assert render.podgroup_status(_status(4, None))["conditions"] == [
        render.podgroup_condition(_status(4, None))
    ]


@pytest.mark.parametrize(("min_member", "reason"), [(1, admitted.AS_ADMITTED), (4, admitted.RAISED)])
def test_a_job_started_with_min_member_1_is_told_every_pod_may_be_taken(min_member: int, reason: str) -> None:
    # A job of minMember 1 is no gang: none of its pods is kept (before, the condition said 1 was, and
    # gang kept it: a lone pod was never a victim). The record still reads back.
    assert admitted.kept(min_member, 1) == 0 and admitted.protected(min_member, 1) == 1
    cond = admitted.condition(min_member, 1)
    assert cond is not None and cond["reason"] == reason
    assert cond["message"].startswith("reclaim and preempt may take every one of its pods")
    assert admitted.read({"conditions": [cond]}) == 1


def test_a_job_started_as_no_gang_and_raised_is_told_so_in_plain_words() -> None:
    # Before: "may take every one of its pods, not keep 4: minMember was raised to 4 after the gang
    # started, ...", a sentence built of nested conditionals that read as if 4 had been kept before.
    cond = admitted.condition(4, 1)
    assert cond is not None and cond["message"] == (
        "reclaim and preempt may take every one of its pods: it started as no gang, and minMember was "
        "raised to 4 after it started; a raise protects pods only once the gang starts anew, admitted again "
        "after it holds no pod (started with minMember 1)"
    )
    assert admitted.read({"conditions": [cond]}) == 1
