"""A pod resized in place on a real kube-apiserver 1.37 (the ``resize`` subresource; the test writes the
status as the kubelet would): resized down from 3 cpu to 1 on a node of 4, while its kubelet still gives
it 3 (``allocatedResources``), it keeps its 3, and a pending pod of 2 waits, told why; once the kubelet
reports the 2 given back, that pod is placed. Before, the operator read the spec's 1 and placed the pod
of 2 at once (5 of 4 cpu on the node): the pruner dropped what the kubelet reported, and the model read
the spec alone."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for

pytestmark = pytest.mark.cluster


def _kubelet_reports(k: Kube, ns: str, name: str, *, cpu: str) -> None:
    """Write the pod's status as its kubelet does once it has given the container ``cpu``."""
    status: dict[str, Any] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {
                "name": "main",
                "image": "busybox",
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "state": {"running": {}},
                "allocatedResources": {"cpu": cpu, "memory": "128Mi"},
                "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}},
            }
        ],
    }
    k.core.patch_namespaced_pod_status(name, ns, {"status": status})


def _resize(k: Kube, ns: str, name: str, *, cpu: str) -> None:
    body = {"spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}]}}
    k.core.patch_namespaced_pod_resize(name, ns, body)


def test_a_pod_resized_down_keeps_its_room_until_its_kubelet_gives_it_back(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("resize")
    k.pods(ns, pod("big", cpu="3"))
    op = start_operator()
    wait_for(lambda: k.bound(ns).get(f"{ns}/big") == "n1", 40, what="the pod of 3 bound", operator=op)
    _kubelet_reports(k, ns, "big", cpu="3")
    _resize(k, ns, "big", cpu="1")
    stored = k.core.read_namespaced_pod("big", ns)
    assert stored.spec.containers[0].resources.requests["cpu"] == "1"  # the apiserver took the resize
    assert stored.status.container_statuses[0].allocated_resources["cpu"] == "3"

    k.pods(ns, pod("two", cpu="2"))

    def told() -> str | None:
        if f"{ns}/two" in k.bound(ns):
            pytest.fail("the pod of 2 was bound beside the resized pod: 5 of 4 cpu counted on n1")
        events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "two"]
        return events[0].message if events else None

    message = wait_for(told, 30, what="why the pod of 2 waits, on its events", operator=op)
    assert "cpu" in message, message
    assert f"{ns}/two" not in k.bound(ns)

    _kubelet_reports(k, ns, "big", cpu="1")  # the kubelet has given the 2 back
    wait_for(lambda: k.bound(ns).get(f"{ns}/two") == "n1", 30, what="the pod of 2 bound", operator=op)
