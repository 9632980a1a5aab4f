"""A digest of every decision a replay makes, to check that a change to the engine's speed changes none.

For each session of a replay: its binds, evictions (with their reasons), admissions, every PodGroup's,
Queue's and namespace's status, its events and refusals, and the phases the cycle wrote back; then the
replay's report. And every example's ``volsched simulate -o json`` (the worked replay, with ``--trace``
and ``--compare``, too). Run it on main and on a branch and compare the lines it prints (one sha256 each):

    python bench/replay_digest.py              # all: the 2,000-job slice, the busy slice, one Kueue
                                               # cohort, the examples
    python bench/replay_digest.py slice --jobs 500

A refused example's message names its file: the checkout's root is written as ``<checkout>`` before hashing,
so two checkouts of one commit print the same lines.

Not a benchmark (it times nothing) and not a test (the figures are compared by a person across commits).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench_replay import QUEUES, _cluster

import volsched.simulate.replay as replay_module
from volsched.cycle import CycleReport
from volsched.simulate import Replay
from volsched.simulate.generate import WorkloadParams, generate
from volsched.simulate.scenarios import kueue_baseline


def _session_lines(report: CycleReport) -> list[str]:
    r = report.result
    return [
        f"skipped {report.skipped} sparse {report.sparse}",
        repr([(b.pod, b.uid, b.node) for b in r.binds]),
        repr(sorted(r.bound_jobs.items())),
        repr(r.evictions),
        repr(r.admitted),
        repr(sorted(r.podgroups.items())),
        # (a queue's PodGroups by phase, by phase name: the order they were counted in is no order)
        repr(
            sorted((n, replace(q, podgroups=dict(sorted(q.podgroups.items())))) for n, q in r.queues.items())
        ),
        repr(sorted(r.namespaces.items())),
        repr(r.events),
        repr(sorted(r.rejections.items())),
        f"pipelined {r.pipelined} waiting {r.waiting}",
        repr(sorted(report.phases_changed)),
        repr([(o.bind.pod, o.result) for o in report.binds]),
        repr([(o.eviction.pod, o.result) for o in report.evictions]),
    ]


def digest(replay: Replay) -> tuple[str, int]:
    """Run ``replay``; the sha256 of every session's decisions and the report, and the sessions seen."""
    h = hashlib.sha256()
    count = 0
    run_cycle = replay_module.run_cycle

    def recording(*args: Any, **kwargs: Any) -> CycleReport:
        nonlocal count
        report = run_cycle(*args, **kwargs)
        count += 1
        for line in _session_lines(report):
            h.update(line.encode())
            h.update(b"\n")
        return report

    replay_module.run_cycle = recording  # type: ignore[assignment]
    try:
        result = replay.run()
    finally:
        replay_module.run_cycle = run_cycle
    h.update(json.dumps(result.report(), sort_keys=True, default=str).encode())
    return h.hexdigest(), count


def synthetic(jobs: int, nodes: int, hours: float, peak: float) -> Replay:
    params = WorkloadParams(
        jobs=jobs, hours=hours, queues=QUEUES, peak=peak, sizes={1: 0.7, 4: 0.2, 8: 0.1}, median=900, seed=1
    )
    return Replay(
        _cluster(nodes, list(QUEUES)), None, trace=generate(params), max_idle=60.0, record_pods=False
    )


CHECKOUT = Path(__file__).resolve().parents[1]


def example_runs(examples: Path) -> dict[str, list[str]]:
    """Each example's ``volsched simulate`` arguments, and the worked replay's (``--trace``, ``--compare``)."""
    runs = {f.name: ["-f", str(f)] for f in sorted(examples.glob("*.yaml")) if "replay-teams" not in f.name}
    teams = ["-f", str(examples / "replay-teams.yaml"), "--trace", str(examples / "replay-teams-day.jsonl")]
    runs["replay-trace"] = teams
    runs["replay-compare"] = [*teams, "--compare", str(examples / "replay-teams-a-weight-2.yaml")]
    runs["default"] = []
    evicting = ["--config", str(examples / "reclaim-preempt-scheduler.yaml")]  # (a config, not objects)
    runs.update({f"{name} (evicting config)": [*args, *evicting] for name, args in list(runs.items())})
    return runs


def example_digest(args: list[str], *, root: Path) -> tuple[int, str]:
    """``volsched simulate ARGS -o json``'s exit code and the sha256 of what it printed, with the checkout's
    root ``root`` written as ``<checkout>`` (a refusal names its file): the same for every checkout."""
    cmd = [sys.executable, "-m", "volsched", "simulate", *args, "-o", "json"]
    done = subprocess.run(cmd, check=False, capture_output=True)  # (one is refused: its words count)
    words = (done.stdout + done.stderr).replace(f"{root}{os.sep}".encode(), b"<checkout>/")
    return done.returncode, hashlib.sha256(words).hexdigest()


def examples() -> None:
    """Every example's ``volsched simulate -o json``, and the worked replay's (``--trace``, ``--compare``)."""
    for name, args in example_runs(CHECKOUT / "examples").items():
        print("example", name, *example_digest(args, root=CHECKOUT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("parts", nargs="*", choices=("slice", "busy", "kueue", "examples", []), default=[])
    parser.add_argument("--jobs", type=int, default=2_000, help="jobs of the slice")
    args = parser.parse_args()
    parts = args.parts or ["slice", "busy", "kueue", "examples"]
    if "slice" in parts:  # the large trace's average rate
        print("slice", *digest(synthetic(args.jobs, 1000, 0.48 * args.jobs / 2000, 3)))
    if "busy" in parts:  # its busiest hour's rate, steady
        print("busy", *digest(synthetic(3000, 1000, 0.4833, 1)))
    if "kueue" in parts:
        scenario = kueue_baseline(cohorts=1)
        replay = Replay(scenario.documents, scenario.config, trace=scenario.trace, record_pods=False)
        print("kueue", *digest(replay))
    if "examples" in parts:
        examples()


if __name__ == "__main__":
    main()
