"""Open a session on a snapshot, run the actions, close it, and render what users read.

``run_session(snapshot, config, on_binds=...)`` is the one entry point the operator, the simulator and
the benchmarks share. Besides binds and evictions it renders PodGroup and Queue status and the events
that say why a pod is pending, from the refusals (:class:`~volsched.framework.decisions.Status`) the actions and plugins
recorded as data; the data goes along in ``SessionResult.rejections``.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import field
from operator import attrgetter

from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import (
    Code,
    Event,
    PodGroupStatus,
    QueueStatus,
    SessionResult,
    Status,
    StatusDelta,
    render,
)
from volsched.framework.never import NEVER, TOLD, Refused, job_never, never_asks
from volsched.framework.registry import PluginsAhead, make_actions, make_plugins, placement_gap
from volsched.framework.session import Action, BindSink, Session
from volsched.model import admitted
from volsched.model.cluster import RETURNED, ClusterSnapshot, Job
from volsched.model.vocabulary import PodGroupPhase, QueueState, TaskStatus
from volsched.records import dataclass

#: A Queue's status while it is closed and jobs still hold it (Volcano's name for it).
CLOSING = "Closing"


def open_session(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    *,
    may_evict: bool | None = None,
    on_binds: BindSink | None = None,
    plugins: PluginsAhead | None = None,
) -> Session:
    """A session on ``snapshot``. When it may evict (by default: when one of the config's actions
    declares ``evicts``, or does not say), it takes its own copies of the tasks the snapshot shares.
    ``on_binds``, ``plugins``: see :func:`run_session`."""
    if may_evict is None:
        may_evict = _may_evict(make_actions(config))
    started = time.perf_counter()
    if may_evict:
        snapshot.thaw()
    thawed = time.perf_counter() - started
    made = plugins.plugins if plugins is not None and plugins.config is config else make_plugins(config)
    session = Session(snapshot, config, list(made), on_binds=on_binds)
    if may_evict:
        session.result.timings["open:thaw"] = thawed
    timings = session.result.timings
    clock = time.perf_counter
    for plugin in session.plugins:
        # (timed inline, as Session.timed times: a closure and a label made per plugin and session were
        # a fixed cost of every session, an arriving pod's on its way to its bind)
        label = _label(plugin.name, ":open")
        start = clock()
        try:
            plugin.on_session_open(session)
        finally:
            timings[label] = timings.get(label, 0.0) + clock() - start
    return session


#: ``plugin:<name><what>`` per plugin name and what is timed (a few dozen labels, made once).
_LABELS: dict[tuple[str, str], str] = {}


def _label(name: str, what: str) -> str:
    out = _LABELS.get((name, what))
    if out is None:
        out = _LABELS[(name, what)] = f"plugin:{name}{what}"
    return out


def close_session(session: Session) -> SessionResult:
    phases: dict[str, PodGroupPhase] = {}
    waiting: list[Job] = []
    session.timed("close:never", lambda: _tell_never(session))
    session.timed("close:status", lambda: phases.update(_render_status(session, waiting)))
    timings = session.result.timings
    clock = time.perf_counter
    for plugin in session.plugins:
        label = _label(plugin.name, ":close")
        start = clock()
        try:
            plugin.on_session_close(session)
        finally:
            timings[label] = timings.get(label, 0.0) + clock() - start
    session.timed("close:events", lambda: _render_events(session, phases, waiting))
    session.keep_views()
    # (the jobs it ends with: the next snapshot lends a pod standing alone that no session changed again
    # as its very job, reset)
    session.snapshot.kept[RETURNED] = session.jobs
    return session.result


def run_session(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    *,
    on_binds: BindSink | None = None,
    plugins: PluginsAhead | None = None,
) -> SessionResult:
    """Run a session on ``snapshot``. ``on_binds`` (optional) takes each commit's binds as it is made,
    while the session goes on (see :class:`~volsched.framework.session.Session`); the result lists
    them all the same. ``plugins`` (optional): plugins made ahead (``make_plugins_ahead(config)``, never
    opened), so that the session does not make them on its way to its first bind; they serve this
    session only, and only if made from this very ``config`` object (else it makes its own)."""
    start = time.perf_counter()
    actions = make_actions(config)
    session = open_session(
        snapshot, config, may_evict=_may_evict(actions), on_binds=on_binds, plugins=plugins
    )
    try:
        for action in actions:
            session.timed(f"action:{action.name}", lambda a=action: a.execute(session))  # type: ignore[misc]
        result = close_session(session)
    finally:
        session.release()  # (reference cycles: see Session.release)
    result.timings["session"] = time.perf_counter() - start
    return result


def _may_evict(actions: Iterable[Action]) -> bool:
    return any(getattr(action, "evicts", True) for action in actions)


def _phase(
    job_phase: PodGroupPhase, *, ready: int, min_member: int, succeeded: int, total: int
) -> PodGroupPhase:
    if total and succeeded == total and succeeded >= min_member:
        return PodGroupPhase.COMPLETED
    if ready >= min_member:
        return PodGroupPhase.RUNNING
    if job_phase in (PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN) and ready > 0:
        return PodGroupPhase.UNKNOWN
    if job_phase in (PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN, PodGroupPhase.COMPLETED):
        return PodGroupPhase.PENDING
    return job_phase


StatusCounts = tuple[PodGroupPhase, str, int, int, int, int, int]


def _status_counts(job: Job) -> StatusCounts:
    """A job's phase after this session (and its name), and its running, succeeded, failed, pending
    (and pipelined) and scheduled tasks; kept on a shared job for the next snapshot that shares it."""
    if job.shared:
        memo: StatusCounts | None = job.memo.get("status")
        if memo is not None:
            return memo
    phase, pending = _phase_and_pending(job)
    count = job.status_count.get
    out = (
        phase,
        _PHASE_NAMES[phase],
        count(TaskStatus.RUNNING, 0),
        count(TaskStatus.SUCCEEDED, 0),
        count(TaskStatus.FAILED, 0),
        pending,
        job.scheduled_count,
    )
    if job.shared:
        job.memo["status"] = out
    return out


#: Each phase's name (``PodGroupPhase.value`` is a Python-level property: a dict lookup costs less).
_PHASE_NAMES = {phase: phase.value for phase in PodGroupPhase}


def _phase_and_pending(job: Job) -> tuple[PodGroupPhase, int]:
    """A job's phase after this session and its pending (and pipelined) tasks: what ``_status_counts``
    says of them, all a job without a PodGroup needs (counters read with ``get``: a Counter's missing
    key is a Python-level call)."""
    c = job.status_count
    phase = _phase(
        job.phase,
        ready=job.ready_count,
        min_member=job.min_member,
        succeeded=c.get(TaskStatus.SUCCEEDED, 0),
        total=sum(c.values()),
    )
    return phase, c.get(TaskStatus.PENDING, 0) + c.get(TaskStatus.PIPELINED, 0)


def _render_status(session: Session, waiting_jobs: list[Job]) -> dict[str, PodGroupPhase]:
    """PodGroup and Queue status into the result; returns the phase after this session of each job with
    a PodGroup but those of the settled run without a refusal, which have nothing to say (computed,
    never written into the Job: the result carries it, the driver writes it back; a pod standing alone
    has no phase to write nor to speak of), and appends to ``waiting_jobs`` the jobs with tasks pending,
    in the jobs' order.

    The sums per queue and per namespace are the ledger's. The PodGroups of the jobs no session changes
    (the ledger's settled run: nothing pending there) keep their status from the last session; one pass
    over the other jobs gathers the rest: with many bound pods that stand alone, each its own job, a
    pass over every job would cost every session for nothing."""
    result = session.result
    space = session.space
    phases: dict[str, PodGroupPhase] = {}
    errors = session.job_errors
    queue_names = sorted(session.queues)
    queue_row = {name: i for i, name in enumerate(queue_names)}
    counts: list[dict[str, int]] = [{} for _ in queue_names]

    positions = queue_positions(session)

    def podgroup_status(job: Job, q: int | None) -> int:
        """The job's PodGroup status into the result; its pending (and pipelined) tasks."""
        fresh.append(job.key)
        counted = _status_counts(job)
        phase, phase_name, pending = counted[0], counted[1], counted[5]
        phases[job.key] = phase
        if q is not None:
            tally = counts[q]
            tally[phase_name] = tally.get(phase_name, 0) + 1
        rejections = tuple(errors.get(job.key, ())) if phase is not PodGroupPhase.RUNNING else ()
        position = positions.get(job.key)
        if not rejections and position is None:
            status = _plain_status(job, counted)
        else:
            status = _new_status(job, counted, rejections=rejections, position=position)
        result.podgroups[job.key] = status
        return pending

    ledger = session.ledger
    run = ledger.settled().podgroups  # nothing pending in the run: no place in line
    (statuses, _, run_counts), fresh, since, now = _settled_statuses(run, session.snapshot.kept)
    result.podgroups.update(statuses)
    for (queue, name), n in run_counts.items():
        q = queue_row.get(queue)
        if q is not None:
            counts[q][name] = counts[q].get(name, 0) + n
    for key in errors.keys() & statuses.keys():  # refusals said of a job of the run: not plain
        job = session.jobs.get(key)
        if job is not None and job.podgroup is not None:
            podgroup_status(job, None)
    pipelined_status = TaskStatus.PIPELINED
    pending_status = TaskStatus.PENDING
    waiting = 0
    for job in ledger.unsettled():
        if job.podgroup is None:  # a pod standing alone: no PodGroup status to write, no phase to speak of
            c = job.status_count
            pipelined = c.get(pipelined_status, 0)
            pending = c.get(pending_status, 0)
            if pending:
                waiting_jobs.append(job)
            if pending + pipelined:
                waiting += 1
                result.pipelined += pipelined
        elif podgroup_status(job, queue_row.get(job.queue)):
            if job.status_count.get(pending_status):
                waiting_jobs.append(job)
            waiting += 1
            result.pipelined += job.status_count.get(pipelined_status, 0)
    result.waiting = waiting
    result.podgroups_delta = StatusDelta(since=since, now=now, keys=fresh)
    allocated_of = ledger.held_by_queue()
    request_of = ledger.asked_by_queue()
    never = never_asks(session)  # (no share is theirs: not shown asked)
    if never:
        request_of = {q: v - never[q] if q in never else v for q, v in request_of.items()}
    ns_allocated = ledger.held_by_namespace()
    for q, name in enumerate(queue_names):
        spec = session.queues[name]
        allocated = allocated_of.get(name)
        request = request_of.get(name)
        # Closed but still holding jobs (a PodGroup not completed, or pods on nodes): Closing.
        closing = spec.state is QueueState.CLOSED and (
            any(n for phase, n in counts[q].items() if phase != PodGroupPhase.COMPLETED)
            or (allocated is not None and bool((allocated > 0).any()))
        )
        result.queues[name] = QueueStatus(
            name=name,
            state=CLOSING if closing else spec.state.value,
            weight=spec.weight,
            allocated=space.to_dict(space.zeros() if allocated is None else allocated),
            request=space.to_dict(space.zeros() if request is None else request),
            guarantee=dict(spec.guarantee),
            capability=None if spec.capability is None else dict(spec.capability),
            podgroups=dict(sorted(counts[q].items())),  # (by phase name: the run's order is no order)
            ignored=spec.ignored,
        )
    for ns in sorted(ns_allocated.keys() | session.snapshot.namespace_weights.keys()):
        ns_held = ns_allocated.get(ns)
        result.namespaces[ns] = {
            "weight": session.snapshot.namespace_weight(ns),
            "allocated": space.to_dict(space.zeros() if ns_held is None else ns_held),
        }
    return phases


def _new_status(
    job: Job, counted: StatusCounts, *, rejections: tuple[Status, ...], position: int | None
) -> PodGroupStatus:
    phase, phase_name, running, succeeded, failed, pending, scheduled = counted
    pg = job.podgroup
    assert pg is not None
    # The minMember it started with, which a raise does not move (a group standing for an owner's pods
    # has no object to keep it on: its pods' min-member is fixed at their creation).
    kept = (
        None
        if pg.owner is not None
        else admitted.after_session(
            pg.admitted_min_member, min_member=job.min_member, phase=phase, ready=job.ready
        )
    )
    return PodGroupStatus(
        phase=phase_name,
        queue=job.queue,
        min_member=job.min_member,
        running=running,
        succeeded=succeeded,
        failed=failed,
        pending=pending,
        scheduled=scheduled,
        rejections=rejections,
        owner=pg.owner.title if pg.owner is not None else "",
        queue_position=position,
        ignored=pg.ignored,
        admitted_min_member=kept,
    )


def _plain_status(job: Job, counted: StatusCounts) -> PodGroupStatus:
    """The status of a job with no refusal and no place in line (kept on a shared job: the same for
    every session that shares it)."""
    status: PodGroupStatus | None = job.memo.get("podgroup") if job.shared else None
    if status is None:
        status = _new_status(job, counted, rejections=(), position=None)
        if job.shared:
            job.memo["podgroup"] = status
    return status


_QUEUE: attrgetter[str] = attrgetter("queue")
_KEY: attrgetter[str] = attrgetter("key")
_PODGROUP: attrgetter[object] = attrgetter("podgroup")
#: Where the plain statuses of the settled run's PodGroups are kept (``ClusterSnapshot.kept``).
RENDERED = "rendered"


@dataclass
class _Rendered:
    """Plain statuses and phases by job key, with the job each was rendered from; what the last
    session's run came to (``run``: its PodGroups' jobs, in order, and ``members``: the same as a set),
    brought to the next run by the jobs that left it and joined it; and what the last result was
    (``token``: its ``StatusDelta.now``)."""

    jobs: dict[str, Job] = field(default_factory=dict)
    statuses: dict[str, PodGroupStatus] = field(default_factory=dict)
    phases: dict[str, PodGroupPhase] = field(default_factory=dict)
    run: list[Job] | None = None
    members: set[Job] = field(default_factory=set)
    out: _RunStatuses | None = None
    token: object | None = None


_RunStatuses = tuple[dict[str, PodGroupStatus], dict[str, PodGroupPhase], Counter[tuple[str, str]]]


def _settled_statuses(
    run: list[Job], kept: dict[str, object]
) -> tuple[_RunStatuses, list[str], object, object]:
    """The plain status (:func:`_plain_status`) and the phase of each PodGroup of the settled run
    (``run``: shared jobs, in order), by key, and how many of the run's PodGroups each (queue, phase
    name) has. Kept in ``kept`` with the job each was rendered from for the next session (a shared job
    never changes: the object is the version), so a session renders only the jobs new to the run; and
    what the last session's run came to is brought to this one by the jobs that left it and joined it
    (found with two passes in C over sets of the runs' jobs), not made again for 1,000+ jobs. The maps
    are in no useful order; the caller reads them, never changes them (the next session does).

    Also the keys of the run's jobs that joined it (a job that stayed is the very object the last
    result's status came from, so its phase there is its phase now), and the last result's token and
    this one's (:class:`~volsched.framework.decisions.StatusDelta`)."""
    memo = kept.get(RENDERED)
    if not isinstance(memo, _Rendered):
        memo = _Rendered()
    kept[RENDERED] = memo
    since, now = memo.token, object()
    memo.token = now
    last, out = memo.run, memo.out
    if out is None or last is None:
        out = memo.out = ({}, {}, Counter())
        joined, memo.members = run, set(run)
    elif run is last:
        return out, [], since, now
    elif len(run) > len(last) and run[: len(last)] == last:  # (by identity: a Job has no __eq__)
        joined = run[len(last) :]
        memo.members.update(joined)
    else:
        before, members = memo.members, set(run)
        statuses, phases, counts = out
        for job in itertools.filterfalse(members.__contains__, last):  # left the run (keys are unique)
            key = job.key
            counts[job.queue, _PHASE_NAMES[phases.pop(key)]] -= 1
            del statuses[key]
        for pair in [pair for pair, n in counts.items() if not n]:
            del counts[pair]
        joined, memo.members = list(itertools.filterfalse(before.__contains__, run)), members
    statuses, phases, counts = out
    for job in joined:
        status, phase = _kept_status(memo, job)
        statuses[job.key], phases[job.key] = status, phase
        counts[job.queue, _PHASE_NAMES[phase]] += 1
    memo.run = run
    jobs = memo.jobs
    if len(jobs) > 2 * len(run) + 64:  # the jobs that left the run, dropped now and then
        keys = list(map(_KEY, run))
        memo.jobs = {k: jobs[k] for k in keys}
        memo.statuses = {k: memo.statuses[k] for k in keys}
        memo.phases = {k: memo.phases[k] for k in keys}
    return out, list(map(_KEY, joined)), since, now


def _kept_status(memo: _Rendered, job: Job) -> tuple[PodGroupStatus, PodGroupPhase]:
    """The plain status and phase of ``job`` (shared), rendered once and kept in ``memo`` by its key."""
    key = job.key
    if memo.jobs.get(key) is job:
        return memo.statuses[key], memo.phases[key]
    counted = _status_counts(job)
    status = _plain_status(job, counted)
    memo.jobs[key], memo.statuses[key], memo.phases[key] = job, status, counted[0]
    return status, counted[0]


def queue_positions(session: Session) -> dict[str, int]:
    """Where each job waiting to start (short of minMember, a pod pending) stands in its queue (1: next),
    among those jobs of the queue, in the session's job order as it stands at the close (what the next
    session starts from). A running job with more pods pending waits for nothing to start: not in line."""
    pending = session.pending_jobs()
    if not any(map(_PODGROUP, pending)):  # (pods standing alone only, thousands set aside: none in line)
        return {}
    by_queue: dict[str, list[Job]] = {}
    grouped: set[str] = set()  # the queues with a PodGroup in line: only a PodGroup's status says it
    for job in pending:
        if job.ready_count < job.min_member:
            by_queue.setdefault(job.queue, []).append(job)
            if job.podgroup is not None:
                grouped.add(job.queue)
    if not grouped:
        return {}
    keys = session.job_keys()
    out: dict[str, int] = {}
    for name, jobs in by_queue.items():
        if name not in grouped:
            continue
        order = keys(jobs)
        ranked = sorted(range(len(jobs)), key=order.__getitem__)
        out.update((jobs[k].key, n) for n, k in enumerate(ranked, 1))
    return out


def _tell_never(session: Session) -> None:
    """Put first among the refusals of each gang short of minMember, and of each pending pod standing
    alone, the reason it can never run as it stands, when there is one: its condition, its event and its
    pods' then say so before the numbers (of a pod standing alone, the same refusal object from one
    session to the next while the nodes are the same, which the close's kept words of a pod set aside
    compare by identity)."""
    jobs = session.jobs
    said: dict[str, Status] | None = None
    for key, statuses in session.job_errors.items():
        job = jobs.get(key)
        if job is None or not statuses:
            continue
        verdict = job_never(session, job)
        if verdict is None:
            continue
        if said is None:
            said = session.nodes.memo.setdefault(_NEVER_SAID, {})
        status = said.get(verdict)
        if status is None:
            status = said[verdict] = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gang", (f"{NEVER}: {verdict}",)
            )
        statuses.insert(0, status)


