"""A pod volsched refuses as invalid that its node runs (here created with ``spec.nodeName``, as another
scheduler binds it, carrying a malformed ``scheduling.volsched.io/expected-runtime``: the apiserver takes
any annotation value) still holds its room on the node, on a real kube-apiserver 1.37: a pod of 2 cpu
waits beside its 3 on a node of 4, told why, and is placed once it is gone. Before, the refused pod held
nothing and the pod of 2 was bound at once (5 of 4 cpu on the node)."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for

pytestmark = pytest.mark.cluster


def test_a_refused_pod_its_node_runs_still_holds_its_room(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("refused-bound")
    other = pod("other", cpu="3", scheduler="default-scheduler")
    other["metadata"]["annotations"] = {"scheduling.volsched.io/expected-runtime": "a while"}
    other["spec"]["nodeName"] = "n1"
    k.pods(ns, other)
    op = start_operator()
    k.pods(ns, pod("two", cpu="2"))

    def told() -> str | None:
        if f"{ns}/two" in k.bound(ns):
            pytest.fail("the pod of 2 was bound beside the refused pod: 5 of 4 cpu counted on n1")
        events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "two"]
        return events[0].message if events else None

    message = wait_for(told, 30, what="why the pod of 2 waits, on its events", operator=op)
    assert "cpu" in message, message
    k.core.delete_namespaced_pod("other", ns, grace_period_seconds=0)
    wait_for(lambda: k.bound(ns).get(f"{ns}/two") == "n1", 30, what="the pod of 2 bound", operator=op)
