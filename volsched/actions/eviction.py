"""Shared by reclaim and preempt: make room for one task by evicting victims, node by node.

The plugins choose who may be a victim (``session.reclaimable`` / ``session.preemptable``); this module
only decides where to look first and how many of the named victims to take. Nodes are tried in order
of how little must be freed on them (vectorised over nodes), victims in reverse order (the queue that
comes last in queue order first, then the task that comes last in task order: lowest priority,
youngest). Only as many victims are evicted as the task needs on that node, so a node where the named
victims cannot make room costs nothing. Evicting a subset of the named victims is always safe: every
plugin's answer limits how many or how much may be taken, never how few.

The action says which pods it may take at all (a mask over :class:`Evictable`, the running pods as
arrays, once a job); from it, what those pods hold per node is summed with numpy, and a task is tried
only on the nodes where evicting all of them would make room. The others cannot take it whatever the
plugins say, so they are never walked pod by pod.

Where no node passes the filters, or none can be freed, the nodes that pods keep the task off through
required anti-affinity come next (``session.blocked_by_pods``, over all nodes at once: only those
where every pod the term counts runs on the node itself): there the pods in the way go, as in
kube-scheduler's default preemption (see ``_evict_pods_in_the_way``); then the nodes where pods keep it
out by what they hold (``session.pods_holding``: volumes attached at a CSI attach limit), whose holders go
(``_evict_filter_holders``).

Victim filters (a PodDisruptionBudget) bound the victims first. Only where that leaves a task without
a place are they gone past, as kube-scheduler's preemption goes past PodDisruptionBudgets: the same
walk again with every victim the other plugins name, those the filters would let go first on each
node, and the node where the fewest go past a budget first (then the walk's order); each pod so taken
carries what it went past (``EvictionReason.past_budget``), and is deleted, not evicted
(docs/tenancy.md#a-tenants-poddisruptionbudget).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import replace
from functools import cmp_to_key
from typing import Any, Protocol

import numpy as np

from volsched.actions import kept
from volsched.actions.util import TaskQueue
from volsched.framework.decisions import KEEPS_OUT, Code, EvictionReason, Status
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.cluster import BoolArray, IndexArray, Job
from volsched.model.resources import EPS, PODS, Vector, format_amount
from volsched.model.selectors import AffinityTerm
from volsched.model.vocabulary import (
    GROUP_ANNOTATION,
    VOLCANO_GROUP_ANNOTATION,
    PodGroupPhase,
    QueueSpec,
    QueueState,
    Task,
    TaskStatus,
)
from volsched.records import dataclass

#: Statuses of a task that may be evicted (running on, or bound to, its node).
EVICTABLE = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})
NEVER = "Never"

#: The pods an action may take for a job at all (before the plugins are asked), as a mask over
#: ``Evictable.tasks``: a matter of whose pods they are, never of their status.
Candidates = Callable[["Evictable"], BoolArray]
#: Narrows a pool of candidates for a task (in their order).
Narrow = Callable[[Task, list[Task]], list[Task]]


class Choose(Protocol):
    """The plugins' victims for a task among candidates (``session.preemptable``/``reclaimable``);
    ``past_budgets``: the last resort, where the victim filters keep nobody and what they would let
    through comes first (see ``PointTables.past_budget``)."""

    def __call__(
        self, task: Task, candidates: list[Task], /, *, past_budgets: bool = False
    ) -> list[Task]: ...


#: (beneficiary task, victim, node name) -> why, as data.
Describe = Callable[[Task, Task, str], EvictionReason]


class Evictable:
    """The pods that may be evicted when an action starts (running or bound, ours), grouped by node, with
    their requests, jobs and queues as arrays. Built once an action; the set only shrinks while the
    action runs (reclaim and preempt evict and pipeline, they never bind), so a pod that has been
    evicted since is still listed: :meth:`pool` reads the live status."""

    def __init__(self, session: Session) -> None:
        self.session = session
        nodes = session.nodes
        tasks: list[Task] = []
        starts = [0]
        for held in nodes.tasks:
            tasks.extend(t for t in held.values() if t.status in EVICTABLE and t.schedulable_by_us)
            starts.append(len(tasks))
        self.tasks = tasks
        #: ``tasks[starts[n]:starts[n + 1]]`` are node n's.
        self.starts = starts
        self.node = np.repeat(np.arange(len(nodes), dtype=np.intp), np.diff(starts))
        width = len(session.space)
        self.request = np.array([t.request for t in tasks]).reshape(len(tasks), width)
        queues: dict[str, int] = {}
        jobs: dict[str, int] = {}
        queue_of, job_of = [], []
        for t in tasks:
            owner = session.jobs.get(t.job_key)
            job_of.append(jobs.setdefault(t.job_key, len(jobs)) if owner is not None else -1)
            queue_of.append(queues.setdefault(owner.queue, len(queues)) if owner is not None else -1)
        self._queues, self._jobs = queues, jobs
        self._queue_of = np.array(queue_of, dtype=np.intp)
        self._job_of = np.array(job_of, dtype=np.intp)
        #: Per pod: its job's priority (0 without a job) and its creation time.
        self.priority = np.array(
            [owner.priority if (owner := session.jobs.get(t.job_key)) is not None else 0 for t in tasks],
            dtype=np.float64,
        )
        self.creation = np.array([t.creation for t in tasks], dtype=np.float64)
        self._repel: dict[tuple[Any, ...], BoolArray] = {}
        self._shapes: _Shapes | None = None
        self._at: dict[str, int] | None = None

    def repelling(self, task: Task) -> BoolArray:
        """The pods that ``task``'s required anti-affinity selects or whose own selects ``task`` (asked
        once for the tasks that share a namespace, labels and constraints: a gang's, as a rule).

        Asked per pod shape, not per pod: a term of ``task``'s once for each distinct namespace and
        labels among the pods (only those carrying a label pair it requires, when it requires one), a
        pod's own terms once for each distinct set of them; the answers are spread over the pods with
        numpy."""
        sig = (task.namespace, tuple(sorted(task.labels.items())), task.constraints)
        hit = self._repel.get(sig)
        if hit is None:
            shapes = self._shapes = self._shapes or _Shapes(self.tasks)
            nsl = self.session.snapshot.namespace_labels
            mine = task.constraints.anti_affinity if task.constraints is not None else ()
            selects = np.zeros(len(shapes.keys), dtype=bool)
            for s in shapes.asked_by(mine):
                ns, labels = shapes.keys[s]
                selects[s] = any(t.matches(ns, labels, nsl) for t in mine)
            hit = selects[shapes.of_pod]
            for terms, pods in shapes.repelling.items():
                if any(t.matches(task.namespace, task.labels, nsl) for t in terms):
                    hit[pods] = True
            self._repel[sig] = hit
        return hit

    def of_job(self, key: str) -> BoolArray:
        """The pods of job ``key``."""
        return np.asarray(self._job_of == self._jobs.get(key, -2))

    def in_queues(self, which: Callable[[str], bool]) -> BoolArray:
        """The pods whose job is in a queue ``which`` accepts (asked once a queue; no pod without a job)."""
        accepted = np.array([which(q) for q in self._queues] + [False], dtype=bool)
        return np.asarray(accepted[self._queue_of])  # -1, no job: the last, False

    def reach(self, mask: BoolArray) -> tuple[Vector, BoolArray]:
        """Per node, what the pods in ``mask`` hold together, and whether it has any of them."""
        n = len(self.session.nodes)
        where = self.node[mask]
        held = self.request[mask]
        out = np.zeros((n, self.request.shape[1]))
        for d in range(out.shape[1]):
            out[:, d] = np.bincount(where, weights=held[:, d], minlength=n)
        return out, np.bincount(where, minlength=n) > 0

    def positions(self, keys: Iterable[str]) -> IndexArray:
        """The positions in ``tasks`` of the pods named by ``keys`` (those not among them left out), in
        order."""
        at = self._at
        if at is None:
            at = self._at = {t.key: p for p, t in enumerate(self.tasks)}
        return np.array(sorted(at[k] for k in keys if k in at), dtype=np.intp)

    def pool(self, node: int, mask: BoolArray) -> list[Task]:
        """The pods in ``mask`` on ``node`` that may still be evicted now."""
        lo, hi = self.starts[node], self.starts[node + 1]
        return [
            t
            for t, m in zip(self.tasks[lo:hi], mask[lo:hi].tolist(), strict=True)
            if m and t.status in EVICTABLE
        ]


class _Shapes:
    """The evictable pods grouped for anti-affinity: by namespace and labels (what another pod's term
    reads), indexed by label pair; and the pods with required anti-affinity of their own, by their terms."""

    def __init__(self, tasks: list[Task]) -> None:
        ids: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        of_pod: list[int] = []
        repelling: dict[tuple[AffinityTerm, ...], list[int]] = {}
        for p, t in enumerate(tasks):
            of_pod.append(ids.setdefault((t.namespace, tuple(t.labels.items())), len(ids)))
            if t.constraints is not None and t.constraints.anti_affinity:
                repelling.setdefault(t.constraints.anti_affinity, []).append(p)
        #: Per shape: (namespace, labels).
        self.keys = [(ns, dict(labels)) for ns, labels in ids]
        self.of_pod = np.array(of_pod, dtype=np.intp)
        self.repelling = {terms: np.array(pods, dtype=np.intp) for terms, pods in repelling.items()}
        self._by_pair: dict[tuple[str, str], list[int]] = {}
        for s, (_, labels) in enumerate(ids):
            for pair in labels:
                self._by_pair.setdefault(pair, []).append(s)

    def asked_by(self, terms: Iterable[AffinityTerm]) -> Iterable[int]:
        """The shapes that ``terms`` may select: those carrying a label pair a term requires (every shape
        when a term requires none; none for a term that selects nothing)."""
        out: set[int] = set()
        for term in terms:
            if term.selector is None:
                continue
            pairs = term.selector.index_pairs()
            if pairs is None:
                return range(len(self.keys))
            for pair in pairs:
                out.update(self._by_pair.get(pair, ()))
        return sorted(out)


@dataclass(frozen=True, slots=True)
class _Pools:
    """What one job's action may take, per node: the pods, and what they hold together."""

    index: Evictable
    mask: BoolArray
    reach: Vector
    any: BoolArray


