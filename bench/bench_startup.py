"""Start-up to ready with a backlog on a real apiserver: ``volsched run`` started again and again on one
control plane holding N Ready nodes and M pending pods, timed from its start to ``/healthz`` answering
200 (cache synced), and the phases its log shows.

One local control plane (hack/controlplane), its objects created once (as ``bind_throughput.py`` does).
A Lease held by another identity (renewed by this script) keeps every volsched a follower: it lists,
watches and becomes ready, and binds nothing, so each run meets the same backlog. Several ``--source``
checkouts are run in turn (A B A B ...), so a before/after comparison meets the same machine state.

    python bench/bench_startup.py [--nodes 5000 --pods 50000] [--runs 3] [--source DIR ...]

The control plane runs at the nice of the measured runs (:data:`BENCH_NICE`, ``--cluster-nice``), every
thread of it, whatever nice the command that made it ran at: a cluster held by a command started at
``nice -n 10`` served both schedulers' listings at a lower priority than they ran at, and both were
slower to ready than on the same cluster at the runs' nice (the benchmarks doc's ninth pass on start-up).

Prints per run: seconds to ready, the CPU seconds of the process until then (with the processes it
forked; the process's own alone beside it), its peak RSS until then (with what it forked: their
pages shared with it counted again), the seconds from start to the log's first line (``serving
/healthz``: Python started, the modules imported, the operator built) and to its "cache synced" line
(the Lease, the config and the listing). ``--imports N`` then times the CPU of ``volsched run``'s imports
to ready in each source, N interpreters in turn: a change smaller than one start-up's variation on a
shared machine, hidden from the runs, shows there (pair by pair).
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bind_throughput import (  # noqa: E402
    OPERATOR_NS,
    ROOT,
    Conn,
    _commit,
    _http_ok,
    build_loadgen,
    create,
    exit_on_sigterm,
    kill_all,
    kill_tree,
    node_body,
    prepare_cluster,
    spawn,
    start_kube_scheduler,
    volsched_env,
)
from bindstats import TreeUsage  # noqa: E402
from builders import pod_body  # noqa: E402
from machine import describe, load_average  # noqa: E402

from volsched_dev.devcluster import LocalControlPlane  # noqa: E402

#: The nice the measured runs take (the benchmark lock's ``flock ... nice -n 5``): the control plane is put
#: at it too, so that the apiserver serving the listings has the priority of the schedulers it serves.
BENCH_NICE = 5

LEASE = "volsched-scheduler"  # volsched run's default --lease-name
HOLDER = "bench-startup-holder"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def hold_lease(api: object, stop: threading.Event) -> None:
    """Keep the scheduler's Lease held by :data:`HOLDER` (a follower never binds)."""
    from kubernetes import client

    coord = client.CoordinationV1Api(api)
    body: dict[str, Any] = {
        "metadata": {"name": LEASE, "namespace": OPERATOR_NS},
        "spec": {"holderIdentity": HOLDER, "leaseDurationSeconds": 3600, "renewTime": _now()},
    }
    try:
        coord.create_namespaced_lease(OPERATOR_NS, body)  # type: ignore[arg-type]  # (a dict: the client serialises it)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
        coord.patch_namespaced_lease(LEASE, OPERATOR_NS, {"spec": body["spec"]})
    while not stop.wait(30):
        coord.patch_namespaced_lease(LEASE, OPERATOR_NS, {"spec": {"renewTime": _now()}})


def set_nice(pid: int, nice: int) -> int:
    """Every thread of process ``pid`` at ``nice``; returns how many. On Linux a nice is a thread's own
    (``renice -p PID`` and ``os.setpriority`` on the pid change the main thread only), and a Go binary's
    threads, made at its start, keep the nice they were made with; threads made later take it from the
    thread that makes them. Lowering a nice needs the right to (root here); a thread gone meanwhile is
    passed over."""
    done = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.setpriority(os.PRIO_PROCESS, int(task.name), nice)
        except ProcessLookupError:
            continue
        done += 1
    return done


def nice_control_plane(processes: dict[str, int], nice: int) -> None:
    """The control plane's components (``LocalControlPlane.processes()``) at ``nice``, said on the output."""
    for name, pid in sorted(processes.items()):
        before = os.getpriority(os.PRIO_PROCESS, pid)
        try:
            threads = set_nice(pid, nice)
        except PermissionError:
            print(
                f"{name}: left at nice {before} (not allowed to set {nice}): compare within one cluster only"
            )
            continue
        print(f"{name}: nice {before} -> {nice} ({threads} threads)")


