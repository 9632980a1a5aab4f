"""The apiserver's flow control decides how fast the writer goes (fault injection on a loopback server).

API Priority and Fairness answers a request it will not queue with 429 and ``Retry-After``: the request
was not executed, so the writer waits and sends it again, checking its fence before each send. A 429
from the Eviction API about a PodDisruptionBudget is an answer (the eviction is blocked), never retried.
The server here answers scripted statuses per path and records what it received.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.fences import ClosingFence
from tests.unit._scripted_server import OK, Answer, ScriptedServer, loopback_config
from volsched.cycle import BLOCKED, BOUND, EVICTED, FAILED, FENCED
from volsched.framework.decisions import Bind, Evict, EvictionReason
from volsched.kube.errors import ApiException
from volsched.kube.health import SETTLE, ApiHealth
from volsched.kube.ratelimit import MAX_RETRY_AFTER, retry_after
from volsched.kube.writer import KubeWriter, WriterSettings
from volsched.model.vocabulary import SCHEDULER_NAME

TOKEN = "s3cret-token-value"
THROTTLED: Answer = (429, {"Retry-After": "1"}, {"kind": "Status", "reason": "TooManyRequests"})
PDB: Answer = (
    429,
    {},
    {
        "kind": "Status",
        "reason": "TooManyRequests",
        "details": {"causes": [{"reason": "DisruptionBudget", "message": "needs 2 healthy pods"}]},
    },
)


@pytest.fixture
def api(server: ScriptedServer) -> Iterator[client.ApiClient]:
    with client.ApiClient(loopback_config(server.port, token=TOKEN, retries=False)) as api:
        yield api


def _pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {"schedulerName": SCHEDULER_NAME},
    }


BIND = Bind(pod="ns/p", uid="u1", node="n1")
EVICTION = Evict(pod="ns/p", uid="u1", node="n1", reason=EvictionReason(action="preempt", detail="r"))


@pytest.mark.parametrize(
    ("answers", "retries", "fence_checks", "result", "sends", "waits"),
    [
        ([OK], 10, None, BOUND, 1, []),
        ([THROTTLED, THROTTLED, OK], 10, None, BOUND, 3, [1.0, 1.0]),
        ([THROTTLED], 2, None, FAILED, 3, [1.0, 1.0]),  # gives up after its retries
        ([THROTTLED, OK], 10, 1, FENCED, 1, [1.0]),  # the fence closed while it waited: never re-sent
        ([(429, {}, {"kind": "Status"}), OK], 10, None, FAILED, 1, []),  # no Retry-After: an answer
    ],
    ids=["ok", "throttled-then-bound", "retries-exhausted", "fence-closed-while-waiting", "no-retry-after"],
)
def test_a_bind_the_apiserver_throttles_is_sent_again_after_retry_after_while_the_fence_is_open(
    server: ScriptedServer,
    api: client.ApiClient,
    answers: list[Any],
    retries: int,
    fence_checks: int | None,
    result: str,
    sends: int,
    waits: list[float],
) -> None:
    server.script["/binding"] = list(answers)
    slept: list[float] = []
    fence = ClosingFence(open_for=fence_checks) if fence_checks is not None else None
    writer = KubeWriter(
        api, WriterSettings(workers=1, throttle_retries=retries), fence=fence, sleep=slept.append
    )
    try:
        outcome = writer.bind(BIND, _pod())
    finally:
        writer.close()
    assert outcome.result == result, outcome.detail
    assert len(server.sent("/binding")) == sends
    assert slept == waits
    assert writer.throttled == len(waits)


def test_a_bind_is_a_lean_binding_with_the_clients_credentials_that_never_reach_an_outcome(
    server: ScriptedServer, api: client.ApiClient
) -> None:
    server.script["/binding"] = [(500, {}, {"kind": "Status", "message": "etcd is sad"})]
    writer = KubeWriter(api, WriterSettings(workers=1))
    try:
        outcome = writer.bind(BIND, _pod())
    finally:
        writer.close()
    (sent,) = server.sent("/binding")
    assert sent.method == "POST" and sent.path == "/api/v1/namespaces/ns/pods/p/binding"
    assert sent.body == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }
    assert sent.authorization == f"Bearer {TOKEN}"
    assert outcome.result == FAILED and "etcd is sad" in outcome.detail
    assert TOKEN not in outcome.detail


@pytest.mark.parametrize(
    ("answers", "result", "sends"),
    [
        ([OK], EVICTED, 1),
        ([PDB], BLOCKED, 1),  # a PodDisruptionBudget: blocked, not retried
        ([THROTTLED, OK], EVICTED, 2),  # flow control: sent again
    ],
    ids=["evicted", "pdb-blocks", "throttled-then-evicted"],
)
def test_an_eviction_tells_a_pdb_from_the_apiservers_flow_control(
    server: ScriptedServer, api: client.ApiClient, answers: list[Any], result: str, sends: int
) -> None:
    server.script["/eviction"] = list(answers)
    writer = KubeWriter(api, WriterSettings(workers=1), sleep=lambda _s: None)
    try:
        outcome = writer.evict(EVICTION, _pod())
    finally:
        writer.close()
    assert outcome.result == result, outcome.detail
    sent = server.sent("/eviction")
    assert len(sent) == sends
    assert sent[0].body["deleteOptions"] == {"preconditions": {"uid": "u1"}}


@pytest.mark.parametrize(
    ("status", "headers", "body", "wait"),
    [
        (429, {"Retry-After": "1"}, "{}", 1.0),
        (429, {"retry-after": "3"}, "", 3.0),
        (429, {"Retry-After": "0"}, "{}", 0.1),  # never a busy loop
        (429, {"Retry-After": "3600"}, "{}", MAX_RETRY_AFTER),
        (429, {}, "{}", None),
        (429, {"Retry-After": "soon"}, "{}", None),
        (503, {"Retry-After": "1"}, "{}", None),
        (
            429,
            {"Retry-After": "1"},
            json.dumps({"details": {"causes": [{"reason": "DisruptionBudget"}]}}),
            None,
        ),
    ],
)
def test_retry_after_reads_the_apiservers_throttle_and_nothing_else(
    status: int, headers: dict[str, str], body: str, wait: float | None
) -> None:
    assert retry_after(status, headers, body) == wait


def test_a_read_the_apiserver_throttles_is_asked_again_and_its_failures_count_for_health(
    server: ScriptedServer, api: client.ApiClient
) -> None:
    pod = {**_pod(), "kind": "Pod", "apiVersion": "v1"}
    server.script["/pods/p"] = [THROTTLED, (200, {}, pod)]
    server.script["/pods/q"] = [(503, {}, {"kind": "Status", "message": "starting"}), (200, {}, pod)]
    slept: list[float] = []
    now = [100.0]
    health = ApiHealth(clock=lambda: now[0])
    writer = KubeWriter(api, WriterSettings(workers=1), sleep=slept.append, health=health)
    try:
        assert writer.read_pod("ns", "p") == pod
        assert (len(server.sent("/pods/p")), slept, writer.throttled) == (2, [1.0], 1)
        with pytest.raises(ApiException):
            writer.read_pod("ns", "q")
        assert writer.health.down  # the apiserver did not answer the read: as for a write
        now[0] += SETTLE  # an answer ends an outage from SETTLE seconds after its last failure on
        assert writer.read_pod("ns", "q") == pod
        assert not writer.health.down
    finally:
        writer.close()