@dataclass(frozen=True, slots=True)
class _Placing:
    """One task's placement by evicting (``place_by_evicting``): what each of its steps works with. The
    session, the statement the evictions and the placement go into, the task and its queue (None: no
    queue's limit applies), what the action may take, the plugins' choice of victims on a node, the
    victims' order, each eviction's reason and the log it is appended to."""

    session: Session
    statement: Statement
    task: Task
    queue: QueueSpec | None
    pools: _Pools
    choose: Narrow
    key: Callable[[Task], Any]
    describe: Describe
    log: list[tuple[Task, EvictionReason]]
    #: The extension point ``choose`` asks; whether this is the last resort past the victim filters
    #: (then each victim's reason says what it goes past).
    point: str = ""
    past_budgets: bool = False

    def pool(self, node: int) -> list[Task]:
        """The pods on ``node`` the action may take."""
        return self.pools.index.pool(node, self.pools.mask)

    def ordered(self, pool: list[Task], *, first: set[str]) -> list[Task]:
        """``pool`` in the victims' order, the pods whose keys are in ``first`` before the others (so
        that a plugin's budget, a gang's spare pods, goes to them)."""
        return sorted(sorted(pool, key=self.key), key=lambda v: v.key not in first)

    def could_hold(self, need: BoolArray) -> BoolArray:
        """Per node, whether its room with every pod the action may take gone (over the dimensions in
        ``need``) holds the task, where the action may take a pod at all."""
        nodes, pools = self.session.nodes, self.pools
        reach = (nodes.idle + nodes.incoming + pools.reach)[:, need]
        could: BoolArray = pools.any & _holds(reach, self.task.request[need])
        return could

    def evict(self, victim: Task, node_name: str, *, facts: tuple[tuple[str, str], ...] = ()) -> None:
        """Evict ``victim`` for the task on ``node_name`` with its reason (``facts`` added to what the
        reason says), into the statement and the log."""
        reason = self.describe(self.task, victim, node_name)
        if facts:
            reason = replace(reason, facts=(*reason.facts, *facts))
        if self.past_budgets:
            past = self.session.past_budget(victim, point=self.point)
            if past:
                reason = replace(reason, past_budget=past)
        self.statement.evict(victim, reason=reason)
        self.log.append((victim, reason))


def _victim_order(session: Session) -> Callable[[Task], Any]:
    task_key = session.task_key()

    def compare(a: Task, b: Task) -> int:
        ja, jb = session.jobs.get(a.job_key), session.jobs.get(b.job_key)
        qa = session.queues.get(ja.queue) if ja is not None else None
        qb = session.queues.get(jb.queue) if jb is not None else None
        if qa is not None and qb is not None and qa.name != qb.name:
            if session.queue_less(qb, qa):
                return -1
            if session.queue_less(qa, qb):
                return 1
        ka, kb = task_key(a), task_key(b)
        return -1 if kb < ka else (1 if ka < kb else 0)

    return cmp_to_key(compare)


def amounts_of(session: Session, amounts: Vector) -> dict[str, float]:
    """The amounts that count for shares (no pods, no zeros), as ``{resource: amount}`` data."""
    space = session.space
    dims = np.flatnonzero((amounts > EPS) & space.share_mask)
    return {space.names[d]: float(amounts[d]) for d in dims}


def eviction_reason(
    session: Session,
    *,
    action: str,
    task: Task,
    job: Job,
    victim: Task,
    holder: str,
    held: Vector,
    **more: Any,
) -> EvictionReason:
    """Why ``victim`` goes for ``task`` of ``job``, as data: what the task needs, what the eviction frees,
    and what ``holder`` (the victim's job or queue) holds before and after. ``more`` adds the action's
    own fields (priorities, facts)."""
    return EvictionReason(
        action=action,
        victim_job=victim.job_key,
        beneficiary=task.key,
        beneficiary_job=job.key,
        beneficiary_queue=job.queue,
        needs=amounts_of(session, task.request),
        frees=amounts_of(session, victim.request),
        holder=holder,
        holds_before=amounts_of(session, held),
        holds_after=amounts_of(session, held - victim.request),
        ran=ran_seconds(victim, session.now),
        **more,
    )


