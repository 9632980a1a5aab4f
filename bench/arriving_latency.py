"""Where an arriving pod's time goes: pods created one at a time at low rates on a real apiserver,
volsched's creation-to-bind split into stages, kube-scheduler's creation-to-bind beside it, same run.

For each ``--rates`` rate, volsched and kube-scheduler run in turn (interleaved, ``--repeat`` times, the
order turned by one place each round: ``--order``), each on a fresh control plane with ``--nodes`` nodes
(``bind_throughput.run_one``, arriving mode): the pods are created at that steady rate once the scheduler
is ready. volsched runs with the ``volsched.latency``
logger at DEBUG, whose lines stamp each pod (wall clock, the same machine's): seen by its watch, its
session started, its bind handed to the port, sent, answered (see ``volsched.kube.latency``). With the
bench's own watch (creation seen, bind seen) they make the stages:

* ``watch``:    created (the bench's watch shows it) -> volsched's watch shows it (delivery, decode), of
  which ``decode`` (the event's line read -> decoded and pruned);
* ``wait``:     -> the session that placed it starts (the pacing wait, the loop's wake-up, lease/config),
  split into ``loop`` (-> the session loop hands the session to its thread: the event loop's wake-up
  and the pacing wait), ``thread`` (-> that thread begins it) and ``prep`` (-> the session starts:
  the Lease, the config); and also split as ``apply`` (-> the doorbell woke the session thread: the
  cache took the pod) and ``wake`` (-> the session loop hands the session to its thread; or the pod
  watch's own thread begins it, having taken the pod: then the run's line says how many pods' sessions
  ran there);
* ``session``:  -> its bind handed to the port (snapshot, actions: a session's cost for that pod);
* ``queue``:    -> a bind worker sends it;
* ``bind``:     -> its answer (the apiserver's write);
* ``echo``:     answered -> the bench's watch shows it bound;
* ``total``:    created -> bind seen (what kube-scheduler's column is).

Also each session's CPU time and phases, for sessions that bound one pod; and each scheduler's CPU
split: to ready (its start-up), from ready to the last bind per 1,000 pods bound (``run/1k``: what the
pods cost, the imports after ready included), ``cpu/1k`` (both, as ``bind_throughput`` reports it: a
short run spreads the whole start-up over its few pods) and, with ``--idle S``, its CPU per second
over S seconds after the last bind with nothing arriving; volsched's by thread (named when ``--py-spy``
profiled the run: ``--py-spy-gil`` samples only the thread holding the GIL, where Python's CPU goes). The
absolute figures are worth little on a loaded machine; compare within one run, and look at the spread over
the repeats.

``--stuck N`` creates N pods that never fit before the scheduler starts (unschedulable pods in the way).

``--tail N`` prints each volsched run's N slowest pods by stage, beside the cyclic collector's runs within
each one's creation-to-bind (volsched's ``gc generation ...`` lines) and kube-scheduler's p99 of the same
round: where the tail goes.

    python bench/arriving_latency.py [--rates 5,20,50] [--pods 100] [--nodes 200] [--repeat 1] [--idle 10]
        [--json F]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bind_throughput import (  # noqa: E402
    ROOT,
    Result,
    _commit,
    build_loadgen,
    exit_on_sigterm,
    kill_all,
    run_one,
)
from bindstats import in_turn, percentile  # noqa: E402
from machine import describe  # noqa: E402

STAGES = ("watch", "wait", "session", "queue", "bind", "echo", "total")
#: ``wait`` in parts (when the log has them).
WAIT_PARTS = ("loop", "thread", "prep")
#: ``watch``'s decode, and ``wait`` split otherwise: the cache's apply, the session thread's wake.
FINE_PARTS = ("decode", "apply", "wake")
_POD = re.compile(
    r"pod \S+/(\S+) seen (\S+) session (\S+) decided (\S+) sent (\S+) answered (\S+) result (\S+)"
    r"(?: called (\S+) woke (\S+))?(?: read (\S+) rang (\S+))?(?: here ([01]))?"
)
_SESSION = re.compile(r"session started \S+ ended \S+ cpu (\S+) binds (\d+) ms: (.*)$")
_GC = re.compile(r"gc generation (\d) started (\S+) ms (\S+) collected")


def volsched_stages(
    result: Result, pods: dict[str, dict[str, float]] | None = None
) -> tuple[dict[str, list[float]], list[dict[str, float]]]:
    """Per stage, each pod's seconds; and each one-bind session's cpu and phases (ms). ``pods``: filled
    with each pod's stages by name (seconds)."""
    stages: dict[str, list[float]] = {s: [] for s in (*STAGES, *WAIT_PARTS, *FINE_PARTS, "here")}
    sessions: list[dict[str, float]] = []
    mine: dict[str, float] = {}
    text = result.log.read_text(errors="replace") if result.log else ""
    for line in text.splitlines():
        if (m := _POD.search(line)) is not None:
            name = m.group(1)
            seen, started, decided, sent, answered = (float(m.group(i)) for i in range(2, 7))
            created, bound = result.added.get(name), result.binds.get(name)
            if created is None or bound is None or m.group(7) != "bound" or math.isnan(seen):
                continue
            points = (created, seen, started, decided, sent, answered, bound)
            mine = {}
            if pods is not None:
                pods[name] = mine
            for stage, (a, b) in zip(STAGES, itertools.pairwise(points), strict=False):
                stages[stage].append(b - a)
                mine[stage] = b - a
            stages["total"].append(bound - created)
            mine["total"] = bound - created
            mine["created_at"], mine["bound_at"] = created, bound
            if m.group(8) is not None:
                called, woke = float(m.group(8)), float(m.group(9))
                for stage, (a, b) in zip(
                    WAIT_PARTS, itertools.pairwise((seen, called, woke, started)), strict=True
                ):
                    stages[stage].append(b - a)
                    mine[stage] = b - a
                if m.group(10) is not None:
                    read, rang = float(m.group(10)), float(m.group(11))
                    for stage, (a, b) in zip(
                        FINE_PARTS, ((read, seen), (seen, rang), (rang, called)), strict=True
                    ):
                        if not math.isnan(a) and not math.isnan(b):
                            stages[stage].append(b - a)
                            mine[stage] = b - a
            if m.group(12) is not None:  # its session ran on the thread that read its event (1) or not
                stages["here"].append(float(m.group(12)))
        elif (s := _SESSION.search(line)) is not None and int(s.group(2)) == 1:
            parts = {"cpu": 1000 * float(s.group(1))}
            for part in s.group(3).split():
                key, _, value = part.partition("=")
                parts[key] = float(value)
            sessions.append(parts)
            mine["cpu"] = parts["cpu"] / 1000  # logged after its pod's line: that pod's session
    return stages, sessions


