"""The snapshot a session works on: nodes as arrays, jobs with their tasks, queues, namespaces.

A :class:`ClusterSnapshot` is made for every session (by ``volsched.cache.snapshots``, incrementally, from
jobs made by :func:`assemble_job`) and is the session's own: the session mutates its pending tasks, the
jobs it may change and its node arrays while it decides, and nothing it does here reaches the cluster or
the cache. What it shares with the cache and other snapshots (jobs and tasks marked ``shared``, request
vectors, a job's ``min_request``, the nodes' allocatable) is read-only; a session that may evict takes its
own copies first (:meth:`ClusterSnapshot.thaw`). What each node holds (``NodeTable.tasks``) is lent as one
dict per node that the table copies before it first changes it (``NodeTable.held``).

Nodes are a struct of arrays (:class:`NodeTable`) so that filters and scores are numpy work over all nodes
at once. No I/O happens here. Shared, lent, thaw, origin and kept: docs/design/steady-state.md.

What the snapshot believes about a PodGroup whose members are partly bound: Kubernetes has no atomic
multi-bind, so an operator that dies between the binds of one gang leaves some members with a node while
the PodGroup still says Pending (its status write never happened). Only an admitted gang is ever bound,
so a PodGroup in phase Pending with any member that counts toward minMember (bound, running or
succeeded) is taken as admitted (Inqueue): enqueue does not judge it again, its bound members count once
(in what its queue holds; admission counts only its unmet minimum), and allocate completes it, ahead of
the not-ready jobs that hold nothing (gang's job order), as soon as the nodes have room (proportion lets
a gang that holds members from before the session past its queue's deserved share up to minMember,
never past realCapability).
The session writes the phase back, so the belief becomes the PodGroup's status.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field, replace
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from volsched.model.admitted import protected
from volsched.model.attach import AttachCatalog
from volsched.model.devices import Claim, DeviceCatalog
from volsched.model.nodeterms import HARD_EFFECTS, UNSCHEDULABLE_TAINT, tolerates
from volsched.model.resources import EPS, PODS, ResourceSpace, Vector, stack_rows
from volsched.model.usage import NodeUsage
from volsched.model.vocabulary import (
    ALLOCATED_STATUSES,
    DEFAULT_QUEUE,
    NODE_HOLDING_STATUSES,
    TERMINAL_STATUSES,
    DisruptionBudget,
    NodeSpec,
    PodGroupPhase,
    PodGroupSpec,
    QueueSpec,
    Task,
    TaskStatus,
    queue_annotation,
)
from volsched.model.volumes import VolumeCatalog
from volsched.records import copier, dataclass

BoolArray = npt.NDArray[np.bool_]
#: Statuses that count toward a gang's minMember.
READY_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
IndexArray = npt.NDArray[np.intp]

#: The key of a job or a task (``map(key_of, jobs)``: read by C over many at once).
key_of: Callable[[Job | Task], str] = attrgetter("key")


class TaskCounts(dict[TaskStatus, int]):
    """How many of a job's tasks are in each status; a missing status counts 0 (as a ``Counter``, whose
    construction and copy cost four times a plain dict's: a snapshot makes and copies one per job)."""

    __slots__ = ()

    def __missing__(self, key: TaskStatus) -> int:
        return 0


