"""Starvation, utilisation and thrown-away work over a simulated week, before and after the rules of
docs/starvation.md, side by side (``volsched simulate --replay`` on the same engine the operator runs).

The scenario (``scenario()``; ``--write FILE`` writes it as YAML for ``volsched simulate --replay``): 16
nodes of 8 GPUs (128); queue ``big`` (weight 3) gets a gang of eight 8-GPU pods (64 GPUs) every few
hours, each running 2h; queues ``a``, ``b`` and ``c`` (weight 1) a steady stream of 1- to 4-GPU pods of
10 to 90 minutes. Every pod says how long it expects to run (``scheduling.volsched.io/expected-runtime``,
rounded up to a quarter hour, as users estimate); ``simulate.volsched.io/duration`` is how long it does.

Configs, each replayed in full:

* ``before``: the default config as it was (no reservation);
* ``after``: the default config (reservation on);
* ``evicting``: reclaim and preempt on (and reservation; no overcommit, so a gang is admitted at once
  and reclaims what its queue deserves), no minimum run time;
* ``min,unweighed``: the same with ``minruntime`` (10 minutes) but not ``weighWork``;
* ``evicting+min``: the same with ``minruntime`` (10 minutes; its default ``weighWork``: a pod is no victim
  if its work outweighs the wait it saves);
* ``+delay``: and a pending pod evicts nothing before it has waited 10 minutes (``preemptionDelay``).

Printed: the big gangs' wait (max and mean; goal: at most twice the longest small job's runtime), GPU
utilisation against what demand allows (goal >= 90%), GPU-hours thrown away by evictions (goal: down
>= 5x with the minimum run time), and fairness among the small queues over the busy hours (the share
of busy hours in which each holds, on average over the hour, within one of its pods of its deserved
part of what the three hold between them: at each minute water-filled by weight, capped by what each
asks then, and averaged over the hour; see ``fair_hour``). Figures are ratios within one run: on a
loaded machine only the wall time says anything about the machine.

With ``--diagnose``, every busy hour that is not fair is printed: each small queue's mean holding, of
it what pods already running when the hour began held, its mean deserved part and the tolerance (its
largest pod), and per five minutes what each held, deserved and asked, and how many GPUs no pod held
(the deserved parts share what the small queues hold: room they could not use, a fragment too small
for a queue's pods or nodes held for a gang, is nobody's part).

    python bench/starvation.py [--days 7] [--seed 1] [--write FILE] [--configs before,after,...] [--diagnose]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import machine

from volsched.framework.config import DEFAULT_CONFIG_YAML, default_config_with
from volsched.framework.registry import load_config
from volsched.simulate.documents import EPOCH, Document, iso
from volsched.simulate.replay import Replay, ReplayResult

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
NODES, GPUS_PER_NODE = 16, 8
CAPACITY = NODES * GPUS_PER_NODE
SMALL_QUEUES = ("a", "b", "c")
WEIGHTS = {"big": 3, "a": 1, "b": 1, "c": 1}
GANG_PODS, GANG_GPUS, GANG_RUN = 8, 8, 2 * 3600.0
GANG_EVERY = 4 * 3600.0
SMALL_MIN, SMALL_MAX = 10 * 60.0, 90 * 60.0
#: Small pods an hour, per queue: with the gangs, demand is about 95% of the cluster.
SMALL_RATE = 12.0
START = EPOCH + 86_400.0

BEFORE = DEFAULT_CONFIG_YAML.replace("  - name: reservation\n", "")
EVICTING = default_config_with(
    actions="enqueue, allocate, reclaim, preempt, backfill",
    lines={
        # a pod alone (minMember 1) may be reclaimed
        "  - name: gang": "  - name: gang\n    enableReclaimable: false\n    enablePreemptable: false",
        "  - name: overcommit": "",
    },
)
EVICTING_MIN = EVICTING.replace(
    "  - name: reservation\n",
    "  - name: reservation\n  - name: minruntime\n    arguments: {minRuntime: 10m}\n",
)
EVICTING_MIN_DELAY = EVICTING_MIN.replace("{minRuntime: 10m}", "{minRuntime: 10m, preemptionDelay: 10m}")
EVICTING_MIN_UNWEIGHED = EVICTING_MIN.replace("{minRuntime: 10m}", "{minRuntime: 10m, weighWork: false}")
CONFIGS = {
    "before": BEFORE,
    "after": DEFAULT_CONFIG_YAML,
    "evicting": EVICTING,
    "min,unweighed": EVICTING_MIN_UNWEIGHED,
    "evicting+min": EVICTING_MIN,
    "+delay": EVICTING_MIN_DELAY,
}


def _estimate(seconds: float) -> str:
    """What a user would write: the run time rounded up to a quarter hour."""
    return f"{math.ceil(seconds / 900) * 15}m"


def _pod(name: str, *, queue: str, gpus: int, run: float, at: float, group: str | None = None) -> Obj:
    ann = {
        "scheduling.volsched.io/queue-name": queue,
        "scheduling.volsched.io/expected-runtime": _estimate(run),
        "simulate.volsched.io/duration": f"{round(run)}s",
    }
    if group:
        ann["scheduling.k8s.io/group-name"] = group
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": f"team-{queue}",
            "annotations": ann,
            "creationTimestamp": iso(at),
        },
        "spec": {
            "schedulerName": "volsched",
            "containers": [
                {"name": "main", "image": "trainer", "resources": {"requests": {"cpu": "1", GPU: str(gpus)}}}
            ],
        },
    }


def scenario(*, days: float, seed: int) -> list[Obj]:
    """The cluster and a workload of ``days`` (deterministic for a seed)."""
    rng = random.Random(seed)
    objs: list[Obj] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"gpu-{i:02d}", "labels": {"kubernetes.io/hostname": f"gpu-{i:02d}"}},
            "status": {
                "allocatable": {"cpu": "64", "memory": "512Gi", GPU: str(GPUS_PER_NODE), "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for i in range(NODES)
    ]
    objs += [
        {"apiVersion": "scheduling.volsched.io/v1alpha1", "kind": "Queue", "metadata": {"name": q},
         "spec": {"weight": w, "reclaimable": True}}
        for q, w in WEIGHTS.items()
    ]  # fmt: skip
    end = days * 86_400.0
    at, n = 3600.0, 0
    while at < end:
        group = f"gang-{n:03d}"
        objs.append(
            {
                "apiVersion": "scheduling.volsched.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": group, "namespace": "team-big", "creationTimestamp": iso(START + at)},
                "spec": {"minMember": GANG_PODS, "queue": "big"},
            }
        )
        objs += [
            _pod(f"{group}-{i}", queue="big", gpus=GANG_GPUS, run=GANG_RUN, at=START + at, group=group)
            for i in range(GANG_PODS)
        ]
        at += GANG_EVERY * rng.uniform(0.75, 1.25)
        n += 1
    for q in SMALL_QUEUES:
        at, n = 0.0, 0
        while True:
            at += rng.expovariate(SMALL_RATE / 3600.0)
            if at >= end:
                break
            gpus = rng.randint(1, 4)
            run = rng.uniform(SMALL_MIN, SMALL_MAX)
            objs.append(_pod(f"job-{n:05d}", queue=q, gpus=gpus, run=run, at=START + at))
            n += 1
    return objs


@dataclass
class Figures:
    config: str
    wall: float
    sessions: int
    gangs: int
    gangs_started: int
    gang_wait_max: float
    gang_wait_mean: float
    utilisation: float
    demand_allows: float
    lost_gpu_hours: float
    evictions: int
    fair_hours: float
    busy_hours: int
    #: Busy hours, and those of them fair, in which a big gang waited; and the others.
    fair_waiting: int = 0
    busy_waiting: int = 0
    fair_other: int = 0
    busy_other: int = 0
    #: The busy hours that are not fair, each told in full (``--diagnose`` prints them).
    unfair: list[UnfairHour] = field(default_factory=list)


@dataclass
class UnfairHour:
    """One busy hour that is not fair: per small queue, its mean holding, its mean deserved part, the
    largest pod it asked (the tolerance), and of its holding what pods already running when the hour
    began held (``kept``: no placement within the hour made it), and per five minutes what each queue
    held, asked and deserved (and what the big queue held, and the GPUs no pod held)."""

    hour: int
    gang_waiting: bool
    held: dict[str, float]
    deserved: dict[str, float]
    pod: dict[str, float]
    kept: dict[str, float]
    trace: list[tuple[int, float, float, dict[str, tuple[float, float, float]]]]

    def lines(self) -> list[str]:
        day, hour = divmod(self.hour, 24)
        waiting = ", a big gang waiting" if self.gang_waiting else ""
        out = [f"hour {self.hour} (day {day + 1}, {hour:02d}:00-{hour + 1:02d}:00{waiting}):"]
        for q in self.held:
            gap = self.held[q] - self.deserved[q]
            off = (
                f"  OFF by {abs(gap) - self.pod[q]:.1f} past one pod" if abs(gap) > self.pod[q] + 1e-9 else ""
            )
            out.append(
                f"  {q}: held {self.held[q]:5.1f} (from before the hour {self.kept[q]:5.1f})"
                f"  deserved {self.deserved[q]:5.1f}  gap {gap:+5.1f}  pod {self.pod[q]:.0f}{off}"
            )
        for minute, big, idle, cells in self.trace:
            row = "  ".join(f"{q} {h:5.1f}/{d:5.1f}/{a:5.1f}" for q, (h, d, a) in cells.items())
            out.append(f"    :{minute:02d}  big {big:5.1f}  idle {idle:5.1f}  {row}")
        out.append("    (per queue: held / deserved / asked, GPUs, at the minute; idle: GPUs no pod holds)")
        return out


def _queue(key: str) -> str:
    return key.split("/", 1)[0].removeprefix("team-")


def spread(series: list[float], a: float, b: float, amount: float, *, start: float, step: float) -> None:
    """Add ``amount`` held over [a, b) (seconds) to ``series`` (one slot per ``step`` seconds from
    ``start``): each slot gets the mean over it, a slot partly covered its covered part."""
    lo, hi = max(0.0, (a - start) / step), min(float(len(series)), (b - start) / step)
    i = int(lo)
    while i < hi:
        series[i] += amount * (min(hi, i + 1.0) - max(lo, float(i)))
        i += 1


def deserved_over(held: dict[str, list[float]], asked: dict[str, list[float]]) -> dict[str, float]:
    """Each queue's mean deserved part over the minutes given: at each minute, what the queues hold
    between them water-filled by weight, no queue past what it asks then (proportion's water-fill, but of
    what these queues hold, not of the cluster: the scheduler's own deserved share also counts the big
    queue's share and the room no pod holds); the hour's is the mean of its minutes'. Not the
    water-fill of the hour's mean asks: a queue that asked much in one half and little in the other would
    be owed in the whole hour what it asked in its busy half."""
    queues = list(held)
    minutes = len(held[queues[0]])
    out = dict.fromkeys(queues, 0.0)
    for i in range(minutes):
        fill = _water_fill(sum(held[q][i] for q in queues), {q: asked[q][i] for q in queues})
        for q in queues:
            out[q] += fill[q] / minutes
    return out


def fair_hour(held: dict[str, list[float]], asked: dict[str, list[float]], pod: dict[str, float]) -> bool:
    """Whether, over one hour (per-minute means of GPUs held and asked, held plus pending), every queue
    held on average within one pod (``pod``: the largest it asked that hour) of its mean deserved
    part (:func:`deserved_over`)."""
    deserved = deserved_over(held, asked)
    return all(abs(sum(held[q]) / len(held[q]) - deserved[q]) <= pod[q] + 1e-9 for q in held)


def measure(name: str, result: ReplayResult, *, horizon: float, wall: float) -> Figures:
    runs = result.runs
    start = result.start
    gang_start: dict[str, float] = {}
    gang_created: dict[str, float] = {}
    lost = 0.0
    evictions = 0
    for run in runs.values():
        gpus = float(run.requests.get(GPU, 0.0))
        if run.evicted is not None:
            evictions += 1
            lost += gpus * run.lost / 3600.0
        if _queue(run.key) == "big":
            job = run.job
            gang_created[job] = min(gang_created.get(job, math.inf), run.created)
            if run.started is not None and run.evicted is None:
                gang_start[job] = max(gang_start.get(job, -math.inf), run.started)
    waits = [gang_start[j] - gang_created[j] for j in gang_created if j in gang_start]
    unstarted = [horizon + start - gang_created[j] for j in gang_created if j not in gang_start]
    all_waits = waits + unstarted  # a gang never started has waited at least until the end
    # Per minute: GPUs held, and GPUs asked (held plus pending), per queue (means over the minute).
    step = 60.0
    slots = int(horizon // step)
    hours = slots // 60
    held = {q: [0.0] * slots for q in WEIGHTS}
    asked = {q: [0.0] * slots for q in WEIGHTS}
    largest = {q: [0.0] * hours for q in WEIGHTS}  # the largest pod each queue asked, per hour
    # Per minute, what pods held that ran already when the minute's hour began (no placement in that
    # hour made it): an hour's over-holding that is all of it came from before the hour.
    kept = {q: [0.0] * slots for q in WEIGHTS}
    for run in runs.values():
        q = _queue(run.key)
        gpus = float(run.requests.get(GPU, 0.0))
        stop = (
            run.finished
            if run.finished is not None
            else (run.evicted if run.evicted is not None else start + horizon)
        )
        if run.started is not None:
            spread(held[q], run.started, stop, gpus, start=start, step=step)
            first = math.floor((run.started - start) / 3600) + 1  # the first hour that begins after it
            if first * 3600 < stop - start:
                spread(kept[q], start + first * 3600, stop, gpus, start=start, step=step)
        spread(asked[q], run.created, stop, gpus, start=start, step=step)
        for h in range(
            max(0, int((run.created - start) // 3600)), min(hours, math.ceil((stop - start) / 3600))
        ):
            largest[q][h] = max(largest[q][h], gpus)
    used = sum(sum(s) for s in held.values()) / slots
    allows = sum(min(CAPACITY, sum(asked[q][i] for q in WEIGHTS)) for i in range(slots)) / slots
    # Fairness: over each busy hour (asked >= capacity every minute), each small queue's mean hold
    # against its mean deserved part of what the small queues hold (fair_hour).
    busy = fair = 0
    # Hours in which a big gang waited (created, not started): a reservation is held for it, or drains.
    waiting = [False] * hours
    for j, created in gang_created.items():
        until = gang_start.get(j, start + horizon)
        for h in range(max(0, int((created - start) // 3600)), min(hours, math.ceil((until - start) / 3600))):
            waiting[h] = True
    busy_waiting = fair_waiting = 0
    unfair: list[UnfairHour] = []
    for h in range(hours):
        window = slice(h * 60, (h + 1) * 60)
        if any(sum(asked[q][i] for q in WEIGHTS) < CAPACITY - 1e-9 for i in range(h * 60, (h + 1) * 60)):
            continue
        busy += 1
        busy_waiting += waiting[h]
        hour_held = {q: held[q][window] for q in SMALL_QUEUES}
        hour_asked = {q: asked[q][window] for q in SMALL_QUEUES}
        pod = {q: largest[q][h] for q in SMALL_QUEUES}
        if fair_hour(hour_held, hour_asked, pod):
            fair += 1
            fair_waiting += waiting[h]
            continue
        trace = []
        for m in range(0, 60, 5):
            i = h * 60 + m
            fill = _water_fill(sum(held[q][i] for q in SMALL_QUEUES), {q: asked[q][i] for q in SMALL_QUEUES})
            idle = CAPACITY - sum(held[q][i] for q in WEIGHTS)
            trace.append(
                (m, held["big"][i], idle, {q: (held[q][i], fill[q], asked[q][i]) for q in SMALL_QUEUES})
            )
        unfair.append(
            UnfairHour(
                hour=h,
                gang_waiting=waiting[h],
                held={q: sum(hour_held[q]) / 60 for q in SMALL_QUEUES},
                deserved=deserved_over(hour_held, hour_asked),
                pod=pod,
                kept={q: sum(kept[q][window]) / 60 for q in SMALL_QUEUES},
                trace=trace,
            )
        )
    return Figures(
        config=name,
        wall=wall,
        sessions=result.sessions,
        gangs=len(gang_created),
        gangs_started=len(waits),
        gang_wait_max=max(all_waits, default=0.0),
        gang_wait_mean=sum(all_waits) / len(all_waits) if all_waits else 0.0,
        utilisation=used / CAPACITY,
        demand_allows=allows / CAPACITY,
        lost_gpu_hours=lost,
        evictions=evictions,
        fair_hours=fair / busy if busy else 1.0,
        busy_hours=busy,
        fair_waiting=fair_waiting,
        busy_waiting=busy_waiting,
        fair_other=fair - fair_waiting,
        busy_other=busy - busy_waiting,
        unfair=unfair,
    )


def _water_fill(capacity: float, asks: dict[str, float]) -> dict[str, float]:
    """Capacity shared by weight, no queue past what it asks (what proportion calls deserved)."""
    out = dict.fromkeys(asks, 0.0)
    left, open_ = capacity, {q for q, a in asks.items() if a > 0}
    while left > 1e-9 and open_:
        total = sum(WEIGHTS[q] for q in open_)
        share = {q: left * WEIGHTS[q] / total for q in open_}
        full = {q for q in open_ if out[q] + share[q] >= asks[q]}
        if not full:
            for q in open_:
                out[q] += share[q]
            break
        for q in full:
            left -= asks[q] - out[q]
            out[q] = asks[q]
        open_ -= full
    return out


def run(name: str, objs: list[Obj], *, days: float) -> Figures:
    docs = [Document(f"starvation: document {i + 1}", o) for i, o in enumerate(objs)]
    config = load_config(text=CONFIGS[name])
    started = time.perf_counter()
    result = Replay(docs, config, until=days * 86_400.0).run()
    return measure(name, result, horizon=days * 86_400.0, wall=time.perf_counter() - started)


def _part(fair: int, busy: int) -> str:
    return f"{fair / busy:.0%} of {busy}" if busy else "-"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f}h"


ROWS: list[tuple[str, Callable[[Figures], str]]] = [
    ("big gangs started / arrived", lambda f: f"{f.gangs_started}/{f.gangs}"),
    ("big gang wait, max", lambda f: _hours(f.gang_wait_max)),
    ("big gang wait, mean", lambda f: _hours(f.gang_wait_mean)),
    ("GPU utilisation", lambda f: f"{f.utilisation:.1%}"),
    ("  of what demand allows", lambda f: f"{f.utilisation / f.demand_allows:.1%}"),
    ("evictions", lambda f: str(f.evictions)),
    ("GPU-hours thrown away", lambda f: f"{f.lost_gpu_hours:.1f}"),
    ("busy hours fair (small queues)", lambda f: f"{f.fair_hours:.0%} of {f.busy_hours}"),
    ("  while a gang waits", lambda f: _part(f.fair_waiting, f.busy_waiting)),
    ("  while none waits", lambda f: _part(f.fair_other, f.busy_other)),
    ("sessions", lambda f: str(f.sessions)),
    ("wall time", lambda f: f"{f.wall:.0f}s"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--write", help="write the scenario as YAML to this file and stop")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument(
        "--diagnose", action="store_true", help="print every busy hour that is not fair, queue by queue"
    )
    args = parser.parse_args()
    objs = scenario(days=args.days, seed=args.seed)
    if args.write:
        import yaml

        with open(args.write, "w") as out:
            out.write(f"# bench/starvation.py --days {args.days:g} --seed {args.seed} --write {args.write}\n")
            yaml.safe_dump_all(objs, out, default_flow_style=True, width=200, sort_keys=False)
        return
    print(machine.describe())
    pods = sum(1 for o in objs if o["kind"] == "Pod")
    print(
        f"scenario: {NODES} nodes x {GPUS_PER_NODE} GPUs, {args.days:g} day(s), {pods} pods, seed {args.seed}"
    )
    print(f"longest small job: {_hours(SMALL_MAX)} (goal for the gangs' wait: <= {_hours(2 * SMALL_MAX)})")
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    figures = []
    for name in names:
        figures.append(run(name, objs, days=args.days))
        print(f"  {name}: done in {figures[-1].wall:.0f}s", file=sys.stderr)
    width = max(len(label) for label, _ in ROWS)
    print(f"{'':{width}}  " + "  ".join(f"{f.config:>13}" for f in figures))
    for label, cell in ROWS:
        print(f"{label:{width}}  " + "  ".join(f"{cell(f):>13}" for f in figures))
    if args.diagnose:
        for f in figures:
            print(f"\n{f.config}: {len(f.unfair)} busy hour(s) not fair")
            for hour in f.unfair:
                print("\n".join(hour.lines()))
    if args.json:
        print(json.dumps([{k: v for k, v in f.__dict__.items() if k != "unfair"} for f in figures]))


if __name__ == "__main__":
    main()
