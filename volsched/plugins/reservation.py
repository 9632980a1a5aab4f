"""reservation: the job waiting for room at the head of the queue that comes first in the queue order
(the queue furthest below its share) reserves the nodes where it will fit earliest; other pods use those nodes only when they are expected to end before the
reservation starts, or fit beside it (EASY backfill).

One reservation at a time, planned again every session; it is not conservative backfill and not a
promise. Users: docs/starvation.md; how it plans, session by session: docs/design/modules.md#reservation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field, replace
from functools import cmp_to_key
from typing import Any, ClassVar

import numpy as np

from volsched.framework.decisions import Event
from volsched.framework.never import never_fits
from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.points import EventHandler, ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.cluster import BoolArray, IndexArray, Job, task_order_key
from volsched.model.resources import EPS, Vector
from volsched.model.scalars import human_duration
from volsched.model.vocabulary import NODE_HOLDING_STATUSES, PodGroupPhase, QueueState, Task, TaskStatus
from volsched.plugins.shared.runtimes import runtimes_of
from volsched.records import dataclass

#: The carryover key: the job to reserve for in the next session, and the reservation last announced.
CARRY = "reservation"
#: The carryover key of the claims: room evictions freed, held for the pods it was freed for (pod key ->
#: [job key, node name, pod uid, its victims' keys...]: a pod made again under the name is not the one
#: it was freed for; a claim whose victims are gone holds the node's free room, see :class:`_Claims`).
CLAIMS = "reservation.claims"
#: The carryover key that says the pods' nominated nodes were read (a leader's first session takes over
#: each pending pod's ``status.nominatedNodeName`` it holds no claim for: an earlier leader's claim).
NOMINATIONS_READ = "reservation.nominations-read"
#: A claimant's score on its node, past any other plugin's: it goes back where its victims were.
_CLAIM_SCORE = 1e9
#: Seconds (100 years) past which a reservation's start is said as "more than 100 years" and written as no
#: expected start: pods' expected run times are the users' (an annotation may say 10^12 s), and a start
#: past the year 9999 is no date a status can hold.
_HORIZON = 100 * 365 * 86400.0
PENDING = TaskStatus.PENDING
#: Statuses of a pod placed this session (what takes a reserved node's spare room).
_PLACED = frozenset({TaskStatus.ALLOCATED, TaskStatus.PIPELINED})
#: Statuses of a pod still waiting at a session's close: pending, or pipelined onto room being freed.
_WAITING = frozenset({PENDING, TaskStatus.PIPELINED})
#: The session state key of the jobs with a pod pending at the session's open.
_PENDING_AT_OPEN = "reservation.pending-at-open"


@dataclass(frozen=True)
class Ask:
    """Tasks of the reserving job alike in request and placement: how many, and the nodes they may use."""

    request: Vector
    feasible: BoolArray
    count: int


@dataclass(frozen=True)
class Release:
    """A pod's request coming free on ``node`` at ``end`` (Unix seconds; inf: not known)."""

    end: float
    node: int
    request: Vector


def pack(
    free: Vector, asks: list[Ask], *, idle: Vector | None = None, drain: Vector | None = None
) -> dict[int, Vector] | None:
    """Where ``asks`` fit in ``free`` (node, resource), each group onto the nodes with room for most of
    it first (the fewest nodes), and among nodes with as much room, those with the least of it ``idle``
    already (room free now, held idle until the start: a node busy until then is held for nothing),
    then those with the most ``drain`` (per node: how far what runs there is past its queue's share);
    what each node takes, or None when they do not all fit."""
    free = free.copy()
    taken: dict[int, Vector] = {}
    for ask in sorted(asks, key=lambda a: -float(a.request.sum())):
        dims = ask.request > EPS
        room = _fits(free, ask, dims)
        if room.sum() < ask.count:
            return None
        early = (
            (idle[:, dims] / ask.request[dims]).min(axis=1)
            if idle is not None and dims.any()
            else np.zeros(len(free))
        )
        over = drain if drain is not None else np.zeros(len(free))
        left = ask.count
        for node in np.lexsort((-over, early, -room)):
            take = int(min(room[node], left))
            if take <= 0:
                break
            amount = ask.request * take
            free[node] -= amount
            held = taken.get(int(node))
            taken[int(node)] = amount if held is None else held + amount
            left -= take
            if not left:
                break
    return taken


