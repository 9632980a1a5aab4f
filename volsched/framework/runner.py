"""Open a session on a snapshot, run the actions, close it, and render what users read.

``run_session(snapshot, config, on_binds=...)`` is the one entry point the operator, the simulator and
the benchmarks share. Besides binds and evictions it renders PodGroup and Queue status and the events
that say why a pod is pending, from the refusals (:class:`~volsched.framework.decisions.Status`) the actions and plugins
recorded as data; the data goes along in ``SessionResult.rejections``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np

from volsched.framework.config import SchedulerConfig
from volsched.framework.decisions import (
    Code,
    Event,
    PodGroupStatus,
    QueueStatus,
    SessionResult,
    Status,
    render,
)
from volsched.framework.registry import make_actions, make_plugins
from volsched.framework.session import Action, BindSink, Session
from volsched.model.cluster import ClusterSnapshot, Job, sum_rows
from volsched.model.resources import Vector, stack_rows
from volsched.model.vocabulary import PodGroupPhase, TaskStatus


def open_session(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    *,
    may_evict: bool | None = None,
    on_binds: BindSink | None = None,
) -> Session:
    """A session on ``snapshot``. When it may evict (by default: when one of the config's actions
    declares ``evicts``, or does not say), it takes its own copies of the tasks the snapshot shares.
    ``on_binds``: see :func:`run_session`."""
    if may_evict is None:
        may_evict = _may_evict(make_actions(config))
    started = time.perf_counter()
    if may_evict:
        snapshot.thaw()
    thawed = time.perf_counter() - started
    session = Session(snapshot, config, make_plugins(config), on_binds=on_binds)
    if may_evict:
        session.result.timings["open:thaw"] = thawed
    for plugin in session.plugins:
        session.timed(f"plugin:{plugin.name}:open", lambda p=plugin: p.on_session_open(session))  # type: ignore[misc]
    return session


def close_session(session: Session) -> SessionResult:
    phases: dict[str, PodGroupPhase] = {}
    waiting: list[Job] = []
    session.timed("close:status", lambda: phases.update(_render_status(session, waiting)))
    for plugin in session.plugins:
        session.timed(f"plugin:{plugin.name}:close", lambda p=plugin: p.on_session_close(session))  # type: ignore[misc]
    session.timed("close:events", lambda: _render_events(session, phases, waiting))
    return session.result


def run_session(
    snapshot: ClusterSnapshot, config: SchedulerConfig, *, on_binds: BindSink | None = None
) -> SessionResult:
    """Run a session on ``snapshot``. ``on_binds`` (optional) takes each commit's binds as it is made,
    while the session goes on (see :class:`~volsched.framework.session.Session`); the result lists
    them all the same."""
    start = time.perf_counter()
    actions = make_actions(config)
    session = open_session(snapshot, config, may_evict=_may_evict(actions), on_binds=on_binds)
    for action in actions:
        session.timed(f"action:{action.name}", lambda a=action: a.execute(session))  # type: ignore[misc]
    result = close_session(session)
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
    a PodGroup (computed, never written into the Job: the result carries it, the driver writes it back;
    a pod standing alone has no phase to write nor to speak of), and appends to ``waiting_jobs`` the jobs
    with tasks pending, in the jobs' order.

    One pass over the jobs gathers what the sums per queue and per namespace need: at 10,000 bound pods
    that stand alone, each its own job, every pass costs every session a few milliseconds."""
    result = session.result
    space = session.space
    phases: dict[str, PodGroupPhase] = {}
    errors = session.job_errors
    queue_names = sorted(session.queues)
    queue_row = {name: i for i, name in enumerate(queue_names)}
    ns_row: dict[str, int] = {}
    jobs = list(session.jobs.values())
    held_rows: list[Vector] = []
    job_ns: list[int] = []
    in_queue: list[int] = []  # the jobs of a known queue, by their index in ``jobs``
    job_queue: list[int] = []  # and their queue's row
    asking: list[int] = []  # of those, by their index in ``in_queue``: the jobs with tasks pending
    counts: list[dict[str, int]] = [{} for _ in queue_names]
    pipelined_status = TaskStatus.PIPELINED
    pending_status = TaskStatus.PENDING
    waiting = 0
    for i, job in enumerate(jobs):
        held_rows.append(job.allocated)
        ns = job.namespace
        row = ns_row.get(ns)
        if row is None:
            row = ns_row[ns] = len(ns_row)
        job_ns.append(row)
        q = queue_row.get(job.queue)
        if q is not None:
            in_queue.append(i)
            job_queue.append(q)
        pg = job.podgroup
        if pg is None:  # a pod standing alone: no PodGroup status to write, no phase to speak of
            c = job.status_count
            pipelined = c.get(pipelined_status, 0)
            pending = c.get(pending_status, 0)
            if pending:
                waiting_jobs.append(job)
            if pending + pipelined:
                waiting += 1
                result.pipelined += pipelined
                if q is not None:
                    asking.append(len(in_queue) - 1)
            continue
        phase, phase_name, running, succeeded, failed, pending, scheduled = _status_counts(job)
        phases[job.key] = phase
        if pending:
            if job.status_count.get(pending_status):
                waiting_jobs.append(job)
            waiting += 1
            result.pipelined += job.status_count.get(pipelined_status, 0)
            if q is not None:
                asking.append(len(in_queue) - 1)
        if q is not None:
            tally = counts[q]
            tally[phase_name] = tally.get(phase_name, 0) + 1
        rejections = tuple(errors.get(job.key, ())) if phase is not PodGroupPhase.RUNNING else ()
        status: PodGroupStatus | None = job.memo.get("podgroup") if job.shared and not rejections else None
        if status is None:
            status = PodGroupStatus(
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
            )
            if job.shared and not rejections:  # the same for every session that shares the job
                job.memo["podgroup"] = status
        result.podgroups[job.key] = status
    result.waiting = waiting
    # Sums over jobs per queue and per namespace, each in the jobs' order (one row at a time, in order,
    # as a loop would: see sum_rows).
    ns_names = sorted(ns_row)
    ns_index = {ns: i for i, ns in enumerate(ns_names)}
    # a namespace's row in the order first seen -> its row in name order
    ns_rank = np.fromiter((ns_index[ns] for ns in ns_row), np.intp, len(ns_row))
    allocated = np.zeros((len(queue_names), len(space)))
    request = np.zeros((len(queue_names), len(space)))
    ns_allocated = np.zeros((len(ns_names), len(space)))
    if jobs:
        job_allocated = stack_rows(held_rows, len(space))
        ns_allocated = sum_rows(job_allocated, ns_rank[np.asarray(job_ns, np.intp)], len(ns_names))
        if in_queue:
            rows = np.asarray(job_queue, np.intp)
            # every job in a known queue (the usual case): no copy; the rows are not read after this
            held = job_allocated if len(in_queue) == len(jobs) else job_allocated[in_queue]
            allocated = sum_rows(held, rows, len(queue_names))
            for k in asking:  # a job with nothing pending requests what it holds
                held[k] = jobs[in_queue[k]].total_request()
            request = sum_rows(held, rows, len(queue_names))
    for q, name in enumerate(queue_names):
        spec = session.queues[name]
        result.queues[name] = QueueStatus(
            name=name,
            state=spec.state.value,
            weight=spec.weight,
            allocated=space.to_dict(allocated[q]),
            request=space.to_dict(request[q]),
            guarantee=dict(spec.guarantee),
            capability=None if spec.capability is None else dict(spec.capability),
            podgroups=counts[q],
        )
    for ns in sorted(set(ns_names) | set(session.snapshot.namespace_weights)):
        result.namespaces[ns] = {
            "weight": session.snapshot.namespace_weight(ns),
            "allocated": space.to_dict(ns_allocated[ns_index[ns]] if ns in ns_index else space.zeros()),
        }
    return phases


