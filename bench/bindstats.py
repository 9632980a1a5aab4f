"""Pure helpers of ``bench/bind_throughput.py``: percentiles, the figures of one run, and reading a process
tree's CPU time and peak memory from ``/proc`` (unit-tested in tests/unit/test_bindstats.py)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

T = TypeVar("T")

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), numpy's (linear interpolation between closest ranks); NaN for
    no values."""
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, not {q}")
    return float(np.percentile(values, q))


def in_turn(items: Sequence[T], round_: int) -> list[T]:
    """``items`` in the order they run in round ``round_`` (0 first) of a bench's interleaved rounds:
    turned by one place each round, so that over as many rounds as there are items each runs once in
    every place, and none always runs first, or always after another, on a machine whose load drifts
    within a round."""
    if not items:
        return []
    k = round_ % len(items)
    return [*items[k:], *items[:k]]


# --------------------------------------------------------------------------- /proc


@dataclass(frozen=True)
class ProcStat:
    """The fields of ``/proc/<pid>/stat`` a benchmark needs."""

    pid: int
    ppid: int
    #: utime + stime + cutime + cstime, in seconds: this process and its children it has waited for.
    cpu_seconds: float
    #: cutime + cstime, in seconds: its children it has waited for alone.
    waited_seconds: float = 0.0


def parse_stat(text: str, *, ticks: int = CLOCK_TICKS) -> ProcStat:
    """Parse one ``/proc/<pid>/stat`` line. The command name (field 2) is in parentheses and may hold
    spaces and parentheses itself, so the fields are counted from the last ``)``."""
    pid = int(text[: text.index(" ")])
    rest = text[text.rindex(")") + 2 :].split()
    # rest[0] is field 3 (state): field k is rest[k - 3].
    ppid = int(rest[1])
    utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
    return ProcStat(
        pid=pid,
        ppid=ppid,
        cpu_seconds=(utime + stime + cutime + cstime) / ticks,
        waited_seconds=(cutime + cstime) / ticks,
    )


def thread_cpu(pid: int, *, proc: Path = Path("/proc")) -> dict[int, float]:
    """Each thread of ``pid``: its native id -> its CPU seconds so far (utime + stime of
    ``/proc/<pid>/task/<tid>/stat``); empty once the process is gone."""
    out: dict[int, float] = {}
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            out[int(task.name)] = parse_stat((task / "stat").read_text()).cpu_seconds
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return out


_HWM = re.compile(r"^VmHWM:\s+(\d+)\s+kB", re.MULTILINE)


def parse_vm_hwm(status_text: str) -> int:
    """Peak resident set size (``VmHWM`` of ``/proc/<pid>/status``) in bytes; 0 when absent (a zombie)."""
    m = _HWM.search(status_text)
    return int(m.group(1)) * 1024 if m else 0


