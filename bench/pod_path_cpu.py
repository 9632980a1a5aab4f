"""CPU per bound pod on the operator's two per-pod paths outside the session: the watch event that
reports the bind, and the bind request.

Starts a local control plane (etcd + kube-apiserver from hack/controlplane), creates ``--pods`` pending
pods whose schedulerName is volsched's and a few nodes, and wires the operator's own pieces as it does:
the lean pod watch (:class:`~volsched.kube.watch.ListWatch`, pruned) feeding a
:class:`~volsched.cache.feeder.Feeder`, and a background :class:`~volsched.kube.port.KubePort` over a
:class:`~volsched.kube.writer.KubeWriter` fenced by a real :class:`~volsched.kube.lease.LeaderLease`.
Each pod is assumed on a node (as a session commits it), handed to the port in batches of ``--batch``,
and its bind confirmed by the watch. Prints:

* the watch thread's CPU per pod event (``watch``: the read of the stream, the JSON decode, pruning and
  the cache's apply), from the thread's own CPU clock, so the apiserver's CPU is not counted;
* the bind workers' CPU per bind (``bind``: the fence, the request, the answer, the outcome);
* this process's CPU per bound pod (both, plus handing the binds over and the outcomes);
* ``decode only``: the same MODIFIED events (the bound pods as the apiserver sends them) replayed from
  memory through the watch's decode and dispatch into a fresh cache, without the network;
* ``stream``: those events served by a loopback server (another process) as a chunked watch, read by
  aiohttp's client (what a proxied configuration uses; the events handed to the thread) and by the lean
  one, alternated: all at once
  (many events per read, as while a backlog drains) and 1 ms apart (one per read);

and the machine. The machine has 2 cores shared with other work: compare figures of one run, and several
runs.

    .venv/bin/python bench/pod_path_cpu.py --pods 2000
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from builders import pod_body  # noqa: E402
from kubernetes import client  # noqa: E402
from machine import describe  # noqa: E402

from volsched.cache.feeder import Feeder  # noqa: E402
from volsched.cache.state import ClusterState  # noqa: E402
from volsched.cycle import BOUND  # noqa: E402
from volsched.framework.decisions import Bind  # noqa: E402
from volsched.kube.lease import LeaderLease, LeaseSettings  # noqa: E402
from volsched.kube.lister import WATCHED  # noqa: E402
from volsched.kube.port import KubePort  # noqa: E402
from volsched.kube.prune import prune_pod  # noqa: E402
from volsched.kube.rest import LeanRest, _dumps  # noqa: E402
from volsched.kube.rest import loads as lean_loads  # noqa: E402
from volsched.kube.watch import ListWatch  # noqa: E402
from volsched.kube.writer import KubeWriter, WriterSettings  # noqa: E402
from volsched.model.vocabulary import SCHEDULER_NAME  # noqa: E402
from volsched_dev.devcluster import LocalControlPlane  # noqa: E402

NS = "bench"
PODS = next(k for k in WATCHED if k.kind == "Pod")


def node_body(name: str) -> dict[str, Any]:
    res = {"cpu": "64", "memory": "256Gi", "pods": "1000"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": res, "allocatable": res, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def thread_cpu(thread: threading.Thread | None) -> float:
    """A live thread's CPU seconds so far (its own clock)."""
    if thread is None or thread.ident is None:
        return 0.0
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


class Handler:
    """What the operator's handle_event does with a pod event, counting the bound pods seen."""

    def __init__(self, feeder: Feeder) -> None:
        self.feeder = feeder
        self.events = 0
        self.bound: set[str] = set()
        self.done = threading.Event()
        self.want = 0

    def __call__(self, type_: str, obj: dict[str, Any]) -> None:
        self.events += 1
        if type_ == "DELETED":
            self.feeder.delete("Pod", obj)
        else:
            self.feeder.apply("Pod", obj)
        meta = obj.get("metadata") or {}
        if (obj.get("spec") or {}).get("nodeName"):
            self.bound.add(f"{meta.get('namespace')}/{meta.get('name')}")
            if self.want and len(self.bound) >= self.want:
                self.done.set()


