"""A burst of gangs, its sessions chasing the pods as they arrive (real apiserver): the status writes held
behind binds and behind the session running (``KubePort``) still reach every object. Each PodGroup ends
with its status as placed and its ``Scheduled`` event; a gang that arrives once the operator is idle (its
sessions skipped) and cannot fit is told so, on its status and in an event."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, podgroup, queue, wait_for

pytestmark = pytest.mark.cluster

GANGS, MEMBERS = 12, 4


def _events(k: Kube, ns: str, name: str, reason: str) -> list[Any]:
    return [
        e
        for e in k.core.list_namespaced_event(ns).items
        if e.involved_object.name == name and e.reason == reason
    ]


def _status(k: Kube, ns: str, name: str) -> dict[str, Any]:
    return k.get_podgroup(ns, name).get("status") or {}


def test_every_gang_of_a_burst_gets_its_status_and_event_and_a_late_gang_that_cannot_fit_is_told(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(*(node(f"n{i}", cpu="8") for i in range(4)))
    k.queue(queue("default"))
    ns = k.namespace("burst")
    for g in range(GANGS):
        k.podgroup(ns, podgroup(f"g{g}", MEMBERS))
    op = start_operator()
    # The pods one after another: the operator's sessions see the gangs in pieces as they come.
    k.pods(ns, *(pod(f"g{g}-{i}", cpu="500m", group=f"g{g}") for g in range(GANGS) for i in range(MEMBERS)))
    wait_for(lambda: len(k.bound(ns)) == GANGS * MEMBERS, 60, what="every gang bound", operator=op)

    def placed(name: str) -> bool:
        status = _status(k, ns, name)
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        scheduled = conditions.get("Scheduled", {}).get("status") == "True"
        return status.get("scheduled") == MEMBERS and scheduled and bool(_events(k, ns, name, "Scheduled"))

    for g in range(GANGS):
        wait_for(lambda g=g: placed(f"g{g}"), 60, what=f"g{g}'s status and Scheduled event", operator=op)

    # Idle now: a gang too large for any node arrives; its status and event say why it waits.
    k.podgroup(ns, podgroup("large", 2))
    k.pods(ns, *(pod(f"large-{i}", cpu="9", group="large") for i in range(2)))

    def told() -> bool:
        conditions = {c["type"]: c for c in _status(k, ns, "large").get("conditions") or []}
        waits = conditions.get("Scheduled", {}).get("status") == "False"
        return waits and bool(_events(k, ns, "large", "Unschedulable"))

    wait_for(told, 60, what="the large gang told it cannot fit", operator=op)
    assert not k.bound(ns).keys() & {f"{ns}/large-0", f"{ns}/large-1"}
