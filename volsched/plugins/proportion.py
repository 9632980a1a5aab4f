"""proportion: each queue's deserved share of the cluster, and the checks that keep queues to it.

It registers queue order, admission, allocatable, overused and reclaim answers on the extension points;
the water-fill itself is :mod:`volsched.model.fairshare` (pure). Users: docs/concepts.md#what-it-does
(the proportion part); the rules in full: docs/design/modules.md#proportion.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import field
from itertools import pairwise
from operator import attrgetter
from typing import Any, ClassVar, NamedTuple

import numpy as np

from volsched.framework.decisions import Event
from volsched.framework.never import job_never, never_admitted, never_lead
from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.points import EventHandler, ExtensionPoints, Vote
from volsched.framework.registry import register_plugin
from volsched.model.cluster import (
    Job,
    NodeTable,
    RunRows,
    run_rows,
    running_sums,
    unmet_minimum_floats,
)
from volsched.model.fairshare import FairShare, Problem, fair_share
from volsched.model.resources import EPS, ResourceSpace, Vector, stack_rows
from volsched.model.vocabulary import PodGroupPhase, QueueSpec, Task, TaskStatus
from volsched.plugins.shared.decayed_usage import Decay
from volsched.plugins.shared.queue_config import QueueConfig, queue_config
from volsched.records import dataclass

#: A job's queue (read by C over a list of jobs).
_QUEUE = attrgetter("queue")


@dataclass(eq=False)
class QueueAttr:
    """One queue's vectors in a session: weight, guarantee, capability, allocated, deserved."""

    name: str
    weight: int
    guarantee: Vector  # effective (cut when it cannot be met)
    capability: Vector  # +inf where unset
    real_capability: Vector
    allocated: Vector  # the whole subtree's
    request: Vector  # the whole subtree's
    #: What its admitted jobs may still claim toward their minimum (``inqueue``), as plain floats:
    #: enqueue reads and adds to it for every job it admits (the same IEEE sums as the arrays').
    admitted: list[float]
    deserved: Vector
    #: What a leaf may hold when it takes more: deserved plus its part of the remainder.
    limit: Vector
    parent: QueueAttr | None = None
    children: list[str] = field(default_factory=list)
    #: Dimensions that count toward shares (all but ``pods``).
    mask: np.ndarray[Any, np.dtype[np.bool_]] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    _share: float | None = None
    #: Its ancestors, the root first. Not the queue itself: a queue that held itself would be a reference
    #: cycle, left after every session for the cyclic collector to find.
    ancestors: tuple[QueueAttr, ...] = ()

    @property
    def leaf(self) -> bool:
        return not self.children

    @property
    def path(self) -> tuple[QueueAttr, ...]:
        """Root first, this queue last."""
        return (*self.ancestors, self)

    @property
    def share(self) -> float:
        """``queue_share(allocated, deserved)``, recomputed only after ``allocated`` changed."""
        if self._share is None:
            self._share = queue_share(self.allocated, self.deserved, self.mask)
        return self._share

    def add(self, amount: Vector) -> None:
        """This queue and every ancestor take (or, negative, give back) ``amount``."""
        for attr in self.path:
            attr.allocated = attr.allocated + amount
            attr._share = None


def queue_share(allocated: Vector, deserved: Vector, mask: np.ndarray) -> float:
    """Largest ``allocated / deserved`` over the share dimensions (1 where nothing is deserved but
    something is held). Over plain floats (the same divisions): a numpy scalar per dimension cost
    several times as much, once per queue at each session's close and at each order asked anew. A
    ratio comes back as numpy's float, as it did: ``round`` of one rounds as numpy does (a status
    shows it), not as Python's ``round`` of a float."""
    share, ratio = 0.0, False
    for held, due, shared in zip(allocated.tolist(), deserved.tolist(), mask.tolist(), strict=True):
        if not shared:
            continue
        if due > EPS:
            if held / due > share:
                share, ratio = held / due, True
        elif held > EPS and share < 1.0:
            share, ratio = 1.0, False
    return np.float64(share) if ratio else share


