"""Synthetic workloads for the time mode, from a few parameters, seeded: the same parameters and seed
give the same trace on every machine (numpy's PCG64).

* arrivals over ``hours``: a day-shaped rate, ``peak`` times higher at its busiest (mid-afternoon) than
  at its quietest (the small hours), repeating every 24 hours;
* the team mix: each job goes to a queue drawn by the queues' weights (``{"team-a": 2, "team-b": 1}``);
* job sizes: pods per job drawn from ``sizes`` (``{1: 0.7, 4: 0.2, 16: 0.1}``), a gang (minMember =
  its pods) when more than one; its class is ``small`` (1 pod), ``medium`` (up to 4) or ``large``;
* durations: log-normal around ``median`` seconds (``sigma`` its spread), at least ``min_duration``;
* requests per pod: ``requests`` (``{"cpu": "4", "nvidia.com/gpu": "1"}``).

Pure: no I/O; :func:`generate` returns :class:`~volsched.simulate.trace.TraceJob` records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import field

import numpy as np

from volsched.model import validation
from volsched.model.errors import InputError
from volsched.model.resources import parse_amount
from volsched.records import dataclass
from volsched.simulate.trace import MAX_SUBMIT, TraceJob

DAY = 86_400.0
#: The most jobs, hours, pods per job and log-normal spread a workload is made with (a trace's pods per job
#: are at most 10,000 and its submit times at most 100 years).
MAX_JOBS = 1_000_000
MAX_HOURS = MAX_SUBMIT / 3600.0
MAX_PODS = 10_000
MAX_SIGMA = 10.0


@dataclass(frozen=True)
class WorkloadParams:
    """What a generated trace looks like: jobs, hours, queues, sizes, run times."""

    jobs: int = 1000
    hours: float = 24.0
    queues: Mapping[str, float] = field(default_factory=lambda: {"team-a": 1.0, "team-b": 1.0})
    peak: float = 3.0
    sizes: Mapping[int, float] = field(default_factory=lambda: {1: 0.7, 4: 0.2, 16: 0.1})
    median: float = 600.0
    sigma: float = 1.0
    min_duration: float = 10.0
    requests: Mapping[str, str] = field(default_factory=lambda: {"cpu": "1"})
    namespace: str = "default"
    seed: int = 0

    def check(self) -> None:
        """Every parameter in its range (:class:`InputError` naming the flag): a trace is made of them
        that checks (finite times, requests that are quantities, a namespace that is a DNS label)."""
        if not 0 <= self.jobs <= MAX_JOBS:
            raise InputError(f"--jobs must be from 0 to {MAX_JOBS}, got {self.jobs}")
        if not 0 < self.hours <= MAX_HOURS:  # (False for NaN)
            raise InputError(
                f"--hours must be a number > 0 and at most {MAX_HOURS:g} (100 years), got {self.hours:g}"
            )
        if not self.queues or not all(0 < w < math.inf for w in self.queues.values()):
            raise InputError("queues: give at least one queue, each with a weight > 0")
        if not self.sizes or any(
            not 1 <= s <= MAX_PODS or not 0 < p < math.inf for s, p in self.sizes.items()
        ):
            raise InputError(f"sizes: give pod counts from 1 to {MAX_PODS}, each with a probability > 0")
        if not 1 <= self.peak < math.inf:
            raise InputError(f"--peak must be a finite number >= 1, got {self.peak:g}")
        if not 0 <= self.sigma <= MAX_SIGMA:
            raise InputError(f"--sigma must be a finite number from 0 to {MAX_SIGMA:g}, got {self.sigma:g}")
        if not 0 < self.median < math.inf or not 0 <= self.min_duration < math.inf:
            raise InputError("--median must be > 0 and --min-duration >= 0, both finite")
        for name, amount in self.requests.items():
            parse_amount(amount, where=f"--requests: requests.{name}")
        validation.dns_label(self.namespace, field="--namespace")
        if self.seed < 0:
            raise InputError(f"--seed must be a whole number >= 0, got {self.seed}")


def job_class(pods: int) -> str:
    return "small" if pods == 1 else "medium" if pods <= 4 else "large"


def _arrivals(rng: np.random.Generator, count: int, span: float, peak: float) -> np.ndarray:
    """``count`` sorted arrival times in [0, span) from a day-shaped rate (inverse transform on a
    one-minute grid)."""
    grid = np.arange(0.0, span + 60.0, 60.0)
    # Quietest at 04:00, busiest at 16:00: rate between 1 and peak.
    rate = 1.0 + (peak - 1.0) * 0.5 * (1.0 - np.cos(2.0 * np.pi * (grid - 4 * 3600.0) / DAY))
    cumulative = np.concatenate(([0.0], np.cumsum((rate[1:] + rate[:-1]) * 0.5 * np.diff(grid))))
    cumulative /= cumulative[-1]
    times = np.interp(rng.random(count), cumulative, grid)
    return np.sort(np.minimum(times, np.nextafter(span, 0.0)))


def generate(params: WorkloadParams) -> list[TraceJob]:
    params.check()
    rng = np.random.default_rng(params.seed)
    count = params.jobs
    submits = _arrivals(rng, count, params.hours * 3600.0, params.peak)
    names = sorted(params.queues)
    weights = np.array([params.queues[n] for n in names], dtype=float)
    queue_of = rng.choice(len(names), size=count, p=weights / weights.sum())
    sizes = sorted(params.sizes)
    probs = np.array([params.sizes[s] for s in sizes], dtype=float)
    size_of = rng.choice(len(sizes), size=count, p=probs / probs.sum())
    with np.errstate(over="ignore"):
        durations = np.maximum(
            params.min_duration, params.median * np.exp(params.sigma * rng.standard_normal(count))
        )
    if not np.isfinite(durations).all():
        raise InputError("--median and --sigma make durations too long to write (past any number)")
    jobs = []
    for i in range(count):
        pods = sizes[size_of[i]]
        jobs.append(
            TraceJob(
                name=f"job-{i + 1}",
                submit=round(float(submits[i]), 3),
                queue=names[queue_of[i]],
                requests=dict(params.requests),
                duration=round(float(durations[i]), 3),
                namespace=params.namespace,
                pods=pods,
                min_member=pods,
                job_class=job_class(pods),
                where=f"generated: job {i + 1}",
            )
        )
    return jobs
