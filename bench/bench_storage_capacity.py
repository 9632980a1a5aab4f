"""The storage capacity check's cost per session, in process: ``VolumeState.fits`` for one claim of a class
whose CSI driver tracks capacity, over N nodes and N CSIStorageCapacities (one per node, ``nodeTopology``
by hostname, as a node-local driver such as TopoLVM writes them), sessions sharing one node table's memo
and the cache's capacities mapping, as the operator's do while nothing changed.

Prints, per round, the first session's and the later sessions' median time (ms). With ``--source DIR``
(repeatable) each round runs once per checkout, in turn, in a process of its own: before and after in one
invocation. Run it under the bench lock: ``flock /tmp/volsched-bench.lock nice -n 5 .venv/bin/python
bench/bench_storage_capacity.py --nodes 5000 --source /work/main --source .``.
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


def one_round(nodes: int, sessions: int) -> dict[str, float]:
    """First and later sessions' time (ms) of the check, in this process's volsched."""
    import numpy as np

    from volsched.model.decode import build_node, storage_capacity, storage_class, volume_claim
    from volsched.model.volumes import VolumeCatalog, VolumeState

    specs = [
        build_node(
            {
                "metadata": {
                    "name": f"n{i}",
                    "labels": {"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 8}"},
                },
                "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
            }
        )
        for i in range(nodes)
    ]
    capacities = {}
    for i in range(nodes):
        c = storage_capacity(
            {
                "metadata": {"name": f"cap-{i}", "namespace": "kube-system"},
                "storageClassName": "dyn",
                "capacity": f"{10 + i % 90}Gi",
                "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": f"n{i}"}},
            }
        )
        capacities[c.key] = c
    claim = volume_claim(
        {
            "metadata": {"name": "data", "namespace": "default", "uid": "u"},
            "spec": {
                "storageClassName": "dyn",
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "50Gi"}},
            },
        }
    )
    cls = storage_class(
        {
            "metadata": {"name": "dyn"},
            "provisioner": "csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    catalog = VolumeCatalog(
        claims={claim.key: claim},
        volumes={},
        classes={"dyn": cls},
        capacities=capacities,
        tracked=frozenset({"csi.example.com"}),
    )
    memo: dict[str, Any] = {}
    idx = np.arange(nodes, dtype=np.intp)
    times = []
    for _ in range(sessions):
        state = VolumeState(catalog, nodes=specs, memo=memo)
        start = time.perf_counter()
        ok = state.fits("default", ["data"], idx)
        times.append((time.perf_counter() - start) * 1e3)
    assert 0 < int(ok.sum()) < nodes
    return {"first": times[0], "later": statistics.median(times[1:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source", action="append", default=[], help="a checkout to run (repeatable)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_round(args.nodes, args.sessions)))
        return
    sources: list[str | None] = [str(Path(s).resolve()) for s in args.source] or [None]
    print(f"# load {os.getloadavg()[0]:.1f}; {args.nodes} nodes and capacities; ms per check")
    for r in range(args.rounds):
        for source in sources:
            if source is None:
                got = one_round(args.nodes, args.sessions)
            else:
                env = {**os.environ, "PYTHONPATH": source}
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--one",
                        "--nodes",
                        str(args.nodes),
                        "--sessions",
                        str(args.sessions),
                    ],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                    cwd=source,
                ).stdout
                got = json.loads(out)
            print(f"round {r} {source or 'here'}: first {got['first']:.2f}, later {got['later']:.3f}")
    print(f"# load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
