"""What a simulation prints with ``-o json``: the pods' nodes and phases, the last session's document
(PodGroups, queues, namespaces, events: :mod:`volsched.sessiondoc`, which the operator's dashboard serves
too) and the evictions, in a stable order; a replay adds every pod's times. Pure: no I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from volsched.sessiondoc import eviction_json, json_number, session_json
from volsched.simulate.documents import iso

if TYPE_CHECKING:
    from volsched.simulate.loop import SimulationResult
    from volsched.simulate.replay import ReplayResult


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
            # detail: the Eviction API's refusal, in its words
            {**eviction_json(o), "detail": o.detail or None}
            for o in result.eviction_outcomes
        ],
    }


def replay_json(result: ReplayResult) -> dict[str, Any]:
    """The ``-o json`` of ``volsched simulate --replay``: the instant mode's document for the cache at the
    end, and ``replay``: the clock, the sessions, and every pod that ever existed with its times in
    seconds from the replay's start (``started``/``finished``/``evicted`` null when it did not)."""

    def rel(at: float | None) -> float | int | None:
        return None if at is None else json_number(round(at - result.start, 6))

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
                    "lost": json_number(round(run.lost, 6)),
                    "replaces": run.replaces,
                }
                for key, run in sorted(result.runs.items())
            },
        },
    }