class NodeTable:
    """All nodes of a snapshot as arrays over (node, resource)."""

    def __init__(self, space: ResourceSpace, specs: Iterable[NodeSpec]) -> None:
        self.specs: list[NodeSpec] = sorted(specs, key=lambda s: s.name)
        self.names: list[str] = [s.name for s in self.specs]
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        n, r = len(self.specs), len(space)
        self.space = space
        self.allocatable: Vector = np.zeros((n, r))
        for i, s in enumerate(self.specs):
            self.allocatable[i] = space.vector(s.allocatable)
        if n and PODS in space.names:
            pods = space.index(PODS)
            # A node that reports no pod capacity takes Kubernetes' default of 110.
            missing = np.array([PODS not in s.allocatable for s in self.specs])
            self.allocatable[missing, pods] = 110
        self.idle: Vector = self.allocatable.copy()
        #: Per node, the (cpu, memory) that the held tasks' ``score_extra`` adds: what kube-scheduler's
        #: least- and most-requested scores count beyond the requests (pods that ask none); scores only.
        self.score_extra: Vector = np.zeros((n, 2))
        #: Releasing less pipelined: what will be free once evicted pods are gone, less what is promised.
        self.incoming: Vector = np.zeros((n, r))
        #: How many releasing or pipelined tasks there are; while 0, future idle is idle.
        self.incoming_tasks = 0
        self.ready: BoolArray = np.array([s.ready for s in self.specs], dtype=bool)
        self.tasks: list[dict[str, Task]] = [{} for _ in range(n)]
        #: Per node, 1 while its dict of tasks is still one ``fresh`` was lent (shared, read-only): the
        #: table's mutations copy it first (``held``). None: every dict is the table's own.
        self.lent: bytearray | None = None
        self.usage: dict[str, NodeUsage] = {}
        #: What readers derived from the nodes' specs alone, shared by every table ``fresh`` makes.
        self.memo: dict[str, Any] = {}
        self.allocatable.flags.writeable = False

    def fresh(
        self,
        tasks: list[dict[str, Task]] | None = None,
        *,
        lent: bool = False,
        held: tuple[Vector, Vector, Vector, int] | None = None,
    ) -> NodeTable:
        """A table over the same nodes and space with nothing held (``tasks``: the new table's dicts of
        tasks per node, to fill in): what every session starts from. The nodes' specs, names,
        allocatable and memo are shared (read-only); idle, incoming, readiness and the tasks per node
        are the new table's own. ``lent``: the dicts of ``tasks`` are lent, shared with others that
        never change them, and the table copies each before it first changes it (a session changes a
        few nodes' tasks, not every node's: 5,000 dicts are not copied every session for that).
        ``held``: what ``tasks`` hold (idle, score extras, incoming, incoming tasks), the table's own
        arrays, in place of nothing held."""
        out = object.__new__(NodeTable)
        out.specs, out.names, out.index, out.space = self.specs, self.names, self.index, self.space
        out.allocatable, out.memo = self.allocatable, self.memo
        if held is None:
            out.idle = self.allocatable.copy()
            out.score_extra = np.zeros((len(self.names), 2))
            out.incoming = np.zeros(self.allocatable.shape)
            out.incoming_tasks = 0
        else:
            out.idle, out.score_extra, out.incoming, out.incoming_tasks = held
        out.ready = self.ready.copy()
        out.tasks = [{} for _ in self.names] if tasks is None else tasks
        out.lent = bytearray(b"\x01") * len(out.tasks) if lent and tasks is not None else None
        out.usage = {}
        return out

    def held(self, i: int) -> dict[str, Task]:
        """Node ``i``'s dict of tasks, to change: the table's own (a lent one is copied first)."""
        lent = self.lent
        if lent is not None and lent[i]:
            lent[i] = 0
            own = self.tasks[i] = self.tasks[i].copy()
            return own
        return self.tasks[i]

    def __len__(self) -> int:
        return len(self.names)

    @property
    def used(self) -> Vector:
        return self.allocatable - self.idle

    def total(self) -> Vector:
        """Capacity of the nodes that can run pods (ready ones), read-only: it follows from the nodes'
        specs alone, so it is summed once per table and kept in its memo (shared by every copy)."""
        out: Vector | None = self.memo.get("total")
        if out is None:
            if not len(self):
                out = np.zeros(len(self.space))
            else:
                out = np.asarray(self.allocatable[self.ready].sum(axis=0), dtype=np.float64)
            out.setflags(write=False)
            self.memo["total"] = out
        return out

    # Mutations; the session calls these through its Statement, never plugins.
    def hold(self, i: int, task: Task) -> None:
        """A task occupies capacity on node ``i`` (allocated, bound, running or releasing)."""
        self.idle[i] -= task.request
        if task.score_extra is not None:
            self.score_extra[i] += task.score_extra
        if task.status is TaskStatus.RELEASING:
            self.start_releasing(i, task)
        self.held(i)[task.key] = task

    def free(self, i: int, task: Task) -> None:
        self.idle[i] += task.request
        if task.score_extra is not None:
            self.score_extra[i] -= task.score_extra
        if task.status is TaskStatus.RELEASING:
            self.stop_releasing(i, task)
        self.held(i).pop(task.key, None)

    def start_releasing(self, i: int, task: Task) -> None:
        self.incoming[i] += task.request
        self.incoming_tasks += 1

    def stop_releasing(self, i: int, task: Task) -> None:
        self.incoming[i] -= task.request
        self.incoming_tasks -= 1

    def pipeline(self, i: int, task: Task) -> None:
        self.incoming[i] -= task.request
        self.incoming_tasks += 1
        self.held(i)[task.key] = task

    def unpipeline(self, i: int, task: Task) -> None:
        self.incoming[i] += task.request
        self.incoming_tasks -= 1
        self.held(i).pop(task.key, None)


#: A group of nodes' hard taints: (key, value, effect) each.
Taints = tuple[tuple[str, str, str], ...]


def hard_taint_groups(nodes: NodeTable) -> tuple[IndexArray, list[Taints]]:
    """Per node, the index of its group, and the groups in the order first seen: the taints that keep off
    a pod that does not tolerate them (NoSchedule and NoExecute; a cordoned node's as kube-scheduler's
    ``node.kubernetes.io/unschedulable`` taint). Kept with the table (its memo): they follow from the
    nodes' specs alone."""
    memo: tuple[IndexArray, list[Taints]] | None = nodes.memo.get(_TAINT_GROUPS)
    if memo is None:
        groups: dict[Taints, int] = {}
        group = np.zeros(len(nodes), dtype=np.intp)
        for i, spec in enumerate(nodes.specs):
            taints = tuple(t for t in spec.taints if t[2] in HARD_EFFECTS)
            if spec.unschedulable:
                taints = (*taints, UNSCHEDULABLE_TAINT)
            group[i] = groups.setdefault(taints, len(groups))
        group.flags.writeable = False
        memo = nodes.memo[_TAINT_GROUPS] = (group, list(groups))
    return memo


def tolerated_nodes(nodes: NodeTable, tolerations: Sequence[Any]) -> BoolArray:
    """The nodes (ready or not) whose hard taints (:func:`hard_taint_groups`) ``tolerations`` all
    tolerate: asked once per group, gathered over the nodes."""
    group, groups = hard_taint_groups(nodes)
    ok = np.array([all(tolerates(tolerations, t) for t in g) for g in groups] or [True], dtype=bool)
    return ok[group] if len(nodes) else np.ones(0, dtype=bool)