def _pending_requests(
    session: ExtensionPoints, row: dict[str, int], n: int
) -> tuple[Vector, Vector, Vector, Vector]:
    """Per queue: allocated, request (allocated + pending + pipelined, and the minResources of each
    PodGroup waiting for admission before its pods are made), inqueue, and the request of the smallest
    pending pod (by dominant share of the cluster), the unit the remainder is handed out in."""
    space = session.space
    r = len(space)
    request = np.zeros((n, r))
    inqueue = np.zeros((n, r))
    # What the jobs in a queue hold, and what its admitted jobs may still claim toward their minimum
    # (the ledger's sums, in the jobs' order); a job whose queue is unknown counts toward none.
    ledger = session.ledger
    allocated = np.zeros((n, r))
    for q, v in ledger.held_by_queue().items():
        i = row.get(q)
        if i is not None:
            allocated[i] = v
    never = never_admitted(session)  # (no share is held for what those that can never run claim)
    for q, v in (ledger.unmet_by_queue() if never is None else never[1]).items():
        i = row.get(q)
        if i is not None:
            inqueue[i] = v
    # The pending and pipelined tasks, and the PodGroups waiting for admission, in the jobs' order.
    rows: list[int] = []
    tasks: list[Task] = []
    waiting: list[Job] = []  # PodGroups in phase Pending with no pod yet: they ask their minResources
    pending, pipelined = TaskStatus.PENDING, TaskStatus.PIPELINED
    pending_phase = PodGroupPhase.PENDING
    jobs = ledger.asking_jobs()
    # (the pods set aside that lead them can never run: passed over as the walk below passes each)
    for job in itertools.islice(jobs, never_lead(session, jobs), None):
        i = row.get(job.queue)
        if i is None:
            continue
        c = job.status_count  # get, not c[...]: a missing key is a Python-level call (TaskCounts.__missing__)
        pends = bool(c.get(pending) or c.get(pipelined))
        group = job.podgroup
        # A gang or a pod standing alone that can never run as it stands (told why) could never use what
        # it would be given: it asks for nothing, or the other queues' jobs would wait on it for ever.
        if (pends or (not job.tasks and group is not None)) and job_never(session, job) is not None:
            continue
        if job.phase is pending_phase and not job.tasks and group is not None:
            waiting.append(job)
        if not pends:
            continue
        for t in job.tasks.values():
            status = t.status
            if status is pending or status is pipelined:
                rows.append(i)
                tasks.append(t)
    request += allocated
    for job in waiting:  # (Volcano's job flow: the pods come once the group is admitted)
        request[row[job.queue]] += job.min_request
    unit = np.zeros((n, r))
    units: dict[int, list[float]] = {}  # (no task pending: no unit, nothing asked)
    if tasks:
        add = _add_few_pending if len(tasks) <= _FEW else _add_pending
        units = add(request, unit, rows, tasks, total=session.total, mask=space.share_mask)
    # A queue whose smallest pending pod fits on no node right now cannot use more this session: what it
    # is owed beyond what it holds goes into the remainder for queues whose pods do fit (fragments).
    nodes = session.nodes
    asking = [i for i, u in units.items() if any(x > EPS for x in u)]
    if asking and len(nodes):
        for i in asking:
            # (the floor in plain floats, the same subtraction; -inf where the unit asks nothing)
            if not some_node_fits(nodes, [x - EPS if x > EPS else -math.inf for x in units[i]]):
                unit[i] = 0.0
    return allocated, request, inqueue, unit


#: Where :func:`some_node_fits` keeps the last node it found room on (``NodeTable.memo``).
_FIT_WITNESS = "proportion: a node that fit"


def some_node_fits(nodes: NodeTable, floor: list[float]) -> bool:
    """Whether a ready node's idle room is at least ``floor`` in every dimension: ``(idle >= floor)``
    over the ready nodes, all along a row, any row. The node that answered yes last time (kept in the
    table's memo, which its copies share) is asked first, in plain floats (the same comparisons): any
    ready node with the room is an answer, so the one an arriving pod's session found last time (most
    nodes have room) spares the walk over every node."""
    k = nodes.memo.get(_FIT_WITNESS)
    if (
        k is not None
        and k < len(nodes)
        and nodes.ready[k]
        and all(a >= f for a, f in zip(nodes.idle[k].tolist(), floor, strict=True))
    ):
        return True
    ready = np.flatnonzero(nodes.ready)
    room = np.flatnonzero((nodes.idle[ready] >= np.array(floor)).all(axis=1))
    if not len(room):
        return False
    nodes.memo[_FIT_WITNESS] = int(ready[room[0]])
    return True


#: Up to this many pending tasks, :func:`_add_few_pending` (plain Python per task) costs less than
#: :func:`_add_pending`'s fixed run of numpy calls; both give the same arrays.
_FEW = 8


def _add_pending(
    request: Vector,
    unit: Vector,
    rows: Sequence[int],
    tasks: Sequence[Task],
    *,
    total: Vector,
    mask: np.ndarray[Any, np.dtype[np.bool_]],
) -> dict[int, list[float]]:
    """Adds each task's request to its queue's row of ``request`` (``rows[k]`` is task ``k``'s), and sets
    each queue's ``unit`` to the share dimensions of the smallest task (by dominant share of ``total``,
    then the tasks' order) that is pending and ours to place; returns the rows of ``unit`` it set, as
    plain floats, by row. Vectorised over the tasks."""
    r = request.shape[1]
    idx = np.asarray(rows, dtype=np.intp)
    matrix = stack_rows([t.request for t in tasks], r)
    np.add.at(request, idx, matrix)
    scale = np.where(mask & (total > EPS), total, np.inf)
    dominant = (matrix / scale).max(axis=1)
    cand = np.flatnonzero(dominant > 0)
    if len(cand):
        # Per queue, in order of dominant share (then of the tasks' order), the first task that is
        # pending and ours to place: asked of the few tasks that come first, not of every task.
        order = cand[np.lexsort((dominant[cand], idx[cand]))]
        queue_of = idx[order]
        bounds = np.flatnonzero(np.r_[True, queue_of[1:] != queue_of[:-1], True]).tolist()
        ordered = order.tolist()
        pick: list[int] = []
        pending = TaskStatus.PENDING
        for a, b in pairwise(bounds):
            for k in ordered[a:b]:
                t = tasks[k]
                if t.status is pending and t.schedulable_by_us:
                    pick.append(k)
                    break
        if pick:
            unit[idx[pick]] = np.where(mask, matrix[pick], 0.0)
            return {i: unit[i].tolist() for i in idx[pick].tolist()}
    return {}