#: Where :func:`_tell_never` keeps its refusals by their words, with a node table (its memo).
_NEVER_SAID = "never: said"


def _render_events(session: Session, phases: dict[str, PodGroupPhase], waiting: list[Job]) -> None:
    """Events and refusals for the jobs with tasks pending (``waiting``, as :func:`_render_status` found
    them) or refusals recorded, by job key; a Normal ``Scheduled`` event for each PodGroup this session
    took to minMember placed (its last event is then no longer the Unschedulable warning before)."""
    result = session.result
    for key, nodes in sorted(result.bound_jobs.items()):
        status = result.podgroups.get(key)
        if status is None or not status.min_member <= status.scheduled < status.min_member + len(nodes):
            continue
        ns, _, name = key.partition("/")
        where = ", ".join(sorted(set(nodes)))
        result.events.append(
            Event(
                kind="PodGroup",
                namespace=ns,
                name=name,
                reason="Scheduled",
                message=f"{status.scheduled} of {status.min_member} minimum member(s) placed "
                f"({len(nodes)} bound this time, on {where})",
                type="Normal",
            )
        )
    for obj, reason, message in session.snapshot.problems:
        kind, _, ref = obj.partition(" ")
        ns, _, name = ref.rpartition("/")
        result.events.append(Event(kind=kind, namespace=ns, name=name, reason=reason, message=message))
        # A pending pod cannot be scheduled either: its PodScheduled condition says why. One on a node is
        # told, and no more: not one this session could not place.
        if kind == "Pod" and obj not in session.snapshot.problems_on_node:
            result.rejections[obj] = (Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "snapshot", (message,)),)
    errors = session.job_errors
    # A config that places nothing (no allocate) says so on every pod it leaves pending.
    missing = placement_gap(session.config)
    gap = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "config", (missing,)) if missing else None
    # Only a job with pending tasks or refusals has anything to say: no need to walk every job again.
    jobs = session.jobs
    speaking = dict(zip(map(_KEY, waiting), waiting, strict=True))
    for key in errors.keys() - speaking.keys():
        job = jobs.get(key)
        if job is not None:
            speaking[key] = job
    # Pods standing alone that were set aside say what the last session said of them, from the same
    # refusals: what it rendered is taken again while those are the very objects it rendered from (a
    # session's thousands of them: each a few lookups and identity tests here).
    told: dict[str, Refused] = session.state.get(TOLD) or {}
    kept = session.snapshot.kept
    said_before = kept.pop(SAID, None)
    if not isinstance(said_before, dict):
        said_before = {}
    said: dict[str, _Said] = {}
    fit_errors, rejections, events = session.fit_errors, result.rejections, result.events
    pending = TaskStatus.PENDING
    for key in sorted(speaking):  # (a job's key is its key in ``speaking``: in the order of the jobs' keys)
        job = speaking[key]
        refused = told.get(key)
        if refused is not None and job.podgroup is None and len(job.tasks) == 1:
            ((pod_key, task),) = job.tasks.items()
            fit = fit_errors.get(pod_key)
            job_statuses = errors.get(key)
            first = job_statuses[0] if job_statuses else None
            if fit is not None and task.status is pending and task.schedulable_by_us:
                memo = said_before.get(key)
                if (
                    memo is not None
                    and memo.refused is refused
                    and memo.fit is fit
                    and memo.first is first
                    and memo.gap == gap
                ):
                    if memo.event is not None:
                        rejections[memo.pod] = memo.statuses
                        events.append(memo.event)
                    said[key] = memo
                    continue
                before = len(events)
                _job_events(session, job, phases, gap)
                made = events[before:]
                pod = f"Pod {pod_key}"
                said[key] = _Said(
                    refused, fit, first, gap, rejections.get(pod, ()), made[0] if made else None, pod
                )
                continue
        _job_events(session, job, phases, gap)
    if said:
        kept[SAID] = said


