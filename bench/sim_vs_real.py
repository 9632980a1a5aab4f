"""The simulator's time mode against the real thing: one seeded workload of batch/v1 Jobs (gangs of 1 to 3
pods of 1 cpu, two queues, arrivals over time, each pod running a few seconds) goes through the operator
on a real control plane (kube-controller-manager's Job controller, kwok nodes that run the pods) and
through ``volsched simulate``'s replay, and each queue's wait (a Job's first pod bound minus its
creation) is printed from both, with their p50 ratio. It also prints the real control plane's start-up
time and memory (kube-apiserver, etcd, kube-controller-manager, kwok).

    python bench/sim_vs_real.py [--jobs 120] [--seed 7] [--rate 1.0]

The real run takes about as long as the workload's arrivals plus its tail (a few minutes); the replay
takes seconds. On a loaded 2-core machine the operator's cycles stretch and the real waits with them:
the load is printed; compare ratios within one run. The replay's sessions run on the period's grid (a
job arriving between two ticks waits for the next), the operator's soon after a pod arrives: at light
load the simulator's waits are longer by about half a period."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, watch
from machine import describe

from volsched.framework.registry import load_config
from volsched.simulate import Document, Replay
from volsched_dev.devcluster import RUN_FOR, LocalControlPlane

ROOT = Path(__file__).resolve().parents[1]
NODES, NODE_CPU = 3, 4
QUEUES = ("qa", "qb")
NS = "bench"
PERIOD = 1.0


@dataclass(frozen=True)
class Planned:
    name: str
    at: float  # seconds after the start
    size: int
    queue: str
    seconds: int


def plan(jobs: int, seed: int, rate: float) -> list[Planned]:
    rng = random.Random(seed)
    out, at = [], 0.0
    for i in range(jobs):
        at += rng.expovariate(rate)
        out.append(
            Planned(
                f"j{i:03d}", round(at, 1), rng.choice((1, 1, 2, 3)), rng.choice(QUEUES), rng.randint(3, 10)
            )
        )
    return out


def job(p: Planned, *, created: str | None = None) -> dict[str, Any]:
    annotations = {
        "scheduling.volsched.io/min-member": str(p.size),
        "scheduling.volsched.io/queue-name": p.queue,
        RUN_FOR: f"{p.seconds}s",  # kwok runs the pod this long
        "simulate.volsched.io/duration": f"{p.seconds}s",  # and the replay's kubelet
    }
    meta: dict[str, Any] = {"name": p.name, "namespace": NS}
    if created:
        meta["creationTimestamp"] = created
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
        "spec": {"parallelism": p.size, "completions": p.size, "backoffLimit": 100, "template": {
            "metadata": {"annotations": annotations},
            "spec": {"schedulerName": "volsched", "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}},
    }  # fmt: skip


def queue_obj(name: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volsched.io/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1}}  # fmt: skip


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def real(planned: list[Planned], config_text: str) -> tuple[dict[str, list[float]], str]:
    """Each queue's waits on the real control plane, and a line on its start-up and memory."""
    from volsched.operator import Operator, Settings

    started = time.monotonic()
    with LocalControlPlane.real() as cp:
        up = time.monotonic() - started
        for i in range(NODES):
            cp.kwok_node(f"kwok-{i}", cpu=str(NODE_CPU))
        memory = ", ".join(f"{name} {_rss_mib(pid):.0f} MiB" for name, pid in cp.processes().items())
        with cp.api_client() as api:
            core, custom, batch = client.CoreV1Api(api), client.CustomObjectsApi(api), client.BatchV1Api(api)
            ext = client.ApiextensionsV1Api(api)
            for path in sorted((ROOT / "crds").glob("*.yaml")):
                ext.create_custom_resource_definition(yaml.safe_load(path.read_text()))
            while True:  # the CRDs serve a moment after they are made
                try:
                    custom.list_cluster_custom_object("scheduling.volsched.io", "v1beta1", "queues")
                    break
                except client.ApiException:
                    time.sleep(0.2)
            for ns in ("volsched-system", NS):
                core.create_namespace({"metadata": {"name": ns}})
            core.create_namespaced_config_map("volsched-system", {
                "metadata": {"name": "volsched-scheduler-config"}, "data": {"volsched-scheduler.conf": config_text}})  # fmt: skip
            for q in QUEUES:
                custom.create_cluster_custom_object(
                    "scheduling.volsched.io", "v1beta1", "queues", queue_obj(q)
                )
            settings = Settings(kubeconfig=str(cp.kubeconfig_path))
            settings.http.host, settings.http.port, settings.http.auth = "127.0.0.1", 0, "none"
            settings.session.period = PERIOD
            op = Operator(settings)
            loop, stop = asyncio.new_event_loop(), asyncio.Event()
            thread = threading.Thread(target=lambda: loop.run_until_complete(op.run(stop)), daemon=True)
            thread.start()
            bound: dict[str, float] = {}  # job -> when its first pod was seen bound
            created: dict[str, float] = {}
            w = watch.Watch()

            def follow() -> None:
                with contextlib.suppress(Exception):  # the stream ends when the run does
                    for event in w.stream(core.list_namespaced_pod, NS, timeout_seconds=3600):
                        pod = event["object"]
                        name = (pod.metadata.labels or {}).get("job-name")
                        if name and pod.spec.node_name and name not in bound:
                            bound[name] = time.monotonic()

            threading.Thread(target=follow, daemon=True).start()
            origin = time.monotonic()
            try:
                for p in planned:
                    time.sleep(max(0.0, origin + p.at - time.monotonic()))
                    created[p.name] = time.monotonic()
                    batch.create_namespaced_job(NS, job(p))
                while len(bound) < len(planned):
                    time.sleep(0.5)
                memory += "; at the end: " + ", ".join(
                    f"{name} {_rss_mib(pid):.0f} MiB" for name, pid in cp.processes().items()
                )
            finally:
                w.stop()
                loop.call_soon_threadsafe(stop.set)
                thread.join(timeout=30)
                loop.close()
    waits: dict[str, list[float]] = {}
    for p in planned:
        waits.setdefault(p.queue, []).append(bound[p.name] - created[p.name])
    return (
        waits,
        f"start-up {up:.1f} s (etcd, kube-apiserver, kube-controller-manager ready); memory: {memory}",
    )


