"""A pod marked as a disruption target by a scheduler that then stopped before evicting it (a crash between
the condition and the eviction) is told it was not evicted by the next holder of the Lease, at once, not
two minutes later by the disruption controller (which this control plane does not even run) (note13
Found 8). Only pods of ours still marked by a scheduler and not being deleted are told (real apiserver)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for
from volsched.kube.writer import STALE_TARGET

pytestmark = pytest.mark.cluster

MARKED = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "preempt: evicted on n1 for a pod of higher priority",
}
TOLD = "pod(s) marked for an eviction that did not happen told they were not evicted"


def _running(name: str, *, scheduler: str = "volsched", finalizer: bool = False) -> dict[str, Any]:
    obj = pod(name, scheduler=scheduler)
    obj["spec"]["nodeName"] = "n1"  # bound before the crash
    if finalizer:
        obj["metadata"]["finalizers"] = ["example.com/hold"]
    return obj


def _target(k: Kube, ns: str, name: str) -> Any:
    conditions = k.core.read_namespaced_pod(name, ns).status.conditions or []
    return next((c for c in conditions if c.type == "DisruptionTarget"), None)


def test_the_next_leader_tells_a_pod_marked_before_a_crash_that_it_was_not_evicted(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="8"))
    ns = k.namespace("stale-target")
    # What a leader that crashed between a victim's condition and its eviction leaves; beside it a pod
    # another scheduler marked, and one of ours whose eviction went through (terminating, held by a
    # finalizer).
    k.pods(ns, _running("victim"), _running("theirs", scheduler="default-scheduler"))
    k.pods(ns, _running("leaving", finalizer=True))
    for name in ("victim", "theirs", "leaving"):
        k.core.patch_namespaced_pod_status(name, ns, {"status": {"phase": "Running", "conditions": [MARKED]}})
    k.core.delete_namespaced_pod("leaving", ns)
    try:
        op = start_operator()
        wait_for(lambda: TOLD in op.log(), 60, what="the marked pods looked at", operator=op)
        assert f"1 {TOLD}" in op.log()
        target = _target(k, ns, "victim")
        assert (target.status, target.reason) == ("False", "NotEvicted")
        assert target.message == f"not evicted ({STALE_TARGET})"
        assert k.core.read_namespaced_pod("victim", ns).metadata.deletion_timestamp is None
        for name in ("theirs", "leaving"):  # another scheduler's; one being deleted
            target = _target(k, ns, name)
            assert (target.status, target.reason) == ("True", "PreemptionByScheduler"), name
    finally:
        k.core.patch_namespaced_pod("leaving", ns, {"metadata": {"finalizers": None}})
