"""Benchmark: the fixed cost of a session in the steady state, many pods bound and a few arriving.

The cache holds N nodes and M bound, running pods (fed as raw objects through a :class:`Feeder`, as the
watches would: half in gangs of 8 with a PodGroup object, half owned by batch Jobs of 8 with no group,
so the cache derives an owner PodGroup for each). Every cycle 50 new pending pods arrive (5 gangs of 6
with a PodGroup and 20 pods owned by Jobs of 4), the watch confirms the previous cycle's binds (the
pods show their node and run), and one cycle runs (``volsched.cycle.run_cycle`` with the default
config on a :class:`NullPort`: every bind succeeds). Sessions are about to run far more often than
they place much, so what a cycle costs here is mostly what it costs to open, snapshot and close over
everything cached.

``--stuck [N]`` puts one (or N) old pod(s) first in the cache's order, pending for good (a nodeSelector no node has),
as an unschedulable pod left in a real cluster: it is in every session's jobs, before the bound ones.

``--shape lone`` holds the shape of the live benchmark (``bench/bind_throughput.py``): every pod, bound or
arriving, stands alone in namespace ``bench`` with no PodGroup and no owner, each its own job (10,000
bound pods are 10,000 jobs, where the default ``gangs`` shape makes 1,250).

``--idle MS`` sleeps that long before each cycle, as the operator's session thread waits between
arriving pods: a cycle after a wait of a few ms costs a multiple of what back-to-back cycles cost (its
code and data are no longer in the processor's caches), as a live session does (see the dated benchmark
note of 2026-11-29, the arriving pod's fifth pass).

Prints, per grid point, the median over the measured cycles of the cycle's CPU and wall time, of the
time from the cycle's start to its first bind handed to the port (an arriving pod's session up to its
bind: what its latency waits for), and of every ``result.timings`` entry (snapshot, each plugin's open
and close, each action, the apply step), in milliseconds, with the machine. The plugins are made ahead of
each cycle, off its way, as the operator makes them after each session; so is the next snapshot's work
for the pods the watch confirmed (``ClusterState.build_ahead``, where the checkout has it), as the
operator's session thread does it while nothing waits. Each grid point runs in a fresh process. The
machine is shared: compare figures of one run.

    python bench/bench_steady.py                          # 1,000 x 10,000 and 5,000 x 50,000
    python bench/bench_steady.py --nodes 1000 --pods 10000 --cycles 10
    python bench/bench_steady.py --config examples/reclaim-preempt-scheduler.yaml   # actions that evict
    python bench/bench_steady.py --nodes 1000 --pods 10000 --shape lone   # single pods, no PodGroup
    python bench/bench_steady.py --shape lone --stuck     # one old unschedulable pod, first in the order (--stuck 20: twenty)
    python bench/bench_steady.py --nodes 1000 --pods 10000 --profile out.prof   # cProfile of the cycles
    python bench/bench_steady.py --nodes 100 --pods 60 --shape lone --arriving 1 --idle 20   # as live
    python bench/bench_steady.py --nodes 100 --pods 60 --shape lone --arriving 1 \
        --source ../before --source . --pairs 3      # before and after in one invocation, alternated

``--source DIR`` (twice or more) runs each grid point from each checkout in turn (its ``volsched`` first on
the path; this file's bench in all), ``--pairs`` rounds of them, the order reversed every other round:
compare the lines of one round, each labelled with its checkout's commit and the load when it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from builders import confirm_binds, raw_node, raw_pod, raw_podgroup
from machine import describe, in_fresh_process

GRID = [(1_000, 10_000), (5_000, 50_000)]
ARRIVING = 50  # new pending pods per cycle
GANG_SIZE, GANGS = 6, 5  # of them, in gangs with a PodGroup object; the rest owned by Jobs of 4
JOB_SIZE = 4
SHAPES = ("gangs", "lone")
LONE_NS = "bench"  # the live benchmark's namespace


def steady_pod(
    name: str, *, namespace: str, group: str | None, owner: str | None, node: str | None, rv: int
) -> dict[str, Any]:
    """A pod in PodGroup ``group`` or owned by Job ``owner``, Running on ``node`` (else Pending)."""
    return raw_pod(
        name,
        namespace=namespace,
        uid=f"uid-{namespace}-{name}",
        rv=rv,
        labels={"app": group or owner or name},
        group=group,
        owner=owner,
        node=node,
    )


def one(
    nodes: int,
    pods: int,
    cycles: int,
    profile: str | None,
    config_path: str | None = None,
    shape: str = "gangs",
    stuck: int = 0,
    arriving: int = ARRIVING,
    idle: float = 0.0,
) -> dict[str, Any]:
    from volsched.cache.feeder import Feeder
    from volsched.cache.state import ClusterState
    from volsched.cycle import BOUND, NullPort, run_cycle
    from volsched.framework.registry import load_config, make_plugins_ahead
    from volsched.framework.settled import KEPT, Settled

    class FirstBindPort(NullPort):
        """NullPort that notes when a cycle's first bind is handed to it."""

        first_bind: tuple[float, float] | None = None  # (wall, CPU)

        def bind(self, binds: Any, pods: Any, *, lone: bool = False) -> Any:
            if self.first_bind is None:
                self.first_bind = (time.perf_counter(), time.process_time())
            return super().bind(binds, pods, lone=lone)

    config = load_config(config_path)  # the default: enqueue, allocate, backfill
    state = ClusterState()
    feeder = Feeder(state)
    for i in range(nodes):
        feeder.apply("Node", raw_node(i))
    lone = shape == "lone"
    for k in range(stuck):  # old pods no node can take, first in the cache's order
        name = "old-stuck" if k == 0 else f"old-stuck-{k}"
        pod = steady_pod(name, namespace=LONE_NS if lone else "ns0", group=None, owner=None, node=None, rv=99)
        pod["spec"]["nodeSelector"] = {"bench.volsched.io/nowhere": "true"}
        feeder.apply("Pod", pod)
    for i in range(pods):
        ns, gang = f"ns{(i // 8) % 16}", f"b{i // 8}"
        node = f"node-{i % nodes:05d}"
        if lone:
            pod = steady_pod(f"p-{i:06d}", namespace=LONE_NS, group=None, owner=None, node=node, rv=100 + i)
        elif (i // 8) % 2 == 0:
            if i % 8 == 0:
                feeder.apply("PodGroup", raw_podgroup(gang, namespace=ns, min_member=8, phase="Running"))
            pod = steady_pod(f"p-{i:06d}", namespace=ns, group=gang, owner=None, node=node, rv=100 + i)
        else:
            pod = steady_pod(f"p-{i:06d}", namespace=ns, group=None, owner=gang, node=node, rv=100 + i)
        feeder.apply("Pod", pod)
    port = FirstBindPort()
    # The next snapshot's work for the pods the watch confirmed, done between sessions as the operator's
    # session thread does it (``SessionLoop``'s ``_Turns.ahead``), where the checkout has it.
    build_ahead = getattr(state, "build_ahead", None)
    rv = 10_000_000
    arrived: dict[str, dict[str, Any]] = {}
    confirm: dict[str, str] = {}
    rows: list[dict[str, float]] = []
    profiler = None
    for c in range(cycles + 2):  # two warm-up cycles: the first snapshot builds everything
        # The watch confirms the last cycle's binds: the pods show their node and run.
        rv = confirm_binds(feeder, arrived, confirm, rv)
        if build_ahead is not None:
            build_ahead()  # as the operator's session thread does then, nothing waiting (a checkout that has it)
        for k in range(arriving if lone else 0):
            # (named in the order they arrive and after the bound pods, as the live benchmark's pods:
            # every pod has the same creation time, so the name orders the jobs, and the arriving one
            # comes last)
            rv += 1
            name = f"p-new-{c:06d}-{k}"
            pod = steady_pod(name, namespace=LONE_NS, group=None, owner=None, node=None, rv=rv)
            arrived[f"{LONE_NS}/{name}"] = pod
            feeder.apply("Pod", pod)
        for g in range(0 if lone else GANGS):
            ns, gang = f"ns{g}", f"new-{c}-{g}"
            feeder.apply("PodGroup", raw_podgroup(gang, namespace=ns, min_member=GANG_SIZE))
            for k in range(GANG_SIZE):
                rv += 1
                pod = steady_pod(f"{gang}-{k}", namespace=ns, group=gang, owner=None, node=None, rv=rv)
                arrived[f"{ns}/{gang}-{k}"] = pod
                feeder.apply("Pod", pod)
        for k in range(0 if lone else ARRIVING - GANGS * GANG_SIZE):
            ns, owner = f"ns{k % 16}", f"newjob-{c}-{k // JOB_SIZE}"
            rv += 1
            pod = steady_pod(
                f"{owner}-{k % JOB_SIZE}", namespace=ns, group=None, owner=owner, node=None, rv=rv
            )
            arrived[f"{ns}/{owner}-{k % JOB_SIZE}"] = pod
            feeder.apply("Pod", pod)
        if c == 2 and profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        # (the plugins are made ahead, off the session's way, as the operator makes them after each session)
        ahead = make_plugins_ahead(config)
        if idle > 0:
            time.sleep(idle)  # the operator's session thread waits for the next pod
        port.first_bind = None
        wall, cpu = time.perf_counter(), time.process_time()
        report = run_cycle(feeder, config, port, now=1000.0 + c, plugins=ahead)
        first = port.first_bind
        to_bind, to_bind_cpu = (first[0] - wall, first[1] - cpu) if first is not None else (0.0, 0.0)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        confirm = {b.bind.pod: b.bind.node for b in report.binds if b.result == BOUND}
        if c < 2:
            continue
        run = state._builder.kept.get(KEPT)
        settled = len(run.jobs) if isinstance(run, Settled) else 0  # the jobs the opens and close skip
        row = {
            "cycle_cpu": cpu,
            "cycle_wall": wall,
            "to_bind": to_bind,  # from the cycle's start to its first bind handed to the port
            "to_bind_cpu": to_bind_cpu,  # the CPU time of that
            **report.result.timings,
            "bound": len(confirm),
            "settled": settled,
        }
        rows.append(row)
    if profiler is not None and profile:
        profiler.disable()
        profiler.dump_stats(profile)
    keys = list(rows[0])
    med = {k: statistics.median(r.get(k, 0.0) for r in rows) for k in keys}
    return {
        "nodes": nodes,
        "pods": pods,
        "cycles": cycles,
        "shape": shape,
        "stuck": stuck,
        "arriving": arriving,
        "cached": len(state.tasks),
        "jobs": len({t.job_key for t in state.tasks.values()}),
        "median": med,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--pods", type=int)
    parser.add_argument("--cycles", type=int, default=7)
    parser.add_argument("--profile", help="write a cProfile of the measured cycles here (one grid point)")
    parser.add_argument(
        "--config",
        help="scheduler config YAML (default: the built-in one); e.g. examples/reclaim-preempt-scheduler.yaml",
    )
    parser.add_argument(
        "--shape",
        choices=SHAPES,
        default="gangs",
        help="gangs: bound and arriving pods in gangs and Jobs (default); lone: single pods, no PodGroup, no owner",
    )
    parser.add_argument(
        "--stuck",
        type=int,
        nargs="?",
        const=1,
        default=0,
        help="one (or N) old pod(s), pending for good (no node matches its nodeSelector), first in the cache's order",
    )
    parser.add_argument(
        "--arriving",
        type=int,
        default=ARRIVING,
        help=f"pods arriving a cycle with --shape lone (default {ARRIVING}; 1: an arriving pod's session)",
    )
    parser.add_argument(
        "--idle",
        type=float,
        default=0.0,
        help="ms slept before each cycle, as the operator's session thread waits between arriving pods "
        "(20: the live session's cost, which back-to-back cycles do not show)",
    )
    parser.add_argument(
        "--source",
        type=Path,
        action="append",
        help="run each grid point from this checkout (its volsched first on the path); given twice or more, "
        "each in turn: a before/after in one invocation",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="with --source: rounds of every checkout, the order reversed every other round",
    )
    parser.add_argument("--json", action="store_true", help="one grid point, as JSON (used by the grid)")
    args = parser.parse_args()
    if (args.json or args.profile) and not (args.nodes and args.pods):
        parser.error("--profile and --json run one grid point: give --nodes and --pods too")
    if args.json or args.profile:
        print(
            json.dumps(
                one(
                    args.nodes,
                    args.pods,
                    args.cycles,
                    args.profile,
                    args.config,
                    args.shape,
                    stuck=args.stuck,
                    arriving=args.arriving,
                    idle=args.idle / 1000,
                )
            )
        )
        return
    grid = [(args.nodes, args.pods)] if args.nodes and args.pods else GRID
    sources = [src.resolve() for src in args.source or []]
    for src in sources:
        if not (src / "volsched" / "__init__.py").is_file():
            parser.error(f"--source {src}: no volsched package there")
    import numpy

    print(describe(f"numpy {numpy.__version__}"))
    for nodes, pods in grid:
        more = (
            ["--cycles", str(args.cycles), "--shape", args.shape]
            + (["--config", args.config] if args.config else [])
            + (["--stuck", str(args.stuck)] if args.stuck else [])
            + ["--arriving", str(args.arriving), "--idle", str(args.idle)]
        )
        point = ["--nodes", str(nodes), "--pods", str(pods), *more]
        if not sources:
            _say(in_fresh_process(__file__, *point), nodes, pods, "")
            continue
        for round_ in range(max(args.pairs, 1)):
            for src in sources if round_ % 2 == 0 else sources[::-1]:
                load = os.getloadavg()[0]
                label = f"round {round_ + 1} {_commit(src)} (load {load:.1f}): "
                _say(_in_checkout(src, point), nodes, pods, label)


def _commit(src: Path) -> str:
    """``src``'s commit (short), or its directory's name where it is not a git checkout."""
    out = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else src.name


def _in_checkout(src: Path, args: list[str]) -> Any:
    """One grid point (``--json``) in a new process whose ``volsched`` is ``src``'s."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    cmd = [sys.executable, os.path.abspath(__file__), "--json", *args]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=src, env=env)
    return json.loads(done.stdout)


def _say(r: dict[str, Any], nodes: int, pods: int, label: str) -> None:
    """A grid point's two lines (``label`` first)."""
    m = r["median"]
    stuck_note = f", {r['stuck']} stuck pod(s) first" if r["stuck"] else ""
    print(
        f"{label}{nodes:>6} nodes x {pods:>6} bound pods, shape {r['shape']}{stuck_note}, {r['jobs']} jobs (+{r['arriving']} "
        f"arriving a cycle, median of {r['cycles']} cycles): cycle {1000 * m['cycle_cpu']:.2f} ms cpu, {1000 * m['cycle_wall']:.2f} ms wall, "
        f"{1000 * m['to_bind']:.2f} ms ({1000 * m['to_bind_cpu']:.2f} ms cpu) to the first bind; "
        f"{m['bound']:.0f} bound a cycle, "
        f"{m['settled']:.0f} jobs in the settled run"
    )
    parts = [
        (k, v)
        for k, v in m.items()
        if k not in ("cycle_cpu", "cycle_wall", "to_bind", "to_bind_cpu", "bound", "settled", "session")
    ]
    parts.sort(key=lambda kv: -kv[1])
    print(
        "    session "
        + f"{1000 * m.get('session', 0.0):.2f} ms; "
        + ", ".join(f"{k} {1000 * v:.3f}" for k, v in parts if v >= 0.000005),
        flush=True,
    )


if __name__ == "__main__":
    main()
