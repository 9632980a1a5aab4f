"""A Volcano Queue's ``status.state`` is Volcano's, not the scheduler's (real apiserver): it is where
Volcano keeps whether the queue is open (its controller sets it from ``vcctl queue operate``; an admin may
set it), and volsched reads it as such. volsched wrote the queue's whole status, its state included, from
what the session had read: a Queue closed after the session read it (or while its figures were held back,
up to a second) was written ``Open`` again, and stayed open. The figures and conditions are written; the
state is left as it is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import VV, V, install_volcano_crds
from tests.fences import Fence
from volsched.cache.volcano import VOLCANO_GROUP
from volsched.framework.decisions import QueueStatus, SessionResult
from volsched.kube.writer import KubeWriter, WriterSettings
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster


@pytest.fixture
def custom(cluster: LocalControlPlane) -> Iterator[client.CustomObjectsApi]:
    with cluster.api_client() as api:
        install_volcano_crds(api)
        yield client.CustomObjectsApi(api)


def _status(cpu: float, *, state: str = "Open", deserved: bool = True) -> QueueStatus:
    return QueueStatus(
        name="q", state=state, weight=1, allocated={"cpu": cpu}, request={"cpu": cpu}, guarantee={},
        capability=None, deserved={"cpu": 4.0} if deserved else None, podgroups={"Running": 1},
    )  # fmt: skip


def _write(writer: KubeWriter, status: QueueStatus) -> tuple[int, list[str]]:
    result = SessionResult(queues={"q": status})
    writes, _events, errors = writer.write_status(result, queues={"q": VOLCANO_GROUP}, podgroups={}, pods={})
    return writes, errors


def _read(custom: client.CustomObjectsApi) -> dict[str, Any]:
    return custom.get_cluster_custom_object(V, VV, "queues", "q").get("status") or {}  # type: ignore[no-any-return]


def test_a_volcano_queues_state_is_left_as_volcano_or_its_admin_set_it(
    cluster: LocalControlPlane, custom: client.CustomObjectsApi
) -> None:
    custom.create_cluster_custom_object(
        V,
        VV,
        "queues",
        {"apiVersion": f"{V}/{VV}", "kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 1}},
    )
    custom.patch_cluster_custom_object_status(V, VV, "queues", "q", {"status": {"state": "Open"}})
    with cluster.api_client() as api:
        writer = KubeWriter(api, WriterSettings(workers=1), fence=Fence())
        try:
            assert _write(writer, _status(1.0)) == (1, [])
            assert _read(custom)["allocated"] == {"cpu": "1"} and _read(custom)["state"] == "Open"
            # Closed by its admin after the session read it open: the next status, from that view, is
            # written without the state.
            custom.patch_cluster_custom_object_status(V, VV, "queues", "q", {"status": {"state": "Closed"}})
            assert _write(writer, _status(2.0)) == (1, [])
            written = _read(custom)
            assert written["state"] == "Closed", written
            assert written["allocated"] == {"cpu": "2"} and written["deserved"] == {"cpu": "4"}
            # A figure no longer rendered (its guarantee gone) goes from the status, as before.
            assert _write(writer, _status(2.0, state="Closing", deserved=False)) == (1, [])
            written = _read(custom)
            assert "deserved" not in written and "deservedSummary" not in written, written
            assert written["state"] == "Closed"
            assert [c["type"] for c in written["conditions"]] == ["Valid"]
        finally:
            writer.close()


def _gpus(cpu: float, gpu: float) -> QueueStatus:
    amounts = {"cpu": cpu, **({"nvidia.com/gpu": gpu} if gpu else {})}  # (zeros are not rendered)
    return QueueStatus(
        name="q", state="Open", weight=1, allocated=amounts, request=amounts, guarantee={},
        capability=None, deserved=dict(amounts), podgroups={"Running": 1},
    )  # fmt: skip


def test_a_resource_a_volcano_queue_no_longer_holds_goes_from_its_status(
    cluster: LocalControlPlane, custom: client.CustomObjectsApi
) -> None:
    """The status is merged (its state left as it is): a merge patch merges maps too, so a resource the
    queue held and holds no more (its GPU pods done: zeros are not rendered) stayed in ``allocated`` and
    ``deserved`` with its old figure, under this writer and after a restart (a new writer)."""
    custom.create_cluster_custom_object(
        V,
        VV,
        "queues",
        {"apiVersion": f"{V}/{VV}", "kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 1}},
    )
    with cluster.api_client() as api:
        for gpus_before in (2.0, 4.0):  # this writer; then a restarted one, which wrote nothing yet
            writer = KubeWriter(api, WriterSettings(workers=1), fence=Fence())
            try:
                if gpus_before == 2.0:  # the first status of a queue that has none
                    assert _write(writer, _gpus(1.0, gpus_before)) == (1, [])
                    custom.patch_cluster_custom_object_status(
                        V, VV, "queues", "q", {"status": {"state": "Closed"}}
                    )
                else:  # (what the replica before the restart wrote)
                    custom.patch_cluster_custom_object_status(
                        V, VV, "queues", "q", {"status": {"allocated": {"nvidia.com/gpu": "4"}}}
                    )
                assert _read(custom)["allocated"]["nvidia.com/gpu"] == str(int(gpus_before))
                assert _write(writer, _gpus(3.0, 0.0)) == (1, [])
                written = _read(custom)
                assert written["allocated"] == {"cpu": "3"}, written
                assert written["deserved"] == {"cpu": "3"}, written
                assert written["state"] == "Closed"
            finally:
                writer.close()
