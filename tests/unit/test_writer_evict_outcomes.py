"""What each answer to an eviction or to a delete past a budget comes to (result, detail): the two
requests share one mapping of errors to outcomes, apart from where they differ on purpose. A 429 is a
disruption budget's refusal only from the Eviction API (a delete's 429 is throttling: it failed); a
delete's success, and its failures, say it was a delete."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from tests.unit._scripted_server import ScriptedServer
from volsched.cycle import BLOCKED, CONFLICT, EVICTED, FAILED, FENCED, GONE, UNKNOWN
from volsched.framework.decisions import Evict, EvictionReason
from volsched.framework.messages import DELETED
from volsched.kube.errors import ApiException
from volsched.kube.prune import prune_pod
from volsched.kube.rest import ResponseLost
from volsched.kube.writer import Fenced, KubeWriter, WriterSettings
from volsched.model.vocabulary import SCHEDULER_NAME

EVICT = Evict(pod="ns/p", uid="u1", node="n1", reason=EvictionReason(action="preempt", detail="r"))
DELETE = Evict(
    pod="ns/p",
    uid="u1",
    node="n1",
    reason=EvictionReason(action="reclaim", past_budget=("1 pod protected by PodDisruptionBudget ns/keep",)),
)
#: Deleted at once when evicted: the eviction (or delete) is the writer's first request.
POD = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
    "spec": {"schedulerName": SCHEDULER_NAME, "terminationGracePeriodSeconds": 0},
}


def _api(status: int) -> ApiException:
    return ApiException(status=status, reason="Why", body='{"kind":"Status","message":"said so"}')


class _Boom(Exception):
    def __str__(self) -> str:
        return "boom\nsecond line"


@pytest.mark.parametrize(
    ("raised", "read_back", "evicted", "deleted"),
    [
        (None, None, (EVICTED, ""), (EVICTED, DELETED)),
        (Fenced("not sure"), None, (FENCED, "not sure"), (FENCED, "not sure")),
        (_api(404), None, (GONE, "said so"), (GONE, "said so")),
        (_api(409), None, (CONFLICT, "said so"), (CONFLICT, "said so")),
        (_api(429), None, (BLOCKED, "said so"), (FAILED, "delete: 429: said so")),
        (
            _api(500),
            {"metadata": {"uid": "u1"}},
            (FAILED, "500: said so"),
            (UNKNOWN, "delete: 500: said so; read back: not evicted yet"),
        ),
        (
            _api(504),
            {"metadata": {"uid": "u1", "deletionTimestamp": "t"}},
            (FAILED, "504: said so"),
            (EVICTED, f"{DELETED}; delete: 504: said so; read back: terminating"),
        ),
        (_api(422), None, (FAILED, "422: said so"), (FAILED, "delete: 422: said so")),
        (
            ResponseLost("lost"),
            {"metadata": {"uid": "u1", "deletionTimestamp": "t"}},
            (EVICTED, "lost; read back: terminating"),
            (EVICTED, f"{DELETED}; lost; read back: terminating"),
        ),
        (
            ResponseLost("lost"),
            {"metadata": {"uid": "u1"}},
            (UNKNOWN, "lost; read back: not evicted yet"),
            (UNKNOWN, "lost; read back: not evicted yet"),
        ),
        (ResponseLost("lost"), "gone", (GONE, "lost; read back: gone"), (GONE, "lost; read back: gone")),
        (_Boom(), None, (FAILED, "boom second line"), (FAILED, "delete: boom second line")),
    ],
    ids=[
        "ok",
        "fenced",
        "404",
        "409",
        "429",
        "500",
        "504",
        "422",
        "lost-terminating",
        "lost-there",
        "lost-gone",
        "other",
    ],
)
def test_each_answer_to_an_eviction_or_a_delete_comes_to_its_outcome(
    server: ScriptedServer,
    writer: KubeWriter,
    monkeypatch: pytest.MonkeyPatch,
    raised: Exception | None,
    read_back: Any,
    evicted: tuple[str, str],
    deleted: tuple[str, str],
) -> None:
    sent: list[tuple[str, str]] = []

    def send(method: str, path: str, body: Any, **_: Any) -> bytes:
        sent.append((method, path))
        if raised is not None:
            raise raised
        return b"{}"

    monkeypatch.setattr(writer, "_send", send)
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: None if read_back == "gone" else read_back)
    for eviction, expected, request in (
        (EVICT, evicted, ("POST", "/api/v1/namespaces/ns/pods/p/eviction")),
        (DELETE, deleted, ("DELETE", "/api/v1/namespaces/ns/pods/p")),
    ):
        sent.clear()
        outcome = writer.evict(eviction, prune_pod(POD))
        assert (outcome.result, outcome.detail) == expected
        assert sent == [request]


#: Terminates for a while once evicted: told by its DisruptionTarget condition first.
LINGERING = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
    "spec": {"schedulerName": SCHEDULER_NAME, "terminationGracePeriodSeconds": 30},
}
STATUS, EVICTION, EVENTS = (
    "/api/v1/namespaces/ns/pods/p/status",
    "/api/v1/namespaces/ns/pods/p/eviction",
    "/api/v1/namespaces/ns/events",
)


#: The pod read back after a failed eviction: still marked (the condition written before it), and being
#: deleted (the eviction went through after all).
MARKED: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
    "spec": {"schedulerName": SCHEDULER_NAME},
    "status": {
        "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    },
}
TERMINATING = {**MARKED, "metadata": {**MARKED["metadata"], "deletionTimestamp": "t"}}


@pytest.mark.parametrize(
    ("raised", "read_back", "result", "after"),
    [
        (None, None, EVICTED, [("PATCH", STATUS, "True"), ("POST", EVENTS, None)]),
        (_api(429), None, BLOCKED, [("PATCH", STATUS, "False")]),
        (_api(504), MARKED, FAILED, [("PATCH", STATUS, "False")]),
        (_api(504), TERMINATING, FAILED, []),
        (_api(403), MARKED, FAILED, [("PATCH", STATUS, "False")]),
        (_api(403), {**MARKED, "status": {}}, FAILED, []),
        (_api(403), {**MARKED, "metadata": {**MARKED["metadata"], "uid": "u2"}}, FAILED, []),
        (_api(404), None, GONE, []),
        (_api(409), None, CONFLICT, []),
    ],
    ids=[
        "evicted",
        "refused by a budget",
        "timed out, the pod there",
        "timed out, the pod terminating",
        "refused otherwise",
        "refused otherwise, no longer marked",
        "refused otherwise, another pod by that name",
        "gone",
        "another pod by that name",
    ],
)
def test_a_pod_told_it_is_a_disruption_target_is_told_otherwise_when_its_eviction_did_not_happen(
    writer: KubeWriter,
    monkeypatch: pytest.MonkeyPatch,
    raised: Exception | None,
    read_back: Any,
    result: str,
    after: Any,
) -> None:
    """Its condition is written first (DisruptionTarget=True, as kube-scheduler writes it before its
    delete); the event that it was preempted only once it was (as kube-scheduler records it after the
    delete). Refused by a budget, the pod keeps running: its condition is set back to False, saying why.
    Failed otherwise, the pod read back says whether it was evicted: there, the same pod, still marked
    and not terminating, it is set back to False too, on the version read (an eviction landing in between
    makes the apiserver refuse the patch; one landing after it writes its own condition as it deletes the
    pod). Before, a failure kept the condition for the disruption controller, minutes later. Neither
    says it was preempted in an event."""
    sent: list[tuple[str, str, str | None]] = []
    bodies: list[Any] = []

    def send(method: str, path: str, body: Any, **_: Any) -> bytes:
        conditions = (body.get("status") or {}).get("conditions") or [{}]
        sent.append((method, path, conditions[0].get("status")))
        bodies.append(body)
        if path == EVICTION and raised is not None:
            raise raised
        return b"{}"

    monkeypatch.setattr(writer, "_send", send)
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: read_back)
    outcome = writer.evict(EVICT, prune_pod(LINGERING))
    assert outcome.result == result
    assert sent == [("PATCH", STATUS, "True"), ("POST", EVICTION, None), *after]
    if result == FAILED and after:
        said = bodies[-1]
        assert said["metadata"] == {"uid": "u1", "resourceVersion": "7"}  # only on the version read
        [condition] = said["status"]["conditions"]
        assert condition["reason"] == "NotEvicted"
        assert condition["message"].startswith(f"not evicted ({outcome.detail}): preempt: ns/p ")


POD_PATH = "/api/v1/namespaces/ns/pods/p"


def _sends(
    writer: KubeWriter,
    monkeypatch: pytest.MonkeyPatch,
    raised: Mapping[str, Exception] | Callable[[str, str, str | None, int], Exception | None],
) -> list[Any]:
    """``writer``'s requests answered here, recorded as (method, path, the condition's status, the body):
    each method in ``raised`` raises that; or ``raised(method, path, status, n)`` (the n-th request) says
    what the request raises, if anything."""
    sent: list[Any] = []

    def send(method: str, path: str, body: Any, **_: Any) -> bytes:
        conditions = (body.get("status") or {}).get("conditions") or [{}]
        status = conditions[0].get("status")
        sent.append((method, path, status, body))
        failure = raised(method, path, status, len(sent)) if callable(raised) else raised.get(method)
        if failure is not None:
            raise failure
        return b"{}"

    monkeypatch.setattr(writer, "_send", send)
    return sent


@pytest.mark.parametrize("refusal", [_api(422), _api(403), _api(429), ConnectionRefusedError()])
def test_a_delete_past_a_budget_refused_is_told_at_once_that_it_did_not_happen(
    writer: KubeWriter, monkeypatch: pytest.MonkeyPatch, refusal: Exception
) -> None:
    """A delete the apiserver refused (an admission policy's 422, 403, its throttling past the retries) or
    that was never sent cannot land later: the pod read back, the same, still marked and not terminating,
    is set back to False at once, on the version read (before: kept marked until the next holding of the
    Lease or the disruption controller; note14 Found 6)."""
    sent = _sends(writer, monkeypatch, {"DELETE": refusal})
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: MARKED)
    outcome = writer.evict(DELETE, prune_pod(LINGERING))
    assert outcome.result == FAILED
    assert [s[:3] for s in sent] == [
        ("PATCH", STATUS, "True"),
        ("DELETE", POD_PATH, None),
        ("PATCH", STATUS, "False"),
    ]
    said = sent[-1][3]
    assert said["metadata"] == {"uid": "u1", "resourceVersion": "7"}
    [condition] = said["status"]["conditions"]
    assert condition["reason"] == "NotEvicted"
    assert condition["message"].startswith(f"not evicted ({outcome.detail}): reclaim: ns/p ")
    assert not writer.unsettled_due()


@pytest.mark.parametrize(
    ("eviction", "lost"),
    [(EVICT, ResponseLost("lost")), (DELETE, ResponseLost("lost")), (DELETE, _api(504))],
    ids=["evict, answer lost", "delete, answer lost", "delete, 504"],
)
def test_a_pod_whose_evictions_outcome_is_unknown_is_told_once_it_is_known(
    writer: KubeWriter,
    writer_settings: WriterSettings,
    monkeypatch: pytest.MonkeyPatch,
    eviction: Evict,
    lost: Exception,
) -> None:
    """An eviction or a delete whose answer was lost (or a delete answered 504: the apiserver may still be
    processing it) and whose pod, read back, is still there: its outcome is unknown, and a delete that
    lands late writes no condition, so the pod keeps its condition for now. Once no request can act any
    more (``unknown_settles_after``), the pod read again, the same, still marked and not terminating, is
    set back to False saying so, on the version read; one evicted since, or made again, is not. Before,
    it was left marked until the next holding of the Lease (note14 Found 6)."""
    clock = [100.0]
    writer.clock = lambda: clock[0]
    request = "DELETE" if eviction.deletes else "POST"
    sent = _sends(writer, monkeypatch, {request: lost})
    read_back: list[dict[str, Any] | None] = [MARKED]
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: read_back[0])
    outcome = writer.evict(eviction, prune_pod(LINGERING))
    assert outcome.result == UNKNOWN
    assert [s[0] for s in sent] == ["PATCH", request]  # marked, sent; no event until it is known
    del sent[:]
    clock[0] += writer_settings.unknown_settles_after - 1
    assert not writer.unsettled_due() and writer.withdraw_unsettled() == 0 and sent == []
    clock[0] += 1
    assert writer.unsettled_due()
    assert writer.withdraw_unsettled() == 1
    [(method, path, status, said)] = sent
    assert (method, path, status) == ("PATCH", STATUS, "False")
    assert said["metadata"] == {"uid": "u1", "resourceVersion": "7"}
    [condition] = said["status"]["conditions"]
    assert condition["reason"] == "NotEvicted"
    action = eviction.action
    assert condition["message"].startswith(
        f"not evicted (its answer was lost, and the pod was still there and not being deleted "
        f"{writer_settings.unknown_settles_after:.0f}s later): {action}: ns/p "
    ), condition["message"]
    assert not writer.unsettled_due() and writer.withdraw_unsettled() == 0  # looked at once

    assert [s[0] for s in sent] == ["PATCH"]  # and no event: it was not evicted

    # Evicted after the read back after all (or another pod by that name now, or gone): not told
    # otherwise, and told it was evicted now (the first time at least: the event filter holds repeats).
    for i, since in enumerate(
        (TERMINATING, {**MARKED, "metadata": {**MARKED["metadata"], "uid": "u2"}}, None)
    ):
        del sent[:]
        read_back[0] = MARKED
        assert writer.evict(eviction, prune_pod(LINGERING)).result == UNKNOWN
        del sent[:]
        read_back[0] = since
        clock[0] += writer_settings.unknown_settles_after
        assert writer.withdraw_unsettled() == 0
        assert all(s[:2] == ("POST", EVENTS) for s in sent) and (sent or i > 0), sent


def test_a_pod_deleted_at_once_whose_evictions_answer_was_lost_is_told_why_it_is_set_back(
    writer: KubeWriter, writer_settings: WriterSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pod deleted at once when evicted (no grace period) is not marked first; its eviction's answer
    lost and the pod still there, it is looked at once no request can act any more, as a marked pod is:
    found still marked (by an eviction before) and not being deleted, it is set back saying its answer was
    lost, not with an empty reason (the review's find on 194b636)."""
    clock = [100.0]
    writer.clock = lambda: clock[0]
    sent = _sends(writer, monkeypatch, {"POST": ResponseLost("lost")})
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: MARKED)
    assert writer.evict(EVICT, prune_pod(POD)).result == UNKNOWN
    assert [s[:2] for s in sent] == [("POST", EVICTION)]  # not marked first, no event
    del sent[:]
    clock[0] += writer_settings.unknown_settles_after
    assert writer.withdraw_unsettled() == 1
    [(method, path, status, said)] = sent
    assert (method, path, status) == ("PATCH", STATUS, "False")
    [condition] = said["status"]["conditions"]
    assert condition["message"].startswith(
        f"not evicted (its answer was lost, and the pod was still there and not being deleted "
        f"{writer_settings.unknown_settles_after:.0f}s later): preempt: ns/p "
    ), condition["message"]