def _fits(free: Vector, ask: Ask, dims: BoolArray) -> Vector:
    """How many of ``ask``'s pods each node's ``free`` room holds (0 where the ask may not go)."""
    if dims.any():
        room = np.floor((free[:, dims] + EPS) / ask.request[dims]).min(axis=1)
    else:
        room = np.full(len(free), float(ask.count))
    return np.where(ask.feasible, np.maximum(room, 0.0), 0.0)


def earliest_fit(
    free: Vector, releases: list[Release], asks: list[Ask], *, now: float, drain: Vector | None = None
) -> tuple[float, dict[int, Vector], Vector] | None:
    """The first moment (``now`` or a release's end, inf when only pods with no expected end free
    enough) at which ``asks`` fit in ``free`` plus what has been released by then: that moment, what
    each node it packs onto takes, and the free room then (before the asks take theirs). None: they never
    fit, whatever ends."""
    total = sum((a.request * a.count for a in asks), np.zeros(free.shape[1]))
    room = free.copy()
    ordered = sorted(releases, key=lambda r: r.end)
    k = 0
    times = [now, *sorted({r.end for r in ordered if r.end > now})]
    for t in times:
        while k < len(ordered) and ordered[k].end <= t:
            room[ordered[k].node] += ordered[k].request
            k += 1
        if (np.maximum(room, 0.0).sum(axis=0) + EPS < total).any():
            continue
        taken = pack(np.maximum(room, 0.0), asks, idle=np.maximum(free, 0.0), drain=drain)
        if taken is not None:
            return t, taken, room
    return None


@dataclass
class Plan:
    """A reservation: for ``job``, from ``start``, what it takes on each of ``nodes`` (``need``, one row
    each) and what those nodes have beside it then for pods that run past the start (``spare``)."""

    job: str
    start: float
    nodes: IndexArray
    need: Vector
    spare: Vector
    #: Pods placed this session that took spare room: task key -> row of ``nodes``.
    counted: dict[str, int] = field(default_factory=dict)

    def row(self, node: int) -> int | None:
        where = np.flatnonzero(self.nodes == node)
        return int(where[0]) if len(where) else None


def _unmet(session: ExtensionPoints, job: Job) -> list[Task] | None:
    """The pending pods that make ``job``'s unmet minimum (in task order), when its queue would take
    them all (its share, its capability; a Closed queue admits no new job: else no room helps); None
    otherwise."""
    queue = session.queues.get(job.queue)
    pending = sorted(
        (t for t in job.tasks.values() if t.status is PENDING and t.schedulable_by_us), key=task_order_key
    )
    unmet = job.min_member - job.ready_count
    if queue is None or unmet <= 0 or len(pending) < unmet:
        return None
    if queue.state is QueueState.CLOSED and job.phase is PodGroupPhase.PENDING:
        return None
    if session.job_valid(job) is not None:  # its queue's rules refuse it
        return None
    if job.podgroup is not None and job.podgroup.topology is not None:
        return None  # placed in one domain of a node label: not planned here (yet)
    asked = replace(pending[0], request=sum((t.request for t in pending[:unmet]), session.space.zeros()))
    if session.overused(queue) or session.allocatable(queue, asked):
        return None
    return pending[:unmet]


def _asks(session: ExtensionPoints, unmet: list[Task]) -> list[Ask]:
    """``unmet`` as asks: the pods alike in request and placement together, with the nodes they may use."""
    groups: dict[tuple[bytes, str], tuple[Task, int]] = {}
    for task in unmet:
        key = (task.request.tobytes(), task.placement_key)
        first, count = groups.get(key, (task, 0))
        groups[key] = (first, count + 1)
    return [Ask(t.request, session.feasible_nodes(t), n) for t, n in groups.values()]


