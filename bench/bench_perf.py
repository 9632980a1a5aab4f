"""kube-scheduler's own benchmark workloads (its ``scheduler_perf`` suite) on a real apiserver: volsched and
kube-scheduler in the same invocation, one after the other on each workload, each on a fresh control plane.

The workloads follow ``test/integration/scheduler_perf/config/performance-config.yaml`` and its templates
(nodes of 4 cpu / 32Gi / 110 pods; pods asking 100m / 500Mi), written here from their description:

* SchedulingBasic: plain pods;
* SchedulingNodeAffinity: every node in zone1; pods require zone in (zone1, zone2);
* TopologySpreading / PreferredTopologySpreading: nodes in three zones; measured pods spread over the
  zones, maxSkew 5, DoNotSchedule / ScheduleAnyway (the init pods are plain);
* SchedulingPodAntiAffinity: pods labelled color=green, none two on one host;
* SchedulingPodAffinity: every node in zone1; pods require a pod with their label in their zone;
* SchedulingWithMixedChurn: every second a node, a high-priority pod too large for any node and a
  Service are made, and the previous ones deleted, while the measured pods are scheduled;
* Unschedulable: init pods asking 9 cpu (never fit) wait in the way of the measured plain ones;
* Preemption: low-priority pods of 900m fill the nodes, the measured high-priority ones ask 3 cpu and
  preempt three each (victims have a zero grace period: with no kubelet they go at once, as KWOK's do);
* GangsSmall / GangsLarge: many gangs of 4 / a few large gangs (250 quick, 1,000 full), written for
  Kubernetes 1.37's own gang scheduling (the Workload API: a Workload, a scheduling.k8s.io PodGroup per
  gang with gang.minCount the whole gang, pods naming it in spec.schedulingGroup), on an apiserver
  serving it (the GenericWorkload feature gate and its runtime config), kube-scheduler run with that gate
  (its GangScheduling plugin): both schedulers gang-schedule the same objects, like with like. (Before
  2026-11-30 these two were called WorkloadGangsSmall / WorkloadGangsLarge; the names are still taken.)
* GangsSmallPodByPod / GangsLargePodByPod, an extra, not like with like: the same gangs as volsched's own
  PodGroups (minMember the whole gang) on an apiserver without the Workload API, so kube-scheduler
  places the same pods one by one, with no gang to wait for. (Before 2026-11-30 these were the rows
  called GangsSmall / GangsLarge.)

Deviations from scheduler_perf: all pods live in one namespace (``bench``; scheduler_perf puts the init
and measured pods of the affinity workloads in two), so the anti-affinity sizes keep init + measured
within the nodes; volsched runs Preemption with the ``preempt`` action added to its default config
(and gang's vote on victims off: see :data:`PREEMPT_CONFIG`).

Each run: a fresh control plane, its nodes, the scheduler started and ready, the init pods created and
(but for Unschedulable) all bound, the apiserver quiet (no write for a second: what a scheduler owed for
the objects before, the PodGroups' first status, the pods in the way told why, is not in the window),
then the measured pods created all at once (``loadgen create``).
Measured: pods/s = measured pods bound / (last bind - first measured pod seen created), p50/p99 of their
creation-to-bind (as the bench's own watch sees both), the scheduler's (and the apiserver's and etcd's) CPU seconds over that window and
its peak RSS. The table gives both schedulers and volsched's ratio; ``--json`` writes it all.

    python bench/bench_perf.py [--quick | --full] [--only SchedulingBasic,...] [--json FILE]
        [--repeat N [--order turn|fixed]] [--before OLD_CHECKOUT [--before-args ...]] [--keep DIR]
        [--py-spy PY_SPY] [--pprof SECONDS]

With ``--repeat``, each round runs the schedulers in an order turned by one place from the round before.

Absolute figures say little on a loaded machine: the report prints the load before and after each run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bind_throughput import (  # noqa: E402
    NAMESPACE,
    OPERATOR_NS,
    ROOT,
    SCHEDULER_NAMES,
    Conn,
    _commit,
    _say,
    build_loadgen,
    create,
    kill_all,
    kill_tree,
    prepare_cluster,
    start_creation,
    start_kube_scheduler,
    start_py_spy,
    start_volsched,
    start_watch,
)
from bindstats import TreeUsage, in_turn, percentile  # noqa: E402
from machine import describe  # noqa: E402

from volsched.framework.config import default_config_with  # noqa: E402
from volsched_dev.devcluster import LocalControlPlane  # noqa: E402

ZONE = "topology.kubernetes.io/zone"
#: The control plane's processes whose CPU over the measured window the rows keep (``extra``).
SERVER_SIDE = ("kube-apiserver", "etcd")
HOST = "kubernetes.io/hostname"
Body = dict[str, Any]

#: volsched's default config with preempt, and gang's vote on victims off (as Volcano's configs for
#: priority preemption have it): with it, gang keeps every pod alone (a gang of one at its minimum) from
#: being a victim, and kube-scheduler's workload has nothing but such pods.
PREEMPT_CONFIG = default_config_with(
    actions="enqueue, allocate, preempt, backfill",
    lines={"  - name: gang": "  - name: gang\n    enablePreemptable: false"},
)


# --------------------------------------------------------------------------- templates


def node(name: str, zone: str | None) -> Body:
    res = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    labels = {HOST: name, **({ZONE: zone} if zone else {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "capacity": res,
            "allocatable": res,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "bench"}],
        },
    }


def pod(name: str, scheduler: str, *, cpu: str = "100m", memory: str = "500Mi", **spec: Any) -> Body:
    labels = spec.pop("labels", {})
    annotations = spec.pop("annotations", {})
    meta: Body = {"name": name, "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            **spec,
        },
    }


def _selector(key: str, value: str | None = None) -> Body:
    if value is None:
        return {"matchExpressions": [{"key": key, "operator": "Exists"}]}
    return {"matchLabels": {key: value}}


def node_affinity_pod(name: str, scheduler: str) -> Body:
    term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    return pod(name, scheduler, affinity=affinity)


def spread_pod(name: str, scheduler: str, *, hard: bool) -> Body:
    constraint = {
        "maxSkew": 5,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": _selector("foo"),
    }
    return pod(name, scheduler, labels={"foo": ""}, topologySpreadConstraints=[constraint])


def anti_affinity_pod(name: str, scheduler: str) -> Body:
    term = {"labelSelector": _selector("color", "green"), "topologyKey": HOST}
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return pod(
        name, scheduler, labels={"color": "green", "name": "unit-test-anti-affinity"}, affinity=affinity
    )


def affinity_pod(name: str, scheduler: str) -> Body:
    term = {"labelSelector": _selector("foo"), "topologyKey": ZONE}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return pod(name, scheduler, labels={"foo": ""}, affinity=affinity)


def gang_pod(name: str, scheduler: str, group: str) -> Body:
    return pod(name, scheduler, annotations={"scheduling.k8s.io/group-name": group})


def workload_gang_pod(name: str, scheduler: str, group: str) -> Body:
    """A pod of a Workload API gang: it names its (scheduling.k8s.io) PodGroup in its spec."""
    return pod(name, scheduler, schedulingGroup={"podGroupName": group})


# --------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Size:
    nodes: int
    init: int
    measure: int
    #: Gang workloads: pods per gang.
    gang: int = 0


@dataclass(frozen=True)
class Workload:
    name: str
    quick: Size
    full: Size
    #: Zone labels of the nodes, round-robin (none: unlabelled).
    zones: tuple[str, ...] = ()
    init_pod: Callable[[str, str], Body] = pod
    measure_pod: Callable[[str, str], Body] = pod
    #: The init pods never bind (Unschedulable): created, not waited for.
    init_pending: bool = False
    churn: bool = False
    preempt: bool = False
    #: Gangs as Kubernetes' Workload API writes them (served by the apiserver, kube-scheduler's own gangs).
    workload_api: bool = False
    #: What the row compares, where it is not the same pods scheduled the same way by both (the report
    #: prints it under the table).
    compares: str = ""


def _low(name: str, scheduler: str) -> Body:
    return pod(name, scheduler, cpu="900m", priorityClassName="bench-low")


def _high(name: str, scheduler: str) -> Body:
    return pod(name, scheduler, cpu="3", priorityClassName="bench-high")


def _large(name: str, scheduler: str) -> Body:
    return pod(name, scheduler, cpu="9")


_GANGS = "both schedulers gang-schedule the same Workload API gangs (kube-scheduler's GangScheduling)"
_POD_BY_POD = (
    "an extra, not like with like: volsched gang-schedules its own PodGroups, kube-scheduler places the "
    "same pods one by one"
)

WORKLOADS = (
    Workload("SchedulingBasic", Size(200, 100, 500), Size(5000, 1000, 1000)),
    Workload(
        "SchedulingNodeAffinity", Size(200, 200, 500), Size(5000, 5000, 1000), zones=("zone1",),
        init_pod=node_affinity_pod, measure_pod=node_affinity_pod,
    ),
    Workload(
        "TopologySpreading", Size(200, 200, 500), Size(5000, 5000, 2000), zones=("moon-1", "moon-2", "moon-3"),
        measure_pod=lambda n, s: spread_pod(n, s, hard=True),
    ),
    Workload(
        "PreferredTopologySpreading", Size(200, 200, 500), Size(5000, 5000, 2000),
        zones=("moon-1", "moon-2", "moon-3"), measure_pod=lambda n, s: spread_pod(n, s, hard=False),
    ),
    Workload(
        "SchedulingPodAntiAffinity", Size(200, 50, 150), Size(5000, 1000, 1000),
        init_pod=anti_affinity_pod, measure_pod=anti_affinity_pod,
    ),
    Workload(
        "SchedulingPodAffinity", Size(200, 200, 500), Size(5000, 5000, 1000), zones=("zone1",),
        init_pod=affinity_pod, measure_pod=affinity_pod,
    ),
    Workload("SchedulingWithMixedChurn", Size(200, 0, 500), Size(5000, 0, 2000), churn=True),
    Workload("Unschedulable", Size(200, 50, 500), Size(5000, 200, 5000), init_pod=_large, init_pending=True),
    Workload(
        "Preemption", Size(50, 200, 50), Size(500, 2000, 500), init_pod=_low, measure_pod=_high, preempt=True
    ),
    Workload(
        "GangsSmall", Size(200, 0, 500, gang=4), Size(5000, 0, 2000, gang=4), workload_api=True,
        compares=_GANGS,
    ),
    Workload(
        "GangsLarge", Size(200, 0, 500, gang=250), Size(5000, 0, 3000, gang=1000), workload_api=True,
        compares=_GANGS,
    ),
    Workload(
        "GangsSmallPodByPod", Size(200, 0, 500, gang=4), Size(5000, 0, 2000, gang=4), compares=_POD_BY_POD
    ),
    Workload(
        "GangsLargePodByPod", Size(200, 0, 500, gang=250), Size(5000, 0, 3000, gang=1000),
        compares=_POD_BY_POD,
    ),
)  # fmt: skip
#: ``--only``'s earlier names of the gang rows (the Workload API's rows are GangsSmall/GangsLarge now).
RENAMED = {"WorkloadGangsSmall": "GangsSmall", "WorkloadGangsLarge": "GangsLarge"}
#: kube-apiserver's flags that serve the Workload API (Kubernetes 1.37: beta, off by default), and
#: kube-scheduler's gate that turns its gang scheduling on.
WORKLOAD_API = ("--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true")
WORKLOAD_GATE = "GenericWorkload=true"
#: ``--before``: volsched from an earlier checkout, run in the same rounds as ``volsched``.
BEFORE = "volsched-before"
VOLSCHEDS = ("volsched", BEFORE)
KUBE = "kube-scheduler"
#: The apiserver's CPU seconds over a window, in ``Row.extra``.
API_CPU = "kube-apiserver_cpu_s"


# --------------------------------------------------------------------------- one run


@dataclass
class Row:
    workload: str
    scheduler: str
    nodes: int
    init: int
    measure: int
    #: Which of ``--repeat`` rounds (every workload runs once a round, so repeats are minutes apart).
    repeat: int = 0
    bound: int = 0
    pods_per_s: float = math.nan
    p50: float = math.nan
    p99: float = math.nan
    cpu_s: float = math.nan
    peak_rss_mib: float = math.nan
    load_before: float = math.nan
    load_after: float = math.nan
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _create_api_objects(api: Any, w: Workload, size: Size, scheduler: str) -> None:
    from kubernetes import client

    sched: Any = client.SchedulingV1Api(api)  # (given dicts: the client serialises them)
    for name, value in (("bench-low", 1), ("bench-high", 10)):
        sched.create_priority_class({"metadata": {"name": name}, "value": value})
    if w.preempt and scheduler in VOLSCHEDS:
        core: Any = client.CoreV1Api(api)
        core.create_namespaced_config_map(
            OPERATOR_NS,
            {
                "metadata": {"name": "volsched-scheduler-config"},
                "data": {"volsched-scheduler.conf": PREEMPT_CONFIG},
            },
        )
    if size.gang and w.workload_api:
        custom = client.CustomObjectsApi(api)
        group, version = "scheduling.k8s.io", "v1beta1"
        gang = {"gang": {"minCount": size.gang}}
        workload = {
            "apiVersion": f"{group}/{version}",
            "kind": "Workload",
            "metadata": {"name": "bench"},
            "spec": {"podGroupTemplates": [{"name": "gang", "schedulingPolicy": gang}]},
        }
        custom.create_namespaced_custom_object(group, version, NAMESPACE, "workloads", workload)
        for g in range(size.measure // size.gang):
            body = {
                "apiVersion": f"{group}/{version}",
                "kind": "PodGroup",
                "metadata": {"name": f"gang-{g:05d}"},
                "spec": {
                    "workloadRef": {"workloadName": "bench", "templateName": "gang"},
                    "schedulingPolicy": gang,
                },
            }
            custom.create_namespaced_custom_object(group, version, NAMESPACE, "podgroups", body)
    elif size.gang:
        custom = client.CustomObjectsApi(api)
        for g in range(size.measure // size.gang):
            body = {
                "apiVersion": "scheduling.volsched.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": f"gang-{g:05d}"},
                "spec": {"minMember": size.gang},
            }
            custom.create_namespaced_custom_object(
                "scheduling.volsched.io", "v1beta1", NAMESPACE, "podgroups", body
            )


class Churn:
    """Every second: a node, a high-priority pod too large for any node, a Service; the last ones deleted
    (scheduler_perf's churn op, mode recreate, number 1)."""

    def __init__(self, api: Any, scheduler: str) -> None:
        self.api, self.scheduler = api, scheduler
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.made = 0

    def _run(self) -> None:
        from kubernetes import client

        core: Any = client.CoreV1Api(self.api)  # (given dicts: the client serialises them)
        last: tuple[str, str, str] | None = None
        while not self.stop.wait(1.0):
            i = self.made
            names = (f"churn-node-{i}", f"churn-pod-{i}", f"churn-svc-{i}")
            try:
                core.create_node(node(names[0], None))
                body = pod(names[1], self.scheduler, cpu="9", priorityClassName="bench-high")
                core.create_namespaced_pod(NAMESPACE, body)
                core.create_namespaced_service(
                    NAMESPACE,
                    {
                        "metadata": {"name": names[2]},
                        "spec": {"ports": [{"port": 80}], "selector": {"app": "x"}},
                    },
                )
                if last is not None:
                    core.delete_node(last[0])
                    core.delete_namespaced_pod(last[1], NAMESPACE, grace_period_seconds=0)
                    core.delete_namespaced_service(last[2], NAMESPACE)
            except Exception as exc:  # the run goes on; the churn is what it is
                _say(f"churn: {exc}")
            last = names
            self.made += 1

    def __enter__(self) -> Churn:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(10)


def _wait_bound(watch: Any, names: list[str], *, stall: float, usage: TreeUsage, proc: Any) -> bool:
    """Until every one of ``names`` is seen bound, or none more for ``stall`` seconds (False)."""
    want = set(names)
    last, since = -1, time.monotonic()
    while True:
        watch.counts()
        done = sum(1 for n in want if n in watch.bound)
        if done >= len(want):
            usage.sample()
            return True
        if proc.poll() is not None:
            raise RuntimeError(f"the scheduler exited with {proc.returncode}")
        if done != last:
            last, since = done, time.monotonic()
        elif time.monotonic() - since > stall:
            usage.sample()
            return False
        usage.sample()
        time.sleep(0.05)


def run_workload(
    w: Workload, size: Size, scheduler: str, args: argparse.Namespace, workdir: Path, *, repeat: int = 0
) -> Row:
    row = Row(
        w.name, scheduler, size.nodes, size.init, size.measure, repeat=repeat, load_before=os.getloadavg()[0]
    )
    rundir = workdir / f"{w.name}-{scheduler}-{repeat}"
    rundir.mkdir(parents=True, exist_ok=True)
    sched_name = SCHEDULER_NAMES["volsched" if scheduler in VOLSCHEDS else scheduler]
    served = WORKLOAD_API if w.workload_api else ()
    audit = rundir / "audit.jsonl" if args.audit else None
    if audit is not None:
        served = (*served, *audit_args(rundir, audit))
    if args.pprof:
        served = (*served, "--profiling=true")
    with LocalControlPlane(base_dir=rundir, keep_dir=False, extra_apiserver_args=served) as cp:
        from kubernetes import client

        conn = Conn(cp.host, str(cp.ca_cert_path), cp.admin_token)
        with cp.api_client() as api:
            prepare_cluster(api)
            _create_api_objects(api, w, size, scheduler)
            nodes = [
                node(f"node-{i:05d}", w.zones[i % len(w.zones)] if w.zones else None)
                for i in range(size.nodes)
            ]
            create(conn, "node", nodes, args=args, workdir=rundir)
            listed: Any = client.CoreV1Api(api).list_namespaced_pod(NAMESPACE, limit=1)
            rv = str(listed.metadata.resource_version)
            watch = start_watch(conn, rv, rundir, args.loadgen)
            log = rundir / f"{scheduler}.log"
            if scheduler in VOLSCHEDS:
                before = scheduler == BEFORE
                source = args.before if before else args.source
                extra = args.before_args if before and args.before_args is not None else args.volsched_args
                sched = start_volsched(cp, log, source, extra.split())
            else:
                gates = WORKLOAD_GATE if w.workload_api else ""
                sched = start_kube_scheduler(cp, log, rundir, feature_gates=gates, profiling=bool(args.pprof))
            usage = TreeUsage(sched.proc.pid)
            #: The apiserver's and etcd's CPU over the measured window too: which side of the wire is busy.
            server = {name: TreeUsage(pid) for name, pid in cp.processes().items() if name in SERVER_SIDE}
            try:
                deadline = time.monotonic() + 120
                while not sched.ready():
                    if sched.proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"{scheduler} did not become ready; log: {log}")
                    time.sleep(0.05)
                init = [w.init_pod(f"init-{i:05d}", sched_name) for i in range(size.init)]
                if init:
                    create(conn, "pod", init, args=args, workdir=rundir)
                    if not w.init_pending and not _wait_bound(
                        watch,
                        [b["metadata"]["name"] for b in init],
                        stall=args.stall,
                        usage=usage,
                        proc=sched.proc,
                    ):
                        raise RuntimeError(f"init pods not all bound ({sum(1 for _ in watch.bound)} bound)")
                _quiet(cp)
                if size.gang:
                    member = workload_gang_pod if w.workload_api else gang_pod
                    measured = [
                        member(f"m-{i:06d}", sched_name, f"gang-{i // size.gang:05d}")
                        for i in range(size.measure)
                    ]
                else:
                    measured = [w.measure_pod(f"m-{i:06d}", sched_name) for i in range(size.measure)]
                names = [b["metadata"]["name"] for b in measured]
                backlog = args.mode == "backlog"
                spy = _start_py_spy(args, sched.proc.pid, rundir) if scheduler in VOLSCHEDS else None
                if backlog:  # created while the scheduler is stopped: a backlog, as the apiserver holds it
                    os.killpg(sched.proc.pid, signal.SIGSTOP)
                    create(conn, "pod", measured, args=args, workdir=rundir)
                    while not all(n in watch.added for n in names):
                        watch.counts()
                        time.sleep(0.05)
                usage.sample()
                cpu0 = usage.cpu_seconds
                for u in server.values():
                    u.sample()
                server0 = {name: u.cpu_seconds for name, u in server.items()}
                #: Seconds each side's threads waited for a CPU over the window (runnable, not running).
                waiting = {"scheduler": sched.proc.pid, **{n: cp.processes()[n] for n in server}}
                waited0 = {n: runqueue_wait(pid) for n, pid in waiting.items()}
                asked0, spent0 = apiserver_metrics(cp)
                went_on = math.nan
                with Churn(api, sched_name) if w.churn else _nothing():
                    profiles = _start_pprof(args, cp, sched, rundir)
                    if backlog:
                        went_on = time.time()
                        os.killpg(sched.proc.pid, signal.SIGCONT)
                    else:
                        creation = start_creation(conn, "pod", measured, args=args, workdir=rundir)
                    complete = _wait_bound(watch, names, stall=args.stall, usage=usage, proc=sched.proc)
                    if not backlog:
                        creation.wait()
                    for t in profiles:
                        t.join()
                row.cpu_s = usage.cpu_seconds - cpu0
                row.extra["waited_for_cpu_s"] = {
                    n: round(runqueue_wait(pid) - waited0[n], 3) for n, pid in waiting.items()
                }
                for name, u in server.items():
                    u.sample()
                    row.extra[f"{name}_cpu_s"] = round(u.cpu_seconds - server0[name], 3)
                asked, spent = apiserver_metrics(cp)
                row.extra["requests"] = {
                    k: n - asked0.get(k, 0) for k, n in sorted(asked.items()) if n > asked0.get(k, 0)
                }
                row.extra["served_s"] = {
                    k: round(spent.get(k, 0.0) - spent0.get(k, 0.0), 4) for k in row.extra["requests"]
                }
                if spy is not None:
                    row.extra["py_spy"] = _stop_py_spy(spy, args.keep)
                row.peak_rss_mib = usage.peak_rss / 2**20
                if not complete:
                    row.note = "stalled"
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(sched.proc.pid, signal.SIGCONT)
                kill_tree(sched.proc)
            added, bound = watch.result()
    # Backlog: every pod waited from when the scheduler went on; arriving: from its creation.
    origin = {n: went_on if backlog else added.get(n, math.nan) for n in names}
    lat = [bound[n][0] - origin[n] for n in names if n in bound]
    binds = [bound[n][0] for n in names if n in bound]
    firsts = [origin[n] for n in names if not math.isnan(origin[n])]
    row.bound = len(binds)
    if binds and firsts:
        span = max(binds) - min(firsts)
        row.pods_per_s = len(binds) / span if span > 0 else math.nan
        # The window in two: until the first measured pod is bound (the scheduler's reaction: reading
        # what arrived, its first decisions) and from there to the last (binding at its rate).
        row.extra["first_bind_s"] = round(min(binds) - min(firsts), 3)
        if audit is not None:
            row.extra["audit"] = audited_writes(audit, start=min(firsts), end=max(binds))
    row.p50, row.p99 = percentile(lat, 50), percentile(lat, 99)
    row.load_after = os.getloadavg()[0]
    return row


