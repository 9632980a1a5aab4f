"""``volsched demo``: what volsched is for, phase by phase, on a real kube-apiserver.

Starts a real :class:`~volsched_dev.devcluster.LocalControlPlane` (kube-controller-manager, and 4 kwok
nodes of 8 cpu that run the pods bound to them), applies ``crds/`` and a scheduler config with reclaim,
runs the operator in-process, and tells five stories, each by creating objects and printing what
changes (read back from the apiserver, as kubectl would). Every workload is a batch/v1 Job whose pods
join a PodGroup: the Job controller makes them (and makes an evicted one again), kwok runs them.

1. **Borrowing**: team research submits 32 one-cpu pods; nobody else asks, so its queue borrows the
   whole idle cluster.
2. **Taking back**: team prod (same weight) arrives with 16 pods; reclaim evicts research's pods beyond
   its fair share, each eviction with its reason in numbers, until both hold 16 cpu.
3. **A gang waits whole**: an MPI job of 8 two-cpu pods (minMember 8) cannot be admitted while the
   cluster is full; none of its pods is bound, and its PodGroup says why, in numbers.
4. **A guarantee**: a new queue, urgent, with a tiny weight but a guarantee of 4 cpu; its hotfix job
   is admitted into the full cluster (by weight alone it would deserve 1.5 cpu).
5. **A job runs to its end**: hotfix's pods run their 45 s and succeed; the Job is complete and its
   PodGroup Completed.

It ends with the dashboard's address; with ``keep`` it leaves the cluster running and prints a
kubeconfig for kubectl.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from rich.console import Console
from rich.table import Table

from volsched.model.resources import format_amount
from volsched.model.vocabulary import API_GROUP
from volsched_dev.devcluster import RUN_FOR, LocalControlPlane

CRDS = Path(__file__).resolve().parent.parent / "crds"
V = "v1beta1"
NS = "teams"
NODES, NODE_CPU = 4, 8
#: How long hotfix's pods run (s): long enough for phase 4 to settle first, even on a loaded machine.
HOTFIX_RUNS = 45
#: examples/reclaim-preempt-scheduler.yaml without preempt. Every plugin that names victims (gang,
#: conformance, proportion) must accept one, whatever its tier, so reclaim takes only what a queue holds
#: beyond its share.
CONFIG = """\
actions: "enqueue, allocate, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: drf
  - name: overcommit
  - name: proportion
- plugins:
  - name: predicates
  - name: nodeorder
  - name: binpack
"""


# --- what the demo reads back ------------------------------------------------------------------------------


@dataclass
class QueueLook:
    weight: int
    guarantee: str
    deserved: float | None
    allocated: float
    running: int = 0  # pods bound
    pending: int = 0  # pods waiting
    #: PodGroups of the queue in phase Pending (its status: what kubectl's PENDING PODGROUPS shows).
    pending_groups: int = 0


@dataclass
class Look:
    """One read of the cluster: queues, where each group's pods are, PodGroup conditions."""

    queues: dict[str, QueueLook]
    bound: dict[str, int]  # group -> pods bound
    pods: dict[str, int]  # group -> pods
    waiting: dict[str, str]  # group -> why its PodGroup is not scheduled (condition message)
    succeeded: dict[str, int] = field(default_factory=dict)  # group -> pods that ran to their end
    phases: dict[str, str] = field(default_factory=dict)  # group -> its PodGroup's phase

    def summary(self) -> tuple[Any, ...]:
        return (
            tuple(sorted((n, q.deserved, q.allocated, q.running, q.pending) for n, q in self.queues.items())),
            tuple(sorted(self.bound.items())),
            tuple(sorted(self.waiting.items())),
            tuple(sorted(self.succeeded.items())),
        )


def _cpu(value: Any) -> float:
    from volsched.model.resources import parse_amount

    return float(parse_amount(value, where="cpu")) if value is not None else 0.0