def _fits_at_all(session: ExtensionPoints, unmet: list[Task]) -> bool:
    """Whether ``unmet`` fits on the nodes it may use were they empty (else no reservation is planned
    for it, whatever ends: a pod larger than every node, a selector no node matches)."""
    return pack(session.nodes.allocatable, _asks(session, unmet)) is not None


def plan_for(session: ExtensionPoints, job: Job) -> Plan | None:
    """Where and from when ``job``'s unmet minimum fits (see the module docstring), or None."""
    unmet = _unmet(session, job)
    if unmet is None:
        return None
    asks = _asks(session, unmet)
    usable = np.logical_or.reduce([a.feasible for a in asks])
    nodes = session.nodes
    now = session.now
    expected_runtime = runtimes_of(session)
    releases: list[Release] = []
    held: list[tuple[int, str, float]] = []  # (node, queue, size) of what runs there
    total = np.where(session.space.share_mask, session.total, 0.0)
    scale = np.where(total > EPS, 1.0 / np.maximum(total, EPS), 0.0)
    jobs = session.jobs
    for i in np.flatnonzero(usable):
        for task in nodes.tasks[i].values():
            if task.job_key == job.key or task.status not in _HOLDING:
                continue
            if task.status is TaskStatus.RELEASING:
                continue  # counted in the node's incoming room already
            runtime = expected_runtime(task)
            began = task.start_time if task.status is TaskStatus.RUNNING and task.start_time > 0 else now
            end = math.inf if runtime is None else max(now, began + runtime)
            releases.append(Release(end, int(i), task.request))
            owner = jobs.get(task.job_key)
            if owner is not None and owner.queue in session.queues:
                held.append((int(i), owner.queue, float(np.max(task.request * scale, initial=0.0))))
    free = nodes.idle + nodes.incoming  # what is free once what is being released goes, less what is promised
    found = earliest_fit(free, releases, asks, now=now, drain=_drain(session, held, len(nodes)))
    if found is None:
        return None
    start, taken, room = found
    index = np.array(sorted(taken), dtype=np.intp)
    need = np.array([taken[int(i)] for i in index])
    return Plan(job.key, start, index, need, room[index] - need)


_HOLDING = NODE_HOLDING_STATUSES | {TaskStatus.PIPELINED}


def _drain(session: ExtensionPoints, held: list[tuple[int, str, float]], nodes: int) -> Vector:
    """Per node, where its pods' queues stand in the session's queue order (0: the first, the furthest
    below its share; 1: the last), weighted by the pods' sizes: a reservation that may hold one node or
    another drains the one whose pods' queues are furthest past their shares first, so that what ends
    there (and is not given back while the nodes drain) is theirs."""
    out = np.zeros(nodes)
    names = sorted({q for _, q, _ in held})
    if len(names) < 2:
        return out
    queues = session.queues

    def before(a: str, b: str) -> int:  # (queues the order does not tell apart stay in name order)
        if session.queue_less(queues[a], queues[b]):
            return -1
        return 1 if session.queue_less(queues[b], queues[a]) else 0

    order = sorted(names, key=cmp_to_key(before))
    rank = {q: k / (len(order) - 1) for k, q in enumerate(order)}
    weight = np.zeros(nodes)
    for i, q, size in held:
        out[i] += rank[q] * size
        weight[i] += size
    return np.where(weight > 0, out / np.maximum(weight, EPS), 0.0)


