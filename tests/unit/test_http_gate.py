"""The gate in front of /metrics and the dashboard's data (TokenReview and SubjectAccessReview answers,
cached by the token's hash), its rate limit, and the dashboard document: built once per session however
many viewers ask, narrowed to a caller's namespaces."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from volsched.gate import Gate, RateLimit, Refused
from volsched.kube.reviews import Caller
from volsched.ui import LiveState, named_namespaces, visible

DOC: dict[str, Any] = {
    "podgroups": {"a/job": {}, "b/job": {}},
    "queues": {"default": {}},
    "namespaces": {"a": {}, "b": {}},
    "events": [
        {"object": "PodGroup a/job", "message": "x"},
        {"object": "Pod b/p", "message": "y"},
        {"object": "Queue default", "message": "z"},
    ],
    "evictions": [{"pod": "a/p1"}, {"pod": "c/p2"}],
}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Reviews:
    """A stand-in for the apiserver's answers, counting the questions."""

    def __init__(self, *, users: dict[str, str], allowed: set[tuple[str, str]], fail: bool = False) -> None:
        self.users, self.allowed, self.fail = users, allowed, fail
        self.asked = 0

    def authenticate(self, token: str) -> Caller | None:
        self.asked += 1
        if self.fail:
            raise OSError(f"connection refused while sending {token}")
        user = self.users.get(token)
        return None if user is None else Caller(user=user)

    def may(self, caller: Caller, attributes: dict[str, Any]) -> bool:
        self.asked += 1
        if "nonResourceAttributes" in attributes:
            what = attributes["nonResourceAttributes"]["path"]
        else:
            what = "pods@" + attributes["resourceAttributes"].get("namespace", "*")
        return (caller.user, what) in self.allowed


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.mark.parametrize(
    ("header", "path", "status"),
    [
        pytest.param(None, "/ui", 401, id="no-header"),
        pytest.param("Basic dXNlcjpwYXNz", "/ui", 401, id="not-bearer"),
        pytest.param("Bearer ", "/ui", 401, id="empty-token"),
        pytest.param("Bearer nope", "/ui", 401, id="unknown-token"),
        pytest.param("Bearer t-ann", "/metrics", 403, id="not-allowed-path"),
        pytest.param("Bearer t-ann", "/ui", None, id="allowed"),
    ],
)
def test_the_gate_answers_401_then_403_then_lets_in(
    header: str | None, path: str, status: int | None
) -> None:
    gate = Gate(Reviews(users={"t-ann": "ann"}, allowed={("ann", "/ui")}))

    async def ask() -> None:
        await gate.check(await gate.caller(header), path)

    if status is None:
        _run(ask())
    else:
        with pytest.raises(Refused) as refused:
            _run(ask())
        assert refused.value.status == status


def test_answers_are_kept_for_the_ttl_by_the_tokens_hash() -> None:
    clock = Clock()
    reviews = Reviews(users={"t-ann": "ann"}, allowed={("ann", "/ui")})
    gate = Gate(reviews, ttl=30, clock=clock)

    async def ask() -> None:
        await gate.check(await gate.caller("Bearer t-ann"), "/ui")

    for _ in range(50):
        _run(ask())
    assert reviews.asked == 2  # one TokenReview, one SubjectAccessReview
    assert all("t-ann" not in repr(k) for k in gate._callers._table)
    clock.now += 31
    _run(ask())
    assert reviews.asked == 4


def test_a_caller_sees_only_the_namespaces_whose_pods_it_may_list() -> None:
    reviews = Reviews(
        users={"t-ann": "ann", "t-root": "root"},
        allowed={("ann", "pods@a"), ("root", "pods@*")},
    )
    gate = Gate(reviews)

    async def shown(token: str) -> frozenset[str] | None:
        return await gate.namespaces(await gate.caller(f"Bearer {token}"), ["a", "b", "c"])

    assert _run(shown("t-ann")) == frozenset({"a"})
    assert _run(shown("t-root")) is None  # every namespace
    assert _run(Gate(None).namespaces(None, ["a"])) is None  # an open gate


def test_an_apiserver_that_cannot_answer_lets_nobody_in_and_no_token_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    gate = Gate(Reviews(users={}, allowed=set(), fail=True))
    with caplog.at_level(logging.WARNING), pytest.raises(Refused) as refused:
        _run(gate.caller("Bearer s3cr3t-token"))
    assert refused.value.status == 503
    assert "s3cr3t-token" not in caplog.text and "s3cr3t-token" not in refused.value.reason
    assert "access review failed (OSError)" in caplog.text


def test_the_rate_limit_takes_a_burst_per_client_and_refills() -> None:
    clock = Clock()
    limit = RateLimit(rate=2, burst=4, total_rate=100, clock=clock)
    assert [limit.take("a") for _ in range(6)] == [True] * 4 + [False] * 2
    assert limit.take("b")  # another client has its own bucket
    clock.now += 1.0
    assert [limit.take("a") for _ in range(3)] == [True, True, False]


def test_the_rate_limit_over_all_clients() -> None:
    limit = RateLimit(rate=100, burst=100, total_rate=3, clock=Clock())
    assert [limit.take(f"c{i}") for i in range(5)] == [True] * 3 + [False] * 2


def test_the_document_is_narrowed_to_the_callers_namespaces() -> None:
    assert named_namespaces(DOC) == {"a", "b", "c"}
    out = visible(DOC, frozenset({"a"}))
    assert list(out["podgroups"]) == ["a/job"]
    assert list(out["namespaces"]) == ["a"]
    assert [e["object"] for e in out["events"]] == ["PodGroup a/job"]  # no cluster-scoped event
    assert out["evictions"] == [{"pod": "a/p1"}]
    assert out["queues"] == DOC["queues"]
    assert out["namespacesShown"] == ["a"]


def test_the_document_is_built_once_per_session_however_many_ask() -> None:
    from volsched.framework.decisions import SessionResult

    live = LiveState()
    for _ in range(3):
        live.document()
    assert live.builds == 1  # the empty document, before any session
    live.record(SessionResult(), None)
    bodies = {live.document(frozenset({"a"})) for _ in range(100)} | {live.document() for _ in range(100)}
    assert live.builds == 2 and len(bodies) == 2
    live.record(SessionResult(), None)
    live.document()
    assert live.builds == 3


def test_the_server_listens_on_each_address_given_and_no_other() -> None:
    import urllib.request

    from prometheus_client import CollectorRegistry

    from volsched.operator.http import HttpServer
    from volsched.operator.settings import HttpSettings

    async def serve() -> list[int | str]:
        server = HttpServer(
            HttpSettings(host="127.0.0.1,127.0.0.2", port=0),
            liveness=lambda: None,
            registry=CollectorRegistry(),
            ui=LiveState(),
        )
        await server.start()
        out: list[int | str] = []
        try:
            for host in ("127.0.0.1", "127.0.0.2", "127.0.0.3"):
                url = f"http://{host}:{server.port}/healthz"
                try:
                    status = await asyncio.to_thread(
                        lambda u=url: urllib.request.urlopen(u, timeout=5).status
                    )
                    out.append(status)
                except OSError as exc:
                    out.append(type(exc).__name__)
        finally:
            await server.stop()
        return out

    assert _run(serve()) == [200, 200, "URLError"]
