"""What the writer asks of the apiserver for a decision, request by request (a loopback server that
records them): the apiserver's CPU is what the scheduler_perf workloads share, so a request that tells
nobody anything is one too many."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit._scripted_server import OK, ScriptedServer
from volsched.cycle import BLOCKED, EVICTED, GONE
from volsched.framework.decisions import Code, Event, Evict, EvictionReason, SessionResult, Status
from volsched.framework.messages import DELETED
from volsched.kube.prune import prune_pod
from volsched.kube.ratelimit import EventFilter
from volsched.kube.writer import EventTarget, KubeWriter
from volsched.model.vocabulary import SCHEDULER_NAME

NOT_FOUND = (404, {}, {"kind": "Status", "reason": "NotFound", "code": 404})
CONFLICT = (409, {}, {"kind": "Status", "reason": "AlreadyExists", "code": 409})


def _pod(grace: int | None, finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": "u1"}
    if finalizers:
        meta["finalizers"] = finalizers
    spec: dict[str, Any] = {"schedulerName": SCHEDULER_NAME}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"metadata": meta, "spec": spec}


EVICTION = Evict(pod="ns/p", uid="u1", node="n1", reason=EvictionReason(action="preempt", detail="r"))


@pytest.mark.parametrize(
    ("pod", "lingers"),
    [
        (_pod(None), True),  # 30 s by default: it terminates a while, showing the condition
        (_pod(30), True),
        (_pod(0, ["example.com/keep"]), True),  # kept until its finalizer goes
        (_pod(0), False),  # deleted at once: the eviction's own condition is all it ever shows
    ],
    ids=["default-grace", "grace-30", "finalizer", "gone-at-once"],
)
def test_an_evicted_pod_gets_its_condition_only_if_it_lingers(
    server: ScriptedServer, writer: KubeWriter, pod: dict[str, Any], lingers: bool
) -> None:
    """Told before and again after the eviction (which writes its own condition) while it terminates; a
    pod deleted at once only gets the event: a condition written before is replaced by the eviction's
    before anyone reads it (kube-scheduler's Preemption asks a status write per victim), and its event
    goes with the next status writes, so the session that preempts waits for one request per victim.
    The event comes after the eviction went through, as kube-scheduler records it after its delete."""
    server.script["/eviction"] = [OK]
    assert writer.evict(EVICTION, prune_pod(pod)).result == EVICTED  # as the cache holds it
    writer.write_status(SessionResult(), queues=[], podgroups=[], pods={})
    methods = [(r.method, r.path.rsplit("/", 1)[-1]) for r in server.received]
    told_after = [("POST", "eviction"), ("POST", "events")]
    lingering = [("PATCH", "status"), ("POST", "eviction"), ("PATCH", "status"), ("POST", "events")]
    assert methods == (lingering if lingers else told_after)


def test_a_pod_gone_at_once_whose_eviction_is_refused_gets_no_event(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    """A PodDisruptionBudget refused it: nothing was preempted, and no event says so."""
    server.script["/eviction"] = [(429, {}, {"kind": "Status", "message": "Cannot evict pod"})]
    assert writer.evict(EVICTION, prune_pod(_pod(0))).result == BLOCKED
    writer.write_status(SessionResult(), queues=[], podgroups=[], pods={})
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in server.received] == [("POST", "eviction")]


PAST = Evict(
    pod="ns/p",
    uid="u1",
    node="n1",
    reason=EvictionReason(action="reclaim", past_budget=("1 pod protected by PodDisruptionBudget ns/keep",)),
)


@pytest.mark.parametrize("lingers", [True, False], ids=["grace-30", "gone-at-once"])
def test_a_victim_past_its_budget_is_told_then_deleted_never_evicted(
    server: ScriptedServer, writer: KubeWriter, lingers: bool
) -> None:
    """Its condition first (naming the budget), then a DELETE of that pod only (its uid a precondition):
    the Eviction API would refuse it; then its event. The delete keeps the condition: not written
    again."""
    outcome = writer.evict(PAST, prune_pod(_pod(30 if lingers else 0)))
    assert (outcome.result, outcome.detail) == (EVICTED, DELETED)
    writer.write_status(SessionResult(), queues=[], podgroups=[], pods={})
    methods = [(r.method, r.path.rsplit("/", 1)[-1]) for r in server.received]
    told = [("PATCH", "status"), ("DELETE", "p"), ("POST", "events")]
    assert methods == (told if lingers else [("DELETE", "p"), ("POST", "events")])
    [delete] = [r for r in server.received if r.method == "DELETE"]
    assert delete.path == "/api/v1/namespaces/ns/pods/p"
    assert delete.body["preconditions"] == {"uid": "u1"}
    said = [r.body for r in server.received if r.path.endswith("/events")]
    assert "deleted past its disruption budget" in said[0]["message"]
    assert "past 1 pod protected by PodDisruptionBudget ns/keep" in said[0]["message"]
    if lingers:
        [condition] = server.sent("/status")[0].body["status"]["conditions"]
        assert (condition["reason"], condition["message"]) == ("ReclaimByScheduler", said[0]["message"])


@pytest.mark.parametrize(
    ("answer", "result"),
    [
        pytest.param(NOT_FOUND, GONE, id="gone"),
        pytest.param(
            (409, {}, {"kind": "Status", "reason": "Conflict", "code": 409}), "conflict", id="another-uid"
        ),
    ],
)
def test_a_victim_past_its_budget_that_is_gone_or_another_pod_is_not_deleted(
    server: ScriptedServer, writer: KubeWriter, answer: Any, result: str
) -> None:
    server.script["/pods/p"] = [answer]
    assert writer.evict(PAST, prune_pod(_pod(30))).result == result
    assert not server.sent("/eviction")


TARGET = EventTarget("Pod", "v1", "ns", "p", "u1")


def test_an_event_this_writer_sent_is_updated_in_place_with_one_request(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    """The first message creates the Event; a later one (a pending pod's reason changed) updates it at
    once, with the count this writer keeps, instead of a create refused as a conflict, a read and an
    update."""
    assert writer.post_object_event(TARGET, reason="FailedScheduling", message="one")[0] == 1
    assert writer.post_object_event(TARGET, reason="FailedScheduling", message="two")[0] == 1
    first, second = server.received
    assert (first.method, first.path) == ("POST", "/api/v1/namespaces/ns/events")
    assert second.method == "PATCH" and second.path.startswith("/api/v1/namespaces/ns/events/")
    assert (second.body["message"], second.body["count"]) == ("two", 2)


def test_an_event_gone_meanwhile_is_created_again_and_one_never_sent_here_is_read_first(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    """Events expire (an hour by default): the update finds none (404) and the event is created again.
    An Event this writer never sent (another replica's, or from before a restart) is read first, so
    that its count goes on and the same message is not sent twice."""
    writer.post_object_event(TARGET, reason="FailedScheduling", message="one")
    server.script["/events/" + server.received[0].body["metadata"]["name"]] = [NOT_FOUND]
    assert writer.post_object_event(TARGET, reason="FailedScheduling", message="two")[0] == 1
    assert [r.method for r in server.received] == ["POST", "PATCH", "POST"]
    assert server.received[-1].body["message"] == "two"

    server.received.clear()
    other = EventTarget("Pod", "v1", "ns", "q", "u2")
    server.script["/api/v1/namespaces/ns/events"] = [CONFLICT]
    writer.post_object_event(other, reason="FailedScheduling", message="one")
    assert [r.method for r in server.received] == ["POST", "GET", "PATCH"]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_waiting_pods_reason_is_written_again_when_its_words_change_and_its_numbers_settle(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    """A pod that can never fit is told why (condition and event) once; while the other pods' binds
    move only the numbers of its reason ("most idle"), it is told again at most every event_every
    seconds (the newest numbers, offered by a later session); a reason in other words goes at once."""
    clock = _Clock()
    writer.events = EventFilter(burst=5, every=10.0, clock=clock)
    pod = _pod(30)

    def session(why: str) -> list[str]:
        server.received.clear()
        result = SessionResult()
        result.rejections["Pod ns/p"] = (Status(Code.UNSCHEDULABLE, "allocate", (why,)),)
        message = result.unschedulable["ns/p"]
        result.events.append(
            Event(kind="Pod", namespace="ns", name="p", reason="FailedScheduling", message=message)
        )
        writer.write_status(result, queues=[], podgroups=[], pods={"ns/p": pod})
        return sorted(f"{r.method} {r.path.split('/')[-2]}" for r in server.received)

    idle = "0/200 nodes fit: 200 insufficient cpu (needs 9, most idle {})"
    assert session(idle.format("4")) == ["PATCH p", "POST ns"]  # the condition, the event created
    clock.now = 1.0
    assert session(idle.format("3.9")) == []  # only the numbers moved: they settle
    assert writer.events.limited == 2  # held back, so the port keeps a session coming for them
    clock.now = 2.0
    assert session("0/200 nodes fit: 200 node(s) had untolerated taint") == ["PATCH events", "PATCH p"]
    clock.now = 11.0
    assert session("0/200 nodes fit: 100 node(s) had untolerated taint") == []
    clock.now = 12.0
    assert session("0/200 nodes fit: 100 node(s) had untolerated taint") == ["PATCH events", "PATCH p"]


def test_a_waiting_pods_condition_carries_no_credential_its_reason_does(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    """The event is redacted where every event passes (``_upsert_event``); the PodScheduled condition
    beside it, which ``kubectl describe pod`` shows with it, carried the same words unredacted. It is
    written redacted, and the same reason in the next session is still no new write."""
    pod = _pod(30)
    why = "0/1 nodes fit: 1 node(s) didn't match the pod's node selector (password=hunter2)"

    def session() -> list[Any]:
        server.received.clear()
        result = SessionResult()
        result.rejections["Pod ns/p"] = (Status(Code.UNSCHEDULABLE, "allocate", (why,)),)
        writer.write_status(result, queues=[], podgroups=[], pods={"ns/p": pod})
        return [r for r in server.received if r.path.endswith("/pods/p/status")]

    [patch] = session()
    assert "hunter2" not in str(patch.body) and "password=***" in str(patch.body), patch.body
    assert session() == []


def test_a_waiting_gangs_condition_carries_no_credential_its_reason_does() -> None:
    from volsched.framework.decisions import PodGroupStatus
    from volsched.kube.status import podgroup_status

    why = "0/1 nodes fit: 1 node(s) didn't match the pod's node selector (password=hunter2)"
    status = PodGroupStatus(
        phase="Inqueue", queue="q", min_member=2, running=0, succeeded=0, failed=0, pending=2, scheduled=0,
        rejections=(Status(Code.UNSCHEDULABLE, "allocate", (why,)),),
    )  # fmt: skip
    [scheduled] = podgroup_status(status)["conditions"]
    assert scheduled["status"] == "False" and "password=***" in scheduled["message"]
    assert "hunter2" not in scheduled["message"]
