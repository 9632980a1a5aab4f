"""CPU per bind against a real apiserver: the bind workers' own CPU per bound pod, by how many threads send.

Starts a local control plane (etcd + kube-apiserver from hack/controlplane), creates ``--pods`` pending
pods whose schedulerName is volsched's, then binds them in rounds of ``--round`` pods, each round through
one of the ways below (alternated, so each meets the same apiserver in the same minutes):

* ``port T``: the operator's background :class:`~volsched.kube.port.KubePort` with at most ``T`` bind
  workers over a :class:`~volsched.kube.writer.KubeWriter` fenced by a real Lease (what the operator does);
* ``rest T``: ``T`` threads calling :meth:`~volsched.kube.rest.LeanRest.request` with a bind's body (the
  request alone);
* ``befo T``: as ``rest T``, the answer read as before 2026-11-23 (``http.client``'s response object over
  ``makefile``, :class:`~volsched.kube.rest._LeanResponse`'s header reader); ``pbef T``: as ``port T``,
  the answer read so.

For each it prints the sending threads' CPU per bind (their own CPU clocks: the apiserver is another
process), the pod watch's thread's CPU per event (``--watch``: the operator's lean pod watch feeding a
cache, as :mod:`bench.pod_path_cpu` wires it; each round waits until it saw its pods bound), this
process's CPU per bind, the apiserver's CPU per bind (from /proc) and binds per second,
then the machine. The machine has 2 cores shared with other work: compare the rows of one run.

    .venv/bin/python bench/bind_cpu.py --pods 4000 --round 500 --ways port128,rest128,befo128
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import http.client
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from builders import pod_body  # noqa: E402
from machine import describe  # noqa: E402

from volsched.cache.feeder import Feeder  # noqa: E402
from volsched.cache.state import ClusterState  # noqa: E402
from volsched.cycle import BOUND  # noqa: E402
from volsched.framework.decisions import Bind  # noqa: E402
from volsched.kube.lease import LeaderLease, LeaseSettings  # noqa: E402
from volsched.kube.lister import WATCHED  # noqa: E402
from volsched.kube.port import KubePort  # noqa: E402
from volsched.kube.prune import prune_pod  # noqa: E402
from volsched.kube.rest import LeanRest, ResponseLost, _LeanResponse, pod_path  # noqa: E402
from volsched.kube.watch import ListWatch  # noqa: E402
from volsched.kube.writer import KubeWriter, WriterSettings  # noqa: E402
from volsched.model.vocabulary import SCHEDULER_NAME  # noqa: E402
from volsched_dev.devcluster import LocalControlPlane  # noqa: E402

NS = "bench"
NODE = "node-0"
PODS = next(k for k in WATCHED if k.kind == "Pod")
TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """A process's CPU seconds so far (user + system, from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def thread_cpu(thread: threading.Thread) -> float:
    if thread.ident is None or not thread.is_alive():
        return 0.0
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (OSError, ProcessLookupError):
        return 0.0


class Before(LeanRest):
    """The direct path's answer read as before: http.client's response object (``makefile``, its reads),
    :class:`_LeanResponse`'s headers."""

    def _direct(
        self,
        method: str,
        path: str,
        data: bytes | None,
        content_type: str | None,
        timeout: float,
        patience: float | None = None,  # (a write's answer waited for whole here, as before it)
    ) -> bytes:
        deadline = time.monotonic() + timeout
        message = self._head(method, path, content_type, data) + (data or b"")
        conn = self._connection(max(0.001, deadline - time.monotonic()))
        try:
            conn.send(message)
            conn.sock.settimeout(max(0.001, deadline - time.monotonic()))
            resp = _LeanResponse(conn.sock, method=method)
            resp.begin()
            conn.sock.settimeout(max(0.001, deadline - time.monotonic()))
            out = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise ResponseLost(f"{method} {path}: no answer ({type(exc).__name__})") from exc
        if resp.will_close:
            conn.close()
        if resp.status >= 400:
            raise RuntimeError(f"{resp.status} {out[:200]!r}")
        return out


class Seen:
    """The pod watch's receiver: what the operator's handler does (the cache's apply), counting the
    events and the expected pods seen bound."""

    def __init__(self) -> None:
        self.feeder: Feeder | None = None
        self.events = 0
        self.waiting: set[str] = set()
        self.done = threading.Event()
        self.lock = threading.Lock()

    def expect(self, keys: list[str]) -> None:
        with self.lock:
            self.waiting = set(keys)
            self.done.clear()

    def __call__(self, type_: str, obj: dict[str, Any]) -> None:
        self.events += 1
        if self.feeder is not None:
            if type_ == "DELETED":
                self.feeder.delete("Pod", obj)
            else:
                self.feeder.apply("Pod", obj)
        if (obj.get("spec") or {}).get("nodeName"):
            meta = obj.get("metadata") or {}
            with self.lock:
                self.waiting.discard(f"{meta.get('namespace')}/{meta.get('name')}")
                if not self.waiting:
                    self.done.set()