#: Where :func:`hard_taint_groups` keeps its answer (``NodeTable.memo``).
_TAINT_GROUPS = "taint_groups"


@dataclass(eq=False, slots=True)
class Job:
    """A gang: a PodGroup with its pods, or one pod standing alone (minMember 1). Slotted: a snapshot
    of a backlog makes one per pending pod, and a slotted one is a third of the size and made faster."""

    key: str
    namespace: str
    name: str
    queue: str
    min_member: int
    priority: int
    creation: float
    phase: PodGroupPhase
    podgroup: PodGroupSpec | None
    min_resources_map: dict[str, float] | None
    tasks: dict[str, Task] = field(default_factory=dict)
    allocated: Vector = field(default_factory=lambda: np.zeros(0))
    status_count: TaskCounts = field(default_factory=TaskCounts)
    min_request: Vector = field(default_factory=lambda: np.zeros(0))

    #: Tasks placed, bound, running or succeeded: what counts toward minMember. Kept by count_status.
    ready: int = 0
    #: A job other snapshots share (read-only): a session works on its own copy (``own_job``).
    shared: bool = False
    _scheduled: int | None = field(default=None, init=False, repr=False)
    #: What readers derived from a shared job, kept for the next snapshot that shares it (a shared job
    #: never changes); unused on a session's own jobs.
    memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    #: For a session's own copy of a shared job (``ClusterSnapshot.thaw``): the shared job it was copied
    #: from, while the session has not changed the copy (the session drops it at the copy's first
    #: change); else None. The copy then holds what the shared job holds, so what is kept from the
    #: shared job serves for it (:mod:`volsched.framework.settled`).
    origin: Job | None = field(default=None, init=False, repr=False)

    @property
    def ready_count(self) -> int:
        return self.ready

    @property
    def protected_min_member(self) -> int:
        """Its minMember, but no more than the minMember it started with (``volsched.model.admitted``: a
        raise while it runs counts for placement, not protection): what allocate completes past its
        queue's share, and (when above 1) how many of its pods reclaim and preempt keep."""
        pg = self.podgroup
        return self.min_member if pg is None else protected(self.min_member, pg.admitted_min_member)

    @property
    def title(self) -> str:
        """How messages name the job: its name, and for an owner's PodGroup the owner (``Job train``)."""
        owner = self.podgroup.owner if self.podgroup is not None else None
        return f"{self.name} ({owner.title})" if owner is not None else self.name

    def count_status(self, old: TaskStatus | None, new: TaskStatus) -> None:
        """Move one task from status ``old`` (None: a new task) to ``new`` in the counters."""
        c = self.status_count  # get, not c[...]: a missing key is a Python-level call
        if old is not None:
            c[old] = c.get(old, 0) - 1
            if old in READY_STATUSES:
                self.ready -= 1
        c[new] = c.get(new, 0) + 1
        if new in READY_STATUSES:
            self.ready += 1

    @property
    def pipelined_count(self) -> int:
        return self.ready + self.status_count.get(TaskStatus.PIPELINED, 0)

    @property
    def valid_count(self) -> int:
        """Tasks that can still count toward the gang (not failed, not being released)."""
        c = self.status_count
        return sum(c.values()) - c.get(TaskStatus.FAILED, 0) - c.get(TaskStatus.RELEASING, 0)

    @property
    def scheduled_count(self) -> int:
        """Tasks that have (or are about to have) a node."""
        if self._scheduled is not None:
            return self._scheduled
        count = sum(1 for t in self.tasks.values() if t.node_name and t.status not in TERMINAL_STATUSES)
        if self.shared:  # nobody changes it: every snapshot that shares it may keep the count
            self._scheduled = count
        return count

    def any_constrained(self) -> bool:
        """Whether a task of the job has pod affinity, anti-affinity or topology spread (kept on a
        shared job for the next snapshot that shares it)."""
        if self.shared:
            hit: bool | None = self.memo.get("constrained")
            if hit is not None:
                return hit
        out = any(t.constraints is not None for t in self.tasks.values())
        if self.shared:
            self.memo["constrained"] = out
        return out

    def any_host_ports(self) -> bool:
        """Whether a task of the job asks for host ports (kept on a shared job)."""
        if self.shared:
            hit: bool | None = self.memo.get("host_ports")
            if hit is not None:
                return hit
        out = any(t.host_ports for t in self.tasks.values())
        if self.shared:
            self.memo["host_ports"] = out
        return out

    @property
    def all_pending(self) -> bool:
        """Whether every task of the job is pending (none, for a job with no task): it holds nothing on
        any node, and its ``allocated`` is zero when the session opens."""
        return self.status_count.get(TaskStatus.PENDING, 0) == len(self.tasks)

    def pending_tasks(self) -> list[Task]:
        if not self.status_count.get(TaskStatus.PENDING):
            return []
        return [t for t in self.tasks.values() if t.status is TaskStatus.PENDING]

    def total_request(self) -> Vector:
        """Allocated plus pending: what the job asks of its queue right now."""
        out = self.allocated.copy()
        c = self.status_count
        if not (c[TaskStatus.PENDING] or c[TaskStatus.PIPELINED]):
            return out
        for t in self.tasks.values():
            if t.status in (TaskStatus.PENDING, TaskStatus.PIPELINED):
                out = out + t.request
        return out

    @property
    def standalone(self) -> bool:
        return self.podgroup is None


