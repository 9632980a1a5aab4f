"""The simulator's loop: load the documents into the cache, then run cycles until one changes nothing.

Bad input raises :class:`InputError` naming the file, the document and the field.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from volsched.cache.state import KINDS, ClusterState
from volsched.cache.volcano import VOLCANO_GROUP, VOLCANO_PODGROUP, VOLCANO_QUEUE
from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import Evict, SessionResult
from volsched.framework.messages import eviction_events
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session
from volsched.model import validation
from volsched.model.errors import InputError
from volsched.model.objects import (
    DEFAULT_QUEUE,
    DEFAULT_SCHEDULER_NAMES,
    GROUP_ANNOTATION,
    QUEUE_ANNOTATION,
    VOLCANO_GROUP_ANNOTATION,
    PodGroupPhase,
    Task,
    TaskStatus,
    object_ref,
)
from volsched.simulate.documents import EPOCH, Document, iso, load_documents
from volsched.usage_input import load_usage_file, usage_from_annotations

#: The most pods the simulator's job controller creates for one Job (``spec.parallelism``). Kubernetes
#: caps Indexed Jobs at 100,000; a simulation of one session over that many pods takes minutes, so the
#: simulator plays at most this many per Job and refuses a larger parallelism.
MAX_PARALLELISM = 10_000
#: The most pods all Jobs of a simulation start with (the largest scale ``make bench`` measures).
MAX_JOB_PODS = 50_000
#: Kinds whose objects live in a namespace.
NAMESPACED = frozenset({"Pod", "PodGroup", "Job", "ResourceQuota", "PersistentVolumeClaim"})


@dataclass
class SimulationResult:
    sessions: int
    state: ClusterState
    last: SessionResult
    evictions: list[Evict] = field(default_factory=list)
    history: list[SessionResult] = field(default_factory=list)


class Simulator:
    def __init__(
        self,
        documents: Iterable[Document],
        config: SchedulerConfig | None = None,
        *,
        scheduler_names: Iterable[str] = DEFAULT_SCHEDULER_NAMES,
    ) -> None:
        self.config = config or load_config()
        self.state = ClusterState(scheduler_names=scheduler_names)
        self.jobs: dict[str, dict[str, Any]] = {}
        self._job_counter: dict[str, int] = {}
        self._job_pods = 0  # pods the Jobs started with, in all
        self.clock = EPOCH + 10_000.0
        docs = list(documents)
        self._load(docs)
        self._load_usage_annotations(docs)
        self._moved: dict[str, int] = {}

    # --- input ----------------------------------------------------------------------------------------

    def _load(self, docs: list[Document]) -> None:
        order = ("PriorityClass", "Namespace", "ResourceQuota", "Queue", "Node", "PodGroup", "Job", "Pod")
        for i, doc in enumerate(docs):
            meta = (
                doc.obj.setdefault("metadata", {}) if isinstance(doc.obj.get("metadata", {}), dict) else None
            )
            if meta is None:
                raise InputError("metadata must be a map", source=doc.source)
            meta.setdefault("creationTimestamp", iso(EPOCH + i))
            if doc.obj.get("kind") in ("Pod", "PodGroup", "Job", "ResourceQuota", "PersistentVolumeClaim"):
                meta.setdefault("namespace", "default")
        self._check_job_pods(docs)
        ranked = sorted(
            docs, key=lambda d: order.index(d.obj["kind"]) if d.obj.get("kind") in order else len(order)
        )
        for doc in ranked:
            kind = doc.obj.get("kind")
            ref = object_ref(doc.obj)
            if kind not in (*KINDS, "Job"):
                raise InputError(
                    f"{ref}: unknown kind {kind!r}; known kinds: {', '.join((*KINDS, 'Job'))}",
                    source=doc.source,
                )
            try:
                validation.metadata(doc.obj, namespaced=kind in NAMESPACED)
                if kind == "Job":
                    self._add_job(doc.obj)
                elif str(doc.obj.get("apiVersion") or "").startswith(f"{VOLCANO_GROUP}/"):
                    volcano_kind = VOLCANO_PODGROUP if kind == "PodGroup" else VOLCANO_QUEUE
                    self.state.apply({**doc.obj, "kind": volcano_kind})
                else:
                    self.state.apply(doc.obj)
            except InputError as exc:
                raise InputError(
                    f"{ref}: {exc.message}" if ref not in exc.message else exc.message, source=doc.source
                ) from None
        self._check_references(docs)

    def _check_job_pods(self, docs: list[Document]) -> None:
        """Refuse, before creating any, Jobs whose pods would take the simulation past MAX_JOB_PODS
        (each Job's own parallelism is checked with its other fields)."""
        total = self._job_pods
        for doc in docs:
            spec = doc.obj.get("spec") if doc.obj.get("kind") == "Job" else None
            parallelism = spec.get("parallelism", 1) if isinstance(spec, dict) else None
            if isinstance(parallelism, int) and not isinstance(parallelism, bool) and parallelism > 0:
                total += min(parallelism, MAX_PARALLELISM)
                if total > MAX_JOB_PODS:
                    raise InputError(
                        f"{object_ref(doc.obj)}: spec.parallelism {parallelism} takes the Jobs' pods past "
                        f"{MAX_JOB_PODS}, the most the simulator plays",
                        source=doc.source,
                    )

    def _load_usage_annotations(self, docs: list[Document]) -> None:
        """Node usage from the ``volsched.io/usage`` annotation, measured now (the simulator clock)."""
        sources = {
            (d.obj.get("metadata") or {}).get("name"): d.source for d in docs if d.obj.get("kind") == "Node"
        }
        nodes = [(n, spec.annotations, sources.get(n, "")) for n, spec in self.state.nodes.items()]
        self.state.set_usage(usage_from_annotations(nodes, now=self.clock))

    def load_usage(self, path: str | Path) -> None:
        """Node usage from a ``--usage`` file; it wins over annotations."""
        usage = load_usage_file(path, nodes=self.state.nodes, now=self.clock)
        self.state.set_usage({**self.state.usage, **usage})

    def _check_references(self, docs: list[Document]) -> None:
        queues = {q.name for q in self.state.queue_specs()}
        for doc in docs:
            kind = doc.obj.get("kind")
            if kind == "PodGroup":
                queue = (doc.obj.get("spec") or {}).get("queue") or DEFAULT_QUEUE
                if queue not in queues:
                    raise InputError(
                        f"{object_ref(doc.obj)}: spec.queue names queue {queue!r}, which is not in the input "
                        f"(queues: {', '.join(sorted(queues))})",
                        source=doc.source,
                    )
            if kind in ("Pod", "Job"):
                meta = doc.obj.get("metadata") or {}
                if kind == "Job":
                    meta = ((doc.obj.get("spec") or {}).get("template") or {}).get("metadata") or {}
                queue = (meta.get("annotations") or {}).get(QUEUE_ANNOTATION)
                if (
                    queue
                    and queue not in queues
                    and not (meta.get("annotations") or {}).get(GROUP_ANNOTATION)
                    and not (meta.get("annotations") or {}).get(VOLCANO_GROUP_ANNOTATION)
                ):
                    raise InputError(
                        f"{object_ref(doc.obj)}: annotation {QUEUE_ANNOTATION} names queue {queue!r}, which is not "
                        f"in the input (queues: {', '.join(sorted(queues))})",
                        source=doc.source,
                    )
            if kind == "Pod":
                node = (doc.obj.get("spec") or {}).get("nodeName")
                if node and node not in self.state.nodes:
                    raise InputError(
                        f"{object_ref(doc.obj)}: spec.nodeName names node {node!r}, which is not in the input",
                        source=doc.source,
                    )

    def _add_job(self, job: dict[str, Any]) -> None:
        meta = job["metadata"]
        ns, name = meta.get("namespace") or "default", meta.get("name")
        if not name:
            raise InputError("Job: missing field metadata.name")
        spec = job.get("spec")
        if not isinstance(spec, dict) or not isinstance(spec.get("template"), dict):
            raise InputError(f"Job {ns}/{name}: missing field spec.template")
        parallelism = validation.bounded_int(
            spec.get("parallelism", 1),
            field=f"Job {ns}/{name}: spec.parallelism (the simulator plays at most {MAX_PARALLELISM} pods per Job)",
            minimum=0,
            maximum=MAX_PARALLELISM,
        )
        if not isinstance(spec["template"].get("spec"), dict):
            raise InputError(f"Job {ns}/{name}: missing field spec.template.spec")
        tmeta = spec["template"].get("metadata") or {}
        if not isinstance(tmeta, dict):
            raise InputError(f"Job {ns}/{name}: spec.template.metadata must be a map")
        validation.label_map(tmeta.get("labels"), field=f"Job {ns}/{name}: spec.template.metadata.labels")
        validation.annotation_map(
            tmeta.get("annotations"), field=f"Job {ns}/{name}: spec.template.metadata.annotations"
        )
        self._job_pods += parallelism  # within MAX_JOB_PODS: _check_job_pods saw every Job first
        key = f"{ns}/{name}"
        self.jobs[key] = job
        self._job_counter[key] = 0
        created = meta.get("creationTimestamp")
        for _ in range(parallelism):
            self._spawn(key, created)

    def _spawn(self, job_key: str, created: Any) -> str:
        job = self.jobs[job_key]
        ns, name = job_key.split("/", 1)
        index = self._job_counter[job_key]
        self._job_counter[job_key] = index + 1
        template = copy.deepcopy(job["spec"]["template"])
        tmeta = template.get("metadata") or {}
        pod_name = f"{name}-{index}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": ns,
                "uid": f"{ns}/{pod_name}",
                "labels": {**(tmeta.get("labels") or {}), "job-name": name},
                "annotations": dict(tmeta.get("annotations") or {}),
                "creationTimestamp": created,
                "ownerReferences": [{"kind": "Job", "name": name, "controller": True}],
            },
            "spec": template["spec"],
            "status": {"phase": "Pending"},
        }
        try:
            self.state.apply(pod)
        except InputError as exc:
            raise InputError(f"Job {job_key}: spec.template: {exc.message}") from None
        return f"{ns}/{pod_name}"

    # --- running ----------------------------------------------------------------------------------------

    def step(self) -> tuple[SessionResult, bool]:
        """Run one session and apply its decisions. Returns the result and whether anything changed."""
        self.clock += 1.0
        snapshot = self.state.snapshot(now=self.clock)
        result = run_session(snapshot, self.config)
        changed = self._apply(result)
        return result, changed

    def _apply(self, result: SessionResult) -> bool:
        changed = False
        # What the operator writes on an evicted pod (its event), rendered here at this edge.
        result.events.extend(eviction_events(result))
        for bind in result.binds:
            raw = self.state.raw_pods.get(bind.pod)
            if raw is None:
                continue
            pod = copy.deepcopy(dict(raw))
            pod["spec"]["nodeName"] = bind.node
            pod["status"] = {**(pod.get("status") or {}), "phase": "Running", "startTime": iso(self.clock)}
            self.state.apply(pod)
            changed = True
        for ev in result.evictions:
            raw = self.state.raw_pods.get(ev.pod)
            if raw is None:
                continue
            task = self.state.tasks.get(ev.pod)
            self.state.delete("Pod", *ev.pod.split("/", 1))
            changed = True
            owners = (raw.get("metadata") or {}).get("ownerReferences") or []
            ns = ev.pod.split("/", 1)[0]
            respawned = False
            for ref in owners:
                job_key = f"{ns}/{ref.get('name')}"
                if ref.get("kind") == "Job" and job_key in self.jobs:
                    self._spawn(job_key, iso(self.clock))
                    respawned = True
            if not ev.may_return and task is not None:
                # A failed pod's controller replaced it when it failed; it used nothing measurable.
                failed = task.status is TaskStatus.FAILED
                self._moved_off(ev.node, task, raw, respawn=not respawned and not failed, measured=not failed)
        self.state.carryover = result.carryover
        for key, status in result.podgroups.items():
            pg = self.state.podgroups.get(key)
            if pg is not None and pg.phase.value != status.phase:
                self.state.set_podgroup_phase(key, PodGroupPhase(status.phase))
                changed = True
        return changed

    def _moved_off(
        self, node: str, task: Task, raw: Mapping[str, Any], *, respawn: bool, measured: bool = True
    ) -> None:
        """A pod rescheduled off ``node``: its owner keeps off that node for
        ``volsched.cache.state.AVOID_SECONDS``, the node's
        measured usage loses the pod's share (if the measurement included it), and, playing the pod's
        controller, a pending replacement is created (batch Jobs already got theirs)."""
        self.state.moved_off(task, node, now=self.clock)
        usage = self.state.usage.get(node)
        spec = self.state.nodes.get(node)
        if measured and usage is not None and spec is not None and task.start_time <= usage.measured_at:

            def share(resource: str) -> float:
                alloc = spec.allocatable.get(resource, 0.0)
                return task.request_map.get(resource, 0.0) / alloc * 100.0 if alloc > 0 else 0.0

            self.state.set_usage(
                {
                    **self.state.usage,
                    node: replace(
                        usage,
                        cpu=max(0.0, usage.cpu - share("cpu")),
                        memory=max(0.0, usage.memory - share("memory")),
                    ),
                }
            )
        if respawn and task.owner:
            base = f"{task.namespace}/{task.name.split('-moved-', 1)[0]}"
            count = self._moved.get(base, 0) + 1
            self._moved[base] = count
            pod = copy.deepcopy(dict(raw))
            meta = pod["metadata"]
            meta["name"] = f"{base.split('/', 1)[1]}-moved-{count}"
            meta["uid"] = f"{task.namespace}/{meta['name']}"
            meta["creationTimestamp"] = iso(self.clock)
            pod["spec"].pop("nodeName", None)
            pod["status"] = {"phase": "Pending"}
            self.state.apply(pod)

    def run(self, max_sessions: int) -> SimulationResult:
        if max_sessions < 1:
            raise InputError(f"--sessions must be at least 1, got {max_sessions}")
        history: list[SessionResult] = []
        evictions: list[Evict] = []
        last = SessionResult()
        for _ in range(max_sessions):
            last, changed = self.step()
            history.append(last)
            evictions.extend(last.evictions)
            if not changed:
                break
        return SimulationResult(
            sessions=len(history), state=self.state, last=last, evictions=evictions, history=history
        )

    def add(self, documents: Iterable[Document]) -> None:
        """Objects that appear now, e.g. a new queue with its job after the cluster settled: created at
        the simulator's clock, so they are younger than everything already there."""
        docs = list(documents)
        for i, doc in enumerate(docs):
            meta = doc.obj.get("metadata")
            if isinstance(meta, dict):
                meta.setdefault("creationTimestamp", iso(self.clock + i))
        self._load(docs)


