"""Do dashboard viewers slow scheduling? Bind latency with and without many clients polling /ui/state.json,
on a real kube-apiserver (hack/controlplane); prints figures, ratios and the machine.

One control plane, one operator (``volsched run``, ``--http-auth kubernetes`` where the checkout has it;
the viewers send a service account's token with the right to read the dashboard). Three phases one after
another, each in a namespace of its own: pods created at ``--rate`` pods/s, ``--pods`` of them, with

* quiet:   no viewer;
* viewers: ``--viewers`` clients, each from its own loopback address (127.0.0.2, .3, ...), polling
  /ui/state.json every ``--interval`` seconds (the page polls every 2 s), waiting out a 429's
  Retry-After as a client should; ``--interval 0`` asks as fast as answers come (a flood, which the
  rate limit answers with 429s but still costs the operator's event loop: the NetworkPolicy is the
  defence there);
* quiet again: the noise of the machine between two identical phases.

A pod's latency: the first watch event that shows its ``spec.nodeName`` less the first event of it (both
received by one watch in this process). Per phase: p50 and p95, the operator's CPU seconds
(/proc/<pid>/stat), the viewers' answers by status. Ratios: viewers / the mean of the quiet phases, and
quiet again / quiet (the noise). ``--source DIR`` runs the operator from another checkout (e.g. before
a change), to compare on the same machine in the same minutes. On a loaded machine the absolute figures
mean little; compare the ratios of one run.

    python bench/bench_dashboard_viewers.py [--viewers 16] [--pods 300] [--rate 20] [--source DIR]
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes import client, utils
from kubernetes import watch as _untyped_watch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import describe  # noqa: E402

from volsched_dev.devcluster import LocalControlPlane  # noqa: E402

_watch: Any = _untyped_watch  # untyped in the client
NS = "volsched-system"


def _cpu(pid: int) -> float:
    """utime + stime of ``pid`` in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