#: The operator's line once the imports after ready are done (its asctime, and how long they took).
_IMPORTED = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) INFO volsched\.operator: imported .* after ready in (\d+) ms",
    re.MULTILINE,
)


def imports_after_ready(result: Result) -> tuple[float, float] | None:
    """When volsched's imports after ready ran (wall clock, seconds: from the end its log line stamps, less
    the time it says they took; the log's local time, the bench's on the same machine), or None."""
    text = result.log.read_text(errors="replace") if result.log else ""
    if (m := _IMPORTED.search(text)) is None:
        return None
    end = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + int(m.group(2)) / 1000
    return end - int(m.group(3)) / 1000, end


def beside(pods: list[dict[str, Any]], window: tuple[float, float] | None) -> str:
    """The creation-to-bind (p50/max, ms) of the pods created while ``window`` (seconds from the run's
    first pod) lasted, and (p50/p99) of the others after the first second: what the imports after ready
    cost the pods beside them (any scheduler's pods: kube-scheduler's in the same seconds of its run are
    the machine's share)."""
    timed = [pod for pod in pods if "created_at" in pod and "total" in pod]
    if not timed or window is None:
        return "-"
    start = min(pod["created_at"] for pod in timed)
    a, b = window
    inside = [pod["total"] for pod in timed if a <= pod["created_at"] - start <= b]
    rest = [
        pod["total"]
        for pod in timed
        if not a <= pod["created_at"] - start <= b and pod["created_at"] - start >= FIRST_SECOND
    ]
    said = (
        f"{len(inside)} pods: p50 {1000 * percentile(inside, 50):.2f} max {1000 * max(inside):.0f}"
        if inside
        else "0 pods"
    )
    return f"{said}; the other {len(rest)} after the first second: p50/p99 {_ms(rest)}"


