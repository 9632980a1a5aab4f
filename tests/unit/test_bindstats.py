"""The bind benchmark's arithmetic (bench/bindstats.py): percentiles, latency and throughput of a run, and
reading CPU time and peak memory of a process tree from /proc."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bindstats import (
    CLOCK_TICKS,
    TreeUsage,
    descendants,
    parse_stat,
    parse_vm_hwm,
    parse_watch_line,
    percentile,
    ratio,
    run_figures,
    thread_cpu,
)


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([3.0, 1.0, 2.0], 50, 2.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
        ([1.0, 2.0, 3.0, 4.0], 0, 1.0),
        ([1.0, 2.0, 3.0, 4.0], 100, 4.0),
        ([float(i) for i in range(1, 101)], 99, 99.01),  # numpy.percentile(range(1, 101), 99)
        ([7.0], 99, 7.0),
    ],
)
def test_percentile_interpolates_between_closest_ranks(
    values: list[float], q: float, expected: float
) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_of_nothing_is_nan_and_out_of_range_is_refused() -> None:
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile([1.0], 101)


STAT = (
    "4242 (python3 -m (weird) name) S 4000 4242 4242 0 -1 4194560 5000 0 0 0 "
    "250 50 30 20 20 0 9 0 1234 100000 2000 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
)


def test_stat_is_read_from_after_the_last_parenthesis() -> None:
    st = parse_stat(STAT, ticks=100)
    assert (st.pid, st.ppid) == (4242, 4000)
    assert st.cpu_seconds == pytest.approx((250 + 50 + 30 + 20) / 100)


def test_vm_hwm_is_in_bytes_and_zero_when_absent() -> None:
    assert (
        parse_vm_hwm("Name:\tpython\nVmPeak:\t  900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 1 kB\n")
        == 123456 * 1024
    )
    assert parse_vm_hwm("Name:\tzombie\nState:\tZ\n") == 0


def test_descendants_follow_parents_and_leave_others_out() -> None:
    parents = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20}
    assert descendants(10, parents) == {10, 11, 12, 13}
    assert descendants(99, parents) == {99}


def _proc_entry(root: Path, pid: int, ppid: int, ticks: int, hwm_kb: int, waited: int = 0) -> None:
    d = root / str(pid)
    d.mkdir(exist_ok=True)
    fields = ["S", str(ppid), *["0"] * 9, str(ticks), "0", str(waited), "0"]
    (d / "stat").write_text(f"{pid} (p) {' '.join(fields)} 0 0\n")
    (d / "status").write_text(f"Name:\tp\nVmHWM:\t{hwm_kb} kB\n")


def test_tree_usage_sums_the_tree_and_keeps_what_an_exited_child_used(tmp_path: Path) -> None:
    _proc_entry(tmp_path, 10, 1, ticks=100, hwm_kb=1000)
    _proc_entry(tmp_path, 11, 10, ticks=50, hwm_kb=500)
    _proc_entry(tmp_path, 30, 1, ticks=999, hwm_kb=9999)  # not ours
    (tmp_path / "self").mkdir()  # not a pid: skipped
    usage = TreeUsage(10, proc=tmp_path)
    usage.sample()
    assert usage.cpu_seconds == pytest.approx(150 / CLOCK_TICKS)
    assert usage.peak_rss == 1500 * 1024
    for f in (tmp_path / "11").iterdir():
        f.unlink()
    (tmp_path / "11").rmdir()
    _proc_entry(tmp_path, 10, 1, ticks=120, hwm_kb=900)  # VmHWM never goes down; a lower sample is kept high
    usage.sample()
    assert usage.cpu_seconds == pytest.approx(170 / CLOCK_TICKS)
    assert usage.peak_rss == 1500 * 1024


def test_a_child_its_parent_waited_for_is_counted_once(tmp_path: Path) -> None:
    _proc_entry(tmp_path, 10, 1, ticks=100, hwm_kb=1000, waited=7)  # a child before the first sample
    _proc_entry(tmp_path, 11, 10, ticks=50, hwm_kb=500)
    usage = TreeUsage(10, proc=tmp_path)
    usage.sample()
    assert usage.cpu_seconds == pytest.approx(157 / CLOCK_TICKS)
    for f in (tmp_path / "11").iterdir():
        f.unlink()
    (tmp_path / "11").rmdir()
    # Waited for: its 50 ticks seen, and 10 more after its last sample, now in the parent's cutime.
    _proc_entry(tmp_path, 10, 1, ticks=120, hwm_kb=1000, waited=7 + 60)
    usage.sample()
    assert usage.cpu_seconds == pytest.approx((120 + 50 + 7 + 10) / CLOCK_TICKS)


def test_thread_cpu_reads_each_thread_of_the_process(tmp_path: Path) -> None:
    for tid, ticks in ((10, 100), (12, 30)):
        task = tmp_path / "10" / "task" / str(tid)
        task.mkdir(parents=True)
        (task / "stat").write_text(
            f"{tid} (python (x)) S 1 {tid} {tid} 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 2 0\n"
        )
    (tmp_path / "10" / "task" / "13").mkdir()  # gone meanwhile: skipped
    assert thread_cpu(10, proc=tmp_path) == {
        10: pytest.approx(100 / CLOCK_TICKS),
        12: pytest.approx(30 / CLOCK_TICKS),
    }
    assert thread_cpu(99, proc=tmp_path) == {}


def test_backlog_latency_counts_from_the_scheduler_start() -> None:
    binds = {"a": 12.0, "b": 14.0, "c": 16.0}
    f = run_figures(pods=4, start=10.0, binds=binds, origins=None)
    assert (f.pods, f.bound) == (4, 3)
    assert f.first_bind == pytest.approx(2.0)
    assert f.p50 == pytest.approx(4.0)
    assert f.throughput == pytest.approx(3 / 4.0)  # bound / (last bind - first bind)
    assert f.wall == pytest.approx(6.0)


def test_arriving_latency_counts_from_each_pods_creation() -> None:
    binds = {"a": 12.0, "b": 14.0, "c": 16.0}
    created = {"a": 11.5, "b": 11.0, "c": 15.0}
    f = run_figures(pods=3, start=10.0, binds=binds, origins=created)
    assert f.p50 == pytest.approx(1.0)  # latencies 0.5, 3.0, 1.0
    assert f.p99 == pytest.approx(1.0 + (3.0 - 1.0) * 0.98)


def test_nothing_bound_gives_no_figures_and_no_ratio() -> None:
    f = run_figures(pods=3, start=0.0, binds={}, origins=None)
    assert f.bound == 0 and f.throughput == 0.0 and math.isnan(f.p50)
    assert ratio(f.throughput, None) == "-"
    assert ratio(900.0, 450.0) == "2.00x"


def test_watch_lines_keep_the_first_time_a_pod_was_seen_and_seen_bound() -> None:
    added: dict[str, float] = {}
    bound: dict[str, tuple[float, str]] = {}
    for line in [
        "A pod-1 1700000000500000000",
        "A pod-1 1700000009000000000",
        "B pod-1 node-7 1700000001250000000",
        "B pod-1 node-8 1700000002000000000",
        "garbage",
        "",
    ]:
        parse_watch_line(line, added, bound)
    assert added == {"pod-1": pytest.approx(1700000000.5)}
    assert bound == {"pod-1": (pytest.approx(1700000001.25), "node-7")}


def test_watch_lines_of_pods_there_before_the_run_are_not_recorded() -> None:
    added: dict[str, float] = {}
    bound: dict[str, tuple[float, str]] = {}
    for line in ["A stuck-000 1700000000000000000", "B stuck-000 node-1 1700000001000000000"]:
        parse_watch_line(line, added, bound, skip=frozenset({"stuck-000"}))
    parse_watch_line("A pod-1 1700000002000000000", added, bound, skip=frozenset({"stuck-000"}))
    assert added == {"pod-1": pytest.approx(1700000002.0)}
    assert bound == {}
