"""Benchmark: the simulator's time mode (``volsched simulate --replay``), four measurements.

* ``kueue``: Kueue's scheduler performance baseline (``--scenario kueue-baseline``: 5 cohorts x 6 queues,
  15,000 workloads) replayed, its wall and CPU time, sessions, the cyclic collector's share of the wall
  time (its collections by generation), and what Kueue's range spec checks: the
  mean time to admission per workload class, the least ClusterQueue usage (a leaf queue's held cpu over
  its nominal quota, its guarantee, averaged over the run) and the makespan, next to Kueue's thresholds.
  ``--cohorts N`` keeps N of the 5 cohorts (the same shape, N/5 of the work).
* ``reuse``: the baseline (``--reuse-cohorts``, one by default) replayed as is and with every job of a backlog asked on its
  own (no plugin answers by shape), ``--rounds`` times alternated: the CPU of both and the ratio.
* ``memory``: traces of the same steady arrival rate over ``hours``, twice and four times as many hours
  (the same jobs live at any moment, two and four times as many finished), each replayed in a fresh
  process: the cache at its fullest and the peak RSS, and the RSS per job that finished. The cache holds
  live objects only (finished jobs' pods and PodGroups are deleted), so its peak is about the same for
  all; the RSS grows only by the per-job record the report keeps (its times, queue, class, one request
  map shared by every job that asks the same).
* ``large``: ``--jobs`` synthetic jobs (default 100,000) on ``--nodes`` nodes (default 1,000) over a day.

Prints the machine and its load: on this shared 2-core machine absolute figures mean little, compare
figures of one run.

    python bench/bench_replay.py                       # kueue, reuse (one cohort), memory, large
    python bench/bench_replay.py kueue --cohorts 1     # a fifth of the baseline
    python bench/bench_replay.py memory large --jobs 20000 --nodes 200
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import sys
import time
from typing import Any

import numpy
from machine import describe, in_fresh_process, load_average

from volsched.plugins.priority import Priority
from volsched.simulate import Document, Replay
from volsched.simulate.generate import WorkloadParams, generate
from volsched.simulate.scenarios import (
    KUEUE_MAX_MEAN_ADMISSION,
    KUEUE_MAX_WALL,
    KUEUE_MIN_USAGE,
    kueue_baseline,
)


def _timed(replay: Replay) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = replay.run()
    return result, time.perf_counter() - wall, time.process_time() - cpu


class _Collections:
    """The cyclic collector's collections while it is on (``gc.callbacks``): how many of each
    generation, and the wall time they took."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._start = 0.0

    def __enter__(self) -> _Collections:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            generation = info["generation"]
            self.count[generation] += 1
            self.seconds[generation] += time.perf_counter() - self._start


def kueue(cohorts: int, period: float) -> None:
    scenario = kueue_baseline(cohorts=cohorts)
    replay = Replay(
        scenario.documents, scenario.config, trace=scenario.trace, period=period, record_pods=False
    )
    with _Collections() as collections:
        result, wall, cpu = _timed(replay)
    report = result.report()
    print(
        f"kueue-baseline ({cohorts} of 5 cohorts, {len(scenario.trace)} workloads, period {period:g} s): "
        f"replayed in {wall:.1f} s wall, {cpu:.1f} s CPU; {result.sessions} sessions, {result.skipped} skipped; "
        f"peak RSS {_rss_mib():.0f} MiB; load {load_average()}"
    )
    print(
        f"  cyclic collector: {sum(collections.seconds):.1f} s wall "
        f"({100 * sum(collections.seconds) / wall:.1f}% of the replay's), collections by generation "
        + ", ".join(f"{n} ({t:.1f} s)" for n, t in zip(collections.count, collections.seconds, strict=True))
    )
    print(f"  {'class':8} {'mean time to admission':>24} {'Kueue max':>10}")
    for cls, limit in KUEUE_MAX_MEAN_ADMISSION.items():
        mean = report["classes"].get(cls, {}).get("wait", {}).get("mean")
        shown = "-" if mean is None else f"{mean:.1f} s"
        verdict = "" if mean is None else ("  within" if mean <= limit else "  over")
        print(f"  {cls:8} {shown:>24} {limit:>9g}s{verdict}")
    usage = [q["guaranteeUsage"].get("cpu") for q in report["queues"].values() if q["guaranteeUsage"]]
    least = min((u for u in usage if u is not None), default=None)
    print(
        f"  least ClusterQueue usage (held / nominal quota, mean over the run): "
        f"{'-' if least is None else f'{least:.1f}%'} (Kueue: at least {KUEUE_MIN_USAGE:g}%)"
    )
    print(
        f"  makespan {report['makespan']:.1f} s of cluster time (Kueue's wall time: at most {KUEUE_MAX_WALL:g} s)"
    )
    print(f"  cluster cpu utilisation {report['resources']['cpu']['meanUtilisation']:.1f}%")


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reuse(cohorts: int, period: float, rounds: int) -> None:
    """The baseline's ``cohorts`` replayed as is and with every job asked on its own (a plugin of the
    config no longer declares ``answers_by_shape``: enqueue, reclaim and preempt then ask each job of a
    backlog of jobs alike), alternated ``rounds`` times: the CPU of both, and their ratio."""
    scenario = kueue_baseline(cohorts=cohorts)
    cpus: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for by_shape in (True, False):
            Priority.answers_by_shape = by_shape
            replay = Replay(
                scenario.documents, scenario.config, trace=scenario.trace, period=period, record_pods=False
            )
            _, _, cpu = _timed(replay)
            cpus[by_shape].append(cpu)
    Priority.answers_by_shape = True
    mine, each = statistics.median(cpus[True]), statistics.median(cpus[False])
    print(
        f"reuse ({cohorts} of 5 cohorts, median of {rounds}): jobs alike asked once a shape {mine:.1f} s CPU, "
        f"each job asked {each:.1f} s CPU: x{each / mine:.2f}; load {load_average()}"
    )


