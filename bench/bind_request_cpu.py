"""CPU per bind request: the writer's binds over aiohttp's client vs per-thread http.client.

Starts a local control plane (etcd + kube-apiserver from hack/controlplane), creates ``--pods`` pending
pods whose schedulerName is volsched's, and binds them through :class:`~volsched.kube.writer.KubeWriter`
(``bind_all``, its default workers) in alternating rounds of ``--round`` pods, one round with
``LeanRest(direct=False)`` (aiohttp) and one with the direct path, so both meet the same apiserver in the
same minutes. Prints this process's CPU seconds per 1,000 binds for each (``time.process_time``; the
apiserver is another process), the wall time, and the machine. On a shared 2-core machine the figures
are noisy; compare the two columns of one run.

    .venv/bin/python bench/bind_request_cpu.py --pods 2000
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

from machine import describe

from volsched.cycle import BOUND
from volsched.framework.decisions import Bind
from volsched.kube.rest import LeanRest
from volsched.kube.writer import KubeWriter
from volsched.model.vocabulary import SCHEDULER_NAME
from volsched_dev.devcluster import LocalControlPlane

NS = "bench"


def _pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulerName": SCHEDULER_NAME, "containers": [{"name": "c", "image": "x"}]},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--round", type=int, default=250)
    args = parser.parse_args()
    print(describe())
    cp = LocalControlPlane()
    cp.start()
    try:
        with cp.api_client() as api:
            writer = KubeWriter(api)
            rest = writer.rest
            rest.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}}, timeout=30)
            names = [f"p{i:05d}" for i in range(args.pods)]
            with ThreadPoolExecutor(16) as pool:
                list(
                    pool.map(
                        lambda n: rest.request("POST", f"/api/v1/namespaces/{NS}/pods", _pod(n), timeout=30),
                        names,
                    )
                )
            modes = {"aiohttp": LeanRest(api, direct=False), "http.client": LeanRest(api, direct=True)}
            cpu = dict.fromkeys(modes, 0.0)
            wall = dict.fromkeys(modes, 0.0)
            count = dict.fromkeys(modes, 0)
            pod = _pod("x")
            for start in range(0, len(names), args.round):
                mode = list(modes)[(start // args.round) % 2]
                writer.rest = modes[mode]
                binds = [
                    Bind(pod=f"{NS}/{n}", uid="", node="node-a") for n in names[start : start + args.round]
                ]
                c0, w0 = time.process_time(), time.perf_counter()
                outcomes = writer.bind_all(binds, {b.pod: pod for b in binds})
                cpu[mode] += time.process_time() - c0
                wall[mode] += time.perf_counter() - w0
                count[mode] += sum(o.result == BOUND for o in outcomes)
            writer.close()
            for mode in modes:
                n = max(1, count[mode])
                print(
                    f"{mode:12s} {count[mode]:6d} bound  {1000 * cpu[mode] / n:6.3f} CPU s/1000 binds"
                    f"  {n / max(wall[mode], 1e-9):7.0f} binds/s wall"
                    + (f"  {modes[mode].connects} connections" if modes[mode].direct else "")
                )
            ratio = (cpu["http.client"] / max(1, count["http.client"])) / (
                cpu["aiohttp"] / max(1, count["aiohttp"])
            )
            print(f"http.client / aiohttp CPU per bind: {ratio:.2f}")
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
