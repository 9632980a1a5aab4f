"""Recovery times of the operator on a real kube-apiserver (hack/controlplane): prints figures and the machine.

* start:     ``volsched run`` started -> a pending pod bound (time to first bind after start)
* restart:   kube-apiserver back (ready) after an outage of ``--outage`` s -> a pod created then is bound
* sigterm:   SIGTERM to the leader -> a pod created then is bound by the follower
* kill -9:   SIGKILL to the leader -> a pod created then is bound by the follower

Each figure is the median of ``--runs`` runs (with min and max), measured by polling the API every 20 ms.
``--source DIR`` runs the operator from another checkout (e.g. before a change) for a comparison made
on the same machine in the same minutes; figures taken while other work runs on the machine are noisy.

    python bench/bench_recovery.py [--runs 3] [--period 1] [--lease-duration 15] [--outage 10] [--source DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kubernetes import client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import describe  # noqa: E402

from volsched_dev.devcluster import LocalControlPlane  # noqa: E402

NS = "volsched-system"


def _poll(cond: Callable[[], Any], timeout: float = 120.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if cond():
                return time.monotonic()
        time.sleep(0.02)
    raise TimeoutError("condition not met")


class Bench:
    def __init__(self, cp: LocalControlPlane, args: argparse.Namespace, workdir: Path) -> None:
        self.cp, self.args, self.workdir = cp, args, workdir
        self.api = cp.api_client()
        self.core: Any = client.CoreV1Api(self.api)  # (given dicts: the client serialises them)
        self.n = 0
        self.started = 0
        self.logs: dict[int, Path] = {}

    def operator(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PYTHONPATH": str(self.args.source or ROOT)}
        argv = [
            sys.executable, "-m", "volsched", "run", "--kubeconfig", str(self.cp.kubeconfig_path),
            "--namespace", NS, "--period", str(self.args.period),
            "--lease-duration", str(self.args.lease_duration), "--metrics-port", "0",
            "--metrics-host", "127.0.0.1",
        ]  # fmt: skip
        self.started += 1
        path = self.workdir / f"operator-{self.started}.log"
        with path.open("ab") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir)
        self.logs[proc.pid] = path
        return proc

    def synced(self, proc: subprocess.Popen[bytes]) -> float:
        """When the operator has listed the cluster (its session loop starts right after)."""
        return _poll(lambda: "cache synced" in self.logs[proc.pid].read_text(errors="replace"))

    def pod(self) -> str:
        self.n += 1
        name = f"p{self.n}"
        self.core.create_namespaced_pod(
            "default",
            {
                "metadata": {"name": name},
                "spec": {
                    "schedulerName": "volsched",
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "10m"}}}],
                },
            },
        )
        return name

    def bound(self, name: str) -> float:
        return _poll(lambda: self.core.read_namespaced_pod(name, "default").spec.node_name)

    def holder(self) -> str:
        lease = client.CoordinationV1Api(self.api).read_namespaced_lease("volsched-scheduler", NS)
        return str((lease.spec and lease.spec.holder_identity) or "")

    @contextlib.contextmanager
    def running(self, count: int = 1) -> Iterator[list[subprocess.Popen[bytes]]]:
        procs: list[subprocess.Popen[bytes]] = []
        try:
            for _ in range(count):
                procs.append(self.operator())
                if len(procs) == 1:
                    self.bound(self.pod())  # the first one leads
            for p in procs:
                self.synced(p)
            time.sleep(1)  # followers are reading the lease
            yield procs
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    # --- the scenarios ---------------------------------------------------------------------------------

    def start(self) -> float:
        name = self.pod()
        t0 = time.monotonic()
        proc = self.operator()
        try:
            return self.bound(name) - t0
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)

    def restart(self) -> float:
        with self.running():
            self.cp.stop_apiserver()
            time.sleep(self.args.outage)
            self.cp.start_apiserver()
            t0 = time.monotonic()
            name = self.pod()
            return self.bound(name) - t0

    def takeover(self, sig: int) -> float:
        with self.running(2) as (leader, _follower):
            leader.send_signal(sig)
            t0 = time.monotonic()
            name = self.pod()
            took = self.bound(name) - t0
            leader.wait(30)
            return took


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--period", type=float, default=1.0)
    p.add_argument("--lease-duration", type=float, default=15.0)
    p.add_argument("--outage", type=float, default=10.0, help="seconds the apiserver is down")
    p.add_argument("--source", type=Path, help="run the operator from this checkout instead")
    p.add_argument("--only", nargs="*", default=["start", "restart", "sigterm", "kill9"])
    args = p.parse_args()
    print("machine:", describe())
    print(
        f"operator from {args.source or ROOT}; session period {args.period}s, "
        f"lease {args.lease_duration}s; apiserver outage {args.outage}s; median of {args.runs} (min-max)"
    )
    with tempfile.TemporaryDirectory() as tmp, LocalControlPlane() as cp:
        with cp.api_client() as api:
            core: Any = client.CoreV1Api(api)
            core.create_namespace({"metadata": {"name": NS}})
            for path in sorted((ROOT / "crds").glob("*.yaml")):
                from kubernetes import utils

                utils.create_from_yaml(api, str(path))  # type: ignore[no-untyped-call]
            core.create_node(
                {
                    "metadata": {"name": "n1"},
                    "status": {
                        "capacity": {"cpu": "64", "memory": "64Gi", "pods": "500"},
                        "allocatable": {"cpu": "64", "memory": "64Gi", "pods": "500"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
            time.sleep(2)  # CRDs established
        bench = Bench(cp, args, Path(tmp))
        scenarios: dict[str, Callable[[], float]] = {
            "start": bench.start,
            "restart": bench.restart,
            "sigterm": lambda: bench.takeover(signal.SIGTERM),
            "kill9": lambda: bench.takeover(signal.SIGKILL),
        }
        labels = {
            "start": "operator start -> first bind",
            "restart": "apiserver back -> new pod bound",
            "sigterm": "SIGTERM to leader -> follower binds",
            "kill9": "kill -9 of leader -> follower binds",
        }
        for key in args.only:
            times = [scenarios[key]() for _ in range(args.runs)]
            print(
                f"{labels[key]:<40} {statistics.median(times):6.2f} s  ({min(times):.2f}-{max(times):.2f})",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
