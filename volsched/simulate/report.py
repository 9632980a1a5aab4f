"""What a replay measured, as the ``report`` of ``volsched simulate --replay -o json`` (a contract, see
``docs/simulator-time.md``): per queue, per job class and over all jobs, wait and completion times,
bounded slowdown, evictions and work lost, resource use over time and at the end the jobs still
waiting and why. Pure: numbers in, a JSON-ready dict out; no I/O.

Definitions (every time in seconds):

* a job's **wait** is from its submission (its first pod created) to its admission (its first pod
  started); its **completion time** from submission to its last pod's success;
* its **bounded slowdown** is ``max(1, completion / max(run, 10 s))``, ``run`` its pods' duration (the
  10 s floor keeps very short jobs from dominating, as in the scheduling literature);
* **utilisation** is what running pods hold of what the nodes offer, per resource; a queue's **held**
  is what its running pods hold, its **deserved** what the last session gave it (``proportion``);
  means over time are exact (integrated at each pod's start and stop);
* **work lost** is what evicted pods had run before their eviction, in resource-hours.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from typing import Any

import numpy as np

from volsched.framework.decisions import SessionResult
from volsched.records import dataclass
from volsched.simulate.runs import JobRun

#: The bounded slowdown's floor on a job's run (seconds).
SLOWDOWN_FLOOR = 10.0
#: Resources left out of utilisation (a count of pods is no capacity a workload competes for).
NOT_MEASURED = frozenset({"pods"})
#: The most points a series keeps in the output.
SERIES_POINTS = 400
GPU = "nvidia.com/gpu"


@dataclass
class Series:
    """Samples over time: each queue's held and deserved amounts (per resource), at most every ``step``
    seconds; the step doubles (every other sample dropped) whenever more than ``limit`` are kept."""

    step: float
    limit: int = 4000
    t: list[float] = field(default_factory=list)
    held: list[dict[str, dict[str, float]]] = field(default_factory=list)
    deserved: list[Mapping[str, Mapping[str, float]]] = field(default_factory=list)

    def sample(
        self, at: float, held: Mapping[str, Mapping[str, float]], deserved: Mapping[str, Mapping[str, float]]
    ) -> None:
        if self.t and at < self.t[-1] + self.step:
            return
        self.t.append(at)
        self.held.append({q: dict(v) for q, v in held.items() if v})
        self.deserved.append(deserved)  # (a session's maps: replaced by the next, never changed)
        if len(self.t) > self.limit:
            self.t, self.held, self.deserved = self.t[::2], self.held[::2], self.deserved[::2]
            self.step *= 2


def distribution(values: Sequence[float]) -> dict[str, float | int | None]:
    """count, mean, p50, p95, p99 and max (linear interpolation between order statistics)."""
    if not values:
        return {"count": 0, "mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    arr = np.asarray(values, dtype=float)
    p50, p95, p99 = np.percentile(arr, [50, 95, 99])
    return {
        "count": len(values),
        "mean": _round(float(arr.mean())),
        "p50": _round(float(p50)),
        "p95": _round(float(p95)),
        "p99": _round(float(p99)),
        "max": _round(float(arr.max())),
    }


def _round(value: float) -> float:
    return round(value, 3)


def _group(jobs: Sequence[JobRun], *, end: float) -> dict[str, Any]:
    waits = [j.admitted - j.submitted for j in jobs if j.admitted is not None]
    done = [j for j in jobs if j.finished is not None]
    completions = [j.finished - j.submitted for j in done if j.finished is not None]
    slowdowns = []
    for j in done:
        assert j.finished is not None
        run = j.duration if j.duration is not None else j.finished - (j.admitted or j.submitted)
        slowdowns.append(max(1.0, (j.finished - j.submitted) / max(run, SLOWDOWN_FLOOR)))
    evictions: dict[str, int] = {}
    lost: dict[str, float] = {}
    for j in jobs:
        for action, n in j.evictions.items():
            evictions[action] = evictions.get(action, 0) + n
        for r, amount in j.lost.items():
            if r not in NOT_MEASURED:
                lost[r] = lost.get(r, 0.0) + amount
    waiting = [end - j.submitted for j in jobs if j.admitted is None]
    return {
        "jobs": len(jobs),
        "finished": len(done),
        "running": sum(1 for j in jobs if j.admitted is not None and j.finished is None),
        "waiting": len(waiting),
        "wait": distribution(waits),
        "completion": distribution(completions),
        "slowdown": distribution(slowdowns),
        #: Longest wait so far of the jobs never admitted.
        "stillWaitingMax": _round(max(waiting)) if waiting else None,
        "evictions": dict(sorted(evictions.items())),
        "lostHours": {r: _round(v / 3600.0) for r, v in sorted(lost.items())},
        "lostGpuHours": _round(lost.get(GPU, 0.0) / 3600.0),
    }


def _grouped(jobs: Iterable[JobRun], key: str, *, end: float) -> dict[str, Any]:
    groups: dict[str, list[JobRun]] = {}
    for j in jobs:
        groups.setdefault(getattr(j, key), []).append(j)
    return {name: _group(members, end=end) for name, members in sorted(groups.items())}


def _time_mean(series: Series, queue: str, resource: str, *, end: float, span: float) -> float:
    """A queue's deserved amount averaged over the run (each sample holds until the next)."""
    total = 0.0
    for i, at in enumerate(series.t):
        until = series.t[i + 1] if i + 1 < len(series.t) else end
        total += series.deserved[i].get(queue, {}).get(resource, 0.0) * max(0.0, until - at)
    return total / span


