"""The pre-bind of claims of a WaitForFirstConsumer class (fault injection): a volume's claimRef is written
before the pod is bound, and the pod is bound only once the claim is; a volume another claim took meanwhile
is never taken from it, and then no pod of the commit is bound and each is told why; a claim whose
provisioner gave up has its selected node taken off again, with no pod bound."""

from __future__ import annotations

from typing import Any

from tests.builders import pod
from tests.unit._scripted_server import OK, ScriptedServer
from volsched.cycle import BOUND, FAILED
from volsched.framework.decisions import Bind
from volsched.kube.volumebind import VolumeBinder
from volsched.kube.writer import KubeWriter
from volsched.model.volumes import BIND_COMPLETED, SELECTED_NODE, VolumeBinding

PVC = "/api/v1/namespaces/default/persistentvolumeclaims/data"
PV = "/api/v1/persistentvolumes/pv-1"


def claim(*, volume: str = "", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "data",
            "namespace": "default",
            "uid": "claim-uid",
            "resourceVersion": "3",
            "annotations": annotations or {},
        },
        "spec": {"storageClassName": "local", "volumeName": volume},
    }


def volume(claim_ref: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": "local", "capacity": {"storage": "1Gi"}}
    if claim_ref:
        spec["claimRef"] = claim_ref
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"}, "spec": spec}


def binder(writer: KubeWriter) -> VolumeBinder:
    return VolumeBinder(writer, timeout=5, sleep=lambda _s: None)


def test_the_volume_is_prebound_and_the_pod_bound_once_the_claim_is(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    bind = Bind(
        "default/p", "pod-uid", "n1", volumes=(VolumeBinding("default", "data", "claim-uid", "pv-1"),)
    )
    server.script[PVC] = [
        (200, {}, claim()),  # read before the pre-bind
        (200, {}, claim()),  # not bound yet
        (200, {}, claim(volume="pv-1", annotations={BIND_COMPLETED: "yes"})),
    ]
    server.script[PV] = [(200, {}, volume()), (200, {}, volume({"namespace": "default", "name": "data"}))]
    server.script["/binding"] = [OK]
    [outcome] = binder(writer).bind_all([bind], {"default/p": pod("p")})
    assert outcome.result == BOUND
    [put] = [r for r in server.received if r.method == "PUT"]
    assert put.path == PV
    assert put.body["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": "default",
        "name": "data",
        "uid": "claim-uid",
        "resourceVersion": "3",
    }
    order = [r.method for r in server.received if r.path.endswith(("pv-1", "binding"))]
    assert order[:2] == ["GET", "PUT"] and order[-1] == "POST"


def test_a_volume_taken_meanwhile_is_never_taken_and_no_pod_of_the_gang_is_bound(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    binds = [
        Bind("default/a", "a-uid", "n1", volumes=(VolumeBinding("default", "data", "claim-uid", "pv-1"),)),
        Bind("default/b", "b-uid", "n1"),
    ]
    server.script[PVC] = [(200, {}, claim())]
    server.script[PV] = [(200, {}, volume({"namespace": "default", "name": "other"}))]
    outcomes = binder(writer).bind_all(binds, {"default/a": pod("a"), "default/b": pod("b")})
    why = "binding volumes: persistentvolume pv-1 was bound to claim default/other meanwhile; not bound"
    assert [(o.bind.pod, o.result, o.detail) for o in outcomes] == [
        ("default/a", FAILED, why),
        ("default/b", FAILED, why),
    ]
    assert not [r for r in server.received if r.method == "PUT" or r.path.endswith("/binding")]
    told = [r for r in server.received if r.method == "PATCH" and r.path.endswith("/status")]
    assert sorted(r.path for r in told) == [
        "/api/v1/namespaces/default/pods/a/status",
        "/api/v1/namespaces/default/pods/b/status",
    ]


def test_a_provisioning_given_up_takes_the_selected_node_off_and_binds_nothing(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    bind = Bind("default/p", "pod-uid", "n1", volumes=(VolumeBinding("default", "data", "claim-uid"),))
    server.script[PVC] = [
        (200, {}, claim()),  # read before the pre-bind
        (200, {}, claim()),  # the provisioner took the selected node off
        (200, {}, claim()),  # read again to undo: nothing of ours left to take off
    ]
    [outcome] = binder(writer).bind_all([bind], {"default/p": pod("p")})
    assert outcome.result == FAILED
    assert "provisioning failed for persistentvolumeclaim default/data" in outcome.detail
    puts = [r for r in server.received if r.method == "PUT"]
    assert [p.body["metadata"]["annotations"] for p in puts] == [{SELECTED_NODE: "n1"}]
    assert not server.sent("/binding")


def test_a_claim_not_bound_in_time_has_its_selected_node_taken_off(
    server: ScriptedServer, writer: KubeWriter
) -> None:
    bind = Bind("default/p", "pod-uid", "n1", volumes=(VolumeBinding("default", "data", "claim-uid"),))
    server.script[PVC] = [(200, {}, claim()), (200, {}, claim(annotations={SELECTED_NODE: "n1"}))]
    clock = iter(range(0, 1000, 1))
    b = VolumeBinder(writer, timeout=3, sleep=lambda _s: None, clock=lambda: float(next(clock)))
    [outcome] = b.bind_all([bind], {"default/p": pod("p")})
    assert outcome.result == FAILED and "not bound within 3 s" in outcome.detail
    puts = [r for r in server.received if r.method == "PUT"]
    assert [p.body["metadata"]["annotations"] for p in puts] == [{SELECTED_NODE: "n1"}, {}]
    assert not server.sent("/binding")
