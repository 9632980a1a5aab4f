"""Benchmark: reclaim and preempt on a full cluster of many nodes, through the real engine.

Every node is full (16 cpu, four running 4-cpu pods of one job, minMember 1, so a job can spare pods).
Each case runs one cycle (``volsched.cycle.run_cycle``, the scheduler config below, decisions to a
``NullPort``) and prints the action's time, the session's, the cycle's CPU time (the fairer figure on a
shared machine), the evictions and evictions per second of the action, and the machine. Each case runs
in a fresh process.

* ``reclaim``: queue ``keep`` (weight 8, not reclaimable) runs on the first 80% of the nodes, queue
  ``lend`` (weight 1, reclaimable) on the rest, holding twice what it deserves; queue ``want`` (weight
  1) has gangs of four 4-cpu tasks asking for 1% of the cluster, and takes back from ``lend`` what proportion lets it. Most
  nodes hold no pod reclaim may take: the eviction search must not walk them for every task.
* ``preempt``: eight queues, each running on its own eighth of the nodes (priority 100); each queue has
  gangs of four high-priority (1000) 4-cpu tasks asking for 1% of the cluster, which take the room from
  their own queue's pods. Seven eighths of the nodes hold no pod of the preemptor's queue: the search
  must not walk them for every task.
* ``preempt-anti``: the preempt cluster with room left (three running pods a node, the first labelled
  ``app=run``); the high-priority tasks, labelled ``app=run`` too, have required anti-affinity against
  ``app=run`` (any namespace) by hostname, so every node passes every other filter and has room, yet none takes them: each task
  evicts the one pod of its own queue in its way on one node (the anti-affinity path: candidate nodes
  found with numpy, then tried; seven eighths hold nothing preempt may take).
* ``preempt-anti-any``: ``preempt-anti`` with the term's selector ``app Exists`` (no ``In``: no label
  pair to look pods up by, so every evictable pod is a candidate for the term; the same decisions).
* ``preempt-none``: the same cluster, but each queue's pending jobs are single tasks of priority 0 that
  may take nothing (every pod of their queue has a higher priority): each fails after the plugins have
  been asked on every node of its queue (that part is the plugins' per-pod answers, not the search).
* ``preempt-short``: the preempt cluster, but on every node two of the four pods are of queue ``keep``
  (which has no pending work); each queue's pending jobs are single high-priority 12-cpu tasks, and no
  node can free more than 8 cpu of the queue's: every node is ruled out by the numbers and each task
  fails. Its message must be said from the numbers, without asking the plugins node by node.

    python bench/bench_evict.py                       # every case at 1,000 and 5,000 nodes
    python bench/bench_evict.py --nodes 2000 --case reclaim
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

import numpy
from builders import GIB, gang_tasks, node_specs, parsed_cache, timed_cycle
from machine import describe

GRID = (1_000, 5_000)
CASES = ("reclaim", "preempt", "preempt-anti", "preempt-anti-any", "preempt-none", "preempt-short")
CONFIG = """
actions: "CASE"
tiers:
- plugins:
  - name: priority
    enablePreemptable: false
  - name: gang
  - name: conformance
  - name: drf
  - name: overcommit
  - name: proportion
- plugins:
  - name: predicates
  - name: nodeorder
  - name: binpack