def _cluster(nodes: int, queues: list[str]) -> list[Document]:
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i}"},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}},
        }
        for i in range(nodes)
    ]
    objs += [
        {
            "apiVersion": "scheduling.volsched.io/v1beta1",
            "kind": "Queue",
            "metadata": {"name": q},
            "spec": {"weight": 1},
        }
        for q in queues
    ]
    return [Document(f"bench: object {i}", o) for i, o in enumerate(objs)]


QUEUES = {"team-a": 2.0, "team-b": 1.0, "team-c": 1.0}


def one_trace(jobs: int, nodes: int, hours: float, peak: float) -> dict[str, Any]:
    """Replay ``jobs`` synthetic jobs over ``hours`` on ``nodes`` nodes (``peak``: the day's shape, 1 for
    a steady rate); what it took."""
    params = WorkloadParams(
        jobs=jobs, hours=hours, queues=QUEUES, peak=peak, sizes={1: 0.7, 4: 0.2, 8: 0.1}, median=900, seed=1
    )
    trace = generate(params)
    replay = Replay(_cluster(nodes, list(QUEUES)), None, trace=trace, max_idle=60.0, record_pods=False)
    peak = 0
    port = replay.port
    state = replay.sim.state
    put = port.put

    def counting_put(obj: Any) -> None:
        nonlocal peak
        put(obj)
        peak = max(peak, len(state.raw_pods))

    port.put = counting_put  # type: ignore[method-assign]
    result, wall, cpu = _timed(replay)
    return {
        "jobs": jobs,
        "nodes": nodes,
        "hours": hours,
        "wall": wall,
        "cpu": cpu,
        "sessions": result.sessions,
        "skipped": result.skipped,
        "finished": result.jobs_finished,
        "peak_pods_cached": peak,
        "pods_cached_at_end": len(state.raw_pods),
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def memory(jobs: int, nodes: int, hours: float) -> None:
    """Traces of the same steady rate over ``hours``, twice and four times as long (the same jobs live at
    any moment, twice and four times as many finished), each in a fresh process."""
    rows = [
        in_fresh_process(__file__, "--one", str(jobs * k), str(nodes), str(hours * k), "1") for k in (1, 2, 4)
    ]
    for r in rows:
        print(
            f"memory: {r['jobs']} jobs over {r['hours']:g} h on {r['nodes']} nodes: {r['finished']} finished; "
            f"pods cached at most {r['peak_pods_cached']}, at the end {r['pods_cached_at_end']}; "
            f"peak RSS {r['max_rss_mib']:.1f} MiB; {r['cpu']:.1f} s CPU; load {load_average()}"
        )
    a, c = rows[0], rows[-1]
    slope = (c["max_rss_mib"] - a["max_rss_mib"]) * 2**20 / max(c["finished"] - a["finished"], 1)
    print(
        f"  four times the jobs at the same rate: cache peak x{c['peak_pods_cached'] / max(a['peak_pods_cached'], 1):.2f}, "
        f"peak RSS x{c['max_rss_mib'] / a['max_rss_mib']:.2f}: {slope:.0f} bytes of RSS per job that finished "
        f"(the report's record of it)"
    )


def large(jobs: int, nodes: int) -> None:
    r = in_fresh_process(__file__, "--one", str(jobs), str(nodes), "24", "3")
    print(
        f"large: {r['jobs']} jobs on {r['nodes']} nodes over a day: replayed in {r['wall']:.1f} s wall "
        f"({r['cpu']:.1f} s CPU, {r['cpu'] / max(r['sessions'], 1) * 1e3:.2f} ms a session), {r['sessions']} "
        f"sessions ({r['skipped']} skipped), {r['finished']} finished, pods cached at most "
        f"{r['peak_pods_cached']}, peak RSS {r['max_rss_mib']:.0f} MiB; load {load_average()}"
    )


def main() -> None:
    if "--json" in sys.argv:  # one grid point, in its own process (machine.in_fresh_process)
        i = sys.argv.index("--one")
        jobs, nodes, hours, peak = (
            int(sys.argv[i + 1]),
            int(sys.argv[i + 2]),
            float(sys.argv[i + 3]),
            float(sys.argv[i + 4]),
        )
        print(json.dumps(one_trace(jobs, nodes, hours, peak)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("parts", nargs="*", choices=("kueue", "reuse", "memory", "large", []), default=[])
    parser.add_argument("--cohorts", type=int, default=5, help="cohorts of the Kueue baseline kept (1-5)")
    parser.add_argument("--period", type=float, default=1.0, help="seconds between session ticks")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the reuse comparison")
    parser.add_argument("--reuse-cohorts", type=int, default=1, help="cohorts of the reuse comparison")
    parser.add_argument("--jobs", type=int, default=100_000, help="jobs of the large trace")
    parser.add_argument("--nodes", type=int, default=1_000, help="nodes of the large trace")
    parser.add_argument(
        "--memory-jobs", type=int, default=2_000, help="jobs of the memory check's first trace"
    )
    args = parser.parse_args()
    parts = args.parts or ["kueue", "reuse", "memory", "large"]
    print("machine:", describe(f"numpy {numpy.__version__}"))
    if "kueue" in parts:
        kueue(args.cohorts, args.period)
    if "reuse" in parts:
        reuse(args.reuse_cohorts, args.period, args.rounds)
    if "memory" in parts:
        memory(args.memory_jobs, 50, 6.0)
    if "large" in parts:
        large(args.jobs, args.nodes)


if __name__ == "__main__":
    main()
