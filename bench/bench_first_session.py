"""Benchmark: the first session after a backlog, phase by phase, up to its first commit and per placed pod.

Builds the cache an operator has once its watches synced: N Ready nodes and P pending one-pod jobs (no
PodGroup, ten namespaces unless ``--namespaces`` says, default queue), fed as raw objects through the ``Feeder``, then runs one cycle
(``volsched.cycle.run_cycle``: snapshot, session with the default config, binds to a port where every
bind succeeds) and prints, in milliseconds of wall time: the snapshot, the plugins' opens, enqueue,
allocate up to its first commit and in all, the session's close; the time to the first commit from the
cycle's start in wall and CPU time; and the cycle's CPU microseconds per placed pod (the figure the
apiserver pays for on a 2-core machine). Each repetition runs in a fresh process; the best of
``--repeat`` is printed per column (the machine is shared: wall figures taken beside other work are noisy,
compare runs made one after the other, and prefer the CPU columns).

    python bench/bench_first_session.py                       # 1,000 x 10,000 and 5,000 x 50,000
    python bench/bench_first_session.py --nodes 1000 --pods 10000 --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from typing import Any

import numpy
from builders import raw_node, raw_pod
from machine import describe, in_fresh_process

GRID = [(1_000, 10_000), (5_000, 50_000)]
COLUMNS = (
    ("snapshot", "snapshot ms"),
    ("open", "open ms"),
    ("enqueue", "enqueue ms"),
    ("allocate_to_first", "alloc>1st ms"),
    ("allocate", "allocate ms"),
    ("close", "close ms"),
    ("first_wall", "1st commit ms"),
    ("first_cpu", "1st cpu ms"),
    ("cpu_per_pod_us", "cpu us/pod"),
)


def one(nodes: int, pods: int, namespaces: int = 10) -> dict[str, Any]:
    from volsched.cache.feeder import Feeder
    from volsched.cache.state import ClusterState
    from volsched.cycle import NullPort, run_cycle
    from volsched.framework.registry import load_config

    feeder = Feeder(ClusterState())
    for i in range(nodes):
        feeder.apply("Node", raw_node(i))
    for i in range(pods):
        pod = raw_pod(
            f"p{i:06d}", namespace=f"ns{i % namespaces}", uid=f"uid-{i}", rv=10 + i, labels={"app": "x"}
        )
        feeder.apply("Pod", pod)
    gc.collect()
    gc.freeze()  # as the operator does once its caches are filled

    class Port(NullPort):
        first: tuple[float, float] | None = None

        def bind(self, binds: Any, raw: Any, *, lone: bool = False) -> Any:
            if self.first is None:
                self.first = (time.perf_counter(), time.process_time())
            return super().bind(binds, raw, lone=lone)

    port = Port()
    config = load_config(None)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    report = run_cycle(feeder, config, port, now=time.time())
    cpu = time.process_time() - cpu0
    t = report.result.timings
    placed = report.count("bound")
    first_wall, first_cpu = port.first if port.first is not None else (float("nan"), float("nan"))
    opened = sum(v for k, v in t.items() if k.startswith("plugin:") and k.endswith(":open")) + t.get(
        "open:thaw", 0.0
    )
    before_allocate = t.get("cycle:snapshot", 0.0) + opened + t.get("action:enqueue", 0.0)
    closed = sum(v for k, v in t.items() if k.startswith("close:") or k.endswith(":close"))
    ms = 1000.0
    return {
        "nodes": nodes,
        "pods": pods,
        "placed": placed,
        "snapshot": t.get("cycle:snapshot", 0.0) * ms,
        "open": opened * ms,
        "enqueue": t.get("action:enqueue", 0.0) * ms,
        "allocate_to_first": (first_wall - wall0 - before_allocate) * ms,
        "allocate": t.get("action:allocate", 0.0) * ms,
        "close": closed * ms,
        "first_wall": (first_wall - wall0) * ms,
        "first_cpu": (first_cpu - cpu0) * ms,
        "cpu_per_pod_us": cpu / placed * 1e6 if placed else float("nan"),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--pods", type=int)
    parser.add_argument("--namespaces", type=int, default=10, help="namespaces the pods are spread over")
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes per grid point (best shown)")
    parser.add_argument("--json", action="store_true", help="one grid point, one JSON line (internal)")
    args = parser.parse_args()
    if args.json:
        import json

        print(json.dumps(one(args.nodes, args.pods, args.namespaces)))
        return 0
    grid = [(args.nodes, args.pods)] if args.nodes and args.pods else GRID
    print("machine:", describe(f"numpy {numpy.__version__}"))
    print(f"namespaces: {args.namespaces}")
    print(f"{'nodes':>6} {'pods':>7} {'placed':>7} " + " ".join(f"{label:>13}" for _, label in COLUMNS))
    for n, p in grid:
        point = ("--nodes", str(n), "--pods", str(p), "--namespaces", str(args.namespaces))
        runs = [in_fresh_process(__file__, *point) for _ in range(args.repeat)]
        best = {key: min(r[key] for r in runs) for key, _ in COLUMNS}
        print(
            f"{n:>6} {p:>7} {min(r['placed'] for r in runs):>7} "
            + " ".join(f"{best[key]:>13.0f}" for key, _ in COLUMNS)
        )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
