"""The lean watch answered 429 (fault injection on a loopback server): back-pressure, not an outage.

The apiserver's flow control, or one answering "storage is (re)initializing" for a moment after it
starts, answers 429 with Retry-After: it answered. While it is up, the watch waits and asks again
without telling the health tracker of an outage (which would log a false "unreachable" and its end);
during an outage the 429 is counted with it (kopf's 429 follows the same rule, see QuietRetries).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.unit._scripted_server import ScriptedServer, loopback_config
from tests.watchspy import recorded_waits
from volsched.kube.health import ApiHealth
from volsched.kube.lister import WATCHED
from volsched.kube.watch import ApiError, ListWatch

PODS = next(k for k in WATCHED if k.kind == "Pod")
THROTTLED = (429, {"Retry-After": "1"}, {"kind": "Status", "reason": "TooManyRequests", "code": 429})
LISTED = (
    200,
    {},
    {
        "metadata": {"resourceVersion": "7"},
        "items": [{"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7", "uid": "ua"}}],
    },
)


class WatchServer(ScriptedServer):
    def __init__(self) -> None:
        super().__init__()
        self.watched = threading.Event()  # a watch was asked for

    def before_answer(self, path: str) -> None:
        if "watch=true" in path:
            self.watched.set()


@pytest.fixture
def server() -> Iterator[WatchServer]:
    with WatchServer() as s:
        yield s


@pytest.fixture
def api(server: WatchServer) -> Iterator[client.ApiClient]:
    with client.ApiClient(loopback_config(server.port, retries=False)) as api:
        yield api


def _pod_watch(api: client.ApiClient, **options: Any) -> tuple[ListWatch, list[str]]:
    """A ListWatch of pods (``options``: ListWatch's) and the events it hands over, as "ADDED a"."""
    events: list[str] = []
    w = ListWatch(
        api, PODS, on_event=lambda t, obj: events.append(f"{t} {obj['metadata']['name']}"), **options
    )
    return w, events


def _waiting_pod_watch(api: client.ApiClient) -> tuple[ListWatch, list[str], ApiHealth, list[str]]:
    """:func:`_pod_watch` whose first listing asks again after a short backoff, told to a health tracker;
    with what it tells the start it waits for, as "pods: ConnectionRefusedError(...)"."""
    health = ApiHealth()
    told: list[str] = []
    w, events = _pod_watch(
        api,
        health=health,
        backoff=(0.01,),
        waiting=lambda watch, exc: told.append(f"{watch.kind.plural}: {exc!r}"),
    )
    return w, events, health, told


def _watch_until_throttled(
    api: client.ApiClient, server: WatchServer, health: ApiHealth
) -> tuple[list[str], list[float]]:
    """A watch whose list is answered 429 once, then listed; its watch then answered 429 each time.
    Returns the events handed over and the seconds waited after each failed attempt."""
    server.script["limit=500"] = [THROTTLED, LISTED]
    server.script["resourceVersion=7"] = [THROTTLED]
    w, events = _pod_watch(
        api,
        health=health,
        backoff=(0.05,),
        announce_recovery=False,  # as the operator's: the Lease says when the apiserver is back
    )
    waits = recorded_waits(w)
    w.start()
    try:
        assert w.synced.wait(10)
        assert server.watched.wait(10)
    finally:
        w.stop()
    return events, waits


def test_a_429_while_the_apiserver_is_up_is_waited_out_quietly_not_an_outage(
    api: client.ApiClient, server: WatchServer, caplog: pytest.LogCaptureFixture
) -> None:
    health = ApiHealth()
    with caplog.at_level(logging.DEBUG, logger="volsched.kube"):
        events, waits = _watch_until_throttled(api, server, health)
    assert events == ["ADDED a"]
    assert waits[0] == 1.0  # listed again after its Retry-After, not after the 0.05 s backoff
    assert not health.down and health.outages == 0 and health.failures == 0
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert any("throttled" in r.getMessage() for r in caplog.records)
    assert len(server.sent("limit=500")) == 2  # asked again once, after waiting: no tight loop


def test_a_429_during_an_outage_is_counted_with_it(api: client.ApiClient, server: WatchServer) -> None:
    health = ApiHealth()
    health.failed("lease", ConnectionRefusedError("refused"))
    _watch_until_throttled(api, server, health)
    assert health.down and health.outages == 1 and health.failures >= 2


def test_the_first_listing_waits_out_a_429_and_lists_again_as_a_paged_read_does(
    api: client.ApiClient, server: WatchServer
) -> None:
    """The operator's start lists every kind once before it watches and fails on what the listing
    raises: a 429 (its storage still starting, a moment after the apiserver did) is waited out."""
    server.script["limit=500"] = [THROTTLED, LISTED]
    w, events = _pod_watch(api)
    assert w.first_list() == "7"
    assert events == ["ADDED a"] and len(server.sent("limit=500")) == 2


UNAVAILABLE = (503, {}, {"kind": "Status", "reason": "ServiceUnavailable", "code": 503})


def test_the_first_listing_asks_an_apiserver_not_up_yet_again_until_it_answers(
    api: client.ApiClient, server: WatchServer
) -> None:
    """The defect: ``volsched run`` against an apiserver not answering yet (refused, or a 503 while it
    starts) ended its start in the listing's traceback, where kube-scheduler's informers wait for it. The
    first listing now asks again after the backoff, told to the health tracker, until it answers."""
    server.script["limit=500"] = [UNAVAILABLE, UNAVAILABLE, LISTED]
    w, events, health, told = _waiting_pod_watch(api)
    relist = w.relist
    refused = [ConnectionRefusedError(111, "Connection refused")]

    def once_refused() -> str:
        if refused:
            raise refused.pop()
        return relist()

    w.relist = once_refused  # type: ignore[method-assign]
    assert w.first_list() == "7"
    assert events == ["ADDED a"] and len(server.sent("limit=500")) == 3
    assert health.outages == 1 and health.failures == 3
    assert told == ["pods: ConnectionRefusedError(111, 'Connection refused')"]  # once, why it waits


def test_the_first_listing_stopped_while_it_waits_for_the_apiserver_ends() -> None:
    """Stopped (the operator shutting down) while the apiserver is not reached, it ends, raising."""
    with WatchServer() as gone:
        port = gone.port  # (nothing listens there once it is closed)
    with client.ApiClient(loopback_config(port, retries=False)) as api:
        w = ListWatch(api, PODS, on_event=lambda t, obj: None, backoff=(60.0,))
        failed = w._failed
        tried: list[BaseException] = []

        def stop_once_failed(exc: BaseException) -> float:
            tried.append(exc)
            w.stop(timeout=0)
            return failed(exc)

        w._failed = stop_once_failed  # type: ignore[method-assign]
        with pytest.raises(OSError):
            w.first_list()
        assert len(tried) == 1


THROTTLED_AT_ONCE = (429, {"Retry-After": "0"}, THROTTLED[2])  # (waited 0.1 s: the least Retry-After kept)
THROTTLED_BARE = (429, {}, THROTTLED[2])  # no Retry-After


def test_the_first_listing_throttled_again_and_again_is_asked_again_until_it_answers(
    api: client.ApiClient, server: WatchServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The defect (note18 Found 4): a 429 answered to the first listing more than ten times running
    ended ``volsched run``'s start in the listing's traceback, where a throttled apiserver (its flow
    control, or its storage still initializing) is to be asked again, as one not reached is, until it
    answers. Each wait is its Retry-After, at least the backoff (the backoff alone without one); the
    start is told once that it waits, the apiserver is not counted down."""
    server.script["limit=500"] = [*[THROTTLED_AT_ONCE] * 14, THROTTLED_BARE, THROTTLED, LISTED]
    w, events, health, told = _waiting_pod_watch(api)
    waits = recorded_waits(w)
    with caplog.at_level(logging.INFO, logger="volsched.kube"):
        assert w.first_list() == "7"
    assert events == ["ADDED a"] and len(server.sent("limit=500")) == 17
    assert waits == [0.1] * 14 + [0.01, 1.0]
    assert told == ["pods: ApiError('429: Too Many Requests')"]  # once, with the first 429
    assert not health.down and health.outages == 0 and health.failures == 0
    assert [r.getMessage() for r in caplog.records] == []  # quiet: the start's one line is waiting's


def test_the_first_listing_throttled_and_stopped_ends() -> None:
    """Stopped (the operator shutting down) while it waits out a 429, it ends, raising the 429."""
    with WatchServer() as server:
        server.script["limit=500"] = [(429, {"Retry-After": "60"}, THROTTLED[2])]
        with client.ApiClient(loopback_config(server.port, retries=False)) as api:
            w = ListWatch(
                api, PODS, on_event=lambda t, obj: None, waiting=lambda watch, exc: w.stop(timeout=0)
            )
            with pytest.raises(ApiError) as raised:
                w.first_list()
    assert raised.value.status == 429 and len(server.sent("limit=500")) == 1
