"""``volsched run --thread-slice MS``: the pod watch's thread and the session thread (and the threads they
start) run with that time slice, where the kernel takes one (Linux 6.12 and later); without the flag no
thread of the operator's asks for one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for
from volsched.threadslice import slice_of

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(slice_of() is None, reason="this kernel does not report a fair thread's slice"),
]


def _slices(pid: int) -> list[int]:
    """Each thread's slice (ns), as /proc shows it."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "sched").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        for line in text.splitlines():
            if line.startswith("se.slice"):
                out.append(int(line.rpartition(":")[2]))
    return out


@pytest.mark.parametrize(("flag", "threads"), [(["--thread-slice", "0.2"], 2), ([], 0)], ids=["asked", "not"])
def test_the_threads_on_an_arriving_pods_way_take_the_slice_asked(
    k: Kube, start_operator: Start, flag: list[str], threads: int
) -> None:
    k.nodes(node("n1"))
    op = start_operator(*flag)
    assert op.proc is not None
    ns = k.namespace("slice")
    k.pods(ns, pod("arriving"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/arriving"), 30, what="the pod bound")
    # The pod went the watch's and the session thread's way: both run with the slice by now.
    short = sum(s == 200_000 for s in _slices(op.proc.pid))
    assert short >= 2 if threads else short == 0