def _add_few_pending(
    request: Vector,
    unit: Vector,
    rows: Sequence[int],
    tasks: Sequence[Task],
    *,
    total: Vector,
    mask: np.ndarray[Any, np.dtype[np.bool_]],
) -> dict[int, list[float]]:
    """:func:`_add_pending` for a handful of tasks, in plain Python: the same sums in the same order, and
    per queue the first task with the least dominant share among those pending and ours (the same rows
    of ``unit``, set from plain floats: the request's own values, 0.0 outside the share dimensions)."""
    share: list[bool] = mask.tolist()
    scale = [t if m and t > EPS else math.inf for t, m in zip(total.tolist(), share, strict=True)]
    pending = TaskStatus.PENDING
    best: dict[int, tuple[float, Vector]] = {}
    for i, t in zip(rows, tasks, strict=True):
        req = t.request
        request[i] += req
        if t.status is pending and t.schedulable_by_us:
            dominant = max((q / s for q, s in zip(req.tolist(), scale, strict=True)), default=-math.inf)
            if dominant > 0 and (i not in best or dominant < best[i][0]):
                best[i] = (dominant, req)
    out: dict[int, list[float]] = {}
    for i, (_, req) in best.items():
        row = out[i] = [q if m else 0.0 for q, m in zip(req.tolist(), share, strict=True)]
        unit[i] = row
    return out


def queue_tree(session: ExtensionPoints) -> tuple[dict[str, QueueAttr], FairShare]:
    space: ResourceSpace = session.space
    config = queue_config(session)
    names, row, tree = config.names, config.row, config.tree
    capability = config.capability
    allocated, request, inqueue, unit = _pending_requests(session, row, len(names))
    mask = space.share_mask
    fs = fair_share(
        tree,
        total=config.total,
        weight=config.weight,
        guarantee=config.guarantee,
        capability=capability,
        request=request,
        allocated=allocated,
        unit=unit,
        dims=space.names,
        describe=space.describe,
        effective=(config.effective_guarantee, config.real_capability, config.problems),
    )
    attrs: dict[str, QueueAttr] = {}
    queues = _skeleton(session, config, mask)
    for q in queues:
        i = q.row
        attrs[q.name] = QueueAttr(
            name=q.name,
            weight=q.weight,
            guarantee=fs.guarantee[i],
            capability=capability[i],
            real_capability=q.real_capability,
            allocated=fs.allocated[i],
            request=fs.request[i],
            admitted=inqueue[i].tolist(),
            deserved=fs.deserved[i],
            limit=fs.limit[i],
            children=q.children,
            mask=mask,
        )
    for q in queues:
        attr = attrs[q.name]
        attr.parent = attrs[q.parent] if q.parent is not None else None
        attr.ancestors = tuple(map(attrs.__getitem__, q.ancestors))
    return attrs, fs


class _Queue(NamedTuple):
    """What a queue's :class:`QueueAttr` takes from the queues' configuration alone (:func:`_skeleton`)."""

    name: str
    #: Its row in the configuration's matrices.
    row: int
    weight: int
    #: The realCapability the fair share holds it to, +inf outside the share dimensions (read-only): the
    #: configuration's (``fair_share`` hands back a copy of what it is given, unchanged).
    real_capability: Vector
    #: Its children's names (read-only: not a list a session may change).
    children: list[str]
    parent: str | None
    #: Its ancestors' names, the root first.
    ancestors: tuple[str, ...]


#: Where :func:`_skeleton` keeps its queues (``ClusterSnapshot.kept``), with what they were made of.
_SKELETON = "proportion: queues"


def _skeleton(
    session: ExtensionPoints, config: QueueConfig, mask: np.ndarray[Any, np.dtype[np.bool_]]
) -> list[_Queue]:
    """Each queue's :class:`_Queue`, in the configuration's row order. It follows from the configuration
    alone, which is kept from session to session while the queues, the space and the total are the same
    (``queue_config``): so is this, with the very configuration and share mask it was made of."""
    kept = session.snapshot.kept.get(_SKELETON)
    if isinstance(kept, tuple) and kept[0] is config and kept[1] is mask:
        out: list[_Queue] = kept[2]
        return out
    names, tree = config.names, config.tree
    out = []
    for name, i in config.row.items():
        real = np.where(mask, config.real_capability[i], np.inf)
        real.setflags(write=False)
        p = int(tree.parent[i])
        out.append(
            _Queue(
                name=name,
                row=i,
                weight=config.specs[i].weight,
                real_capability=real,
                children=[names[c] for c in tree.children[i]],
                parent=names[p] if p >= 0 else None,
                ancestors=tuple(names[a] for a in reversed(tree.ancestors(i)[1:])),
            )
        )
    session.snapshot.kept[_SKELETON] = (config, mask, out)
    return out