#: One run's figures: seconds to ready, CPU seconds (the process and what it forked), peak RSS (bytes),
#: seconds to the log's "cache synced" line and to its first line (NaN for kube-scheduler), and the CPU
#: seconds of the process alone (its threads, one interpreter's).
Figures = tuple[float, float, int, float, float, float]


def _stamp(line: str, start: float) -> float:
    return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp() - start


def one_run(kubeconfig: Path, source: Path, log: Path) -> Figures:
    argv = [
        sys.executable, "-m", "volsched", "run",
        "--kubeconfig", str(kubeconfig),
        "--namespace", OPERATOR_NS,
        "--metrics-host", "127.0.0.1",
        "--metrics-port", "0",
    ]  # fmt: skip
    env = volsched_env(source)
    start = time.time()
    proc = spawn(argv, log, env=env, cwd=source)
    usage = TreeUsage(proc.pid)
    port = 0
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"volsched exited with {proc.returncode}; log: {log}")
            usage.sample()
            if not port:
                m = re.search(r"serving /healthz.* on [\d.]+:(\d+)", log.read_text(errors="replace"))
                port = int(m.group(1)) if m else 0
            if port and _http_ok(f"http://127.0.0.1:{port}/healthz"):
                ready = time.time() - start
                usage.sample()
                break
            if time.time() - start > 300:
                raise RuntimeError(f"not ready after 300 s; log: {log}")
            time.sleep(0.02)
    finally:
        kill_tree(proc)
    synced = serving = math.nan
    for line in log.read_text(errors="replace").splitlines():
        if "cache synced" in line:
            synced = _stamp(line, start)
        elif "serving /healthz" in line and math.isnan(serving):
            serving = _stamp(line, start)
    return ready, usage.cpu_seconds, usage.peak_rss, synced, serving, usage.cpu.get(proc.pid, math.nan)


def kube_run(cp: LocalControlPlane | SimpleNamespace, log: Path, workdir: Path) -> Figures:
    """kube-scheduler (hack/controlplane's, bind_throughput's configuration) on the same cluster, timed
    from its start to ``/readyz`` answering 200 (its informers synced). It schedules only pods naming
    it: none here."""
    start = time.time()
    sched = start_kube_scheduler(cp, log, workdir)  # type: ignore[arg-type]  # a held cluster's: its binary, kubeconfig
    usage = TreeUsage(sched.proc.pid)
    try:
        while not sched.ready():
            usage.sample()
            if sched.proc.poll() is not None or time.time() - start > 300:
                raise RuntimeError(f"kube-scheduler not ready; log: {log}")
            time.sleep(0.02)
        ready = time.time() - start
        usage.sample()
    finally:
        kill_tree(sched.proc)
    return (
        ready,
        usage.cpu_seconds,
        usage.peak_rss,
        math.nan,
        math.nan,
        usage.cpu.get(sched.proc.pid, math.nan),
    )


