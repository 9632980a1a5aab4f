"""The top lines of a profile in collapsed-stack form (py-spy's ``--format raw``, one ``frame;frame;... N``
line per stack): samples by thread, then the functions with the most samples of their own and the most
samples under them. What ``bench_perf.py --py-spy`` writes is read with it.

    python bench/stacks_top.py volsched.pyspy.txt [--top 25] [--thread NAME]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

THREAD = re.compile(r"^thread \((?:0x)?[0-9a-fA-F]+\): ?(.*)$")


def parse(path: Path) -> list[tuple[str, list[str], int]]:
    """(thread name, frames from the outermost, samples) per line."""
    out = []
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = stack.split(";")
        thread = ""
        m = THREAD.match(frames[0])
        if m is not None:
            thread, frames = m.group(1), frames[1:]
        out.append((thread, frames, int(n)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("path", type=Path)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--thread", default="", help="only threads whose name contains this")
    args = p.parse_args(argv)
    rows = [r for r in parse(args.path) if args.thread in r[0]]
    total = sum(n for _, _, n in rows) or 1
    threads: Counter[str] = Counter()
    own: Counter[str] = Counter()
    under: Counter[str] = Counter()
    for thread, frames, n in rows:
        threads[thread] += n
        if frames:
            own[frames[-1]] += n
        for f in set(frames):
            under[f] += n
    print(f"{total} samples")
    for name, n in threads.most_common():
        print(f"{n:>7} {100 * n / total:5.1f}%  thread {name}")
    print("\nown samples")
    for f, n in own.most_common(args.top):
        print(f"{n:>7} {100 * n / total:5.1f}%  {f}")
    print("\nsamples under")
    for f, n in under.most_common(args.top):
        print(f"{n:>7} {100 * n / total:5.1f}%  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
