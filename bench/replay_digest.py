"""A digest of every decision a replay makes, to check that a change to the engine's speed changes none.

For each session of a replay: its binds, evictions (with their reasons), admissions, every PodGroup's,
Queue's and namespace's status, its events and refusals, and the phases the cycle wrote back; then the
replay's report. And every example's ``volsched simulate -o json`` (the worked replay, with ``--trace``
and ``--compare``, too). Run it on main and on a branch and compare the lines it prints (one sha256 each):

    python bench/replay_digest.py              # all: the 2,000-job slice, the busy slice, one Kueue
                                               # cohort, the examples, the moves, the spec
    python bench/replay_digest.py slice --jobs 500
    python bench/replay_digest.py moves

The parts: ``slice`` (2,000 synthetic jobs on 1,000 nodes over a day's average rate, the default
config), ``busy`` (3,000 jobs in 29 minutes: the busiest hour's rate), ``kueue`` (Kueue's baseline, one
cohort), ``examples`` (each example in a fresh process, with the default config and with reclaim and
preempt on), ``moves`` (what the default config leaves off, made to decide: reclaim, preempt, shuffle
with the rescheduling plugin's strategies, minruntime, fair share with memory, a budget, a node
leaving; see ``moves_replay``), ``spec`` (what a pod's spec and status say, made to decide: the
rescheduling strategies that read failed pods, restarts, taints, node affinity, topology spread and
anti-affinity, and preempt for a pod's device claims; see ``spec_replay``). ``moves``, ``spec`` and
``kueue`` are the quick ones; the slices the slow ones.

A refused example's message names its file: the checkout's root is written as ``<checkout>`` before hashing,
so two checkouts of one commit print the same lines.

Not a benchmark and not a test (the figures are compared by a person across commits). Each part's CPU
seconds (its own and its ``volsched simulate`` children's) go to stderr, apart from the lines compared:
a rough figure, for seeing where a run's minutes go (under the bench lock only is it a measurement).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest.mock import patch

from bench_replay import QUEUES, _cluster

import volsched.simulate.replay as replay_module
from volsched.cycle import CycleReport, run_cycle
from volsched.framework.registry import load_config
from volsched.simulate import Replay
from volsched.simulate.annotations import REMOVE_ANNOTATION
from volsched.simulate.documents import EPOCH, Document, iso
from volsched.simulate.generate import WorkloadParams, generate
from volsched.simulate.scenarios import kueue_baseline
from volsched.simulate.traceobjects import job_documents, priority_classes


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

    def recording(*args: Any, **kwargs: Any) -> CycleReport:
        nonlocal count
        report = run_cycle(*args, **kwargs)
        count += 1
        for line in _session_lines(report):
            h.update(line.encode())
            h.update(b"\n")
        return report

    with patch.object(replay_module, "run_cycle", recording):  # (the replay's run_cycle is the cycle's)
        result = replay.run()
    h.update(json.dumps(result.report(), sort_keys=True, default=str).encode())
    return h.hexdigest(), count


def synthetic(jobs: int, nodes: int, hours: float, peak: float) -> Replay:
    params = WorkloadParams(
        jobs=jobs, hours=hours, queues=QUEUES, peak=peak, sizes={1: 0.7, 4: 0.2, 8: 0.1}, median=900, seed=1
    )
    return Replay(
        _cluster(nodes, list(QUEUES)), None, trace=generate(params), max_idle=60.0, record_pods=False
    )


#: What the default config leaves off, on: reclaim, preempt and shuffle (the rescheduling plugin's
#: strategies), minruntime (a minimum run time, a preemption delay), fair share with memory, a budget.
MOVES_CONFIG = """\
actions: "enqueue, allocate, reclaim, preempt, backfill, shuffle"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: pdb
  - name: minruntime
    arguments: {minRuntime: 5m, preemptionDelay: 2m, weighWork: false}
  - name: rescheduling
    arguments:
      interval: 10m
      strategies:
      - name: lowPriorityFirst
      - name: lowNodeUtilization
        params: {utilization: requests, useDeviationThresholds: true, thresholds: {cpu: 10}, targetThresholds: {cpu: 10}}
      - name: highNodeUtilization
        params: {utilization: requests, thresholds: {cpu: 40}}
      - name: removeDuplicates
      - name: podLifeTime
        params: {maxPodLifeTimeSeconds: 7200}
