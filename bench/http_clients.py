"""The operator's requests through each HTTP client, against one real kube-apiserver, interleaved.

Starts a local control plane (etcd + kube-apiserver from hack/controlplane), creates pending pods in
namespace ``bench``, then runs ``--repeat`` rounds; each round runs every client once, in a rotating order,
each on ``--round`` fresh pods, so every client meets the same apiserver in the same minutes:

* status: a strategic-merge patch of each pod's status (the writer's Unschedulable condition), ``--workers``
  threads;
* bind: a ``pods/binding`` POST for each pod, ``--bind-workers`` threads (the writer's bind workers);
* evict: a ``pods/eviction`` POST for each pod, ``--workers`` threads;
* watch: one watch of the namespace's pods from the resourceVersion the round started at, read (each
  line decoded as JSON) until it has seen the round's three events per pod.

Clients: ``hand`` (:class:`~volsched.kube.rest.LeanRest`'s direct path, the writer's and the watches':
http.client connections, the answer parsed by hand), ``urllib3`` (the kubernetes client's urllib3 pool, ``preload_content=False``,
the body read then the connection released), ``httpx`` (one ``httpx.Client`` shared by the threads),
``aiohttp`` (one ``ClientSession`` on an event loop thread, the threads handing it their requests: how a
threaded writer would use it). Each thread sends its own requests through the client's connection pool,
with the body JSON-encoded by orjson and the answer read whole.

For each client it prints requests per second per kind (wall time of the phase: the machine's load
included) and this process's CPU milliseconds per request or per watch event (``time.process_time``;
the apiserver is another process), the median over the rounds and the min-max, then each client's
ratio to ``hand`` of the same round (median). httpx is no dependency of volsched: without it installed
that client is skipped. The machine is printed before and after: on a shared
machine compare the ratios of one run, not absolute figures.

    nice -n 10 .venv/bin/python bench/http_clients.py --round 300 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import orjson  # noqa: E402
from machine import describe  # noqa: E402

from volsched.kube.kubeconfig import tls_context  # noqa: E402
from volsched.kube.rest import LeanRest, pod_path  # noqa: E402
from volsched.model.vocabulary import SCHEDULER_NAME  # noqa: E402
from volsched_dev.devcluster import LocalControlPlane  # noqa: E402

NS = "bench"
JSON = "application/json"
STRATEGIC = "application/strategic-merge-patch+json"
TIMEOUT = 60.0


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulerName": SCHEDULER_NAME, "containers": [{"name": "c", "image": "x"}]},
    }


STATUS = {
    "status": {
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes fit"}
        ]
    }
}


def _binding(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": NS},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
    }


def _eviction(name: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": NS}}


class Client:
    """One way to send: ``request`` from any thread, ``watch`` yielding the body's lines."""

    name = ""

    def request(self, method: str, path: str, body: Any, content_type: str) -> bytes:
        raise NotImplementedError

    def watch(self, path: str) -> Iterator[bytes]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class Hand(Client):
    name = "hand"

    def __init__(self, api: Any) -> None:
        self.rest = LeanRest(api, direct=True)

    def request(self, method: str, path: str, body: Any, content_type: str) -> bytes:
        return self.rest.request(method, path, body, content_type=content_type, timeout=TIMEOUT)

    def watch(self, path: str) -> Iterator[bytes]:
        stream = self.rest.stream(path, timeout=TIMEOUT)
        try:
            yield from stream.lines()
        finally:
            stream.shutdown()
            stream.close()


class _Auth:
    def __init__(self, api: Any) -> None:
        cfg = api.configuration
        self.host = str(cfg.host).rstrip("/")
        auth = cfg.auth_settings().get("BearerToken")
        self.headers = {"Accept": JSON, str(auth["key"]): str(auth["value"])}
        self.tls = tls_context(cfg)


class Urllib3(Client, _Auth):
    name = "urllib3"

    def __init__(self, api: Any, size: int) -> None:
        import urllib3

        _Auth.__init__(self, api)
        self.urllib3 = urllib3
        self.pool = urllib3.PoolManager(num_pools=2, maxsize=size, ssl_context=self.tls)

    def request(self, method: str, path: str, body: Any, content_type: str) -> bytes:
        resp = self.pool.request(
            method,
            self.host + path,
            body=None if body is None else orjson.dumps(body),
            headers={**self.headers, "Content-Type": content_type},
            timeout=self.urllib3.Timeout(total=TIMEOUT),
            retries=False,
            preload_content=False,
        )
        try:
            data = resp.read()
        finally:
            resp.release_conn()
        if resp.status >= 400:
            raise RuntimeError(f"{method} {path}: {resp.status} {data[:200]!r}")
        return bytes(data)

    def watch(self, path: str) -> Iterator[bytes]:
        resp = self.pool.request(
            "GET",
            self.host + path,
            headers=self.headers,
            timeout=self.urllib3.Timeout(connect=10, read=TIMEOUT),
            retries=False,
            preload_content=False,
        )
        try:
            pending = b""
            for data in resp.stream(65536, decode_content=False):
                *lines, pending = (pending + data).split(b"\n")
                yield from (line for line in lines if line)
        finally:
            resp.drain_conn()
            resp.release_conn()


