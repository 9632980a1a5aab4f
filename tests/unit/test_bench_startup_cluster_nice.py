"""bench/bench_startup.py puts every thread of the control plane at the measured runs' nice: a process's
nice on Linux is its threads' own, and a cluster held by a command started at ``nice -n 10`` served the
schedulers' listings at a lower priority than they ran at (both slower to ready than on the same cluster
at the runs' nice). Setting the pid alone (``renice -p``) changes its main thread only."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_startup import set_nice

#: A process of several threads (as kube-apiserver and etcd are), each made before it says so.
THREADS = """
import sys, threading
started = [threading.Event() for _ in range(3)]
def wait(e):
    e.set()
    sys.stdin.read()
for e in started:
    threading.Thread(target=wait, args=(e,), daemon=True).start()
    e.wait()
print("started", flush=True)
sys.stdin.read()
"""


def _nices(pid: int) -> list[int]:
    """Each thread's nice, from /proc (the 19th field of a task's stat)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        out.append(int(fields[16]))
    return out


def _another_nice() -> int:
    """A nice other than the one this process runs at (which its child's threads start at): a higher one,
    which needs no right; at the highest (19), a lower one where this process may lower a nice (root, or
    ``RLIMIT_NICE``). Before, the test asked 19 of a child already at 19 and failed when pytest itself ran
    at nice 19 (``nice -n 19``, or a bench lock's ``nice -n 5`` under ``nice -n 14``)."""
    now = os.getpriority(os.PRIO_PROCESS, 0)
    if now < 19:
        return min(19, now + 3)
    lower = now - 3
    if os.geteuid() != 0 and 20 - resource.getrlimit(resource.RLIMIT_NICE)[0] > lower:
        pytest.skip("pytest runs at nice 19 and may not lower a nice: there is no other nice to set")
    return lower


def test_every_thread_of_the_process_takes_the_nice() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", THREADS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "started\n"
        target = _another_nice()
        assert set(_nices(proc.pid)) != {target}
        assert set_nice(proc.pid, target) == 4
        assert _nices(proc.pid) == [target] * 4
    finally:
        proc.kill()
        proc.wait()
