"""Benchmark: I/O threads beside a computing thread, at several GIL switch intervals.

What the operator's bind workers and watch threads meet while a session computes: each send and each
receive gives the interpreter's lock up, and getting it back waits until the computing thread is made to
let it go (``sys.setswitchinterval``; Python's default 5 ms). Here ``--threads`` threads each do loopback
round trips (50 bytes, against an echo server in another process, a short sleep between) while one
thread computes, for ``--seconds`` at each interval, each interval in a fresh process. Prints, per
interval, the round trips made, their p50/p90 in ms and how far the computing thread got, with the
machine (shared: compare figures of one run; the operator's choice is ``SWITCH_INTERVAL`` in
``volsched/operator/__init__.py``).

    python bench/gil_switch.py                      # 5, 2, 1 and 0.5 ms
    python bench/gil_switch.py --intervals 5,1 --threads 128
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import threading
import time

from machine import describe, in_fresh_process

ECHO = """
import socket, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(1024)
print(s.getsockname()[1], flush=True)
def serve(c):
    while (d := c.recv(100)):
        c.sendall(d)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


def one(interval: float, threads: int, seconds: float) -> dict[str, float]:
    sys.setswitchinterval(interval)
    echo = subprocess.Popen([sys.executable, "-c", ECHO], stdout=subprocess.PIPE, text=True)
    try:
        assert echo.stdout is not None
        port = int(echo.stdout.readline())
        stop = threading.Event()
        times: list[float] = []
        loops = [0]

        def compute() -> None:
            x = 0
            while not stop.is_set():
                for i in range(10_000):
                    x += i * i
                loops[0] += 1

        def round_trips() -> None:
            with socket.create_connection(("127.0.0.1", port)) as s:
                while not stop.is_set():
                    t = time.perf_counter()
                    s.sendall(b"x" * 50)
                    s.recv(100)
                    times.append(time.perf_counter() - t)
                    time.sleep(0.01)

        workers = [threading.Thread(target=round_trips, daemon=True) for _ in range(threads)]
        for w in workers:
            w.start()
        computing = threading.Thread(target=compute, daemon=True)
        computing.start()
        time.sleep(seconds)
        stop.set()
        for w in (*workers, computing):
            w.join()
    finally:
        echo.kill()
        echo.wait()
    times.sort()
    n = len(times)
    return {
        "interval_ms": 1000 * interval,
        "round_trips": n,
        "p50_ms": 1000 * times[n // 2] if n else float("nan"),
        "p90_ms": 1000 * times[int(n * 0.9)] if n else float("nan"),
        "compute_loops": loops[0],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--intervals", default="5,2,1,0.5", help="switch intervals in ms, comma-separated")
    p.add_argument("--threads", type=int, default=64)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--json", action="store_true", help="one interval (the first), as JSON (used by the grid)")
    args = p.parse_args()
    intervals = [float(x) / 1000 for x in args.intervals.split(",") if x.strip()]
    if args.json:
        import json

        print(json.dumps(one(intervals[0], args.threads, args.seconds)))
        return
    print("machine:", describe())
    print(
        f"{args.threads} threads doing loopback round trips beside one computing thread, {args.seconds:g} s each"
    )
    print(f"{'switch':>8} {'round trips':>12} {'p50 ms':>8} {'p90 ms':>8} {'compute loops':>14}")
    for interval in intervals:
        r = in_fresh_process(
            __file__,
            "--intervals",
            str(1000 * interval),
            "--threads",
            str(args.threads),
            "--seconds",
            str(args.seconds),
        )
        print(
            f"{r['interval_ms']:>6.1f}ms {r['round_trips']:>12} {r['p50_ms']:>8.2f} {r['p90_ms']:>8.2f} "
            f"{r['compute_loops']:>14}"
        )


if __name__ == "__main__":
    main()