class Watcher(threading.Thread):
    """First event and first bound event of every pod of ``namespace``."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        super().__init__(daemon=True)
        self.core: Any = client.CoreV1Api(api)  # (given dicts: the client serialises them)
        self.namespace = namespace
        self.seen: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.watch = _watch.Watch()
        self.ready = threading.Event()

    def run(self) -> None:
        rv = self.core.list_namespaced_pod(self.namespace).metadata.resource_version
        self.ready.set()
        try:
            for ev in self.watch.stream(
                self.core.list_namespaced_pod, self.namespace, resource_version=rv, timeout_seconds=600
            ):
                now, pod = time.monotonic(), ev["object"]
                name = pod.metadata.name
                self.seen.setdefault(name, now)
                if pod.spec.node_name:
                    self.bound.setdefault(name, now)
        except Exception:  # stopped (the connection closed under it): what it saw stands
            pass


class Viewer(threading.Thread):
    """Polls /ui/state.json from source address ``source`` until ``stop`` is set."""

    def __init__(self, port: int, source: str, token: str, stop: threading.Event, interval: float) -> None:
        super().__init__(daemon=True)
        self.port, self.source, self.token, self.stop = port, source, token, stop
        self.interval = interval
        self.answers: Counter[int] = Counter()

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10, source_address=(self.source, 0))
        while not self.stop.is_set():
            try:
                conn.request("GET", "/ui/state.json", headers={"Authorization": f"Bearer {self.token}"})
                resp = conn.getresponse()
                resp.read()
                self.answers[resp.status] += 1
                wait = float(resp.getheader("Retry-After") or 0) if resp.status == 429 else self.interval
                if wait:
                    self.stop.wait(wait)
            except (OSError, http.client.HTTPException):
                self.answers[0] += 1
                conn.close()
                conn = http.client.HTTPConnection(
                    "127.0.0.1", self.port, timeout=10, source_address=(self.source, 0)
                )
                time.sleep(0.05)
        conn.close()


def phase(
    cp: LocalControlPlane, api: client.ApiClient, op: subprocess.Popen[bytes], port: int, *,
    name: str, viewers: int, token: str, args: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    core: Any = client.CoreV1Api(api)
    ns = f"bench-{name}"
    core.create_namespace({"metadata": {"name": ns}})
    watcher = Watcher(api, ns)
    watcher.start()
    watcher.ready.wait(30)
    stop = threading.Event()
    clients = [Viewer(port, f"127.0.0.{i + 2}", token, stop, args.interval) for i in range(viewers)]
    for c in clients:
        c.start()
    time.sleep(1.0 if viewers else 0.0)  # the viewers are polling before the first pod comes
    cpu0, t0 = _cpu(op.pid), time.monotonic()
    for i in range(args.pods):
        due = t0 + i / args.rate
        if (wait := due - time.monotonic()) > 0:
            time.sleep(wait)
        core.create_namespaced_pod(
            ns,
            {
                "metadata": {"name": f"p{i}"},
                "spec": {
                    "schedulerName": "volsched",
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "10m"}}}],
                },
            },
        )
    deadline = time.monotonic() + 120
    while len(watcher.bound) < args.pods and time.monotonic() < deadline:
        time.sleep(0.1)
    cpu = _cpu(op.pid) - cpu0
    stop.set()
    for c in clients:
        c.join(15)
    watcher.watch.stop()
    lat = [1000 * (watcher.bound[n] - watcher.seen[n]) for n in watcher.bound if n in watcher.seen]
    answers: Counter[int] = Counter()
    for c in clients:
        answers.update(c.answers)
    return {
        "phase": name, "viewers": viewers, "bound": len(lat), "p50": _pct(lat, 0.5), "p95": _pct(lat, 0.95),
        "cpu": cpu, "answers": dict(sorted(answers.items())), "load": os.getloadavg()[0],
    }  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--viewers", type=int, default=16)
    p.add_argument("--pods", type=int, default=300)
    p.add_argument("--rate", type=float, default=20.0, help="pods created per second")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between a viewer's polls (0: flood)")
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--source", type=Path, help="run the operator from this checkout")
    args = p.parse_args()
    source = args.source or ROOT
    print(describe())
    with tempfile.TemporaryDirectory() as tmp, LocalControlPlane() as cp:
        api = cp.api_client()
        core: Any = client.CoreV1Api(api)
        for path in sorted((ROOT / "crds").glob("*.yaml")):
            utils.create_from_yaml(api, str(path))  # type: ignore[no-untyped-call]
        time.sleep(3)  # the CRDs' endpoints come up
        core.create_namespace({"metadata": {"name": NS}})
        client.CustomObjectsApi(api).create_cluster_custom_object(
            "scheduling.volsched.io", "v1beta1", "queues",
            {"apiVersion": "scheduling.volsched.io/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
             "spec": {"weight": 1}},
        )  # fmt: skip
        for i in range(args.nodes):
            core.create_node(
                {
                    "metadata": {"name": f"n{i}"},
                    "status": {
                        "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"},
                        "capacity": {"cpu": "64", "memory": "256Gi", "pods": "500"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
        rbac: Any = client.RbacAuthorizationV1Api(api)
        rbac.create_cluster_role(
            {
                "metadata": {"name": "viewer"},
                "rules": [
                    {"nonResourceURLs": ["/ui"], "verbs": ["get"]},
                    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                ],
            }
        )
        rbac.create_cluster_role_binding(
            {
                "metadata": {"name": "viewer"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "viewer"},
                "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": NS}],
            }
        )
        token = cp.service_account_token(NS, "viewer")
        env = {**os.environ, "PYTHONPATH": str(source)}
        argv = [
            sys.executable, "-m", "volsched", "run", "--kubeconfig", str(cp.kubeconfig_path),
            "--namespace", NS, "--metrics-host", "127.0.0.1", "--metrics-port", "0",
        ]  # fmt: skip
        helptext = subprocess.run(
            [*argv[:4], "--help"], env=env, cwd=tmp, capture_output=True, text=True
        ).stdout
        if "--http-auth" in helptext:
            argv += ["--http-auth", "kubernetes"]
        log = Path(tmp) / "operator.log"
        with log.open("ab") as out:
            op = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp)
        try:
            port = 0
            deadline = time.monotonic() + 120
            while not port and time.monotonic() < deadline:
                for line in log.read_text(errors="replace").splitlines():
                    if "serving /healthz" in line:
                        port = int(line.split("127.0.0.1:")[1].split()[0].rstrip(","))
                time.sleep(0.2)
            # /ui is served once the cache is synced and aiohttp's server took the port over
            while "serving /healthz, /readyz, /metrics and /ui" not in log.read_text(errors="replace"):
                if op.poll() is not None:
                    raise SystemExit(f"the operator exited: {log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.2)
            rows = [
                phase(cp, api, op, port, name=name, viewers=v, token=token, args=args)
                for name, v in (("quiet", 0), ("viewers", args.viewers), ("quiet-again", 0))
            ]
        finally:
            op.terminate()
            op.wait(30)
    print(
        f"operator from {source}; {args.pods} pods at {args.rate}/s per phase; {args.nodes} nodes; "
        f"viewers poll every {args.interval}s"
    )
    print(
        f"{'phase':<12} {'viewers':>7} {'bound':>5} {'p50 ms':>8} {'p95 ms':>8} {'cpu s':>6}  load  answers"
    )
    for r in rows:
        print(
            f"{r['phase']:<12} {r['viewers']:>7} {r['bound']:>5} {r['p50']:>8.1f} {r['p95']:>8.1f} "
            f"{r['cpu']:>6.2f}  {r['load']:.1f}  {r['answers']}"
        )
    quiet = [r for r in rows if r["viewers"] == 0]
    loud = rows[1]
    for key in ("p50", "p95", "cpu"):
        base = statistics.mean(r[key] for r in quiet)
        print(
            f"{key}: viewers / quiet = {loud[key] / base:.2f}   "
            f"(noise: quiet-again / quiet = {quiet[1][key] / quiet[0][key]:.2f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
