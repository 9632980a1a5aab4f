"""What the writer writes to a pod's ``status.nominatedNodeName`` for a session's ``nominated`` (a loopback
server that records the requests; the cache's pods as the port hands them): set when a claim is made,
nothing while it stands, cleared when it ends with the pod unbound, left to the apiserver when the pod
is bound (it clears it as it binds), and a stale one (an earlier leader's) cleared, only on the pod of
the uid it was meant for, never on a pod another scheduler places, never by a replica that may have lost
the Lease."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from tests.fences import Fence
from tests.unit._scripted_server import UID_REFUSED, ScriptedServer
from volsched.framework.decisions import Bind, SessionResult
from volsched.kube.writer import KubeWriter
from volsched.model.raw import Raw
from volsched.model.vocabulary import SCHEDULER_NAME

STATUS = "/api/v1/namespaces/ns/pods/c/status"


def _pod(
    *, uid: str = "u1", node: str = "", nominated: str = "", scheduler: str = SCHEDULER_NAME
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": scheduler}
    if node:
        spec["nodeName"] = node
    status = {"nominatedNodeName": nominated} if nominated else {}
    return {"metadata": {"name": "c", "namespace": "ns", "uid": uid}, "spec": spec, "status": status}


class Cache:
    """The cache's pods, as ``Feeder.pods`` hands them (all of them for None)."""

    def __init__(self, **pods: dict[str, Any]) -> None:
        self.pods: dict[str, Raw] = {f"ns/{name}": pod for name, pod in pods.items()}

    def __call__(self, keys: Iterable[str] | None) -> Mapping[str, Raw]:
        if keys is None:
            return dict(self.pods)
        return {key: self.pods[key] for key in keys if key in self.pods}


def _write(
    writer: KubeWriter, server: ScriptedServer, cache: Cache, nominated: dict[str, str], **result: Any
) -> list[dict[str, Any]]:
    """One session's status writes: the bodies of the requests to pod c's status."""
    server.received.clear()
    _, _, errors = writer.write_status(
        SessionResult(nominated=nominated, **result), queues=[], podgroups=[], pods={}, pods_now=cache
    )
    assert errors == []
    return [r.body for r in server.sent(STATUS)]


def _says(node: str | None, uid: str = "u1") -> dict[str, Any]:
    return {"metadata": {"uid": uid}, "status": {"nominatedNodeName": node}}


def test_set_when_the_claim_is_made_then_cleared_when_it_ends_unplaced(
    writer: KubeWriter, server: ScriptedServer
) -> None:
    cache = Cache(c=_pod())
    assert _write(writer, server, cache, {"ns/c": "n1"}) == [_says("n1")]
    cache.pods["ns/c"] = _pod(nominated="n1")  # (the watch shows it)
    assert _write(writer, server, cache, {"ns/c": "n1"}) == []  # carried: nothing to write
    assert _write(writer, server, cache, {"ns/c": "n2"}) == [_says("n2")]
    assert _write(writer, server, cache, {}) == [_says(None)]
    assert _write(writer, server, cache, {}) == []  # cleared once


def test_cleared_even_before_the_watch_shows_it_was_set(writer: KubeWriter, server: ScriptedServer) -> None:
    cache = Cache(c=_pod())
    assert _write(writer, server, cache, {"ns/c": "n1"}) == [_says("n1")]
    assert _write(writer, server, cache, {}) == [_says(None)]


def test_a_pod_bound_is_cleared_by_the_apiserver_as_it_binds(
    writer: KubeWriter, server: ScriptedServer
) -> None:
    cache = Cache(c=_pod())
    assert _write(writer, server, cache, {"ns/c": "n1"}) == [_says("n1")]
    bound = [Bind(pod="ns/c", uid="u1", node="n1")]
    assert _write(writer, server, cache, {}, binds=bound) == []  # the bind clears it
    cache.pods["ns/c"] = _pod(node="n1")  # bound, and cleared as it was
    assert _write(writer, server, cache, {}) == []
    cache.pods["ns/c"] = _pod(node="n1", nominated="n1")  # (nothing is written for it any more)
    assert _write(writer, server, cache, {}) == []


def test_a_pod_bound_that_still_says_it_is_cleared(writer: KubeWriter, server: ScriptedServer) -> None:
    """An apiserver older than 1.35 (or with ClearingNominatedNodeNameAfterBinding off) keeps it."""
    cache = Cache(c=_pod())
    assert _write(writer, server, cache, {"ns/c": "n1"}) == [_says("n1")]
    cache.pods["ns/c"] = _pod(node="n1", nominated="n1")
    assert _write(writer, server, cache, {}) == [_says(None)]


