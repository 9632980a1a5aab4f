"""An arriving pod's bind, request to answer, from three clients on one apiserver: volsched's own (the
session thread's path: :class:`~volsched.kube.rest.LeanRest`, HTTP/1.1 over one kept-alive TLS
connection), Go's net/http over HTTP/1.1 and over HTTP/2 (as client-go talks; ``bench/loadgen rtt``).
Whether the time a bind's answer takes beyond the apiserver's own is the client's (its read path, the
socket's options) or what any client pays.

A fresh control plane (etcd + kube-apiserver from hack/controlplane), one node; each round makes
``--pods`` pending pods per client, then binds them one at a time ``--gap`` ms apart (one pod arriving at
a time), the clients in turn, rounds interleaved. The first bind of each Go run (its TLS handshake) is
left out. Prints each round's p50 and p90 per client and all rounds together, with the machine.

    python bench/bind_rtt.py [--pods 60] [--rounds 3] [--gap 50]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from bind_throughput import build_loadgen  # noqa: E402
from machine import describe  # noqa: E402

from volsched.kube.client import load_configuration, new_api_client  # noqa: E402
from volsched.kube.rest import LeanRest  # noqa: E402
from volsched_dev.devcluster import LocalControlPlane  # noqa: E402

CLIENTS = ("volsched", "go-http1", "go-http2")
NODE = "n1"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=60, help="binds per client per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--gap", type=float, default=50.0, help="ms between two binds")
    args = p.parse_args(argv)
    loadgen = build_loadgen()
    if loadgen is None:
        p.error("no Go toolchain to build bench/loadgen")
    print("machine:", describe(), flush=True)
    times: dict[str, list[float]] = {c: [] for c in CLIENTS}
    with (
        tempfile.TemporaryDirectory(prefix="volsched-bind-rtt-") as tmp,
        LocalControlPlane(base_dir=Path(tmp)) as cp,
    ):
        rest = LeanRest(new_api_client(load_configuration(str(cp.kubeconfig_path))), direct=True)
        room = {"cpu": "1000", "memory": "1000Gi", "pods": "100000"}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": NODE},
            "status": {"capacity": room, "allocatable": room},
        }
        rest.request("POST", "/api/v1/nodes", node, timeout=10)
        token = Path(tmp) / "token"
        token.write_text(cp.admin_token)

        def pods(tag: str) -> list[str]:
            names = [f"{tag}-{i:05d}" for i in range(args.pods)]
            for name in names:
                body = {
                    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                    "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "x"}]},
                }  # fmt: skip
                rest.request("POST", "/api/v1/namespaces/default/pods", body, timeout=10)
            return names

        for r in range(args.rounds):
            for client in CLIENTS:
                names = pods(f"{client}-{r}")
                got: list[float] = []
                if client == "volsched":
                    for name in names:
                        time.sleep(args.gap / 1000)
                        body = {
                            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": "default"},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": NODE},
                        }  # fmt: skip
                        start = time.perf_counter()
                        rest.request(
                            "POST", f"/api/v1/namespaces/default/pods/{name}/binding", body, timeout=10
                        )
                        got.append(1000 * (time.perf_counter() - start))
                else:
                    argv_ = [
                        str(loadgen), "rtt", "-server", cp.host, "-ca", str(cp.ca_cert_path),
                        "-token-file", str(token), "-namespace", "default", "-node", NODE, "-gap", str(int(args.gap)),
                        *(["-h1"] if client == "go-http1" else []),
                    ]  # fmt: skip
                    out = subprocess.run(
                        argv_, input="\n".join(names), capture_output=True, text=True, check=True
                    )
                    got = [
                        int(line.split()[0]) / 1000 for line in out.stdout.splitlines() if line[:1].isdigit()
                    ][1:]
                times[client].extend(got)
                print(
                    f"  round {r} {client:<9} p50 {statistics.median(got):6.2f} ms  p90 {_pct(got, 0.9):6.2f} ms",
                    flush=True,
                )
    print(f"all rounds ({args.pods} binds a client a round, {args.gap:g} ms apart), ms:")
    for client, got in times.items():
        print(
            f"  {client:<9} p10 {_pct(got, 0.1):6.2f}  p50 {statistics.median(got):6.2f}  p90 {_pct(got, 0.9):6.2f}"
        )
    print("machine at the end:", describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
