"""bench/bench_startup.py puts every thread of the control plane at the measured runs' nice: a process's
nice on Linux is its threads' own, and a cluster held by a command started at ``nice -n 10`` served the
schedulers' listings at a lower priority than they ran at (both slower to ready than on the same cluster
at the runs' nice). Setting the pid alone (``renice -p``) changes its main thread only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_every_thread_of_the_process_takes_the_nice() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", THREADS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "started\n"
        target = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 3)  # raising a nice needs no right
        assert set(_nices(proc.pid)) != {target}
        assert set_nice(proc.pid, target) == 4
        assert _nices(proc.pid) == [target] * 4
    finally:
        proc.kill()
        proc.wait()
