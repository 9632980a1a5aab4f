"""The ceiling of ``bench/bind_throughput.py``: a bare binder that posts ``pods/binding`` as fast as the
apiserver takes them, with no scheduling at all (nodes taken round-robin, nothing checked).

``--procs`` processes each watch the pending pods of ``--scheduler-name`` in ``--namespace`` (one watch
from the start: the existing pods, then the new ones), take the pods whose name hashes to them and bind
each over an aiohttp session with ``--conns`` connections. Each process prints ``ready`` once its watch
is open. It runs until killed.

    python bench/bare_binder.py --server URL --token-file F --ca CA --namespace NS --scheduler-name S
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import re
import ssl
import sys
import zlib

import aiohttp

_NAME = re.compile(rb'"name":"([^"]+)"')
_NODE_NAME = re.compile(rb'"nodeName":"')
_RV = re.compile(rb'"resourceVersion":"([^"]+)"')


async def _bind_loop(args: argparse.Namespace, index: int) -> None:
    ctx = ssl.create_default_context(cafile=args.ca)
    with open(args.token_file) as f:
        headers = {"Authorization": f"Bearer {f.read().strip()}"}
    conn = aiohttp.TCPConnector(ssl=ctx, limit=args.conns + 1)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with aiohttp.ClientSession(connector=conn, headers=headers, timeout=timeout) as http:
        async with http.get(f"{args.server}/api/v1/nodes") as resp:
            resp.raise_for_status()
            nodes = [n["metadata"]["name"] for n in (await resp.json())["items"]]
        if not nodes:
            raise SystemExit("bare_binder: no nodes")
        base = f"{args.server}/api/v1/namespaces/{args.namespace}/pods"
        queue: asyncio.Queue[str] = asyncio.Queue()

        async def binder(turn: int) -> None:
            """Bind the queued pods, one request at a time, to nodes round-robin from ``turn``."""
            while True:
                name = await queue.get()
                node = nodes[turn % len(nodes)]
                turn += args.procs * args.conns
                body = {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                }
                pause = 0.05
                while True:  # until the apiserver answers (a busy one says 429 or times out)
                    try:
                        async with http.post(f"{base}/{name}/binding", json=body) as resp:
                            await resp.read()
                            if resp.status != 429 and resp.status < 500:
                                break  # 201, or 409: bound already, 404: gone: nothing to do
                    except (aiohttp.ClientError, TimeoutError):
                        pass
                    await asyncio.sleep(pause)
                    pause = min(1.0, pause * 2)

        workers = [asyncio.create_task(binder(index + args.procs * i)) for i in range(args.conns)]
        seen: set[str] = set()
        selector = f"spec.schedulerName={args.scheduler_name},spec.nodeName="

        def take(name: str) -> None:
            if name not in seen and zlib.crc32(name.encode()) % args.procs == index:
                seen.add(name)
                queue.put_nowait(name)

        async def relist() -> str:
            """The pending pods now (queued) and the list's resourceVersion to watch from. (A watch from
            "" would send them in the order of their names, not of their versions: resumed after the
            apiserver closed it, it would miss some.)"""
            async with http.get(base, params={"fieldSelector": selector}) as resp:
                resp.raise_for_status()
                data = await resp.json()
            for item in data["items"]:
                take(item["metadata"]["name"])
            return str(data["metadata"]["resourceVersion"])

        rv = await relist()
        ready = False
        while True:  # the apiserver closes a watch that falls behind: watch again from the last event
            params = {
                "watch": "1",
                "fieldSelector": selector,
                "timeoutSeconds": "86400",
                "resourceVersion": rv,
            }
            async with http.get(base, params=params) as resp:
                if resp.status == 410:  # the events since rv are gone: list again
                    rv = await relist()
                    continue
                resp.raise_for_status()
                if not ready:
                    print("ready", flush=True)
                    ready = True
                while True:
                    line = await resp.content.readline()
                    if not line:
                        break
                    if (m := _RV.search(line)) is not None:
                        rv = m.group(1).decode()
                    if line.startswith(b'{"type":"ADDED"') and not _NODE_NAME.search(line):
                        m = _NAME.search(line)
                        if m is not None:
                            take(m.group(1).decode())
        del workers


def _child(args: argparse.Namespace, index: int) -> None:
    asyncio.run(_bind_loop(args, index))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--scheduler-name", required=True)
    p.add_argument("--procs", type=int, default=2, help="processes (default 2)")
    p.add_argument("--conns", type=int, default=64, help="connections per process (default 64)")
    args = p.parse_args(argv)
    if args.procs == 1:
        _child(args, 0)
        return 0
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_child, args=(args, i), daemon=True) for i in range(args.procs)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    return max((proc.exitcode or 0) for proc in procs)


if __name__ == "__main__":
    sys.exit(main())
