"""One session's decisions as a JSON document: its PodGroups, queues, namespaces and events, in a stable
order, and an eviction's entry. ``volsched simulate -o json`` prints it (with the pods, the evictions and a replay's times:
:mod:`volsched.simulate.output`) and the operator's dashboard serves it (:mod:`volsched.ui`): the page
reads one document from both. Pure: no I/O, no driver; what the page shows is in ``docs/operating.md`` (the
dashboard).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from volsched.framework.decisions import Event, SessionResult
from volsched.framework.messages import render_eviction
from volsched.model.scalars import LATEST_RFC3339, rfc3339

if TYPE_CHECKING:
    from volsched.cycle import EvictOutcome


def json_number(value: float) -> float | int:
    """A figure as the document writes it: whole numbers as integers, others to six places."""
    return int(value) if float(value).is_integer() else round(value, 6)


def resources_json(amounts: Mapping[str, float] | None) -> dict[str, float | int] | None:
    """Amounts by resource name, in name order."""
    if amounts is None:
        return None
    return {k: json_number(v) for k, v in sorted(amounts.items())}


def session_json(last: SessionResult) -> dict[str, Any]:
    """PodGroups, queues, namespaces and events of one session, as in ``-o json`` (the operator's
    dashboard serves the same)."""
    podgroups = {
        key: {
            "phase": s.phase,
            "queue": s.queue,
            "minMember": s.min_member,
            "scheduled": s.scheduled,
            "reason": s.unschedulable,
            "owner": s.owner or None,
            **({"queuePosition": s.queue_position} if s.queue_position is not None else {}),
            **(
                {"expectedStart": rfc3339(s.expected_start)}
                if s.expected_start is not None and s.expected_start <= LATEST_RFC3339
                else {}
            ),
            **({"reservation": s.reservation} if s.reservation is not None else {}),
            **({"noReservation": s.no_reservation} if s.no_reservation is not None else {}),
        }
        for key, s in sorted(last.podgroups.items())
    }
    queues = {
        name: {
            "parent": q.parent,
            "weight": q.weight,
            "state": q.state,
            "deserved": resources_json(q.deserved),
            "allocated": resources_json(q.allocated),
            "request": resources_json(q.request),
            "guarantee": resources_json(q.guarantee),
            "capability": resources_json(q.capability),
            "realCapability": resources_json(q.real_capability),
            "share": q.share,
        }
        for name, q in sorted(last.queues.items())
    }
    namespaces = {
        ns: {"weight": v["weight"], "allocated": resources_json(v["allocated"])}
        for ns, v in sorted(last.namespaces.items())
    }
    return {
        "podgroups": podgroups,
        "queues": queues,
        "namespaces": namespaces,
        "events": [_event(e) for e in last.events],
    }


def _event(e: Event) -> dict[str, str]:
    out = {"object": e.object, "reason": e.reason, "message": e.message}
    if e.podgroup:  # a pod of a PodGroup: which one (the dashboard groups why pods wait by it)
        out["podgroup"] = e.podgroup
    return out


def eviction_json(outcome: EvictOutcome) -> dict[str, Any]:
    """One eviction a session decided and what came of it: the pod, its node, the action, the reason in
    words, and the result (evicted; blocked: a PodDisruptionBudget, the Eviction API's 429; failed)."""
    e = outcome.eviction
    return {
        "pod": e.pod,
        "node": e.node,
        "action": e.action,
        "reason": render_eviction(e),
        "result": outcome.result,
    }