@pytest.mark.parametrize(
    ("pod", "nominated", "expected"),
    [
        pytest.param(_pod(nominated="n1"), {}, [_says(None)], id="left-by-an-earlier-leader-cleared"),
        pytest.param(_pod(nominated="n1"), {"ns/c": "n1"}, [], id="nominated-again-kept"),
        pytest.param(_pod(nominated="n1"), {"ns/c": "n2"}, [_says("n2")], id="nominated-elsewhere-moved"),
        pytest.param(_pod(node="n1", nominated="n1"), {}, [_says(None)], id="bound-still-saying-cleared"),
        pytest.param(_pod(nominated="n1", scheduler="default-scheduler"), {}, [], id="not-ours-left-alone"),
        pytest.param(_pod(scheduler="default-scheduler"), {"ns/c": "n1"}, [], id="not-ours-never-set"),
        pytest.param(_pod(node="n1"), {"ns/c": "n1"}, [], id="bound-never-set"),
    ],
)  # fmt: skip
def test_what_the_pods_say_when_writing_begins(
    writer: KubeWriter,
    server: ScriptedServer,
    pod: dict[str, Any],
    nominated: dict[str, str],
    expected: list[dict[str, Any]],
) -> None:
    assert _write(writer, server, Cache(c=pod), nominated) == expected


def test_a_pod_made_again_under_its_name_is_not_written_for_the_old_one(
    writer: KubeWriter, server: ScriptedServer
) -> None:
    cache = Cache(c=_pod())
    assert _write(writer, server, cache, {"ns/c": "n1"}) == [_says("n1")]
    cache.pods["ns/c"] = _pod(uid="u2")  # the new pod says nothing: nothing to clear
    assert _write(writer, server, cache, {}) == []


def test_a_patch_refused_as_the_pod_was_made_again_is_forgotten(
    writer: KubeWriter, server: ScriptedServer
) -> None:
    """The uid in the patch: the apiserver refuses it (422, the uid is immutable) on another pod."""
    cache = Cache(c=_pod())
    assert _write(writer, server, cache, {"ns/c": "n1"}) == [_says("n1")]
    server.script[STATUS] = [UID_REFUSED]
    assert _write(writer, server, cache, {}) == [_says(None)]
    assert _write(writer, server, cache, {}) == []  # (not an error, not sent again)


def test_a_pod_deleted_is_forgotten(writer: KubeWriter, server: ScriptedServer) -> None:
    cache = Cache(c=_pod())
    assert _write(writer, server, cache, {"ns/c": "n1"}) == [_says("n1")]
    writer.forget("Pod", "u1")
    assert _write(writer, server, cache, {}) == []


def test_a_failed_clear_is_sent_again(writer: KubeWriter, server: ScriptedServer) -> None:
    cache = Cache(c=_pod())
    assert _write(writer, server, cache, {"ns/c": "n1"}) == [_says("n1")]
    server.script[STATUS] = [(500, {}, {"kind": "Status", "code": 500}), (200, {}, {})]
    server.received.clear()
    _, _, errors = writer.write_status(SessionResult(), queues=[], podgroups=[], pods={}, pods_now=cache)
    assert len(errors) == 1 and "nominatedNodeName: 500" in errors[0]
    assert _write(writer, server, cache, {}) == [_says(None)]
    assert _write(writer, server, cache, {}) == []


def test_no_claims_no_requests(writer: KubeWriter, server: ScriptedServer) -> None:
    assert _write(writer, server, Cache(c=_pod()), {}) == []
    assert server.received == []


def test_a_replica_that_may_have_lost_the_lease_writes_nothing(
    writer: KubeWriter, server: ScriptedServer
) -> None:
    fence = writer.fence = Fence()
    fence.open = False
    cache = Cache(c=_pod(nominated="n1"))
    assert _write(writer, server, cache, {}) == []  # a clear, not sent
    assert _write(writer, server, cache, {"ns/c": "n2"}) == []  # a set, not sent
    fence.open = True
    assert _write(writer, server, cache, {}) == [_says(None)]  # sent once the Lease is held again


def test_a_lease_taken_back_reads_again_what_the_pods_say(writer: KubeWriter, server: ScriptedServer) -> None:
    """Another replica held the Lease meanwhile and nominated c: its claim is gone with it, cleared."""
    fence = writer.fence = Fence()
    cache = Cache(c=_pod())
    assert _write(writer, server, cache, {}) == []
    cache.pods["ns/c"] = _pod(nominated="n9")
    assert _write(writer, server, cache, {}) == []  # (what this holding found: nothing to clear)
    fence.acquired_at = 2.0
    assert _write(writer, server, cache, {}) == [_says(None)]