class _Reserving:
    """One session's reservation, planned the first time a node filter asks."""

    def __init__(self, session: ExtensionPoints, job: Job) -> None:
        self.session = session
        self.job = job
        self.planned = False
        self.planning = False
        self.plan: Plan | None = None
        self.runtime = runtimes_of(session)

    def get(self) -> Plan | None:
        if not self.planned and not self.planning:
            self.planning = True
            try:
                self.plan = plan_for(self.session, self.job)
            finally:
                self.planning, self.planned = False, True
        return self.plan

    def active(self) -> Plan | None:
        """The plan while its job still waits (None once placed, or while planning)."""
        if self.planning or self.job.ready_count >= self.job.min_member:
            return None
        return self.get()

    def mask(self, task: Task) -> BoolArray | None:
        if task.job_key == self.job.key:
            return None
        plan = self.active()
        if plan is None:
            return None
        session = self.session
        runtime = self.runtime(task)
        if runtime is not None and session.now + runtime <= plan.start:
            return None  # ends before the reservation starts: backfill
        beside = (plan.spare >= task.request - EPS).all(axis=1)
        if beside.all():
            return None
        out = np.ones(len(session.nodes), dtype=bool)
        out[plan.nodes[~beside]] = False
        return out

    def explain(self, task: Task, idx: IndexArray) -> list[tuple[str, int]]:
        plan = self.active()
        if plan is None:
            return []
        mask = self.mask(task)
        if mask is None:
            return []
        count = int((~mask[idx]).sum())
        # A job of another namespace is not named to ``task`` (another tenant's names: as an eviction's).
        whose = _title(self.job) if self.job.namespace == task.namespace else "a job of another namespace"
        return (
            [(f"node(s) reserved for {whose} {_when(plan.start, self.session.now)}", count)] if count else []
        )

    def placed(self, task: Task) -> None:
        plan = self.plan
        if plan is None or task.job_key == plan.job or task.status not in _PLACED:
            return
        node = self.session.nodes.index.get(task.node_name or "")
        row = None if node is None else plan.row(node)
        if row is None:
            return
        runtime = self.runtime(task)
        if runtime is not None and self.session.now + runtime <= plan.start:
            return
        plan.spare[row] -= task.request
        plan.counted[task.key] = row

    def unplaced(self, task: Task) -> None:
        plan = self.plan
        row = None if plan is None else plan.counted.pop(task.key, None)
        if plan is not None and row is not None:
            plan.spare[row] += task.request