def replay(lines: list[bytes], pods: list[dict[str, Any]], nodes: list[str], rounds: int) -> dict[str, float]:
    """CPU seconds per event of decode + dispatch + apply over ``lines`` (the bound pods' MODIFIED
    events), into a cache holding the pods pending with their binds assumed (best of ``rounds``), decoded
    by json (as before) and by the watch's decoder, alternated."""
    best = {"json": float("inf"), "watch": float("inf")}
    for _, (name, loads) in itertools.product(range(rounds), (("json", json.loads), ("watch", lean_loads))):
        state = ClusterState()
        feeder = Feeder(state)
        watch = ListWatch(None, PODS, on_event=Handler(feeder), prune=prune_pod)
        for i, pod in enumerate(pods):
            meta = pod["metadata"]
            spec = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
            unbound = {**pod, "kind": "Pod", "apiVersion": "v1", "spec": spec}  # as the list hands it over
            unbound["metadata"] = {**meta, "resourceVersion": str(int(meta["resourceVersion"]) - 1)}
            feeder.apply("Pod", prune_pod(unbound))
            feeder.assume(f"{meta['namespace']}/{meta['name']}", meta["uid"], nodes[i % len(nodes)])
        gc.collect()
        gc.freeze()  # as the operator does once it listed everything
        t = time.thread_time()
        for line in lines:
            watch._dispatch(loads(line))
        best[name] = min(best[name], (time.thread_time() - t) / len(lines))
        gc.unfreeze()
    return best


def serve(path: str, gap: float) -> None:
    """(A child process) Answer each request on loopback with a chunked watch of the events in ``path``,
    one chunk each, ``gap`` seconds apart (0: all at once), then the last chunk; print the port first."""
    chunks = [b"%x\r\n%s\n\r\n" % (len(line) + 1, line) for line in Path(path).read_bytes().split(b"\n")]
    server = socket.create_server(("127.0.0.1", 0))
    print(server.getsockname()[1], flush=True)
    while True:
        conn, _ = server.accept()
        with conn, conn.makefile("rb") as rfile:
            while rfile.readline() not in (b"\r\n", b""):
                pass
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            if gap <= 0:
                conn.sendall(b"".join(chunks))
            for c in chunks if gap > 0 else ():
                conn.sendall(c)
                until = time.perf_counter() + gap
                while time.perf_counter() < until:
                    pass
            conn.sendall(b"0\r\n\r\n")


#: The Status the apiserver answers a bind with.
BOUND_STATUS = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}'
BOUND_ANSWER = (
    b"HTTP/1.1 201 Created\r\nAudit-Id: 0297cd36-600d-460f-be4c-623d50b731f3\r\nCache-Control: no-cache, "
    b"private\r\nContent-Type: application/json\r\nX-Kubernetes-Pf-Flowschema-Uid: 239ec0c4-3c21-46da-bc66-"
    b"a4f32b01393e\r\nX-Kubernetes-Pf-Prioritylevel-Uid: c01d210e-fdda-4b47-ad84-6ebc6f6c11f4\r\nDate: Sun, 22 "
    b"Nov 2026 23:29:30 GMT\r\nContent-Length: %d\r\n\r\n%s" % (len(BOUND_STATUS), BOUND_STATUS)
)