def _render_events(session: Session, phases: dict[str, PodGroupPhase], waiting: list[Job]) -> None:
    """Events and refusals for the jobs with tasks pending (``waiting``, as :func:`_render_status` found
    them) or refusals recorded, by job key."""
    result = session.result
    for obj, reason, message in session.snapshot.problems:
        kind, _, ref = obj.partition(" ")
        ns, _, name = ref.rpartition("/")
        result.events.append(Event(kind=kind, namespace=ns, name=name, reason=reason, message=message))
        if kind == "Pod":  # it cannot be scheduled either: its PodScheduled condition says why
            result.rejections[obj] = (Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "snapshot", (message,)),)
    errors = session.job_errors
    # Only a job with pending tasks or refusals has anything to say: no need to walk every job again.
    jobs = session.jobs
    speaking = {j.key: j for j in waiting}
    for key in errors:
        if key not in speaking and key in jobs:
            speaking[key] = jobs[key]
    for job in sorted(speaking.values(), key=lambda j: j.key):
        pending = [t for t in job.pending_tasks() if t.schedulable_by_us]
        job_statuses = session.job_errors.get(job.key, [])
        job_reason = render(job_statuses) or None
        if job.podgroup is not None and job_reason and phases[job.key] is not PodGroupPhase.RUNNING:
            result.rejections[f"PodGroup {job.key}"] = tuple(job_statuses)
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
            why = fit.render() if fit is not None else job_reason
            if not why:
                continue
            result.rejections[f"Pod {task.key}"] = (fit,) if fit is not None else tuple(job_statuses)
            result.events.append(
                Event(
                    kind="Pod",
                    namespace=task.namespace,
                    name=task.name,
                    reason="FailedScheduling",
                    message=why,
                )
            )