def queue_attrs(session: ExtensionPoints) -> dict[str, QueueAttr]:
    return queue_tree(session)[0]


#: Statuses of a pod placed in this session (its queue's allocated counts it already).
_PLACED = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED})
#: Pods a queue holds that reclaim could take.
EVICTABLE_HELD = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})


def _exceeds(held: list[float], request: list[float], bound: list[float], dims: list[int]) -> bool:
    """Whether ``held + request`` passes ``bound`` in one of ``dims`` (plain floats)."""
    return any(held[d] + request[d] > bound[d] for d in dims)


def _lowest_common(a: QueueAttr, b: QueueAttr) -> int:
    """How many queues the two paths share from the root (0: they meet only at the root)."""
    k = 0
    for x, y in zip(a.path, b.path, strict=False):
        if x is not y:
            break
        k += 1
    return k


#: The carryover key of the queues' decayed usage (``fairShare.halfLife``).
USAGE_CARRY = "proportion.usage"


@register_plugin
class Proportion(BasePlugin):
    name: ClassVar[str] = "proportion"
    #: With ``fairShare.halfLife`` its order reads the carryover too, but a session skipped on an unchanged
    #: cache loses nothing: the next one integrates the whole interval (``plugins.shared.decayed_usage``).
    reads_clock: ClassVar[bool] = False
    answers_by_shape: ClassVar[bool] = True
    job_answers_kept: ClassVar[bool] = True

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.decay = Decay.from_arguments(arguments)

    def on_session_open(self, session: ExtensionPoints) -> None:
        attrs, fs = queue_tree(session)
        self.attrs = attrs
        self.problems: list[Problem] = fs.problems
        session.state["proportion.attrs"] = attrs
        # The session's parts, each making what it needs of the queues when a callback first asks:
        # the order, the bounds as plain floats (per queue), the admission sums, the reclaim answers
        # (which a session without reclaim never asks).
        order = self.order = _Order(session, attrs, self.decay)
        bounds = _Bounds(session, attrs)
        admission = _Admission(session, attrs, bounds)
        placing = _Placing(session, attrs, bounds, admission)
        reclaim = _Reclaim(session, attrs, order)
        session.add_preemptive_fn(self.name, placing.preemptive)
        session.add_reclaimable_fn(self.name, reclaim.reclaimable)
        session.add_queue_order_fn(self.name, order.queue_order)
        session.add_allocatable_fn(self.name, placing.allocatable)
        session.add_overused_fn(self.name, placing.overused)
        session.add_job_valid_fn(self.name, admission.job_valid)
        session.add_jobs_valid_fn(self.name, admission.jobs_valid)
        session.add_job_enqueueable_fn(self.name, admission.enqueueable)
        session.add_job_enqueued_fn(self.name, admission.enqueued)
        session.add_jobs_enqueueable_fn(self.name, admission.enqueueable_run)
        session.add_jobs_enqueued_fn(self.name, admission.enqueued_run)
        jobs = session.jobs

        def on_allocate(task: Task) -> None:
            job = jobs.get(task.job_key)
            attr = attrs.get(job.queue) if job is not None else None
            if attr is not None:
                attr.add(task.request)

        def on_deallocate(task: Task) -> None:
            job = jobs.get(task.job_key)
            attr = attrs.get(job.queue) if job is not None else None
            if attr is not None:
                attr.add(-task.request)

        session.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))

    def on_session_close(self, session: ExtensionPoints) -> None:
        space = session.space
        mask = space.share_mask
        statuses = session.result.queues
        if self.decay.on:
            held = {name: a for name, a in self.attrs.items() if a.leaf}
            session.carryover[USAGE_CARRY] = Decay.carry(
                now=session.now,
                averages={n: self.order.averages().get(n, space.zeros()) for n in held},
                held={n: a.allocated for n, a in held.items()},
                space=space,
            )
        for name, attr in self.attrs.items():
            status = statuses.get(name)
            if status is None:
                continue
            status.parent = attr.parent.name if attr.parent is not None else None
            status.deserved = space.to_dict(np.where(mask, attr.deserved, 0.0))
            status.real_capability = space.to_dict(
                np.where(np.isfinite(attr.real_capability) & mask, attr.real_capability, 0.0)
            )
            status.inqueue = space.to_dict(np.asarray(attr.admitted))
            if not attr.leaf:
                # A parent shows its whole subtree: what its leaves hold and ask for.
                leaves = [a for a in self.attrs.values() if a.leaf and attr in a.path]
                allocated, request = space.zeros(), space.zeros()
                for leaf in leaves:
                    child = statuses.get(leaf.name)
                    if child is not None:
                        allocated += space.vector(child.allocated)
                        request += space.vector(child.request)
                status.allocated = space.to_dict(allocated)
                status.request = space.to_dict(request)
            status.share = round(queue_share(attr.allocated, attr.deserved, mask), 6)
        for problem in self.problems:
            status = statuses.get(problem.queue)
            if status is not None:
                status.problems.append((problem.reason, problem.message))
            session.emit(
                Event(
                    kind="Queue",
                    namespace="",
                    name=problem.queue,
                    reason=problem.reason,
                    message=problem.message,
                )
            )