def collections(result: Result) -> list[tuple[int, float, float]]:
    """The cyclic collector's runs in volsched's log: (generation, started, seconds)."""
    text = result.log.read_text(errors="replace") if result.log else ""
    return [(int(m.group(1)), float(m.group(2)), float(m.group(3)) / 1000) for m in _GC.finditer(text)]


def within(runs: list[tuple[int, float, float]], start: float, end: float) -> tuple[float, float, int]:
    """Of the collector's ``runs``, the seconds inside ``[start, end]``: summed, the longest, and the
    highest generation among them (-1: none)."""
    total = longest = 0.0
    generation = -1
    for gen, at, seconds in runs:
        inside = min(end, at + seconds) - max(start, at)
        if inside > 0:
            total += inside
            longest = max(longest, inside)
            generation = max(generation, gen)
    return total, longest, generation


def thread_rows(result: Result) -> dict[str, tuple[float, float]]:
    """Each thread (by name where a profile named it, else its id; threads of one name summed): its
    CPU seconds from ready to the last bind per 1,000 pods bound, and per second of the idle window."""
    at_ready, at_done, idle = result.threads
    per_k = max(result.figures.bound, 1) / 1000
    out: dict[str, tuple[float, float]] = {}
    for tid in sorted(set(at_done) | set(idle)):
        name = re.sub(r"_\d+$", "_*", result.thread_names.get(tid, f"tid {tid}"))
        run = (at_done.get(tid, 0.0) - at_ready.get(tid, 0.0)) / per_k
        waiting = idle.get(tid, 0.0) / result.idle_seconds if result.idle_seconds > 0 else math.nan
        a, b = out.get(name, (0.0, 0.0))
        out[name] = (a + run, b + waiting)
    return out