- plugins:
  - name: drf
    arguments: {fairShare: {halfLife: 1h}}
  - name: predicates
  - name: proportion
    arguments: {fairShare: {halfLife: 1h}}
  - name: reservation
  - name: nodeorder
  - name: binpack
configurations:
- name: shuffle
  arguments: {maxEvictionsPerSession: 3}
"""
MOVES_QUEUES = {"team-a": 2, "team-b": 1, "team-c": 1}


def moves_replay(*, jobs: int = 150, nodes: int = 12, hours: float = 3.0) -> Replay:
    """A replay whose sessions evict by every action that evicts, under ``MOVES_CONFIG``.

    ``nodes`` nodes of 16 cpu (two more join halfway, one leaves after 2h: its pods are evicted), three
    reclaimable queues, ``jobs`` synthetic jobs of 4-cpu pods over ``hours``: team-c's all come in a
    burst halfway (it reclaims), one job in seven has priority 1000 (it preempts), one in three a
    minMember of half its pods (shuffle may take the others); every pod has a controller (the rescheduling plugin's
    evictor moves no bare pod), and team-b a PodDisruptionBudget. Run to an hour after the last arrival
    (podLifeTime would evict a pod that runs longer than 2h for ever). Sessions evict by preempt,
    reclaim, shuffle (every strategy listed: lowNodeUtilization by deviation from the mean, as a full
    cluster seldom has a node under a fixed threshold beside one over it) and the node's removal.
    """
    start = EPOCH + 86_400.0
    objs: list[dict[str, Any]] = []
    for i in range(nodes + 2):
        name = f"node-{i:02d}"
        meta: dict[str, Any] = {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"zone-{i % 3}"},
        }
        if i >= nodes:
            meta["creationTimestamp"] = iso(start + hours * 1800)
        if i == 0:
            meta["annotations"] = {REMOVE_ANNOTATION: "2h"}
        status = {
            "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": status})
    objs += [
        {"apiVersion": "scheduling.volsched.io/v1beta1", "kind": "Queue", "metadata": {"name": q},
         "spec": {"weight": w, "reclaimable": True}}
        for q, w in MOVES_QUEUES.items()
    ]  # fmt: skip
    objs.append(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep-some", "namespace": "team-b"},
            "spec": {"minAvailable": 6, "selector": {"matchLabels": {"tier": "batch"}}},
        }
    )
    params = WorkloadParams(
        jobs=jobs,
        hours=hours,
        queues={q: float(w) for q, w in MOVES_QUEUES.items()},
        peak=2.0,
        sizes={1: 0.7, 4: 0.2, 8: 0.1},
        median=1800,
        requests={"cpu": "4", "memory": "4Gi"},
        seed=2,
    )
    burst = [
        replace(j, submit=hours * 1800 + j.submit / 8) if j.queue == "team-c" else j for j in generate(params)
    ]
    burst.sort(key=lambda j: (j.submit, j.name))
    trace = [
        replace(
            j,
            namespace=j.queue,
            priority=1000 if i % 7 == 3 else None,
            min_member=max(1, j.pods // 2) if i % 3 == 1 else j.min_member,
        )
        for i, j in enumerate(burst)
    ]
    objs += priority_classes(trace)
    docs = [Document(f"moves: object {i}", o) for i, o in enumerate(objs)]
    for job in trace:
        for doc in job_documents(job, at=start + job.submit):
            if doc.obj["kind"] == "Pod":
                owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": job.name, "controller": True}
                meta = {**doc.obj["metadata"], "labels": {"tier": "batch"}, "ownerReferences": [owner]}
                doc = Document(doc.source, {**doc.obj, "metadata": meta})
            docs.append(doc)
    config = load_config(text=MOVES_CONFIG)
    return Replay(docs, config, max_idle=60.0, record_pods=False, until=(hours + 1) * 3600)


#: The rescheduling strategies that read what a pod's spec and status say (no trace's pod says any of
#: it), and preempt for pods that claim devices.
SPEC_CONFIG = """\
actions: "enqueue, allocate, preempt, backfill, shuffle"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: rescheduling
    arguments:
      interval: 5m
      strategies:
      - name: removeFailedPods
        params: {exitCodes: [1, 137]}
      - name: removePodsHavingTooManyRestarts
        params: {podRestartThreshold: 10}
      - name: removePodsViolatingNodeTaints
      - name: removePodsViolatingNodeAffinity
      - name: removePodsViolatingTopologySpreadConstraint
      - name: removePodsViolatingInterPodAntiAffinity
