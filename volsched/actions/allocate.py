"""allocate: place pending tasks of admitted jobs, queue by queue, namespace by namespace, job by job.

Each turn takes the queue that comes first in queue order (an overused queue is skipped for the rest
of the session), inside it the namespace that comes first in namespace order, inside that the job that
comes first in job order, and places that job's tasks in task order through one Statement: committed
when the gang is ready, held if it is only pipelined, discarded otherwise. A task that fits no node (or
that the queue refuses) does not end the turn: the job's other tasks are tried while minMember can
still be reached with them. A job that became ready with tasks left is pushed back, so orders are
re-evaluated after every job turn.

A PodGroup with ``spec.topology`` is placed in one topology domain (see ``volsched.actions.topology``).

Tasks without requests are left to backfill.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.actions import kept
from volsched.actions.topology import place_in_domain
from volsched.actions.util import JobQueue, NamespaceOrder, TaskQueue, first_queue
from volsched.framework.decisions import Code, Status
from volsched.framework.never import TOLD, Refused, leave_aside, lone_never, take_aside, tell_aside
from volsched.framework.registry import register_action
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.cluster import Job
from volsched.model.vocabulary import PodGroupPhase, QueueSpec, Task, TaskStatus

PENDING = TaskStatus.PENDING


def _fit_key(task: Task) -> tuple[object, ...]:
    """Tasks with equal keys fit the same nodes at the same moment (request, placement spec, and what
    pod affinity, anti-affinity and spread read: the pod's constraints and its labels)."""
    return (task.request.tobytes(), task.placement_key, task.constraints, tuple(sorted(task.labels.items())))


def gang_message(job: Job, reason: Status | None, *, action: str) -> Status:
    """Why a gang was not placed: how far it got, then why its last task did not fit."""
    head = f"gang {job.title}: {job.ready_count}/{job.min_member} tasks could be placed (minMember {job.min_member})"
    return reason.about(head) if reason else Status(Code.UNSCHEDULABLE, action, (head,))


def admitted_jobs(session: Session, *, best_effort: bool) -> list[Job]:
    """Admitted jobs with a pending task of the given kind, valid and in a queue that exists (the
    others refused), in the order ``pending_jobs`` gives. Their validity is asked for all of them at
    once (``jobs_valid``: enqueue asked it of a backlog's every job already, kept)."""
    action = "backfill" if best_effort else "allocate"
    kept.take(session)
    admitted_only = PodGroupPhase.PENDING
    queues = session.queues
    # The pods standing alone that this session's allocate told what their last try found (set aside
    # by the last session, untouched since: the very pod, which that try found not best-effort) have no
    # best-effort task pending: not asked again, one lookup each (thousands, every session).
    told: dict[str, Refused] = (session.state.get(TOLD) or {}) if best_effort else {}
    kind: list[Job] = []
    for job in session.pending_jobs():
        if told and job.key in told and job.podgroup is None:
            continue
        if job.phase is admitted_only or not _has_pending(job, best_effort=best_effort):
            continue
        if job.queue not in queues:
            missing = session.snapshot.absent("Queue", job.queue)
            session.reject(job, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, action, (missing,)))
            continue
        kind.append(job)
    out: list[Job] = []
    for job, invalid in zip(kind, session.jobs_valid(kind), strict=True):
        if invalid:
            session.reject(job, invalid)
        else:
            out.append(job)
    return out


def _nodes_refuse(session: Session, job: Job) -> bool:
    """For a pod standing alone that can never run as it stands (``lone_never``), refused by its queue's
    share before any node was asked (it asks its queue no share, so its queue may have none for it):
    record why the nodes refuse it instead, asked of the nodes as a try would (placing nothing), so it
    is told what keeps it off every node, not of a share it could never use. True when they refuse it;
    False (the share's refusal stands) for any other job, or should a node take it after all."""
    if job.podgroup is not None or lone_never(session, job) is None:
        return False
    for task in job.tasks.values():
        choice = session.choose_node(task)
        if choice.node is not None:
            return False
        session.record_fit_error(task, Status(Code.UNSCHEDULABLE, Allocate.name, (choice.reason,)))
    return True


