"""A pod resized in place (``kubectl patch --subresource resize``) holds on its node what kube-scheduler
1.37 counts for it: per resource, the largest of what its spec now asks, what the kubelet allocated its
containers (``status.containerStatuses[].allocatedResources``) and what they run with
(``...resources.requests``); without the spec once the kubelet marked the resize ``Infeasible``. Before,
volsched read the spec alone: a pod resized down from 3 cpu to 1, the kubelet still giving it 3, left
room for a pod of 2 on a node of 4, and both were counted on it (5 of 4 cpu)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import Obj, node, pod, run
from volsched.model.decode import build_task, pod_request, resized_request


def _resized(
    name: str,
    *,
    spec: str,
    allocated: str | None,
    actual: str | None = None,
    pending: str | None = None,
    node_name: str | None = "n1",
) -> Obj:
    """A running pod whose container asks ``spec`` cpu, the kubelet having allocated ``allocated`` and
    actuated ``actual``; ``pending``: the reason of its PodResizePending condition."""
    out = pod(name, cpu=spec, node=node_name, phase="Running" if node_name else None)
    cs: dict[str, Any] = {"name": "main", "restartCount": 0}
    if allocated is not None:
        cs["allocatedResources"] = {"cpu": allocated}
    if actual is not None:
        cs["resources"] = {"requests": {"cpu": actual}}
    out.setdefault("status", {})["containerStatuses"] = [cs]
    if pending:
        out["status"]["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": pending}]
    return out


def _cpu(obj: Obj) -> float:
    return build_task(obj, priority_classes={}).request_map["cpu"]


@pytest.mark.parametrize(
    ("kw", "cpu"),
    [
        # Resized down, the kubelet has not given anything back yet: it still holds 3.
        ({"spec": "1", "allocated": "3", "actual": "3"}, 3.0),
        # Allocated down, the container still running with 3 (in progress): 3.
        ({"spec": "1", "allocated": "1", "actual": "3"}, 3.0),
        # Resized up, deferred (the node has no room yet): the spec's 3 counts, as kube-scheduler counts it.
        ({"spec": "3", "allocated": "1", "actual": "1", "pending": "Deferred"}, 3.0),
        # Resized up, infeasible (the node can never give it): what it runs with, not the spec.
        ({"spec": "3", "allocated": "1", "actual": "1", "pending": "Infeasible"}, 1.0),
        # Done: all three agree.
        ({"spec": "1", "allocated": "1", "actual": "1"}, 1.0),
        # Only the allocation known (an older kubelet): the larger of it and the spec.
        ({"spec": "500m", "allocated": "2"}, 2.0),
    ],
    ids=["down-not-actuated", "down-in-progress", "up-deferred", "up-infeasible", "done", "allocated-only"],
)
def test_a_resized_pod_counts_the_largest_of_spec_allocated_and_actuated(
    kw: dict[str, Any], cpu: float
) -> None:
    assert _cpu(_resized("p", **kw)) == pytest.approx(cpu)


def test_the_containers_aggregate_apart_then_the_largest_is_taken() -> None:
    """Each of spec, allocated and actuated is the containers' aggregate (init containers and sidecars as
    for the spec), then the largest per resource: not the largest per container summed."""
    obj = pod("p", cpu="1", node="n1", phase="Running")
    obj["spec"]["containers"].append({"name": "b", "image": "x", "resources": {"requests": {"cpu": "1"}}})
    obj["spec"]["initContainers"] = [
        {"name": "side", "image": "x", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}
    ]
    obj["status"]["containerStatuses"] = [
        {"name": "main", "allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "500m"}}},
        {"name": "b", "allocatedResources": {"cpu": "500m"}, "resources": {"requests": {"cpu": "2"}}},
    ]
    obj["status"]["initContainerStatuses"] = [{"name": "side", "allocatedResources": {"cpu": "1"}}]
    # spec 1+1+1 = 3; allocated 2+0.5+1 = 3.5; actuated 0.5+2+1 = 3.5: 3.5 (per container, 2+2+1 = 5).
    assert _cpu(obj) == pytest.approx(3.5)


def test_a_status_that_agrees_with_the_spec_keeps_the_specs_shared_request() -> None:
    obj = _resized("p", spec="1", allocated="1", actual="1")
    request = pod_request(obj, where="Pod default/p")
    assert resized_request(obj, request, where="Pod default/p") is request


def test_a_malformed_status_entry_is_skipped_not_refused() -> None:
    """The kubelet writes the status, not the user: what cannot be read there counts as unsaid."""
    obj = _resized("p", spec="1", allocated="3")
    obj["status"]["containerStatuses"][0]["allocatedResources"] = {"cpu": "lots"}
    obj["status"]["containerStatuses"].append("junk")
    assert _cpu(obj) == pytest.approx(1.0)


def test_a_pod_resized_down_keeps_its_room_until_the_kubelet_gives_it_back() -> None:
    """On a node of 4 cpu, a pod resized from 3 cpu down to 1 whose kubelet still gives it 3: a pending
    pod of 2 waits (before, it was placed: 5 of 4 cpu counted on the node). Once the kubelet has given
    the 2 back, it is placed."""
    waiting = pod("w", cpu="2")
    data = run([node("n1", cpu="4"), _resized("r", spec="1", allocated="3", actual="3"), waiting])
    assert data["pods"]["default/w"]["node"] is None
    assert data["queues"]["default"]["allocated"]["cpu"] == 3  # what the resized pod holds

    data = run([node("n1", cpu="4"), _resized("r", spec="1", allocated="1", actual="1"), pod("w", cpu="2")])
    assert data["pods"]["default/w"]["node"] == "n1"