def _thin(indices: int) -> list[int]:
    if indices <= SERIES_POINTS:
        return list(range(indices))
    return sorted({round(i * (indices - 1) / (SERIES_POINTS - 1)) for i in range(SERIES_POINTS)})


def build_report(
    *,
    jobs: Mapping[str, JobRun],
    start: float,
    end: float,
    capacity: Mapping[str, float],
    area: Mapping[str, Mapping[str, float]],
    series: Series,
    last: SessionResult,
) -> dict[str, Any]:
    """The ``report`` document (see the module's docstring and ``docs/simulator-time.md``)."""
    records = list(jobs.values())
    span = max(end - start, 1e-9)
    requested = {r for j in records for r, v in j.request.items() if v > 0}
    resources = sorted(r for r in capacity if r not in NOT_MEASURED and (r in requested or r == "cpu"))
    first = min((j.submitted for j in records), default=start)
    last_end = max((j.finished for j in records if j.finished is not None), default=start)
    queues = _grouped(records, "queue", end=end)
    for name, stats in queues.items():
        q = last.queues.get(name)
        held = area.get(name, {})
        stats["meanHeld"] = {r: _round(held.get(r, 0.0) / span) for r in resources}
        stats["meanShare"] = {
            r: _round(100.0 * held.get(r, 0.0) / span / capacity[r]) if capacity.get(r) else None
            for r in resources
        }
        guarantee = dict(q.guarantee) if q is not None else {}
        stats["guaranteeUsage"] = {
            r: _round(100.0 * held.get(r, 0.0) / span / guarantee[r]) for r in resources if guarantee.get(r)
        }
        stats["meanDeserved"] = {
            r: _round(_time_mean(series, name, r, end=end, span=span)) for r in resources
        }
    total = {r: sum(a.get(r, 0.0) for a in area.values()) for r in resources}
    picks = _thin(len(series.t))
    waiting = []
    told = {f"{e.namespace}/{e.name}": e.message for e in last.events if e.type == "Warning"}
    for j in sorted(records, key=lambda j: (j.submitted, j.key)):
        if j.admitted is not None:
            continue
        status = last.podgroups.get(j.key)
        reason = (status.unschedulable if status is not None else None) or told.get(j.key)
        waiting.append(
            {
                "job": j.key,
                "queue": j.queue,
                "class": j.job_class or None,
                "waiting": _round(end - j.submitted),
                "reason": reason or "not looked at by a session since it arrived",
            }
        )
    return {
        "start": _round(0.0),
        "end": _round(end - start),
        "makespan": _round(last_end - first),
        "resources": {
            r: {
                "capacity": _round(capacity.get(r, 0.0)),
                "meanUtilisation": _round(100.0 * total[r] / span / capacity[r]) if capacity.get(r) else None,
            }
            for r in resources
        },
        "all": _group(records, end=end),
        "queues": queues,
        "classes": _grouped([j for j in records if j.job_class], "job_class", end=end),
        "series": {
            "t": [_round(series.t[i] - start) for i in picks],
            "utilisation": {
                r: [
                    _round(100.0 * sum(h.get(r, 0.0) for h in series.held[i].values()) / capacity[r])
                    if capacity.get(r)
                    else None
                    for i in picks
                ]
                for r in resources
            },
            "held": {
                q: {r: [_round(series.held[i].get(q, {}).get(r, 0.0)) for i in picks] for r in resources}
                for q in queues
            },
            "deserved": {
                q: {r: [_round(series.deserved[i].get(q, {}).get(r, 0.0)) for i in picks] for r in resources}
                for q in queues
            },
        },
        "waitingAtEnd": waiting,
    }


def waits_by(jobs: Iterable[JobRun], key: str) -> dict[str, list[float]]:
    """Every admitted job's wait, grouped by ``key`` (``queue`` or ``job_class``): the distributions the
    HTML report plots."""
    out: dict[str, list[float]] = {}
    for j in jobs:
        if j.admitted is not None:
            out.setdefault(getattr(j, key) or "-", []).append(j.admitted - j.submitted)
    return dict(sorted(out.items()))
