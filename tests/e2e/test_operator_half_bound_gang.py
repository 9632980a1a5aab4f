"""What a (re)started operator believes about a gang a crash left half-bound (real apiserver).

Kubernetes has no atomic multi-bind: an operator that dies between the binds of one gang leaves some
members with spec.nodeName while the PodGroup's status still says Pending. The successor must take the
gang as admitted, count its bound members once and complete it before anything else takes the room.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.operator_fixtures import (
    Kube,
    Start,
    failed_scheduling,
    node,
    node_usage,
    pod,
    podgroup,
    wait_for,
)

pytestmark = pytest.mark.cluster


def _bound_to(obj: dict[str, Any], node_name: str) -> dict[str, Any]:
    obj["spec"]["nodeName"] = node_name  # what the dead operator's binding left behind
    return obj


def test_a_restarted_operator_completes_a_gang_a_crash_left_half_bound(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("halfbound")
    k.podgroup(ns, podgroup("gang", 4))
    k.pods(ns, *(_bound_to(pod(f"gang-{i}", group="gang"), "n1") for i in range(2)))
    k.pods(ns, *(pod(f"gang-{i}", group="gang") for i in range(2, 4)))
    k.pods(ns, pod("newcomer", cpu="2"))  # would fit the 2 idle cpu on its own
    assert (k.get_podgroup(ns, "gang").get("status") or {}).get("phase", "Pending") == "Pending"

    op = start_operator()
    wait_for(lambda: len([p for p in k.bound(ns) if "/gang-" in p]) == 4, 30, what="the gang completed")
    wait_for(
        lambda: k.get_podgroup(ns, "gang").get("status", {}).get("phase") == "Running", 30, what="Running"
    )
    # What proves the newcomer waits is a session's word on it, not a count of cycles.
    wait_for(
        lambda: failed_scheduling(k, ns, "newcomer"), 30, what="newcomer's FailedScheduling", operator=op
    )
    assert f"{ns}/newcomer" not in k.bound(ns)  # no room left for it: the gang went first
    for used, alloc in node_usage(k).values():
        assert used <= alloc + 1e-9