def ran_seconds(task: Task, now: float) -> float:
    """Seconds ``task`` has run (0: not running, or no known start)."""
    if task.status is not TaskStatus.RUNNING or task.start_time <= 0:
        return 0.0
    return max(0.0, now - task.start_time)


def place_by_evicting(
    session: Session,
    statement: Statement,
    task: Task,
    *,
    action: str,
    point: str,
    pools: _Pools,
    choose: Choose,
    describe: Describe,
    log: list[tuple[Task, EvictionReason]],
    in_the_way: Narrow | None = None,
) -> Status | None:
    """Pipeline ``task`` onto capacity that is free, being released, or freed here by evicting victims
    (each appended to ``log`` with its reason). Returns None on success, else why not (in numbers; said
    by ``action``, or by the plugin that limits the task's queue). ``point`` is the extension point
    ``choose`` asks (``preemptable`` or ``reclaimable``): its victim filters say what they kept, and
    where they keep the task out, the last resort goes past them (see the module's notes).

    While the task's queue may not take it (``session.allocatable``: the queue is at its deserved share
    or capability), capacity that is merely free is no option: on the node tried, victims are evicted
    until the node has room *and* the queue may take the task (preempt's victims are of the same queue,
    so each one evicted gives the queue room back); a node where that does not happen is left as it was.
    """
    job = session.jobs.get(task.job_key)
    queue = session.queues.get(job.queue) if job is not None else None
    limited = session.allocatable(queue, task) if queue is not None else None
    choice = session.choose_node(task)
    if choice.node is not None and not limited:
        statement.pipeline(task, choice.node)
        return None
    feasible = np.flatnonzero(session.feasible_nodes(task))
    key = _victim_order(session)
    placing = _Placing(
        session,
        statement,
        task,
        queue=queue,
        pools=pools,
        choose=choose,
        key=key,
        describe=describe,
        log=log,
        point=point,
    )
    # The last resort past the victim filters: only where some filter applies (a session with budgets),
    # and worth trying only once one kept a pod the plugins named while this task was tried (else it
    # would find what was found); where one applies, it is never why the task is not placed.
    filtered = session.has_victim_filters(point)
    kept_before = session.victim_filters_kept

    def within_first(v: Task) -> tuple[bool, Any]:
        return (not session.filter_victims([v], point=point), key(v))

    def past() -> _Placing | None:
        if not filtered or session.victim_filters_kept == kept_before:
            return None
        return replace(
            placing,
            choose=lambda t, pool: choose(t, pool, past_budgets=True),
            key=within_first,
            past_budgets=True,
        )

    def evict_in_the_way(placing: _Placing) -> tuple[bool, int, list[Task]]:
        """The last resort: evict the pods that keep the task out (see ``_evict_pods_in_the_way``), or
        that hold the devices it claims (``_evict_device_holders``)."""
        placed, tried, kept = _evict_pods_in_the_way(placing, narrow=in_the_way)
        if placed:
            return placed, tried, kept
        placed, more, held = _evict_filter_holders(placing, narrow=in_the_way)
        tried, kept = tried + more, kept + held
        if placed or not task.resource_claims:
            return placed, tried, kept
        placed, more, held = _evict_device_holders(placing)
        return placed, tried + more, kept + held

    if not len(feasible):
        unfit = choice.reason  # the nodes as they are now, before anything is tried on them
        placed, tried, kept_in_way = evict_in_the_way(placing)
        if placed:
            return None
        last = past()
        if last is not None:
            placed, tried, _ = evict_in_the_way(last)
            if placed:
                return None
        if filtered:
            kept_in_way = []  # gone past (or nothing to go past), the budgets are not why
        return _no_node_passes(
            session, unfit, tried=tried, kept=kept_in_way, action=action, point=point, told=task.namespace
        )
    need = session.capacity_asked(task)
    walk = _walk_nodes(placing, feasible=feasible, need=need)
    if walk is None:
        return None
    placed, _, _ = evict_in_the_way(placing)
    if placed:
        return None
    last = past()
    if last is not None and (
        _walk_past_budgets(last, feasible=feasible, need=need) or evict_in_the_way(last)[0]
    ):
        return None
    if filtered:
        walk = replace(walk, unnamed=[])  # gone past (or nothing to go past), the budgets are not why
    return _not_placed(
        session, task, walk, feasible=len(feasible), need=need, limited=limited, action=action, point=point
    )


def _no_node_passes(
    session: Session, unfit: str, *, tried: int, kept: list[Task], action: str, point: str, told: str
) -> Status:
    """Why a task no node passes the filters for stays pending, once evicting the pods in its way did
    not let it in (on ``tried`` nodes; ``kept``: the pods in the way its victim filters kept)."""
    why = f"no node passes the filters: {unfit}"
    if tried:
        why += (
            f"; evicting the pods that may be evicted on the {tried} node(s) where other pods keep"
            " it out would not let it in"
        )
    # The pods in the way that a victim filter (a PodDisruptionBudget) keeps, in its own words.
    protected = session.victim_protections(kept, point=point, told=told) if kept else None
    if protected is not None:
        return Status(protected.code, protected.plugin, (why, *protected.reasons))
    return Status(Code.UNSCHEDULABLE, action, (why,))


@dataclass(frozen=True, slots=True)
class _Walk:
    """What the walk over the feasible nodes (by how short of room they are) found when none took the
    task, over those nodes in that order: whether the action may take pods there, whether evicting them
    all could make room (and the room it would make, over the dimensions asked); and the victims the
    plugins named on the nodes walked, the pods of the nodes walked where they named none."""

    holding: BoolArray
    could: BoolArray
    reach: Vector
    named: int
    unnamed: list[Task]


def _ranked(
    placing: _Placing, *, feasible: IndexArray, need: BoolArray
) -> tuple[IndexArray, Vector, BoolArray]:
    """The feasible nodes, least short of room first (then by index); per node in that order, the room
    with every pod the action may take gone (over ``need``), and whether that could hold the task."""
    task, pools = placing.task, placing.pools
    nodes = placing.session.nodes
    future = nodes.idle[feasible] + nodes.incoming[feasible]
    short = np.maximum(task.request[None, :] - future, 0.0)[:, need]
    scale = np.maximum(task.request[need], EPS)
    order = np.lexsort((feasible, (short / scale).sum(axis=1)))
    ranked = feasible[order]
    # Where evicting every pod the action may take would still leave too little room, no choice of
    # the plugins' does better: those nodes are not walked.
    reach = (future + pools.reach[feasible])[order][:, need]
    could = pools.any[ranked] & _holds(reach, task.request[need])
    return ranked, reach, could


