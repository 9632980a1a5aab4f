"""Benchmark: one enqueue+allocate cycle through the real engine on synthetic clusters.

Builds a cache of N nodes and T pending tasks in gangs (sizes 1..16, minMember = size), spread over queues
and namespaces, runs one cycle (``volsched.cycle.run_cycle``: snapshot, session, decisions to a
``NullPort`` where every bind succeeds, outcomes back into the cache) with the default plugins and prints
snapshot and session time, the cycle's CPU time, tasks placed per second and peak memory, with the
machine it ran on. Each grid point runs in a fresh process so peak RSS is its own.

Two cases per grid point, run one after the other (compare them within one run: the machine is shared):

* ``plain``: requests only;
* ``constrained``: every pod carries labels; the pods of every fifth gang carry required pod
  anti-affinity (one pod of the gang per node) or a DoNotSchedule zone spread (maxSkew 1) over their gang,
  and half the gangs ask for a rack (``spec.topology``, 20 nodes a rack; Required and Preferred alike).
  Goal: at most 2x the plain session time at 5,000 nodes x 50,000 tasks, still linear in tasks.

    python bench/bench_allocate.py                 # the grid up to 5,000 nodes x 50,000 tasks
    python bench/bench_allocate.py --nodes 1000 --tasks 10000 [--case plain|constrained]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable

import numpy
from builders import gang_tasks, node_specs, parsed_cache, timed_cycle
from machine import describe

GRID = [(500, 5_000), (1_000, 10_000), (2_000, 20_000), (5_000, 25_000), (5_000, 50_000)]
TARGET_SECONDS = 5.0  # for 5,000 nodes x 50,000 tasks
TARGET_RATIO = 2.0  # constrained vs plain session time, same size
CASES = ("plain", "constrained")
RACK = "topology.example.com/rack"


def _every(labels: dict[str, str]) -> Callable[[int], dict[str, str]]:
    """Each task of a job labelled ``labels``, the same dict."""
    return lambda k: labels


def build(nodes: int, tasks: int, seed: int = 7, *, constrained: bool = False):  # type: ignore[no-untyped-def]
    import random

    from volsched.model.constraintdecode import parse_pod_constraints
    from volsched.model.selectors import PodConstraints
    from volsched.model.vocabulary import (
        GangTopology,
        PodGroupPhase,
        PodGroupSpec,
        QueueSpec,
        QueueState,
        Task,
    )

    rng = random.Random(seed)
    nodes_made = node_specs(
        nodes,
        lambda i: {"zone": f"z{i % 4}", RACK: f"r{i // 20:04d}", "kubernetes.io/hostname": f"node-{i:05d}"},
    )
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
        topology = None
        constraints: PodConstraints | None = None
        labels: dict[str, str] = {}
        if constrained:
            labels = {"app": f"app{g % 50}", "job": name}
            if g % 2 == 0:
                topology = GangTopology(RACK, required=g % 4 == 0)
            if g % 5 == 0:
                selector = {"matchLabels": {"job": name}}
                spec = (
                    {
                        "affinity": {
                            "podAntiAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [
                                    {"topologyKey": "kubernetes.io/hostname", "labelSelector": selector}
                                ]
                            }
                        }
                    }
                    if g % 10 == 0
                    else {
                        "topologySpreadConstraints": [
                            {
                                "maxSkew": 1,
                                "topologyKey": "zone",
                                "whenUnsatisfiable": "DoNotSchedule",
                                "labelSelector": selector,
                            }
                        ]
                    }
                )
                constraints = parse_pod_constraints(spec, namespace=ns, labels=labels, where=name)
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
                topology=topology,
            )
        )
        cpu = rng.choice([0.5, 1.0, 1.0, 2.0])
        task_list += gang_tasks(
            ns,
            name,
            size,
            request={"cpu": cpu, "memory": cpu * 2.0**31, "pods": 1.0},
            priority=0,
            node=None,
            creation=float(g),
            labels=_every(labels),
            constraints=constraints,
        )
        made += size
        g += 1
    return parsed_cache(
        nodes=nodes_made,
        tasks=task_list,
        podgroups=pgs,
        queues=queues,
        namespaces={f"ns{i}" for i in range(32)},
        quota_weights={f"ns{i}/weight": 1 + i % 2 for i in range(32)},
    )


def one(nodes: int, tasks: int, case: str = "plain") -> dict[str, float | str]:
    from volsched.framework.registry import load_config

    config = load_config(
        text=(
            'actions: "enqueue, allocate"\n'
            "tiers:\n- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
            "- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, "
            "{name: binpack}]\n"
        )
    )
    feeder = build(nodes, tasks, constrained=case == "constrained")
    report, cycle_s, cycle_cpu_s = timed_cycle(feeder, config)
    result = report.result
    placed = report.count("bound")
    session_s = result.timings.get("session", 0.0)
    return {
        "case": case,
        "nodes": nodes,
        "tasks": tasks,
        "snapshot_s": result.timings.get("cycle:snapshot", 0.0),
        "session_s": session_s,
        "cycle_s": cycle_s,
        # CPU time of this process for the whole cycle (snapshot, session, outcomes back into the cache):
        # less sensitive than wall time to other work on a shared machine.
        "cycle_cpu_s": cycle_cpu_s,
        "placed": placed,
        "placed_per_s": placed / session_s if session_s > 0 else 0.0,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "allocate_s": result.timings.get("action:allocate", 0.0),
        # Assuming the binds and handing them to the port as each job commits (inside session_s).
        "bind_s": result.timings.get("cycle:bind", 0.0),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--tasks", type=int)
    parser.add_argument("--case", choices=CASES, help="one case only (default: both)")
    parser.add_argument("--json", action="store_true", help="print one JSON line (used per grid point)")
    args = parser.parse_args()
    if args.nodes and args.tasks and args.json:
        print(json.dumps(one(args.nodes, args.tasks, args.case or "plain")))
        return 0
    grid = [(args.nodes, args.tasks)] if args.nodes and args.tasks else GRID
    cases = [args.case] if args.case else list(CASES)
    print("machine:", describe(f"numpy {numpy.__version__}"))
    print(
        f"{'case':>11} {'nodes':>6} {'tasks':>7} {'snapshot s':>10} {'session s':>9} {'cycle cpu s':>11} "
        f"{'allocate s':>10} {'binds s':>7} {'placed':>7} {'placed/s':>9} {'peak MiB':>8}"
    )
    rows = []
    for n, t in grid:
        for case in cases:
            out = subprocess.run(
                [sys.executable, __file__, "--nodes", str(n), "--tasks", str(t), "--case", case, "--json"],
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(
                f"{case:>11} {n:>6} {t:>7} {row['snapshot_s']:>10.2f} {row['session_s']:>9.2f} "
                f"{row['cycle_cpu_s']:>11.2f} "
                f"{row['allocate_s']:>10.2f} {row['bind_s']:>7.2f} {row['placed']:>7} {row['placed_per_s']:>9.0f} {row['peak_rss_mib']:>8.0f}"
            )
    by = {(r["case"], r["nodes"], r["tasks"]): r for r in rows}
    plain_big = by.get(("plain", 5_000, 50_000))
    if plain_big:
        verdict = "meets" if plain_big["session_s"] <= TARGET_SECONDS else "MISSES"
        print(
            f"target: plain 5,000 nodes x 50,000 tasks in <= {TARGET_SECONDS:.0f} s: {verdict} "
            f"({plain_big['session_s']:.2f} s)"
        )
    for n, t in grid:
        plain, constrained = by.get(("plain", n, t)), by.get(("constrained", n, t))
        if plain and constrained and plain["session_s"] > 0 and plain["cycle_cpu_s"] > 0:
            ratio = constrained["session_s"] / plain["session_s"]
            cpu_ratio = constrained["cycle_cpu_s"] / plain["cycle_cpu_s"]
            goal = (
                f" (target <= {TARGET_RATIO:.0f}x: {'meets' if max(ratio, cpu_ratio) <= TARGET_RATIO else 'MISSES'})"
                if (n, t) == (5_000, 50_000)
                else ""
            )
            print(
                f"constrained/plain at {n} x {t}: session wall {ratio:.2f}x, cycle cpu {cpu_ratio:.2f}x{goal}"
            )
    for case in cases:
        mine = [r for r in rows if r["case"] == case]
        if len(mine) > 1:
            per_task = [r["session_s"] / r["tasks"] * 1e6 for r in mine]
            cpu_per_task = [r["cycle_cpu_s"] / r["tasks"] * 1e6 for r in mine]
            print(
                f"microseconds per task ({case}): wall "
                + ", ".join(f"{p:.0f}" for p in per_task)
                + "; cycle cpu "
                + ", ".join(f"{p:.0f}" for p in cpu_per_task)
            )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