def compare(
    kubeconfig: Path,
    sources: list[Path],
    *,
    runs: int,
    workdir: Path,
    kube: Callable[[Path], Figures] | None = None,
) -> None:
    """``runs`` runs of each source, in turn (A B A B ...), and of kube-scheduler after them with ``kube``."""
    workdir.mkdir(parents=True, exist_ok=True)
    figures: dict[Path, list[Figures]] = {s: [] for s in sources}
    order: list[Path | None] = [*sources, *([None] if kube is not None else [])]
    if kube is not None:
        figures[Path("kube-scheduler")] = []
    print(f"runs at nice {os.getpriority(os.PRIO_PROCESS, 0)}")
    for i in range(runs):
        print(f"round {i + 1}: load {load_average()}", flush=True)
        for n, source in enumerate(order):
            if source is None:
                assert kube is not None
                f = kube(workdir / f"kube-scheduler-{i}.log")
                figures[Path("kube-scheduler")].append(f)
                print(
                    f"  kube-scheduler: ready {f[0]:.2f}s, cpu {f[1]:.2f}s, peak rss {f[2] / 2**20:.0f} MiB"
                )
                continue
            f = one_run(kubeconfig, source, workdir / f"volsched-{time.strftime('%H%M%S')}-{n}-{i}.log")
            figures[source].append(f)
            print(
                f"  {source} ({_commit(source)}): ready {f[0]:.2f}s, cpu {f[1]:.2f}s (its own {f[5]:.2f}s), "
                f"peak rss {f[2] / 2**20:.0f} MiB, first line at {f[4]:.2f}s, synced at {f[3]:.2f}s",
                flush=True,
            )
    print(f"after the rounds: load {load_average()}")
    for source, results in figures.items():
        print(
            f"{source}: ready median {statistics.median(r[0] for r in results):.2f}s "
            f"(min {min(r[0] for r in results):.2f}), cpu median "
            f"{statistics.median(r[1] for r in results):.2f}s (its own {statistics.median(r[5] for r in results):.2f}s)"
        )
    kube_figures = figures.get(Path("kube-scheduler"))
    for source in sources if kube_figures else ():
        assert kube_figures is not None
        for what, i in (("ready", 0), ("cpu", 1)):
            ratios = [a[i] / b[i] for a, b in zip(figures[source], kube_figures, strict=False) if b[i] > 0]
            if ratios:
                print(
                    f"{source}: {what} / kube-scheduler's, per round: median {statistics.median(ratios):.2f} "
                    f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})"
                )


#: ``--pods-shape``: the pods of one template alike to the byte (as ``pod_body`` makes them); with a service
#: account's token volume each, as the ServiceAccount admission adds it (named at random in each pod: no two
#: specs the same JSON, the usual shape on a real cluster); and those bound to a node each (``nodeName`` at
#: creation; no kubelet, so Pending), as the pods already on nodes when a scheduler starts.
SHAPES = ("template", "token", "token-bound")