def _walk_nodes(placing: _Placing, *, feasible: IndexArray, need: BoolArray) -> _Walk | None:
    """Walk the feasible nodes, least short of room first, and on the first where the victims the plugins
    name make room (and let the task's queue take it), evict them and pipeline the task: None. Else what
    the walk found."""
    task, pools = placing.task, placing.pools
    ranked, reach, could = _ranked(placing, feasible=feasible, need=need)
    named = 0
    unnamed: list[Task] = []  # the pods of the nodes walked where the plugins named none
    for i in ranked[could]:
        node = int(i)
        pool = sorted(placing.pool(node), key=placing.key)
        if not pool:
            continue
        victims = placing.choose(task, pool)
        named += len(victims)
        if not victims:
            unnamed += pool
            continue
        if _evict_on(placing, node, victims, need=need):
            return None
    return _Walk(pools.any[ranked], could, reach, named, unnamed)


def _walk_past_budgets(placing: _Placing, *, feasible: IndexArray, need: BoolArray) -> bool:
    """The walk again past the victim filters (``placing.past_budgets``): on each node that could hold
    the task, the victims the plugins name, those the filters let go first; how many of those that make
    room would go past a filter; the nodes tried fewest first (then in the walk's order), and on the
    first where they make room (and let the task's queue take it), evicted and the task pipelined: True.
    As kube-scheduler prefers the node whose victims violate the fewest PodDisruptionBudgets."""
    session, task = placing.session, placing.task
    nodes = session.nodes
    ranked, _, could = _ranked(placing, feasible=feasible, need=need)
    options: list[tuple[int, int, int, list[Task]]] = []
    for rank, i in enumerate(ranked[could].tolist()):
        pool = sorted(placing.pool(i), key=placing.key)
        victims = placing.choose(task, pool) if pool else []
        if not victims:
            continue
        taken = _taken(nodes.idle[i] + nodes.incoming[i], victims, task=task, need=need)
        if taken is None:
            continue
        going = victims[:taken]
        options.append(
            (len(going) - len(session.filter_victims(going, point=placing.point)), rank, i, victims)
        )
    options.sort(key=lambda o: (o[0], o[1]))
    return any(_evict_on(placing, node, victims, need=need) for _, _, node, victims in options)


def _taken(room: Vector, victims: list[Task], *, task: Task, need: BoolArray) -> int | None:
    """How many of ``victims``, in their order, must go before ``room`` (a node's idle and incoming,
    a fresh array: it is added to) holds the task; None where all of them do not make room."""
    taken = 0
    for v in victims:
        if np.all(room[need] >= task.request[need] - EPS):
            return taken
        taken += 1
        room += v.request
    return taken if np.all(room[need] >= task.request[need] - EPS) else None


def _evict_on(placing: _Placing, node: int, victims: list[Task], *, need: BoolArray) -> bool:
    """Evict ``victims`` on ``node`` in their order until it has room for the task and its queue may take
    it, and pipeline the task there: True. False, with nothing evicted, where they do not make room or
    the queue would still be over its limit."""
    session, statement, task, queue = placing.session, placing.statement, placing.task, placing.queue
    nodes = session.nodes
    taken = _taken(nodes.idle[node] + nodes.incoming[node], victims, task=task, need=need)
    if taken is None:
        return False
    mark, logged = len(statement), len(placing.log)
    node_name = nodes.names[node]
    for n, v in enumerate(victims):
        if n >= taken and (queue is None or not session.allocatable(queue, task)):
            break
        placing.evict(v, node_name)
    else:
        if queue is not None and session.allocatable(queue, task):
            statement.rollback(mark)  # the queue would still be over its limit: leave this node be
            del placing.log[logged:]
            return False
    statement.pipeline(task, node)
    return True


def _not_placed(
    session: Session,
    task: Task,
    walk: _Walk,
    *,
    feasible: int,
    need: BoolArray,
    limited: Status | None,
    action: str,
    point: str,
) -> Status:
    """Why the task fails (and with it the job's turn), said from what is known already: the victims the
    plugins named on the nodes that were walked, and the numbers that ruled the others out (the plugins
    are not asked about those: that was a walk over nodes for every failing task)."""
    could, reach, named = walk.could, walk.reach, walk.named
    walked = int(np.count_nonzero(could & walk.holding))
    ruled = ~could & walk.holding
    # Where nothing was named, what a victim filter (a PodDisruptionBudget) kept, in its own words
    # (of the pods the walk offered: the nodes are not walked again).
    kept = (
        session.victim_protections(walk.unnamed, point=point, told=task.namespace)
        if not named and walk.unnamed
        else None
    )
    if not named and not ruled.any():
        why = f"{action}: no pod may be evicted for it on the {feasible} node(s) it could use"
        if kept is not None:
            return Status(kept.code, kept.plugin, (why, *kept.reasons))
        return Status(Code.UNSCHEDULABLE, action, (why,))
    within = " within its queue's limit" if limited else ""
    parts = []
    if walked and named:
        parts.append(
            f"evicting the {named} pod(s) that may be evicted on the {walked} node(s) where that could"
            f" make room would not make room for it{within} on any one of them"
        )
    elif walked:
        parts.append(f"no pod may be evicted for it on the {walked} node(s) where that could make room")
    if ruled.any():
        other = "other " if walked else ""
        parts.append(
            f"on the {other}{int(np.count_nonzero(ruled))} node(s) with pods it may take, evicting all of"
            f" them would not make room: {_most_freed(session, task, reach[ruled], need)}"
        )
    if limited:
        why = f"{action}: {limited.render()}, and " + "; ".join(parts)
        return Status(limited.code, limited.plugin, (why, *(kept.reasons if kept else ())))
    if kept is not None:
        return Status(kept.code, kept.plugin, (f"{action}: " + "; ".join(parts), *kept.reasons))
    return Status(Code.UNSCHEDULABLE, action, (f"{action}: " + "; ".join(parts),))


def _holds(reach: Vector, request: Vector) -> BoolArray:
    """Whether each node's room with every pod the action may take gone (the rows of ``reach``, over the
    dimensions asked) holds ``request``. The slack only lets in a node that rounding of the sums might
    have kept out: a node it admits is tried, and the trial says whether the task fits."""
    slack = 1e-9 * np.maximum(np.abs(reach), 1.0)
    holds: BoolArray = np.all(reach + slack >= request - EPS, axis=1)
    return holds


def _most_freed(session: Session, task: Task, reach: Vector, need: BoolArray) -> str:
    """The most any one of the nodes (the rows of ``reach``, over the dimensions in ``need``) could have
    free, against what ``task`` needs: the resources that fall short on every node, or, when each is
    there on some node but never all on one, what it needs and the most of each (the pod count left out
    unless it is part of what falls short: the other resources are free together on some node)."""
    names = [session.space.names[int(d)] for d in np.flatnonzero(need)]
    most = reach.max(axis=0)
    wants = task.request[need]

    def amount(d: int, v: Vector) -> str:
        return f"{names[d]} {format_amount(names[d], float(v[d]))}"

    short = np.flatnonzero(most < wants - EPS).tolist()
    if short:
        said = ", ".join(
            f"{amount(d, most)} free of {format_amount(names[d], float(wants[d]))}" for d in short
        )
        return f"at most {said} on any one node"
    dims = [d for d, name in enumerate(names) if name != PODS]
    if len(dims) < len(names) and np.all(reach[:, dims] >= wants[dims] - EPS, axis=1).any():
        dims = list(range(len(names)))  # the rest is there together on a node: its pod count is not
    needs = ", ".join(amount(d, wants) for d in dims)
    best = ", ".join(amount(d, most) for d in dims)
    return f"{needs} are never free together on one node (the most on any node: {best})"