#: ``--audit``: the apiserver records every write (but Leases') at the Metadata level, when it answered.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}]},
        {"level": "Metadata", "verbs": ["create", "update", "patch", "delete"]},
    ],
}


def audit_args(rundir: Path, log: Path) -> tuple[str, ...]:
    """kube-apiserver's flags for ``--audit``: its policy written under ``rundir``, the log to ``log``."""
    policy = rundir / "audit-policy.json"
    policy.write_text(json.dumps(AUDIT_POLICY))
    return (f"--audit-policy-file={policy}", f"--audit-log-path={log}", "--audit-log-format=json")


def audited_writes(log: Path, *, start: float, end: float) -> dict[str, Any]:
    """From the apiserver's audit log, the writes (by kind, as :func:`window_writes` names them) it
    answered between ``start`` and ``end`` (the measured window: from the first measured pod to the last
    bind), those answered after ``end`` (until the control plane stopped), and each kind's first and last answer
    within the window in seconds from ``start``: whether what a scheduler wrote beside its binds went
    ahead of them or after, which a count of requests read once the window is over cannot tell."""
    inside: dict[str, list[float]] = {}
    after: dict[str, int] = {}
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("stage") != "ResponseComplete":
            continue
        ref = entry.get("objectRef") or {}
        key = " ".join(x for x in (entry.get("verb", ""), ref.get("resource"), ref.get("subresource")) if x)
        kinds = window_writes({key: 1})
        if not kinds:
            continue
        kind = next(iter(kinds))
        at = datetime.datetime.fromisoformat(entry["stageTimestamp"].replace("Z", "+00:00")).timestamp()
        if at < start:
            continue
        if at <= end:
            inside.setdefault(kind, []).append(at - start)
        else:
            after[kind] = after.get(kind, 0) + 1
    return {
        "in_window": {k: len(v) for k, v in inside.items()},
        "after": after,
        "span_s": {k: [round(min(v), 3), round(max(v), 3)] for k, v in inside.items()},
    }