def look(api: client.ApiClient, groups: dict[str, str]) -> Look:
    core: Any = client.CoreV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    queues: dict[str, QueueLook] = {}
    for q in custom.list_cluster_custom_object(API_GROUP, V, "queues")["items"]:
        spec, st = q.get("spec") or {}, q.get("status") or {}
        deserved = (st.get("deserved") or {}).get("cpu")
        guarantee = ((spec.get("guarantee") or {}).get("resource") or {}).get("cpu")
        queues[q["metadata"]["name"]] = QueueLook(
            weight=int(spec.get("weight") or 1),
            guarantee=f"cpu {guarantee}" if guarantee else "-",
            deserved=None if deserved is None else _cpu(deserved),
            allocated=_cpu((st.get("allocated") or {}).get("cpu")),
            pending_groups=int(st.get("pending") or 0),
        )
    bound: dict[str, int] = {}
    pods: dict[str, int] = {}
    succeeded: dict[str, int] = {}
    for p in core.list_namespaced_pod(NS).items:
        group = (p.metadata.annotations or {}).get("scheduling.k8s.io/group-name", "")
        if p.status.phase == "Succeeded":
            succeeded[group] = succeeded.get(group, 0) + 1
        if p.metadata.deletion_timestamp:
            continue  # evicted, on its way out
        pods[group] = pods.get(group, 0) + 1
        queue = queues.get(groups.get(group, ""))
        if p.spec.node_name:
            bound[group] = bound.get(group, 0) + 1
            if queue:
                queue.running += 1
        elif queue:
            queue.pending += 1
    waiting: dict[str, str] = {}
    phases: dict[str, str] = {}
    for pg in custom.list_namespaced_custom_object(API_GROUP, V, NS, "podgroups")["items"]:
        phases[pg["metadata"]["name"]] = str((pg.get("status") or {}).get("phase") or "Pending")
        for cond in (pg.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Scheduled" and cond.get("status") == "False" and cond.get("message"):
                waiting[pg["metadata"]["name"]] = str(cond["message"])
    return Look(queues=queues, bound=bound, pods=pods, waiting=waiting, succeeded=succeeded, phases=phases)


# --- the workload ------------------------------------------------------------------------------------------


def queue_obj(name: str, weight: int, guarantee_cpu: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight}
    if guarantee_cpu:
        spec["guarantee"] = {"resource": {"cpu": guarantee_cpu}}
    return {"apiVersion": f"{API_GROUP}/{V}", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def job_objs(
    group: str, queue: str, size: int, *, cpu: str = "1", min_member: int = 1, run_for: str | None = None
) -> list[dict[str, Any]]:
    """A PodGroup and the batch/v1 Job whose pods join it (as a batch integration makes them): the Job
    controller makes ``size`` pods, and one again for each evicted (they count as failed: the backoff
    limit is high); each runs ``run_for`` on its kwok node (None: until the demo ends)."""
    # minResources as the integrations write it (the gang's): the group exists before its pods do, and
    # enqueue admits it on what it says it needs.
    need = f"{float(cpu) * min_member:g}"
    pg = {"apiVersion": f"{API_GROUP}/{V}", "kind": "PodGroup", "metadata": {"name": group},
          "spec": {"minMember": min_member, "queue": queue, "minResources": {"cpu": need}}}  # fmt: skip
    annotations = {"scheduling.k8s.io/group-name": group}
    if run_for:
        annotations[RUN_FOR] = run_for
    job = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": group},
        "spec": {"parallelism": size, "completions": size, "backoffLimit": 10000, "template": {
            "metadata": {"annotations": annotations},
            "spec": {"schedulerName": "volsched", "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}},
    }  # fmt: skip
    return [pg, job]


@dataclass
class Phase:
    title: str
    story: str
    objects: list[dict[str, Any]]
    #: The outcome the phase shows has been reached.
    reached: Callable[[Look], bool]
    #: What the phase showed, in one or two sentences, from the final look.
    conclusion: Callable[[Look, list[str]], str]


def _q(view: Look, name: str) -> QueueLook:
    return view.queues.get(name) or QueueLook(weight=0, guarantee="-", deserved=None, allocated=0.0)


def _n(x: float | None) -> str:
    """cpu as kubectl's DESERVED and ALLOCATED and the dashboard write it (12.85, never 13)."""
    return "-" if x is None else format_amount("cpu", x)


def phases() -> list[Phase]:
    total = NODES * NODE_CPU
    return [
        Phase(
            "1. A queue borrows the idle cluster",
            f"research submits sweep: 32 pods of 1 cpu. The cluster has {total} cpu and nobody else asks.",
            [queue_obj("research", 10), queue_obj("prod", 10), *job_objs("sweep", "research", 32)],
            lambda v: v.bound.get("sweep", 0) == total,
            lambda v, _e: (
                f"research runs {v.bound.get('sweep', 0)} pods: it borrows the whole idle cluster "
                f"(deserved cpu {_n(_q(v, 'research').deserved)}: with no one else asking, all of it)."
            ),
        ),
        Phase(
            "2. Another team takes its share back",
            "prod (the same weight as research) submits serve: 16 pods of 1 cpu, into the full cluster.",
            job_objs("serve", "prod", 16),
            lambda v: v.bound.get("serve", 0) == 16 and v.bound.get("sweep", 0) == 16,
            lambda v, ev: (
                f"reclaim evicted {len(ev)} of research's pods beyond its share: research now runs "
                f"{v.bound.get('sweep', 0)} (deserved cpu {_n(_q(v, 'research').deserved)}), prod "
                f"{v.bound.get('serve', 0)} (deserved cpu {_n(_q(v, 'prod').deserved)}). The evicted pods wait, "
                "pending (their Job made them again)."
            ),
        ),
        Phase(
            "3. A gang waits whole",
            "research submits mpi: 8 pods of 2 cpu that only work together (minMember 8).",
            job_objs("mpi", "research", 8, cpu="2", min_member=8),
            lambda v: "mpi" in v.waiting,
            lambda v, _e: (
                f"mpi waits whole, {v.bound.get('mpi', 0)} of 8 pods bound (none holds a node it "
                f"cannot use). Its PodGroup says: {v.waiting.get('mpi', '')}"
            ),
        ),
        Phase(
            "4. A guarantee admits a job into a full cluster",
            "A new queue, urgent: weight 1 (research and prod have 10) but a guarantee of 4 cpu. Its hotfix "
            "job asks for 4 pods of 1 cpu.",
            [queue_obj("urgent", 1, "4"), *job_objs("hotfix", "urgent", 4, run_for=f"{HOTFIX_RUNS}s")],
            lambda v: v.bound.get("hotfix", 0) == 4,
            lambda v, ev: (
                f"urgent runs {v.bound.get('hotfix', 0)} pods in the full cluster: by weight alone it "
                f"would deserve cpu {total / 21:.1f}; its guarantee makes that cpu "
                f"{_n(_q(v, 'urgent').deserved)}, and reclaim evicted {len(ev)} pods to make room."
            ),
        ),
        Phase(
            "5. A job runs to its end",
            f"hotfix's pods do their work: {HOTFIX_RUNS} s each on their kwok nodes.",
            [],
            lambda v: v.succeeded.get("hotfix", 0) == 4 and v.phases.get("hotfix") == "Completed",
            lambda v, _e: (
                f"hotfix's {v.succeeded.get('hotfix', 0)} pods succeeded and its PodGroup is "
                f"{v.phases.get('hotfix', '?')}; the cpu they held went back to the queues that ask "
                f"(research runs {v.bound.get('sweep', 0)})."
            ),
        ),
    ]


# --- running it --------------------------------------------------------------------------------------------


@dataclass
class PhaseResult:
    title: str
    look: Look
    evictions: list[str]
    conclusion: str
    reached: bool


@dataclass
class Demo:
    api: client.ApiClient
    console: Console
    #: Longest a phase waits for its outcome, and how long nothing must change before it is over (s).
    timeout: float = 90.0
    settle: float = 3.0
    poll: float = 0.5
    groups: dict[str, str] = field(default_factory=dict)  # group -> queue
    _seen_events: set[str] = field(default_factory=set)

    def create(self, objs: list[dict[str, Any]]) -> None:
        batch: Any = client.BatchV1Api(self.api)
        custom: Any = client.CustomObjectsApi(self.api)
        for obj in objs:
            if obj["kind"] == "Queue":
                custom.create_cluster_custom_object(API_GROUP, V, "queues", obj)
            elif obj["kind"] == "PodGroup":
                self.groups[obj["metadata"]["name"]] = obj["spec"]["queue"]
                custom.create_namespaced_custom_object(API_GROUP, V, NS, "podgroups", obj)
            else:
                batch.create_namespaced_job(NS, obj)

    def new_evictions(self) -> list[str]:
        core: Any = client.CoreV1Api(self.api)
        out = []
        for e in core.list_namespaced_event(NS).items:
            if e.reason in ("Evicted", "Preempted") and e.metadata.name not in self._seen_events:
                self._seen_events.add(e.metadata.name)
                out.append(f"{e.involved_object.name}: {e.message}")
        return sorted(out)

    def progress_line(self, view: Look, evicted: int) -> str:
        parts = []
        for name in sorted(self.groups):
            total = view.pods.get(name, 0)
            if total:
                parts.append(f"{name} {view.bound.get(name, 0)}/{total} bound")
        if evicted:
            parts.append(f"{evicted} evicted so far")
        return "  " + " · ".join(parts)

    def run_phase(self, phase: Phase) -> PhaseResult:
        self.console.rule(f"[bold]{phase.title}")
        self.console.print(phase.story)
        self.create(phase.objects)
        evictions: list[str] = []
        last: tuple[Any, ...] | None = None
        changed_at = time.monotonic()
        deadline = time.monotonic() + self.timeout
        view = look(self.api, self.groups)
        while time.monotonic() < deadline:
            time.sleep(self.poll)
            evictions += self.new_evictions()
            view = look(self.api, self.groups)
            summary = view.summary()
            if summary != last:
                if last is not None or view.bound:
                    self.console.print(self.progress_line(view, len(evictions)))
                last, changed_at = summary, time.monotonic()
            elif phase.reached(view) and time.monotonic() - changed_at >= self.settle:
                break
        reached = phase.reached(view)
        self.console.print(queue_table(view))
        for line in evictions[:2]:
            self.console.print(f"  [dim]evicted[/dim] {line}")
        if len(evictions) > 2:
            self.console.print(f"  [dim]... and {len(evictions) - 2} more (kubectl get events)[/dim]")
        conclusion = phase.conclusion(view, evictions)
        self.console.print(
            f"[bold green]=>[/bold green] {conclusion}"
            if reached
            else f"[bold red]not reached:[/bold red] {conclusion}"
        )
        return PhaseResult(phase.title, view, evictions, conclusion, reached)


def queue_table(view: Look) -> Table:
    # The names kubectl get queues and the dashboard use; pods and PodGroups counted apart, said so.
    t = Table(title="queues (cpu)", title_justify="left", box=None, padding=(0, 2))
    cols = ("queue", "weight", "guarantee", "deserved", "allocated", "pods running", "pods pending",
            "pending podgroups")  # fmt: skip
    for col in cols:
        t.add_column(col, justify="left" if col in ("queue", "guarantee") else "right")
    for name, q in sorted(view.queues.items()):
        if name == "default" and not q.running and not q.pending:
            continue
        t.add_row(
            name, str(q.weight), q.guarantee, _n(q.deserved), _n(q.allocated), str(q.running), str(q.pending),
            str(q.pending_groups),
        )  # fmt: skip
    return t


def _setup(api: client.ApiClient, cp: LocalControlPlane) -> None:
    core: Any = client.CoreV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    ext = client.ApiextensionsV1Api(api)
    for path in sorted(CRDS.glob("*.yaml")):
        ext.create_custom_resource_definition(yaml.safe_load(path.read_text()))
    for _ in range(100):
        try:
            custom.list_cluster_custom_object(API_GROUP, V, "queues")
            break
        except client.ApiException:
            time.sleep(0.1)
    for i in range(NODES):
        cp.kwok_node(f"node-{i}", cpu=str(NODE_CPU), memory="64Gi")
    for ns in ("volsched-system", NS):
        core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_config_map("volsched-system", {
        "metadata": {"name": "volsched-scheduler-config"}, "data": {"volsched-scheduler.conf": CONFIG}})  # fmt: skip


def run_demo(keep: bool = False, console: Console | None = None, *, period: float = 0.5) -> int:
    """Run the five phases; 0 when each reached its outcome. ``keep``: leave the cluster up until Ctrl-C."""
    results = run_phases(console or Console(), keep=keep, period=period)
    return 0 if all(r.reached for r in results) else 1


def run_phases(console: Console, *, keep: bool = False, period: float = 0.5) -> list[PhaseResult]:
    from volsched.operator import Operator, Settings

    logging.getLogger("kopf").setLevel(logging.ERROR)  # "OS signals are ignored": the demo handles Ctrl-C
    results: list[PhaseResult] = []
    with LocalControlPlane.real() as cp:
        console.print(
            f"[bold]volsched demo[/bold]: kube-apiserver {cp.host}, kube-controller-manager, "
            f"{NODES} kwok nodes of {NODE_CPU} cpu"
        )
        with cp.api_client() as api:
            _setup(api, cp)
            settings = Settings(kubeconfig=str(cp.kubeconfig_path))
            settings.http.host, settings.http.port = "127.0.0.1", 0
            settings.http.auth = "none"  # a local control plane on loopback: the browser reads /ui as is
            settings.session.period = period
            op = Operator(settings)
            loop = asyncio.new_event_loop()
            stop = asyncio.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.run_until_complete(op.run(stop))

            thread = threading.Thread(target=serve, name="volsched-operator", daemon=True)
            thread.start()
            try:
                demo = Demo(api, console)
                for phase in phases():
                    results.append(demo.run_phase(phase))
                console.rule()
                console.print(f"dashboard: [bold]http://127.0.0.1:{op.http_port}/ui[/bold] (and /metrics)")
                if keep:
                    console.print(
                        f"the cluster keeps running; explore it with kubectl:\n"
                        f"  export KUBECONFIG={cp.kubeconfig_path}\n"
                        f"  kubectl get queues,podgroups -A\n"
                        f"  kubectl -n {NS} get pods -o wide\n"
                        f"  kubectl -n {NS} get events --field-selector reason=Evicted\n"
                        "Ctrl-C stops the operator and the control plane."
                    )
                    _wait_for_interrupt()
            finally:
                loop.call_soon_threadsafe(stop.set)
                thread.join(timeout=30)
                loop.close()
    console.print("stopped the operator and the control plane")
    return results


def _wait_for_interrupt() -> None:
    done = threading.Event()
    previous = {s: signal.signal(s, lambda *_: done.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not done.wait(0.5):
            pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
