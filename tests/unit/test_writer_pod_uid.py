"""The writer's pod status writes name the uid of the pod they were decided for (a loopback server that
records them): a pod deleted and made again under its name (a StatefulSet's) refuses them, so it never
shows the old one's DisruptionTarget or Unschedulable condition, and a victim made again is not evicted
(CONFLICT) nor told. Such a refusal is no error to report: the next session decides for the new pod."""

from __future__ import annotations

from typing import Any

from tests.unit._scripted_server import OK, UID_REFUSED, ScriptedServer
from volsched.cycle import CONFLICT, EVICTED
from volsched.framework.decisions import Code, Evict, EvictionReason, SessionResult, Status
from volsched.kube.writer import KubeWriter
from volsched.model.vocabulary import SCHEDULER_NAME

STATUS = "/api/v1/namespaces/ns/pods/c/status"
EVICTION = Evict(pod="ns/c", uid="u1", node="n1", reason=EvictionReason(action="preempt", detail="r"))
INVALID = (422, {}, {"kind": "Status", "reason": "Invalid", "code": 422, "message": "something else"})


def _pod(uid: str = "u1") -> dict[str, Any]:
    return {
        "metadata": {"name": "c", "namespace": "ns", "uid": uid},
        "spec": {"schedulerName": SCHEDULER_NAME, "terminationGracePeriodSeconds": 30},
    }


def test_a_victims_condition_names_its_uid(server: ScriptedServer, writer: KubeWriter) -> None:
    server.script["/eviction"] = [OK]
    assert writer.evict(EVICTION, _pod()).result == EVICTED
    bodies = [r.body for r in server.sent(STATUS)]
    assert len(bodies) == 2 and all(b["metadata"] == {"uid": "u1"} for b in bodies)


def test_a_victim_made_again_is_neither_told_nor_evicted(server: ScriptedServer, writer: KubeWriter) -> None:
    server.script[STATUS] = [UID_REFUSED]
    outcome = writer.evict(EVICTION, _pod())
    assert outcome.result == CONFLICT and "another pod by that name" in outcome.detail
    assert [r.path.rsplit("/", 1)[-1] for r in server.received] == ["status"]  # no event, no eviction


def test_another_refusal_of_the_condition_is_still_a_failure(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    server.script[STATUS] = [INVALID]
    assert writer.evict(EVICTION, _pod()).result == "failed"


def _unschedulable(writer: KubeWriter) -> tuple[int, list[str]]:
    result = SessionResult()
    result.rejections["Pod ns/c"] = (Status(Code.UNSCHEDULABLE, "predicates", ("no node fits",)),)
    writes, _, errors = writer.write_status(result, queues=[], podgroups=[], pods={"ns/c": _pod()})
    return writes, errors


def test_an_unschedulable_condition_names_its_uid(server: ScriptedServer, writer: KubeWriter) -> None:
    assert _unschedulable(writer) == (1, [])
    [sent] = server.sent(STATUS)
    assert sent.body["metadata"] == {"uid": "u1"}
    assert sent.body["status"]["conditions"][0]["type"] == "PodScheduled"


def test_an_unschedulable_condition_refused_by_a_pod_made_again_is_no_error(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    server.script[STATUS] = [UID_REFUSED, OK]
    assert _unschedulable(writer) == (0, [])
    assert _unschedulable(writer) == (1, [])  # not recorded as written: sent again (the cache's pod)
