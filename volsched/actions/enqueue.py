"""enqueue: admit Pending jobs (PodGroups) into their queue when every plugin's vote lets them in.

Queues take turns in queue order, one job a turn: inside the queue the namespace that comes first in
namespace order, inside that the job that comes first in job order (as allocate), so admission is fair
between queues and between the namespaces of a queue.
A closed queue admits nothing. Rejections are recorded as the job's reason.

The jobs decided for are those with a pod pending and the PodGroups in phase Pending that have no pod
yet (``Session.admission_jobs``): Volcano's job controller makes a job's pods only once the scheduler
moved its PodGroup to Inqueue, so such a group is admitted on its minResources (none: it asks nothing).

A job that can never run as it stands (``volsched.framework.never``) is not voted on: no share is its,
and admitted it took a place in its queue's share and the cluster's room from the jobs behind it. A pod
standing alone is admitted without the votes, counted in no admitted sum; a gang whose pods bear the
verdict out stays Pending, told why, until a session after a node, the gang or its queue changed.

Once one queue is left, its namespace that comes first stays first until its jobs are all decided (an
admission takes no resources, so no namespace key moves): its jobs are decided as one run, in job
order, and stretches of it are voted on and admitted at once where the plugins answer for runs
(``jobs_enqueueable``/``jobs_enqueued``: the same votes and sums, in the same order, as job by job).
"""

from __future__ import annotations

from typing import ClassVar

