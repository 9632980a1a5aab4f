"""A PodGroup's status converges on a real apiserver through write after write: a status the apiserver
refused (403) or the Lease fenced (not sent) is written by a later session's status writes, even when
that session's result holds the very same status object (as the settled run's PodGroups do, session
after session); a status written is never sent again while it stays the same, unless this replica took the
Lease back from another, which may have written over it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import GROUP, VERSION, Kube, grant, podgroup, wait_for
from tests.fences import Fence
from volsched.framework.decisions import PodGroupStatus, SessionResult
from volsched.kube.writer import KubeWriter, WriterSettings
from volsched_dev.devcluster import TEST_USER, LocalControlPlane

pytestmark = pytest.mark.cluster


def _running(min_member: int = 2) -> PodGroupStatus:
    return PodGroupStatus(
        phase="Running", queue="default", min_member=min_member, running=min_member,
        succeeded=0, failed=0, pending=0, scheduled=min_member,
    )  # fmt: skip


def _result(key: str, status: PodGroupStatus) -> SessionResult:
    return SessionResult(podgroups={key: status})


def _writes(writer: KubeWriter, key: str, result: SessionResult) -> tuple[int, list[str]]:
    writes, _events, errors = writer.write_status(result, queues=[], podgroups=[key], pods={})
    return writes, errors


def _status(k: Kube, ns: str) -> dict[str, Any]:
    return k.get_podgroup(ns, "pg").get("status") or {}


def _fresh(k: Kube) -> tuple[str, str]:
    ns = k.namespace(f"pg-status-{uuid.uuid4().hex[:6]}")
    k.podgroup(ns, podgroup("pg", 2))
    return ns, f"{ns}/pg"


def test_a_status_the_apiserver_refused_is_written_once_allowed_from_the_same_status(
    mk: Kube, module_cluster: LocalControlPlane
) -> None:
    ns, key = _fresh(mk)
    result = _result(key, _running())
    with module_cluster.api_client(TEST_USER) as api:
        writer = KubeWriter(api, WriterSettings(workers=1))
        try:
            writes, errors = _writes(writer, key, result)
            assert writes == 0 and errors and "403" in errors[0]
            assert _status(mk, ns) == {}
            rules = [client.V1PolicyRule(api_groups=[GROUP], resources=["podgroups/status"], verbs=["patch"])]
            grant(mk.api, ns, user=TEST_USER, name="status-writer", rules=rules)
            # The next sessions' results hold the very same status (the settled run's): written once the
            # apiserver's RBAC lets it through.
            wait_for(lambda: _writes(writer, key, result)[0] == 1, 30, what="the status written")
            assert _status(mk, ns)["phase"] == "Running"
            assert _writes(writer, key, result) == (0, [])  # written: not sent again
            assert _writes(writer, key, _result(key, _running())) == (0, [])  # an equal one neither
            done = PodGroupStatus(
                phase="Completed", queue="default", min_member=2, running=0, succeeded=2, failed=0,
                pending=0, scheduled=2,
            )  # fmt: skip
            assert _writes(writer, key, _result(key, done)) == (1, [])
            assert _status(mk, ns)["phase"] == "Completed"
        finally:
            writer.close()


@pytest.fixture
def fenced(mk: Kube) -> Iterator[tuple[KubeWriter, Fence]]:
    """An admin's writer behind a Lease fence the test closes, opens and hands over."""
    fence = Fence()
    writer = KubeWriter(mk.api, WriterSettings(workers=1), fence=fence)
    yield writer, fence
    writer.close()


def test_a_status_the_lease_fenced_is_written_once_the_fence_opens_from_the_same_status(
    mk: Kube, fenced: tuple[KubeWriter, Fence]
) -> None:
    writer, fence = fenced
    ns, key = _fresh(mk)
    result = _result(key, _running())
    fence.open = False  # the Lease in doubt: nothing is sent
    assert _writes(writer, key, result) == (0, [])
    assert _status(mk, ns) == {}
    fence.open = True
    assert _writes(writer, key, result) == (1, [])
    assert _status(mk, ns)["phase"] == "Running"
    assert _writes(writer, key, result) == (0, [])
    # The PodGroup made anew (the watch's ADDED has the writer forget what it wrote to the old one):
    # the same status is written to the new object.
    mk.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, "podgroups", "pg")
    mk.podgroup(ns, podgroup("pg", 2))
    writer.forget("PodGroup", key)
    assert _writes(writer, key, result) == (1, [])
    assert _status(mk, ns)["phase"] == "Running"


def test_a_replica_that_takes_the_lease_over_again_writes_over_what_another_wrote_meanwhile(
    mk: Kube, fenced: tuple[KubeWriter, Fence]
) -> None:
    writer, fence = fenced
    ns, key = _fresh(mk)
    result = _result(key, _running())
    assert _writes(writer, key, result) == (1, [])
    # Another replica holds the Lease a while and writes its own view of the PodGroup.
    mk.custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, "podgroups", "pg", {"status": {"phase": "Pending", "running": 0}}
    )
    fence.acquired_at = 2.0  # this replica takes the Lease over again
    assert _writes(writer, key, result) == (1, [])
    assert _status(mk, ns)["phase"] == "Running" and _status(mk, ns)["running"] == 2
    assert _writes(writer, key, result) == (0, [])  # and, written, not again