- plugins:
  - name: drf
  - name: overcommit
    arguments: {overcommit-factor: 2.0}
  - name: predicates
  - name: nodeorder
  - name: binpack
configurations:
- name: shuffle
  arguments: {maxEvictionsPerSession: 4}
"""
#: The device class of the ``spec`` part's GPUs.
GPU_CLASS = "gpu.example.com"


def _spec_pod(
    name: str,
    *,
    at: float,
    node: str | None = None,
    labels: dict[str, str] | None = None,
    duration: str | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    cpu: str = "2",
) -> dict[str, Any]:
    """A pod of the ``spec`` part: its own ReplicaSet's (or ``labels["app"]``'s), created at ``at``,
    running on ``node`` since then when given, pending when not."""
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": (labels or {}).get("app", name),
             "controller": True}  # fmt: skip
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "creationTimestamp": iso(at),
        "labels": labels or {},
        "ownerReferences": [owner],
    }
    if duration is not None:
        meta["annotations"] = {"simulate.volsched.io/duration": duration}
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "2Gi"}}}
    body: dict[str, Any] = {"schedulerName": "volsched", "containers": [container], **(spec or {})}
    phase: dict[str, Any] = {"phase": "Pending"}
    if node is not None:
        body["nodeName"] = node
        phase = {"phase": "Running", "startTime": iso(at)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": body,
        "status": {**phase, **(status or {})},
    }


def spec_replay(*, hours: float = 2.0) -> Replay:
    """A replay whose sessions move pods by what their spec and status say, under ``SPEC_CONFIG``.

    Ten nodes of 16 cpu in two zones (``disk: ssd`` on two, a ``dedicated=infra:NoSchedule`` taint on
    one, two with two GPUs each published as ResourceSlices); a third zone's node joins after an hour.
    Running at the start: a failed pod (exit code 1), one that restarted 12 times, one on the tainted node
    that does not tolerate it, one whose node selector its node no longer matches, four pods of one
    ReplicaSet spread over zones (maxSkew 1) all in one zone, and two with anti-affinity on one node.
    Over ``hours`` more of each kind arrive (the spread pods again, pods that tolerate the taint or ask
    for ssd), four low-priority pods take the four GPUs at the start and two high-priority ones claim a
    GPU each after half an hour. Sessions evict by every strategy of ``SPEC_CONFIG`` (the spread again
    when the third zone joins) and preempt the GPUs' holders for the high-priority pods' claims.
    """
    start = EPOCH + 86_400.0
    objs: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "spec-low"},
         "value": 10},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "spec-high"},
         "value": 1000},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": GPU_CLASS},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_CLASS}"'}}]}},
    ]  # fmt: skip
    names = [*(f"node-{i:02d}" for i in range(8)), "gpu-0", "gpu-1", "node-08"]
    for i, name in enumerate(names):
        zone = "zone-2" if name == "node-08" else f"zone-{i % 2}"
        labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
                  "disk": "ssd" if name in ("node-01", "node-04") else "hdd"}  # fmt: skip
        meta: dict[str, Any] = {"name": name, "labels": labels}
        if name == "node-08":
            meta["creationTimestamp"] = iso(start + 3600)
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": meta,
            "status": {
                "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        if name == "node-06":
            node["spec"] = {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]}
        objs.append(node)
    for name in ("gpu-0", "gpu-1"):
        gpus = [{"name": f"gpu-{k}", "attributes": {"model": {"string": "a100"}},
                 "capacity": {"memory": {"value": "80Gi"}}} for k in range(2)]  # fmt: skip
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus"},
                "spec": {"driver": GPU_CLASS, "nodeName": name, "devices": gpus,
                         "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}},
            }
        )  # fmt: skip
    zone_spread = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                   "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}  # fmt: skip
    apart = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}]}}  # fmt: skip
    ssd = {"nodeSelector": {"disk": "ssd"}}
    infra = {
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]
    }
    exited = {"name": "main", "state": {"terminated": {"reason": "Error", "exitCode": 1}}}
    looping = {"name": "main", "restartCount": 12, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    pods = [
        _spec_pod("failed", at=start, node="node-00", status={"phase": "Failed", "containerStatuses": [exited]}),
        _spec_pod("looping", at=start, node="node-02", status={"containerStatuses": [looping]}),
        _spec_pod("untolerated", at=start, node="node-06"),
        _spec_pod("misplaced", at=start, node="node-00", spec=ssd),
        *(
            _spec_pod(f"web-{i}", at=start, node="node-03", labels={"app": "web"},
                      spec={"topologySpreadConstraints": [zone_spread]})
            for i in range(4)
        ),
        *(_spec_pod(f"db-{i}", at=start, node="node-05", labels={"app": "db"}, spec={"affinity": apart})
          for i in range(2)),
    ]  # fmt: skip
    # Four low-priority pods take the four GPUs; two high-priority ones claim one each half an hour on.
    gpu_pods = [(f"train-{i}", start + 60, "3h", "spec-low") for i in range(4)]
    gpu_pods += [(f"serve-{i}", start + 1800 + 60 * i, "40m", "spec-high") for i in range(2)]
    request = {"name": "gpu", "exactly": {"deviceClassName": GPU_CLASS}}
    for name, at, duration, priority in gpu_pods:
        claim = f"{name}-gpu"
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": claim, "namespace": "default"},
                "spec": {"devices": {"requests": [request]}},
            }
        )
        spec = {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
            "priorityClassName": priority,
        }
        app = {"app": name.split("-", 1)[0]}
        pods.append(_spec_pod(name, at=at, labels=app, duration=duration, spec=spec))
    arriving = int(hours * 6)  # one every 10 minutes
    for i in range(arriving):
        at, kind = start + 600 * (i + 1), i % 3
        if kind == 0:
            pods.append(
                _spec_pod(f"web-{4 + i // 3}", at=at, labels={"app": "web"}, duration="50m",
                          spec={"topologySpreadConstraints": [zone_spread]})
            )  # fmt: skip
        elif kind == 1:
            pods.append(_spec_pod(f"infra-{i // 3}", at=at, duration="30m", spec=infra, cpu="6"))
        else:
            pods.append(_spec_pod(f"ssd-{i // 3}", at=at, duration="40m", spec=ssd, cpu="4"))
    docs = [Document(f"spec: object {i}", o) for i, o in enumerate([*objs, *pods])]
    config = load_config(text=SPEC_CONFIG)
    return Replay(docs, config, max_idle=60.0, record_pods=False, until=(hours + 1) * 3600)


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
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "parts",
        nargs="*",
        choices=("slice", "busy", "kueue", "examples", "moves", "spec", []),
        default=[],
        help="the parts to run (default: all); each is described above",
    )
    parser.add_argument("--jobs", type=int, default=2_000, help="jobs of the slice")
    args = parser.parse_args()
    parts = args.parts or ["slice", "busy", "kueue", "examples", "moves", "spec"]
    if "slice" in parts:  # the large trace's average rate
        with _cpu("slice"):
            print("slice", *digest(synthetic(args.jobs, 1000, 0.48 * args.jobs / 2000, 3)))
    if "busy" in parts:  # its busiest hour's rate, steady
        with _cpu("busy"):
            print("busy", *digest(synthetic(3000, 1000, 0.4833, 1)))
    if "kueue" in parts:
        with _cpu("kueue"):
            scenario = kueue_baseline(cohorts=1)
            replay = Replay(scenario.documents, scenario.config, trace=scenario.trace, record_pods=False)
            print("kueue", *digest(replay))
    if "examples" in parts:
        with _cpu("examples"):
            examples()
    if "moves" in parts:  # what the default config leaves off, evicting
        with _cpu("moves"):
            print("moves", *digest(moves_replay()))
    if "spec" in parts:  # what a pod's spec and status say, evicting
        with _cpu("spec"):
            print("spec", *digest(spec_replay()))


@contextmanager
def _cpu(part: str) -> Iterator[None]:
    """Say on stderr the CPU seconds ``part`` took, its children's included, and the load."""
    before = os.times()
    yield
    after = os.times()
    used = sum(a - b for a, b in zip(after[:4], before[:4], strict=True))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"# {part}: {used:.1f} s CPU (load {load})", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
