"""Benchmark: one enqueue+allocate session through the real engine on synthetic clusters.

Builds N nodes and T pending tasks in gangs (sizes 1..16, minMember = size), spread over queues and
namespaces, runs one session with the default plugins and prints session time, tasks placed per second
and peak memory, with the machine it ran on. Each grid point runs in a fresh process so peak RSS is
its own.

    python bench/bench_allocate.py                 # the grid up to 5,000 nodes x 50,000 tasks
    python bench/bench_allocate.py --nodes 1000 --tasks 10000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

GRID = [(500, 5_000), (1_000, 10_000), (2_000, 20_000), (5_000, 25_000), (5_000, 50_000)]
TARGET_SECONDS = 5.0  # for 5,000 nodes x 50,000 tasks


def machine() -> str:
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import numpy

    return (
        f"{platform.node()} | {cpu} | {os.cpu_count()} cores | python {platform.python_version()} | "
        f"numpy {numpy.__version__} | {platform.platform()}"
    )


def build(nodes: int, tasks: int, seed: int = 7):  # type: ignore[no-untyped-def]
    import random

    from volsched.model.cluster import build_snapshot
    from volsched.model.objects import (
        NodeSpec,
        PodGroupPhase,
        PodGroupSpec,
        QueueSpec,
        QueueState,
        Task,
        TaskStatus,
    )

    rng = random.Random(seed)
    node_specs = [
        NodeSpec(
            name=f"node-{i:05d}",
            allocatable={"cpu": 16.0, "memory": 64 * 2.0**30, "pods": 110.0},
            labels={"zone": f"z{i % 4}"},
            taints=(),
            unschedulable=False,
            ready=True,
        )
        for i in range(nodes)
    ]
    queues = [
        QueueSpec(
            f"q{i}", weight=1 + i % 3, capability=None, guarantee={}, reclaimable=True, state=QueueState.OPEN
        )
        for i in range(8)
    ]
    pgs: list[PodGroupSpec] = []
    task_list: list[Task] = []
    made = 0
    g = 0
    while made < tasks:
        size = min(rng.randint(1, 16), tasks - made)
        ns = f"ns{g % 32}"
        name = f"job-{g:06d}"
        pgs.append(
            PodGroupSpec(
                namespace=ns,
                name=name,
                min_member=size,
                min_resources=None,
                queue=f"q{g % 8}",
                priority_class_name="",
                phase=PodGroupPhase.PENDING,
                creation=float(g),
            )
        )
        cpu = rng.choice([0.5, 1.0, 1.0, 2.0])
        for k in range(size):
            task_list.append(
                Task(
                    namespace=ns,
                    name=f"{name}-{k}",
                    uid=f"{ns}/{name}-{k}",
                    job_key=f"{ns}/{name}",
                    request_map={"cpu": cpu, "memory": cpu * 2.0**31, "pods": 1.0},
                    priority=0,
                    status=TaskStatus.PENDING,
                    node_name=None,
                    scheduler_name="volsched",
                    creation=float(g),
                )
            )
        made += size
        g += 1
    return build_snapshot(
        nodes=node_specs,
        tasks=task_list,
        podgroups=pgs,
        queues=queues,
        namespace_weights={f"ns{i}": 1 + i % 2 for i in range(32)},
        priority_classes={},
    )


def one(nodes: int, tasks: int) -> dict[str, float]:
    from volsched.framework.config import load_config
    from volsched.framework.runner import run_session

    config = load_config(
        text=(
            'actions: "enqueue, allocate"\n'
            "tiers:\n- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
            "- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, "
            "{name: binpack}]\n"
        )
    )
    t0 = time.perf_counter()
    snapshot = build(nodes, tasks)
    t1 = time.perf_counter()
    result = run_session(snapshot, config)
    t2 = time.perf_counter()
    placed = len(result.binds)
    return {
        "nodes": nodes,
        "tasks": tasks,
        "snapshot_s": t1 - t0,
        "session_s": t2 - t1,
        "placed": placed,
        "placed_per_s": placed / (t2 - t1) if t2 > t1 else 0.0,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "allocate_s": result.timings.get("action:allocate", 0.0),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--tasks", type=int)
    parser.add_argument("--json", action="store_true", help="print one JSON line (used per grid point)")
    args = parser.parse_args()
    if args.nodes and args.tasks and args.json:
        print(json.dumps(one(args.nodes, args.tasks)))
        return 0
    grid = [(args.nodes, args.tasks)] if args.nodes and args.tasks else GRID
    print(f"machine: {machine()}")
    print(
        f"{'nodes':>6} {'tasks':>7} {'snapshot s':>10} {'session s':>9} {'allocate s':>10} {'placed':>7} {'placed/s':>9} {'peak MiB':>8}"
    )
    rows = []
    for n, t in grid:
        out = subprocess.run(
            [sys.executable, __file__, "--nodes", str(n), "--tasks", str(t), "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{n:>6} {t:>7} {row['snapshot_s']:>10.2f} {row['session_s']:>9.2f} {row['allocate_s']:>10.2f} {row['placed']:>7} "
            f"{row['placed_per_s']:>9.0f} {row['peak_rss_mib']:>8.0f}"
        )
    big = [r for r in rows if r["nodes"] == 5_000 and r["tasks"] == 50_000]
    if big:
        verdict = "meets" if big[0]["session_s"] <= TARGET_SECONDS else "MISSES"
        print(
            f"target: 5,000 nodes x 50,000 tasks in <= {TARGET_SECONDS:.0f} s: {verdict} ({big[0]['session_s']:.2f} s)"
        )
    if len(rows) > 1:
        per_task = [r["session_s"] / r["tasks"] * 1e6 for r in rows]
        print("microseconds per task: " + ", ".join(f"{p:.0f}" for p in per_task))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
