"""What a new user reads on the objects (real apiserver): a PodGroup that waited gets a Normal
``Scheduled`` event once its gang is placed (its last event is not the old Unschedulable warning), and
a pod that names a volsched PodGroup under a schedulerName volsched does not answer to is told so, once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.operator_fixtures import (
    GROUP,
    VERSION,
    Kube,
    Start,
    a_later_session,
    node,
    pod,
    podgroup,
    queue,
    wait_for,
)

pytestmark = pytest.mark.cluster


def _events(k: Kube, ns: str, name: str, reason: str) -> list[Any]:
    return [
        e
        for e in k.core.list_namespaced_event(ns).items
        if e.involved_object.name == name and e.reason == reason
    ]


def test_a_gang_placed_after_waiting_says_so_and_a_misnamed_pod_is_told(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="2"))
    k.queue(queue("default"))
    ns = k.namespace("told")
    k.podgroup(ns, podgroup("g", 3))
    k.podgroup(ns, podgroup("other", 1))
    op = start_operator()
    k.pods(ns, *(pod(f"g-{i}", group="g") for i in range(3)))
    k.pods(ns, pod("typo", group="other", scheduler="volshed"))
    wait_for(lambda: _events(k, ns, "g", "Unschedulable"), 30, what="the gang's Unschedulable warning")
    [told] = wait_for(lambda: _events(k, ns, "typo", "SchedulerNameNotVolsched"), 30, what="the pod told")
    assert 'spec.schedulerName is "volshed" (did you mean "volsched"?)' in told.message
    assert (
        "names PodGroup told/other of volsched" in told.message
        or f"names PodGroup {ns}/other" in told.message
    )

    k.nodes(node("n2", cpu="2"))  # room for the gang now
    wait_for(lambda: len([p for p in k.bound(ns) if "/g-" in p]) == 3, 30, what="the gang bound")
    [scheduled] = wait_for(lambda: _events(k, ns, "g", "Scheduled"), 30, what="the gang's Scheduled event")
    assert scheduled.type == "Normal"
    assert scheduled.message.startswith("3 of 3 minimum member(s) placed (3 bound this time, on n1, n2)")
    latest = max(
        (e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "g"),
        key=lambda e: (e.last_timestamp, e.reason == "Scheduled"),
    )
    assert latest.reason == "Scheduled"  # the last word on the PodGroup is no longer the warning

    a_later_session(k, op, ns)  # sessions after the one that told it: none tells it again
    [told] = _events(k, ns, "typo", "SchedulerNameNotVolsched")
    assert (told.count or 1) == 1  # told once, not every session

    # kubectl get podgroups / queues: the SCHEDULED column, and what PENDING counts said in its name
    groups = _table(k, f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/podgroups")
    assert groups["g"]["Scheduled"] == 3 and groups["other"]["Scheduled"] == 0
    queues = _table(k, f"/apis/{GROUP}/{VERSION}/queues")
    assert "Pending PodGroups" in queues["default"] and queues["default"]["Deserved"].startswith("cpu=")


def _table(k: Kube, path: str) -> dict[str, dict[str, Any]]:
    """What kubectl get prints: the apiserver's Table of the resource, row by name, cell by column."""
    host = k.api.configuration.host
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    k.api.update_params_for_auth(headers, None, ["BearerToken"], f"{host}{path}", "GET", None)
    response = k.api.call_api("GET", f"{host}{path}", header_params=headers)
    response.read()
    answer = json.loads(response.data)
    names = [c["name"] for c in answer["columnDefinitions"]]
    return {row["cells"][0]: dict(zip(names, row["cells"], strict=True)) for row in answer["rows"]}