def _evict_pods_in_the_way(placing: _Placing, *, narrow: Narrow | None) -> tuple[bool, int, list[Task]]:
    """Place the task on a node whose filters that depend on other pods (its required anti-affinity, or
    a running pod's against it) keep it out, by evicting the pods in the way, as kube-scheduler's
    default preemption does: on a node, every pod the plugins name (narrowed by ``narrow``) is taken
    away, and if the task then fits (every filter, room, its queue's limit) the pods are given back most
    important first as long as it still fits; the ones that cannot be given back are the victims. Each
    victim's reason says what it keeps out (the term) or that it makes room. Returns (placed, how many
    nodes were tried, the pods in the way the plugins would not name on the nodes passed over).

    The nodes are found and ordered over all nodes at once: those that pass every other filter, where
    every pod the anti-affinity counts runs on the node itself, could hold the task if all the pods the
    action may take went, and one of those is in the way. They are tried in order of the most important
    pod in the way (its job's priority, lowest first), then fewer pods in the way, then the youngest, then
    the node's name; the first where the task fits wins. A node where the plugins keep a pod in the way is
    passed over without a trial."""
    session, task = placing.session, placing.task
    where = session.blocked_by_pods(task)
    if not where.any():
        return False, 0, []
    where &= placing.could_hold(session.capacity_asked(task))
    index = placing.pools.index
    pods = np.flatnonzero(placing.pools.mask & where[index.node] & index.repelling(task))
    if not len(pods):
        return False, 0, []
    n = len(session.nodes)
    on = index.node[pods]
    count = np.bincount(on, minlength=n)
    top = np.full(n, -np.inf)
    np.maximum.at(top, on, index.priority[pods])
    newest = np.full(n, -np.inf)
    np.maximum.at(newest, on, index.creation[pods])
    candidates = np.flatnonzero(count > 0)
    order = np.lexsort((candidates, -newest[candidates], count[candidates], top[candidates]))
    in_way = {index.tasks[p].key for p in pods}
    tried = 0
    kept: list[Task] = []
    for i in candidates[order]:
        node = int(i)
        whole = pool = placing.pool(node)  # the pods in the way are among them (in the mask)
        still = [v.key for v in pool if v.key in in_way]
        if not still:
            continue  # the pods in the way are gone already (evicted for another task)
        if narrow is not None:
            pool = narrow(task, pool)
        pool = placing.ordered(pool, first=in_way)  # the pods in the way first
        victims = placing.choose(task, pool) if pool else []
        named = {v.key for v in victims}
        if any(k not in named for k in still):
            kept.extend(v for v in whole if v.key in in_way and v.key not in named)
            continue  # a pod in the way may not go
        tried += 1
        if _evict_for(placing, node, victims, facts=lambda v, terms: tuple((KEEPS_OUT, t) for t in terms)):
            return True, tried, []
    return False, tried, kept


def _evict_filter_holders(placing: _Placing, *, narrow: Narrow | None) -> tuple[bool, int, list[Task]]:
    """Place the task on a node whose filters that depend on other pods keep it out for what pods there
    hold (``session.pods_holding``: the volumes attached at the node's limit) by evicting those pods: as
    for the pods in the way (``_evict_pods_in_the_way``), every pod the plugins name on the node is taken
    away (narrowed by ``narrow``, as the pods in the way are), and if the task then fits (every filter,
    room, its queue's limit) they are given back most important first as long as it still fits; the rest
    are the victims, each told what its going frees.

    The nodes, over all nodes at once: those that pass every other filter and might pass these once pods
    there go (``session.blocked_by_pods``), could hold the task if all the pods the action may take went,
    and have a holder the action may take; in order of the most important holder there (lowest first),
    then fewer holders, then the node's index. Returns (placed, nodes tried, the holders the plugins would
    not name on the nodes passed over)."""
    session, task, pools = placing.session, placing.task, placing.pools
    holding = session.pods_holding(task)
    if not holding:
        return False, 0, []
    where = session.blocked_by_pods(task)
    if not where.any():
        return False, 0, []
    where &= placing.could_hold(session.capacity_asked(task))
    index = pools.index
    pods = index.positions(holding)
    pods = pods[pools.mask[pods] & where[index.node[pods]]]
    if not len(pods):
        return False, 0, []
    return _evict_holders(placing, pods, holding=holding, frees=holding.__getitem__, narrow=narrow)


def _evict_device_holders(placing: _Placing) -> tuple[bool, int, list[Task]]:
    """Place the task, whose claims no node can give their devices now, on a node where evicting pods
    that hold devices there would: as for the pods in the way (``_evict_pods_in_the_way``), every pod
    the plugins name on the node is taken away, and if the task then fits (its devices among those
    being released, every filter, room, its queue's limit) they are given back most important first as
    long as it still fits; the rest are the victims, and the task is pipelined onto their devices.

    The nodes: those where the devices free, being released or held by the pods the action may take
    (by those pods alone) would do and the room would, in order of the most important holder there
    (lowest first), then fewer holders, then the node's name. Returns (placed, nodes tried, the holders
    the plugins would not name on the nodes passed over)."""
    session, task, pools = placing.session, placing.task, placing.pools
    devices = session.devices
    plan = devices.plan(task.namespace, task.resource_claims, pod_uid=task.uid)
    if plan.problem or not plan.wants:
        return False, 0, []
    index = pools.index
    holders: list[int] = []
    held = devices.available(future=True).copy()
    for p in np.flatnonzero(pools.mask).tolist():
        t = index.tasks[p]
        if t.resource_claims and t.status in EVICTABLE:
            mine = devices.held_by(t.namespace, t.resource_claims, t.uid)
            if mine:
                held[mine] = True
                holders.append(p)
    if not holders:
        return False, 0, []
    nodes = session.nodes
    every = np.arange(len(nodes), dtype=np.intp)
    where = devices.fits(plan, every, held)
    where &= placing.could_hold(session.capacity_asked(task))
    pods = np.array([p for p in holders if where[index.node[p]]], dtype=np.intp)
    if not len(pods):
        return False, 0, []
    holding = {index.tasks[p].key for p in pods}
    return _evict_holders(
        placing, pods, holding=holding, frees=lambda _: "the devices its claims hold", narrow=None
    )