class _Claims:
    """Room that evictions freed, held for the pods it was freed for (kube-scheduler's nominated node).

    A pod that reclaim or preempt pipelined onto a node whose victims it evicted waits until they are
    gone; meanwhile, and in the session after, a pod of no higher priority may use that node only with
    room beside the claim (but for the job the reservation is held for), and the claimant scores its
    node above any other. Of two claims on one node, one whose victims are gone holds the node's free
    room first, one whose victims still terminate the room they are freeing: a pod beside them is placed
    now only in free room the first leave, else pipelined (a claim read back from a nominated node has
    no victims recorded: it holds free room first), so two claimants never swap rooms. A claim ends when its
    pod is placed, deleted (a pod made again under its name is
    another pod: the claim names the uid) or no longer pipelined there (its room free, it was not placed:
    its queue refused it, its gang did not fit), or when the node goes: it holds room idle at most one
    session once free.
    The claims standing at the close are the result's ``nominated`` (the pods' nominatedNodeName)."""

    def __init__(self, session: ExtensionPoints, carried: dict[str, list[str]]) -> None:
        self.session = session
        nodes = session.nodes
        self.claims: list[tuple[Task, int]] = []
        #: Each claimant's victims (pod keys), as carried.
        self.victims: dict[str, list[str]] = {}
        #: The claimants whose victims are all gone from their node (or who have none recorded): they
        #: hold the node's free room first.
        self.freed: set[str] = set()
        for key, (job_key, node_name, uid, *victims) in sorted(carried.items()):
            job = session.jobs.get(job_key)
            task = job.tasks.get(key) if job is not None else None
            node = nodes.index.get(node_name)
            if task is not None and node is not None and task.status is PENDING and task.uid == uid:
                self.claims.append((task, node))
                self.victims[key] = victims
                if not any(v in nodes.tasks[node] for v in victims):
                    self.freed.add(key)
        self.keys = {t.key for t, _ in self.claims}
        self.jobs = {t.job_key for t, _ in self.claims}
        #: The job the reservation is held for: claims do not hold room against it (the nodes drain for
        #: it, and a claim on the last node it needs would send it back to wait for the next ones).
        self.exempt = ""

    def _room(self, task: Task) -> tuple[IndexArray, Vector, Vector] | None:
        """The claimed nodes holding room against ``task``, and on each the free room and the room being
        freed that the claims leave it: a claim whose victims are gone takes free room first, the others
        the room being freed first, each the other kind once its own runs out."""
        if task.job_key == self.exempt:
            return None
        held: dict[int, tuple[Vector, Vector]] = {}
        zero = self.session.space.zeros()
        for claimant, node in self.claims:
            if claimant is task or claimant.status is not PENDING or task.priority > claimant.priority:
                continue
            free, freeing = held.get(node, (zero, zero))
            if claimant.key in self.freed:
                held[node] = (free + claimant.request, freeing)
            else:
                held[node] = (free, freeing + claimant.request)
        if not held:
            return None
        nodes = self.session.nodes
        where = np.fromiter(held, dtype=np.intp, count=len(held))
        idle = nodes.idle[where] - np.array([held[int(i)][0] for i in where])
        incoming = nodes.incoming[where] + np.minimum(idle, 0.0)
        idle = np.maximum(idle, 0.0)
        incoming = incoming - np.array([held[int(i)][1] for i in where])
        idle = idle + np.minimum(incoming, 0.0)
        return where, idle, np.maximum(incoming, 0.0)

    def mask(self, task: Task) -> BoolArray | None:
        """The claimed nodes where ``task`` fits only in the room held for others: False there."""
        found = self._room(task)
        if found is None:
            return None
        where, idle, incoming = found
        beside = _within(idle + incoming, task.request)
        if beside.all():
            return None
        out = np.ones(len(self.session.nodes), dtype=bool)
        out[where[~beside]] = False
        return out

    def now(self, task: Task) -> BoolArray | None:
        """The claimed nodes where ``task`` may be placed now (not only pipelined): where it fits in the
        free room the claims leave (a claimant whose victims are gone is placed there, not sent to
        wait for another's)."""
        found = self._room(task)
        if found is None:
            return None
        where, idle, _ = found
        beside = _within(idle, task.request)
        if beside.all():
            return None
        out = np.ones(len(self.session.nodes), dtype=bool)
        out[where[~beside]] = False
        return out

    def score(self, task: Task, feasible: BoolArray) -> Vector | None:
        """The claimant's own node first."""
        if task.key not in self.keys or task.status is not PENDING:
            return None
        out = np.zeros(len(self.session.nodes))
        for claimant, node in self.claims:
            if claimant is task:
                out[node] = _CLAIM_SCORE
        return out

    def explain(self, task: Task, idx: IndexArray) -> list[tuple[str, int]]:
        mask = self.mask(task)
        count = 0 if mask is None else int((~mask[idx]).sum())
        return [("node(s) whose room an eviction freed for another pod", count)] if count else []


def _within(room: Vector, request: Vector) -> BoolArray:
    """Per row of ``room``, whether ``request`` fits in it."""
    return np.asarray(((room >= request - EPS) | (request <= EPS)).all(axis=1))


def _take_nominations(session: ExtensionPoints) -> None:
    """The first session (of a leader, or of a simulation) takes each pending pod's nominated node
    (``Task.nominated_node``: an earlier leader's claim, written to its status) as a claim carried into
    it, where it holds none for the pod; :class:`_Claims` drops one whose node is gone. Later sessions
    do not: a nominated node they see is one this leader wrote, or one it ended and clears."""
    session.carryover[NOMINATIONS_READ] = True
    held: dict[str, list[str]] | None = session.carryover.get(CLAIMS)
    found: dict[str, list[str]] = {}
    for job in session.jobs.values():
        for task in job.tasks.values():
            if (
                task.nominated_node
                and task.status is PENDING
                and task.schedulable_by_us
                and (held is None or task.key not in held)
            ):
                found[task.key] = [task.job_key, task.nominated_node, task.uid]
    if found:
        session.carryover[CLAIMS] = {**(held or {}), **found}


