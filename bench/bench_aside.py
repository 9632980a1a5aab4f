"""Benchmark: what a session in the steady state pays for volumes' attach limits and for DRA claims
reserved for running pods, one pod arriving a cycle (an arriving pod's session).

The cache holds N nodes and M bound, running pods, each standing alone in namespace ``bench`` (as
``bench_steady.py --shape lone``), fed as raw objects through a :class:`Feeder`. Every cycle one pending
pod arrives, the watch confirms the last cycle's bind, and one cycle runs (``run_cycle``, the default
config, a ``NullPort``).

``--what attach``: every node's CSINode allows 64 volumes of ``ebs.csi.aws.com``; half the bound pods
mount a claim bound to a CSI volume of it, with its VolumeAttachment; the arriving pod mounts one too,
so every session counts what is attached on each node (``volsched.model.attach``). ``--relabel``: a node's
labels change every cycle, so every session has another node table of the same nodes. ``--churn``: a
node joins every cycle (with its CSINode, no pods) and the one that joined two cycles before leaves, so
every session has another node table of other nodes (the places after the one gone move).
``--what dra``: ``--claims`` of the bound pods hold a ResourceClaim allocated on their node and reserved
for them (a GPU each, from their node's ResourceSlice); the arriving pod asks for none, so every session
only asks which reserved pods are gone (``DeviceState.release_orphans``).

Prints the median over the measured cycles of the cycle's CPU and of the snapshot's and each action's
timing, in ms, with the machine. ``--source DIR`` (twice or more) runs from each checkout in turn
(its ``volsched`` first on the path), ``--pairs`` rounds, the order reversed every other round.

    python bench/bench_aside.py --what attach --nodes 1000 --pods 10000
    python bench/bench_aside.py --what attach --nodes 1000 --pods 10000 --relabel   # a new node table a cycle
    python bench/bench_aside.py --what attach --nodes 1000 --pods 10000 --churn     # nodes join and leave
    python bench/bench_aside.py --what dra --nodes 1000 --pods 10000 --claims 1000 \\
        --source ../before --source . --pairs 3
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

from builders import confirm_binds, raw_node, raw_pod
from machine import describe

NS = "bench"
DRIVER = "ebs.csi.aws.com"


def _pod(name: str, *, node: str | None, rv: int, claim: str | None = None, dra: str | None = None) -> Any:
    pod = raw_pod(name, namespace=NS, uid=f"uid-{NS}-{name}", rv=rv, labels={"app": name}, node=node)
    if claim is not None:
        pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    if dra is not None:
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": dra}]
    return pod


def _volume(feeder: Any, name: str, *, node: str | None, rv: int) -> None:
    """A claim ``name`` bound to its CSI volume (attached on ``node``, if any)."""
    feeder.apply(
        "PersistentVolume",
        {
            "kind": "PersistentVolume",
            "metadata": {"name": f"pv-{name}", "resourceVersion": str(rv)},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "csi": {"driver": DRIVER, "volumeHandle": f"vol-{name}"},
                "claimRef": {"namespace": NS, "name": name},
            },
            "status": {"phase": "Bound"},
        },
    )
    feeder.apply(
        "PersistentVolumeClaim",
        {
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": NS, "resourceVersion": str(rv)},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "volumeName": f"pv-{name}",
            },
            "status": {"phase": "Bound"},
        },
    )
    if node is not None:
        feeder.apply(
            "VolumeAttachment",
            {
                "kind": "VolumeAttachment",
                "metadata": {"name": f"va-{name}", "resourceVersion": str(rv)},
                "spec": {
                    "attacher": DRIVER,
                    "nodeName": node,
                    "source": {"persistentVolumeName": f"pv-{name}"},
                },
            },
        )


def _csinode(name: str) -> dict[str, Any]:
    return {
        "kind": "CSINode",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {"drivers": [{"name": DRIVER, "nodeID": name, "allocatable": {"count": 64}}]},
    }


def one(
    what: str, nodes: int, pods: int, cycles: int, claims: int, relabel: bool = False, churn: bool = False
) -> dict[str, Any]:
    from volsched.cache.feeder import Feeder
    from volsched.cache.state import ClusterState
    from volsched.cycle import BOUND, NullPort, run_cycle
    from volsched.framework.registry import load_config, make_plugins_ahead

    config = load_config(None)
    feeder = Feeder(ClusterState())
    for i in range(nodes):
        feeder.apply("Node", raw_node(i))
        name = f"node-{i:05d}"
        if what == "attach":
            feeder.apply("CSINode", _csinode(name))
    if what == "dra":
        feeder.apply(
            "DeviceClass",
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "gpu.example.com", "resourceVersion": "1"},
                "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
            },
        )
    for i in range(pods):
        node = f"node-{i % nodes:05d}"
        name = f"p-{i:06d}"
        claim = dra = None
        if what == "attach" and i % 2 == 0:
            claim = f"c-{name}"
            _volume(feeder, claim, node=node, rv=100 + i)
        if what == "dra" and i < claims:
            dra = f"gpu-{name}"
            if i < nodes:
                feeder.apply(
                    "ResourceSlice",
                    {
                        "apiVersion": "resource.k8s.io/v1",
                        "kind": "ResourceSlice",
                        "metadata": {"name": f"slice-{node}", "resourceVersion": "1"},
                        "spec": {
                            "driver": "gpu.example.com",
                            "nodeName": node,
                            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                            "devices": [{"name": f"gpu-{k}"} for k in range(8)],
                        },
                    },
                )
            feeder.apply(
                "ResourceClaim",
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": dra, "namespace": NS, "uid": f"uid-{dra}", "resourceVersion": "1"},
                    "spec": {
                        "devices": {
                            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
                        }
                    },
                    "status": {
                        "allocation": {
                            "devices": {
                                "results": [
                                    {
                                        "request": "gpu",
                                        "driver": "gpu.example.com",
                                        "pool": node,
                                        "device": f"gpu-{i // nodes}",
                                    }
                                ]
                            },
                            "nodeSelector": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchFields": [
                                            {"key": "metadata.name", "operator": "In", "values": [node]}
                                        ]
                                    }
                                ]
                            },
                        },
                        "reservedFor": [{"resource": "pods", "name": name, "uid": f"uid-{NS}-{name}"}],
                    },
                },
            )
        feeder.apply("Pod", _pod(name, node=node, rv=100 + i, claim=claim, dra=dra))
    port = NullPort()
    rv = 10_000_000
    arrived: dict[str, dict[str, Any]] = {}
    confirm: dict[str, str] = {}
    rows: list[dict[str, float]] = []
    for c in range(cycles + 2):  # two warm-up cycles
        rv = confirm_binds(feeder, arrived, confirm, rv)
        rv += 1
        name = f"p-new-{c:06d}"
        claim = None
        if what == "attach":
            claim = f"c-{name}"
            _volume(feeder, claim, node=None, rv=rv)
        pod = _pod(name, node=None, rv=rv, claim=claim)
        arrived[f"{NS}/{name}"] = pod
        feeder.apply("Pod", pod)
        if relabel:  # a node's labels changed: another node table of the same nodes
            changed = raw_node(c % nodes)
            changed["metadata"]["labels"] = {**changed["metadata"].get("labels", {}), "cycle": str(c)}
            changed["metadata"]["resourceVersion"] = str(rv)
            feeder.apply("Node", changed)
        if churn:  # a node joins (last), and the one that joined two cycles before leaves
            joined = raw_node(nodes + c, resource_version=str(rv))
            feeder.apply("Node", joined)
            feeder.apply("CSINode", _csinode(joined["metadata"]["name"]))
            if c >= 2:
                gone = raw_node(nodes + c - 2)
                feeder.delete("CSINode", _csinode(gone["metadata"]["name"]))
                feeder.delete("Node", gone)
        ahead = make_plugins_ahead(config)
        cpu = time.thread_time()
        report = run_cycle(feeder, config, port, now=1000.0 + c, plugins=ahead)
        cpu = time.thread_time() - cpu
        confirm = {b.bind.pod: b.bind.node for b in report.binds if b.result == BOUND}
        if c >= 2:
            rows.append({"cycle_cpu": cpu, "bound": len(confirm), **report.result.timings})
    keys = list(rows[0])
    return {k: statistics.median(r.get(k, 0.0) for r in rows) for k in keys}


def _say(label: str, med: dict[str, Any]) -> None:
    parts = [f"cycle CPU {1000 * med['cycle_cpu']:.2f} ms", f"bound {med['bound']:.0f}"]
    for key in ("cycle:snapshot", "session:open", "action:allocate", "session:close"):
        if key in med:
            parts.append(f"{key} {1000 * med[key]:.2f}")
    print(f"{label}: " + ", ".join(parts), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--what", choices=("attach", "dra"), required=True)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--claims", type=int, default=1000, help="bound pods with a DRA claim (--what dra)")
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--relabel", action="store_true", help="a node relabelled every cycle (a new node table)")
    ap.add_argument("--churn", action="store_true", help="a node joins and one leaves every cycle")
    ap.add_argument("--source", action="append", default=[])
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.json:
        print(
            json.dumps(
                one(args.what, args.nodes, args.pods, args.cycles, args.claims, args.relabel, args.churn)
            )
        )
        return
    print(describe("numpy"), flush=True)
    print(f"{args.what}: {args.nodes} nodes x {args.pods} bound pods, one arriving a cycle", flush=True)
    sources = [Path(s).resolve() for s in args.source] or [Path(__file__).resolve().parent.parent]
    here = os.path.abspath(__file__)
    for r in range(args.pairs):
        order = sources if r % 2 == 0 else list(reversed(sources))
        for src in order:
            cmd = [sys.executable, here, "--json", "--what", args.what, "--nodes", str(args.nodes)]
            cmd += ["--pods", str(args.pods), "--cycles", str(args.cycles), "--claims", str(args.claims)]
            cmd += ["--relabel"] if args.relabel else []
            cmd += ["--churn"] if args.churn else []
            env = {**os.environ, "PYTHONPATH": str(src)}
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
            commit = subprocess.run(
                ["git", "-C", str(src), "log", "-1", "--format=%h"], capture_output=True, text=True
            ).stdout.strip()
            load = os.getloadavg()[0]
            _say(f"round {r} {src.name}@{commit or '?'} (load {load:.1f})", json.loads(out))


if __name__ == "__main__":
    main()
