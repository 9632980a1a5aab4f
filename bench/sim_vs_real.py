"""The simulator's time mode against the real thing: one seeded workload of batch/v1 Jobs (single 1-cpu
pods by default, gangs with ``--sizes``; two queues, arrivals over time, each pod running 3 to 10 s) goes
through the operator on a real control plane (kube-controller-manager's Job controller, kwok nodes that
run the pods) and through ``volsched simulate``'s replay, and each queue's wait (a Job's first pod seen
bound minus its creation) is printed from both, with the replay's ratio. It also prints the real control
plane's start-up time and memory (kube-apiserver, etcd, kube-controller-manager, kwok).

    python bench/sim_vs_real.py [--jobs 300] [--seed 7] [--rate 3.0] [--sizes 1] [--repeat 1]
                                [--draws 3] [--dump DIR]

The default workload asks for about 160% of the 12 cpu while it arrives: each queue's waits grow
smoothly with the backlog (tens of seconds), so a queue's p50 is a stable figure to predict. With gangs
of mixed sizes (``--sizes 1,1,2,3``, ``--rate 1``: the first version's workload) a queue's waits split in
two (jobs that start at once, jobs that queue; singles and gangs) and its p50 moves with which side a
few jobs fall, in the replay as between real runs (docs/benchmarks/2026-11-29-sim-vs-real.md).

Each round replays the workload as the replay runs by default (sessions when the operator's would, no
latency), with the latencies this real run showed (``--create-delay``, ``--bind-delay``,
``--start-delay``, ``--finish-delay``, ``--session-time``: means of what the bench's own watch saw, in a
process of its own, of the operator's session wall times and of its latency log; printed with where the
real run's time went), and with them drawn at random over ``--draws`` seeds (``--latency-seed``). Over
the rounds it prints each queue's real p50 spread and how many rounds each replay came within 10% of.
The real run takes about as long as the workload's arrivals plus its tail (a few minutes); the replay
seconds. On a loaded 2-core machine the operator's sessions and the control plane's latencies stretch
with the load, and the real waits with them: the load is printed before and after each round; compare
within one round. ``--dump DIR``: each round's job and pod times, real and replayed, as JSON."""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import logging
import multiprocessing
import random
import statistics
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes import watch as _untyped_watch
from machine import describe, load_average

from volsched.framework.registry import load_config
from volsched.simulate import Document, Replay
from volsched.simulate.latencies import Latencies
from volsched_dev.devcluster import RUN_FOR, LocalControlPlane

ROOT = Path(__file__).resolve().parents[1]
_watch: Any = _untyped_watch  # untyped in the client
NODES, NODE_CPU = 3, 4
QUEUES = ("qa", "qb")
NS = "bench"
PERIOD = 1.0


@dataclass(frozen=True)
class Planned:
    name: str
    at: float  # seconds after the start
    size: int
    queue: str
    seconds: int


def plan(jobs: int, seed: int, rate: float, sizes: tuple[int, ...] = (1, 1, 2, 3)) -> list[Planned]:
    """The seeded workload: Poisson arrivals at ``rate``, each job's size (its gang) drawn from ``sizes``,
    its queue from the two, its pods' run time 3 to 10 s."""
    rng = random.Random(seed)
    out, at = [], 0.0
    for i in range(jobs):
        at += rng.expovariate(rate)
        out.append(
            Planned(f"j{i:03d}", round(at, 1), rng.choice(sizes), rng.choice(QUEUES), rng.randint(3, 10))
        )
    return out