def _evict_holders(
    placing: _Placing,
    pods: IndexArray,
    *,
    holding: Collection[str],
    frees: Callable[[str], str],
    narrow: Narrow | None,
) -> tuple[bool, int, list[Task]]:
    """The node walk of ``_evict_filter_holders`` and ``_evict_device_holders``: over the nodes the
    holders ``pods`` (positions in the pools' index; keys ``holding``) are on, in order of the most
    important holder there (lowest first), then fewer holders, then the node's index, the pool there
    (narrowed by ``narrow``), holders first, as the plugins name it; the first node where evicting them
    places the task wins, each holder told what its going ``frees`` (by its key). Returns (placed, nodes
    tried, the holders the plugins would not name on the nodes passed over)."""
    task, index = placing.task, placing.pools.index
    n = len(placing.session.nodes)
    on = index.node[pods]
    count = np.bincount(on, minlength=n)
    top = np.full(n, -np.inf)
    np.maximum.at(top, on, index.priority[pods])
    candidates = np.flatnonzero(count > 0)
    order = np.lexsort((candidates, count[candidates], top[candidates]))
    held = set(holding)
    tried = 0
    kept: list[Task] = []
    for i in candidates[order]:
        node = int(i)
        pool = placing.pool(node)
        if narrow is not None:
            pool = narrow(task, pool)
        pool = placing.ordered(pool, first=held)  # the holders first
        victims = placing.choose(task, pool) if pool else []
        if not any(v.key in held for v in victims):
            kept.extend(v for v in pool if v.key in held)
            continue
        tried += 1
        if _evict_for(
            placing,
            node,
            victims,
            facts=lambda v, _: (("frees", frees(v.key)),) if v.key in held else (),
        ):
            return True, tried, []
    return False, tried, kept


def _evict_for(
    placing: _Placing,
    node: int,
    victims: list[Task],
    *,
    facts: Callable[[Task, list[str]], tuple[tuple[str, str], ...]],
) -> bool:
    """Evict those of ``victims`` (put least important first) that must go for the task to fit on
    ``node``, and pipeline it there; False, doing nothing, when it would not fit with all of them gone.
    ``facts``: what each eviction's reason says besides, from the victim and the terms by which it
    keeps the task out (if any)."""
    victims.sort(key=placing.key)
    chosen = _victims_on(placing.session, placing.task, node, victims, queue=placing.queue)
    if chosen is None:
        return False
    taken, blocking = chosen
    node_name = placing.session.nodes.names[node]
    for v in taken:
        placing.evict(v, node_name, facts=facts(v, blocking.get(v.key, [])))
    placing.statement.pipeline(placing.task, node)
    return True


def _victims_on(
    session: Session, task: Task, node: int, victims: list[Task], *, queue: QueueSpec | None
) -> tuple[list[Task], dict[str, list[str]]] | None:
    """Which of ``victims`` (least important first) must go for ``task`` to fit on ``node``, and for
    each one that is in the way of a filter, why (None: it does not fit even with all of them gone)."""
    need = session.capacity_asked(task)
    nodes = session.nodes

    def fits() -> bool:
        room = nodes.idle[node] + nodes.incoming[node]
        return (
            bool(np.all(room[need] >= task.request[need] - EPS))
            and session.feasible_at(task, node)
            and (queue is None or not session.allocatable(queue, task))
        )

    trials: dict[str, Statement] = {}
    for v in victims:
        trial = trials[v.key] = Statement(session)
        trial.evict(v, reason=EvictionReason(action="trial"))
    try:
        if not fits():
            return None
        blocking: dict[str, list[str]] = {}
        for v in reversed(victims):  # the most important first: kept if the task still fits
            trials.pop(v.key).discard()
            if fits():
                continue
            reasons = session.pod_filter_reasons(task, node)
            if reasons:
                blocking[v.key] = reasons
            trial = trials[v.key] = Statement(session)
            trial.evict(v, reason=EvictionReason(action="trial"))
        return [v for v in victims if v.key in trials], blocking
    finally:
        for trial in trials.values():
            trial.discard()


def pending_of(job: Job) -> list[Task]:
    """The tasks reclaim and preempt try to place (best-effort pods are backfill's)."""
    if not job.status_count.get(TaskStatus.PENDING):
        return []
    pending = TaskStatus.PENDING  # (``job.pending_tasks()``, filtered in the same pass)
    return [
        t for t in job.tasks.values() if t.status is pending and not t.best_effort and t.schedulable_by_us
    ]


def _any_pending(job: Job) -> bool:
    """Whether :func:`pending_of` has a task (asked of every job, twice a session: no list made)."""
    if not job.status_count.get(TaskStatus.PENDING):
        return False
    pending = TaskStatus.PENDING
    for t in job.tasks.values():  # noqa: SIM110 (a loop, not any() over a generator: every job's)
        if t.status is pending and t.schedulable_by_us and not t.best_effort:
            return True
    return False


def wants_capacity(session: Session, job: Job, *, action: str) -> bool:
    """A valid, starving job with pending tasks in an existing, open queue.

    A Closed queue takes no new work: none of its jobs (admitted or not) takes capacity from other
    queues or from its neighbours; the job is told so. What already runs in it keeps running."""
    queue = session.queues.get(job.queue)
    if queue is None or job.phase is PodGroupPhase.COMPLETED or not _any_pending(job):
        return False
    if session.job_valid(job) is not None or not session.job_starving(job):
        return False
    if queue.state is QueueState.CLOSED:
        closed = f"{action}: queue {queue.name} is closed and takes no capacity"
        session.reject(job, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, action, (closed,)), add=True)
        return False
    return True


def starving_by_queue(session: Session, *, action: str) -> dict[str, list[Job]]:
    """The jobs that want capacity (:func:`wants_capacity`, which tells a closed queue's jobs why not),
    by queue, in the order ``pending_jobs`` gives (a job wants capacity only with a task pending).

    What it reads of a job in an open queue (its tasks' statuses, its validity and whether it starves,
    which read those too, where the plugins declare ``job_answers_kept``) changes only with a task's
    status (``job_changed``), and the queues not at all while a session runs: an answer is kept for the
    session's next action that asks (reclaim's for preempt) while the job is not changed since. A
    closed queue's jobs are asked each time (each action tells them why not)."""
    if kept.KeptAnswers.of(session) is None:  # (a plugin answers for jobs without saying what it reads)
        by_queue: dict[str, list[Job]] = {}
        for job in session.pending_jobs():
            if wants_capacity(session, job, action=action):
                by_queue.setdefault(job.queue, []).append(job)
        return by_queue
    memo: dict[str, bool] | None = session.state.get(_WANTS)
    _, changed = session.jobs_answered()
    if memo is None:
        memo = session.state[_WANTS] = {}
    elif changed:
        for key in changed & memo.keys():
            del memo[key]
    by_queue = {}
    queues = session.queues
    closed = QueueState.CLOSED
    for job in session.pending_jobs():
        wants = memo.get(job.key)
        if wants is None:
            wants = wants_capacity(session, job, action=action)
            queue = queues.get(job.queue)
            if queue is None or queue.state is not closed:
                memo[job.key] = wants
        if wants:
            by_queue.setdefault(job.queue, []).append(job)
    return by_queue


#: Where :func:`starving_by_queue` keeps its answers for the session's next action (``session.state``).
_WANTS = "volsched.actions.eviction.wants_capacity"


def _said_of_task(said: Status, task: str, action: str) -> Status:
    """``said.about(f"task {task}").about(action)``, made at once (said of each job of a backlog)."""
    reasons = said.reasons
    if not reasons:
        return Status(said.code, said.plugin, (f"{action}: task {task}",))
    return Status(said.code, said.plugin, (f"{action}: task {task}: {reasons[0]}", *reasons[1:]))