"""


def build(nodes: int, case: str):  # type: ignore[no-untyped-def]
    from volsched.model.vocabulary import (
        PodGroupPhase,
        PodGroupSpec,
        QueueSpec,
        QueueState,
        Task,
    )

    nodes_made = node_specs(nodes, lambda i: {"kubernetes.io/hostname": f"node-{i:05d}"})
    pgs: list[PodGroupSpec] = []
    tasks: list[Task] = []

    from volsched.model.selectors import AffinityTerm, LabelSelector, PodConstraints, Requirement

    anti = case.startswith("preempt-anti")
    wanted = (
        Requirement("app", "Exists") if case == "preempt-anti-any" else Requirement("app", "In", ("run",))
    )

    def job(
        name: str, queue: str, *, size: int, priority: int, node: str | None, created: float, cpu: float = 4.0
    ) -> None:
        ns = f"ns-{queue}"
        run = {"app": "run"}
        away = PodConstraints(
            anti_affinity=(
                AffinityTerm(
                    LabelSelector((wanted,)),
                    "kubernetes.io/hostname",
                    namespace_selector=LabelSelector(),  # every namespace
                ),
            )
        )
        pgs.append(
            PodGroupSpec(
                namespace=ns,
                name=name,
                min_member=1 if node else size,
                min_resources=None,
                queue=queue,
                priority_class_name="",
                phase=PodGroupPhase.RUNNING if node else PodGroupPhase.INQUEUE,
                creation=created,
                priority=priority,
            )
        )
        tasks.extend(
            gang_tasks(
                ns,
                name,
                size,
                request={"cpu": cpu, "memory": 8 * GIB, "pods": 1.0},
                priority=priority,
                node=node,
                creation=created,
                labels=lambda k: run if anti and (k == 0 or not node) else {},
                constraints=away if anti and not node else None,
            )
        )

    def queue(name: str, weight: int, *, reclaimable: bool = True) -> QueueSpec:
        return QueueSpec(
            name, weight=weight, capability=None, guarantee={}, reclaimable=reclaimable, state=QueueState.OPEN
        )

    if case == "reclaim":
        queues = [queue("keep", 8, reclaimable=False), queue("lend", 1), queue("want", 1)]
        for i, n in enumerate(nodes_made):
            job(
                f"run-{i:05d}",
                "keep" if i < nodes * 8 // 10 else "lend",
                size=4,
                priority=0,
                node=n.name,
                created=0,
            )
        for g in range(nodes * 4 // 100 // 4):  # nodes/100 gangs of 16 cpu, of the cluster's nodes*16
            job(f"want-{g:05d}", "want", size=4, priority=0, node=None, created=1 + g)
    else:
        queues = [queue(f"q{k}", 1) for k in range(8)]
        if case == "preempt-short":
            queues.append(queue("keep", 1))
        for i, n in enumerate(nodes_made):
            size = 3 if anti else 2 if case == "preempt-short" else 4
            job(f"run-{i:05d}", f"q{i * 8 // nodes}", size=size, priority=100, node=n.name, created=0)
            if case == "preempt-short":
                job(f"keep-{i:05d}", "keep", size=2, priority=100, node=n.name, created=0)
        for k in range(8):
            if case == "preempt-short":
                for g in range(max(1, nodes // 100)):
                    job(
                        f"big-{k}-{g:04d}", f"q{k}", size=1, priority=1000, node=None, created=1 + g, cpu=12.0
                    )
            elif case == "preempt" or anti:
                for g in range(max(1, nodes // 100 // 8)):
                    job(f"high-{k}-{g:04d}", f"q{k}", size=4, priority=1000, node=None, created=1 + g)
            else:
                for g in range(max(1, nodes // 100)):
                    job(f"low-{k}-{g:04d}", f"q{k}", size=1, priority=0, node=None, created=1 + g)
    return parsed_cache(
        nodes=nodes_made, tasks=tasks, podgroups=pgs, queues=queues, namespaces={pg.namespace for pg in pgs}
    )


def one(nodes: int, case: str) -> dict[str, float | str]:
    from volsched.framework.registry import load_config

    action = case.split("-")[0]
    config = load_config(text=CONFIG.replace("CASE", action))
    feeder = build(nodes, case)
    report, cycle_s, cycle_cpu_s = timed_cycle(feeder, config)
    result = report.result
    action_s = result.timings.get(f"action:{action}", 0.0)
    return {
        "case": case,
        "nodes": nodes,
        "action_s": action_s,
        "session_s": result.timings.get("session", 0.0),
        "cycle_s": cycle_s,
        "cycle_cpu_s": cycle_cpu_s,
        "evictions": len(result.evictions),
        "evictions_per_s": len(result.evictions) / action_s if action_s > 0 else 0.0,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--case", choices=CASES, help="one case only (default: every case)")
    parser.add_argument("--json", action="store_true", help="print one JSON line (used per grid point)")
    args = parser.parse_args()
    if args.nodes and args.json:
        print(json.dumps(one(args.nodes, args.case or "reclaim")))
        return 0
    grid = [args.nodes] if args.nodes else list(GRID)
    cases = [args.case] if args.case else list(CASES)
    print("machine:", describe(f"numpy {numpy.__version__}"))
    print(
        f"{'case':>16} {'nodes':>6} {'action s':>8} {'session s':>9} {'cycle cpu s':>11} {'evictions':>9} "
        f"{'evictions/s':>11} {'peak MiB':>8}"
    )
    for n in grid:
        for case in cases:
            out = subprocess.run(
                [sys.executable, __file__, "--nodes", str(n), "--case", case, "--json"],
                capture_output=True,
                text=True,
                check=True,
            )
            row = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"{case:>16} {n:>6} {row['action_s']:>8.2f} {row['session_s']:>9.2f} {row['cycle_cpu_s']:>11.2f} "
                f"{row['evictions']:>9} {row['evictions_per_s']:>11.0f} {row['peak_rss_mib']:>8.0f}"
            )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    sys.exit(main())
