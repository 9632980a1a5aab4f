"""bench/arriving_latency.py's ``--untraced`` and ``--queue``, without a cluster: what each changes in what
every run is given, and what the bench reads back. Untraced, volsched's ``--log-level`` leaves the
``volsched.latency`` logger at INFO, so its lines are not written and creation-to-bind comes from the
bench's own watch; with ``--queue`` each run makes the Queue the bench's pods go to."""

from __future__ import annotations

import itertools
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from arriving_latency import (
    beside,
    collections,
    creation_to_bind,
    imports_after_ready,
    parse_args,
    run_options,
    volsched_figures,
    within,
)
from bind_throughput import NAMESPACE, PODS_QUEUE, Result
from bindstats import RunFigures
from builders import pod_body

from volsched.kube.latency import PodLatency
from volsched.kube.latency import log as latency_log
from volsched.model.decode import build_queue
from volsched.model.vocabulary import DEFAULT_QUEUE, queue_annotation
from volsched.operator.settings import build_parser, parse_log_levels


def _latency_level(volsched_args: str) -> int:
    """The ``volsched.latency`` logger's level under these ``volsched run`` options (which it takes)."""
    levels = parse_log_levels(str(build_parser().parse_args(volsched_args.split()).log_level))
    return levels.get("volsched.latency", levels[""])


@pytest.mark.parametrize(("untraced", "level"), [(False, logging.DEBUG), (True, logging.INFO)])
def test_untraced_runs_volsched_with_its_latency_logger_at_info(untraced: bool, level: int) -> None:
    argv = ["--volsched-args", "--metrics-port 0", *(["--untraced"] if untraced else [])]
    options = run_options(parse_args(argv))
    assert _latency_level(options.volsched_args) == level
    assert options.volsched_args.endswith("--metrics-port 0")  # the extra options still given


@pytest.fixture
def latency_to(tmp_path: Path) -> Iterator[Path]:
    """The ``volsched.latency`` logger written to a file, as volsched's log has it (restored after)."""
    path = tmp_path / "volsched.log"
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    before = latency_log.level
    latency_log.addHandler(handler)
    try:
        yield path
    finally:
        latency_log.removeHandler(handler)
        handler.close()
        latency_log.setLevel(before)


@pytest.mark.parametrize("untraced", [False, True])
def test_creation_to_bind_comes_from_the_latency_lines_or_else_the_bench_watch(
    latency_to: Path, untraced: bool
) -> None:
    latency_log.setLevel(
        _latency_level(run_options(parse_args(["--untraced"] if untraced else [])).volsched_args)
    )
    ticks = itertools.count(1000.0, 0.001)
    lat = PodLatency(clock=lambda: next(ticks))
    key = f"{NAMESPACE}/pod-000000"
    created = 999.990
    lat.line_read()
    lat.saw(key)
    lat.rang()
    lat.calling()
    lat.woke()
    lat.session()
    lat.decided([key])
    lat.session_done({"allocate": 0.0001}, binds=1)
    lat.answered(key, sent=1000.010, answered=1000.012, result="bound")
    result = Result(
        "volsched", "arriving", RunFigures(1, 1, 1.0, 0.0, 0.0, 0.0, 0.0), ready=0.0, cpu_per_1000=0.0,
        peak_rss=0, stalled=False, added={"pod-000000": created}, binds={"pod-000000": 1000.020},
        log=latency_to,
    )  # fmt: skip
    pods: dict[str, dict[str, float]] = {}
    stages, sessions = volsched_figures(result, pods)
    assert creation_to_bind(result) == pytest.approx([0.030])  # the bench watch's
    assert stages["total"] == pytest.approx([0.030])
    if untraced:
        assert latency_to.read_text() == ""
        assert not pods and not sessions
        assert all(not values for stage, values in stages.items() if stage != "total")
    else:
        assert stages["watch"] == pytest.approx([0.011])  # created -> volsched's watch saw it
        assert stages["session"] == pytest.approx([0.001])  # its session started -> decided
        assert stages["here"] == [1.0]  # its session ran on the thread that read its event
        assert pods["pod-000000"]["total"] == pytest.approx(0.030)
        (session,) = sessions
        assert session["allocate"] == pytest.approx(0.1)


@pytest.mark.parametrize("queue", [False, True])
def test_queue_makes_the_queue_the_bench_pods_go_to(queue: bool) -> None:
    assert run_options(parse_args(["--queue"] if queue else [])).queue is queue
    made = build_queue(PODS_QUEUE)  # as volsched reads it
    assert (made.name, made.weight) == (DEFAULT_QUEUE, 1)
    pod = pod_body("pod-000000", "volsched")
    assert queue_annotation(pod["metadata"].get("annotations", {})) is None  # its pods: queue default