def job(p: Planned, *, created: str | None = None) -> dict[str, Any]:
    annotations = {
        "scheduling.volsched.io/min-member": str(p.size),
        "scheduling.volsched.io/queue-name": p.queue,
        RUN_FOR: f"{p.seconds}s",  # kwok runs the pod this long
        "simulate.volsched.io/duration": f"{p.seconds}s",  # and the replay's kubelet
    }
    meta: dict[str, Any] = {"name": p.name, "namespace": NS}
    if created:
        meta["creationTimestamp"] = created
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
        "spec": {"parallelism": p.size, "completions": p.size, "backoffLimit": 100, "template": {
            "metadata": {"annotations": annotations},
            "spec": {"schedulerName": "volsched", "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}},
    }  # fmt: skip


def queue_obj(name: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volsched.io/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1}}  # fmt: skip


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def watch_pods(kubeconfig: str, namespace: str, out: Any) -> None:
    """In a process of its own: every event of the namespace's pods, stamped as it comes, onto ``out``
    as (pod, its Job, bound, phase, monotonic time), after "ready" once it watches; the watch is resumed
    where it ended (a string on ``out`` says so), and listed again if that is too old (the events missed
    meanwhile are stamped when seen again: late)."""
    from kubernetes import config

    loader: Any = config.load_kube_config  # untyped in the client
    loader(kubeconfig)
    core: Any = client.CoreV1Api()
    version = core.list_namespaced_pod(namespace).metadata.resource_version
    out.put("ready")
    while True:
        try:
            for event in _watch.Watch().stream(
                core.list_namespaced_pod, namespace, resource_version=version, timeout_seconds=3600
            ):
                pod = event["object"]
                now = time.monotonic()
                version = pod.metadata.resource_version or version
                job_name = (pod.metadata.labels or {}).get("job-name")
                out.put((pod.metadata.name, job_name, bool(pod.spec.node_name), pod.status.phase, now))
            out.put(f"ended at resourceVersion {version}")
        except client.ApiException as exc:
            out.put(f"{exc.status} {exc.reason}: listed again")
            version = ""


class OperatorLog(logging.Handler):
    """The operator's ``volsched.latency`` lines (DEBUG), kept while it runs: for each pod it bound, when
    its watch first showed it pending and when the session that bound it started; each session's end."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.offset = time.time() - time.monotonic()  # its clock less ours
        self.pods: dict[str, tuple[float, float]] = {}  # pod -> (seen, its session's start)
        self.sessions: dict[float, float] = {}  # a session's start -> its end
        self._logger = logging.getLogger("volsched.latency")
        self._logger.setLevel(logging.DEBUG)  # read when the operator is made: before it
        self._logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if not isinstance(record.args, tuple):
            return
        args: tuple[Any, ...] = record.args
        if str(record.msg).startswith("pod ") and len(args) >= 3:
            self.pods[str(args[0])] = (float(args[1]), float(args[2]))
        elif str(record.msg).startswith("session started") and len(args) >= 2:
            self.sessions[float(args[0])] = float(args[1])

    def close(self) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(logging.NOTSET)
        super().close()


def timeline(
    planned: list[Planned],
    created: dict[str, float],
    life: dict[str, dict[str, Any]],
    sessions: list[tuple[float, float, bool]],
    operator: OperatorLog,
) -> Latencies:
    """Where the real run's time went (as this process's watch saw it, and the operator's latency log),
    printed; returns the means as the replay's latencies."""
    secs = {p.name: p.seconds for p in planned}
    size = {p.name: p.size for p in planned}
    first: dict[str, float] = {}
    added: dict[str, list[float]] = {}
    for pod in life.values():
        if pod.get("job") in created and "added" in pod:
            first[pod["job"]] = min(first.get(pod["job"], 1e18), pod["added"])
            added.setdefault(pod["job"], []).append(pod["added"])
    # A gang can start once its last pod is there: the Job controller makes them in batches (1, then 2).
    whole = {j: sorted(ts)[size[j] - 1] for j, ts in added.items() if len(ts) >= size[j]}

    def show(label: str, xs: list[float]) -> None:
        xs = sorted(xs)
        if xs:
            print(f"  {label}: n {len(xs)} p10 {xs[len(xs) // 10]:.3f} p50 {statistics.median(xs):.3f} "
                  f"p90 {xs[int(0.9 * (len(xs) - 1))]:.3f} mean {statistics.mean(xs):.3f}")  # fmt: skip

    print("timeline of the real run (seconds):")
    create = [whole[j] - created[j] for j in whole]
    start = [p["running"] - p["bound"] for p in life.values() if "running" in p and "bound" in p]
    finish = [p["succeeded"] - p["running"] - secs[p["job"]]
              for p in life.values() if "succeeded" in p and p.get("job") in secs]  # fmt: skip
    ran = [(a, b) for a, b, skipped in sessions if not skipped]
    took = [b - a for a, b in ran]
    show("job created -> first pod seen", [first[j] - created[j] for j in first])
    show("job created -> all its pods seen (create)", create)
    show("pod seen -> bound", [p["bound"] - p["added"] for p in life.values() if "bound" in p])
    # The operator's own watch and binds, from its latency log (its clock is time.time(); ours monotonic).
    seen_by_operator, bind = [], []
    for name, p in life.items():
        logged = operator.pods.get(f"{NS}/{name}")
        if logged is None:
            continue
        seen, session_start = logged
        if "added" in p and seen == seen:  # not NaN: seen pending by the operator's watch
            seen_by_operator.append(seen - operator.offset - p["added"])
        end = operator.sessions.get(session_start)
        if "bound" in p and end is not None:
            bind.append(p["bound"] - (end - operator.offset))
    show("pod seen -> seen by the operator's watch", seen_by_operator)
    show("end of the session that bound it -> bound (bind)", bind)
    show("bound -> Running (start)", start)
    show("Running -> Succeeded, less the duration (finish)", finish)
    show("session wall time (session)", took)
    print(f"  sessions run {len(ran)}, skipped {sum(1 for s in sessions if s[2])}")
    starts = [a for a, _ in ran]
    after = []
    for p in life.values():
        if "succeeded" in p:
            i = bisect.bisect_left(starts, p["succeeded"])
            if i < len(starts):
                after.append(starts[i] - p["succeeded"])
    show("pod Succeeded seen -> next session", after)
    arr = []
    for t in first.values():
        i = bisect.bisect_left(starts, t)
        if i < len(starts):
            arr.append(starts[i] - t)
    show("first pod seen -> next session", arr)

    def mean(xs: list[float]) -> float:
        return max(0.0, statistics.mean(xs)) if xs else 0.0

    return Latencies(
        start=mean(start), bind=mean(bind), finish=mean(finish), create=mean(create), session=mean(took)
    )


def real(
    planned: list[Planned], config_text: str, dump: dict[str, Any] | None = None
) -> tuple[dict[str, list[float]], str, Latencies]:
    """Each queue's waits on the real control plane, a line on its start-up and memory, and the
    latencies it showed."""
    from volsched.operator import Operator, Settings

    started = time.monotonic()
    with LocalControlPlane.real() as cp:
        up = time.monotonic() - started
        for i in range(NODES):
            cp.kwok_node(f"kwok-{i}", cpu=str(NODE_CPU))
        memory = ", ".join(f"{name} {_rss_mib(pid):.0f} MiB" for name, pid in cp.processes().items())
        with cp.api_client() as api:
            # The client's stubs want its model classes; it takes plain dicts as well, as written here.
            core: Any = client.CoreV1Api(api)
            batch: Any = client.BatchV1Api(api)
            custom = client.CustomObjectsApi(api)
            ext = client.ApiextensionsV1Api(api)
            for path in sorted((ROOT / "crds").glob("*.yaml")):
                ext.create_custom_resource_definition(yaml.safe_load(path.read_text()))
            while True:  # the CRDs serve a moment after they are made
                try:
                    custom.list_cluster_custom_object("scheduling.volsched.io", "v1beta1", "queues")
                    break
                except client.ApiException:
                    time.sleep(0.2)
            for ns in ("volsched-system", NS):
                core.create_namespace({"metadata": {"name": ns}})
            core.create_namespaced_config_map("volsched-system", {
                "metadata": {"name": "volsched-scheduler-config"}, "data": {"volsched-scheduler.conf": config_text}})  # fmt: skip
            for q in QUEUES:
                custom.create_cluster_custom_object(
                    "scheduling.volsched.io", "v1beta1", "queues", queue_obj(q)
                )
            settings = Settings(kubeconfig=str(cp.kubeconfig_path))
            settings.http.host, settings.http.port, settings.http.auth = "127.0.0.1", 0, "none"
            settings.session.period = PERIOD
            operator_log = OperatorLog()
            op = Operator(settings)
            loop, stop = asyncio.new_event_loop(), asyncio.Event()
            thread = threading.Thread(target=lambda: loop.run_until_complete(op.run(stop)), daemon=True)
            thread.start()
            bound: dict[str, float] = {}  # job -> when its first pod was seen bound
            life: dict[str, dict[str, Any]] = {}  # pod -> when it was seen added, bound, running, done
            created: dict[str, float] = {}
            sessions: list[tuple[float, float, bool]] = []  # (start, end, skipped)
            run_once = op.loop.run_once

            def timed_once() -> Any:
                t0 = time.monotonic()
                out = run_once()
                sessions.append((t0, time.monotonic(), out is not None and out[1].skipped))
                return out

            op.loop.run_once = timed_once  # type: ignore[method-assign]

            # The pods are watched from a process of their own (its stamps: the machine's monotonic
            # clock, as ours): a thread here shares the operator's interpreter, and lagging behind it
            # made the apiserver close the watch as unresponsive and stamped events late.
            events: Any = multiprocessing.get_context("spawn").Queue()
            watcher = multiprocessing.get_context("spawn").Process(
                target=watch_pods, args=(str(cp.kubeconfig_path), NS, events), daemon=True
            )
            watcher.start()
            if events.get(timeout=120) != "ready":  # the workload starts once its watch is there
                raise RuntimeError("the pods' watch did not start")
            restarts: list[str] = []

            def follow() -> None:
                while True:
                    event = events.get()
                    if event is None:
                        return
                    if isinstance(event, str):  # the watch ended and was started again
                        restarts.append(event)
                        continue
                    pod_name, name, node, phase, now = event
                    seen = life.setdefault(pod_name, {"job": name})
                    seen.setdefault("added", now)
                    if node:
                        seen.setdefault("bound", now)
                    if phase in ("Running", "Succeeded"):
                        seen.setdefault("running", now)
                    if phase == "Succeeded":
                        seen.setdefault("succeeded", now)
                    if name and node and name not in bound:
                        bound[name] = now

            follower = threading.Thread(target=follow, daemon=True)
            follower.start()
            origin = time.monotonic()
            try:
                for p in planned:
                    time.sleep(max(0.0, origin + p.at - time.monotonic()))
                    created[p.name] = time.monotonic()
                    batch.create_namespaced_job(NS, job(p))
                while len(bound) < len(planned):
                    if not watcher.is_alive():
                        raise RuntimeError(f"the pods' watch stopped (exit code {watcher.exitcode})")
                    time.sleep(0.5)
                memory += "; at the end: " + ", ".join(
                    f"{name} {_rss_mib(pid):.0f} MiB" for name, pid in cp.processes().items()
                )
            finally:
                watcher.terminate()
                watcher.join(timeout=10)
                events.put(None)
                follower.join(timeout=10)
                loop.call_soon_threadsafe(stop.set)
                thread.join(timeout=30)
                loop.close()
    operator_log.close()
    if restarts:
        print(
            f"  the pods' watch ended and was started again {len(restarts)} times: {'; '.join(restarts[:3])}"
        )
    latencies = timeline(planned, created, life, sessions, operator_log)
    if dump is not None:  # every job's and pod's times, from the first Job's creation
        t0 = min(created.values())
        dump["real"] = {
            "jobs": {j: {"created": c - t0, "bound": bound[j] - t0} for j, c in created.items()},
            "pods": {k: {e: v - t0 for e, v in p.items() if e != "job"} | {"job": p.get("job")}
                     for k, p in life.items()},
            "sessions": [(a - t0, b - t0, s) for a, b, s in sessions],
        }  # fmt: skip
    waits: dict[str, list[float]] = {}
    for p in planned:
        waits.setdefault(p.queue, []).append(bound[p.name] - created[p.name])
    return (
        waits,
        f"start-up {up:.1f} s (etcd, kube-apiserver, kube-controller-manager ready); memory: {memory}",
        latencies,
    )


def simulated(
    planned: list[Planned],
    config_text: str,
    latencies: Latencies | None = None,
    dump: dict[str, Any] | None = None,
) -> dict[str, list[float]]:
    epoch = 1_800_000_000.0
    docs = [Document(f"node {i}", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"kwok-{i}"},
                                   "status": {"allocatable": {"cpu": str(NODE_CPU), "pods": "110"},
                                              "capacity": {"cpu": str(NODE_CPU), "pods": "110"}}})
            for i in range(NODES)]  # fmt: skip
    docs += [Document(f"queue {q}", queue_obj(q)) for q in QUEUES]
    for p in planned:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch + p.at)) + f".{int(p.at * 10) % 10}Z"
        docs.append(Document(p.name, job(p, created=stamp)))
    result = Replay(docs, load_config(text=config_text), period=PERIOD, latencies=latencies).run()
    waits: dict[str, list[float]] = result.report()["waits"]["queues"]
    if dump is not None:  # every pod's times, from the replay's start (the first Job's creation)
        dump["pods"] = {k: {"job": k.split("/")[1].rsplit("-", 1)[0], "created": r.created - result.start,
                            "bound": r.started - result.start if r.started is not None else None,
                            "finished": r.finished - result.start if r.finished is not None else None}
                        for k, r in result.runs.items()}  # fmt: skip
    return waits