def refusals_by_shape(session: Session) -> Refusals | None:
    """A :class:`Refusals` when every plugin answers by a job's shape (``answers_by_shape``: a backlog
    of jobs alike fails the same way job after job, so one is asked for them all), else None (each job
    is asked)."""
    if all(getattr(p, "answers_by_shape", False) for p in session.plugins):
        return Refusals(session)
    return None


class Refusals:
    """What an action's jobs came to since it last committed, by :func:`job_shape`: which task failed
    (its index in task order) and why, in words that name no task; None: the job failed with no reason
    to give (nothing was evicted, or its gang was not pipelined); enqueue keeps 0 and the votes'
    refusal. The action clears it whenever it commits: every answer kept may have changed then."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._answers: dict[tuple[Any, ...], tuple[int, Status] | None] = {}
        #: Each task's part of a shape, shared by the session's actions (see :func:`job_shape`).
        self._tasks: TaskShapes = session.state.setdefault(_TASK_SHAPES, {})
        #: Each job's shape as the last session and this one made it (see :class:`CarriedShapes`).
        self._carried = CarriedShapes.of(session)
        #: The jobs admitted this session: their phase when it opened was Pending.
        self._admitted: set[str] = set()
        self._seen = 0

    def shape(self, job: Job, tasks: list[Task]) -> tuple[Any, ...] | None:
        """:func:`job_shape`, with the phase the job had when the session opened (a plugin may read
        that, e.g. which jobs were committed to their queue then)."""
        shape = self._carried.shape(job, tasks, self._tasks)
        if shape is None:
            return None
        admitted = self._session.result.admitted
        if len(admitted) > self._seen:
            self._admitted.update(admitted[self._seen :])
            self._seen = len(admitted)
        return (*shape, job.key in self._admitted, *self._session.shape_of(job, tasks))

    def get(self, shape: tuple[Any, ...]) -> tuple[int, Status] | None:
        return self._answers.get(shape)

    def __contains__(self, shape: tuple[Any, ...]) -> bool:
        return shape in self._answers

    def __getitem__(self, shape: tuple[Any, ...]) -> tuple[int, Status] | None:
        return self._answers[shape]

    def __setitem__(self, shape: tuple[Any, ...], answer: tuple[int, Status] | None) -> None:
        self._answers[shape] = answer

    def clear(self) -> None:
        self._answers.clear()


class CarriedShapes:
    """Each job's shape (:func:`job_shape`) kept from one session to the next by the job's key: a
    backlog's jobs are assembled again for each snapshot (new objects with the same fields), and their
    shapes, made job by job each session (every task's sorted labels and annotations, its request's
    bytes), are the same while the job's tasks and PodGroup are. What a shape reads of a job that a
    session changes (its phase; its tasks' statuses, which :func:`shape_holds` checks) is asked each
    time; the rest (:func:`_shape_body`) is kept, by the order of the tasks it was made for, and taken
    again in the next session when its snapshot is the next build of the same builder
    (``ClusterSnapshot.built``) and the job is not among those whose tasks or PodGroup changed since
    (``ClusterSnapshot.touched``; a change of priority classes, namespaces' queues or resource names
    builds the snapshot from scratch, with no ``touched``). Kept in ``ClusterSnapshot.kept``: what this
    session asked, so a job no session asked is dropped at the next.

    A shape here is the job's phase and its body's number (equal bodies, one number: ``numbers``), not
    the body: the refusals look shapes up job after job, and a tuple's hash is made anew each time."""

    __slots__ = ("before", "built", "next", "now", "numbers", "touched")

    def __init__(
        self,
        *,
        built: int,
        before: dict[str, _KeptBody],
        touched: frozenset[str],
        numbers: dict[tuple[Any, ...], int],
        next: int,
    ) -> None:
        self.built = built
        self.before = before
        self.touched = touched
        self.now: dict[str, _KeptBody] = {}
        self.numbers = numbers
        self.next = next

    @classmethod
    def of(cls, session: Session) -> CarriedShapes:
        """The session's (made at its first ask, from the last session's where its snapshot is the next
        build of the same builder, and left for the next)."""
        out: CarriedShapes | None = session.state.get(_JOB_SHAPES)
        if out is None:
            snapshot = session.snapshot
            last = snapshot.kept.get(_JOB_SHAPES)
            touched = snapshot.touched
            if isinstance(last, CarriedShapes) and touched is not None and snapshot.follows(last.built):
                numbers = last.numbers
                if len(numbers) > 2 * len(last.now) + _NUMBERS_KEPT:  # (only the bodies kept keep theirs)
                    numbers = {body: n for _, n, body in last.now.values()}
                out = cls(
                    built=snapshot.built, before=last.now, touched=touched, numbers=numbers, next=last.next
                )
            else:
                out = cls(built=snapshot.built, before={}, touched=frozenset(), numbers={}, next=0)
            session.state[_JOB_SHAPES] = out
            if snapshot.built:
                snapshot.kept[_JOB_SHAPES] = out
        return out

    def shape(self, job: Job, tasks: list[Task], memo: TaskShapes | None) -> tuple[Any, ...] | None:
        """:func:`job_shape` of ``job`` and ``tasks`` (``memo``: its ``TaskShapes``), its body kept and
        numbered: two jobs have equal shapes here exactly when they have equal ``job_shape``."""
        if not shape_holds(job, tasks):
            return None
        key = job.key
        now = self.now
        kept = now.get(key)
        if kept is None:
            kept = self.before.get(key)
            if kept is not None and key in self.touched:
                kept = None
        order = None if len(tasks) == 1 else tuple(t.name for t in tasks)
        if kept is None or kept[0] != order:
            body = _shape_body(job, tasks, memo)
            number = self.numbers.get(body)
            if number is None:
                number = self.numbers[body] = self.next
                self.next += 1
            kept = (order, number, body)
        now[key] = kept
        return (job.phase, kept[1])


#: A job's shape's body as kept (:class:`CarriedShapes`): the names of the tasks it was made for, in
#: order (None for one task), its number and the body.
_KeptBody = tuple[tuple[str, ...] | None, int, tuple[Any, ...]]
#: Bodies numbered beyond twice those kept (and this many), the numbers are made again from those kept.
_NUMBERS_KEPT = 1024
#: Where :class:`CarriedShapes` is kept (``session.state`` and ``ClusterSnapshot.kept``).
_JOB_SHAPES = "volsched.actions.eviction.job_shapes"

#: Annotations that name the pod's group: the job's name, which its key says already.
_NAMING = frozenset({GROUP_ANNOTATION, VOLCANO_GROUP_ANNOTATION})
#: Each task's part of a job's shape, by ``id`` of the task (which it keeps, so no other task takes its
#: ``id`` while the memo lives): what it reads of a task is fixed while a session runs (a Statement moves
#: a task's status and node only), so it is made once a session (``session.state[_TASK_SHAPES]``).
TaskShapes = dict[int, tuple[Task, tuple[Any, ...]]]
_TASK_SHAPES = "volsched.actions.eviction.task_shapes"


def _task_shape(t: Task) -> tuple[Any, ...]:
    """What :func:`job_shape` reads of task ``t``: none of it moves while a session runs."""
    return (
        t.request.tobytes(),
        t.placement_key,
        t.score_extra,
        t.constraints,
        tuple(sorted(t.labels.items())),
        tuple(sorted((k, v) for k, v in t.annotations.items() if k not in _NAMING)),
        t.priority,
        t.priority_class,
        t.preemptable,
        t.critical,
        t.schedulable_by_us,
        t.expected_runtime,
        t.active_deadline,
    )


def _task_shapes(tasks: list[Task], memo: TaskShapes | None) -> tuple[tuple[Any, ...], ...]:
    if memo is None:
        return tuple(_task_shape(t) for t in tasks)
    out = []
    for t in tasks:
        kept = memo.get(id(t))
        if kept is None or kept[0] is not t:
            kept = memo[id(t)] = (t, _task_shape(t))
        out.append(kept[1])
    return tuple(out)


def job_shape(job: Job, tasks: list[Task], *, memo: TaskShapes | None = None) -> tuple[Any, ...] | None:
    """What the attempt to place ``job``'s ``tasks`` (its pending tasks in task order) reads of the job,
    when the job waits whole: its phase, then (:func:`_shape_body`) its queue, namespace, priority and
    minMember, its group's spec, and each task's request, placement, constraints, labels, annotations
    (but those naming its group) and priorities; not the names, uids or creation times, which plugins
    that declare ``answers_by_shape`` never read. Two jobs of one shape, asked in a row with no change
    to the cluster between them, get the same answer.

    None when the job is not one whose answer may be reused (:func:`shape_holds`).

    ``memo``: each task's part as made earlier in the same session (see ``TaskShapes``), else made now."""
    if not shape_holds(job, tasks):
        return None
    return (job.phase, _shape_body(job, tasks, memo))


def shape_holds(job: Job, tasks: list[Task]) -> bool:
    """Whether ``job`` has a shape (:func:`job_shape`): ``tasks`` are all its tasks, each pending, none
    claiming devices (a claim is the pod's own) nor never preempting. Not when a pod of it is placed,
    running or done (what it holds counts)."""
    if len(tasks) != len(job.tasks):
        return False
    for t in tasks:
        if t.status is not TaskStatus.PENDING or t.resource_claims or t.preemption_policy == NEVER:
            return False
    return True


def _shape_body(job: Job, tasks: list[Task], memo: TaskShapes | None) -> tuple[Any, ...]:
    """What :func:`job_shape` reads that no session changes: only a change to the job's tasks or
    PodGroup (or to the priority classes, namespaces' queues or resource names) does."""
    group = job.podgroup
    spec = (
        None
        if group is None
        else (
            group.priority_class_name,
            group.topology,
            group.api_group,
            group.owner is not None,
            tuple(sorted((group.min_task_member or {}).items())),
        )
    )
    wants = None if job.min_resources_map is None else tuple(sorted(job.min_resources_map.items()))
    return (job.queue, job.namespace, job.priority, job.min_member, spec, wants, _task_shapes(tasks, memo))


def _in_task_order(session: Session, tasks: list[Task]) -> list[Task]:
    if len(tasks) > 1:
        queue = TaskQueue(session, tasks)
        return [queue.pop() for _ in range(len(queue))]
    return tasks


def _told(
    session: Session, job: Job, tasks: list[Task], known: tuple[int, Status] | None, *, action: str
) -> None:
    """``job`` refused as a job of its shape was since the action last committed (``known``: which task
    failed and why; None: nothing to say)."""
    if known is not None:
        index, said = known
        session.reject(job, _said_of_task(said, tasks[index].name, action), add=True)


def refused_as_before(session: Session, job: Job, *, action: str, refusals: Refusals | None) -> bool:
    """Whether a job of ``job``'s shape failed since the action last committed (see :class:`Refusals`):
    then ``job`` is refused the same way, told why, and :func:`evict_for_job` need not be asked (a
    backlog's every job but the first of each shape, without the making of what a try needs)."""
    if refusals is None:
        return False
    tasks = _in_task_order(session, pending_of(job))
    shape = refusals.shape(job, tasks)
    if shape is None or shape not in refusals:
        return False
    _told(session, job, tasks, refusals[shape], action=action)
    return True


def evict_for_job(
    session: Session,
    job: Job,
    *,
    action: str,
    point: str,
    evictable: Evictable,
    candidates: Candidates,
    choose: Choose,
    describe: Describe,
    refuse: Callable[[Task], Status | None] | None = None,
    in_the_way: Narrow | None = None,
    refusals: Refusals | None = None,
) -> set[str]:
    """Place ``job``'s pending tasks through one Statement, evicting victims where needed. Returns the
    keys of the jobs that gave pods up (none unless committed): their order changed.

    Committed only if something was evicted and the gang is pipelined; then a held-back job is
    admitted. Otherwise discarded (nothing evicted) and the reason recorded on the job. Tasks with
    ``preemptionPolicy: Never`` are placed only where there is room already; ``refuse`` may veto a task
    before any eviction is considered for it. ``candidates`` says which of ``evictable`` the action may
    take for this job at all; ``point`` is the extension point ``choose`` asks.

    ``refusals`` (see :class:`Refusals`): the answers of this action's earlier jobs since it last
    committed; a job of the same shape as one that failed fails the same way, without being tried
    (``refuse`` and ``candidates`` must then answer by the job's shape, as the plugins do).
    """
    tasks = _in_task_order(session, pending_of(job))
    shape = refusals.shape(job, tasks) if refusals is not None else None
    if shape is not None and refusals is not None and shape in refusals:
        _told(session, job, tasks, refusals[shape], action=action)
        return set()
    mask = candidates(evictable)
    pools = _Pools(evictable, mask, *evictable.reach(mask))
    statement = Statement(session)
    log: list[tuple[Task, EvictionReason]] = []
    reason: Status | None = None
    failed: tuple[int, Status] | None = None
    for at, task in enumerate(tasks):
        if task.preemption_policy == NEVER:
            limited = session.allocatable(session.queues[job.queue], task)
            choice = session.choose_node(task)
            if limited or choice.node is None:
                never = f"task {task.name} has preemptionPolicy Never and fits nowhere"
                reason = (limited or Status(Code.UNSCHEDULABLE, action, (choice.reason,))).about(never)
                break
            statement.pipeline(task, choice.node)
            continue
        refused = refuse(task) if refuse is not None else None
        if refused:
            reason = refused.about(f"task {task.name}")
            failed = (at, refused)
            break
        why = place_by_evicting(
            session,
            statement,
            task,
            action=action,
            point=point,
            pools=pools,
            choose=choose,
            describe=describe,
            log=log,
            in_the_way=in_the_way,
        )
        if why:
            reason = why.about(f"task {task.name}")
            failed = (at, why)
            break
    if log and session.job_pipelined(job):
        admitted = job.phase is PodGroupPhase.PENDING
        if admitted:
            statement.admit(job)
        statement.commit()
        if admitted:
            session.job_enqueued(job)
        if refusals is not None:
            refusals.clear()  # the cluster changed: every answer kept may have changed
        return {victim.job_key for victim, _ in log}
    statement.discard()
    if shape is not None and refusals is not None:
        refusals[shape] = failed
    if reason:
        session.reject(job, reason.about(action), add=True)
    return set()
