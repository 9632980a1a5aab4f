"""bench_perf's workloads in process: the sessions alone, without an apiserver (what the live bench cannot
separate from the machine's load).

Each workload's nodes and init pods are fed to a cache as raw objects (as the watches would), the init
pods bound by cycles on a :class:`NullPort` (every bind succeeds; the next cycle's feed confirms it, as the
watch would), then the measured pods arrive at once and cycles run until none is left to place. Printed:
the cycles it took, their CPU, and the session's timings summed (snapshot, each plugin's open, each
action). ``--profile`` writes a cProfile of the measured cycles.

    python bench/perf_sessions.py [--only SchedulingPodAntiAffinity,...] [--full] [--profile out.prof]
"""

from __future__ import annotations

import argparse
import heapq
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_perf import PREEMPT_CONFIG, WORKLOADS, Size, Workload, gang_pod, node  # noqa: E402
from machine import describe  # noqa: E402

NAMESPACE = "bench"
SCHEDULER = "volsched"


class World:
    """A cache fed raw objects, and the binds and evictions of the last cycle to confirm."""

    def __init__(self, config_text: str | None) -> None:
        from volsched.cache.feeder import Feeder
        from volsched.cache.state import ClusterState
        from volsched.framework.registry import load_config

        self.feeder = Feeder(ClusterState())
        self.config = load_config(text=config_text) if config_text else load_config(None)
        self.rv = 10
        self.pods: dict[str, dict[str, Any]] = {}
        self.now = 1000.0
        self.timings: defaultdict[str, float] = defaultdict(float)

    def add(self, kind: str, body: dict[str, Any]) -> None:
        self.rv += 1
        meta = body.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.rv)
        meta.setdefault("uid", f"uid-{kind}-{meta['name']}")
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        if kind in ("Pod", "PodGroup"):
            meta["namespace"] = NAMESPACE
        if kind == "Pod":
            body.setdefault("status", {"phase": "Pending"})
            self.pods[f"{NAMESPACE}/{meta['name']}"] = body
        self.feeder.apply(kind, body)

    def cycle(self) -> tuple[int, int]:
        """One cycle; the watch then confirms its binds and evictions. (binds, evictions)."""
        from volsched.cycle import BOUND, EVICTED, NullPort, run_cycle

        report = run_cycle(self.feeder, self.config, NullPort(), now=self.now)
        self.now += 0.1
        for k, v in report.result.timings.items():
            self.timings[k] += v
        binds = [b.bind for b in report.binds if b.result == BOUND]
        for b in binds:
            pod = self.pods[b.pod]
            self.rv += 1
            pod["metadata"]["resourceVersion"] = str(self.rv)
            pod["spec"] = {**pod["spec"], "nodeName": b.node}
            pod["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:05Z"}
            self.feeder.apply("Pod", pod)
        evicted = [e.eviction.pod for e in report.evictions if e.result == EVICTED]
        for key in evicted:
            pod = self.pods.pop(key)
            self.rv += 1
            pod["metadata"]["resourceVersion"] = str(self.rv)
            self.feeder.delete("Pod", pod)
        return len(binds), len(evicted)

    def until_settled(self, pending: set[str], limit: int = 200) -> int:
        """Cycles until every pod of ``pending`` is bound (or ``limit``): how many it took."""
        for n in range(1, limit + 1):
            self.cycle()
            left = {k for k in pending if k in self.pods and not self.pods[k]["spec"].get("nodeName")}
            if not left:
                return n
        return limit


def run(w: Workload, size: Size, *, profile: str | None) -> dict[str, Any]:
    world = World(PREEMPT_CONFIG if w.preempt else None)
    for name, value in (("bench-low", 1), ("bench-high", 10)):
        world.add("PriorityClass", {"metadata": {"name": name}, "value": value})
    for i in range(size.nodes):
        world.add("Node", node(f"node-{i:05d}", w.zones[i % len(w.zones)] if w.zones else None))
    init = [w.init_pod(f"init-{i:05d}", SCHEDULER) for i in range(size.init)]
    for body in init:
        world.add("Pod", body)
    if init and not w.init_pending:
        world.until_settled({f"{NAMESPACE}/{b['metadata']['name']}" for b in init})
    else:
        world.cycle()
    if size.gang:
        for g in range(size.measure // size.gang):
            world.add(
                "PodGroup",
                {
                    "apiVersion": "scheduling.volsched.io/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": f"gang-{g:05d}"},
                    "spec": {"minMember": size.gang},
                },
            )
        measured = [
            gang_pod(f"m-{i:06d}", SCHEDULER, f"gang-{i // size.gang:05d}") for i in range(size.measure)
        ]
    else:
        measured = [w.measure_pod(f"m-{i:06d}", SCHEDULER) for i in range(size.measure)]
    for body in measured:
        world.add("Pod", body)
    world.timings.clear()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    cpu, wall = time.process_time(), time.perf_counter()
    cycles = world.until_settled({f"{NAMESPACE}/{b['metadata']['name']}" for b in measured})
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if profiler is not None and profile:
        profiler.disable()
        profiler.dump_stats(profile)
    return {"workload": w.name, "cycles": cycles, "cpu_s": cpu, "wall_s": wall, "timings": world.timings}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="")
    p.add_argument("--full", action="store_true", help="scheduler_perf's 5000Nodes sizes")
    p.add_argument("--profile", help="cProfile of the measured cycles (one workload)")
    p.add_argument("--top", type=int, default=8, help="session timings shown per workload")
    args = p.parse_args(argv)
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    print("machine:", describe())
    for w in WORKLOADS:
        if only and w.name not in only:
            continue
        out = run(w, w.full if args.full else w.quick, profile=args.profile)
        most = heapq.nlargest(args.top, out["timings"].items(), key=lambda kv: kv[1])
        top = ", ".join(f"{k} {1000 * v:.0f}" for k, v in most)
        print(f"{w.name:<27} {out['cycles']:>3} cycles  cpu {1000 * out['cpu_s']:7.1f} ms  ({top} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