def p50(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rate", type=float, default=3.0, help="arrivals a second (mean)")
    parser.add_argument("--sizes", default="1", help="the gang sizes a job's is drawn from (1,1,2,3: mixed)")
    parser.add_argument("--repeat", type=int, default=1, help="real runs, each on a new control plane")
    parser.add_argument("--draws", type=int, default=3, help="replays with drawn latencies per round")
    parser.add_argument("--dump", type=Path, help="a directory: each round's job and pod times as JSON")
    args = parser.parse_args()
    print(describe("kubernetes"))
    config_text = (ROOT / "examples" / "reclaim-preempt-scheduler.yaml").read_text()
    sizes = tuple(int(x) for x in args.sizes.split(","))
    planned = plan(args.jobs, args.seed, args.rate, sizes)
    t = time.monotonic()
    plain = simulated(planned, config_text)
    print(f"replay: {time.monotonic() - t:.1f} s; {args.jobs} jobs at {args.rate:g}/s, seed {args.seed}")
    rounds: list[Round] = []
    for n in range(1, args.repeat + 1):
        load = load_average()
        t = time.monotonic()
        dump: dict[str, Any] = {}
        got, control_plane, lat = real(planned, config_text, dump)
        print(f"round {n}: real run {time.monotonic() - t:.1f} s; {control_plane}")
        after = load_average()
        print(f"round {n}: load before {load}, after {after}")
        print(f"round {n}: replays with this run's latencies: --create-delay {lat.create:.3f}s "
              f"--bind-delay {lat.bind:.3f}s --start-delay {lat.start:.3f}s --finish-delay {lat.finish:.3f}s "
              f"--session-time {lat.session:.3f}s, as they are (fixed) and drawn (--latency-seed 1..{args.draws})")  # fmt: skip
        fixed = simulated(planned, config_text, lat, dump.setdefault("fixed", {}))
        if args.dump:
            simulated(planned, config_text, None, dump.setdefault("plain", {}))
            args.dump.mkdir(parents=True, exist_ok=True)
            (args.dump / f"round-{n}.json").write_text(json.dumps(dump))
        drawn = [simulated(planned, config_text, replace(lat, seed=k)) for k in range(1, args.draws + 1)]
        print(f"{'queue':6} {'jobs':>5} {'real p50':>9} {'no latency':>11} {'fixed':>13} {'drawn (mean)':>14} "
              f"{'drawn min-max':>14} {'real p90':>9} {'drawn p90':>10}")  # fmt: skip
        one = Round(load=f"{load} -> {after}")
        for q in QUEUES:
            r = sorted(got.get(q, []))
            rp, sp, fp = p50(r), p50(plain.get(q, [])), p50(fixed.get(q, []))
            ds = [p50(d.get(q, [])) for d in drawn]
            dp = statistics.mean(ds)
            d90 = statistics.mean(p90(d.get(q, [])) for d in drawn)
            one.real[q], one.fixed[q], one.drawn[q] = rp, fp, dp
            print(f"{q:6} {len(r):5d} {rp:9.2f} {sp:6.2f} {sp / rp - 1:+4.0%} {fp:7.2f} {fp / rp - 1:+5.0%} "
                  f"{dp:8.2f} {dp / rp - 1:+5.0%} {min(ds):6.2f}-{max(ds):<7.2f} {p90(r):9.2f} {d90:10.2f}")  # fmt: skip
        rounds.append(one)
    summary(rounds)


@dataclass
class Round:
    """One round's per-queue p50 waits: real, and replayed with its latencies fixed and drawn (mean)."""

    load: str
    real: dict[str, float] = field(default_factory=dict)
    fixed: dict[str, float] = field(default_factory=dict)
    drawn: dict[str, float] = field(default_factory=dict)


def summary(rounds: list[Round]) -> None:
    """Each queue's p50 over the rounds: the real run's own spread, and each replay's ratio to the round's
    real p50 (the goal: within 10%)."""
    print("over the rounds, each queue's p50 wait (s), and the replays' ratio to the round's real p50:")
    for n, r in enumerate(rounds, 1):
        print(f"  round {n} (load {r.load}): " + "; ".join(
            f"{q} real {r.real[q]:.2f}, fixed {r.fixed[q]:.2f} ({r.fixed[q] / r.real[q]:.2f}x), "
            f"drawn {r.drawn[q]:.2f} ({r.drawn[q] / r.real[q]:.2f}x)" for q in QUEUES))  # fmt: skip
    for q in QUEUES:
        reals = [r.real[q] for r in rounds]
        within = {
            kind: sum(1 for r in rounds if abs(getattr(r, kind)[q] / r.real[q] - 1) <= 0.10)
            for kind in ("fixed", "drawn")
        }
        print(f"  {q}: real p50 {min(reals):.2f}-{max(reals):.2f} s over {len(rounds)} rounds (max/min "
              f"{max(reals) / min(reals):.2f}); within 10% of its round's real p50: fixed {within['fixed']}/"
              f"{len(rounds)}, drawn {within['drawn']}/{len(rounds)}")  # fmt: skip


def p90(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[int(0.9 * (len(xs) - 1))] if xs else float("nan")


if __name__ == "__main__":
    main()