def _claims_after(session: ExtensionPoints, claims: _Claims | None) -> dict[str, list[str]]:
    """The claims to carry to the next session: each pod pipelined onto a node where this session
    evicted, or still pipelined where it claimed room before (see :class:`_Claims`), with the victims
    evicted for it there (this session's and those it carried) that are still on that node."""
    nodes = session.nodes
    where = {nodes.index[e.node] for e in session.result.evictions if e.node in nodes.index}
    victims: dict[tuple[str, str], list[str]] = {}
    if claims is not None:
        where.update(node for t, node in claims.claims if t.status is TaskStatus.PIPELINED)
        for t, node in claims.claims:
            victims[t.key, nodes.names[node]] = list(claims.victims.get(t.key, ()))
    for e in session.result.evictions:
        victims.setdefault((e.reason.beneficiary, e.node), []).append(e.pod)
    out: dict[str, list[str]] = {}
    for node in sorted(where):
        name = nodes.names[node]
        for task in nodes.tasks[node].values():
            if task.status is TaskStatus.PIPELINED and task.schedulable_by_us:
                left = sorted({v for v in victims.get((task.key, name), ()) if v in nodes.tasks[node]})
                out[task.key] = [task.job_key, name, task.uid, *left]
    return out


def _note_claims(session: ExtensionPoints, carried: dict[str, list[str]], made: dict[str, list[str]]) -> None:
    """A ``Nominated`` event on each pod given a claim this session (not on one that carries its claim on),
    and on the PodGroup of each claimant that holds no reservation, its ``Reserved`` condition."""
    held: dict[str, list[tuple[str, str]]] = {}
    for key, (job_key, node, *_) in made.items():
        held.setdefault(job_key, []).append((key, node))
    podgroups = session.result.podgroups
    for job_key, claims in held.items():
        status = podgroups.get(job_key)
        if status is not None and status.reservation is None:
            nodes = sorted({node for _, node in claims})
            text = (
                f"room on node(s) {', '.join(nodes)} that evictions free is held for {len(claims)} pod(s)"
                " until they are placed"
            )
            podgroups[job_key] = replace(status, reservation=text)
    for key, (job_key, node, uid, *_) in made.items():
        if (carried.get(key) or [])[:3] == [job_key, node, uid]:
            continue
        job = session.jobs.get(job_key)
        task = job.tasks.get(key) if job is not None else None
        if task is None:
            continue
        session.emit(
            Event(
                kind="Pod",
                namespace=task.namespace,
                name=task.name,
                reason="Nominated",
                message=f"room on node {node} that evictions free is held for it until it is placed",
                type="Normal",
                podgroup=job_key if job is not None and job.podgroup is not None else "",
            )
        )


#: Why a gang with ``spec.topology`` gets no reservation (on its PodGroup's ``Reserved`` condition).
UNPLANNED = (
    "no reservation: a gang placed in one domain of a node label (spec.topology) is not planned by the"
    " reservation; it starts when one domain has room, and other pods may take what frees meanwhile"
)


def _note_unplanned(session: ExtensionPoints) -> Callable[[Job], None]:
    def note(job: Job) -> None:
        status = session.result.podgroups.get(job.key)
        if status is not None:
            session.result.podgroups[job.key] = replace(status, no_reservation=UNPLANNED)

    return note


def _title(job: Job) -> str:
    return f"job {job.key}" if job.podgroup is None else f"PodGroup {job.key}"


def _when(start: float, now: float) -> str:
    if math.isinf(start):
        return "until the pods on them end (no expected run time known)"
    if start <= now:
        return "from now"
    if start - now > _HORIZON:
        return "starting in more than 100 years"
    return f"starting in {human_duration(start - now)}"