def _not_leaf(attr: QueueAttr) -> str:
    return f"queue {attr.name} has child queues ({', '.join(attr.children)}); jobs go only to leaf queues"


class _Order:
    """The queue order: queues compared where their paths part, siblings by priority, then by share
    (with ``fairShare.halfLife``, what they hold mixed with what they held over time: the decayed
    averages, made when the order first weighs a share)."""

    def __init__(self, session: ExtensionPoints, attrs: dict[str, QueueAttr], decay: Decay) -> None:
        self._session = session
        self._attrs = attrs
        self._decay = decay
        self._mask = session.space.share_mask
        self._specs = session.queues
        self._averages: dict[str, Vector] | None = None

    def averages(self) -> dict[str, Vector]:
        """Each queue's decayed average holding (leaves as carried, parents as their leaves' sum)."""
        out = self._averages
        if out is None:
            out = self._averages = {}
            decay, session = self._decay, self._session
            if decay.on:
                carried = decay.averages(
                    session.carryover.get(USAGE_CARRY), now=session.now, space=session.space
                )
                for attr in self._attrs.values():
                    if attr.leaf:
                        avg = carried.get(attr.name)
                        if avg is not None:
                            for up in attr.path:
                                held = out.get(up.name)
                                out[up.name] = avg.copy() if held is None else held + avg
        return out

    def queue_order(self, left: QueueSpec, right: QueueSpec) -> int:
        attrs = self._attrs
        la, ra = attrs[left.name], attrs[right.name]
        if la.parent is not ra.parent:  # compare where their paths part
            k = _lowest_common(la, ra)
            if k >= len(la.path) or k >= len(ra.path):
                return 0
            la, ra = la.path[k], ra.path[k]
        return self.siblings(la, ra)

    def share(self, attr: QueueAttr, held: Vector | None = None) -> float:
        """``attr``'s share as the queue order weighs it, holding ``held`` (None: what it holds)."""
        if self._decay.on:  # what it holds mixed with what it held over time
            now = attr.allocated if held is None else held
            mixed = self._decay.mixed(now, self.averages().get(attr.name))
            return queue_share(mixed, attr.deserved, self._mask)
        return attr.share if held is None else queue_share(held, attr.deserved, self._mask)

    def siblings(self, la: QueueAttr, ra: QueueAttr, *, right_holds: Vector | None = None) -> int:
        """The queue order of two siblings (``right_holds``: what ``ra`` holds, if not its own)."""
        specs = self._specs
        lp, rp = specs[la.name].priority, specs[ra.name].priority
        if lp != rp:  # a higher priority first, whatever the shares (as Volcano's queue order)
            return -1 if lp > rp else 1
        ls, rs = self.share(la), self.share(ra, right_holds)
        if abs(ls - rs) <= 1e-9:
            return 0
        return -1 if ls < rs else 1


class _Bounds:
    """Per queue, as plain floats over the dimensions, made when the queue is first asked about: the
    bound allocate holds a task's path to (a leaf's limit and realCapability, a parent's realCapability,
    +EPS; +inf outside the share dimensions), its limit and its realCapability. Allocate asks
    allocatable for every task and overused for every job turn: a few float comparisons over the share
    dimensions cost less than the numpy calls over the arrays (the same IEEE arithmetic: the same
    answers)."""

    def __init__(self, session: ExtensionPoints, attrs: dict[str, QueueAttr]) -> None:
        self._attrs = attrs
        self._mask = session.space.share_mask
        self._bound: dict[str, list[float]] = {}
        self._limit: dict[str, list[float]] = {}
        self._real: dict[str, list[float]] = {}

    def bound(self, name: str) -> list[float]:
        out = self._bound.get(name)
        if out is None:
            a = self._attrs[name]
            out = self._bound[name] = np.where(
                self._mask,
                (np.minimum(a.limit, a.real_capability) if a.leaf else a.real_capability) + EPS,
                np.inf,
            ).tolist()
        return out

    def limit(self, name: str) -> list[float]:
        out = self._limit.get(name)
        if out is None:
            out = self._limit[name] = self._attrs[name].limit.tolist()
        return out

    def real(self, name: str) -> list[float]:
        out = self._real.get(name)
        if out is None:
            out = self._real[name] = self._attrs[name].real_capability.tolist()
        return out