def runqueue_wait(pid: int, proc: Path = Path("/proc")) -> float:
    """Seconds the threads of ``pid`` (alive now) have waited on a run queue, runnable but not running
    (the second figure of each ``/proc/PID/task/TID/schedstat``): over a window, what the machine's load
    took from a process, which its CPU seconds do not show. A thread that exited meanwhile is not
    counted; 0.0 where the kernel keeps no schedstat."""
    total = 0
    for task in (proc / str(pid) / "task").glob("*"):
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def _start_pprof(
    args: argparse.Namespace, cp: LocalControlPlane, sched: Any, rundir: Path
) -> list[threading.Thread]:
    """``--pprof S``: Go's CPU profile of the apiserver (and of kube-scheduler, in its runs) over the
    ``S`` seconds from the window's start (``apiserver.pprof``, ``kube-scheduler.pprof`` beside the
    run's log, read with ``go tool pprof -top``): what each side of the wire spent its CPU on. The
    profile runs its whole ``S`` whatever the window: choose ``S`` near the window's length."""
    if not args.pprof:
        return []
    import ssl
    import urllib.request

    wanted: list[tuple[str, str, Path | None]] = [
        ("apiserver", f"{cp.host}/debug/pprof/profile?seconds={args.pprof:g}", cp.ca_cert_path)
    ]
    if sched.name == KUBE and sched.port:
        url = f"https://127.0.0.1:{sched.port}/debug/pprof/profile?seconds={args.pprof:g}"
        wanted.append(("kube-scheduler", url, None))

    def fetch(name: str, url: str, ca: Path | None) -> None:
        if ca is not None:
            ctx = ssl.create_default_context(cafile=str(ca))
            headers = {"Authorization": f"Bearer {cp.admin_token}"}
        else:
            ctx, headers = ssl._create_unverified_context(), {}
        try:
            with urllib.request.urlopen(
                urllib.request.Request(url, headers=headers), context=ctx, timeout=60 + args.pprof
            ) as resp:
                (rundir / f"{name}.pprof").write_bytes(resp.read())
        except Exception as exc:
            _say(f"pprof {name}: {exc}")

    threads = [threading.Thread(target=fetch, args=w, daemon=True) for w in wanted]
    for t in threads:
        t.start()
    return threads