@register_plugin
class Reservation(BasePlugin):
    name: ClassVar[str] = "reservation"
    #: Expected ends are read against the clock, but time alone never lets a pod onto a reserved node
    #: (the window before the start only shrinks) nor frees room for the job: a pod ending or arriving
    #: does, and that is a change of the cache, after which a session runs. So a session skipped on an
    #: unchanged cache loses no placement (a job past ``waitTime`` meanwhile reserves at the next one).
    reads_clock: ClassVar[bool] = False
    #: Its node filter reads a pod's shape (its expected run time, its request) and whether its job is
    #: the one the nodes are held for: that is told apart by ``add_shape_fn``.
    answers_by_shape: ClassVar[bool] = True

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.wait = arguments.duration("waitTime", 0.0, allow_zero=True)

    def on_session_open(self, session: ExtensionPoints) -> None:
        session.state[_PENDING_AT_OPEN] = session.pending_jobs()  # (at the close, some wait pipelined)
        if NOMINATIONS_READ not in session.carryover:
            _take_nominations(session)
        held = session.carryover.get(CLAIMS)
        claims = _Claims(session, held) if held else None
        if claims is not None and not claims.claims:
            claims = None
        if claims is not None:
            session.state[CLAIMS] = claims
        carried: dict[str, Any] = session.carryover.get(CARRY) or {}
        job = session.jobs.get(carried.get("next") or "")
        if job is None or job.ready_count >= job.min_member:
            if claims is not None:
                session.add_constraint_fn(self.name, claims.mask, explain=claims.explain, now=claims.now)
                session.add_constraint_score_fn(self.name, claims.score)
                session.add_shape_fn(self.name, lambda job, _: job.key in claims.jobs)
            return
        reserving = _Reserving(session, job)
        session.state[CARRY] = reserving
        if claims is not None:
            claims.exempt = job.key
        if claims is None:
            session.add_constraint_fn(self.name, reserving.mask, explain=reserving.explain)
            session.add_shape_fn(self.name, lambda job, _: job.key == reserving.job.key)
        else:
            both = claims

            def mask(task: Task) -> BoolArray | None:
                mine, theirs = reserving.mask(task), both.mask(task)
                return theirs if mine is None else (mine if theirs is None else mine & theirs)

            session.add_constraint_fn(
                self.name,
                mask,
                explain=lambda task, idx: reserving.explain(task, idx) + both.explain(task, idx),
                now=both.now,
            )
            session.add_constraint_score_fn(self.name, both.score)
            session.add_shape_fn(
                self.name, lambda job, _: (job.key == reserving.job.key, job.key in both.jobs)
            )
        session.add_event_handler(EventHandler(allocate=reserving.placed, deallocate=reserving.unplaced))

    def on_session_close(self, session: ExtensionPoints) -> None:
        claims: _Claims | None = session.state.get(CLAIMS)
        if CLAIMS in session.carryover or session.result.evictions:
            made = _claims_after(session, claims)
            _note_claims(session, session.carryover.get(CLAIMS) or {}, made)
            session.result.nominated = {key: node for key, (_, node, *_) in sorted(made.items())}
            if made:
                session.carryover[CLAIMS] = made
            else:
                session.carryover.pop(CLAIMS, None)
        carried: dict[str, Any] = dict(session.carryover.get(CARRY) or {})
        reserving: _Reserving | None = session.state.get(CARRY)
        plan = reserving.active() if reserving is not None else None
        if reserving is not None and plan is not None:
            self._announce(session, reserving.job, plan, carried)
        else:
            carried.pop("announced", None)
        head = self._head(session, unplanned=_note_unplanned(session))
        if head is None:
            carried.pop("next", None)
        else:
            carried["next"] = head.key
        if carried:
            session.carryover[CARRY] = carried
        else:
            session.carryover.pop(CARRY, None)

    def _head(self, session: ExtensionPoints, *, unplanned: Callable[[Job], None]) -> Job | None:
        """The job to reserve for next: the first waiting job (in the session's job order, those
        admitted before those not admitted yet) of the queue that comes first in the session's queue
        order (proportion's: the one furthest below its deserved share), among the queues whose first job
        has waited ``waitTime`` and would be taken by its queue whole. A job not admitted yet may be one:
        what keeps it out of the queue may be the cluster's room (overcommit), which only a reservation
        makes while smaller jobs are admitted into every bit that frees; once its nodes drain it is
        admitted and placed. A job its queue's rules refuse (``job_valid``: another team's queue, a
        priority class it may not name) is never one, nor a job of a Closed queue it was not admitted to.
        A job that fits nowhere even on empty nodes (it plans nothing) is never one either, nor one that
        can never run as it stands (``never_fits``: its minResources ask more than the ready nodes have, or
        its queue may ever hold): each leaves its place to the next job of its queue. A gang placed in one
        topology domain is never one (it is not planned: ``unplanned`` tells it why), so it does not keep
        the reservation from the jobs behind it. A job pipelined onto room being freed for it (its victims
        terminating) waits too: first of its queue, it is no head (it needs no reservation) and no job
        behind it is one, whose reservation would keep it off that room (claims do not hold room against
        the reservation's job)."""
        now = session.now
        by_queue: dict[str, list[Job]] = {}
        jobs = session.state.get(_PENDING_AT_OPEN)
        waiting = [
            job
            for job in (session.pending_jobs() if jobs is None else jobs)
            if job.ready_count < job.min_member
            and now - job.creation >= self.wait
            and job.queue in session.queues
            and any(t.status in _WAITING and t.schedulable_by_us for t in job.tasks.values())
        ]
        for job, refused in zip(waiting, session.jobs_valid(waiting), strict=True):
            if refused is not None:
                continue  # its queue's rules refuse it: no room helps, nor does it hold the jobs behind it
            if job.podgroup is not None and job.podgroup.topology is not None:
                unplanned(job)
                continue
            by_queue.setdefault(job.queue, []).append(job)
        keys = session.job_keys()
        heads = []
        for jobs in by_queue.values():
            order = keys(jobs)
            for i in sorted(
                range(len(jobs)), key=lambda i: (jobs[i].phase is PodGroupPhase.PENDING, order[i])
            ):
                if never_fits(session, jobs[i]) is not None:
                    continue  # no room it could be given would ever admit it: the next job of its queue
                unmet = _unmet(session, jobs[i])
                if unmet is None:  # its queue would refuse it: no room helps (nor the jobs behind it)
                    break
                if _fits_at_all(session, unmet):  # else it plans nothing: the next job of its queue
                    heads.append(jobs[i])
                    break
        queues = session.queues

        def before(a: Job, b: Job) -> int:
            return -1 if session.queue_less(queues[a.queue], queues[b.queue]) else 1

        return min(heads, key=cmp_to_key(before), default=None)

    def _announce(self, session: ExtensionPoints, job: Job, plan: Plan, carried: dict[str, Any]) -> None:
        """The reservation on the job's PodGroup status, and an event when nodes or start changed."""
        names = [session.nodes.names[int(i)] for i in plan.nodes]
        # to the minute: a start that drifts by seconds (an overdue pod's "now") is no new status
        far = math.isinf(plan.start) or plan.start - session.now > _HORIZON
        start = None if far else math.ceil(plan.start / 60) * 60
        text = f"reserves {len(names)} node(s) {_when(plan.start, session.now)}: {', '.join(names)}"
        status = session.result.podgroups.get(job.key)
        if status is not None:
            session.result.podgroups[job.key] = replace(status, reservation=text, expected_start=start)
        said = [names, start]
        if carried.get("announced") != said:
            carried["announced"] = said
            kind = "PodGroup" if job.podgroup is not None else "Pod"
            name = job.name if job.podgroup is not None else next(iter(job.tasks.values())).name
            session.emit(
                Event(
                    kind=kind,
                    namespace=job.namespace,
                    name=name,
                    reason="Reserved",
                    message=text,
                    type="Normal",
                )
            )
