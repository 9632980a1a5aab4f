"""The cache's incremental snapshots equal snapshots built from scratch, and sessions cannot change the cache.

A seeded random walk of cache events (pods, nodes, PodGroups, Queues, PriorityClasses, claims and volumes
applied and deleted, binds assumed, finished and forgotten, assumptions expiring, avoided nodes, PodGroup phases) runs against one
cache that keeps its snapshot builder between snapshots; after every few events its snapshot is compared
with the snapshot of a fresh cache fed the same objects as they stand (every pod parsed again, nothing
reused)."""

from __future__ import annotations

import gc
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.builders import (
    namespace,
    node,
    owned,
    pod,
    podgroup,
    pods,
    preempting_cluster,
    priority_class,
    pv,
    pvc,
    queue,
    storage_class,
)
from volsched.cache import snapshots as snapshots_module
from volsched.cache import state as state_module
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cycle import BOUND, EVICTED, FAILED, BindOutcome, EvictOutcome, StatusReport, run_cycle
from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import Bind, Evict, EvictionReason, SessionResult
from volsched.framework.registry import load_config
from volsched.framework.runner import open_session, run_session
from volsched.framework.statement import Statement
from volsched.model.admitted import BOUND_UNDER, STANDING_ALONE, bound_under
from volsched.model.cluster import ClusterSnapshot, Job, _join, assemble_job, copy_task, lone_job, lone_jobs
from volsched.model.vocabulary import (
    NAMESPACE_QUEUE_KEY,
    NODE_HOLDING_STATUSES,
    PodGroupPhase,
    Task,
    TaskStatus,
)

Obj = dict[str, Any]
NODES = [f"n{i}" for i in range(5)]
OWNERS = ["j0", "j1"]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def task_digest(t: Task) -> tuple[Any, ...]:
    return tuple(
        getattr(t, f.name).tolist() if f.name == "request" else getattr(t, f.name) for f in fields(Task)
    )


def job_digest(j: Job) -> tuple[Any, ...]:
    return (
        j.key, j.namespace, j.name, j.queue, j.min_member, j.priority, j.creation, j.phase, j.podgroup,
        j.min_resources_map, j.allocated.tolist(), j.min_request.tolist(), j.ready,
        {s: n for s, n in j.status_count.items() if n}, [(k, task_digest(t)) for k, t in j.tasks.items()],
    )  # fmt: skip


def digest(s: ClusterSnapshot) -> dict[str, Any]:
    n = s.nodes
    return {
        "space": s.space.names,
        "nodes": (n.names, n.allocatable.tolist(), n.idle.tolist(), n.incoming.tolist(), n.ready.tolist()),
        "score_extra": n.score_extra.tolist(),  # (the walk's pods ask no memory: 200Mi each, for scores)
        # in order (what a node holds is subtracted in this order), and each task as it is: a session's
        # change to a task it took from a node's dict shows in the next snapshot's
        "held": [[(k, task_digest(t)) for k, t in d.items()] for d in n.tasks],
        "incoming_tasks": n.incoming_tasks,
        "usage": n.usage,
        "jobs": [(k, job_digest(j)) for k, j in s.jobs.items()],  # in order, as sessions see them
        "queues": s.queues,
        "weights": s.namespace_weights,
        "foreign": [task_digest(t) for t in s.foreign_tasks],
        "problems": s.problems,
        "labels": s.namespace_labels,
        "now": s.now,
    }