class _Admission:
    """What enqueue asks: whether a job may be admitted to its queue (its share, counting what the jobs
    admitted before it still claim), job by job or over a run of jobs of one queue, and the admitted
    sums it adds to."""

    def __init__(self, session: ExtensionPoints, attrs: dict[str, QueueAttr], bounds: _Bounds) -> None:
        self._session = session
        self._attrs = attrs
        self._bounds = bounds
        self._space = session.space
        self._share_dims = session.space.share_dims
        self._rows: RunRows | None = None
        self._share_rows: np.ndarray[Any, np.dtype[np.bool_]] | None = None

    def job_valid(self, job: Job) -> str | None:
        attr = self._attrs.get(job.queue)
        if attr is not None and not attr.leaf:
            return _not_leaf(attr)
        return None

    def jobs_valid(self, jobs: Sequence[Job]) -> list[str | None]:
        """``job_valid`` of each job: its queue's answer, asked once a queue."""
        one_each = dict(zip(map(_QUEUE, jobs), jobs, strict=True))  # a job of each queue
        answers = {q: self.job_valid(job) for q, job in one_each.items()}
        if not any(answers.values()):
            return [None] * len(jobs)
        return [answers[job.queue] for job in jobs]

    def enqueueable(self, job: Job) -> tuple[Vote, str]:
        attr = self._attrs.get(job.queue)
        if attr is None:
            return Vote.REJECT, self._session.snapshot.absent("Queue", job.queue)
        if not attr.leaf:
            return Vote.REJECT, _not_leaf(attr)
        refused = self.refuse(job, attr, attr.allocated.tolist())
        return (Vote.REJECT, refused) if refused else (Vote.PERMIT, "")

    def refuse(self, job: Job, attr: QueueAttr, a: list[float]) -> str | None:
        """Why ``job`` may not be admitted to its queue (``attr``) holding ``a``, or None."""
        need = job.min_request
        n = need.tolist()
        asked = [d for d in self._share_dims if n[d] > EPS]
        if not asked:
            return None
        # need + allocated + admitted against each limit, over plain floats (the arrays' arithmetic
        # without their per-call cost: enqueue asks every pending job before the first bind).
        q = attr.admitted
        space, bounds = self._space, self._bounds
        # realCapability is the hard limit. The limit (deserved) bounds admission too: allocate never
        # takes a queue past it, so admitting more would only park jobs whose minimums hold the
        # cluster's overcommit room away from queues that are owed it.
        for label, limit, cap in (
            ("realCapability", attr.real_capability, bounds.real(attr.name)),
            ("deserved", attr.limit, bounds.limit(attr.name)),
        ):
            for d in asked:
                if n[d] + a[d] + q[d] > cap[d] + EPS:
                    return (
                        f"queue {job.queue}: minResources {space.names[d]} {space.describe(d, need[d])} + "
                        f"allocated {space.describe(d, a[d])} + admitted {space.describe(d, attr.admitted[d])} "
                        f"> {label} {space.describe(d, limit[d])}"
                    )
        return None

    def enqueued(self, job: Job) -> None:
        attr = self._attrs.get(job.queue)
        if attr is not None:
            attr.admitted = [q + u for q, u in zip(attr.admitted, unmet_minimum_floats(job), strict=True)]

    # The run answers (enqueue's runs of jobs of one queue): the per-job vote and sums above over a
    # run at once, the admitted sums as running sums row after row (the same floats in the same order).

    def _run_rows(self) -> RunRows:
        out = self._rows
        if out is None:
            out = self._rows = run_rows(self._session.state)
        return out

    def enqueueable_run(self, jobs: Sequence[Job]) -> int:
        attr = self._attrs.get(jobs[0].queue) if jobs else None
        if attr is None or not attr.leaf:
            return 0
        jobs = _one_queue(jobs)
        share_rows = self._share_rows
        if share_rows is None:
            share_rows = self._share_rows = np.zeros(len(self._space), dtype=bool)
            share_rows[list(self._share_dims)] = True
        need, unmet = self._run_rows().ask(jobs)
        before = running_sums(attr.admitted, unmet)[:-1]
        total = need + attr.allocated + before  # n + a + q, left to right
        bounds = self._bounds
        over = (total > np.asarray(bounds.real(attr.name)) + EPS) | (
            total > np.asarray(bounds.limit(attr.name)) + EPS
        )
        refused = np.flatnonzero(((need > EPS) & share_rows & over).any(axis=1))
        return int(refused[0]) if len(refused) else len(jobs)

    def enqueued_run(self, jobs: Sequence[Job]) -> None:
        attr = self._attrs.get(jobs[0].queue)
        if attr is None or len(_one_queue(jobs)) < len(jobs):
            for job in jobs:
                self.enqueued(job)
            return
        attr.admitted = running_sums(attr.admitted, self._run_rows().take(jobs)[1])[-1].tolist()


def _one_queue(jobs: Sequence[Job]) -> Sequence[Job]:
    """The jobs up to the first of another queue than the first job's."""
    queue = jobs[0].queue
    for k, job in enumerate(jobs):
        if job.queue != queue:
            return jobs[:k]
    return jobs