def test_the_collectors_runs_in_volscheds_log_are_laid_beside_a_pods_way(latency_to: Path) -> None:
    """``--tail``'s reading: the lines volsched's collector hook writes come back as (generation, start,
    seconds), and a pod's way from creation to bind counts only the part of each run inside it."""
    latency_log.setLevel(logging.DEBUG)
    now = [1000.0]
    lat = PodLatency(clock=lambda: now[0])
    for generation, at in ((0, 1000.0), (2, 1000.5)):
        now[0] = at
        lat._collected("start", {"generation": generation})
        lat._collected("stop", {"generation": generation, "collected": 3})
    lat._collections[0] = (0, 1000.0, 0.004, 3)  # (the perf counter's own seconds, made exact)
    lat._collections[1] = (2, 1000.5, 0.010, 3)
    lat.session()
    lat.session_done({}, binds=0)
    result = Result(
        "volsched", "arriving", RunFigures(0, 0, 1.0, 0.0, 0.0, 0.0, 0.0), ready=0.0, cpu_per_1000=0.0,
        peak_rss=0, stalled=False, added={}, binds={}, log=latency_to,
    )  # fmt: skip
    runs = collections(result)
    assert runs == [(0, 1000.0, pytest.approx(0.004)), (2, 1000.5, pytest.approx(0.010))]
    assert within(runs, 1000.002, 1000.1) == (pytest.approx(0.002), pytest.approx(0.002), 0)
    assert within(runs, 999.0, 1001.0) == (pytest.approx(0.014), pytest.approx(0.010), 2)
    assert within(runs, 1000.2, 1000.4) == (0.0, 0.0, -1)


def test_the_tail_tells_the_pods_of_the_runs_first_second_from_the_rest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from arriving_latency import first_second, print_tail

    # 120 pods at 20/s: the first 20 within the first second; the slowest two are pods 3 and 100.
    pods = [{"created_at": 100.0 + i / 20, "total": 0.005} for i in range(120)]
    pods[2]["total"], pods[99]["total"] = 0.030, 0.020
    said = first_second(pods)
    assert said.startswith("the first 20: p50 5.00 max 30; the other 100: p50/p99 5.00/")
    assert said.endswith("of the slowest 1, 1 among the first")
    kube = [{"created_at": 100.0 + i / 20, "total": 0.004} for i in range(120)]
    rows = [
        {"rate": 20, "repeat": 0, "scheduler": "volsched", "stages": {}, "pods": pods},
        {
            "rate": 20,
            "repeat": 0,
            "scheduler": "kube-scheduler",
            "stages": {"total": [0.004] * 120},
            "watched": kube,
        },
    ]
    print_tail(rows, 2)
    lines = capsys.readouterr().out.splitlines()
    slowest = [line.split() for line in lines if line.split()[:3] == ["20", "0", "volsched"]][:2]
    assert [cells[4] for cells in slowest] == ["3", "100"]  # each one's place in the order of creation
    # Every scheduler's first second, from the bench's watch.
    assert any(line.split()[2:5] == ["kube-scheduler", "the", "first"] for line in lines)


def test_the_pods_beside_the_imports_after_ready_are_told_from_the_others(tmp_path: Path) -> None:
    """The operator's line once the imports after ready are done stamps their end (its log's local time)
    and says how long they took: the pods created meanwhile (seconds after the run's first pod) are
    told apart from the others after the first second; no such line, no window."""
    end = time.mktime(time.strptime("2026-12-01 05:39:47", "%Y-%m-%d %H:%M:%S")) + 0.219
    log = tmp_path / "volsched.log"
    log.write_text(
        "2026-12-01 05:39:45,447 INFO volsched.operator: cache synced: 200 nodes, 0 pods\n"
        "2026-12-01 05:39:47,219 INFO volsched.operator: imported aiohttp.web, prometheus_client after "
        "ready in 1638 ms, 0 pauses for the sessions (0 ms; the longest it went on once they were busy: "
        "0.0 ms); its TLS contexts made ahead\n"
    )
    result = Result(
        "volsched", "arriving", RunFigures(0, 0, 1.0, 0.0, 0.0, 0.0, 0.0), ready=0.0, cpu_per_1000=0.0,
        peak_rss=0, stalled=False, log=log,
    )  # fmt: skip
    assert imports_after_ready(result) == (pytest.approx(end - 1.638), pytest.approx(end))
    first = end - 3.0  # the run's first pod; the imports ran 1.362-3.0 s after it
    pods = [
        {"created_at": first, "total": 0.5},  # the first second: neither
        {"created_at": first + 1.2, "total": 0.010},
        {"created_at": first + 1.5, "total": 0.030},
        {"created_at": first + 2.9, "total": 0.040},
        {"created_at": first + 3.5, "total": 0.012},
    ]
    told = beside(pods, (1.362, 3.0))
    assert told.startswith("2 pods: p50 35.00 max 40;")
    assert "the other 2 after the first second" in told
    assert beside(pods, None) == "-"
    log.write_text("2026-12-01 05:39:45,447 INFO volsched.operator: cache synced: 200 nodes, 0 pods\n")
    assert imports_after_ready(result) is None
