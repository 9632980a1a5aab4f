"""What the volume binder's wait costs while claims provision: ``--pods`` pods, each with a claim of its own of
a WaitForFirstConsumer class whose provisioner never answers, on a real kube-apiserver (hack/controlplane).
Once every claim has its selected node (every commit waits), for ``--window`` seconds (within the
``--timeout`` the operator waits): the apiserver's GETs of claims and of pods per second (its
``apiserver_request_total``, whoever asked: the bench itself only lists), the operator's threads (most seen)
and its CPU per second.

Then (kube-controller-manager's PersistentVolume controller running) the bench plays the provisioner: it
makes every claim's volume on its selected node, and measures each pod's time from its volume made to the
pod bound (p50, p90, most): how soon the wait sees its claims bound.

``--source DIR`` runs the operator from another checkout (e.g. before a change) for a comparison made on the
same machine in the same minutes.

    python bench/volume_wait.py [--pods 100] [--timeout 60] [--window 20] [--source DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import client, utils

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import describe  # noqa: E402

from volsched_dev.devcluster import LocalControlPlane  # noqa: E402

NS = "volsched-system"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
_METRIC = re.compile(r"^apiserver_request_total\{([^}]*)\} (\S+)$")


def requests(api: client.ApiClient) -> dict[tuple[str, str], float]:
    """(verb, resource) -> requests on one object (scope resource, no subresource), from /metrics."""
    method, url, headers, _body, _post = api.param_serialize("GET", "/metrics", auth_settings=["BearerToken"])
    resp = api.call_api(method, url, headers)
    resp.read()  # type: ignore[no-untyped-call]
    out: dict[tuple[str, str], float] = {}
    for line in (resp.data or b"").decode().splitlines():
        m = _METRIC.match(line)
        if m is None:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if labels.get("scope") == "resource" and not labels.get("subresource"):
            key = (labels.get("verb", ""), labels.get("resource", ""))
            out[key] = out.get(key, 0.0) + float(m.group(2))
    return out


def proc_figures(pid: int) -> tuple[int, float]:
    """(threads, CPU seconds) of process ``pid``."""
    status = Path(f"/proc/{pid}/status").read_text()
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return threads, (int(fields[11]) + int(fields[12])) / ticks


def setup(api: client.ApiClient, pods: int) -> None:
    core: Any = client.CoreV1Api(api)  # (given dicts: the client serialises them)
    core.create_namespace({"metadata": {"name": NS}})
    for path in sorted((ROOT / "crds").glob("*.yaml")):
        utils.create_from_yaml(api, str(path))  # type: ignore[no-untyped-call]
    for i in range((pods + 99) // 100):
        core.create_node(
            {
                "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
                "status": {
                    "capacity": {"cpu": "64", "memory": "64Gi", "pods": "110"},
                    "allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    storage: Any = client.StorageV1Api(api)
    storage.create_storage_class(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "never"},
            "provisioner": "csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    for i in range(pods):
        core.create_namespaced_persistent_volume_claim(
            "default",
            {
                "metadata": {"name": f"c{i}"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": "never",
                },
            },
        )
        pod: dict[str, Any] = {
            "metadata": {"name": f"p{i}"},
            "spec": {
                "schedulerName": "volsched",
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"c{i}"}}],
            },
        }
        core.create_namespaced_pod("default", pod)


def provision(api: client.ApiClient, pods: int, timeout: float) -> list[float]:
    """Make each claim's volume where it was asked for; each pod's seconds from its volume made to bound
    (seen by a list of the pods every 50 ms, from before the first volume is made)."""
    core: Any = client.CoreV1Api(api)
    made: dict[str, float] = {}
    bound: dict[str, float] = {}
    deadline = time.monotonic() + timeout

    def watch_bound() -> None:
        while len(bound) < pods and time.monotonic() < deadline:
            now = time.monotonic()
            for p in core.list_namespaced_pod("default").items:
                if p.spec.node_name and p.metadata.name not in bound:
                    bound[p.metadata.name] = now
            time.sleep(0.05)

    watcher = threading.Thread(target=watch_bound)
    watcher.start()
    for c in core.list_namespaced_persistent_volume_claim("default").items:
        node = (c.metadata.annotations or {})[SELECTED_NODE]
        terms = [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
        ]
        ref = {
            "kind": "PersistentVolumeClaim",
            "namespace": "default",
            "name": c.metadata.name,
            "uid": c.metadata.uid,
        }
        made["p" + c.metadata.name[1:]] = time.monotonic()
        core.create_persistent_volume(
            {
                "metadata": {"name": f"pvc-{c.metadata.uid}"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "never",
                    "persistentVolumeReclaimPolicy": "Delete",
                    "local": {"path": "/mnt/data"},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": terms}},
                    "claimRef": ref,
                },
            }
        )
    watcher.join()
    return sorted(bound[name] - made[name] for name in bound)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=100)
    p.add_argument("--timeout", type=float, default=60.0, help="the operator's --volume-bind-timeout")
    p.add_argument("--window", type=float, default=20.0, help="seconds measured, within the timeout")
    p.add_argument("--source", type=Path, help="run the operator from this checkout instead")
    args = p.parse_args()
    print("machine:", describe())
    print(
        f"operator from {args.source or ROOT}; {args.pods} pods, timeout {args.timeout:g} s, window {args.window:g} s"
    )
    plane = LocalControlPlane(controllers=("persistentvolume-binder-controller",))
    with tempfile.TemporaryDirectory() as tmp, plane as cp, cp.api_client() as api:
        setup(api, args.pods)
        core: Any = client.CoreV1Api(api)
        env = {**os.environ, "PYTHONPATH": str(args.source or ROOT)}
        argv = [
            sys.executable, "-m", "volsched", "run", "--kubeconfig", str(cp.kubeconfig_path),
            "--namespace", NS, "--metrics-port", "0", "--metrics-host", "127.0.0.1",
            "--volume-bind-timeout", str(args.timeout),
        ]  # fmt: skip
        with (Path(tmp) / "operator.log").open("ab") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp)
        try:
            started = time.monotonic()
            while True:
                claims = core.list_namespaced_persistent_volume_claim("default").items
                if sum(1 for c in claims if (c.metadata.annotations or {}).get(SELECTED_NODE)) == args.pods:
                    break
                if time.monotonic() - started > args.timeout:
                    print("not every claim got its selected node in time")
                    return 1
                time.sleep(0.2)
            print(f"every claim has its node after {time.monotonic() - started:.1f} s")
            before, (threads, cpu0) = requests(api), proc_figures(proc.pid)
            t0 = time.monotonic()
            most = threads
            while (left := t0 + args.window - time.monotonic()) > 0:
                time.sleep(min(left, 0.5))
                most = max(most, proc_figures(proc.pid)[0])
            after, (_, cpu1) = requests(api), proc_figures(proc.pid)
            took = time.monotonic() - t0
            waits = provision(api, args.pods, args.timeout)
        finally:
            proc.terminate()
            proc.wait(30)

    def rate(verb: str, resource: str) -> float:
        return (after.get((verb, resource), 0.0) - before.get((verb, resource), 0.0)) / took

    print(
        "| GETs of claims /s | PUTs of claims /s | GETs of pods /s | operator threads (most) | operator CPU s/s |"
    )
    print("|---|---|---|---|---|")
    print(
        f"| {rate('GET', 'persistentvolumeclaims'):.1f} | {rate('PUT', 'persistentvolumeclaims'):.2f} | "
        f"{rate('GET', 'pods'):.1f} | {most} | {(cpu1 - cpu0) / took:.3f} |"
    )
    if len(waits) < args.pods:
        print(f"only {len(waits)} of {args.pods} pods bound once their volumes were made")
    if waits:
        p50, p90 = waits[len(waits) // 2], waits[min(len(waits) - 1, len(waits) * 9 // 10)]
        print(f"volume made -> pod bound: p50 {p50:.2f} s, p90 {p90:.2f} s, most {waits[-1]:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