class _Placing:
    """What allocate and preempt ask of a queue: whether a task may take more of it (allocatable,
    preemptive) and whether it holds its share (overused). Admitted gangs short of minMember (admitted
    in an earlier session, or holding members from before this one: left half-bound by a crash, or short
    of one they lost) are completed up to minMember (no more than the one they started with: a raise
    while running is placed within the share) even past their queue's deserved share, never past
    realCapability: admission reserved their minimum (it counts as admitted, so it holds others back),
    and what they hold is idle until they are complete; otherwise a share that shrank after admission
    strands them, and with them the capacity reserved for them."""

    def __init__(
        self, session: ExtensionPoints, attrs: dict[str, QueueAttr], bounds: _Bounds, admission: _Admission
    ) -> None:
        self._session = session
        self._attrs = attrs
        self._bounds = bounds
        self._admission = admission
        self._space = session.space
        self._mask = session.space.share_mask
        self._share_dims = session.space.share_dims
        # (as the session opened: the jobs short of minMember then; enqueue's admissions change them)
        self._committed: dict[str, list[Job]] = {}
        for j in session.ledger.short_gangs():
            self._committed.setdefault(j.queue, []).append(j)
        # (none, as a rule: an arriving pod's session makes no comprehension for it)
        self._committed_jobs = (
            {j.key: j for jobs in self._committed.values() for j in jobs} if self._committed else {}
        )

    def _completes_gang(self, task: Task) -> bool:
        job = self._committed_jobs.get(task.job_key)
        return job is not None and job.pipelined_count < job.protected_min_member

    def _completes_in(self, queue: QueueSpec) -> bool:
        return any(j.pipelined_count < j.protected_min_member for j in self._committed.get(queue.name, ()))

    def _beyond(
        self, a: QueueAttr, task: Task, limit: Vector, *, whose: str, said: Callable[[int, QueueAttr], str]
    ) -> str | None:
        """Why ``task`` would take queue ``a`` past ``limit`` in a share dimension it asks for, said of
        ``whose`` (``said``: the limit in a dimension, in words, of ``a``); None if it would not."""
        future = a.allocated + task.request
        space = self._space
        for d in np.flatnonzero((task.request > EPS) & self._mask):
            if future[d] > limit[d] + EPS:
                return (
                    f"{whose} would exceed {said(int(d), a)} (allocated {space.describe(d, a.allocated[d])}"
                    f" + request {space.describe(d, task.request[d])})"
                )
        return None

    def _within_limit(self, attr: QueueAttr, task: Task) -> str | None:
        space = self._space

        def deserved(d: int, a: QueueAttr) -> str:
            extra = a.limit[d] - a.deserved[d]
            return f"deserved {space.names[d]} {space.describe(d, a.deserved[d])}" + (
                f" + remainder {space.describe(d, extra)}" if extra > EPS else ""
            )

        return self._beyond(attr, task, attr.limit, whose=f"queue {attr.name}", said=deserved)

    def allocatable(self, queue: QueueSpec, task: Task) -> str | None:
        # Hot path: one comparison per queue on the task's path against its bound (the leaf's limit
        # and realCapability, its ancestors' realCapability); the wording only when refused.
        attr = self._attrs[queue.name]
        if not attr.leaf:
            return _not_leaf(attr)
        r = task.request.tolist()
        asked = [d for d in self._share_dims if r[d] > EPS]  # bounds are +inf outside the share dimensions
        bound = self._bounds.bound
        if not any(_exceeds(a.allocated.tolist(), r, bound(a.name), asked) for a in attr.path):
            return None
        refused = self._within_limit(attr, task)
        if refused and not self._completes_gang(task):
            return refused
        space = self._space
        for a in attr.path:
            refused = self._beyond(
                a,
                task,
                a.real_capability,
                whose=f"queue {a.name}" if a is attr else f"parent queue {a.name}",
                said=lambda d, q: (
                    f"realCapability {space.names[d]} {space.describe(d, q.real_capability[d])}"
                ),
            )
            if refused:
                return refused
        return None

    def preemptive(self, queue: QueueSpec, task: Task) -> str | None:
        attr = self._attrs[queue.name]
        if not attr.leaf:
            return _not_leaf(attr)
        refused = self._within_limit(attr, task)
        if refused:
            return refused
        # A job not admitted yet takes nothing back while its queue would not admit it (its share,
        # counting what the jobs admitted before it still claim), as enqueue would not: a pod without
        # a PodGroup, admitted by reclaim for that session only, was refused at the next one while
        # the room it was given went back.
        job = self._session.jobs.get(task.job_key)
        if job is None or job.phase is not PodGroupPhase.PENDING:
            return None
        held = attr.allocated  # less what the job's own pods took in this session (not yet admitted)
        for t in job.tasks.values():
            if t.status in _PLACED:
                held = held - t.request
        refused = self._admission.refuse(job, attr, held.tolist())
        return f"not admitted to its queue: {refused}" if refused else None

    def overused(self, queue: QueueSpec) -> str | None:
        attr = self._attrs[queue.name]
        # Overused: at its limit in every share dimension where it has a limit or holds something.
        limit, held = self._bounds.limit(queue.name), attr.allocated.tolist()
        first = -1
        for d in self._share_dims:
            if limit[d] > EPS or held[d] > EPS:
                if not limit[d] <= held[d] + EPS:
                    return None
                if first < 0:
                    first = d
        if first >= 0:
            if self._completes_in(queue):
                return None  # an admitted gang short of minMember is still completed
            d = first
            space = self._space
            return (
                f"queue {queue.name} holds its deserved share "
                f"({space.names[d]} allocated {space.describe(d, attr.allocated[d])} >= deserved "
                f"{space.describe(d, attr.limit[d])})"
            )
        return None