def test_a_set_back_that_failed_is_tried_again_and_a_new_eviction_of_the_pod_replaces_the_look(
    writer: KubeWriter, writer_settings: WriterSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look at a pod whose eviction's outcome was unknown is tried again when its read or write
    failed (the apiserver down a while), a few times; a new eviction decided for the pod meanwhile says
    what comes of its mark from then on (its own outcome), so the old look is dropped."""
    clock = [0.0]
    writer.clock = lambda: clock[0]
    sent = _sends(writer, monkeypatch, {"POST": ResponseLost("lost")})
    reads: list[str] = []

    def read_pod(ns: str, name: str) -> Any:
        reads.append(name)
        if len(reads) > 1 and len(reads) < 4:
            raise ConnectionRefusedError()
        return MARKED

    monkeypatch.setattr(writer, "read_pod", read_pod)
    assert writer.evict(EVICT, prune_pod(LINGERING)).result == UNKNOWN
    del sent[:]
    for _ in range(2):  # unread: again 10 s later
        clock[0] += writer_settings.unknown_settles_after
        assert writer.withdraw_unsettled() == 0
    clock[0] += 10
    assert writer.withdraw_unsettled() == 1
    assert [s[2] for s in sent] == ["False"]

    # A new eviction of the pod (here, evicted): the look left by the first one is dropped.
    _sends(writer, monkeypatch, {"POST": ResponseLost("lost")})
    assert writer.evict(EVICT, prune_pod(LINGERING)).result == UNKNOWN
    after = _sends(writer, monkeypatch, {})
    assert writer.evict(EVICT, prune_pod(LINGERING)).result == EVICTED
    del after[:]
    clock[0] += writer_settings.unknown_settles_after
    assert not writer.unsettled_due() and writer.withdraw_unsettled() == 0 and after == []


def test_a_pod_a_budget_kept_whose_set_back_failed_is_told_again_a_while_later(
    writer: KubeWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An eviction a budget refused leaves the pod running: when writing its condition back to False
    failed (the apiserver's 500, a timeout), it is said again ``_SET_BACK_RETRY`` seconds later, on the
    pod read then (before: left marked until the next holding of the Lease; note14 Found 6)."""
    clock = [0.0]
    writer.clock = lambda: clock[0]

    def raised(method: str, path: str, status: str | None, n: int) -> Exception | None:
        return _api(429) if path == EVICTION else _api(500) if n == 3 else None

    sent = _sends(writer, monkeypatch, raised)
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: MARKED)
    assert writer.evict(EVICT, prune_pod(LINGERING)).result == BLOCKED
    assert [(s[0], s[2]) for s in sent] == [("PATCH", "True"), ("POST", None), ("PATCH", "False")]
    assert not writer.unsettled_due()
    clock[0] += 10
    assert writer.unsettled_due() and writer.withdraw_unsettled() == 1
    assert [(s[0], s[2]) for s in sent[3:]] == [("PATCH", "False")]


@pytest.mark.parametrize("failure", [ResponseLost("lost"), _api(504), _api(500)], ids=["lost", "504", "500"])
def test_a_pod_whose_condition_may_have_been_written_though_its_eviction_was_not_sent_is_told_later(
    writer: KubeWriter, writer_settings: WriterSettings, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    """The DisruptionTarget condition's write failed, so the eviction was not sent; but it may have landed
    (its answer lost, a 5xx): once it cannot land any more, the pod read then, still marked, is set back
    (before: left marked until the next holding of the Lease; note14 Found 6)."""
    clock = [0.0]
    writer.clock = lambda: clock[0]
    sent = _sends(writer, monkeypatch, lambda method, path, status, n: failure if n == 1 else None)
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: MARKED)
    assert writer.evict(EVICT, prune_pod(LINGERING)).result == FAILED
    assert [(s[0], s[2]) for s in sent] == [("PATCH", "True")]  # not evicted
    clock[0] += writer_settings.unknown_settles_after
    assert writer.withdraw_unsettled() == 1
    assert [(s[0], s[2]) for s in sent[1:]] == [("PATCH", "False")]
