"""The Lease write a session makes before its evictions (``LeaderLease.hand_over_now``, since 495867b),
timed from the client on a real apiserver: how long the session's thread waits before its first eviction
is sent.

Each write is what an evicting session's is: ``ensure()`` as the session begins (a renewal when due, on
a thread of its own), the writer's hand-over note changed, then ``hand_over_now()`` (one PUT of the Lease
as last written, over the direct path; it waits for a renewal running meanwhile). Rounds
alternate ``quiet`` (nothing else asked of the apiserver) and ``busy`` (Go's loadgen creating pods over
64 connections meanwhile, the apiserver's CPU taken by writes as in a Preemption window), in the order
Q B B Q ..., each on the same control plane. Reported per kind: the client's milliseconds (median, p90,
p99, max) and the apiserver's own per Lease PUT (its ``apiserver_request_duration_seconds``) over the
round.

    python bench/lease_handover.py [--writes 100] [--rounds 4] [--busy-pods 4000] [--json FILE]

Not a test: the figures go to docs/benchmarks with the load printed beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_perf import LEASE_PUT_KEY, apiserver_metrics, pod  # noqa: E402
from bind_throughput import (  # noqa: E402
    OPERATOR_NS,
    Conn,
    build_loadgen,
    kill_all,
    prepare_cluster,
    start_creation,
)
from bindstats import percentile  # noqa: E402
from machine import describe  # noqa: E402

from volsched.kube.lease import LeaderLease, LeaseSettings  # noqa: E402
from volsched_dev.devcluster import LocalControlPlane  # noqa: E402


def one_round(lease: LeaderLease, cp: LocalControlPlane, writes: int, tag: str) -> dict[str, Any]:
    """``writes`` hand-overs, each a changed note written at once; the client's seconds for each."""
    asked0, spent0 = apiserver_metrics(cp)
    took: list[float] = []
    failed = 0
    for i in range(writes):
        if not lease.ensure():  # as a session begins (a renewal when due, on a thread of its own)
            raise RuntimeError("the Lease was lost")
        lease.handover = json.dumps({"bench": tag, "i": i})  # as the writer's tally: a new note each time
        start = time.perf_counter()
        ok = lease.hand_over_now()
        took.append(time.perf_counter() - start)
        failed += not ok
        time.sleep(0.01)  # sessions are apart; back to back would measure a warm loop only
    asked, spent = apiserver_metrics(cp)
    puts = asked.get(LEASE_PUT_KEY, 0) - asked0.get(LEASE_PUT_KEY, 0)
    served = spent.get(LEASE_PUT_KEY, 0.0) - spent0.get(LEASE_PUT_KEY, 0.0)
    ms = [1000 * t for t in took]
    return {
        "writes": writes,
        "failed": failed,
        "client_ms": {
            "p50": percentile(ms, 50),
            "p90": percentile(ms, 90),
            "p99": percentile(ms, 99),
            "max": max(ms),
        },
        "lease_puts": puts,
        "apiserver_ms_per_put": 1000 * served / puts if puts else math.nan,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--writes", type=int, default=100, help="Lease writes a round")
    p.add_argument("--rounds", type=int, default=4, help="rounds, quiet and busy in turn (Q B B Q ...)")
    p.add_argument("--busy-pods", type=int, default=4000, help="pods loadgen creates in a busy round")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    args.loadgen = build_loadgen()
    if args.loadgen is None:
        p.error("no Go toolchain to build bench/loadgen with (the busy rounds' load)")
    args.creator, args.create_procs, args.create_conns = "go", 2, 32
    machine = describe()
    print("machine:", machine)
    kinds = [("quiet", "busy")[(r + 1) // 2 % 2] for r in range(args.rounds)]  # Q B B Q Q B ...
    rounds: list[dict[str, Any]] = []
    try:
        with (
            tempfile.TemporaryDirectory(prefix="volsched-lease-handover-") as tmp,
            LocalControlPlane(base_dir=Path(tmp), keep_dir=False) as cp,
            cp.api_client() as api,
        ):
            prepare_cluster(api)
            conn = Conn(cp.host, str(cp.ca_cert_path), cp.admin_token)
            lease = LeaderLease(api, LeaseSettings(namespace=OPERATOR_NS), "bench-lease-handover")
            if not lease.ensure():
                raise RuntimeError("the Lease was not acquired")
            for r, kind in enumerate(kinds):
                creation = None
                if kind == "busy":
                    bodies = [pod(f"r{r}-{i:06d}", "nobody") for i in range(args.busy_pods)]
                    workdir = Path(tmp) / f"round-{r}"
                    workdir.mkdir()
                    creation = start_creation(conn, "pod", bodies, args=args, workdir=workdir)
                    time.sleep(0.5)  # under way
                load = os.getloadavg()[0]
                got = one_round(lease, cp, args.writes, f"{r}")
                if creation is not None:
                    creation.wait()
                got.update(round=r, kind=kind, load_before=load, load_after=os.getloadavg()[0])
                rounds.append(got)
                c = got["client_ms"]
                print(
                    f"round {r} {kind:<5} writes {got['writes']} failed {got['failed']} client ms p50 "
                    f"{c['p50']:.2f} p90 {c['p90']:.2f} p99 {c['p99']:.2f} max {c['max']:.2f}; apiserver "
                    f"{got['apiserver_ms_per_put']:.2f} ms per Lease PUT ({got['lease_puts']}); load "
                    f"{load:.1f}-{got['load_after']:.1f}",
                    flush=True,
                )
            lease.stop_writing()
    finally:
        kill_all()
    print()
    for kind in ("quiet", "busy"):
        mine = [g for g in rounds if g["kind"] == kind]
        if mine:
            p50 = [g["client_ms"]["p50"] for g in mine]
            p99 = [g["client_ms"]["p99"] for g in mine]
            srv = [g["apiserver_ms_per_put"] for g in mine]
            print(
                f"{kind:<5} rounds {len(mine)}: client p50 median {statistics.median(p50):.2f} ms "
                f"({min(p50):.2f}-{max(p50):.2f}), p99 median {statistics.median(p99):.2f} "
                f"({min(p99):.2f}-{max(p99):.2f}); apiserver's own {statistics.median(srv):.2f} ms a PUT"
            )
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "rounds": rounds}, indent=1))
    return 0 if all(not g["failed"] for g in rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
