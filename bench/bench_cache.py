"""Benchmark: the scheduler cache (``volsched.cache``) on synthetic clusters, without the engine.

Feeds N nodes and M pods (70% bound and running across the nodes, the rest pending in gangs of 8 with a
PodGroup each; a third name a PriorityClass) through a :class:`Feeder`, then prints:

* ``apply``: ms per pod to parse it into the cache (the watch-event path);
* ``snapshot``: a session's snapshot after a quiet period, and after 1% of the pods changed (both are
  what the session loop sees; the second is the steady state under a watch stream), and how long it
  held the lock the watch handlers need;
* ``assume``: µs per assumed bind (a session's binds marked in the cache);
* ``priorityclass``: one PriorityClass event (its pods' priorities re-resolved);
* ``memory``: what the cache keeps per pod beyond the raw objects (tracemalloc), and peak RSS.

Times are the process's CPU time (``time.process_time``: the work itself, not the wait for the shared
machine's cores; all of it runs on one thread), except the lock, which is wall time. Each grid point runs
in a fresh process (its own RSS). The machine is shared: compare figures of one run.

    python bench/bench_cache.py                        # 1,000 x 10,000 and 5,000 x 50,000
    python bench/bench_cache.py --nodes 1000 --pods 10000
"""

from __future__ import annotations

import argparse
import json
import resource
import time
import tracemalloc
from typing import Any

from builders import raw_node, raw_pod, raw_podgroup
from machine import describe, in_fresh_process

GRID = [(1_000, 10_000), (5_000, 50_000)]


def cache_pod(i: int, *, nodes: int, rv: int, bound: bool) -> dict[str, Any]:
    """Pod ``p-<i>`` of gang ``g<i // 8>`` (its PodGroup named while pending), owned by a Job, every third
    of priority class ``batch``, with a toleration, bound when ``bound``."""
    gang = f"g{i // 8}"
    return raw_pod(
        f"p-{i:06d}",
        namespace=f"ns{(i // 8) % 16}",
        uid=f"uid-{i:06d}",
        rv=rv,
        labels={"app": gang, "pod-template-hash": "abc123"},
        group=None if bound else gang,
        owner=gang,
        owner_uid="u",
        node=f"node-{i % nodes:05d}" if bound else None,
        tolerations=[{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
        priority_class="batch" if i % 3 == 0 else None,
    )


def one(nodes: int, pods: int) -> dict[str, Any]:
    from volsched.cache.feeder import Feeder
    from volsched.cache.state import ClusterState

    bound = int(pods * 0.7)
    node_objs = [raw_node(i, resource_version=str(i + 1)) for i in range(nodes)]
    pod_objs = [cache_pod(i, nodes=nodes, rv=10_000_000 + i, bound=i < bound) for i in range(pods)]
    groups = sorted(
        {
            (p["metadata"]["namespace"], p["metadata"]["annotations"].get("scheduling.k8s.io/group-name"))
            for p in pod_objs[bound:]
        }
    )
    pg_objs = [raw_podgroup(name, namespace=ns, min_member=1) for ns, name in groups if name]
    pc = {"kind": "PriorityClass", "metadata": {"name": "batch", "resourceVersion": "7"}, "value": 100}
    state = ClusterState()
    feeder = Feeder(state)
    out: dict[str, Any] = {"nodes": nodes, "pods": pods}

    tracemalloc.start()  # (it slows parsing: apply figures are only comparable with each other)
    before = tracemalloc.get_traced_memory()[0]
    feeder.apply("PriorityClass", pc)
    for n in node_objs:
        feeder.apply("Node", n)
    for pg in pg_objs:
        feeder.apply("PodGroup", pg)
    started = time.process_time()
    for p in pod_objs:
        feeder.apply("Pod", p)
    out["apply_ms_per_pod"] = 1000 * (time.process_time() - started) / pods
    out["cache_bytes_per_pod"] = (tracemalloc.get_traced_memory()[0] - before) / pods
    tracemalloc.stop()

    def timed_snapshot(now: float) -> tuple[float, int]:
        t = time.process_time()
        snap = state.snapshot(now=now)
        return time.process_time() - t, len(snap.jobs)

    timed_snapshot(1.0)  # the first one builds everything
    quiet = [timed_snapshot(2.0 + k)[0] for k in range(3)]
    out["snapshot_quiet_ms"] = 1000 * min(quiet)
    churn = []
    step = 100
    for k in range(3):
        for i in range(k, pods, step):  # 1% of the pods change (a status update each)
            p = pod_objs[i]
            p["metadata"]["resourceVersion"] = str(int(p["metadata"]["resourceVersion"]) + 1_000_000)
            feeder.apply("Pod", p)
        churn.append(timed_snapshot(10.0 + k)[0])
    out["snapshot_1pct_ms"] = 1000 * min(churn)
    held = getattr(state, "lock_held", None)
    if held is not None:
        out["snapshot_lock_ms"] = 1000 * held

    pending = [p for p in pod_objs[bound:]][:1000]
    started = time.process_time()
    for k, p in enumerate(pending):
        m = p["metadata"]
        feeder.assume(f"{m['namespace']}/{m['name']}", m["uid"], f"node-{k % nodes:05d}")
    out["assume_us"] = 1e6 * (time.process_time() - started) / len(pending)
    timed_snapshot(20.0)

    started = time.process_time()
    feeder.apply("PriorityClass", {**pc, "metadata": {"name": "batch", "resourceVersion": "8"}, "value": 200})
    out["priorityclass_ms"] = 1000 * (time.process_time() - started)
    out["snapshot_after_pc_ms"] = 1000 * timed_snapshot(21.0)[0]
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--pods", type=int)
    parser.add_argument("--json", action="store_true", help="one grid point, as JSON (used by the grid)")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(one(args.nodes, args.pods)))
        return
    grid = [(args.nodes, args.pods)] if args.nodes and args.pods else GRID
    import numpy

    print(describe(f"numpy {numpy.__version__}"))
    for nodes, pods in grid:
        r = in_fresh_process(__file__, "--nodes", str(nodes), "--pods", str(pods))
        print(
            f"{nodes:>6} nodes x {pods:>6} pods: apply {r['apply_ms_per_pod']:.3f} ms/pod, "
            f"cache {r['cache_bytes_per_pod'] / 1024:.1f} KiB/pod; snapshot quiet {r['snapshot_quiet_ms']:.0f} ms, "
            f"after 1% changed {r['snapshot_1pct_ms']:.0f} ms"
            + (f" (lock held {r['snapshot_lock_ms']:.1f} ms)" if "snapshot_lock_ms" in r else "")
            + f"; assume {r['assume_us']:.0f} us/pod; PriorityClass event {r['priorityclass_ms']:.0f} ms "
            f"(next snapshot {r['snapshot_after_pc_ms']:.0f} ms); peak RSS {r['peak_rss_mib']:.0f} MiB",
            flush=True,
        )


if __name__ == "__main__":
    main()