def any_constrained(jobs: Iterable[Job]) -> bool:
    """Whether a task of ``jobs`` has pod affinity, anti-affinity or topology spread
    (:meth:`Job.any_constrained`); a shared job known to have none is passed over from its memo without
    a call (a steady state's 10,000 bound one-pod jobs, every session). The session's own jobs' tasks are
    read in one flat pass, not a call per job (a backlog's 50,000 one-pod jobs: a third of the time)."""
    jobs = list(jobs)
    if any(t.constraints is not None for j in jobs if not j.shared for t in j.tasks.values()):
        return True
    return any(j.any_constrained() for j in jobs if j.shared and j.memo.get("constrained") is not False)


def any_held_host_ports(jobs: Iterable[Job]) -> bool:
    """Whether a task of ``jobs`` that is on a node now may ask for host ports (:meth:`Job.any_host_ports`).
    A job of the session's own whose tasks are all pending has none on a node (it is not asked: a backlog
    of 50,000 one-pod jobs would be walked pod by pod every first session); a shared job answers from its
    memo, one known to have none without a call."""
    return any(
        (j.shared or not j.all_pending) and j.any_host_ports()
        for j in jobs
        if not (j.shared and j.memo.get("host_ports") is False)
    )


def unmet_minimum(job: Job) -> Vector:
    """What an admitted job may still claim toward its minimum: minResources less what it holds."""
    out: Vector = np.maximum(job.min_request - job.allocated, 0.0)
    return out


def unmet_minimum_floats(job: Job) -> list[float]:
    """:func:`unmet_minimum` as plain floats: the same subtraction and floor per dimension (the same
    values to the last bit, but for the sign of a zero, which adds up alike), without the arrays'
    per-call cost (enqueue adds it up for every job it admits, 50,000 at a large backlog)."""
    return [
        d if (d := m - a) > 0.0 else 0.0
        for m, a in zip(job.min_request.tolist(), job.allocated.tolist(), strict=True)
    ]


def min_request_rows(jobs: Sequence[Job]) -> npt.NDArray[np.float64]:
    """Each job's ``min_request`` as a row (one matrix for a run of jobs)."""
    width = len(jobs[0].min_request) if jobs else 0
    return stack_rows([j.min_request for j in jobs], width)


def unmet_minimum_matrix(jobs: Sequence[Job], need: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Each job's :func:`unmet_minimum_floats` as a row, ``need`` being :func:`min_request_rows` of the
    jobs: the same subtraction and floor per dimension."""
    diff = need - stack_rows([j.allocated for j in jobs], need.shape[1])
    out: npt.NDArray[np.float64] = np.where(diff > 0.0, diff, 0.0)
    return out


class RunRows:
    """:func:`min_request_rows` and :func:`unmet_minimum_matrix` of the run last asked about, kept
    until another run is asked about: handed again to whoever asks about the very same list (the
    plugins that vote on a run share one: ``run_rows``) and for the admission of its first jobs that
    follows (``take``). The rows are built once per run, not once per plugin for the vote and again
    for the sums. (A run is asked about and admitted within one enqueue turn: no task of its jobs
    changes meanwhile.)"""

    __slots__ = ("_jobs", "_need", "_unmet")

    def __init__(self) -> None:
        self._jobs: Sequence[Job] = ()
        self._need: npt.NDArray[np.float64] = np.zeros((0, 0))
        self._unmet: npt.NDArray[np.float64] = np.zeros((0, 0))

    def ask(self, jobs: Sequence[Job]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        if jobs is self._jobs:  # another plugin's vote on the same run
            return self._need, self._unmet
        need = min_request_rows(jobs)
        unmet = unmet_minimum_matrix(jobs, need)
        self._jobs, self._need, self._unmet = jobs, need, unmet
        return need, unmet

    def take(self, jobs: Sequence[Job]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """The rows of ``jobs``: kept ones when they are the first jobs of the run last asked about."""
        kept, n = self._jobs, len(jobs)
        if jobs is kept:  # the whole run let in (enqueue hands the very list over): no walk
            return self._need, self._unmet
        if n <= len(kept) and all(a is b for a, b in zip(jobs, kept, strict=False)):
            return self._need[:n], self._unmet[:n]
        need = min_request_rows(jobs)
        return need, unmet_minimum_matrix(jobs, need)


def run_rows(state: dict[str, Any]) -> RunRows:
    """The session's one :class:`RunRows` (in the plugins' session ``state``), shared by every plugin
    that answers for runs of jobs: a run's rows are stacked once, whichever plugins vote on it."""
    rows: RunRows | None = state.get(_RUN_ROWS)
    if rows is None:
        rows = state[_RUN_ROWS] = RunRows()
    return rows


_RUN_ROWS = "run_rows"