#: Where the close keeps what it said of the pods standing alone that were set aside (``ClusterSnapshot.kept``).
SAID = "set aside: said"


@dataclass(frozen=True, slots=True)
class _Said:
    """What the close said of a pod standing alone, set aside (its refusal and event: ``statuses`` and
    ``event``, None when it said nothing), and the objects it said it from: the gang's last try
    (``refused``), the pod's refusal, the first of its job's, and the config's gap."""

    refused: Refused
    fit: Status
    first: Status | None
    gap: Status | None
    statuses: tuple[Status, ...]
    event: Event | None
    #: The pod's refusal's key in ``SessionResult.rejections`` (``Pod <key>``).
    pod: str


def _job_events(session: Session, job: Job, phases: dict[str, PodGroupPhase], gap: Status | None) -> None:
    """The refusals and events of ``job`` (see :func:`_render_events`)."""
    result = session.result
    pending = [t for t in job.pending_tasks() if t.schedulable_by_us]
    job_statuses = session.job_errors.get(job.key, [])
    # (one tuple and one rendering of the job's refusals, for its PodGroup and each pod they are said
    # of: a backlog's waiting job says the same words on its PodGroup and on its one pod)
    said = tuple(job_statuses)
    job_reason = render(said) or None
    on_group = False
    if job.podgroup is not None and job_reason and phases[job.key] is not PodGroupPhase.RUNNING:
        # A gang refused as invalid (too few of its pods exist yet, a queue it may not use) is
        # refused whole, its pods never tried: said once on its PodGroup, not again on each pod (a
        # 1,000-pod gang whose pods the watch delivers in pieces would get a condition and an
        # event per pod a moment before it is whole), as Volcano says an invalid job's reason.
        invalid = session.job_valid(job)
        on_group = gap is None and invalid is not None and invalid in job_statuses
        result.rejections[f"PodGroup {job.key}"] = said
        result.events.append(
            Event(
                kind="PodGroup",
                namespace=job.namespace,
                name=job.name,
                reason="Unschedulable",
                message=job_reason,
            )
        )
    for task in sorted(pending, key=lambda t: t.key):
        fit = session.fit_errors.get(task.key)
        if fit is None and on_group:
            continue
        statuses = (fit,) if fit is not None else said
        if (
            fit is not None
            and job_statuses
            and job_statuses[0].reasons[:1]
            and (job_statuses[0].reasons[0].startswith(NEVER))
        ):
            statuses = (job_statuses[0], fit)  # the pod's own numbers, after the gang's "never"
        if gap is not None:
            statuses = (gap, *statuses)
        why = (job_reason or "") if statuses is said else render(statuses)
        if not why:
            continue
        result.rejections[f"Pod {task.key}"] = statuses
        result.events.append(
            Event(
                kind="Pod",
                namespace=task.namespace,
                name=task.name,
                reason="FailedScheduling",
                message=why,
                podgroup=job.key if job.podgroup is not None else "",
            )
        )