class Way:
    """One way of sending a round's binds; returns (bound, the sending threads' CPU seconds)."""

    def __init__(self, name: str, api: Any, lease: LeaderLease) -> None:
        self.name = name
        kind, threads = name[:4], int(name[4:])
        self.kind = kind
        self.threads = threads
        if kind in ("port", "pbef"):
            self.writer = KubeWriter(api, WriterSettings(bind_workers=threads), fence=lease)
            if kind == "pbef":
                self.writer.rest = Before(api)
            self.port = KubePort(self.writer, background=True)
        elif kind in ("rest", "befo"):
            self.rest = Before(api) if kind == "befo" else LeanRest(api)
            self.pool = ThreadPoolExecutor(threads, thread_name_prefix=f"bench-{name}")
            self.cpu = [0.0]
            self.lock = threading.Lock()
        else:
            raise SystemExit(f"unknown way {name!r}")

    def run(self, uids: dict[str, str]) -> tuple[int, float]:
        return self._port(uids) if self.kind in ("port", "pbef") else self._rest(uids)

    def _port(self, uids: dict[str, str]) -> tuple[int, float]:
        port = self.port
        pod = {"spec": {"schedulerName": SCHEDULER_NAME}}
        before = {w.ident: thread_cpu(w) for w in port._workers}
        binds = [Bind(pod=k, uid=u, node=NODE) for k, u in uids.items()]
        outcomes = port.bind(binds, dict.fromkeys(uids, pod))
        port.drain(300)
        outcomes += port.settle()[0]
        cpu = sum(thread_cpu(w) - before.get(w.ident, 0.0) for w in port._workers)
        return sum(o.result == BOUND for o in outcomes), cpu

    def _rest(self, uids: dict[str, str]) -> tuple[int, float]:
        rest = self.rest

        def one(key: str) -> bool:
            t = time.thread_time()
            ns, name = key.split("/")
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": ns, "uid": uids[key]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": NODE},
            }
            try:
                rest.request("POST", pod_path(ns, name, "binding"), body, timeout=30)
                ok = True
            except Exception:
                ok = False
            spent = time.thread_time() - t
            with self.lock:
                self.cpu[0] += spent
            return ok

        self.cpu[0] = 0.0
        bound = sum(self.pool.map(one, uids))
        return bound, self.cpu[0]

    def close(self) -> None:
        if self.kind in ("port", "pbef"):
            self.port.close()
            self.writer.close()
        else:
            self.pool.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--round", type=int, default=500)
    parser.add_argument(
        "--ways", default="port128,rest128,rest16", help="comma-separated: portT, pbefT, restT, befoT"
    )
    parser.add_argument("--watch", action="store_true", help="watch the pods, as the operator does")
    args = parser.parse_args()
    cp = LocalControlPlane()
    cp.start()
    try:
        apiserver = next(p.popen.pid for p in cp._procs if p.name == "kube-apiserver")
        with contextlib.ExitStack() as stack:
            api = stack.enter_context(cp.api_client())
            setup = LeanRest(api)
            setup.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}}, timeout=30)
            setup.request("POST", "/api/v1/namespaces", {"metadata": {"name": "volsched-system"}}, timeout=30)
            names = [f"p{i:05d}" for i in range(args.pods)]
            uids: dict[str, str] = {}

            def create(name: str) -> None:
                out = setup.request(
                    "POST", f"/api/v1/namespaces/{NS}/pods", pod_body(name, SCHEDULER_NAME), timeout=30
                )
                import orjson

                uids[f"{NS}/{name}"] = orjson.loads(out)["metadata"]["uid"]

            with ThreadPoolExecutor(16) as pool:
                list(pool.map(create, names))
            lease = LeaderLease(api, LeaseSettings(), "bench")
            if not lease.ensure():
                raise SystemExit("could not take the Lease")
            ways = [Way(w, api, lease) for w in args.ways.split(",")]
            watch, seen = None, Seen()
            if args.watch:
                watch_api = stack.enter_context(cp.api_client())
                watch = ListWatch(watch_api, PODS, on_event=seen, prune=prune_pod)
                seen.feeder = Feeder(ClusterState())
                watch.start()
                while not watch.synced.wait(0.2):
                    pass
                gc.collect()
                gc.freeze()  # as the operator does once it listed everything
            keys = sorted(uids)
            # bound, threads, process, apiserver, wall, watch CPU, watch events
            totals: dict[str, list[float]] = {w.name: [0, 0.0, 0.0, 0.0, 0.0, 0.0, 0] for w in ways}
            rounds = [keys[i : i + args.round] for i in range(0, len(keys), args.round)]
            for i, chunk in enumerate(rounds):
                way = ways[i % len(ways)]
                if watch is not None:
                    seen.expect(chunk)
                    wt0, ev0 = thread_cpu(watch._thread), seen.events  # type: ignore[arg-type]
                c0, a0, w0 = time.process_time(), proc_cpu(apiserver), time.perf_counter()
                bound, cpu = way.run({k: uids[k] for k in chunk})
                t = totals[way.name]
                if watch is not None:
                    seen.done.wait(60)
                    t[5] += thread_cpu(watch._thread) - wt0  # type: ignore[arg-type]
                    t[6] += seen.events - ev0
                t[0] += bound
                t[1] += cpu
                t[2] += time.process_time() - c0
                t[3] += proc_cpu(apiserver) - a0
                t[4] += time.perf_counter() - w0
            for w in ways:
                w.close()
            print(f"pods {args.pods}, rounds of {args.round}, alternated")
            if watch is not None:
                watch.stop()
            for name, (binds, cpu, process, api_cpu, wall, watch_cpu, events) in totals.items():
                n = max(1, binds)
                print(
                    f"{name:14s} {binds:5.0f} bound  {1e6 * cpu / n:6.1f} us/bind sending threads"
                    + (f"  {1e6 * watch_cpu / max(1, events):6.1f} us/event watch" if watch else "")
                    + (
                        f"  {1e6 * process / n:6.1f} us/bind process  {1e6 * api_cpu / n:6.1f} us/bind apiserver"
                        f"  {n / max(wall, 1e-9):6.0f} binds/s"
                    )
                )
    finally:
        cp.stop()
    print("machine:", describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
