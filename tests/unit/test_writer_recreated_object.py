"""A PodGroup or Queue deleted and made again under its name while a status write to the old one is in
flight (a loopback server that lets the watch's forget run while it holds the request): the writer does
not record that status as written for the new object, so the new object's status is written, not
skipped as unchanged. A write the watch did not interrupt is still recorded (the next is skipped)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.unit._scripted_server import ScriptedServer
from volsched.framework.decisions import PodGroupStatus, QueueStatus, SessionResult
from volsched.kube.writer import KubeWriter
from volsched.model.vocabulary import API_GROUP

PG = f"/apis/{API_GROUP}/v1beta1/namespaces/ns/podgroups/pg/status"
Q = f"/apis/{API_GROUP}/v1beta1/queues/q/status"


def _result() -> SessionResult:
    result = SessionResult()
    result.podgroups["ns/pg"] = PodGroupStatus(
        phase="Pending", queue="q", min_member=1, running=0, succeeded=0, failed=0, pending=1, scheduled=0
    )
    result.queues["q"] = QueueStatus(
        name="q", state="Open", weight=1, allocated={}, request={}, guarantee={}, capability=None
    )
    return result


def _write(writer: KubeWriter) -> None:
    _, _, errors = writer.write_status(_result(), queues=["q"], podgroups=["ns/pg"], pods={})
    assert errors == []


def _while_in_flight(server: ScriptedServer, path: str, act: Callable[[], None]) -> None:
    """Run ``act`` (the watch's doing) once, as the apiserver holds the first request to ``path``."""
    done = False

    def before_answer(at: str) -> None:
        nonlocal done
        if not done and at.split("?")[0] == path:
            done = True
            act()

    server.before_answer = before_answer  # type: ignore[method-assign]


@pytest.mark.parametrize(("kind", "key", "path"), [("PodGroup", "ns/pg", PG), ("Queue", "q", Q)])
def test_a_status_written_as_its_object_is_made_again_is_written_again_for_the_new_one(
    server: ScriptedServer, writer: KubeWriter, kind: str, key: str, path: str
) -> None:
    # The watch sees the object deleted and added again (each forgets what was written to it) while
    # the write to the old one is in flight: that write may have reached the old object only.
    _while_in_flight(server, path, lambda: (writer.forget(kind, key), writer.forget(kind, key)))
    _write(writer)
    assert len(server.sent(path)) == 1
    _write(writer)  # the same status, for the new object: written, not skipped as unchanged
    assert len(server.sent(path)) == 2
    _write(writer)  # and now recorded: unchanged, not written again
    assert len(server.sent(path)) == 2


@pytest.mark.parametrize(("kind", "key", "path"), [("PodGroup", "ns/pg", PG), ("Queue", "q", Q)])
def test_a_status_written_is_skipped_when_unchanged(
    server: ScriptedServer, writer: KubeWriter, kind: str, key: str, path: str
) -> None:
    _write(writer)
    _write(writer)
    assert len(server.sent(path)) == 1
    writer.forget(kind, key)  # made again after the write: written again
    _write(writer)
    assert len(server.sent(path)) == 2