def simulated(planned: list[Planned], config_text: str) -> dict[str, list[float]]:
    epoch = 1_800_000_000.0
    docs = [Document(f"node {i}", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"kwok-{i}"},
                                   "status": {"allocatable": {"cpu": str(NODE_CPU), "pods": "110"},
                                              "capacity": {"cpu": str(NODE_CPU), "pods": "110"}}})
            for i in range(NODES)]  # fmt: skip
    docs += [Document(f"queue {q}", queue_obj(q)) for q in QUEUES]
    for p in planned:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch + p.at)) + f".{int(p.at * 10) % 10}Z"
        docs.append(Document(p.name, job(p, created=stamp)))
    result = Replay(docs, load_config(text=config_text), period=PERIOD).run()
    return result.report()["waits"]["queues"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=120)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rate", type=float, default=1.0, help="arrivals a second (mean)")
    args = parser.parse_args()
    print(describe("kubernetes"))
    config_text = (ROOT / "examples" / "reclaim-preempt-scheduler.yaml").read_text()
    planned = plan(args.jobs, args.seed, args.rate)
    t = time.monotonic()
    sim = simulated(planned, config_text)
    print(f"replay: {time.monotonic() - t:.1f} s")
    t = time.monotonic()
    got, control_plane = real(planned, config_text)
    print(f"real run: {time.monotonic() - t:.1f} s; {control_plane}")
    print(f"load after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(
        f"{'queue':6} {'jobs':>5} {'real p50':>9} {'sim p50':>8} {'sim/real':>9} {'real p90':>9} {'sim p90':>8}"
    )
    for q in QUEUES:
        r, s = sorted(got.get(q, [])), sorted(sim.get(q, []))
        rp, sp = statistics.median(r), statistics.median(s)
        r90, s90 = r[int(0.9 * (len(r) - 1))], s[int(0.9 * (len(s) - 1))]
        ratio = sp / rp if rp > 0 else float("nan")
        print(f"{q:6} {len(r):5d} {rp:9.2f} {sp:8.2f} {ratio:9.2f} {r90:9.2f} {s90:8.2f}")


if __name__ == "__main__":
    main()