class Httpx(Client, _Auth):
    name = "httpx"

    def __init__(self, api: Any, size: int) -> None:
        import httpx

        _Auth.__init__(self, api)
        self.client = httpx.Client(
            verify=self.tls,
            headers=self.headers,
            timeout=TIMEOUT,
            limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
        )

    def request(self, method: str, path: str, body: Any, content_type: str) -> bytes:
        resp = self.client.request(
            method,
            self.host + path,
            content=None if body is None else orjson.dumps(body),
            headers={"Content-Type": content_type},
        )
        if resp.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.content[:200]!r}")
        content: bytes = resp.content  # (httpx is no dependency: untyped here)
        return content

    def watch(self, path: str) -> Iterator[bytes]:
        with self.client.stream("GET", self.host + path) as resp:
            pending = b""
            for data in resp.iter_raw():
                *lines, pending = (pending + data).split(b"\n")
                yield from (line for line in lines if line)

    def close(self) -> None:
        self.client.close()


class Aiohttp(Client, _Auth):
    name = "aiohttp"

    def __init__(self, api: Any, size: int) -> None:
        _Auth.__init__(self, api)
        self.size = size
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="aiohttp-loop", daemon=True)
        self.thread.start()
        self.session = asyncio.run_coroutine_threadsafe(self._session(), self.loop).result()

    async def _session(self) -> Any:
        import aiohttp

        self.aiohttp = aiohttp
        return aiohttp.ClientSession(
            headers=self.headers,
            connector=aiohttp.TCPConnector(ssl=self.tls, limit=self.size),
            timeout=aiohttp.ClientTimeout(total=TIMEOUT),
        )

    async def _request(self, method: str, path: str, body: bytes | None, content_type: str) -> bytes:
        async with self.session.request(
            method, self.host + path, data=body, headers={"Content-Type": content_type}
        ) as resp:
            data: bytes = await resp.read()
            if resp.status >= 400:
                raise RuntimeError(f"{method} {path}: {resp.status} {data[:200]!r}")
            return data

    def request(self, method: str, path: str, body: Any, content_type: str) -> bytes:
        coro = self._request(method, path, None if body is None else orjson.dumps(body), content_type)
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def watch(self, path: str) -> Iterator[bytes]:
        """The lines as the loop reads them, handed over in batches (whatever arrived at once)."""
        import queue

        lines: queue.SimpleQueue[list[bytes] | None] = queue.SimpleQueue()
        done = threading.Event()

        async def read() -> None:
            try:
                timeout = self.aiohttp.ClientTimeout(total=None, sock_read=TIMEOUT)
                async with self.session.get(self.host + path, timeout=timeout) as resp:
                    pending = b""
                    async for data in resp.content.iter_any():
                        *got, pending = (pending + data).split(b"\n")
                        lines.put([line for line in got if line])
                        if done.is_set():
                            return
            finally:
                lines.put(None)

        future = asyncio.run_coroutine_threadsafe(read(), self.loop)
        try:
            while (batch := lines.get()) is not None:
                yield from batch
        finally:
            done.set()
            future.cancel()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.session.close(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


TICKS = os.sysconf("SC_CLK_TCK")
#: The kube-apiserver's pid (set once it runs): its CPU per request is printed beside the client's.
APISERVER: list[int] = []


def _apiserver_cpu() -> float:
    """The kube-apiserver's CPU seconds so far (user + system, from /proc)."""
    if not APISERVER:
        return 0.0
    fields = Path(f"/proc/{APISERVER[0]}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _phase(
    client: Client, names: list[str], workers: int, call: Callable[[Client, str], bytes]
) -> tuple[float, float, float]:
    """Wall, this process's CPU and the apiserver's CPU seconds of ``call`` for every name on ``workers``
    threads."""
    with ThreadPoolExecutor(workers) as pool:
        c0, a0, w0 = time.process_time(), _apiserver_cpu(), time.perf_counter()
        list(pool.map(lambda n: call(client, n), names))
        return time.perf_counter() - w0, time.process_time() - c0, _apiserver_cpu() - a0


def _watch(client: Client, rv: str, want: int) -> tuple[float, float, int]:
    path = f"/api/v1/namespaces/{NS}/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=false"
    seen = 0
    c0, w0 = time.process_time(), time.perf_counter()
    for line in client.watch(path):
        event = orjson.loads(line)
        if event.get("type") == "ERROR":
            raise RuntimeError(f"{client.name} watch: {event}")
        seen += 1
        if seen >= want:
            break
    return time.perf_counter() - w0, time.process_time() - c0, seen


KINDS = ("status", "bind", "evict", "watch")


def _warm(client: Client, _name: str) -> bytes:
    return client.request("GET", f"/api/v1/namespaces/{NS}/pods?limit=1", None, JSON)


def _round(
    client: Client, names: list[str], rv: str, args: argparse.Namespace
) -> dict[str, tuple[float, float, float]]:
    """Per kind: (requests or events per second, CPU ms each)."""
    out: dict[str, tuple[float, float, float]] = {}
    n = len(names)
    phases = {
        "status": (
            args.workers,
            lambda c, x: c.request("PATCH", pod_path(NS, x, "status"), STATUS, STRATEGIC),
        ),
        "bind": (
            args.bind_workers,
            lambda c, x: c.request("POST", pod_path(NS, x, "binding"), _binding(x), JSON),
        ),
        "evict": (
            args.workers,
            lambda c, x: c.request("POST", pod_path(NS, x, "eviction"), _eviction(x), JSON),
        ),
    }
    for kind, (workers, call) in phases.items():
        wall, cpu, api = _phase(client, names, workers, call)
        out[kind] = (n / wall, 1000 * cpu / n, 1000 * api / n)
    a0 = _apiserver_cpu()
    wall, cpu, seen = _watch(client, rv, 3 * n)
    out["watch"] = (seen / wall, 1000 * cpu / max(1, seen), 1000 * (_apiserver_cpu() - a0) / max(1, seen))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--round", type=int, default=300, help="pods per client per round")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (each runs every client once)")
    parser.add_argument("--bind-workers", type=int, default=64)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--clients", default="hand,urllib3,httpx,aiohttp")
    args = parser.parse_args()
    wanted = [c.strip() for c in args.clients.split(",") if c.strip()]
    print("machine at start:", describe(), flush=True)
    cp = LocalControlPlane()
    cp.start()
    APISERVER.extend(p.popen.pid for p in cp._procs if p.name == "kube-apiserver")
    size = max(args.bind_workers, args.workers) + 4
    clients: dict[str, Client] = {}
    try:
        api = cp.api_client()
        makers: dict[str, Callable[[], Client]] = {
            "hand": lambda: Hand(api),
            "urllib3": lambda: Urllib3(api, size),
            "httpx": lambda: Httpx(api, size),
            "aiohttp": lambda: Aiohttp(api, size),
        }
        for name in wanted:
            try:
                clients[name] = makers[name]()
            except ImportError as exc:  # httpx is no dependency of volsched: pip install httpx to measure it
                print(f"{name}: skipped ({exc})", flush=True)
        wanted = list(clients)
        setup = clients[wanted[0]]
        setup.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}}, JSON)
        total = args.round * len(clients) * args.repeat
        names = [f"p{i:06d}" for i in range(total)]
        with ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda n: setup.request("POST", f"/api/v1/namespaces/{NS}/pods", _pod(n), JSON), names
                )
            )
        print(
            f"{total} pods created; {args.round} pods per client per round, {args.repeat} rounds", flush=True
        )
        figures: dict[str, list[dict[str, tuple[float, float, float]]]] = {name: [] for name in clients}
        order = list(clients)
        at = 0
        for r in range(args.repeat):
            rotated = order[r % len(order) :] + order[: r % len(order)]
            for name in rotated:
                batch = names[at : at + args.round]
                at += args.round
                listing = orjson.loads(
                    setup.request("GET", f"/api/v1/namespaces/{NS}/pods?limit=1", None, JSON)
                )
                rv = listing["metadata"]["resourceVersion"]
                got = _round(clients[name], batch, rv, args)
                figures[name].append(got)
                print(
                    f"round {r + 1} {name:8s} "
                    + "  ".join(
                        f"{k} {got[k][0]:6.0f}/s {got[k][1]:5.2f} ms ({got[k][2]:5.2f})" for k in KINDS
                    ),
                    flush=True,
                )
        print()
        print(
            "median over rounds (min-max): per second | CPU ms each here | the apiserver's CPU ms each; "
            "ratio to hand of the same round"
        )
        for name in clients:
            cells = []
            for k in KINDS:
                rates = [f[k][0] for f in figures[name]]
                cpus = [f[k][1] for f in figures[name]]
                apis = [f[k][2] for f in figures[name]]
                cell = (
                    f"{k} {statistics.median(rates):5.0f}/s ({min(rates):.0f}-{max(rates):.0f}) "
                    f"{statistics.median(cpus):5.2f} ms ({min(cpus):.2f}-{max(cpus):.2f}) "
                    f"| {statistics.median(apis):5.2f} ms"
                )
                if "hand" in figures and name != "hand":
                    rate_ratio = statistics.median(
                        f[k][0] / h[k][0] for f, h in zip(figures[name], figures["hand"], strict=True)
                    )
                    cpu_ratio = statistics.median(
                        f[k][1] / h[k][1] for f, h in zip(figures[name], figures["hand"], strict=True)
                    )
                    cell += f" [x{rate_ratio:.2f} rate, x{cpu_ratio:.2f} CPU]"
                cells.append(cell)
            print(f"{name:8s} " + "\n         ".join(cells))
    finally:
        for c in clients.values():
            try:
                c.close()
            except Exception as exc:  # the report is printed anyway
                print(f"closing {c.name}: {exc}")
        cp.stop()
        print("machine at end:", describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