def running_sums(start: Sequence[float], rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Row ``k`` (of ``len(rows) + 1``): ``start`` plus ``rows[0]``, ..., ``rows[k - 1]``, added one row
    at a time in order, as a loop adding each to a running total does (``np.add.accumulate`` adds
    each row to the previous sum: the same floats to the last bit, unlike a pairwise ``sum``)."""
    out: npt.NDArray[np.float64] = np.add.accumulate(
        np.concatenate([np.asarray(start, dtype=np.float64).reshape(1, -1), rows]), axis=0
    )
    return out


@dataclass(frozen=True)
class Holdings:
    """The jobs that hold something (not all pending), in their order, and what each holds: row ``k``
    of ``matrix`` is ``jobs[k].allocated``. What the session's ledger sums per queue and per namespace,
    stacked once (``SessionLedger.holdings``)."""

    jobs: list[Job]
    matrix: npt.NDArray[np.float64]


def holdings(jobs: Iterable[Job], width: int) -> Holdings:
    """:class:`Holdings` of ``jobs``: the ones whose tasks are all pending hold nothing and are left out
    (adding their zeros changes no sum; a backlog's 50,000 one-pod jobs are not stacked)."""
    pending = TaskStatus.PENDING
    held = [j for j in jobs if j.status_count.get(pending, 0) != len(j.tasks)]  # not ``all_pending``
    return Holdings(held, stack_rows([j.allocated for j in held], width))


def sum_rows(matrix: npt.NDArray[np.float64], rows: IndexArray, n: int) -> Vector:
    """An ``(n, width)`` array whose row ``i`` is the sum of the rows of ``matrix`` that ``rows`` sends to
    ``i``, added one at a time in their order from zero: ``np.add.at`` into zeros, to the last bit
    (``np.bincount`` with weights adds in index order), at a fraction of its cost."""
    out = np.zeros((n, matrix.shape[1]))
    if len(rows):
        for d in range(matrix.shape[1]):
            out[:, d] = np.bincount(rows, weights=matrix[:, d], minlength=n)
    return out


def minimum_met(job: Job) -> bool:
    """Whether the job holds its minimum in every dimension (its :func:`unmet_minimum` is all zeros);
    kept on a shared job for the next snapshot that shares it (a shared job never changes)."""
    if job.shared:
        hit: bool | None = job.memo.get("minimum_met")
        if hit is not None:
            return hit
    # (plain floats: a vector of a few dimensions, where two numpy calls cost more; NaN compares alike)
    out = all(m <= a for m, a in zip(job.min_request.tolist(), job.allocated.tolist(), strict=True))
    if job.shared:
        job.memo["minimum_met"] = out
    return out


def unmet_minimum_rows(jobs: Sequence[Job], rows: Sequence[int], out: Vector) -> None:
    """Add each job's :func:`unmet_minimum` to row ``rows[k]`` of ``out`` (2-D), one job at a time in
    their order, as a loop would (the same sums to the last bit), without a loop's array per job.

    A shared job that holds its minimum (:func:`minimum_met`, kept from one snapshot to the next) is
    left out: its unmet minimum is zeros, and adding zeros to sums that start at zero changes none
    (a steady state's 10,000 bound one-pod jobs, all admitted, are not stacked every session)."""
    # First the memo's hits (no call), then the rest (few in a steady state) asked in full.
    keep = [k for k, job in enumerate(jobs) if not (job.shared and job.memo.get("minimum_met"))]
    keep = [k for k in keep if not (jobs[k].shared and minimum_met(jobs[k]))]
    if len(keep) < len(jobs):
        jobs = [jobs[k] for k in keep]
        rows = [rows[k] for k in keep]
    if not jobs:
        return
    if len(jobs) <= _FEW_UNMET:
        # (the same operations row by row: ``np.add.at`` adds each row to its sum in order, as ``+=`` does;
        # an arriving pod's session has one or two such jobs, where stacking them costs more)
        for job, r in zip(jobs, rows, strict=True):
            out[r] += np.maximum(job.min_request - job.allocated, 0.0)
        return
    width = len(jobs[0].allocated)
    held = stack_rows([j.allocated for j in jobs], width)
    unmet = np.maximum(stack_rows([j.min_request for j in jobs], width) - held, 0.0)
    np.add.at(out, np.asarray(rows, dtype=np.intp), unmet)


#: Up to this many jobs, :func:`unmet_minimum_rows` adds them one row at a time.
_FEW_UNMET = 4


#: Where a session's close leaves its jobs (``ClusterSnapshot.kept``): the snapshot builder takes them
#: with the next build, proof that the session ended with the jobs it was lent (see
#: ``volsched.cache.snapshots``'s ``_taken_back``).
RETURNED = "jobs returned"


@dataclass
class ClusterSnapshot:
    """Everything one session needs, as plain structs and arrays."""

    space: ResourceSpace
    nodes: NodeTable
    jobs: dict[str, Job]
    queues: dict[str, QueueSpec]
    namespace_weights: dict[str, int]
    #: Pods of other schedulers and pods on unknown nodes: not ours, but they use capacity.
    foreign_tasks: list[Task] = field(default_factory=list)
    now: float = 0.0
    #: Objects that could not become part of the snapshot, with the reason (rendered as events).
    problems: list[tuple[str, str, str]] = field(default_factory=list)
    #: The pods among ``problems`` (``Pod ns/name``) that are on a node: told (an event), not refused (a
    #: bound pod is not one the session could not place).
    problems_on_node: frozenset[str] = frozenset()
    #: What plugins carry from one session to the next (e.g. when rescheduling last ran). The cache
    #: hands every snapshot the same dict, so a write here is seen by the next session; only the
    #: session loop (one thread) touches it.
    carryover: dict[str, Any] = field(default_factory=dict)
    #: Namespace name -> its labels (pod affinity terms select namespaces by label).
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    #: The PodDisruptionBudgets (immutable), which the ``pdb`` plugin honours when naming victims.
    budgets: tuple[DisruptionBudget, ...] = ()
    #: The keys of the jobs that had a task pending or phase Pending when the snapshot was built (every
    #: other job is shared, read-only, with nothing to place or admit); None: not known, any job may.
    #: Actions that look only at pending jobs read it (``Session.pending_jobs``), not every job.
    private: frozenset[str] | None = None
    #: The keys of the jobs whose tasks or PodGroup changed since the previous snapshot of the same cache
    #: (a pod new, edited, gone or moved); None: not known (a snapshot built from scratch). The cycle
    #: reads it to tell a pod that arrives from jobs the last session could not place and nothing
    #: changed for since (``volsched.cycle``'s ``HeldBack``).
    touched: frozenset[str] | None = None
    #: Which build of its builder this snapshot is (1, 2, ...; 0: not a builder's): ``touched`` names
    #: what changed since build ``built - 1``, so what a session derived from the one before is brought
    #: to this one by it (``volsched.actions.eviction.CarriedShapes``).
    built: int = 0
    #: What sessions derived from the shared jobs (read-only, never changed by a session), kept for
    #: the next snapshot of the same cache: the builder hands every snapshot the same dict. Whatever is
    #: kept here must name the shared jobs it was derived from and be used only while the next
    #: snapshot has the very same objects (see :mod:`volsched.framework.settled`). Only the session
    #: loop (one thread) touches it.
    kept: dict[str, Any] = field(default_factory=dict)
    #: Dynamic Resource Allocation: the devices drivers publish (None: none) and the ResourceClaims by
    #: "ns/name" (read-only: shared with the cache).
    device_catalog: DeviceCatalog | None = None
    resource_claims: Mapping[str, Claim] = field(default_factory=dict)
    #: Of the uids the allocated claims reserved for pods alone are reserved for, those of pods in this
    #: snapshot (held on a node or in a job); None: not worked out (``session.pod_uids`` walks them all).
    reserved_live: frozenset[str] | None = None
    #: Claims, volumes and StorageClasses for volume binding (None: no class waits for its first
    #: consumer, so no pod has a claim to bind).
    volume_catalog: VolumeCatalog | None = None
    #: CSI volume attach limits (CSINodes) and what resolves a pod's claims to volumes (None: no CSINode
    #: reports a count, so no node has a limit).
    attach: AttachCatalog | None = None
    #: Queues and PodGroups the cache refused, with none of their valid versions held, and PodGroups a
    #: pod standing alone of their name keeps from being a job ("Queue q", "PodGroup ns/g" -> why): what
    #: names one is told it was rejected, not that it does not exist.
    refused: Mapping[str, str] = field(default_factory=dict)
    #: (namespace, queue) -> how long its pods are expected to run, learned from those seen to succeed
    #: (the cache's :class:`~volsched.model.history.RuntimeHistory`; read-only). None: none learned.
    learned_runtimes: Mapping[tuple[str, str], float] | None = None

    def follows(self, built: int) -> bool:
        """Whether this snapshot is the next build of the same builder after build ``built``, with what
        changed since known (``touched``): what a session derived from that one may be carried here."""
        return self.touched is not None and bool(self.built) and built == self.built - 1

    def absent(self, kind: str, key: str) -> str:
        """How a refusal names a Queue (``key``: its name) or a PodGroup (``ns/name``) the snapshot does
        not hold: rejected by volsched, and why, or it does not exist."""
        return absent_object(kind, key, self.refused)

    def namespace_weight(self, namespace: str) -> int:
        return self.namespace_weights.get(namespace, 1)

    def thaw(self) -> None:
        """Replace every shared job and task (``shared``: other snapshots hold them too) with the
        snapshot's own copy, in the jobs, on the nodes and among the foreign tasks, so that a session
        may change any of them (evict it). Call it before anyone holds a job or task of this snapshot.
        A copy of a shared job names it (``Job.origin``) until the session changes the copy."""
        jobs = self.jobs
        for key, job in jobs.items():
            if job.shared or any(t.shared for t in job.tasks.values()):
                mine = jobs[key] = own_job(job, every_task=True)
                if job.shared:
                    mine.origin = job  # until the session changes it (``Session``)
        self.foreign_tasks = [own_task(t) if t.shared else t for t in self.foreign_tasks]
        own = {t.key: t for t in self.foreign_tasks}
        for job in jobs.values():
            own.update(job.tasks)
        nodes = self.nodes
        for i, held in enumerate(nodes.tasks):
            swap = [(key, own[key]) for key, t in held.items() if t.shared]
            if swap:
                nodes.held(i).update(swap)

    @property
    def total(self) -> Vector:
        return self.nodes.total()


def resource_names(queues: Iterable[QueueSpec], podgroups: Iterable[PodGroupSpec]) -> set[str]:
    """The resource names queues and PodGroups mention (nodes' and tasks' come on top)."""
    names: set[str] = set()
    for q in queues:
        names.update(q.guarantee)
        names.update(q.guarantee_percent)
        names.update(q.capability or {})
    names.update(itertools.chain.from_iterable(filter(None, map(_MIN_RESOURCES, podgroups))))  # (in C)
    return names


_MIN_RESOURCES: attrgetter[dict[str, float] | None] = attrgetter("min_resources")


def request_vector(space: ResourceSpace, task: Task) -> Vector:
    """A task's request over ``space``, read-only: snapshots may share it, nobody may change it."""
    vec = space.vector(task.request_map)
    vec.setflags(write=False)
    return vec


def assemble_job(
    space: ResourceSpace,
    pg: PodGroupSpec | None,
    members: Iterable[Task],
    *,
    priority_classes: Mapping[str, int],
    problems: list[tuple[str, tuple[str, str, str]]],
) -> Job | None:
    """One job of a snapshot: PodGroup ``pg`` (None: a pod standing alone) with ``members``, the tasks
    ours to schedule that name it, in the cache's order, their ``request`` set over ``space``. A member
    that names a group that does not exist is a problem (task key, problem) and joins no job. None when
    no job comes of it. The job's ``min_request`` may be a member's (read-only) request vector."""
    if pg is None:
        return _standalone_job(space, members, problems)
    job = _podgroup_job(space, pg, priority_classes)
    for t in members:
        _join(job, t)
    job.min_request = _min_request(space, job)
    if job.phase is PodGroupPhase.PENDING and job.ready_count:
        job.phase = PodGroupPhase.INQUEUE  # partly bound: admitted before (see the module docstring)
    return job


def _join(job: Job, t: Task) -> None:
    job.tasks[t.key] = t
    job.count_status(None, t.status)
    if t.status in ALLOCATED_STATUSES:
        job.allocated += t.request


def _standalone_job(
    space: ResourceSpace, members: Iterable[Task], problems: list[tuple[str, tuple[str, str, str]]]
) -> Job | None:
    """The job of a pod standing alone (its job key is its own key). Any other member names a PodGroup
    of that name that does not exist: a problem, whichever comes first in the cache's order (it joins
    no job)."""
    job: Job | None = None
    for t in members:
        key = t.key
        if t.job_key != key:
            missing = absent_object("PodGroup", t.job_key, {})  # the cache says why, if it refused it
            problems.append((key, (f"Pod {key}", "PodGroupNotFound", missing)))
            continue
        job = lone_job(space, t, key)
    return job


def absent_object(kind: str, key: str, refused: Mapping[str, str]) -> str:
    """``queue q does not exist`` or ``queue q was rejected by volsched: why`` (``kind``: Queue or
    PodGroup; ``refused``: see ``ClusterSnapshot.refused``): the one wording of both."""
    what = "queue" if kind == "Queue" else "pod group"
    name = key.rpartition("/")[2]
    why = refused.get(f"{kind} {key}")
    return f"{what} {name} was rejected by volsched: {why}" if why else f"{what} {name} does not exist"


def lone_job(space: ResourceSpace, t: Task, key: str, *, allocated: Vector | None = None) -> Job:
    """The job of pod ``t`` standing alone (``key`` is its key and its job key), built in one go: a
    snapshot of a backlog makes one per pending pod.

    Made with ``object.__new__`` and one store per field (the dataclass's ``__init__`` with its
    keywords and default factories costs twice as much); its counters are moved by ``count_status``,
    their one definition, and what it holds is added as :func:`_join` adds it. ``allocated``: zeros
    over ``space`` the job may take as its own (a row of an array made for many jobs at once)."""
    status = t.status
    job = _new(Job)
    job.key = key
    job.namespace = t.namespace
    job.name = t.name
    job.queue = queue_annotation(t.annotations) or DEFAULT_QUEUE
    job.min_member = 1
    job.priority = t.priority
    job.creation = t.creation
    # (a pod that finished, succeeded or failed, is a job done: admitted no more, it claims nothing toward
    # its minimum, or its queue's admissions would count what it asked until it is deleted)
    job.phase = (
        PodGroupPhase.PENDING
        if status is TaskStatus.PENDING
        else PodGroupPhase.COMPLETED
        if status is TaskStatus.SUCCEEDED or status is TaskStatus.FAILED
        else PodGroupPhase.INQUEUE
    )
    job.podgroup = None
    job.min_resources_map = None
    job.tasks = {key: t}
    job.allocated = space.zeros() if allocated is None else allocated
    job.status_count = TaskCounts()
    job.min_request = t.request  # its minimum is its one pod's request
    job.ready = 0
    job.shared = False
    job._scheduled = None
    job.memo = {}
    job.origin = None
    job.count_status(None, status)
    if status in ALLOCATED_STATUSES:
        job.allocated += t.request
    return job


def lone_jobs(space: ResourceSpace, tasks: Sequence[Task], keys: Sequence[str]) -> list[Job]:
    """:func:`lone_job` of each of ``tasks``, pending pods standing alone (``keys``: their keys), in one
    go: a first snapshot of a backlog makes 50,000 of them. The first is made by :func:`lone_job`; the
    others take its counters (a copy: every one is one pending task) and its fixed fields, with no call
    per job but the queue's (when the pod has annotations) and their ``allocated`` are the rows of one
    array of zeros (each job's own row)."""
    if not tasks:
        return []
    rows = list(np.zeros((len(tasks), len(space))))
    first = lone_job(space, tasks[0], keys[0], allocated=rows[0])
    out = [first]
    counts, ready, phase = first.status_count, first.ready, first.phase
    new, job_cls, pending, default = _new, Job, TaskStatus.PENDING, DEFAULT_QUEUE
    if tasks[0].status is not pending:
        raise ValueError(f"lone_jobs: {keys[0]} is not pending")
    for t, key, allocated in zip(tasks[1:], keys[1:], rows[1:], strict=True):
        if t.status is not pending:
            raise ValueError(f"lone_jobs: {key} is not pending")
        job = new(job_cls)
        job.key = key
        job.namespace = t.namespace
        job.name = t.name
        annotations = t.annotations
        job.queue = (queue_annotation(annotations) if annotations else None) or default
        job.min_member = 1
        job.priority = t.priority
        job.creation = t.creation
        job.phase = phase
        job.podgroup = None
        job.min_resources_map = None
        job.tasks = {key: t}
        job.allocated = allocated
        job.status_count = TaskCounts(counts)
        job.min_request = t.request
        job.ready = ready
        job.shared = False
        job._scheduled = None
        job.memo = {}
        job.origin = None
        out.append(job)
    return out


_new = object.__new__


def _podgroup_job(space: ResourceSpace, pg: PodGroupSpec, priority_classes: Mapping[str, int]) -> Job:
    return Job(
        key=pg.key,
        namespace=pg.namespace,
        name=pg.name,
        queue=pg.queue,
        min_member=pg.min_member,
        priority=pg.priority
        if pg.priority is not None
        else (priority_classes.get(pg.priority_class_name, 0) if pg.priority_class_name else 0),
        creation=pg.creation,
        phase=pg.phase,
        podgroup=pg,
        min_resources_map=pg.min_resources,
        allocated=space.zeros(),
    )


def held_on_node(t: Task, jobs: Mapping[str, Job], key: str | None = None) -> bool:
    """Whether ``t`` occupies capacity on its node in a snapshot with ``jobs``: a foreign task (a pod of
    another scheduler, or a pod of ours on a node whose group does not exist, which the snapshot takes
    as foreign: ``volsched.cache.snapshots``), or one of a job's tasks, in a status that holds a node.
    ``key``: ``t.key``, when the caller has it already."""
    if t.status not in NODE_HOLDING_STATUSES:
        return False
    if not t.schedulable_by_us:
        return True
    job = jobs.get(t.job_key)
    return job is not None and job.tasks.get(t.key if key is None else key) is t


def own_task(t: Task) -> Task:
    """A session's own copy of a shared task."""
    c = copy_task(t)
    c.shared = False
    return c


def own_job(job: Job, *, every_task: bool) -> Job:
    """A session's own copy of a shared job: its own counters and allocation, and its own copies of its
    pending tasks (of all of them with ``every_task``); the others stay shared."""
    out = copy_job(job)  # a shallow copy, then its own parts (dataclasses.replace is slower)
    out.tasks = {
        k: own_task(t) if t.shared and (every_task or t.status is TaskStatus.PENDING) else t
        for k, t in job.tasks.items()
    }
    out.allocated = job.allocated.copy()
    out.status_count = TaskCounts(job.status_count)
    out.origin = None
    out.shared = False
    out._scheduled = None
    out.memo = {}
    return out


def resolve_guarantees(
    queues: dict[str, QueueSpec], space: ResourceSpace, total: Vector
) -> dict[str, QueueSpec]:
    """Turn percentage guarantees into amounts of ``total`` (the ready nodes' allocatable, as this
    snapshot sees it), so that everything past the snapshot sees amounts only. A queue that gives a
    resource as a percentage follows the cluster: nodes joining or leaving change its guarantee."""
    out = dict(queues)
    for name, q in queues.items():
        if not q.guarantee_percent:
            continue
        resolved = dict(q.guarantee)
        for resource, pct in q.guarantee_percent.items():
            resolved[resource] = float(total[space.index(resource)]) * pct / 100.0
        out[name] = replace(q, guarantee=resolved)
    return out


def _task_copier() -> Callable[[Task], Task]:
    """A function that copies a task field by field (see :func:`_copier`)."""
    return copier(Task)


#: A shallow copy of a task (the session's own, whose status and node it may change).
copy_task = _task_copier()
#: A shallow copy of a job (field by field, as ``copy_task``).
copy_job = copier(Job)


def task_order_key(t: Task) -> tuple[int, float, str]:
    """Higher priority first, then older, then by name: the deterministic default order of tasks."""
    return (-t.priority, t.creation, t.key)


def _min_request(space: ResourceSpace, job: Job) -> Vector:
    if job.min_resources_map is not None:
        return space.vector(job.min_resources_map)
    tasks = sorted(job.tasks.values(), key=task_order_key)[: job.min_member]
    out = space.zeros()
    for t in tasks:
        out += t.request
    return out


def dominant_share(total: Vector, mask: npt.NDArray[np.bool_]) -> Callable[[Vector], float]:
    """The dominant share of an amount: the largest fraction of ``total`` it takes over the dimensions in
    ``mask`` (dimensions with no total do not count; 0 when none does). Built once for a fixed ``total``
    and ``mask``, so the dimensions that count are picked once, not on every call (drf's job order
    compares two jobs' shares many times a session: a heap of 50,000 standalone pods makes millions of
    calls); plain Python over a few dimensions beats numpy's per-call overhead there."""
    dims = [
        (i, t) for i, (t, m) in enumerate(zip(total.tolist(), mask.tolist(), strict=False)) if m and t > EPS
    ]

    def share(amount: Vector) -> float:
        a = amount.tolist()
        best = 0.0
        for i, t in dims:
            if a[i] / t > best:
                best = a[i] / t
        return best

    return share