def _has_pending(job: Job, *, best_effort: bool) -> bool:
    """Whether a task of ``job`` ours to schedule is pending and of the given kind."""
    for t in job.tasks.values():
        if t.status is PENDING and t.best_effort is best_effort and t.schedulable_by_us:
            return True
    return False


def _admitted_by_queue(
    session: Session, aside: dict[str, Refused], told: dict[str, Refused]
) -> dict[str, dict[str, list[Job]]]:
    """The admitted jobs with a task pending, by queue and namespace (each in the order first seen),
    for allocate: those of a queue that does not exist are refused here, those set aside (``aside``, see
    ``volsched.framework.never``) are told what their last try found and not tried (into ``told``), and whether a job
    has a pending task allocate places (not a best-effort one) and is valid is asked when its turn comes
    (``Allocate._eligible``). A backlog's first bind then waits for one pass that only groups its
    jobs, not for every job's tasks and validity to be read."""
    admitted_only = PodGroupPhase.PENDING
    queues = session.queues
    groups: dict[tuple[str, str], list[Job]] = {}
    for job in session.pending_jobs():
        if job.phase is admitted_only:
            continue
        if aside:
            refused = aside.get(job.key)
            if refused is not None:
                tell_aside(session, refused, job)
                told[job.key] = refused
                continue
        if job.queue not in queues:
            if _has_pending(job, best_effort=False):
                missing = session.snapshot.absent("Queue", job.queue)
                session.reject(job, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Allocate.name, (missing,)))
            continue
        group = groups.get((job.queue, job.namespace))
        if group is None:
            group = groups[job.queue, job.namespace] = []
        group.append(job)
    out: dict[str, dict[str, list[Job]]] = {}
    for (queue, ns), group in groups.items():
        out.setdefault(queue, {})[ns] = group
    return out


