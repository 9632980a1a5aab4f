"""bench/bench_perf.py's report: volsched's pods/s over kube-scheduler's of the same round only, and each
workload's spread over the rounds."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_perf
from bench_perf import Row, ratios, report, window_writes
from bindstats import in_turn


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


def test_a_window_tells_its_lease_writes_apart_with_the_apiservers_own_time_each() -> None:
    requests = {"POST pods binding": 50, "POST pods eviction": 150, "PUT leases": 8}
    served = {"POST pods binding": 0.1, "POST pods eviction": 0.3, "PUT leases": 0.02}
    row = Row(
        "Preemption",
        "volsched",
        50,
        200,
        50,
        pods_per_s=10.0,
        extra={"requests": requests, "served_s": served},
    )
    said = report([row])
    assert "150 evictions, 50 binds (the apiserver's own 2.0 ms a bind); besides, 8 Lease PUTs" in said
    assert "(the apiserver's own 2.5 ms each)" in said


def test_the_wait_for_a_cpu_is_the_runqueue_figure_of_each_thread(tmp_path: Path) -> None:
    from bench_perf import runqueue_wait

    for tid, stat in (("7", "1000 2500000000 4\n"), ("8", "5 500000000 1\n"), ("9", "garbled\n")):
        (tmp_path / "7" / "task" / tid).mkdir(parents=True)
        (tmp_path / "7" / "task" / tid / "schedstat").write_text(stat)
    assert runqueue_wait(7, tmp_path) == 3.0
    assert runqueue_wait(99, tmp_path) == 0.0
    row = Row("Basic", "volsched", 200, 0, 500, extra={"waited_for_cpu_s": {"scheduler": 0.4, "etcd": 0.1}})
    assert "waited for a CPU in the window: scheduler 0.40 s, etcd 0.10 s" in report([row])


def test_the_gang_rows_compare_gang_scheduling_with_gang_scheduling_and_the_pod_by_pod_rows_say_so() -> None:
    from bench_perf import RENAMED, WORKLOADS

    known = {w.name: w for w in WORKLOADS}
    assert known["GangsSmall"].workload_api and known["GangsLarge"].workload_api
    assert not known["GangsSmallPodByPod"].workload_api and not known["GangsLargePodByPod"].workload_api
    assert RENAMED == {"WorkloadGangsSmall": "GangsSmall", "WorkloadGangsLarge": "GangsLarge"}
    rows = [_row("GangsSmall", "volsched", 0, 300.0), _row("GangsSmallPodByPod", "volsched", 0, 300.0)]
    text = report(rows)
    assert "GangsSmall: both schedulers gang-schedule the same Workload API gangs" in text
    assert "GangsSmallPodByPod: an extra, not like with like" in text


def test_the_audit_log_tells_writes_in_the_window_from_those_after_the_last_bind(tmp_path: Path) -> None:
    import json

    from bench_perf import audited_writes

    def entry(verb: str, resource: str, sub: str | None, at: str, stage: str = "ResponseComplete") -> str:
        ref = {"resource": resource, **({"subresource": sub} if sub else {})}
        return json.dumps({"stage": stage, "verb": verb, "objectRef": ref, "stageTimestamp": at})

    # 2026-11-30T00:00:10Z is 1795996810 seconds after the epoch.
    log = tmp_path / "audit.jsonl"
    log.write_text(
        "\n".join(
            [
                entry("create", "pods", "binding", "2026-11-30T00:00:09.000000Z"),  # before: not counted
                entry("create", "pods", "binding", "2026-11-30T00:00:10.500000Z"),
                entry("create", "pods", "binding", "2026-11-30T00:00:11.000000Z"),
                entry("patch", "podgroups", "status", "2026-11-30T00:00:10.750000Z"),
                entry("patch", "podgroups", "status", "2026-11-30T00:00:11.250000Z"),
                entry("create", "events", None, "2026-11-30T00:00:11.500000Z"),
                entry("get", "pods", None, "2026-11-30T00:00:10.600000Z"),  # a read: not a write
                entry("create", "pods", "binding", "2026-11-30T00:00:10.600000Z", stage="ResponseStarted"),
                "not json",
            ]
        )
    )
    start = 1795996810.0
    out = audited_writes(log, start=start, end=start + 1.0)
    assert out["in_window"] == {"binds": 2, "podgroup status": 1}
    assert out["after"] == {"podgroup status": 1, "events": 1}
    assert out["span_s"] == {"binds": [0.5, 1.0], "podgroup status": [0.75, 0.75]}
    row = Row("GangsSmall", "volsched", 200, 0, 500, pods_per_s=100.0, extra={"audit": out})
    assert (
        "audit: answered in the window 2 binds (+0.50 to +1.00 s), 1 podgroup status (+0.75 to +0.75 s); "
        "after the last bind 1 podgroup status, 1 events" in report([row])
    )


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        (
            "turn",
            [
                ["volsched-before", "volsched", "kube-scheduler"],
                ["volsched", "kube-scheduler", "volsched-before"],
                ["kube-scheduler", "volsched-before", "volsched"],
                ["volsched-before", "volsched", "kube-scheduler"],
            ],
        ),
        ("fixed", [["volsched-before", "volsched", "kube-scheduler"]] * 4),
    ],
)
def test_each_round_turns_the_order_the_schedulers_run_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, order: str, expected: list[list[str]]
) -> None:
    ran: list[tuple[int, str]] = []

    def run_workload(w: Any, size: Any, scheduler: str, args: Any, workdir: Path, *, repeat: int = 0) -> Row:
        ran.append((repeat, scheduler))
        return _row(w.name, scheduler, repeat, 100.0)

    monkeypatch.setattr(bench_perf, "run_workload", run_workload)
    monkeypatch.setattr(bench_perf, "build_loadgen", lambda: tmp_path / "loadgen")
    monkeypatch.setattr(bench_perf, "kill_all", lambda: None)
    monkeypatch.setattr(bench_perf, "describe", lambda: "machine")
    argv = ["--only", "SchedulingBasic", "--repeat", "4", "--before", str(tmp_path), "--order", order]
    assert bench_perf.main([*argv, "--keep", str(tmp_path / "keep")]) == 0
    assert [[s for r, s in ran if r == rep] for rep in range(4)] == expected


def test_in_turn_runs_each_in_every_place_once_over_as_many_rounds() -> None:
    items = ["a", "b", "c"]
    rounds = [in_turn(items, r) for r in range(3)]
    assert all(sorted(order) == items for order in rounds)
    assert all(sorted(order[place] for order in rounds) == items for place in range(3))
    assert in_turn(items, 3) == items and in_turn([], 1) == []


def test_the_work_of_a_window_is_told_per_bound_pod_and_what_only_one_scheduler_asked() -> None:
    def row(scheduler: str, repeat: int, api_s: float, requests: dict[str, int]) -> Row:
        r = Row("Basic", scheduler, 200, 100, 500, repeat=repeat, bound=500, pods_per_s=100.0, cpu_s=0.5)
        r.extra = {"kube-apiserver_cpu_s": api_s, "requests": requests}
        return r

    binds = {"POST pods binding": 500, "PUT leases": 1}
    both = {"POST pods binding": 500, "POST events": 500}
    rows = [
        row("volsched", 0, 0.5, binds),
        row("kube-scheduler", 0, 1.0, both),
        row("volsched", 1, 0.9, {**binds, "PATCH pods status": 2}),
        row("kube-scheduler", 1, 1.0, both),
        row("volsched", 2, 0.5, binds),  # kube-scheduler's run failed: not in the work
        Row("Basic", "kube-scheduler", 200, 100, 500, repeat=2, note="failed"),
    ]
    text = report(rows).splitlines()
    work = text.index(next(x for x in text if x.startswith("work (volsched)")))
    line = text[work + 1]
    assert line.split()[:8] == ["Basic", "2", "1.40", "2.00", "0.70x", "0.50-0.90", "1.00", "1.00"]
    assert "volsched PATCH pods status 2; kube-scheduler POST events 1000" in line
    assert "leases" not in line
