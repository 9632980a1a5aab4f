"""The ``volsched`` command line: ``simulate`` (in memory), ``check-config`` and ``run`` (the operator).

A user's mistake (bad YAML, a bad field, an unknown plugin) ends with exit status 2 and one message
naming where it is, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from volsched.model.errors import InputError

if TYPE_CHECKING:
    from volsched.cache.state import ClusterState
    from volsched.framework.config import SchedulerConfig
    from volsched.simulate.documents import Document


def _bundled_example() -> Path:
    from importlib import resources  # (it imports tempfile and shutil: not before run's first pages)

    return Path(str(resources.files("volsched") / "examples" / "cluster.yaml"))


def _simulate(args: argparse.Namespace) -> int:
    from rich.console import Console  # here: `volsched run` never draws a table

    from volsched.framework.registry import load_config, placement_gap
    from volsched.render import render_simulation
    from volsched.simulate import simulate, to_json

    files = args.file or [str(_bundled_example())]
    config = load_config(args.config) if args.config else None
    gap = placement_gap(config) if config is not None else None
    if gap is not None:
        print(f"volsched simulate: warning: {args.config}: {gap}", file=sys.stderr)
    names = frozenset(n.strip() for n in args.scheduler_names.split(",") if n.strip()) or {"volsched"}
    if args.replay or args.trace or args.scenario or args.compare:
        return _replay(args, config, names)
    stages: list[dict[str, Any]] = []
    if args.then:
        from volsched.simulate import SimulationResult, simulate_stages

        files_of = [files, *([f] for f in args.then)]

        def on_stage(index: int, stage: SimulationResult, _so_far: SimulationResult) -> None:
            # what the cluster looked like as this stage settled (the next stage changes the same cache)
            doc = to_json(stage)
            stages.append({"stage": index + 1, "files": [str(f) for f in files_of[index]], **doc})

        result = simulate_stages(
            files_of, config=config, sessions=args.sessions, scheduler_names=names, on_stage=on_stage
        )
    else:
        result = simulate(
            files, config=config, sessions=args.sessions, usage=args.usage, scheduler_names=names
        )
    data = to_json(result)
    if args.output == "json":
        json.dump({**data, "stages": stages} if stages else data, sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    elif args.output == "html":  # the operator's /ui dashboard, on this what-if run
        from volsched.ui import page

        sys.stdout.write(page(data))
    elif stages:  # each stage as it settled, before the next one's objects came
        console = Console(width=max(Console().width, 140))
        for doc in stages:
            console.rule(
                f"[bold]stage {doc['stage']} of {len(stages)}[/bold]: {', '.join(doc['files'])}: "
                f"settled after {doc['sessions']} session(s)"
            )
            render_simulation(doc, console, header=False)
    else:
        render_simulation(data, Console(width=max(Console().width, 140)))
    for note in unanswered_names(result.state, names):
        print(f"volsched simulate: {note}", file=sys.stderr)
    return 0


def unanswered_names(state: ClusterState, names: Iterable[str]) -> list[str]:
    """Why pods left pending were never this run's to place: their schedulerName is not one it answers
    to (a Volcano workload's ``volcano``, say, run without ``--scheduler-names``)."""
    import difflib  # (simulate's: not on run's way)

    answered = sorted(names)
    counts: dict[str, int] = {}
    for task in state.tasks.values():
        if task.node_name is None and task.scheduler_name not in answered:
            counts[task.scheduler_name] = counts.get(task.scheduler_name, 0) + 1
    notes = []
    for name, n in sorted(counts.items()):
        close = difflib.get_close_matches(name, answered, n=1, cutoff=0.6)
        fix = (
            f"did you mean {close[0]!r} in spec.schedulerName?"
            if close and name != "default-scheduler"
            else f"to place them, run with --scheduler-names {','.join([*answered, name])}"
        )
        notes.append(
            f"{n} pending pod(s) ask for schedulerName {name!r}, which this run does not schedule (it "
            f"answers to {', '.join(answered)}): {fix}"
        )
    return notes


def _replay(args: argparse.Namespace, config: SchedulerConfig | None, names: Iterable[str]) -> int:
    """``volsched simulate --replay`` (``--trace``, ``--scenario``): the time mode (see
    ``docs/simulator-time.md``)."""
    from rich.console import Console

    from volsched.model.scalars import parse_duration
    from volsched.render import render_replay
    from volsched.simulate import Replay, load_documents, replay_json
    from volsched.simulate.latencies import Latencies
    from volsched.simulate.scenarios import SCENARIOS
    from volsched.simulate.tracefiles import load_trace

    if args.then or args.usage:
        raise InputError(
            "the time mode takes its arrivals from creationTimestamps and traces: --then and --usage do not apply"
        )
    docs = load_documents(args.file) if args.file else []
    trace = load_trace(args.trace) if args.trace else []
    if args.scenario:
        scenario = SCENARIOS[args.scenario]()
        docs = [*scenario.documents, *docs]
        trace = sorted([*scenario.trace, *trace], key=lambda j: j.submit)
        config = config or scenario.config
    elif not args.file:
        if args.trace:
            raise InputError("--trace needs a cluster: -f cluster.yaml with its Nodes and Queues")
        docs = load_documents([str(_bundled_example())])
    until = parse_duration(args.until, where="--until") if args.until is not None else None
    period = parse_duration(args.period, where="--period")
    max_idle = parse_duration(args.max_idle, where="--max-idle", allow_zero=True)
    min_gap = parse_duration(args.min_gap, where="--min-gap", allow_zero=True)
    latencies = Latencies(
        start=parse_duration(args.start_delay, where="--start-delay", allow_zero=True),
        bind=parse_duration(args.bind_delay, where="--bind-delay", allow_zero=True),
        finish=parse_duration(args.finish_delay, where="--finish-delay", allow_zero=True),
        create=parse_duration(args.create_delay, where="--create-delay", allow_zero=True),
        session=parse_duration(args.session_time, where="--session-time", allow_zero=True),
        seed=args.latency_seed,
    )

    def once(documents: list[Document], conf: SchedulerConfig | None) -> dict[str, Any]:
        replay = Replay(
            documents,
            conf,
            trace=trace,
            period=period,
            max_idle=max_idle,
            min_gap=min_gap,
            latencies=latencies,
            until=until,
            scheduler_names=names,
            record_pods=args.output != "html",  # the HTML report shows no pod
        )
        return replay_json(replay.run())

    if args.compare:
        return _compare(args, once, docs, config)
    data = once(docs, config)
    if args.output == "json":
        json.dump(data, sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    elif args.output == "html":  # the replay's report with its plots, self-contained
        from volsched.simulate.plots import report_page

        sys.stdout.write(report_page([("replay", data)]))
    else:
        render_replay(data, Console(width=max(Console().width, 140)))
    return 0


def _compare(
    args: argparse.Namespace,
    once: Callable[[list[Document], SchedulerConfig | None], dict[str, Any]],
    docs: list[Document],
    config: SchedulerConfig | None,
) -> int:
    """``--compare OTHER``: the same workload under the given input and with OTHER (a scheduler config, or
    objects that replace the input's of the same kind and name), side by side."""
    import copy

    from rich.console import Console

    from volsched.framework.registry import load_config
    from volsched.render import render_comparison
    from volsched.simulate.compare import comparison_json, is_scheduler_config, override

    other_config: SchedulerConfig | None
    if is_scheduler_config(args.compare):
        other_docs, other_config = copy.deepcopy(docs), load_config(args.compare)
    else:
        other_docs, other_config = override(copy.deepcopy(docs), args.compare), config
    label_a, label_b = "as given", Path(args.compare).name
    runs = [(label_a, once(docs, config)), (label_b, once(other_docs, other_config))]
    if args.output == "json":
        json.dump(comparison_json(runs), sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    elif args.output == "html":
        from volsched.simulate.plots import report_page

        sys.stdout.write(report_page(runs, title=f"volsched replay: as given against {label_b}"))
    else:
        render_comparison(comparison_json(runs), Console(width=max(Console().width, 140)))
    return 0


def _trace(args: argparse.Namespace) -> int:
    """``volsched trace``: the trace format's schema, checking files, generating workloads."""
    from volsched.simulate import trace as tr
    from volsched.simulate import tracefiles

    if args.trace_command == "schema":
        json.dump(tr.schema(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if args.trace_command == "check":
        for path in args.files:
            jobs = tracefiles.load_trace(path)
            pods = sum(j.pods for j in jobs)
            span = f", submitted from {jobs[0].submit:g} s to {jobs[-1].submit:g} s" if jobs else ""
            print(f"{path}: {len(jobs)} job(s), {pods} pod(s){span}")
        return 0
    from volsched.model.scalars import parse_duration
    from volsched.simulate.generate import WorkloadParams, generate

    params = WorkloadParams(
        jobs=args.jobs,
        hours=args.hours,
        queues={
            k: _positive(v, "--queues", f"the weight of {k}")
            for k, v in _pairs(args.queues, "--queues").items()
        },
        peak=args.peak,
        sizes={
            _whole(k, "--sizes"): _positive(v, "--sizes", f"the probability of {k}")
            for k, v in _pairs(args.sizes, "--sizes").items()
        },
        median=parse_duration(args.median, where="--median"),
        sigma=args.sigma,
        min_duration=parse_duration(args.min_duration, where="--min-duration", allow_zero=True),
        requests=_pairs(args.requests, "--requests"),
        namespace=args.namespace,
        seed=args.seed,
    )
    sys.stdout.write(tracefiles.DUMPERS[args.format](generate(params)))
    return 0


def _pairs(text: str, flag: str) -> dict[str, str]:
    """``a=1,b=2`` as a map (values as written)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.strip().partition("=")
        if not eq or not key.strip() or not value.strip():
            raise InputError(f"{flag}: expected name=value pairs separated by commas, got {part.strip()!r}")
        out[key.strip()] = value.strip()
    return out


def _positive(text: str, flag: str, what: str) -> float:
    """A finite number > 0 of a ``name=value`` flag, or an InputError naming the flag and the name."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise InputError(f"{flag}: {what} must be a finite number > 0, got {text!r}")
    return value


def _whole(text: str, flag: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"{flag}: a job size is a whole number of pods >= 1, got {text!r}")
    return int(text)


def _demo(args: argparse.Namespace) -> int:
    try:
        from volsched_dev.demo import run_demo
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "volsched_dev":
            raise
        print(
            "volsched demo: runs from a source checkout (`make demo`); this install has no volsched_dev",
            file=sys.stderr,
        )
        return 1
    return run_demo(keep=args.keep)


def _check_config(args: argparse.Namespace) -> int:
    from volsched.configcheck import check

    warnings: list[str] = []
    problems = [p for path in args.files for p in check(path, warnings)]
    for line in [*problems, *warnings]:
        print(line, file=sys.stderr)
    if problems:
        return 2
    print(f"{', '.join(args.files)}: the scheduler config loads")
    return 0


def _run(args: argparse.Namespace) -> int:
    from volsched.gcpause import pause_from_start

    pause_from_start()  # the collector off through the imports, until the first listing is frozen
    from volsched.kube import early

    early.start(args.operator_args)  # the Pods' and Nodes' first pages, asked for while the rest imports
    from volsched.operator import main as operator_main

    return int(operator_main(args.operator_args))


def build_parser() -> argparse.ArgumentParser:
    """``volsched``'s parser: one sub-command a command (``run`` hands its arguments to the operator's)."""
    parser = argparse.ArgumentParser(prog="volsched", description="A batch scheduler for Kubernetes.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_simulate(sub.add_parser("simulate", help="run the scheduler on Kubernetes YAML in memory"))
    _add_trace(sub.add_parser("trace", help="workload traces for `volsched simulate --trace`"))
    demo = sub.add_parser(
        "demo", help="what volsched is for, phase by phase, on a local kube-apiserver with the operator"
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="leave the cluster running at the end (prints a kubeconfig for kubectl)",
    )
    demo.set_defaults(func=_demo)
    check = sub.add_parser(
        "check-config",
        help="check a scheduler config as the operator loads it (exit 2 naming file, line and field)",
        description="Check scheduler configs as the operator loads them: a config file, a ConfigMap "
        "with key volsched-scheduler.conf (e.g. helm template ... | volsched check-config -), or the chart's "
        "values (schedulerConfig and metrics.source). Exit 0 when they load, 2 with one line per problem.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="a YAML file, or - for standard input")
    check.set_defaults(func=_check_config)
    run = sub.add_parser("run", help="run the operator against the cluster in the current kubeconfig")
    run.add_argument("operator_args", nargs=argparse.REMAINDER)
    run.set_defaults(func=_run)
    return parser


def _add_simulate(sim: argparse.ArgumentParser) -> None:
    """``volsched simulate``'s options."""
    sim.add_argument(
        "-f",
        "--file",
        action="append",
        help="YAML with Nodes, Pods, PodGroups, Queues, Jobs... (repeatable); default: the bundled example",
    )
    sim.add_argument("--config", help="scheduler config YAML (Volcano's shape); default: the built-in config")
    sim.add_argument("--sessions", type=int, default=100, help="stop after this many sessions (default 100)")
    sim.add_argument(
        "--then",
        action="append",
        metavar="FILE",
        help="after the -f files reach a steady state, add this file's objects and run on (repeatable)",
    )
    sim.add_argument(
        "--usage",
        metavar="FILE",
        help="YAML map of node name to measured usage {cpu, memory, cpuFluctuation, memFluctuation, age}"
        " in percent (overrides the volsched.io/usage Node annotation)",
    )
    sim.add_argument(
        "--scheduler-names",
        default="volsched",
        help="comma-separated spec.schedulerName values whose pods volsched schedules (default: volsched),"
        " e.g. volsched,volcano to run a workload written for Volcano unchanged",
    )
    sim.add_argument(
        "--replay",
        action="store_true",
        help="time mode: workload objects arrive at their creationTimestamp and run for their"
        " simulate.volsched.io/duration annotation (docs/simulator-time.md)",
    )
    sim.add_argument(
        "--trace",
        metavar="FILE",
        help="time mode: replay this trace's jobs (CSV, JSON Lines or YAML; `volsched trace schema`) on the"
        " -f cluster",
    )
    sim.add_argument(
        "--scenario",
        choices=("kueue-baseline",),
        help="time mode: a bundled cluster, trace and config (kueue-baseline: Kueue's scheduler performance"
        " baseline, 15,000 workloads)",
    )
    sim.add_argument(
        "--compare",
        metavar="FILE",
        help="time mode: replay the same workload again with FILE (a scheduler config, or objects such as"
        " Queues that replace the input's of the same kind and name) and show both side by side",
    )
    sim.add_argument(
        "--period",
        default="1s",
        help="with --replay: seconds (or a duration like 500ms) between sessions when nothing calls for one sooner (default 1s, the operator's)",
    )
    sim.add_argument(
        "--min-gap",
        default="20ms",
        metavar="DURATION",
        help="with --replay: a session a pod's arrival (or room freed while pods wait) calls for runs at least"
        " this long after the last one (default 20ms, the operator's --min-gap)",
    )
    for flag, what in (
        (
            "--start-delay",
            "from a bind to the pod running (a kubelet's start-up); its duration counts from then",
        ),
        (
            "--bind-delay",
            "from a session's end to its binds landing (the requests, the watch): a job's wait ends then",
        ),
        (
            "--finish-delay",
            "from a pod's end to the scheduler seeing its room free (the kubelet's status, the watch)",
        ),
        ("--create-delay", "from a Job's creation to its pods' (the Job controller)"),
        (
            "--session-time",
            "how long each session takes: its binds land at its end, and it sets the next one's gap",
        ),
    ):
        sim.add_argument(
            flag,
            default="0s",
            metavar="DURATION",
            help=f"with --replay: {what} (default 0s; docs/simulator-time.md)",
        )
    sim.add_argument(
        "--latency-seed",
        type=int,
        metavar="N",
        help="with --replay: draw each pod's bind, start and finish delays and each Job's create delay at random"
        " (exponential, the options' figures their means), seeded with N: the same N, the same replay",
    )
    sim.add_argument(
        "--max-idle",
        default="10s",
        metavar="DURATION",
        help="with --replay: while pods wait and a plugin reads the clock, a session at least this often even"
        " when nothing arrives or ends (default 10s, the operator's; longer replays faster, 0: never)",
    )
    sim.add_argument(
        "--until",
        metavar="DURATION",
        help="with --replay: stop this long after the start (default: when nothing is left to happen)",
    )
    sim.add_argument(
        "-o",
        "--output",
        choices=("table", "json", "html"),
        default="table",
        help="table (default), json (the contract in docs/simulator.md) or html (the dashboard page, self-contained)",
    )
    sim.set_defaults(func=_simulate)


def _add_trace(trace: argparse.ArgumentParser) -> None:
    """``volsched trace``'s commands: ``schema``, ``check`` and ``generate``."""
    tsub = trace.add_subparsers(dest="trace_command", required=True)
    tsub.add_parser("schema", help="print the JSON Schema of a trace record")
    check = tsub.add_parser("check", help="check trace files (exit 2 naming the file, line and field)")
    check.add_argument("files", nargs="+", metavar="FILE")
    gen = tsub.add_parser("generate", help="a synthetic workload from a few parameters, seeded")
    gen.add_argument("--jobs", type=int, default=1000, help="how many jobs (default 1000)")
    gen.add_argument("--hours", type=float, default=24.0, help="over how many hours (default 24)")
    gen.add_argument("--queues", default="team-a=1,team-b=1", help="queues and their share of jobs (a=2,b=1)")
    gen.add_argument(
        "--peak", type=float, default=3.0, help="busiest hour's rate over the quietest's (default 3)"
    )
    gen.add_argument(
        "--sizes",
        default="1=0.7,4=0.2,16=0.1",
        help="pods per job and their probability (default 1=0.7,4=0.2,16=0.1)",
    )
    gen.add_argument("--median", default="10m", help="median duration (log-normal; default 10m)")
    gen.add_argument("--sigma", type=float, default=1.0, help="spread of the durations (default 1)")
    gen.add_argument("--min-duration", default="10s", help="shortest duration (default 10s)")
    gen.add_argument("--requests", default="cpu=1", help="what each pod asks for (cpu=4,nvidia.com/gpu=1)")
    gen.add_argument("--namespace", default="default", help="the jobs' namespace")
    gen.add_argument("--seed", type=int, default=0, help="random seed (default 0): same seed, same trace")
    gen.add_argument("--format", choices=("jsonl", "csv", "yaml"), default="jsonl", help="output format")
    trace.set_defaults(func=_trace)


#: The environment volsched's commands set when it is unset: what numpy's OpenBLAS reads when numpy is
#: imported. volsched asks numpy for no matrix product and no linear algebra, so OpenBLAS's threads (one a
#: core, made and spinning at numpy's import) are work for nothing at every start.
QUIET_ENVIRONMENT = {"OPENBLAS_NUM_THREADS": "1"}


def main(argv: Sequence[str] | None = None) -> int:
    for name, value in QUIET_ENVIRONMENT.items():  # before anything imports numpy (a value set is kept)
        os.environ.setdefault(name, value)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        # The operator parses its own options (``--help``): ``run``'s arguments are handed to it as the
        # parser would hand them (after a ``--``), without making the other commands' parsers first
        # (simulate's dozens of options, made before the first pages are asked for).
        rest = argv[1:] if argv[1:2] == ["--"] else ["--", *argv[1:]]
        args = argparse.Namespace(command="run", operator_args=rest, func=_run)
    else:
        args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as exc:
        print(f"volsched {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
