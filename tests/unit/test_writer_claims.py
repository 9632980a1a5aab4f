"""The writer and a pod's ResourceClaims (fault injection): the allocation and reservation are written
before the bind, a claim another scheduler allocated meanwhile is never overwritten (the pod is not
bound), and a bind that fails undoes what was written."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import pod
from tests.unit._scripted_server import OK, ScriptedServer
from volsched.cycle import BOUND, CONFLICT, FAILED
from volsched.framework.decisions import Bind
from volsched.kube.writer import KubeWriter, WriterSettings
from volsched.model.devices import ClaimAllocation, DeviceResult

CLAIM = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu"
ALLOC = ClaimAllocation(
    namespace="default",
    claim="gpu",
    uid="claim-uid",
    results=(DeviceResult("gpu", "gpu.example.com", "n1", "gpu-0"),),
    node_name="n1",
)
BIND = Bind(pod="default/p", uid="pod-uid", node="n1", claims=(ALLOC,))


def claim(status: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu", "namespace": "default", "uid": "claim-uid", "resourceVersion": "7"},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}
        },
    }
    if status is not None:
        out["status"] = status
    return out


@pytest.fixture
def writer_settings() -> WriterSettings:
    """One bind worker too: the claim's reads and writes and the bind reach the server in order."""
    return WriterSettings(bind_workers=1, workers=1)


def puts(server: ScriptedServer) -> list[dict[str, Any]]:
    return [r.body for r in server.received if r.method == "PUT" and r.path.endswith(f"{CLAIM}/status")]


def test_the_claim_is_allocated_and_reserved_before_the_bind(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    server.script[CLAIM] = [(200, {}, claim())]
    server.script["/binding"] = [OK]
    outcome = writer.bind(BIND, pod("p"))
    assert outcome.result == BOUND
    order = [(r.method, r.path.rsplit("/", 1)[-1]) for r in server.received]
    assert order == [("GET", "gpu"), ("PUT", "status"), ("POST", "binding")]
    [body] = puts(server)
    assert (
        body["metadata"]["resourceVersion"] == "7"
    )  # written at the version read: a change meanwhile is a 409
    status = body["status"]
    assert status["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}
    ]
    assert status["reservedFor"] == [{"resource": "pods", "name": "p", "uid": "pod-uid"}]


def test_a_claim_allocated_meanwhile_is_not_overwritten_and_the_pod_not_bound(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    other = {
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "x", "pool": "n2", "device": "d"}]}
        }
    }
    server.script[CLAIM] = [(200, {}, claim(other))]
    outcome = writer.bind(BIND, pod("p"))
    assert outcome.result == FAILED and "was allocated meanwhile" in outcome.detail
    assert puts(server) == [] and server.sent("/binding") == []


def test_a_failed_bind_gives_the_devices_back(server: ScriptedServer, writer: KubeWriter) -> None:
    written = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]
            }
        },
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"}],
    }
    server.script[CLAIM] = [(200, {}, claim()), (200, {}, claim(written))]
    server.script["/binding"] = [
        (409, {}, {"kind": "Status", "reason": "Conflict", "message": "already bound"})
    ]
    server.script["/pods/p"] = [
        (200, {}, {**pod("p", node="n2"), "metadata": {"name": "p", "namespace": "default"}})
    ]
    outcome = writer.bind(BIND, pod("p"))
    assert outcome.result == CONFLICT
    first, undo = puts(server)
    assert "allocation" in first["status"]
    assert "allocation" not in undo["status"] and "reservedFor" not in undo["status"]
