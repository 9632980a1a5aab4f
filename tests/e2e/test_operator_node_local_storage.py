"""Ephemeral storage on a real kube-apiserver 1.37: two pods asking 8Gi each and a node of 10Gi
allocatable: one is bound, the other waits, told why. Before, volsched read no ephemeral-storage and
bound both (the kubelet then refuses the second, OutOfephemeral-storage, and it fails)."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for

pytestmark = pytest.mark.cluster


def _asking(name: str) -> dict[str, object]:
    out = pod(name)
    out["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "8Gi"
    return out


def test_pods_asking_ephemeral_storage_do_not_pass_a_nodes_allocatable(
    k: Kube, start_operator: Start
) -> None:
    n1 = node("n1", cpu="4")
    for part in ("capacity", "allocatable"):
        n1["status"][part]["ephemeral-storage"] = "10Gi"
    k.nodes(n1)
    ns = k.namespace("storage")
    k.pods(ns, _asking("a"), _asking("b"))
    op = start_operator()
    wait_for(lambda: len(k.bound(ns)) >= 1, 40, what="one pod bound", operator=op)

    def told() -> str | None:
        if len(k.bound(ns)) > 1:
            pytest.fail("both pods bound: 16Gi of ephemeral storage on a node of 10Gi")
        [waiting] = [p.split("/", 1)[1] for p, n in k.placements(ns).items() if n is None]
        events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == waiting]
        return events[0].message if events else None

    message = wait_for(told, 30, what="why the second pod waits, on its events", operator=op)
    assert "insufficient ephemeral-storage (needs 8Gi" in message, message
