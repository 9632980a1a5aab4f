"""What a simulation prints with ``-o json`` (and the operator's dashboard serves): the pods' nodes and
phases, PodGroups, queues, namespaces, events and evictions, in a stable order; a replay adds every
pod's times. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from volsched.framework.decisions import Event, SessionResult
from volsched.framework.messages import render_eviction
from volsched.simulate.documents import LATEST, iso

if TYPE_CHECKING:
    from volsched.simulate.loop import SimulationResult
    from volsched.simulate.replay import ReplayResult


def _num(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 6)


def _resources(amounts: Mapping[str, float] | None) -> dict[str, float | int] | None:
    if amounts is None:
        return None
    return {k: _num(v) for k, v in sorted(amounts.items())}


def to_json(result: SimulationResult) -> dict[str, Any]:
    """The ``-o json`` contract (see docs/simulator.md)."""
    state = result.state
    pods = {}
    for key in sorted(state.raw_pods):
        raw = state.raw_pods[key]
        pods[key] = {
            "node": (raw.get("spec") or {}).get("nodeName") or None,
            "phase": (raw.get("status") or {}).get("phase") or "Pending",
        }
    return {
        "sessions": result.sessions,
        "pods": pods,
        **session_json(result.last),
        "evictions": [
            {
                "pod": o.eviction.pod,
                "node": o.eviction.node,
                "action": o.eviction.action,
                "reason": render_eviction(o.eviction),
                # evicted; or blocked (a PodDisruptionBudget: the Eviction API's 429), failed (its 500)
                "result": o.result,
                "detail": o.detail or None,  # the Eviction API's refusal, in its words
            }
            for o in result.eviction_outcomes
        ],
    }


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
                {"expectedStart": iso(s.expected_start)}
                if s.expected_start is not None and s.expected_start <= LATEST
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
            "deserved": _resources(q.deserved),
            "allocated": _resources(q.allocated),
            "request": _resources(q.request),
            "guarantee": _resources(q.guarantee),
            "capability": _resources(q.capability),
            "realCapability": _resources(q.real_capability),
            "share": q.share,
        }
        for name, q in sorted(last.queues.items())
    }
    namespaces = {
        ns: {"weight": v["weight"], "allocated": _resources(v["allocated"])}
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


def replay_json(result: ReplayResult) -> dict[str, Any]:
    """The ``-o json`` of ``volsched simulate --replay``: the instant mode's document for the cache at the
    end, and ``replay``: the clock, the sessions, and every pod that ever existed with its times in
    seconds from the replay's start (``started``/``finished``/``evicted`` null when it did not)."""

    def rel(at: float | None) -> float | int | None:
        return None if at is None else _num(round(at - result.start, 6))

    return {
        **to_json(result.simulation),
        "report": result.report(),
        "replay": {
            "start": iso(result.start),
            "end": rel(result.end),
            "sessions": result.sessions,
            "skippedSessions": result.skipped,
            "jobsFinished": result.jobs_finished,
            "pods": {
                key: {
                    "job": run.job,
                    "node": run.node,
                    "created": rel(run.created),
                    "started": rel(run.started),
                    "finished": rel(run.finished),
                    "evicted": rel(run.evicted),
                    "lost": _num(round(run.lost, 6)),
                    "replaces": run.replaces,
                }
                for key, run in sorted(result.runs.items())
            },
        },
    }
