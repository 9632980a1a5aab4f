"""bench/bench_perf.py's report: volsched's pods/s over kube-scheduler's of the same round only, and each
workload's spread over the rounds."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_perf import Row, ratios, report, window_writes


def _row(workload: str, scheduler: str, repeat: int, pods_per_s: float) -> Row:
    return Row(workload, scheduler, 200, 100, 500, repeat=repeat, pods_per_s=pods_per_s)


def test_each_round_is_compared_with_kube_scheduler_of_that_round_and_failed_runs_have_no_ratio() -> None:
    rows = [
        _row("Basic", "volsched", 0, 300.0),
        _row("Basic", "kube-scheduler", 0, 100.0),
        _row("Basic", "volsched", 1, 100.0),
        _row("Basic", "kube-scheduler", 1, 200.0),
        _row("Gangs", "volsched", 0, math.nan),  # failed
        _row("Gangs", "kube-scheduler", 0, 100.0),
        _row("Alone", "volsched", 0, 100.0),  # kube-scheduler not run
    ]
    assert ratios(rows) == {"Basic": [3.0, 0.5]}
    text = report(rows)
    assert "Basic                            2   1.75x  0.50x  3.00x" in text
    assert "Gangs" in text and "Alone" in text  # their rows are listed, without a ratio


def test_one_round_prints_no_spread() -> None:
    rows = [_row("Basic", "volsched", 0, 300.0), _row("Basic", "kube-scheduler", 0, 100.0)]
    assert "median" not in report(rows)


def test_the_writes_in_a_window_are_told_by_kind_without_lease_renewals_or_reads() -> None:
    requests = {
        "POST pods binding": 500,
        "POST pods eviction": 150,
        "PATCH pods status": 3,
        "PATCH podgroups status": 20,
        "POST events": 40,
        "PATCH events": 2,
        "DELETE pods": 150,
        "PUT leases": 4,
        "GET pods": 7,
        "WATCH pods": 1,
    }
    assert window_writes(requests) == {
        "binds": 500,
        "evictions": 150,
        "pod status": 3,
        "podgroup status": 20,
        "events": 42,
        "other": 150,
    }
    row = Row("Gangs", "volsched", 200, 0, 500, pods_per_s=100.0, extra={"requests": requests})
    assert (
        "writes in the window: 500 binds, 150 evictions, 150 other, 42 events, 20 podgroup status"
        in report([row])
    )


def test_a_window_tells_the_apiservers_own_time_a_bind() -> None:
    extra = {"requests": {"POST pods binding": 500}, "served_s": {"POST pods binding": 2.5}}
    row = Row("Basic", "volsched", 200, 0, 500, pods_per_s=100.0, extra=extra)
    assert "500 binds (the apiserver's own 5.0 ms a bind)" in report([row])


def test_the_wait_for_a_cpu_is_the_runqueue_figure_of_each_thread(tmp_path: Path) -> None:
    from bench_perf import runqueue_wait

    for tid, stat in (("7", "1000 2500000000 4\n"), ("8", "5 500000000 1\n"), ("9", "garbled\n")):
        (tmp_path / "7" / "task" / tid).mkdir(parents=True)
        (tmp_path / "7" / "task" / tid / "schedstat").write_text(stat)
    assert runqueue_wait(7, tmp_path) == 3.0
    assert runqueue_wait(99, tmp_path) == 0.0
    row = Row("Basic", "volsched", 200, 0, 500, extra={"waited_for_cpu_s": {"scheduler": 0.4, "etcd": 0.1}})
    assert "waited for a CPU in the window: scheduler 0.40 s, etcd 0.10 s" in report([row])