def answer_binds() -> None:
    """(A child process) Answer every request on loopback as the apiserver answers a bind (its headers
    and Status), on kept-alive connections; print the port first."""
    server = socket.create_server(("127.0.0.1", 0))
    print(server.getsockname()[1], flush=True)

    def one(conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as rfile:
            while True:
                length = 0
                while (line := rfile.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if not line:
                    return
                rfile.read(length)
                conn.sendall(BOUND_ANSWER)

    while True:
        conn, _ = server.accept()
        threading.Thread(target=one, args=(conn,), daemon=True).start()


def _before(rest: LeanRest, method: str, path: str, body: Any, *, content_type: str, timeout: float) -> bytes:
    """A request as the direct path sent it before (http.client's request machinery and getresponse)."""
    data = _dumps(body)
    conn = rest._connection(timeout)
    conn.request(method, rest._prefix + path, body=data, headers=rest._headers(content_type))
    resp = conn.getresponse()
    out = resp.read()
    if resp.will_close:
        conn.close()
    return out


def requests(count: int, rounds: int) -> dict[str, float]:
    """This thread's CPU per bind request to a loopback server answering as the apiserver does (another
    process), sent as before (http.client's machinery) and now (the head built from fixed lines), one
    thread, alternated (best of ``rounds`` each)."""
    child = subprocess.Popen([sys.executable, __file__, "--answer-binds"], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        cfg = client.Configuration()
        cfg.host = f"http://127.0.0.1:{int(child.stdout.readline())}"
        cfg.api_key = {"authorization": "bench-token"}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        best = {"before": float("inf"), "now": float("inf")}
        with client.ApiClient(cfg) as api:
            rest = LeanRest(api, direct=True)
            send: dict[str, Callable[..., bytes]] = {"before": partial(_before, rest), "now": rest.request}
            for _, mode in itertools.product(range(rounds), best):
                t = time.thread_time()
                for i in range(count):
                    body = {
                        "apiVersion": "v1",
                        "kind": "Binding",
                        "metadata": {"name": f"p{i:05d}", "namespace": NS, "uid": "35d0bb20-d5e3-4f84-a1a3"},
                        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
                    }
                    send[mode](
                        "POST",
                        f"/api/v1/namespaces/{NS}/pods/p{i:05d}/binding",
                        body,
                        content_type="application/json",
                        timeout=10,
                    )
                best[mode] = min(best[mode], (time.thread_time() - t) / count)
        return best
    finally:
        child.kill()
        child.wait()


def stream(lines: list[bytes], gap: float, rounds: int) -> dict[str, float]:
    """The watch thread's CPU per event reading ``lines`` from a loopback server (another process) over
    aiohttp's client and the lean one, alternated (the process's CPU); decoded and dispatched to a sink
    that keeps nothing (best of ``rounds`` each)."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        f.write(b"\n".join(lines))
        f.flush()
        child = subprocess.Popen(
            [sys.executable, __file__, "--serve", f.name, "--gap", str(gap)], stdout=subprocess.PIPE
        )
        try:
            assert child.stdout is not None
            port = int(child.stdout.readline())
            cfg = client.Configuration()
            cfg.host = f"http://127.0.0.1:{port}"
            best = {"aiohttp": float("inf"), "lean": float("inf")}
            with client.ApiClient(cfg) as api:
                for _ in range(rounds):
                    for mode in best:
                        watch = ListWatch(api, PODS, on_event=lambda _t, _o: None, prune=prune_pod)
                        watch._rest = LeanRest(api, direct=mode == "lean")
                        t = time.process_time()  # aiohttp reads on its own thread: the process's CPU
                        watch.watch_once("1")
                        best[mode] = min(best[mode], (time.process_time() - t) / len(lines))
            return best
        finally:
            child.kill()
            child.wait()


def main() -> int:
    if "--answer-binds" in sys.argv:
        answer_binds()
        return 0
    if "--serve" in sys.argv:
        serve(sys.argv[sys.argv.index("--serve") + 1], float(sys.argv[sys.argv.index("--gap") + 1]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--batch", type=int, default=200, help="binds handed over at once (a commit)")
    parser.add_argument("--replays", type=int, default=5, help="rounds of the decode-only replay")
    parser.add_argument(
        "--workers", type=int, default=WriterSettings().bind_workers, help="bind workers at most"
    )
    args = parser.parse_args()
    print("machine:", describe())
    cp = LocalControlPlane()
    cp.start()
    try:
        with cp.api_client() as api, cp.api_client() as watch_api:
            writer0 = KubeWriter(api)
            rest = writer0.rest
            rest.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}}, timeout=30)
            rest.request("POST", "/api/v1/namespaces", {"metadata": {"name": "volsched-system"}}, timeout=30)
            nodes = [f"node-{i}" for i in range(args.nodes)]
            for n in nodes:
                rest.request("POST", "/api/v1/nodes", node_body(n), timeout=30)
            names = [f"p{i:05d}" for i in range(args.pods)]
            for start in range(0, len(names), 100):
                pool = writer0.pool
                list(
                    pool.map(
                        lambda n: rest.request(
                            "POST", f"/api/v1/namespaces/{NS}/pods", pod_body(n, SCHEDULER_NAME), timeout=30
                        ),
                        names[start : start + 100],
                    )
                )
            writer0.close()

            state = ClusterState()
            feeder = Feeder(state)
            handler = Handler(feeder)
            watch = ListWatch(watch_api, PODS, on_event=handler, prune=prune_pod)
            watch.start()
            while not watch.synced.wait(0.2):
                pass
            gc.collect()
            gc.freeze()  # as the operator does once it listed everything
            lease = LeaderLease(api, LeaseSettings(), "bench")
            if not lease.ensure():
                raise SystemExit("could not take the Lease")
            writer = KubeWriter(api, WriterSettings(bind_workers=args.workers), fence=lease)
            port = KubePort(writer, background=True)
            keys = [f"{NS}/{n}" for n in names]
            handler.want = len(keys)
            handler.events = 0
            bound = 0
            watch_cpu0 = thread_cpu(watch._thread)
            process0, wall0 = time.process_time(), time.perf_counter()
            workers0: dict[int, float] = {}
            outcomes = []
            for start in range(0, len(keys), args.batch):
                batch = []
                for i, key in enumerate(keys[start : start + args.batch], start):
                    uid = str((state.raw_pods[key].get("metadata") or {}).get("uid"))
                    node = nodes[i % len(nodes)]
                    feeder.assume(key, uid, node)
                    batch.append(Bind(pod=key, uid=uid, node=node))
                for w in port._workers:
                    workers0.setdefault(w.ident or 0, thread_cpu(w))
                outcomes += port.bind(batch, feeder.pods(b.pod for b in batch))
                for o in outcomes:
                    feeder.finish(o.bind.pod)
            port.drain(120)
            outcomes += port.settle()[0]
            workers_cpu = sum(thread_cpu(w) - workers0.get(w.ident or 0, 0.0) for w in port._workers)
            handler.done.wait(120)
            wall = time.perf_counter() - wall0
            process = time.process_time() - process0
            watch_cpu = thread_cpu(watch._thread) - watch_cpu0
            events = handler.events
            bound = sum(o.result == BOUND for o in outcomes)
            watch.stop()
            port.close()
            writer.close()
            body = json.loads(rest.request("GET", f"/api/v1/namespaces/{NS}/pods", None, timeout=60))
            pods = body["items"]
            lines = [
                json.dumps({"type": "MODIFIED", "object": p}, separators=(",", ":")).encode() for p in pods
            ]

        decode = replay(lines, pods, nodes, args.replays)
        backlog = stream(lines, 0.0, args.replays)
        trickle = stream(lines[:500], 0.001, args.replays)
        request = requests(2000, args.replays)
        size = sum(map(len, lines)) / max(1, len(lines))
        print(f"pods {args.pods}, bound {bound} ({len(port._workers)} bind workers), pod events {events}")
        print(f"watch        {1e6 * watch_cpu / max(1, events):7.1f} us CPU per pod event (watch thread)")
        print(f"bind         {1e6 * workers_cpu / max(1, bound):7.1f} us CPU per bind (bind workers)")
        print(f"process      {1e6 * process / max(1, bound):7.1f} us CPU per bound pod (this process)")
        print(
            f"decode only  {1e6 * decode['json']:7.1f} -> {1e6 * decode['watch']:5.1f} us CPU per event, json -> "
            f"the watch's decoder ({size:.0f} bytes each; decoded, pruned, applied; best of {args.replays})"
        )
        for what, figures in (("all at once", backlog), ("1 ms apart", trickle)):
            print(
                f"stream       {1e6 * figures['aiohttp']:7.1f} -> {1e6 * figures['lean']:5.1f} us CPU per event, "
                f"aiohttp -> lean, loopback, {what} (read, decoded, pruned; nothing kept)"
            )
        print(
            f"request      {1e6 * request['before']:7.1f} -> {1e6 * request['now']:5.1f} us CPU per bind request, "
            "http.client's request machinery -> the head from fixed lines, loopback, one thread"
        )
        print(f"wall         {bound / max(wall, 1e-9):7.0f} pods bound and seen per second")
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