def descendants(root: int, parents: Mapping[int, int]) -> set[int]:
    """``root`` and every process whose chain of parents (pid -> ppid) leads to it."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    tree, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in tree:
                tree.add(child)
                todo.append(child)
    return tree


@dataclass
class TreeUsage:
    """CPU seconds and peak RSS of a process tree, sampled now and then (:meth:`sample`). Per process the
    largest value seen is kept (both only grow), so a child that exits keeps what it had used. A child
    its parent waited for is in the parent's cutime and cstime too: counted once (what the parent's
    waited-for time holds beyond the children of it seen is what they used after their last sample)."""

    root: int
    proc: Path = Path("/proc")
    #: Each process's own CPU seconds (utime + stime), the most seen.
    cpu: dict[int, float] = field(default_factory=dict)
    hwm: dict[int, int] = field(default_factory=dict)
    #: Each process's children's it waited for (cutime + cstime), the most seen, and its parent.
    waited: dict[int, float] = field(default_factory=dict)
    parent: dict[int, int] = field(default_factory=dict)
    #: The tree's processes at the last sample.
    alive: set[int] = field(default_factory=set)

    def sample(self) -> None:
        stats: dict[int, ProcStat] = {}
        for entry in self.proc.iterdir() if self.proc.is_dir() else ():
            if not entry.name.isdigit():
                continue
            try:
                stats[int(entry.name)] = parse_stat((entry / "stat").read_text())
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile
        self.alive = descendants(self.root, {p: s.ppid for p, s in stats.items()}) & stats.keys()
        for pid in self.alive:
            st = stats.get(pid)
            if st is None:
                continue
            self.cpu[pid] = max(self.cpu.get(pid, 0.0), st.cpu_seconds - st.waited_seconds)
            self.waited[pid] = max(self.waited.get(pid, 0.0), st.waited_seconds)
            self.parent[pid] = st.ppid
            try:
                hwm = parse_vm_hwm((self.proc / str(pid) / "status").read_text())
            except OSError:
                continue
            self.hwm[pid] = max(self.hwm.get(pid, 0), hwm)

    @property
    def cpu_seconds(self) -> float:
        seen: dict[int, float] = {}  # each process's children seen and gone since: their own CPU
        for pid, cpu in self.cpu.items():
            if pid not in self.alive:
                seen[self.parent[pid]] = seen.get(self.parent[pid], 0.0) + cpu
        beyond = sum(max(0.0, waited - seen.get(pid, 0.0)) for pid, waited in self.waited.items())
        return sum(self.cpu.values()) + beyond

    @property
    def peak_rss(self) -> int:
        """Sum of the processes' peaks (for one process: its VmHWM; for several an upper bound)."""
        return sum(self.hwm.values())


# --------------------------------------------------------------------------- figures of one run


@dataclass(frozen=True)
class RunFigures:
    pods: int
    bound: int
    #: Bound pods per second between the first and the last bind.
    throughput: float
    #: Seconds from the scheduler's start to its first bind.
    first_bind: float
    p50: float
    p99: float
    #: Seconds from the scheduler's start to the last bind.
    wall: float


def run_figures(
    *,
    pods: int,
    start: float,
    binds: Mapping[str, float],
    origins: Mapping[str, float] | None,
) -> RunFigures:
    """The figures of one run from the receive times of the binds (pod name -> time).

    Latency of a pod: its bind time minus its origin: ``origins[name]`` (when the pod was seen created)
    or, with ``origins=None`` (a backlog), ``start`` (the scheduler's start) for every pod.
    Throughput: bound pods / (last bind - first bind); with one bind, bound / (bind - start)."""
    times = sorted(binds.values())
    if not times:
        nan = math.nan
        return RunFigures(pods, 0, 0.0, nan, nan, nan, nan)
    span = times[-1] - times[0]
    if span <= 0:
        span = max(times[-1] - start, 1e-9)
    latencies = [t - (start if origins is None else origins.get(name, start)) for name, t in binds.items()]
    return RunFigures(
        pods=pods,
        bound=len(times),
        throughput=len(times) / span,
        first_bind=times[0] - start,
        p50=percentile(latencies, 50),
        p99=percentile(latencies, 99),
        wall=times[-1] - start,
    )


def parse_watch_line(
    line: str,
    added: dict[str, float],
    bound: dict[str, tuple[float, str]],
    *,
    skip: Container[str] = (),
) -> None:
    """One line of ``loadgen watch``: ``A <pod> <unix ns>`` (first seen) or ``B <pod> <node> <unix ns>``
    (first seen bound); the first time recorded for a pod is kept; a pod in ``skip`` is not recorded."""
    parts = line.split()
    if len(parts) >= 3 and parts[1] in skip:
        return
    if len(parts) == 3 and parts[0] == "A":
        added.setdefault(parts[1], int(parts[2]) / 1e9)
    elif len(parts) == 4 and parts[0] == "B":
        bound.setdefault(parts[1], (int(parts[3]) / 1e9, parts[2]))


def ratio(value: float, reference: float | None) -> str:
    """``"0.19x"``, or ``"-"`` without a reference."""
    if reference is None or not reference or math.isnan(reference) or math.isnan(value):
        return "-"
    return f"{value / reference:.2f}x"


def fmt_seconds(values: Iterable[float]) -> list[str]:
    return ["-" if math.isnan(v) else f"{v:.2f}" for v in values]