def _start_py_spy(args: argparse.Namespace, pid: int, rundir: Path) -> Any:
    """``py-spy record`` on the scheduler from before the measured pods to the last bind (collapsed stacks,
    one line per stack with its thread); None without ``--py-spy``."""
    if args.py_spy is None:
        return None
    return start_py_spy(args.py_spy, pid, rundir, rate=100, name="volsched.pyspy.txt")


def _stop_py_spy(spy: Any, keep: Path | None) -> str:
    proc, out = spy
    proc.send_signal(signal.SIGINT)
    proc.wait(60)
    return str(out) if keep else ""


def apiserver_requests(cp: LocalControlPlane) -> dict[str, int]:
    """The apiserver's requests so far by verb, resource and subresource (its ``apiserver_request_total``,
    every client and code summed): the difference over a window says what the schedulers asked of it."""
    return apiserver_metrics(cp)[0]


def apiserver_metrics(cp: LocalControlPlane) -> tuple[dict[str, int], dict[str, float]]:
    """:func:`apiserver_requests`, and the seconds the apiserver spent serving them by the same key (its
    ``apiserver_request_duration_seconds_sum``: from the request read to the answer written, every client
    summed). Over a window, seconds over requests is the apiserver's own time per request: what of a
    client's round trip was the server's."""
    import re
    import ssl
    import urllib.request

    ctx = ssl.create_default_context(cafile=str(cp.ca_cert_path))
    req = urllib.request.Request(f"{cp.host}/metrics", headers={"Authorization": f"Bearer {cp.admin_token}"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        text = resp.read().decode()
    counts: dict[str, int] = {}
    seconds: dict[str, float] = {}
    for line in text.splitlines():
        total = line.startswith("apiserver_request_total{")
        if not total and not line.startswith("apiserver_request_duration_seconds_sum{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
        key = " ".join(
            x for x in (labels.get("verb"), labels.get("resource"), labels.get("subresource")) if x
        )
        value = float(line.rsplit(" ", 1)[1])
        if total:
            counts[key] = counts.get(key, 0) + int(value)
        else:
            seconds[key] = seconds.get(key, 0.0) + value
    return counts, seconds


#: A bind's key in :func:`apiserver_metrics`.
BIND_KEY = "POST pods binding"
#: Lease writes: renewals, and since 495867b the hand-over written before a session's evictions.
LEASE_PUT_KEY = "PUT leases"
#: Writes that are not the scheduler's answer to what came before the measured pods (a Lease renewal).
_NOT_OWED = ("leases",)

_WRITES = ("POST", "PUT", "PATCH", "DELETE", "create", "update", "patch", "delete")


def window_writes(requests: dict[str, int]) -> dict[str, int]:
    """The writes of a window's requests (``Row.extra["requests"]``), Lease renewals left out, by
    kind: ``binds`` (pods' binding), ``evictions``, ``pod status`` (conditions, nominated nodes),
    ``events``, ``podgroup status``, ``other`` (kube-scheduler's pod deletes among them)."""
    out: dict[str, int] = {}
    for key, n in requests.items():
        verb, resource, *sub = key.split()
        if verb not in _WRITES or resource in _NOT_OWED:
            continue
        subresource = sub[0] if sub else ""
        if resource == "pods" and subresource == "binding":
            kind = "binds"
        elif resource == "pods" and subresource == "eviction":
            kind = "evictions"
        elif resource == "pods" and subresource == "status":
            kind = "pod status"
        elif resource == "events":
            kind = "events"
        elif resource == "podgroups" and subresource == "status":
            kind = "podgroup status"
        else:
            kind = "other"
        out[kind] = out.get(kind, 0) + n
    return out


def _quiet(cp: LocalControlPlane, *, settle: float = 1.0, limit: float = 30.0) -> None:
    """Until the apiserver has taken no write (but Lease renewals) for ``settle`` seconds, at most
    ``limit``: what a scheduler still owes for the objects made before the measured pods (the first
    status of the gang workloads' PodGroups, the pods in the way told why) is written before the
    measured window, not counted in it."""

    def writes() -> int:
        return sum(
            n
            for k, n in apiserver_requests(cp).items()
            if k.split()[0] in ("POST", "PUT", "PATCH", "DELETE") and k.split()[1] not in _NOT_OWED
        )

    last, since, end = writes(), time.monotonic(), time.monotonic() + limit
    while time.monotonic() < end:
        time.sleep(0.25)
        now = writes()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= settle:
            return


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


# --------------------------------------------------------------------------- report


def ratios(rows: list[Row], scheduler: str = "volsched") -> dict[str, list[float]]:
    """By workload, ``scheduler``'s pods/s over kube-scheduler's of the same round, for each round both
    ran (``volsched``, or ``volsched-before`` with ``--before``)."""
    by = {(r.workload, r.scheduler, r.repeat): r for r in rows}
    out: dict[str, list[float]] = {}
    for r in rows:
        kube = by.get((r.workload, "kube-scheduler", r.repeat))
        if r.scheduler != scheduler or kube is None:
            continue
        if r.pods_per_s > 0 and kube.pods_per_s > 0:  # NaN compares False: a failed run has no ratio
            out.setdefault(r.workload, []).append(r.pods_per_s / kube.pods_per_s)
    return out


def _per_pod_ms(r: Row, seconds: float) -> float:
    return 1000 * seconds / r.bound if r.bound and not math.isnan(seconds) else math.nan


def work_report(rows: list[Row]) -> list[str]:
    """What each scheduler's window cost, by workload over the rounds: the apiserver's and the
    scheduler's CPU per bound pod (medians), the apiserver's over kube-scheduler's of the same round,
    and the requests (every verb, reads and watches too, Lease renewals left out) one scheduler made in
    its windows that the other did not, summed over the rounds. Steadier than pods/s: it is work, not the
    share of two cores a window happened to get."""
    by = {(r.workload, r.scheduler, r.repeat): r for r in rows}
    lines: list[str] = []
    for who in VOLSCHEDS:
        mine = [r for r in rows if r.scheduler == who and r.bound and (r.workload, KUBE, r.repeat) in by]
        if not mine:
            continue
        lines.append("")
        lines.append(
            f"{'work (' + who + ')':<27} {'rounds':>6} {'api ms/pod':>10} {'k8s':>6} {'ratio':>6} {'(min-max)':>11} "
            f"{'cpu ms/pod':>10} {'k8s':>6}  requests only one made (rounds summed)"
        )
        for name in dict.fromkeys(r.workload for r in mine):
            pairs = [(r, by[(name, KUBE, r.repeat)]) for r in mine if r.workload == name]
            pairs = [(v, k) for v, k in pairs if k.bound]
            if not pairs:
                continue
            api = [_per_pod_ms(v, v.extra.get(API_CPU, math.nan)) for v, _ in pairs]
            kapi = [_per_pod_ms(k, k.extra.get(API_CPU, math.nan)) for _, k in pairs]
            cpu = [_per_pod_ms(v, v.cpu_s) for v, _ in pairs]
            kcpu = [_per_pod_ms(k, k.cpu_s) for _, k in pairs]
            ratio = [a / b for a, b in zip(api, kapi, strict=True) if b > 0]
            asked: dict[str, dict[str, int]] = {"v": {}, "k": {}}
            for v, k in pairs:
                for side, r in (("v", v), ("k", k)):
                    for key, n in (r.extra.get("requests") or {}).items():
                        if "leases" not in key:
                            asked[side][key] = asked[side].get(key, 0) + n
            only = [f"{who} {key} {n}" for key, n in asked["v"].items() if key not in asked["k"]]
            only += [f"{KUBE} {key} {n}" for key, n in asked["k"].items() if key not in asked["v"]]
            lines.append(
                f"{name:<27} {len(pairs):>6} {_median(api):>10.2f} {_median(kapi):>6.2f} "
                f"{_median(ratio):>5.2f}x {min(ratio, default=math.nan):>5.2f}-{max(ratio, default=math.nan):<5.2f} "
                f"{_median(cpu):>10.2f} {_median(kcpu):>6.2f}  {'; '.join(only) or '-'}"
            )
    return lines


def _median(values: list[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return statistics.median(kept) if kept else math.nan


def report(rows: list[Row]) -> str:
    lines = [
        f"{'workload':<27} {'rep':>3} {'scheduler':<15} {'nodes':>5} {'init':>5} {'pods':>5} {'bound':>5} "
        f"{'pods/s':>7} {'ratio':>6} {'1st s':>6} {'p50 s':>7} {'p99 s':>7} {'cpu s':>6} {'api s':>6} {'RSS Mi':>6} {'load':>9}"
    ]
    by = {(r.workload, r.scheduler, r.repeat): r for r in rows}
    for r in rows:
        kube = by.get((r.workload, "kube-scheduler", r.repeat))
        ratio = (
            f"{r.pods_per_s / kube.pods_per_s:.2f}x"
            if r.scheduler in VOLSCHEDS and kube and kube.pods_per_s > 0 and r.pods_per_s > 0
            else ""
        )
        lines.append(
            f"{r.workload:<27} {r.repeat:>3} {r.scheduler:<15} {r.nodes:>5} {r.init:>5} {r.measure:>5} "
            f"{r.bound:>5} {r.pods_per_s:>7.0f} {ratio:>6} {r.extra.get('first_bind_s', math.nan):>6.2f} {r.p50:>7.3f} {r.p99:>7.3f} {r.cpu_s:>6.1f} "
            f"{r.extra.get('kube-apiserver_cpu_s', math.nan):>6.1f} "
            f"{r.peak_rss_mib:>6.0f} {r.load_before:>4.1f}-{r.load_after:<4.1f}"
            + (f" {r.note}" if r.note else "")
        )
        writes = window_writes(r.extra.get("requests") or {})
        if writes:
            said = ", ".join(f"{n} {kind}" for kind, n in sorted(writes.items(), key=lambda kv: -kv[1]))
            binds = (r.extra.get("requests") or {}).get(BIND_KEY, 0)
            if binds and BIND_KEY in (r.extra.get("served_s") or {}):
                said += f" (the apiserver's own {1000 * r.extra['served_s'][BIND_KEY] / binds:.1f} ms a bind)"
            puts = (r.extra.get("requests") or {}).get(LEASE_PUT_KEY, 0)
            if puts and LEASE_PUT_KEY in (r.extra.get("served_s") or {}):
                said += (
                    f"; besides, {puts} Lease PUTs (the apiserver's own "
                    f"{1000 * r.extra['served_s'][LEASE_PUT_KEY] / puts:.1f} ms each)"
                )
            lines.append(f"{'':<27} {'':>3} {'':<15} writes in the window: {said}")
        audited = r.extra.get("audit")
        if audited:
            spans = audited.get("span_s", {})
            said = ", ".join(
                f"{n} {kind} (+{spans[kind][0]:.2f} to +{spans[kind][1]:.2f} s)"
                for kind, n in sorted(audited["in_window"].items(), key=lambda kv: -kv[1])
            )
            later = ", ".join(f"{n} {kind}" for kind, n in audited.get("after", {}).items())
            lines.append(
                f"{'':<27} {'':>3} {'':<15} audit: answered in the window {said or 'none'}; "
                f"after the last bind {later or 'none'}"
            )
        waited = r.extra.get("waited_for_cpu_s") or {}
        if waited:
            said = ", ".join(f"{name} {s:.2f} s" for name, s in waited.items())
            lines.append(f"{'':<27} {'':>3} {'':<15} waited for a CPU in the window: {said}")
    lines.append("ratio: volsched's pods/s over kube-scheduler's on the same workload, same round")
    lines.append("1st s: from the window's start to the first measured pod bound (the scheduler's reaction)")
    lines.append("cpu s, api s: the scheduler's and the apiserver's CPU seconds over the measured window")
    lines.append(
        "writes in the window: the apiserver's counts from the window's start until they were read, just "
        "after it (what came right after the last bind is in them: --audit tells the two apart); Lease PUTs "
        "are the scheduler's renewals and (volsched's, since 495867b) the hand-over before a session's evictions"
    )
    known = {w.name: w for w in WORKLOADS}
    for name in dict.fromkeys(r.workload for r in rows):
        if name in known and known[name].compares:
            lines.append(f"{name}: {known[name].compares}")
    lines.extend(work_report(rows))
    for who in VOLSCHEDS:
        spread = ratios(rows, who)
        if any(len(v) > 1 for v in spread.values()):
            lines.append("")
            lines.append(f"{'workload (' + who + ')':<27} {'rounds':>6} {'median':>7} {'min':>6} {'max':>6}")
            for name, values in spread.items():
                lines.append(
                    f"{name:<27} {len(values):>6} {statistics.median(values):>6.2f}x {min(values):>5.2f}x "
                    f"{max(values):>5.2f}x"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="a few hundred pods per workload (the default)")
    size.add_argument(
        "--full", action="store_true", help="scheduler_perf's 5000Nodes sizes (a quiet machine)"
    )
    p.add_argument("--only", default="", help="comma-separated workload names (default: all)")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds over the workloads (each round runs every workload once, so the repeats of one are "
        "minutes apart); the report gives each workload's median ratio and its spread",
    )
    p.add_argument("--schedulers", default="volsched,kube-scheduler")
    p.add_argument(
        "--order",
        choices=("turn", "fixed"),
        default="turn",
        help="turn (default): each round runs the schedulers in an order turned by one place from the "
        "round before (volsched first in the first round, kube-scheduler in the second, ...), so that "
        "none always meets the later, or the earlier, part of a round on a machine whose load drifts; "
        "fixed: as --schedulers lists them (--before's first) in every round",
    )
    p.add_argument("--stall", type=float, default=60.0, help="give up after this long without a bind (s)")
    p.add_argument("--json", type=Path, help="write the rows, the machine and the sizes here")
    p.add_argument("--source", type=Path, default=ROOT, help="run volsched from this checkout")
    p.add_argument(
        "--before",
        type=Path,
        help="also run volsched from this checkout (an earlier commit) as 'volsched-before', in the same "
        "rounds: a change's before and after meet the same machine minutes apart, each with its ratio",
    )
    p.add_argument("--volsched-args", default="")
    p.add_argument(
        "--before-args",
        help="volsched-before's arguments (default: --volsched-args'): with --before the same checkout, "
        "two settings of one commit compared in the same rounds",
    )
    p.add_argument(
        "--mode",
        choices=("backlog", "arriving"),
        default="backlog",
        help="backlog (default): the scheduler is stopped (SIGSTOP) while the measured pods are created and "
        "timed from when it goes on (SIGCONT), so the apiserver's rate of creation does not cap both; arriving: "
        "the pods are created while it runs, timed from each one's creation",
    )
    p.add_argument("--keep", type=Path, help="keep the runs' logs under this directory")
    p.add_argument(
        "--audit",
        action="store_true",
        help="the apiserver keeps an audit log of writes: each row then says which writes it answered "
        "inside the window and which after the last bind (the request counts cannot tell; costs the "
        "apiserver some CPU per request, so not for the figures)",
    )
    p.add_argument(
        "--pprof",
        type=float,
        default=0.0,
        help="Go's CPU profile of the apiserver (and of kube-scheduler in its runs) over this many seconds "
        "from the window's start, beside each run's log (with --keep): the apiserver runs with "
        "--profiling=true, kube-scheduler with /debug/pprof open",
    )
    p.add_argument(
        "--py-spy",
        type=Path,
        help="this py-spy records volsched from before the measured pods to the last bind: collapsed stacks "
        "in volsched.pyspy.txt beside each run's log (with --keep)",
    )
    args = p.parse_args(argv)
    args.source = args.source.resolve()
    args.loadgen = build_loadgen()
    if args.loadgen is None:
        p.error(
            "no Go toolchain to build bench/loadgen with (its watch and creation are what this bench times)"
        )
    args.creator = "go"
    args.create_procs, args.create_conns = 2, 32
    known = {w.name: w for w in WORKLOADS}
    only = [RENAMED.get(n.strip(), n.strip()) for n in args.only.split(",") if n.strip()] or list(known)
    bad = [n for n in only if n not in known]
    if bad:
        p.error(f"--only: unknown {', '.join(bad)} (known: {', '.join(known)})")
    schedulers = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    if args.before is not None:
        args.before = args.before.resolve()
        schedulers.insert(0, BEFORE)
    machine = describe()
    print("machine:", machine)
    print(f"volsched from {args.source} at {_commit(args.source)}; sizes: {'full' if args.full else 'quick'}")
    if args.before is not None:
        print(f"volsched-before from {args.before} at {_commit(args.before)}")
    rows: list[Row] = []
    import tempfile

    try:
        with (
            contextlib.nullcontext(str(args.keep))
            if args.keep
            else tempfile.TemporaryDirectory(prefix="volsched-bench-perf-")
        ) as tmp:
            for name, rep in [(n, r) for r in range(args.repeat) for n in only]:
                w = known[name]
                sz = w.full if args.full else w.quick
                for scheduler in in_turn(schedulers, rep) if args.order == "turn" else schedulers:
                    try:
                        row = run_workload(w, sz, scheduler, args, Path(tmp), repeat=rep)
                    except Exception as exc:
                        _say(f"{name} {scheduler} FAILED: {exc}")
                        row = Row(
                            name,
                            scheduler,
                            sz.nodes,
                            sz.init,
                            sz.measure,
                            repeat=rep,
                            note=f"failed: {exc}"[:200],
                        )
                    rows.append(row)
                    _say(f"{name} {scheduler}: {row.bound}/{sz.measure} bound, {row.pods_per_s:.0f} pods/s")
    finally:
        kill_all()
    print()
    print(report(rows))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                    "machine": machine,
                    "commit": _commit(args.source),
                    "size": "full" if args.full else "quick",
                    "rows": [asdict(r) for r in rows],
                    "ratios": ratios(rows),
                    **({"ratios_before": ratios(rows, BEFORE)} if args.before is not None else {}),
                    **({"before": _commit(args.before)} if args.before is not None else {}),
                },
                indent=1,
            )
        )
    return 0 if all(not r.note for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