@register_action
class Allocate:
    name: ClassVar[str] = "allocate"
    #: Which pending pods it places (a config with no action placing every pod is warned of).
    places: ClassVar[str] = "every pod"
    #: Whether it may evict running pods (a session whose actions never do shares its bound tasks).
    evicts: ClassVar[bool] = False
    #: Whether it decides only for pods of ours that are pending: with none, it has nothing to do.
    pending_only: ClassVar[bool] = True

    def execute(self, session: Session) -> None:
        # Jobs of no use to allocate (only best-effort tasks pending, or invalid) wait in the queues
        # too until their turn (``_eligible``): a turn that passes one over changes nothing, so the
        # others come in the order they would without it, and each job is asked once.
        # Gangs that fit on no node as the nodes stand, tried by an earlier session, are not tried again
        # until a node or the gang changes (``take_aside``): told what their last try found instead.
        kept.take(session)  # (each job's validity and order key as the last session asked them, where held)
        aside = take_aside(session)
        told: dict[str, Refused] = {}
        queues: dict[str, dict[str, JobQueue]] = {
            q: {ns: JobQueue(session, jobs) for ns, jobs in by_ns.items()}
            for q, by_ns in _admitted_by_queue(session, aside, told).items()
        }
        tried: list[Job] = []  # the jobs whose turn came and that were not placed
        #: Each queue's namespaces in namespace order (kept beside ``queues``).
        orders = {q: NamespaceOrder(session, by_ns) for q, by_ns in queues.items()}
        tasks: dict[str, TaskQueue] = {}
        eligible: set[str] = set()  # the jobs asked and found eligible (a job pushed back is one)
        while queues:
            qname = first_queue(session, queues)
            queue = session.queues[qname]
            overused = session.overused(queue)
            if overused:
                del orders[qname]
                for jq in queues.pop(qname).values():
                    while jq:
                        job = jq.pop()
                        if not self._eligible(session, job, eligible):
                            continue
                        if job.key not in session.job_errors:
                            why = f"queue {qname} is overused ({overused.render()})"
                            session.reject(job, Status(overused.code, overused.plugin, (why,)))
                        if _nodes_refuse(session, job):
                            tried.append(job)  # no share is its, nor would one help: set aside (told why)
                continue
            namespaces = queues[qname]
            ns = orders[qname].first()
            job = namespaces[ns].pop()
            if not namespaces[ns]:
                del namespaces[ns]
                orders[qname].discard(ns)
                if not namespaces:
                    del queues[qname]
                    del orders[qname]
            if not self._eligible(session, job, eligible):
                continue
            job_tasks = tasks.get(job.key)
            statement = Statement(session)
            topology = job.podgroup.topology if job.podgroup is not None else None
            if topology is not None:
                pending = [t for t in job.pending_tasks() if not t.best_effort and t.schedulable_by_us]
                again, reason, tasks[job.key] = place_in_domain(
                    session, queue, job, topology, statement, self._place, pending=pending, carried=job_tasks
                )
            else:
                if job_tasks is None:
                    job_tasks = TaskQueue(
                        session, [t for t in job.pending_tasks() if not t.best_effort and t.schedulable_by_us]
                    )
                    tasks[job.key] = job_tasks
                again, reason = self._place(session, queue, job, job_tasks, statement)
            if session.job_ready(job):
                statement.commit()
            elif session.job_pipelined(job):
                statement.hold()
            else:
                message = gang_message(job, reason, action=self.name)
                statement.discard()
                session.reject(job, message)
                tried.append(job)
                continue
            if again:
                queues.setdefault(qname, {}).setdefault(job.namespace, JobQueue(session)).push(job)
                order = orders.get(qname)
                if order is None:
                    order = orders[qname] = NamespaceOrder(session)
                order.add(job.namespace)
            elif reason:
                session.reject(job, reason)
        leave_aside(session, tried, told)

    @staticmethod
    def _eligible(session: Session, job: Job, eligible: set[str]) -> bool:
        """Whether ``job``, whose turn came, is one allocate places: with a task to place (pending, ours,
        not best-effort) and valid (else refused, as invalid). Asked once a job."""
        if job.key in eligible:
            return True
        if not _has_pending(job, best_effort=False):
            return False
        invalid = session.job_valid(job)
        if invalid:
            session.reject(job, invalid)
            return False
        eligible.add(job.key)
        return True

    @staticmethod
    def _place(
        session: Session, queue: QueueSpec, job: Job, tasks: TaskQueue, statement: Statement
    ) -> tuple[bool, Status | None]:
        """Place tasks until the job is ready with tasks left (returns True: push back), the tasks run
        out, or minMember can no longer be reached with the tasks left.

        A task the queue refuses or that fits no node is skipped (its reason recorded) and the turn goes
        on with the job's other tasks. A task with the same request and placement spec as one that fit
        nowhere this turn is skipped with the same reason: nothing frees capacity during a turn."""
        reason: Status | None = None
        unfit: dict[tuple[object, ...], Status] = {}
        while tasks:
            task = tasks.pop()
            refused = session.allocatable(queue, task)
            if refused:
                reason = refused.about(f"task {task.name}")
                session.record_fit_error(task, refused)
                _nodes_refuse(session, job)
            else:
                why = unfit.get(_fit_key(task)) if unfit else None
                if why is None:
                    choice = session.choose_node(task)
                    if choice.node is not None:
                        if choice.pipelined:
                            statement.pipeline(task, choice.node)
                        else:
                            statement.allocate(task, choice.node)
                        if tasks and session.job_ready(job):
                            return True, None
                        continue
                    why = unfit[_fit_key(task)] = Status(Code.UNSCHEDULABLE, Allocate.name, (choice.reason,))
                reason = why.about(f"task {task.name}")
                session.record_fit_error(task, why)
            if job.pipelined_count + len(tasks) < job.min_member:
                break
        return False, reason
