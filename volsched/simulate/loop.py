"""The simulator's loop: load the documents into the cache, then run cycles until one changes nothing.

Bad input raises :class:`InputError` naming the file, the document and the field; what the cache does not
check of it (the Jobs' pods, what an object names) :mod:`volsched.simulate.checks` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from volsched.cache.feeder import Feeder
from volsched.cache.state import KINDS, ClusterState
from volsched.cache.volcano import VOLCANO_GROUP, VOLCANO_PODGROUP, VOLCANO_QUEUE
from volsched.cache.workload import WORKLOAD_API_VERSION, WORKLOAD_PODGROUP
from volsched.cycle import BLOCKED, BOUND, EVICTED, FAILED, CycleReport, EvictOutcome, run_cycle
from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import Evict, SessionResult
from volsched.framework.registry import load_config
from volsched.model import validation
from volsched.model.decode import object_ref
from volsched.model.errors import InputError
from volsched.model.raw import meta_of
from volsched.model.vocabulary import (
    DEFAULT_SCHEDULER_NAMES,
)
from volsched.records import dataclass
from volsched.simulate.checks import check_job_pods, check_references, checked_job
from volsched.simulate.documents import EPOCH, Document, iso, load_documents
from volsched.simulate.port import MemoryPort
from volsched.usage_input import load_usage_file, usage_from_annotations

#: Kinds the simulator plays itself (the job controller), beside the cache's.
OWN_KINDS = ("Job", "ResourceClaimTemplate")
#: Kinds whose objects live in a namespace.
NAMESPACED = frozenset(
    {
        "Pod",
        "PodGroup",
        "Job",
        "ResourceQuota",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
        "ResourceClaim",
        "ResourceClaimTemplate",
    }
)


@dataclass
class SimulationResult:
    """What a simulation came to: its sessions, the cache, the last result and the history."""

    sessions: int
    state: ClusterState
    last: SessionResult
    history: list[SessionResult] = field(default_factory=list)
    #: What came of the evictions the sessions decided, in order: carried out (EVICTED) or refused by
    #: the Eviction API (BLOCKED by a PodDisruptionBudget; FAILED when more than one selects the pod).
    eviction_outcomes: list[EvictOutcome] = field(default_factory=list)

    @property
    def evictions(self) -> list[Evict]:
        """The evictions carried out, in order (a new list each call)."""
        return [o.eviction for o in self.eviction_outcomes if o.result == EVICTED]


class Simulator:
    def __init__(
        self,
        documents: Iterable[Document],
        config: SchedulerConfig | None = None,
        *,
        scheduler_names: Iterable[str] = DEFAULT_SCHEDULER_NAMES,
        start: float | None = None,
        port: Callable[[Feeder, Callable[[], float]], MemoryPort] | None = None,
    ) -> None:
        """``start``: the clock's first reading (Unix seconds; default a fixed instant after ``EPOCH``);
        ``port``: makes the port from the feeder and the clock (default :class:`MemoryPort`; the time
        mode's runs pods for their duration)."""
        self.config = config or load_config()
        self.state = ClusterState(scheduler_names=scheduler_names)
        self.clock = EPOCH + 10_000.0 if start is None else start
        self.feeder = Feeder(self.state, clock=lambda: self.clock)
        make_port = port or (lambda feeder, clock: MemoryPort(feeder, clock=clock))
        self.port = make_port(self.feeder, lambda: self.clock)
        #: The Jobs the job controller runs (the port's; a test may end one by deleting it here).
        self.jobs = self.port.job_controller.jobs
        self._job_pods = 0  # pods the Jobs started with, in all
        self.last_report = CycleReport()
        docs = list(documents)
        self._load(docs)
        self._load_usage_annotations(docs)

    # --- input ----------------------------------------------------------------------------------------

    def _load(self, docs: list[Document]) -> None:
        order = (
            "PriorityClass",
            "Namespace",
            "ResourceQuota",
            "Queue",
            "Node",
            "DeviceClass",
            "ResourceSlice",
            "ResourceClaim",
            "ResourceClaimTemplate",
            "PodGroup",
            "Job",
            "Pod",
        )
        for i, doc in enumerate(docs):
            for name in ("kind", "apiVersion"):  # read from files, load_documents said where already
                value = doc.obj.get(name)
                if not isinstance(value, str) and (name == "kind" or value is not None):
                    raise InputError(f"{name}: must be a string, got {repr(value)[:80]}", source=doc.source)
            meta = (
                doc.obj.setdefault("metadata", {}) if isinstance(doc.obj.get("metadata", {}), dict) else None
            )
            if meta is None:
                raise InputError("metadata must be a map", source=doc.source)
            meta.setdefault("creationTimestamp", iso(EPOCH + i))
            if doc.obj.get("kind") in NAMESPACED:
                meta.setdefault("namespace", "default")
        check_job_pods(docs, started=self._job_pods)
        ranked = sorted(
            docs, key=lambda d: order.index(d.obj["kind"]) if d.obj.get("kind") in order else len(order)
        )
        for doc in ranked:
            kind = doc.obj.get("kind")
            ref = object_ref(doc.obj)
            if kind not in (*KINDS, *OWN_KINDS):
                raise InputError(
                    f"{ref}: unknown kind {kind!r}; known kinds: {', '.join((*KINDS, *OWN_KINDS))}",
                    source=doc.source,
                )
            try:
                validation.metadata(doc.obj, namespaced=kind in NAMESPACED)
                if kind == "Job":
                    self._add_job(doc.obj)
                elif kind == "PodDisruptionBudget":
                    self.port.disruption_controller.add(doc.obj)
                elif kind == "ResourceClaimTemplate":
                    self.port.claim_controller.add_template(doc.obj)
                elif str(doc.obj.get("apiVersion") or "").startswith(f"{VOLCANO_GROUP}/"):
                    volcano_kind = VOLCANO_PODGROUP if kind == "PodGroup" else VOLCANO_QUEUE
                    self.port.put({**doc.obj, "kind": volcano_kind})
                elif kind == "PodGroup" and doc.obj.get("apiVersion") == WORKLOAD_API_VERSION:
                    self.port.put({**doc.obj, "kind": WORKLOAD_PODGROUP})
                else:
                    self.port.put(doc.obj)
            except InputError as exc:
                raise InputError(
                    f"{ref}: {exc.message}" if ref not in exc.message else exc.message, source=doc.source
                ) from None
        check_references(docs, queues={q.name for q in self.state.queue_specs()}, nodes=self.state.nodes)

    def _load_usage_annotations(self, docs: list[Document]) -> None:
        """Node usage from the ``volsched.io/usage`` annotation, measured now (the simulator clock)."""
        sources = {meta_of(d.obj).get("name"): d.source for d in docs if d.obj.get("kind") == "Node"}
        nodes = [(n, spec.annotations, sources.get(n, "")) for n, spec in self.state.nodes.items()]
        self.state.set_usage(usage_from_annotations(nodes, now=self.clock))

    def load_usage(self, path: str | Path) -> None:
        """Node usage from a ``--usage`` file; it wins over annotations."""
        usage = load_usage_file(path, nodes=self.state.nodes, now=self.clock)
        self.state.set_usage({**self.state.usage, **usage})

    def _add_job(self, job: dict[str, Any]) -> None:
        key, parallelism = checked_job(job)
        self._job_pods += parallelism  # within MAX_JOB_PODS: check_job_pods saw every Job first
        self.port.job_controller.start(key, job, parallelism)

    # --- running ----------------------------------------------------------------------------------------

    def step(self) -> tuple[SessionResult, bool]:
        """Run one cycle. Returns the session's result and whether anything changed (``last_report``
        keeps the cycle's outcomes)."""
        self.clock += 1.0
        self.port.disruption_controller.sync(self.state.raw_pods.values())
        report = run_cycle(self.feeder, self.config, self.port, now=self.clock)
        self.last_report = report
        changed = bool(report.count(BOUND) or report.evicted() or report.phases_changed)
        return report.result, changed

    def run(self, max_sessions: int) -> SimulationResult:
        if max_sessions < 1:
            raise InputError(f"--sessions must be at least 1, got {max_sessions}")
        history: list[SessionResult] = []
        outcomes: list[EvictOutcome] = []
        last = SessionResult()
        for _ in range(max_sessions):
            last, changed = self.step()
            history.append(last)
            outcomes += (o for o in self.last_report.evictions if o.result in (EVICTED, BLOCKED, FAILED))
            if not changed:
                break
        return SimulationResult(
            sessions=len(history),
            state=self.state,
            last=last,
            history=history,
            eviction_outcomes=outcomes,
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
    on_stage: Callable[[int, SimulationResult, SimulationResult], None] | None = None,
) -> SimulationResult:
    """Run the first stage's files to a steady state, then add each next stage's objects and run again
    (``volsched simulate -f before.yaml --then later.yaml``). Sessions, history and evictions add up.
    ``on_stage(index, stage, so_far)`` is called as each stage settles, before the next one's objects
    arrive (``stage``: that stage's sessions and evictions alone; the state is the one cache, as it
    stands then)."""
    if not stages:
        raise InputError("nothing to simulate")
    sim = Simulator(load_documents(stages[0]), config, scheduler_names=scheduler_names)
    result = sim.run(sessions)
    if on_stage is not None:
        on_stage(0, result, result)
    for index, paths in enumerate(stages[1:], start=1):
        sim.add(load_documents(paths))
        more = sim.run(sessions)
        result = SimulationResult(
            sessions=result.sessions + more.sessions,
            state=sim.state,
            last=more.last,
            history=result.history + more.history,
            eviction_outcomes=result.eviction_outcomes + more.eviction_outcomes,
        )
        if on_stage is not None:
            on_stage(index, more, result)
    return result