def first_pods(result: Result, n: int) -> list[float | None]:
    """The first ``n`` pods created (the bench watch's order): each one's seconds to its bind (None:
    never bound)."""
    first = sorted(result.added, key=lambda name: (result.added[name], name))[:n]
    return [result.binds[name] - result.added[name] if name in result.binds else None for name in first]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _ms(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{1000 * percentile(values, 50):.2f}/{1000 * percentile(values, 99):.0f}"  # a short stage's median needs the decimals


def creation_to_bind(result: Result) -> list[float]:
    """Each pod's seconds from created to bound, as the bench's own watch saw them."""
    return [result.binds[n] - result.added[n] for n in result.binds if n in result.added]


def volsched_figures(
    result: Result, pods: dict[str, dict[str, float]]
) -> tuple[dict[str, list[float]], list[dict[str, float]]]:
    """:func:`volsched_stages`, with creation-to-bind from the bench's watch when the log has no latency
    lines (``--untraced``)."""
    stages, sessions = volsched_stages(result, pods)
    if not stages["total"]:
        stages["total"] = creation_to_bind(result)
    return stages, sessions


def source_labels(sources: list[Path], commit: Callable[[Path], str] = _commit) -> dict[Path, str]:
    """Each ``--source`` checkout's label, which also names its runs' directories: ``volsched`` alone,
    else ``volsched@<commit>``, with the directory's name after it where two share a commit (two copies
    that are not git checkouts are both an "unknown commit"), and a number after that where they still
    share one: two sources never share a label, nor a run's directory."""
    if len(sources) == 1:
        return {sources[0]: "volsched"}
    commits = {src: f"volsched@{commit(src)}" for src in sources}
    shared = {c for c in commits.values() if list(commits.values()).count(c) > 1}
    labels = {src: f"{c}:{src.name}" if c in shared else c for src, c in commits.items()}
    seen: dict[str, int] = {}
    for src in sources:
        n = seen[labels[src]] = seen.get(labels[src], 0) + 1
        if n > 1:
            labels[src] = f"{labels[src]}#{n}"
    return labels


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rates", default="5,20,50", help="pods created per second, comma-separated")
    p.add_argument("--pods", type=int, default=100, help="pods per run")
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--repeat", type=int, default=1, help="runs of each scheduler at each rate, interleaved")
    p.add_argument(
        "--order",
        choices=("turn", "fixed"),
        default="turn",
        help="turn (default): each round at a rate runs the schedulers in an order turned by one place "
        "from the round before, so that none always runs first or after another; fixed: the sources, "
        "then kube-scheduler (and the ceiling), every round",
    )
    p.add_argument("--volsched-args", default="", help="extra options for volsched run")
    p.add_argument(
        "--source",
        type=Path,
        action="append",
        help="run volsched from this checkout (default: this one); given twice or more, each in turn "
        "(a before/after in one run: each compared with the kube-scheduler run of its round)",
    )
    p.add_argument(
        "--stuck",
        type=int,
        default=0,
        help="pods of the scheduler's that never fit (a nodeSelector no node has), created before it starts",
    )
    p.add_argument("--stall", type=float, default=60.0)
    p.add_argument(
        "--py-spy",
        type=Path,
        help="this py-spy records volsched from ready to its last bind (collapsed stacks with threads, one "
        "file per run in --py-spy-out; bench/stacks_top.py reads them)",
    )
    p.add_argument(
        "--idle",
        type=float,
        default=0.0,
        help="after the last bind, keep each scheduler running this many seconds with nothing arriving and "
        "print its CPU per second meanwhile (with --py-spy, volsched's idle in a profile of its own)",
    )
    p.add_argument("--py-spy-gil", action="store_true", help="py-spy samples only the thread holding the GIL")
    p.add_argument("--py-spy-rate", type=int, default=200, help="py-spy's samples per second")
    p.add_argument(
        "--untraced",
        action="store_true",
        help="volsched without its latency lines (volsched.latency at DEBUG: a line per pod and per "
        "session, their CPU counted in volsched's): no stages, only creation-to-bind and the CPU",
    )
    p.add_argument(
        "--without-kube-scheduler", action="store_true", help="volsched only (a profile; no ratios)"
    )
    p.add_argument(
        "--ceiling",
        action="store_true",
        help="also the bare Go binder (bench/loadgen bind: watches, binds round-robin, schedules nothing) "
        "each round: the floor of creation-to-bind on this apiserver, what a pod's watch and bind cost "
        "any client",
    )
    p.add_argument(
        "--queue",
        action="store_true",
        help="a Queue object named default (volsched's, where the pods go): each session's status writes its "
        "figures",
    )
    p.add_argument("--keep", type=Path, help="keep each run's directory (its logs) here")
    p.add_argument("--py-spy-out", type=Path, default=Path("py-spy-arriving"), help="where --py-spy writes")
    p.add_argument("--json", type=Path, help="write the per-run figures here")
    p.add_argument(
        "--first",
        type=int,
        default=0,
        help="print each run's first N pods (in order of creation): creation-to-bind, ms",
    )
    p.add_argument(
        "--tail",
        type=int,
        default=3,
        help="print each volsched run's N slowest pods by stage, with the collector's runs in their way",
    )
    return p.parse_args(argv)


#: The first seconds of an arriving run, told apart in ``--tail``.
FIRST_SECOND = 1.0


def _places(pods: list[dict[str, Any]]) -> dict[int, int]:
    """Each pod's place in the order of creation (1: the first), by ``id``; a pod without its time last."""
    ordered = sorted(pods, key=lambda pod: pod.get("created_at", math.inf))
    return {id(pod): i for i, pod in enumerate(ordered, 1)}


def first_second(pods: list[dict[str, Any]]) -> str:
    """The creation-to-bind (p50/max, ms) of the pods created within :data:`FIRST_SECOND` of the run's
    first, and (p50/p99) of the rest, with how many of the run's slowest 1% are among the first."""
    timed = [pod for pod in pods if "created_at" in pod and "total" in pod]
    if not timed:
        return "-"
    start = min(pod["created_at"] for pod in timed)
    early = [pod["total"] for pod in timed if pod["created_at"] - start < FIRST_SECOND]
    late = [pod["total"] for pod in timed if pod["created_at"] - start >= FIRST_SECOND]
    slowest = sorted(timed, key=lambda pod: -pod["total"])[: max(1, len(timed) // 100)]
    among = sum(1 for pod in slowest if pod["created_at"] - start < FIRST_SECOND)
    said = (
        f"the first {len(early)}: p50 {1000 * percentile(early, 50):.2f} max {1000 * max(early):.0f}"
        if early
        else "the first 0"
    )
    return (
        f"{said}; the other {len(late)}: p50/p99 {_ms(late)}; of the slowest {len(slowest)}, {among} "
        "among the first"
    )


def print_tail(rows: list[dict[str, Any]], n: int) -> None:
    """Each volsched run's ``n`` slowest pods by stage, the collector's runs within each one's creation-to-
    bind, and kube-scheduler's p99 in the same round; then each run's collector runs by generation."""
    parts = (
        "total",
        "watch",
        "decode",
        "wait",
        "session",
        "cpu",
        "queue",
        "bind",
        "echo",
        "gc",
        "gc_longest",
    )
    print(
        f"the {n} slowest pods of each volsched run (ms; decode: of watch, the event read -> decoded; cpu: "
        "its session's CPU to the session's end (an inline bind's request and answer in it); echo < 0: the "
        "bench's watch saw the bind before volsched read its answer; gc: the cyclic collector's runs within "
        "its creation-to-bind, summed and the longest, gen their highest generation; k-s p99: "
        "kube-scheduler's p99 that round; #: its place in the order of creation, 1 the first):"
    )
    print(
        f"{'rate':>5} {'rep':>3} {'scheduler':<17} {'k-s p99':>7} {'#':>5} "
        + " ".join(f"{p:>10}" for p in parts)
        + "  gen"
    )
    for row in rows:
        if not row.get("pods"):
            continue
        theirs = [
            r["stages"]["total"]
            for r in rows
            if r["rate"] == row["rate"]
            and r["repeat"] == row["repeat"]
            and r["scheduler"] == "kube-scheduler"
        ]
        p99 = f"{1000 * percentile(theirs[0], 99):7.2f}" if theirs and theirs[0] else "      -"
        place = _places(row["pods"])
        for pod in sorted(row["pods"], key=lambda pod: -pod.get("total", 0.0))[:n]:
            cells = " ".join(f"{1000 * pod[p]:10.2f}" if p in pod else "         -" for p in parts)
            print(
                f"{row['rate']:>5g} {row['repeat']:>3} {row['scheduler']:<17} {p99} {place[id(pod)]:>5} {cells}"
                f"  {pod.get('gc_generation', -1):>3}"
            )
    print(
        f"creation-to-bind (the bench's watch) of the pods created in the first {FIRST_SECOND:g} s of each "
        "run (volsched's work after ready, its deferred imports among it, runs then) and of the rest (ms):"
    )
    for row in rows:
        if pods := row.get("watched") or row.get("pods"):
            print(f"{row['rate']:>5g} {row['repeat']:>3} {row['scheduler']:<17} {first_second(pods)}")
    print("the cyclic collector in each volsched run (runs, ms summed, the longest ms), by generation:")
    for row in rows:
        if "gc" in row:
            cells = "  ".join(
                f"gen{g} {count:4d} {1000 * total:7.2f} {1000 * longest:6.2f}"
                for g, (count, total, longest) in row["gc"].items()
            )
            print(f"{row['rate']:>5g} {row['repeat']:>3} {row['scheduler']:<17} {cells}")


def run_options(args: argparse.Namespace) -> argparse.Namespace:
    """What each run (``bind_throughput.run_one``) is given, from the bench's options (all but the rate, the
    source and the pod creator, set per run or once a machine)."""
    return argparse.Namespace(
        nodes=args.nodes, pods=args.pods, stall=args.stall, create_procs=1, create_conns=8,
        binder_procs=1, binder_conns=8, creator=None, source=ROOT, keep_logs="kept", stuck=args.stuck,
        queue=args.queue,
        py_spy=args.py_spy, py_spy_out=args.py_spy_out.resolve(), idle=args.idle,
        py_spy_gil=args.py_spy_gil, py_spy_rate=args.py_spy_rate,
        volsched_args=f"--log-level {'INFO' if args.untraced else 'INFO,volsched.latency=DEBUG'} "
        f"{args.volsched_args}".strip(),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    ns = run_options(args)
    ns.loadgen = build_loadgen()
    ns.creator = "go" if ns.loadgen else "python"
    print("machine:", describe())
    exit_on_sigterm()
    sources = list(dict.fromkeys(s.resolve() for s in args.source or [ROOT]))
    names = source_labels(sources)
    for src in sources:
        print(f"{names[src]} from {src} at {_commit(src)}")
    print(
        f"{args.nodes} nodes, {args.pods} pods per run"
        + (f", {args.stuck} that never fit" if args.stuck else "")
        + (", a Queue object for volsched's pods" if args.queue else "")
    )
    rows: list[dict[str, Any]] = []
    try:
        with (
            contextlib.nullcontext(str(args.keep.resolve()))
            if args.keep
            else tempfile.TemporaryDirectory(prefix="volsched-bench-arriving-")
        ) as tmp:
            for rate in rates:
                for rep in range(args.repeat):
                    others: tuple[str, ...] = (
                        *(() if args.without_kube_scheduler else ("kube-scheduler",)),
                        *(("ceiling",) if args.ceiling else ()),
                    )
                    runs = [*sources, *others]
                    for source in in_turn(runs, rep) if args.order == "turn" else runs:
                        scheduler = source if isinstance(source, str) else "volsched"
                        label = source if isinstance(source, str) else names[source]
                        ns.rate = rate
                        ns.source = ROOT if isinstance(source, str) else source
                        workdir = Path(tmp) / f"{rate:g}-{rep}-{label}"
                        try:
                            r = run_one(scheduler, "arriving", ns, workdir)
                        except Exception as exc:
                            print(f"  {scheduler} at {rate:g}/s FAILED: {exc}", flush=True)
                            continue
                        row: dict[str, Any] = {
                            "scheduler": label, "rate": rate, "repeat": rep, "load": r.load,
                            "bound": r.figures.bound, "arrived": r.arrived,
                            "ready": r.ready, "cpu_per_1000": r.cpu_per_1000,
                            "cpu_ready": r.cpu_ready, "cpu_after_ready": r.cpu_after_ready,
                            "cpu_idle": r.cpu_idle,
                            "cpu_run_per_1000": r.cpu_after_ready / (max(r.figures.bound, 1) / 1000),
                            "api_bind_ms": (
                                1000 * r.api_binds[1] / r.api_binds[0] if r.api_binds[0] else math.nan
                            ),
                        }  # fmt: skip
                        if scheduler == "volsched":
                            row["threads"] = thread_rows(r)
                            pods: dict[str, dict[str, float]] = {}
                            stages, sessions = volsched_figures(r, pods)
                            row["stages"] = stages
                            row["sessions"] = sessions
                            order = sorted(r.added, key=lambda name: (r.added[name], name))
                            row["pods"] = [pods[n] for n in order if n in pods]
                            runs = collections(r)
                            row["gc"] = {
                                str(g): [
                                    sum(1 for x in runs if x[0] == g),
                                    sum(x[2] for x in runs if x[0] == g),
                                    max((x[2] for x in runs if x[0] == g), default=0.0),
                                ]
                                for g in (0, 1, 2)
                            }  # fmt: skip
                            if (imported := imports_after_ready(r)) is not None and r.added:
                                first = min(r.added.values())
                                row["imports"] = [imported[0] - first, imported[1] - first]
                            for pod in row["pods"]:
                                if "created_at" in pod:
                                    pod["gc"], pod["gc_longest"], pod["gc_generation"] = within(
                                        runs, pod["created_at"], pod["bound_at"]
                                    )
                        else:
                            row["stages"] = {"total": creation_to_bind(r)}
                        row["first"] = first_pods(r, args.first)
                        #: Every pod's creation and creation-to-bind as the bench's watch saw them (any
                        #: scheduler's): ``--tail``'s first second.
                        row["watched"] = [
                            {"created_at": r.added[n], "total": r.binds[n] - r.added[n]}
                            for n in sorted(r.binds, key=lambda name: (r.added.get(name, math.inf), name))
                            if n in r.added
                        ]
                        rows.append(row)
                        print(
                            f"  {time.strftime('%H:%M:%S')} {label} {rate:g}/s: "
                            f"p50/p99 {_ms(row['stages']['total'])} ms, load {r.load:.1f}",
                            flush=True,
                        )
    finally:
        kill_all()
    print()
    print("ms p50/p99 per stage (volsched), creation-to-bind (both); load = 1-min load average at the end")
    columns = (*STAGES, *WAIT_PARTS, *FINE_PARTS)
    print(
        f"{'rate':>5} {'rep':>3} {'scheduler':<17} "
        + " ".join(f"{s:>11}" for s in columns)
        + "  api bind  load"
    )
    for row in rows:
        cells = " ".join(f"{_ms(row['stages'].get(s, [])):>11}" for s in columns)
        print(
            f"{row['rate']:>5g} {row['repeat']:>3} {row['scheduler']:<17} {cells}"
            f"  {row['api_bind_ms']:>8.2f}  {row['load']:.1f}"
        )
    print("  (api bind: the apiserver's own mean ms per bind, from its request-duration histogram)")
    for row in rows:
        if here := row["stages"].get("here"):
            print(
                f"{row['rate']:>5g} {row['repeat']:>3} {row['scheduler']:<17} sessions on the thread that "
                f"read the pod's event (the pod watch's): {sum(here):.0f} of {len(here)} pods"
            )
    if args.first:
        print(f"the first {args.first} pods of each run, creation-to-bind ms, in order of creation:")
        for row in rows:
            cells = " ".join(f"{1000 * t:5.1f}" if t is not None else "    -" for t in row["first"])
            print(f"{row['rate']:>5g} {row['repeat']:>3} {row['scheduler']:<17} {cells}")
        parts = (
            "watch",
            "decode",
            "apply",
            "wake",
            "thread",
            "prep",
            "session",
            "cpu",
            "bind",
            "echo",
            "total",
        )
        print("the first pod of each run, by stage (ms; the session's CPU), and the median of the others:")
        print(f"{'rate':>5} {'rep':>3} {'scheduler':<17} {'pod':<6} " + " ".join(f"{p:>7}" for p in parts))
        for row in rows:
            if not row.get("pods"):
                continue
            first, rest = row["pods"][0], row["pods"][1:]
            for label, values in (("first", first), ("others", None)):
                cells = " ".join(
                    f"{1000 * v:7.2f}" if v is not None else "      -"
                    for v in (
                        values.get(p) if values is not None else _median([o[p] for o in rest if p in o])
                        for p in parts
                    )
                )
                print(f"{row['rate']:>5g} {row['repeat']:>3} {row['scheduler']:<17} {label:<6} {cells}")
    if any(row.get("imports") for row in rows):
        print(
            "the imports after ready (s after each volsched run's first pod), and creation-to-bind (ms) of the "
            "pods created meanwhile; kube-scheduler's pods in the same seconds of its run of that round:"
        )
        for row in rows:
            if (window := row.get("imports")) is None:
                continue
            print(
                f"{row['rate']:>5g} {row['repeat']:>3} {row['scheduler']:<17} {window[0]:5.2f}-{window[1]:5.2f} "
                f"s: {beside(row['watched'], window)}"
            )
            same = ("kube-scheduler", row["rate"], row["repeat"])
            for other in rows:
                if (other["scheduler"], other["rate"], other["repeat"]) == same:
                    print(f"{'':>27} kube-scheduler: {beside(other['watched'], window)}")
    if args.tail:
        print_tail(rows, args.tail)
    print(
        "CPU (s): to ready; from ready to the last bind per 1,000 pods bound (cpu/1k less start-up); "
        "cpu/1k as a whole; per second idle after the last bind"
    )
    for row in rows:
        per_k = row["cpu_run_per_1000"]
        print(
            f"{row['rate']:>5g} {row['repeat']:>3} {row['scheduler']:<17} ready {row['cpu_ready']:6.3f}  "
            f"run/1k {per_k:6.2f}  cpu/1k {row['cpu_per_1000']:6.2f}  idle/s {row['cpu_idle']:6.4f}"
        )
    for row in rows:
        if row.get("threads"):
            print(
                f"{row['rate']:>5g} {row['repeat']:>3} {row['scheduler']}: CPU by thread, s per 1,000 pods / "
                "idle s per s"
            )
            for name, (run, waiting) in sorted(row["threads"].items(), key=lambda kv: -kv[1][0]):
                if run > 0 or waiting > 0:
                    print(f"      {name:<32} {run:6.2f}  {waiting:7.4f}")
    for rate in rates:
        for src in sources:
            mine = {r["repeat"]: r for r in rows if r["rate"] == rate and r["scheduler"] == names[src]}
            theirs_cpu = {
                r["repeat"]: r for r in rows if r["rate"] == rate and r["scheduler"] == "kube-scheduler"
            }
            for key, label in (
                ("cpu_per_1000", "cpu/1k"),
                ("cpu_run_per_1000", "run/1k"),
                ("cpu_idle", "idle/s"),
            ):
                ratios = [
                    mine[k][key] / theirs_cpu[k][key]
                    for k in mine
                    if k in theirs_cpu and theirs_cpu[k][key] > 0 and not math.isnan(mine[k][key])
                ]
                if ratios:
                    print(
                        f"  {rate:g}/s: {names[src]} {label} / kube-scheduler's = "
                        f"{statistics.median(ratios):.2f}"
                        f" (runs: {', '.join(f'{x:.2f}' for x in ratios)})"
                    )
    for rate in rates:
        for q in (50, 99):
            theirs = {
                r["repeat"]: percentile(r["stages"]["total"], q)
                for r in rows
                if r["rate"] == rate and r["scheduler"] == "kube-scheduler"
            }
            for src in sources:
                ratios = [
                    percentile(r["stages"]["total"], q) / theirs[r["repeat"]]
                    for r in rows
                    if r["rate"] == rate and r["scheduler"] == names[src] and theirs.get(r["repeat"], 0) > 0
                ]
                if ratios:
                    spread = f" (runs: {', '.join(f'{x:.2f}' for x in ratios)})" if len(ratios) > 1 else ""
                    print(
                        f"  {rate:g}/s: {names[src]} p{q} / kube-scheduler p{q} = "
                        f"{statistics.median(ratios):.2f}{spread}"
                    )
    for src in sources:
        one = [s for r in rows if r["scheduler"] == names[src] for s in r.get("sessions", [])]
        if one:
            keys = sorted({k for s in one for k in s})
            print(f"{names[src]}: one-bind sessions (ms, median over {len(one)}): " + ", ".join(
                f"{k} {statistics.median(s.get(k, 0.0) for s in one):.2f}" for k in keys
            ))  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps({"machine": describe(), "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