from volsched.actions import kept
from volsched.actions.eviction import Refusals, refusals_by_shape
from volsched.actions.util import JobQueue, NamespaceOrder, first_queue
from volsched.framework.decisions import Code, Status
from volsched.framework.never import unvoted_never
from volsched.framework.registry import register_action
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.cluster import Job
from volsched.model.vocabulary import PodGroupPhase, QueueState

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@register_action
class Enqueue:
    name: ClassVar[str] = "enqueue"
    #: Whether it may evict running pods (a session whose actions never do shares its bound tasks).
    evicts: ClassVar[bool] = False
    #: Whether it decides only for pods of ours that are pending: with none, it has nothing to do.
    pending_only: ClassVar[bool] = True

    def execute(self, session: Session) -> None:
        kept.take(session)  # (each job's validity and order key as the last session asked them, where held)
        pending: dict[str, list[Job]] = {}
        for queue, jobs in session.jobs_by_queue(session.admission_jobs()).items():
            spec = session.queues.get(queue)
            waiting = [j for j in jobs if j.phase is PodGroupPhase.PENDING]
            if not waiting:
                continue
            if spec is None:
                for job in waiting:
                    session.reject(
                        job, Status(UNRESOLVABLE, self.name, (session.snapshot.absent("Queue", queue),))
                    )
                continue
            if spec.state is QueueState.CLOSED:
                for job in waiting:
                    closed = f"queue {queue} is closed and admits no new jobs"
                    session.reject(job, Status(UNRESOLVABLE, self.name, (closed,)))
                continue
            # A job that can never run as it stands asks its queue nothing (no share is its), so it is
            # not voted on: voted on and admitted, it took a place in its queue's share (and the
            # cluster's room) from the jobs behind it.
            never = [j for j in waiting if unvoted_never(session, j) is not None]
            if never:
                apart = self._set_apart(session, queue, never)
                if len(apart) == len(waiting):
                    continue
                if apart:
                    waiting = [j for j in waiting if id(j) not in apart]
            pending[queue] = waiting
        order: dict[str, dict[str, JobQueue]] = {}
        ns_order: dict[str, NamespaceOrder] = {}
        for q, jobs in pending.items():
            by_ns: dict[str, list[Job]] = {}
            for job in jobs:
                by_ns.setdefault(job.namespace, []).append(job)
            order[q] = {ns: JobQueue(session, js) for ns, js in by_ns.items()}
            ns_order[q] = NamespaceOrder(session, by_ns)
        hold = session.namespace_keys_hold()
        # A backlog of jobs alike is refused alike until something is admitted (the votes read what the
        # queues took in): asked once a shape, as long as every plugin answers by a job's shape (a job
        # alone is asked, an answer kept for no other job).
        backlog = sum(map(len, pending.values()))
        refusals = refusals_by_shape(session) if backlog > 1 else None
        if backlog > 1:
            # A job's validity reads its own tasks only (and is kept until they change): asked for the
            # whole backlog at once, through the plugins' answers for lists, before the turns ask it
            # job by job (the same answers).
            session.jobs_valid([job for jobs in pending.values() for job in jobs])
        # The queue order reads what the queues hold and took in, which only an admission changes here
        # (a refusal changes nothing): the first queue is asked again only after one, or once a queue
        # has left the order (the same queues in the same order, the same answer; a backlog refused
        # job after job asked it once a job).
        first: str | None = None
        while order:
            name = first if first is not None else first_queue(session, order)
            namespaces = order[name]
            ns = ns_order[name].first()
            # The last queue: its turns stay with this namespace until it is empty (an admission takes
            # no resources, and a namespace's key changes only when its tasks do), so the namespace's
            # jobs come one after another, in job order: one run.
            run = namespaces[ns].pop_all() if hold and len(order) == 1 else [namespaces[ns].pop()]
            if not namespaces[ns]:
                del namespaces[ns]
                ns_order[name].discard(ns)
                if not namespaces:
                    del order[name]
                    del ns_order[name]
            admitted = self._admit(session, run, refusals)
            first = name if not admitted and name in order else None

    def _set_apart(self, session: Session, queue: str, never: list[Job]) -> set[int]:
        """Decide for the jobs of ``queue`` that can never run as it stands (``never``) without the votes,
        and return them (by ``id``): a pod standing alone is admitted and counted in no admitted sum
        (allocate tries it once and sets it aside, told why); a valid gang stays Pending, told why, and
        is asked again in a session after a node, the gang or its queue changed (a gang not valid is
        left to the votes' path, which refuses it as such)."""
        lone = [j for j in never if j.podgroup is None]
        if lone:
            statement = Statement(session)
            statement.admit_all(lone)
            statement.commit()
        apart = set(map(id, lone))
        gangs = [j for j in never if j.podgroup is not None]
        if gangs:
            kept_out = Status(UNRESOLVABLE, self.name, (f"not admitted to queue {queue} {_WHILE_NEVER}",))
            for job, invalid in zip(gangs, session.jobs_valid(gangs), strict=True):
                if not invalid:
                    session.reject(job, kept_out)
                    apart.add(id(job))
        return apart

    def _admit(self, session: Session, run: list[Job], refusals: Refusals | None) -> bool:
        """Admit or refuse the jobs of ``run`` in turn, as one after another: stretches of valid jobs
        are voted on and admitted at once where the plugins answer for runs (``jobs_enqueueable``),
        a job they do not let in at once is asked alone. Stretches grow while runs are let in whole and
        are asked again only after a growing number of jobs asked alone (a full cluster refusing job
        after job costs a few run answers, not one a job). Whether any job was admitted."""
        if len(run) == 1:  # (a turn's one job: asked alone, as the loop below asks it)
            job = run[0]
            refusal = session.job_valid(job)
            if refusal:
                session.reject(job, refusal)
                return False
            return self._admit_one(session, job, refusals)
        admitted_any = False
        invalid = session.jobs_valid(run)
        i, n = 0, len(run)
        stretch, alone = _FIRST_STRETCH, 0
        skip = 0
        while i < n:
            job = run[i]
            refusal = invalid[i]
            if refusal:
                session.reject(job, refusal)
                i += 1
                continue
            if skip == 0:
                end = i + 1
                while end < n and end - i < stretch and not invalid[end]:
                    end += 1
                asked = run[i:end]
                let_in = session.jobs_enqueueable(asked) if end - i > 1 else 0
                if let_in:
                    # the very list asked about when all of it is let in: the plugins' rows for it are
                    # taken again as they are, not matched job by job
                    admitted = asked if let_in == len(asked) else asked[:let_in]
                    statement = Statement(session)
                    statement.admit_all(admitted)
                    statement.commit()
                    session.jobs_enqueued(admitted)
                    if refusals is not None:
                        refusals.clear()
                    if i + let_in == end:
                        stretch = min(stretch * 2, _MOST_STRETCH)
                    i += let_in
                    alone = 0
                    admitted_any = True
                    continue
                alone = min(alone * 2 + 1, _MOST_ALONE)
                skip = alone
            else:
                skip -= 1
            admitted_any |= self._admit_one(session, job, refusals)
            i += 1
        return admitted_any

    def _admit_one(self, session: Session, job: Job, refusals: Refusals | None) -> bool:
        """Admit ``job`` or refuse it (told why); whether it was admitted."""
        shape = refusals.shape(job, list(job.tasks.values())) if refusals is not None else None
        known = refusals.get(shape) if refusals is not None and shape is not None else None
        if known is not None:
            # (the refusal as said of the first job of the shape: its queue is the shape's, so are the
            # words, one Status for all of them)
            session.reject(job, known[1])
            return False
        refused = session.job_enqueueable(job)
        if refused is None:
            statement = Statement(session)
            statement.admit(job)
            statement.commit()
            session.job_enqueued(job)
            if refusals is not None:
                refusals.clear()
            return True
        said = refused.about(f"not admitted to queue {job.queue}")
        if refusals is not None and shape is not None:
            refusals[shape] = (0, said)
        session.reject(job, said)
        return False


#: What a gang that can never run as it stands is told after why (``volsched.framework.never``).
_WHILE_NEVER = "while it can never run: asked again once a node joins, leaves or changes, or the gang or its queue changes"
#: Jobs a run answer is first asked for, and at most (doubling while runs are let in whole).
_FIRST_STRETCH = 64
_MOST_STRETCH = 8192
#: At most this many jobs asked alone before a run answer is asked again.
_MOST_ALONE = 256