class RandomPort:
    """Answers each bind bound or failed, at once or from the next ``settle`` (an asynchronous writer)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.later: list[BindOutcome] = []

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Any], *, lone: bool = False
    ) -> list[BindOutcome]:
        now: list[BindOutcome] = []
        for b in binds:
            outcome = BindOutcome(b, BOUND if self.rng.random() < 0.7 else FAILED)
            (now if self.rng.random() < 0.5 else self.later).append(outcome)
        return now

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Any]) -> list[EvictOutcome]:
        return [EvictOutcome(e, EVICTED) for e in evictions]

    def settle(self) -> tuple[list[BindOutcome], list[EvictOutcome]]:
        done, self.later = self.later, []
        return done, []

    def write_status(self, result: SessionResult, feeder: Feeder) -> StatusReport:
        return StatusReport()


class Walk:
    """One cache fed random events, with the objects it was given (to feed a fresh cache the same)."""

    def __init__(self, seed: int, *, strays: bool = False) -> None:
        self.rng = random.Random(seed)
        self.clock = Clock()
        self.feeder = Feeder(ClusterState(), assume_ttl=5, clock=self.clock)
        self.objects: dict[tuple[str, str], Obj] = {}  # everything but pods (the cache holds those raw)
        self.avoided: list[tuple[str, str, float]] = []
        self.now = 1000.0
        #: With ``strays``, draws of their own for groups no PodGroup answers and bound pods still
        #: Pending (the walk's other draws stay as they were; without, the walk is as it always was).
        self.strays = random.Random(-1 - seed) if strays else None
        #: With ``strays``, when each PodGroup named like a pod was made (draws of their own again).
        self.made = random.Random(-1001 - seed)
        #: With ``strays``, each pod's bound-under record (by uid; None: it carries none).
        self.records: dict[str, str | None] = {}
        #: With ``strays``, whether a pod without a record carries a bind's standing alone instead (draws
        #: of their own: on a pod standing alone on a node, it keeps its name whatever the times).
        self.alone = random.Random(-2001 - seed)

    def group(self, name: str) -> str:
        """The group a pod names: PodGroups g0-g2 come and go under their pods (bound ones too); with
        strays, also "gone", never made, "p3", the name of a pod standing alone, and "g0/x", which no
        PodGroup can have. A pod of ours on a node whose group does not exist is foreign until (if
        ever) its group appears."""
        if self.strays is None:
            return name
        return self.strays.choice([name, name, name, name, "gone", "p3", "g0/x"])

    def unfinished(self) -> str | None:
        """The phase of a pod not finished: left out (Running when bound), or with strays, now and
        then Pending (bound, not running yet)."""
        return None if self.strays is None else self.strays.choice([None, "Pending"])

    def put(self, obj: Obj) -> None:
        meta = obj["metadata"]
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        if obj["kind"] != "Pod":
            self.objects[(obj["kind"], key)] = obj
        self.feeder.apply(obj["kind"], obj)

    def drop(self, kind: str, ns: str | None, name: str) -> None:
        self.objects.pop((kind, f"{ns or ''}/{name}"), None)
        meta: Obj = {"name": name, **({"namespace": ns} if ns else {})}
        self.feeder.delete(kind, {"metadata": meta})

    def random_pod(self) -> Obj:
        r = self.rng
        name = f"p{r.randrange(24)}"
        how = r.random()
        obj = pod(
            name,
            ns=r.choice(["a", "b"]),
            cpu=r.choice(["1", "2", "500m"]),
            gpu="1" if r.random() < 0.1 else None,
            group=self.group(r.choice(["g0", "g1", "g2"])) if how < 0.4 else None,
            owner=f"Job/{r.choice(OWNERS)}" if 0.4 <= how < 0.8 else None,
            node=r.choice(NODES) if r.random() < 0.4 else None,
            phase=r.choice(["Succeeded", "Failed"]) if r.random() < 0.1 else self.unfinished(),
            priority_class=r.choice([None, "low", "high", "gone"]),
            scheduler=r.choice(["volsched", "volsched", "default-scheduler"]),
            claims=r.sample(["c0", "c1", "c2"], r.randrange(1, 3)) if r.random() < 0.2 else None,
            annotations={"scheduling.volsched.io/min-member": r.choice(["2", "x"])}
            if r.random() < 0.1
            else None,
            created=f"2026-01-01T00:00:{r.randrange(60):02d}Z",
        )
        obj["metadata"]["uid"] = f"uid-{name}-{r.randrange(2)}"
        if r.random() < 0.15:
            obj["spec"]["priority"] = r.randrange(-5, 50)
        if self.strays is not None:  # (its own draws: see ``strays``)
            # One record per pod (uid), or none, as a bind writes it once: the cache keeps the first it
            # took, and a fresh one reads what the pods say (the same, but for a tenant's change).
            uid = obj["metadata"]["uid"]
            if uid not in self.records:
                self.records[uid] = self.record() if self.strays.random() < 0.5 else None
                if self.records[uid] is None and self.alone.random() < 0.3:
                    self.records[uid] = STANDING_ALONE
            if self.records[uid] is not None:
                obj["metadata"].setdefault("annotations", {})[BOUND_UNDER] = self.records[uid]
        return obj

    def as_api(self, event: Obj) -> Obj:
        """A pod ``event`` made from the cached pod as the walk's API has it: with the record the walk's
        pod carries (by uid), not one the cache laid over it with an assumed bind (the walk's pods keep
        their one record, binds included: a bind's record is the cache's until the API shows it)."""
        uid = event["metadata"].get("uid")
        if self.strays is None or uid not in self.records:
            return event
        notes = {k: v for k, v in (event["metadata"].get("annotations") or {}).items() if k != BOUND_UNDER}
        if (record := self.records[uid]) is not None:
            notes[BOUND_UNDER] = record
        return {**event, "metadata": {**event["metadata"], "annotations": notes}}

    def record(self) -> str:
        """A bound-under record (what a bind writes; now and then one volsched does not read): a pod of
        ours on a node whose group is gone that carries one is an orphan, a pod standing alone in the
        queue it names (``volsched.cache.orphans``)."""
        assert self.strays is not None
        s = self.strays
        if s.random() < 0.2:
            return s.choice(["", "{", '{"podGroup": ""}'])
        return bound_under(
            uid=f"pg-{s.randrange(2)}",
            queue=s.choice(["q0", "default", "gone"]),
            priority_class=s.choice(["", "low"]),
            priority=s.randrange(-5, 50),
            min_member=s.randrange(1, 3),
        )

    def rules(self) -> None:
        """With strays, now and then: queue q0's tenancy rules or a namespace's labels change (which decide
        where an orphan counts: the queue its record names, or its namespace's default queue), or a
        PodGroup named like a pod comes or goes (a pod standing alone made before it keeps its name: the
        PodGroup is no job while it exists; one made after it is its member; one bound standing alone
        keeps it whatever the times)."""
        assert self.strays is not None
        s = self.strays
        if s.random() < 0.5:  # a PodGroup named like a pod (standing alone, or not)
            ns, name = s.choice(["a", "b"]), f"p{s.randrange(6)}"
            if s.random() < 0.4:
                self.drop("PodGroup", ns, name)
            else:
                # (made at a time not known, or at a second of the pods': before a pod of its name, or
                # after, or with it; a pod standing alone made after it is its member)
                m = self.made
                made = m.choice([None, f"2026-01-01T00:00:{m.randrange(60):02d}Z"])
                if self.alone.random() < 0.3:  # (draws of their own)
                    # A pod of its name bound standing alone, then the PodGroup, older (refused when the
                    # pod came and mended since, or seen late): the pod keeps its name.
                    lone = pod(
                        name,
                        ns=ns,
                        node=self.alone.choice(NODES),
                        created="2026-01-01T00:00:30Z",
                        annotations={BOUND_UNDER: STANDING_ALONE},
                    )
                    lone["metadata"]["uid"] = uid = f"uid-{name}-alone"
                    self.records[uid] = STANDING_ALONE
                    self.put(lone)
                    made = "2026-01-01T00:00:00Z"
                self.put(
                    podgroup(
                        name, ns=ns, min_member=s.randrange(1, 3), queue=s.choice([None, "q0"]), created=made
                    )
                )
            return
        if s.random() < 0.5:
            labels = {"team": s.choice(["a", "b"])} if s.random() < 0.7 else {}
            if s.random() < 0.2:
                labels[NAMESPACE_QUEUE_KEY] = "q0"
            self.put(namespace(s.choice(["a", "b"]), labels=labels))
            return
        access: Obj = {}
        if s.random() < 0.5:
            access["namespaceSelector"] = {"matchLabels": {"team": s.choice(["a", "b"])}}
        if s.random() < 0.3:
            access["priorityClasses"] = s.sample(["low", "high"], s.randrange(1, 3))
        if s.random() < 0.3:
            access["maxPriority"] = s.randrange(0, 40)
        self.put(queue("q0", weight=s.randrange(1, 4), **access))

    def step(self) -> None:
        r, state = self.rng, self.feeder.state
        if self.strays is not None and self.strays.random() < 0.15:
            self.rules()
        op = r.randrange(18)
        if op <= 3:
            self.put(self.random_pod())
        elif op == 4 and state.raw_pods:
            ns, name = r.choice(sorted(state.raw_pods)).split("/")
            self.drop("Pod", ns, name)
        elif op == 5:
            pending = sorted(k for k, t in state.tasks.items() if t.node_name is None)
            if pending:
                key = r.choice(pending)
                self.feeder.assume(key, state.tasks[key].uid, r.choice(NODES))
        elif op == 6:  # an assumed bind completes (its time to live starts) or fails (forgotten)
            assumed = sorted(k for k in state.tasks if self.feeder.is_assumed(k))
            if assumed:
                key = r.choice(assumed)
                if r.random() < 0.5:
                    self.feeder.finish(key)
                else:
                    self.feeder.forget(key)
        elif op == 7:
            self.clock.now += r.choice([1, 3, 6])  # assumptions expire after 5
            if state.raw_pods:  # a stale (unbound) event of a pod: kept bound only while assumed
                key = r.choice(sorted(state.raw_pods))
                raw = state.raw_pods[key]
                if not self.feeder.is_assumed(key):
                    return
                self.feeder.apply(
                    "Pod",
                    self.as_api({**raw, "spec": {k: v for k, v in raw["spec"].items() if k != "nodeName"}}),
                )
        elif op == 8:
            name = r.choice(["low", "high", "base"])
            if r.random() < 0.3:
                self.drop("PriorityClass", None, name)
            else:
                self.put(priority_class(name, r.randrange(0, 100), default=r.random() < 0.3))
        elif op == 9:
            name = r.choice(NODES)
            if r.random() < 0.2:
                self.drop("Node", None, name)
            else:
                self.put(
                    node(
                        name,
                        cpu=r.choice(["4", "8"]),
                        gpu="2" if r.random() < 0.2 else None,
                        ready=r.random() < 0.9,
                    )
                )
        elif op == 10:
            name = r.choice(["g0", "g1", "g2"])
            ns = r.choice(["a", "b"])
            if r.random() < 0.3:
                self.drop("PodGroup", ns, name)
            else:
                self.put(podgroup(name, ns=ns, min_member=r.randrange(1, 3), queue=r.choice([None, "q0"])))
        elif op == 11:
            if r.random() < 0.3:
                self.drop("Queue", None, "q0")
            else:
                self.put(
                    queue(
                        "q0", weight=r.randrange(1, 4), capability={"cpu": "8"} if r.random() < 0.5 else None
                    )
                )
        elif op == 12:
            ns, name = r.choice(["a", "b"]), r.choice(["c0", "c1", "c2"])
            if r.random() < 0.3:
                self.drop("PersistentVolumeClaim", ns, name)
            else:
                self.put(
                    pvc(
                        name,
                        ns=ns,
                        volume=r.choice([None, "v0", "v1"]),
                        storage_class=r.choice([None, "wait"]),
                    )
                )
        elif op == 13:
            name = r.choice(["v0", "v1"])
            if r.random() < 0.3:
                self.drop("PersistentVolume", None, name)
            elif r.random() < 0.2:
                self.put(storage_class("wait", zones=r.choice([None, ["z1"]])))
            else:
                self.put(pv(name, nodes=r.sample(NODES, 2)))
        elif op == 14:
            owner, at = f"Job/{r.choice(OWNERS)}", r.choice(NODES)
            until = self.now + r.choice([1.0, 5.0, 50.0])
            self.avoided.append((owner, at, until))
            state.avoid_node(owner, at, until=until)
        elif op == 16:  # a cycle: its binds streamed to a port that answers each at once or later
            run_cycle(self.feeder, DEFAULT, RandomPort(r), now=self.now)
        elif op == 17:  # events that show nothing new, and assumptions whose time is up let go
            for (kind, _), obj in sorted(self.objects.items()):
                if kind == "Node" and r.random() < 0.5:
                    self.put(
                        {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(r.randrange(99))}}
                    )
            for key in sorted(state.raw_pods):
                if r.random() < 0.3:
                    raw = state.raw_pods[key]
                    rv = str(r.randrange(10**6))
                    event = {**raw, "metadata": {**raw["metadata"], "resourceVersion": rv}}
                    self.feeder.apply("Pod", self.as_api(event))
            self.feeder.expire()
        else:
            key = r.choice(["a/g0", "b/g1", "a/job-j0", "b/job-j1"])
            phase = r.choice(list(PodGroupPhase))
            state.set_podgroup_phase(key, phase)

    def from_scratch(self) -> ClusterState:
        """A fresh cache holding the same objects: every pod parsed again, nothing carried over."""
        state = self.feeder.state
        fresh = ClusterState()
        # PriorityClasses first (sorted is stable): every pod is parsed with the classes in force.
        for _, obj in sorted(self.objects.items(), key=lambda kv: kv[0][0] != "PriorityClass"):
            fresh.apply(obj)
        for raw in state.raw_pods.values():
            fresh.apply(raw)
        for owner, at, until in self.avoided:
            fresh.avoid_node(owner, at, until=until)
        for key, pg in state.podgroups.items():  # phases the sessions gave, as the cache holds them
            fresh.set_podgroup_phase(key, pg.phase)
            fresh.set_podgroup_admitted(key, pg.admitted_min_member)  # and the minMember admitted with
        for key, phase in state._derived_phase.items():
            fresh.set_podgroup_phase(key, phase)
        fresh.usage = dict(state.usage)
        return fresh


PREEMPT = load_config(
    text=(Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml").read_text()
)
DEFAULT = load_config()


@pytest.mark.parametrize("seed", range(12))
def test_the_incremental_snapshot_equals_one_built_from_scratch(seed: int) -> None:
    walk = Walk(seed, strays=True)
    for i in range(300):
        walk.step()
        if i % 3 == 0:
            walk.now += 1
            # The fresh cache must expire the same avoided nodes: take its snapshot at the same instant.
            incremental = walk.feeder.state.snapshot(now=walk.now)
            state = walk.feeder.state  # the order and tasks the snapshot read: the cache's, kept up to date
            assert list(state._view_tasks.items()) == list(state.tasks.items())
            assert state._view_seq == state._seq
            fresh = walk.from_scratch()
            scratch = fresh.snapshot(now=walk.now)
            assert digest(incremental) == digest(scratch), f"seed {seed}, step {i}"
            # The Queue delete check's orphans are the snapshot's, in the same queues (one rule for both).
            orphaned = [j.queue for k, j in incremental.jobs.items() if k in state._builder._base.orphan]
            assert sorted(state.orphan_queues()) == sorted(orphaned), f"seed {seed}, step {i}"
            nodes = incremental.nodes  # and what a node holds is what its tasks request
            for n, held in enumerate(nodes.tasks):
                expect = nodes.allocatable[n] - sum(
                    (t.request for t in held.values()), np.zeros(len(nodes.space))
                )
                assert np.allclose(nodes.idle[n], expect)
            for key, t in state.tasks.items():  # every pod on a node holds its room, whoever's it is
                if t.node_name in nodes.index and t.status in NODE_HOLDING_STATUSES:
                    assert key in nodes.tasks[nodes.index[t.node_name]], f"seed {seed}, step {i}: {key}"
            assert walk.feeder.state.last_derived == fresh.last_derived
            # A session on it (evicting or not) changes nothing the next incremental snapshot reuses.
            run_session(incremental, PREEMPT if i % 2 else DEFAULT)


def test_the_walks_meet_orphans() -> None:
    """(The walks above take pods of ours on a node whose group is gone, carrying a record, through
    snapshots: orphans, their own jobs, in the queue their record names or, refused, their namespace's
    default queue; and PodGroups a pod standing alone of their name keeps from being jobs, an orphan's
    among them, and older ones a pod bound standing alone keeps, and pods standing alone made after a
    PodGroup of their name, its members; and pods of ours on a node with no group and no record, in their
    namespace's default queue. Not every seed meets them; these do: seed 11 for an orphan's name, since
    such pods count and the sessions' binds went another way.)"""
    taken = refused = shadowed = by_orphan = joined = by_bound = no_record = 0
    for seed in (0, 1, 2, 11):
        walk, met = Walk(seed, strays=True), 0
        for i in range(300):
            walk.step()
            if i % 3 == 0:
                walk.now += 1
                snap = walk.feeder.state.snapshot(now=walk.now)
                for _, reason, message in snap.problems:
                    met += reason == "PodGroupGone"
                    taken += "the one it was bound under" in message
                    refused += "as the record of its bind says" in message
                    shadowed += reason == "PodGroupNameTaken"
                    by_orphan += reason == "PodGroupNameTaken" and "running without its pod group" in message
                    by_bound += reason == "PodGroupNameTaken" and "was bound standing alone" in message
                    no_record += "it carries no record of a bind by volsched" in message
                tasks = walk.feeder.state.tasks
                joined += sum(  # (a pod standing alone made after the PodGroup of its name: its member)
                    job.podgroup is not None and key in job.tasks and tasks[key].standing_alone
                    for key, job in snap.jobs.items()
                )
        assert met, f"seed {seed}"
    assert taken and refused and shadowed and by_orphan and joined and by_bound and no_record


class BuildFails(Exception):
    pass


#: Where a build is made to raise, after that step's work (``prepare`` before its own): the seeds whose walks
#: reach that step often enough (a node's sums alone are not reached by every walk).
_RAISES = [
    *((seed, where) for where in ("prepare", "_job", "_nodes_full", "build") for seed in range(4)),
    (1, "_node"),
    (3, "_node"),
]


@pytest.mark.parametrize(("seed", "where"), _RAISES)
def test_a_snapshot_whose_build_raised_loses_no_change_to_the_next(
    seed: int, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that raises (a defect in one object's handling, say) took the keys touched since the last
    snapshot with it, and may have stopped midway (a job assembled, not yet the nodes' sums): a pod whose
    change kept the count of tasks stayed as it was in every later snapshot, a job half brought up to date
    stayed so. The next snapshot after a failed one reads the whole cache again and builds anew."""
    walk = Walk(seed, strays=True)
    state = walk.feeder.state
    builder = state._builder
    real = getattr(builder, where)
    fail = [False]

    def failing(*args: Any, **kwargs: Any) -> Any:
        if fail[0]:
            fail[0] = False
            if where != "prepare":
                real(*args, **kwargs)  # (that step's work done, then a failure after it: the state moved on)
            raise BuildFails
        return real(*args, **kwargs)

    monkeypatch.setattr(builder, where, failing)
    failed = 0
    for i in range(240):
        walk.step()
        if i % 3 == 0:
            walk.now += 1
            # (armed for this snapshot alone, which may not reach the step: the walk's cycles take their own;
            # a node's sums alone, which few snapshots reach, for every one)
            fail[0] = walk.rng.random() < 0.3 or where == "_node"
            try:
                incremental = state.snapshot(now=walk.now)
            except BuildFails:
                failed += 1
                walk.step()
                incremental = state.snapshot(now=walk.now)
            fail[0] = False
            scratch = walk.from_scratch().snapshot(now=walk.now)
            assert digest(incremental) == digest(scratch), f"seed {seed}, step {i}"
    assert failed > 5


def test_the_walk_reaches_every_kind_of_change() -> None:
    """The walk above is only worth something if it reuses entries and also rebuilds them."""
    walk = Walk(0)
    reused = rebuilt = 0
    for i in range(300):
        walk.step()
        if i % 3 == 0:
            walk.now += 1
            walk.feeder.state.snapshot(now=walk.now)
            builder = walk.feeder.state._builder
            rebuilt += builder.rebuilt
            reused += len(walk.feeder.state.tasks) - builder.rebuilt
    assert reused > 500 and rebuilt > 50


@pytest.mark.parametrize("collecting", [True, False])
def test_the_first_snapshot_of_a_large_cache_runs_no_cyclic_collection(collecting: bool) -> None:
    # The first snapshot makes a few objects per pod and frees none: every collection meanwhile would
    # rescan the growing heap for nothing (the cost grew faster than the cache). Counted, not timed.
    feeder = Feeder(ClusterState())
    for i in range(20):
        feeder.apply("Node", node(f"n{i}"))
    for p in pods("p", 2_000, ns="a"):
        feeder.apply("Pod", p)
    started: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    was = gc.isenabled()
    (gc.enable if collecting else gc.disable)()
    # Feeding left the young generation's allocation count anywhere up to its threshold: the few
    # allocations before the snapshot's pause could start a collection of what feeding made.
    gc.collect()
    gc.callbacks.append(count)
    try:
        snap = feeder.state.snapshot(now=1.0)
        after = gc.isenabled()
    finally:
        gc.callbacks.remove(count)
        (gc.enable if was else gc.disable)()
    assert len(snap.jobs) == 2_000
    assert started == []
    assert after is collecting  # the collector is left as it was found


@pytest.mark.parametrize(("pending", "frozen"), [(600, True), (400, False)], ids=["large", "small"])
def test_a_snapshot_that_made_many_entries_freezes_them_and_never_a_sessions_cyclic_garbage(
    pending: int, frozen: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Left to the collector, what a snapshot made (paused while it was made) is walked by the young,
    # middle and old collections in turn, inside the session, and by every full collection after: the
    # first snapshot, and the one after a session that bound every pending pod (all rebuilt). Counted,
    # not timed.
    monkeypatch.setattr(state_module, "FREEZE_REBUILT", 500)
    gc.collect()
    gc.unfreeze()
    gc.collect()  # nothing frozen, nothing cyclic left over from other tests
    feeder = Feeder(ClusterState())
    feeder.apply("Node", node("n1", cpu="1000", pods="2000"))
    for p in pods("p", pending, ns="a"):
        feeder.apply("Pod", p)
    try:
        first = feeder.state.snapshot(now=1.0)
        after_first = gc.get_freeze_count()
        run_session(first, DEFAULT)  # its cyclic garbage holds the whole snapshot
        del first
        for p in pods("q", 600, ns="a"):  # a later snapshot makes as many entries again
            feeder.apply("Pod", p)
        feeder.state.snapshot(now=2.0)
        after_second = gc.get_freeze_count()
        gc.collect()
        gc.unfreeze()
        pinned = gc.collect()
    finally:
        gc.unfreeze()
    assert (after_first > pending) is frozen
    assert after_second > after_first + 600  # the later one froze what it made, too
    assert pinned == 0  # and no cyclic garbage of the session before it was frozen with it


def test_a_priority_class_event_changes_the_priority_of_its_pods_only() -> None:
    feeder = Feeder(ClusterState())
    feeder.apply("PriorityClass", priority_class("low", 1))
    feeder.apply("Pod", pod("a", priority_class="low"))
    feeder.apply("Pod", pod("b", priority_class="high"))
    explicit = pod("c", priority_class="low")
    explicit["spec"]["priority"] = 7
    feeder.apply("Pod", explicit)
    untouched = feeder.state.tasks["default/c"]
    feeder.apply("PriorityClass", priority_class("low", 5))
    feeder.apply("PriorityClass", priority_class("high", 50))
    assert {k: t.priority for k, t in feeder.state.tasks.items()} == {
        "default/a": 5,
        "default/b": 50,
        "default/c": 7,
    }
    assert feeder.state.tasks["default/c"] is untouched
    feeder.apply("PriorityClass", priority_class("base", 3, default=True))
    feeder.delete("PriorityClass", {"metadata": {"name": "high"}})
    assert feeder.state.tasks["default/b"].priority == 3  # unknown class: the global default


def test_an_assumed_bind_neither_copies_the_pod_deeply_nor_changes_the_watched_object() -> None:
    feeder = Feeder(ClusterState())
    raw = pod("a", node=None)
    raw["metadata"]["uid"] = "u1"
    feeder.apply("Pod", raw)
    before = feeder.state.tasks["default/a"]
    feeder.assume("default/a", before.uid, "n1")
    after = feeder.state.tasks["default/a"]
    assert (after.node_name, after.status.name) == ("n1", "BOUND")
    assert before.node_name is None and "nodeName" not in raw["spec"]  # nothing changed in place
    cached = feeder.state.raw_pods["default/a"]
    assert cached["spec"]["nodeName"] == "n1" and cached["spec"]["containers"] is raw["spec"]["containers"]


def sessions_cluster() -> ClusterState:
    state = ClusterState()
    for obj in [
        node("n1"),
        node("n2"),
        priority_class("high", 10),
        pod("bound", node="n1"),
        *[pod(f"w{i}", group="g", priority_class="high") for i in range(3)],
        podgroup("g", min_member=3),
        pod("big", cpu="7"),
    ]:
        state.apply(obj)
    return state


def test_a_session_cannot_change_the_cache() -> None:
    state = sessions_cluster()
    before = digest(state.snapshot(now=5.0))
    tasks_before = dict(state.tasks)
    snap = state.snapshot(now=5.0)
    result = run_session(snap, load_config())
    assert result.binds  # the session did place pods on its snapshot
    assert any(t.node_name for j in snap.jobs.values() for t in j.tasks.values() if t.key != "default/bound")
    assert digest(state.snapshot(now=5.0)) == before
    assert all(state.tasks[k] is t and t.node_name in (None, "n1") for k, t in tasks_before.items())


def test_what_a_snapshot_shares_with_the_cache_is_read_only() -> None:
    state = sessions_cluster()
    snap = state.snapshot(now=5.0)
    task = snap.jobs["default/g"].tasks["default/w0"]
    with pytest.raises(ValueError, match="read-only"):
        task.request += 1
    with pytest.raises(ValueError, match="read-only"):
        snap.nodes.allocatable[0, 0] = 0.0
    task.status, task.node_name = task.status, "n2"  # a session's own copy: changing it is fine
    assert state.tasks["default/w0"].node_name is None
    again = state.snapshot(now=5.0)
    assert again.nodes.idle is not snap.nodes.idle and again.jobs["default/g"] is not snap.jobs["default/g"]
    assert np.array_equal(again.nodes.idle, state.snapshot(now=5.0).nodes.idle)


def test_snapshots_share_the_tasks_that_are_not_pending_and_copy_the_pending_ones() -> None:
    state = preempting_cluster()
    one, two = state.snapshot(now=5.0), state.snapshot(now=5.0)
    bound = [k for k, t in one.jobs["ns/lo"].tasks.items() if two.jobs["ns/lo"].tasks[k] is t and t.shared]
    assert len(bound) == 4
    assert one.jobs["ns/hi"].tasks["ns/hi-0"] is not two.jobs["ns/hi"].tasks["ns/hi-0"]
    assert not one.jobs["ns/hi"].tasks["ns/hi-0"].shared
    assert one.nodes.tasks[0]["ns/lo-0"] is one.jobs["ns/lo"].tasks["ns/lo-0"]


@pytest.mark.parametrize("config", [PREEMPT, DEFAULT], ids=["preempting", "default"])
def test_a_session_leaves_the_tasks_other_snapshots_share_as_they_were(config: SchedulerConfig) -> None:
    state = preempting_cluster()
    before = digest(state.snapshot(now=5.0))
    other = state.snapshot(now=5.0)
    snap = state.snapshot(now=5.0)
    result = run_session(snap, config)
    if config is PREEMPT:  # the session evicted on its own copies
        assert {e.pod for e in result.evictions} == {"ns/lo-2", "ns/lo-3"}
        assert any(t.status is TaskStatus.RELEASING for t in snap.jobs["ns/lo"].tasks.values())
        assert not any(t.shared for j in snap.jobs.values() for t in j.tasks.values())
        assert not any(t.shared for held in snap.nodes.tasks for t in held.values())
    assert digest(other) == before
    assert digest(state.snapshot(now=5.0)) == before


def test_a_session_refuses_to_change_a_task_other_snapshots_share() -> None:
    state = preempting_cluster()
    other = state.snapshot(now=5.0)
    session = open_session(state.snapshot(now=5.0), load_config())  # its actions never evict
    victim = session.jobs["ns/lo"].tasks["ns/lo-0"]
    with pytest.raises(RuntimeError, match="share"):
        Statement(session).evict(victim, reason=EvictionReason(action="test"))
    assert victim.status is TaskStatus.RUNNING
    assert other.jobs["ns/lo"].tasks["ns/lo-0"] is victim
    session = open_session(state.snapshot(now=5.0), load_config(), may_evict=True)
    own = session.jobs["ns/lo"].tasks["ns/lo-0"]
    Statement(session).evict(own, reason=EvictionReason(action="test"))
    assert own.status is TaskStatus.RELEASING and victim.status is TaskStatus.RUNNING
    assert session.nodes.tasks[0]["ns/lo-0"] is own


def test_a_job_whose_tasks_are_all_pending_is_assembled_for_each_session_and_shared_by_none() -> None:
    state = preempting_cluster()
    one = state.snapshot(now=5.0)
    lent = one.jobs["ns/hi"]
    assert not lent.shared and not any(t.shared for t in lent.tasks.values())
    assert lent.allocated.flags.writeable  # the session's own, as a copy of a shared job would be
    assert one.jobs["ns/lo"].shared  # a job with a bound task is still shared, and copied if private
    result = run_session(one, PREEMPT)
    assert result.binds or result.evictions  # the session changed its jobs
    two = state.snapshot(now=5.0)
    assert two.jobs["ns/hi"] is not lent
    assert two.jobs["ns/hi"].tasks["ns/hi-0"] is not lent.tasks["ns/hi-0"]
    assert job_digest(two.jobs["ns/hi"]) == job_digest(state.snapshot(now=5.0).jobs["ns/hi"])
    assert two.jobs["ns/hi"].tasks["ns/hi-0"].status is TaskStatus.PENDING


def test_a_sessions_changes_to_its_lent_jobs_never_reach_the_next_snapshot() -> None:
    state = ClusterState()
    for obj in [node("n1", cpu="4"), *pods("p", 3, cpu="1"), podgroup("g", min_member=2)]:
        state.apply(obj)
    for obj in pods("m", 2, cpu="1", group="g"):
        state.apply(obj)
    before = digest(state.snapshot(now=5.0))
    snap = state.snapshot(now=5.0)
    assert all(not j.shared for j in snap.jobs.values())  # every job is all pending: every one is lent
    result = run_session(snap, load_config())
    assert len(result.binds) == 4  # placed on the session's own jobs and tasks
    assert digest(state.snapshot(now=5.0)) == before
    assert digest(state.snapshot(now=5.0)) == before  # and a build after a build of lent jobs


def test_pods_asking_the_same_share_one_read_only_request_that_no_session_changes() -> None:
    # A one-pod job's minimum is its pod's request vector, which every pod asking the same shares (the
    # bound pods' shared copies too): a session that pipelines, preempts and evicts must leave it as it
    # was, for every snapshot that holds it.
    state = preempting_cluster()
    state.apply(pod("p", ns="ns", cpu="2", priority_class="high", queue="q"))
    before = digest(state.snapshot(now=5.0))
    snap = state.snapshot(now=5.0)
    vec = snap.jobs["ns/hi"].tasks["ns/hi-0"].request
    assert snap.jobs["ns/p"].tasks["ns/p"].request is vec and snap.jobs["ns/p"].min_request is vec
    assert snap.jobs["ns/lo"].tasks["ns/lo-0"].request is snap.jobs["ns/lo"].tasks["ns/lo-3"].request
    assert not vec.flags.writeable
    values = {id(t.request): t.request.copy() for j in snap.jobs.values() for t in j.tasks.values()}
    result = run_session(snap, PREEMPT)
    assert result.evictions  # the session took room back for a pending pod
    shared = {id(t.request): t.request for j in snap.jobs.values() for t in j.tasks.values()}
    assert all(shared[i].tobytes() == v.tobytes() for i, v in values.items() if i in shared)
    assert digest(state.snapshot(now=5.0)) == before


def test_a_snapshot_from_scratch_assembles_each_job_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A PodGroup with pods is named both by the PodGroups and by its pods' groups: it is still one job,
    # assembled (its pending pods copied) once.
    assembled: list[str] = []

    def counting(space: Any, pg: Any, members: list[Task], **kwargs: Any) -> Job | None:
        job = assemble_job(space, pg, members, **kwargs)
        if job is not None:
            assembled.append(job.key)
        return job

    def counting_lone(space: Any, t: Task, key: str, **kwargs: Any) -> Job:  # a pod standing alone's path
        assembled.append(key)
        return lone_job(space, t, key, **kwargs)

    def counting_lones(space: Any, tasks: list[Task], keys: list[str]) -> list[Job]:  # all at once
        assembled.extend(keys)
        return lone_jobs(space, tasks, keys)

    monkeypatch.setattr(snapshots_module, "assemble_job", counting)
    monkeypatch.setattr(snapshots_module, "lone_job", counting_lone)
    monkeypatch.setattr(snapshots_module, "lone_jobs", counting_lones)
    state = ClusterState()
    for obj in [node("n1"), queue("q"), podgroup("g", ns="ns", queue="q", min_member=2), pod("solo")]:
        state.apply(obj)
    for obj in pods("g", 2, ns="ns", group="g"):
        state.apply(obj)
    state.apply(podgroup("empty", ns="ns", queue="q"))
    snap = state.snapshot(now=5.0)
    assert sorted(assembled) == sorted(snap.jobs) == ["default/solo", "ns/empty", "ns/g"]


@pytest.mark.parametrize("order", [["a", "b"], ["b", "a"]], ids=["alone-first", "stray-first"])
def test_a_pod_naming_a_missing_group_never_joins_the_pod_standing_alone_under_that_name(
    order: list[str],
) -> None:
    # Pod b names PodGroup a, which does not exist; pod a stands alone, and its job key is "default/a"
    # too. b is a PodGroupNotFound problem whichever of them the cache holds first, never a second
    # member of a's one-pod job.
    state = ClusterState()
    state.apply(node("n1"))
    for name in order:
        state.apply(pod(name, group="a") if name == "b" else pod(name))
    for snap in (state.snapshot(now=5.0), state.snapshot(now=5.0)):  # from scratch, then kept
        assert list(snap.jobs["default/a"].tasks) == ["default/a"]
        assert snap.problems == [("Pod default/b", "PodGroupNotFound", "pod group a does not exist")]


def test_a_pod_deleted_and_added_again_takes_its_new_place_among_the_pods_standing_alone() -> None:
    state = ClusterState()
    for obj in [node("n1"), pod("a"), pod("b", node="n1"), pod("c")]:
        state.apply(obj)
    state.snapshot(now=5.0)
    state.delete("Pod", "default", "a")
    state.apply(pod("a"))
    assert list(state.snapshot(now=5.0).jobs) == ["default/b", "default/c", "default/a"]
    state.apply(pod("b", node="n1", cpu="2"))  # changed in place: keeps its place
    assert list(state.snapshot(now=5.0).jobs) == ["default/b", "default/c", "default/a"]


def test_a_task_copy_has_every_field_of_the_task() -> None:
    state = preempting_cluster()
    t = state.tasks["ns/lo-0"]
    c = copy_task(t)
    assert c is not t and all(getattr(c, f.name) is getattr(t, f.name) for f in fields(Task))


@pytest.mark.parametrize(
    "obj",
    [
        pod("p", queue="q"),
        pod("p", node="n1"),
        pod("p", node="n1", phase="Running"),
        pod("p", node="n1", phase="Succeeded"),
    ],
    ids=["pending", "bound", "running", "succeeded"],
)
def test_a_pod_standing_alone_is_the_job_the_dataclass_makes_with_its_counts_moved_by_count_status(
    obj: Obj,
) -> None:
    # The one-pod job is made field by field (object.__new__), not by Job(...): it must have every
    # field a Job has, and the counters count_status (the one definition, as a PodGroup's members are
    # joined) gives, whatever the pod's status.
    state = ClusterState()
    for o in [node("n1"), queue("q"), obj]:
        state.apply(o)
    snap = state.snapshot(now=5.0)
    job = snap.jobs["default/p"]
    t = job.tasks["default/p"]
    ref = Job(
        key=t.key, namespace=t.namespace, name=t.name, queue=job.queue, min_member=1, priority=t.priority,
        creation=t.creation, phase=job.phase, podgroup=None, min_resources_map=None,
        allocated=snap.space.zeros(), min_request=t.request,
    )  # fmt: skip
    _join(ref, t)
    names = [f.name for f in fields(Job)]
    assert not hasattr(job, "__dict__")  # slotted: nothing but its fields
    assert all(hasattr(job, name) for name in names)  # every field stored
    for name in names:
        if name in ("shared", "memo"):  # the builder's: a job not all pending is shared once assembled
            continue
        mine, theirs = getattr(job, name), getattr(ref, name)
        if isinstance(theirs, np.ndarray):
            assert mine.tolist() == theirs.tolist(), name
        else:
            assert mine == theirs and type(mine) is type(theirs), name
    assert job.allocated is not t.request and job.min_request is t.request


def test_pods_standing_alone_made_all_at_once_are_each_the_job_lone_job_makes_and_their_own() -> None:
    # A snapshot from scratch makes a backlog's one-pod jobs in one go (lone_jobs): each must be the
    # job lone_job makes of its pod (its queue read from its own annotations), with counters and an
    # allocation of its own, so that a session moving one job's counts changes no other job.
    state = ClusterState()
    for o in [node("n1"), queue("q"), pod("a", cpu="1"), pod("b", cpu="2", queue="q"), pod("c", ns="ns")]:
        state.apply(o)
    snap = state.snapshot(now=5.0)
    jobs = [snap.jobs[k] for k in ("default/a", "default/b", "ns/c")]
    assert [j.queue for j in jobs] == ["default", "q", "default"]
    names = [f.name for f in fields(Job)]
    for job in jobs:
        ref = lone_job(snap.space, job.tasks[job.key], job.key)
        for name in names:
            mine, theirs = getattr(job, name), getattr(ref, name)
            if isinstance(theirs, np.ndarray):
                assert mine.tolist() == theirs.tolist(), name
            else:
                assert mine == theirs and type(mine) is type(theirs), name
    for one, other in [(jobs[0], jobs[1]), (jobs[1], jobs[2]), (jobs[0], jobs[2])]:
        assert one.status_count is not other.status_count and one.memo is not other.memo
        assert not np.shares_memory(one.allocated, other.allocated)
    jobs[0].count_status(TaskStatus.PENDING, TaskStatus.ALLOCATED)
    jobs[0].allocated += jobs[0].tasks["default/a"].request
    assert [j.status_count[TaskStatus.PENDING] for j in jobs] == [0, 1, 1]
    assert jobs[1].allocated.tolist() == jobs[2].allocated.tolist() == snap.space.zeros().tolist()
    again = state.snapshot(now=5.0).jobs["default/a"]
    assert again.status_count == {TaskStatus.PENDING: 1} and not again.allocated.any()


def test_lone_jobs_refuses_a_pod_that_is_not_pending() -> None:
    state = ClusterState()
    for o in [node("n1"), pod("p", node="n1", phase="Running"), pod("q")]:
        state.apply(o)
    snap = state.snapshot(now=5.0)
    running, pending = snap.jobs["default/p"].tasks["default/p"], snap.jobs["default/q"].tasks["default/q"]
    for tasks in ([running], [pending, running]):
        with pytest.raises(ValueError, match="not pending"):
            lone_jobs(snap.space, tasks, [t.key for t in tasks])


def test_a_jobs_status_counts_read_zero_for_a_status_it_has_none_of() -> None:
    state = preempting_cluster()
    job = state.snapshot(now=5.0).jobs["ns/lo"]
    assert job.status_count[TaskStatus.PENDING] == 0 and job.status_count[TaskStatus.RUNNING] == 4
    assert TaskStatus.PENDING not in job.status_count  # reading a missing status adds none


def test_deleted_objects_are_remembered_for_a_while_not_forever() -> None:
    clock = Clock()
    feeder = Feeder(ClusterState(), tombstone_ttl=600, clock=clock)
    late = pod("gone")
    late["metadata"]["resourceVersion"] = "5"
    feeder.apply("Pod", late)
    feeder.delete("Pod", {"metadata": {"namespace": "default", "name": "gone", "resourceVersion": "6"}})
    clock.now += 599
    assert not feeder.apply("Pod", late)  # a late event of the deleted pod is dropped
    assert "default/gone" not in feeder.state.tasks
    for i in range(1000):  # pods that come and go, one a second
        clock.now += 1
        feeder.apply("Pod", {**pod(f"p{i}"), "metadata": {"namespace": "default", "name": f"p{i}"}})
        feeder.delete(
            "Pod", {"metadata": {"namespace": "default", "name": f"p{i}", "resourceVersion": str(10 + i)}}
        )
    assert len(feeder._deleted) <= 601  # only the last ttl's worth of deletions


class _Interleaved:
    """The snapshot lock, with another snapshot run (after a change) just before it is first taken:
    two sessions' snapshots overlapping, the later one building first."""

    def __init__(self, lock: Any, meanwhile: Any) -> None:
        self.lock, self.meanwhile = lock, meanwhile

    def __enter__(self) -> None:
        meanwhile, self.meanwhile = self.meanwhile, None
        if meanwhile is not None:
            other = threading.Thread(target=meanwhile)
            other.start()
            other.join()
        self.lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.lock.__exit__(*exc)


def test_overlapping_snapshots_never_leave_the_next_one_stale() -> None:
    feeder = Feeder(ClusterState())
    for obj in [node("n1", cpu="4"), pod("p", cpu="3")]:
        feeder.apply(obj["kind"], obj)
    state = feeder.state
    state.snapshot(now=5.0)
    feeder.apply("Pod", {**pod("p", cpu="2"), "metadata": {**pod("p")["metadata"], "uid": "u"}})

    def bound_meanwhile() -> None:  # the pod's bind is assumed and another snapshot is taken
        feeder.assume("default/p", "u", "n1")
        state.snapshot(now=5.0)

    state._snapshot_lock = _Interleaved(state._snapshot_lock, bound_meanwhile)  # type: ignore[assignment]
    state.snapshot(now=5.0)
    after = state.snapshot(now=5.0)  # nothing changed since: it must show the pod bound on n1
    assert after.nodes.idle[0][after.space.index("cpu")] == pytest.approx(2.0)
    fresh = ClusterState()
    fresh.apply(node("n1", cpu="4"))
    fresh.apply(state.raw_pods["default/p"])
    assert digest(after) == digest(fresh.snapshot(now=5.0))


def test_a_node_event_that_changes_nothing_keeps_the_snapshots_node_table() -> None:
    state = ClusterState()
    for obj in [node("n1", cpu="4"), node("n2", cpu="4"), pod("p", node="n1")]:
        state.apply(obj)
    before = state.snapshot(now=5.0).nodes
    state.apply({**node("n1", cpu="4"), "metadata": {"name": "n1", "resourceVersion": "9"}})
    assert state.snapshot(now=5.0).nodes.allocatable is before.allocatable
    state.apply(node("n1", cpu="8"))
    after = state.snapshot(now=5.0).nodes
    assert after.allocatable is not before.allocatable and after.idle[0][after.space.index("cpu")] == 7.0


def test_owners_groups_follow_the_task_order_after_the_task_table_is_replaced_whole() -> None:
    """Benchmarks fill ``state.tasks`` at once: the next snapshot renumbers the cache's order, and every
    owner's group must take its new place (as a cache fed the pods in that order would give it)."""
    state = ClusterState()
    for name, owner in [("a", "ua"), ("b", "ub"), ("c", "uc")]:
        state.apply(owned(name, kind="Job", owner=f"job-{name}", uid=owner))
    state.snapshot(now=5.0)
    order = ["default/c", "default/a", "default/b"]
    state.tasks = {key: state.tasks[key] for key in order}
    after = state.snapshot(now=5.0)
    fresh = ClusterState()
    for key in order:
        fresh.apply(state.raw_pods[key])
    scratch = fresh.snapshot(now=5.0)
    assert [g.name for g in state.last_derived] == ["podgroup-uc", "podgroup-ua", "podgroup-ub"]
    assert state.last_derived == fresh.last_derived
    assert digest(after) == digest(scratch)


def test_pods_standing_alone_follow_the_task_order_after_the_task_table_is_replaced_whole() -> None:
    """The snapshot keeps its pods standing alone in the cache's order from one build to the next; a
    table replaced whole orders them anew (as a cache fed the pods in that order would)."""
    state = ClusterState()
    for obj in [node("n1"), pod("a"), pod("b", node="n1"), pod("c")]:
        state.apply(obj)
    state.snapshot(now=5.0)
    order = ["default/c", "default/a", "default/b"]
    state.tasks = {key: state.tasks[key] for key in order}
    after = state.snapshot(now=5.0)
    fresh = ClusterState()
    fresh.apply(node("n1"))
    for key in order:
        fresh.apply(state.raw_pods[key])
    assert list(after.jobs) == order
    assert digest(after) == digest(fresh.snapshot(now=5.0))


@pytest.mark.parametrize("config", [PREEMPT, DEFAULT], ids=["preempting", "default"])
def test_snapshots_share_what_each_node_holds_until_a_session_changes_it(config: SchedulerConfig) -> None:
    # What a node holds is lent to every snapshot as one dict per node; a session's table copies a
    # node's dict before it first places, pipelines, evicts or frees there, so no other snapshot (nor
    # the next one) sees the change, and a node it never touches keeps the shared dict (but under a
    # session that may evict, whose every shared task is replaced by its own copy first).
    state = preempting_cluster()
    for obj in [node("n2", cpu="1"), pod("x", ns="ns", node="n2", cpu="1"), node("n3", cpu="2")]:
        state.apply(obj)
    other = state.snapshot(now=5.0)
    snap = state.snapshot(now=5.0)
    before = digest(other)
    assert all(a is b for a, b in zip(other.nodes.tasks, snap.nodes.tasks, strict=True))
    result = run_session(snap, config)
    assert [(b.pod, b.node) for b in result.binds] == [("ns/hi-0", "n3")]
    n2, n3 = snap.nodes.index["n2"], snap.nodes.index["n3"]
    assert list(snap.nodes.tasks[n3]) == ["ns/hi-0"] and not other.nodes.tasks[n3]
    assert (snap.nodes.tasks[n2] is other.nodes.tasks[n2]) is (config is DEFAULT)
    table = state.snapshot(now=5.0).nodes
    held = table.tasks[n2]
    assert held is other.nodes.tasks[n2]
    t = held["ns/x"]
    table.free(n2, t)  # a table's change copies a lent dict first
    assert "ns/x" not in table.tasks[n2] and "ns/x" in held
    table.hold(n2, t)
    table.pipeline(n2, t)
    table.unpipeline(n2, t)
    assert digest(other) == before
    assert digest(state.snapshot(now=5.0)) == before


def test_a_sessions_changes_to_its_dict_of_jobs_never_reach_the_next_snapshot() -> None:
    # The builder keeps its jobs standing alone, in order, from one build to the next; a session gets its
    # own dict of them, so replacing, dropping or adding a job there changes nothing the builder keeps.
    state = ClusterState()
    for obj in [node("n1"), pod("a", node="n1", cpu="100m"), pod("b"), pod("c", cpu="100m")]:
        state.apply(obj)
    before = digest(state.snapshot(now=5.0))
    snap = state.snapshot(now=5.0)
    snap.jobs["default/a"] = snap.jobs["default/b"]
    del snap.jobs["default/c"]
    snap.jobs["default/x"] = snap.jobs["default/b"]
    assert digest(state.snapshot(now=5.0)) == before
    state.apply(pod("d"))  # and the next build places a new one after the kept ones
    assert list(state.snapshot(now=5.0).jobs) == ["default/a", "default/b", "default/c", "default/d"]


def test_a_percentage_guarantee_follows_the_nodes_from_one_snapshot_to_the_next() -> None:
    # The ready nodes' total is kept with the node table (read-only) while the nodes stay the same.
    state = ClusterState()
    for obj in [node("n1", cpu="8"), queue("qg", guarantee={"cpu": "25%"})]:
        state.apply(obj)
    cpu = state.snapshot(now=5.0).space.index("cpu")
    assert state.snapshot(now=5.0).queues["qg"].guarantee["cpu"] == 2
    state.apply(node("n2", cpu="8"))
    snap = state.snapshot(now=5.0)
    assert snap.queues["qg"].guarantee["cpu"] == 4
    with pytest.raises(ValueError, match="read-only"):
        snap.nodes.memo["total"][cpu] = 0.0
    state.apply(node("n2", cpu="8", ready=False))
    assert state.snapshot(now=5.0).queues["qg"].guarantee["cpu"] == 2


def test_nodes_that_join_and_leave_move_only_their_rows_and_the_rest_keep_theirs() -> None:
    """A node joining (a pod already bound to it), one leaving (its pods with it) and another resized, in
    one snapshot of 12 nodes: what every node holds is brought to the new places, the nodes of both
    tables keep their very dicts of held tasks, and the snapshot is the one a fresh cache builds."""
    objects: dict[tuple[str, str], Obj] = {}

    def put(state: ClusterState, obj: Obj) -> None:
        objects[obj["kind"], obj["metadata"]["name"]] = obj
        state.apply(obj)

    state = ClusterState()
    for i in range(12):
        put(state, node(f"n{i}", cpu="8"))
    for k in range(30):
        put(state, pod(f"p{k}", cpu="1", node=f"n{k % 13}"))  # (p12, p25 on n12: no such node yet)
    before = state.snapshot(now=1.0).nodes
    put(state, node("n12", cpu="8"))
    put(state, node("n3", cpu="16"))
    del objects["Node", "n5"]
    state.delete("Node", None, "n5")
    after = state.snapshot(now=2.0)
    assert after.nodes.names == sorted(f"n{i}" for i in range(13) if i != 5)  # (n12 between n11 and n2)
    fresh = ClusterState()
    for obj in objects.values():
        fresh.apply(obj)
    assert digest(after) == digest(fresh.snapshot(now=2.0))
    for i in (0, 4, 6, 11):  # (not resized, not joined: the very dict)
        assert after.nodes.tasks[after.nodes.index[f"n{i}"]] is before.tasks[before.index[f"n{i}"]]