def simulate(
    paths: Sequence[str | Path],
    *,
    config: SchedulerConfig | None = None,
    sessions: int = 100,
    usage: str | Path | None = None,
    scheduler_names: Iterable[str] = DEFAULT_SCHEDULER_NAMES,
) -> SimulationResult:
    sim = Simulator(load_documents(paths), config, scheduler_names=scheduler_names)
    if usage is not None:
        sim.load_usage(usage)
    return sim.run(sessions)


def simulate_stages(
    stages: Sequence[Sequence[str | Path]],
    *,
    config: SchedulerConfig | None = None,
    sessions: int = 100,
    scheduler_names: Iterable[str] = DEFAULT_SCHEDULER_NAMES,
) -> SimulationResult:
    """Run the first stage's files to a steady state, then add each next stage's objects and run again
    (``volsched simulate -f before.yaml --then later.yaml``). Sessions, history and evictions add up."""
    if not stages:
        raise InputError("nothing to simulate")
    sim = Simulator(load_documents(stages[0]), config, scheduler_names=scheduler_names)
    result = sim.run(sessions)
    for paths in stages[1:]:
        sim.add(load_documents(paths))
        more = sim.run(sessions)
        result = SimulationResult(
            sessions=result.sessions + more.sessions,
            state=sim.state,
            last=more.last,
            evictions=result.evictions + more.evictions,
            history=result.history + more.history,
        )
    return result
