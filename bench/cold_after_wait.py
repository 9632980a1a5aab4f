"""What a fixed piece of work costs right after the thread waited, against back to back: the same
dependent walk over a table (every step a read the next depends on, as a session's Python is), timed
after sleeping, after spinning (the thread kept on the processor) and with no wait, in a process that
does nothing else. Whether the "cold" cost of an arriving pod's session after a wait is the operator's
or the machine's: a process this small pays it too if it is the machine's (its other processes and
tenants, the hypervisor), and spinning keeps it away only if the wait itself (the processor's sleep) is
the cause.

    python bench/cold_after_wait.py [--kib 256] [--steps 2000] [--waits 0,0.2,1,5,20,50] [--rounds 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import describe


def walk(table: list[int], steps: int) -> int:
    i = 0
    for _ in range(steps):
        i = table[i]
    return i


def timed(table: list[int], *, steps: int, wait: float, spin: bool, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        if wait > 0:
            if spin:
                end = time.perf_counter() + wait
                while time.perf_counter() < end:
                    pass
            else:
                time.sleep(wait)
        t = time.perf_counter()
        walk(table, steps)
        out.append(time.perf_counter() - t)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kib", type=int, default=256, help="the table's size (KiB of the list's slots)")
    p.add_argument("--steps", type=int, default=2000, help="dependent reads per timed walk")
    p.add_argument("--waits", default="0,0.2,1,5,20,50", help="waits before each walk, ms, comma-separated")
    p.add_argument("--rounds", type=int, default=200, help="timed walks per wait and way of waiting")
    args = p.parse_args(argv)
    n = args.kib * 1024 // 8
    order = list(range(n))
    random.Random(1).shuffle(order)
    table = [0] * n  # one cycle through every slot, in a random order: each step lands somewhere else
    for a, b in zip(order, order[1:] + order[:1], strict=True):
        table[a] = b
    print("machine:", describe())
    print(
        f"a walk of {args.steps} dependent reads over {args.kib} KiB; p50 (p25-p75) us of {args.rounds} walks"
    )
    hot = None
    for wait_ms in (float(w) for w in args.waits.split(",")):
        for spin in (False, True) if wait_ms > 0 else (False,):
            ts = sorted(timed(table, steps=args.steps, wait=wait_ms / 1000, spin=spin, rounds=args.rounds))
            p50 = statistics.median(ts)
            hot = hot or p50
            how = (
                "back to back" if wait_ms == 0 else f"after {wait_ms:g} ms {'spinning' if spin else 'asleep'}"
            )
            q = len(ts) // 4
            print(f"  {how:<26} {1e6 * p50:8.1f} ({1e6 * ts[q]:.1f}-{1e6 * ts[3 * q]:.1f})  x{p50 / hot:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