class _Reclaim:
    """What reclaim asks: which of the candidates a task of another queue may take back (from the
    nearest subtree that holds more than its share, while the giving side keeps its deserved share and
    the taking side stays within its own). Nothing of it is made unless reclaim asks."""

    def __init__(self, session: ExtensionPoints, attrs: dict[str, QueueAttr], order: _Order) -> None:
        self._session = session
        self._attrs = attrs
        self._order = order
        self._smallest_held: dict[str, Vector] = {}

    def _smallest_pod_held(self, queue: str) -> Vector:
        """The request of the smallest pod a leaf holds (looked up once, when reclaim first asks)."""
        smallest_held = self._smallest_held
        if not smallest_held:
            session = self._session
            mask, space = session.space.share_mask, session.space
            by_queue = session.jobs_by_queue()
            for name in self._attrs:
                best: Vector | None = None
                best_size = np.inf
                for owner in by_queue.get(name, []):
                    for t in owner.tasks.values():
                        if t.status in EVICTABLE_HELD:
                            size = float(np.max(np.where(mask, t.request, 0.0)))
                            if 0 < size < best_size:
                                best, best_size = t.request, size
                smallest_held[name] = best if best is not None else np.full(len(space), np.inf)
        return smallest_held[queue]

    def _side_gives(
        self, mine: QueueAttr, theirs: QueueAttr, k: int, *, need: Vector, give: Vector, asked: np.ndarray
    ) -> bool:
        """Whether a pod of ``theirs`` (request ``give``) may go to a task of ``mine`` (request
        ``need``), their paths parting below the first ``k`` queues: the taking side stays within its
        share, the giving side is reclaimable and keeps its deserved share."""
        if any(np.any((a.allocated + need)[asked] > a.limit[asked] + EPS) for a in mine.path[k:]):
            return False
        side = theirs.path[k:]
        queues = self._session.queues
        if not all(queues[a.name].reclaimable for a in side):
            return False
        dims = asked & (give > EPS)
        return all(np.any((a.allocated - give)[dims] >= a.deserved[dims] - EPS) for a in side)

    def _nearest_giver(self, mine: QueueAttr, need: Vector, asked: np.ndarray) -> int:
        """How deep (queues shared from the root) the nearest subtree is in which some leaf holds a
        pod beyond its deserved share that may go to ``mine``: reclaim takes from there first, so
        siblings give before cousins, whatever node their pods are on."""
        best = -1
        for theirs in self._attrs.values():
            if theirs is mine or not theirs.leaf:
                continue
            if not np.any(theirs.allocated[asked] > theirs.deserved[asked] + EPS):
                continue
            k = _lowest_common(mine, theirs)
            if k <= best:
                continue
            pod = self._smallest_pod_held(theirs.name)
            if np.isfinite(pod).all() and self._side_gives(mine, theirs, k, need=need, give=pod, asked=asked):
                best = k
        return best

    def reclaimable(self, reclaimer: Task, candidates: list[Task]) -> list[Task]:
        session, attrs = self._session, self._attrs
        job = session.jobs.get(reclaimer.job_key)
        mine = attrs.get(job.queue) if job is not None else None
        if mine is None:
            return []
        asked = (reclaimer.request > EPS) & session.space.share_mask
        nearest = self._nearest_giver(mine, reclaimer.request, asked)
        left: dict[str, Vector] = {}
        chosen: list[Task] = []
        for t in candidates:
            owner = session.jobs.get(t.job_key)
            theirs = attrs.get(owner.queue) if owner is not None else None
            if theirs is None or theirs is mine:
                continue
            k = _lowest_common(mine, theirs)
            if k != nearest or not self._side_gives(
                mine, theirs, k, need=reclaimer.request, give=t.request, asked=asked
            ):
                continue
            side = theirs.path[k:]
            dims = asked & (t.request > EPS)
            after = {a.name: left.get(a.name, a.allocated) - t.request for a in side}
            if not all(np.any(after[a.name][dims] >= a.deserved[dims] - EPS) for a in side):
                continue
            # A taker that holds its deserved share already takes what the remainder lends it: only
            # from a queue still served after it once the pod is gone, else the next allocate hands
            # the room back to that queue (its pod made again) and the two trade it for ever. (Who the
            # next allocate serves first: the queue order where their paths part, the giver holding
            # what it would hold after.)
            top, giver = mine.path[k], theirs.path[k]
            if np.any(top.allocated[asked] >= top.deserved[asked] - EPS) and not (
                self._order.siblings(top, giver, right_holds=after[giver.name]) < 0
            ):
                continue
            left.update(after)
            chosen.append(t)
        return chosen