def shaped(body: dict[str, Any], i: int, args: argparse.Namespace) -> dict[str, Any]:
    """Pod ``i``'s body in the shape ``args.pods_shape`` says (see :data:`SHAPES`)."""
    if args.pods_shape == "template":
        return body
    spec = body["spec"]
    spec["serviceAccountName"] = "default"  # (the apiserver refuses a token volume without one)
    volume = f"kube-api-access-{random.Random(i).randrange(16**5):05x}"
    spec["volumes"] = [
        {
            "name": volume,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                }
                            ]
                        }
                    },
                ],
            },
        }
    ]
    for c in spec["containers"]:
        c["volumeMounts"] = [
            {"name": volume, "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        ]
    if args.pods_shape == "token-bound":
        spec["nodeName"] = f"node-{i % args.nodes:05d}"
    return body


#: What ``--imports`` times in a fresh interpreter of each source: ``volsched run``'s imports to ready
#: (:func:`volsched.cli._run`'s, the collector paused from the start as there), in the thread's CPU.
IMPORTS = (
    "import time; t = time.thread_time(); "
    "from volsched.gcpause import pause_from_start; pause_from_start(); "
    "import volsched.cli, volsched.kube.early, volsched.operator; "
    "print(time.thread_time() - t)"
)


def imports_cpu(sources: list[Path], pairs: int) -> None:
    """The CPU of ``volsched run``'s imports to ready, one interpreter each, the sources in turn ``pairs``
    times: a change smaller than what one start-up varies by on a shared machine shows here."""
    seconds: dict[Path, list[float]] = {s: [] for s in sources}
    envs = {s: volsched_env(s) for s in sources}
    for _ in range(pairs):
        for source in sources:
            done = subprocess.run(
                [sys.executable, "-c", IMPORTS], env=envs[source], cwd=source, capture_output=True,
                text=True, check=True,
            )  # fmt: skip
            seconds[source].append(float(done.stdout))
    first = seconds[sources[0]]
    for source, values in seconds.items():
        line = (
            f"{source}: imports to ready, CPU ms: least {1000 * min(values):.0f}, "
            f"median {1000 * statistics.median(values):.0f} ({pairs} runs)"
        )
        if source != sources[0]:
            diffs = [b - a for a, b in zip(first, values, strict=True)]
            lower = sum(d < 0 for d in diffs)
            line += (
                f"; against {sources[0].name}: median of the pairs {1000 * statistics.median(diffs):+.1f} ms, "
                f"lower in {lower} of {pairs}"
            )
        print(line)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=50000)
    p.add_argument("--runs", type=int, default=3, help="runs of each source")
    p.add_argument(
        "--pods-shape",
        choices=SHAPES,
        default=SHAPES[0],
        help="the pods alike to the byte (default); with a token volume each, named at random; and bound",
    )
    p.add_argument("--source", type=Path, action="append", help="a checkout to run (default: this one)")
    p.add_argument("--workdir", type=Path, default=None, help="where the control plane and logs go")
    p.add_argument(
        "--kubeconfig", type=Path, help="a cluster made by --hold (objects and Lease there already)"
    )
    p.add_argument(
        "--hold", action="store_true", help="create the cluster, then hold it (and the Lease) until killed"
    )
    p.add_argument(
        "--cluster-nice",
        type=int,
        default=BENCH_NICE,
        help=f"the nice of every thread of the control plane (default {BENCH_NICE}, the measured runs')",
    )
    p.add_argument(
        "--kube-scheduler",
        action="store_true",
        help="time kube-scheduler to ready too, after each round (with --kubeconfig: the held cluster's)",
    )
    p.add_argument(
        "--imports",
        type=int,
        default=0,
        metavar="N",
        help="then time volsched run's imports to ready in each source, N runs in turn (the CPU, in process)",
    )
    args = p.parse_args(argv)
    exit_on_sigterm()  # a held cluster killed by its pid stops its control plane too
    sources = [s.resolve() for s in args.source or [ROOT]]
    args.loadgen = build_loadgen()
    args.creator = "go" if args.loadgen else "python"
    args.create_procs, args.create_conns = 2, 32
    print("machine:", describe())
    workdir = args.workdir or Path(f"/tmp/bench-startup-{time.strftime('%H%M%S')}")
    workdir.mkdir(parents=True, exist_ok=True)
    if args.kubeconfig is not None:
        kube = None
        if args.kube_scheduler:  # on the held cluster: its binaries, its kubeconfig
            from volsched_dev.devcluster import ensure_binaries

            held = SimpleNamespace(
                scheduler_binary=ensure_binaries() / "kube-scheduler", kubeconfig_path=args.kubeconfig
            )
            kube = lambda log: kube_run(held, log, workdir)  # noqa: E731
        compare(args.kubeconfig, sources, runs=args.runs, workdir=workdir, kube=kube)
        if args.imports:
            imports_cpu(sources, args.imports)
        print("machine:", describe())
        return 0
    stop = threading.Event()
    try:
        with LocalControlPlane(base_dir=workdir) as cp:
            conn = Conn(cp.host, str(cp.ca_cert_path), cp.admin_token)
            with cp.api_client() as api:
                prepare_cluster(api)
                per_node = math.ceil(args.pods / args.nodes)
                t = time.monotonic()
                create(conn, "node", [node_body(f"node-{i:05d}", per_node) for i in range(args.nodes)],
                       args=args, workdir=workdir)  # fmt: skip
                pods = [shaped(pod_body(f"pod-{i:06d}", "volsched"), i, args) for i in range(args.pods)]
                create(conn, "pod", pods, args=args, workdir=workdir)
                print(f"{args.nodes} nodes x {args.pods} pods created in {time.monotonic() - t:.1f}s")
                holder = threading.Thread(target=hold_lease, args=(api, stop), daemon=True)
                holder.start()
                try:
                    time.sleep(1)
                    nice_control_plane(cp.processes(), args.cluster_nice)  # the objects made at the caller's
                    if args.hold:
                        print(f"holding; kubeconfig: {cp.kubeconfig_path}", flush=True)
                        while True:  # until SIGINT or SIGTERM (a sleep, not an untimed wait, ends then)
                            time.sleep(3600)
                    compare(
                        cp.kubeconfig_path,
                        sources,
                        runs=args.runs,
                        workdir=workdir,
                        kube=(lambda log: kube_run(cp, log, workdir)) if args.kube_scheduler else None,
                    )
                    if args.imports:
                        imports_cpu(sources, args.imports)
                        print("machine:", describe())
                finally:  # the Lease's holder stops before the control plane does (a renewal then failed)
                    stop.set()
                    holder.join(timeout=30)
    finally:
        stop.set()
        kill_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
