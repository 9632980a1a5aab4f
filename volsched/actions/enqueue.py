"""enqueue: admit Pending jobs (PodGroups) into their queue when every plugin's vote lets them in.

Queues take turns in queue order, one job a turn: inside the queue the namespace that comes first in
namespace order, inside that the job that comes first in job order (as allocate), so admission is fair
between queues and between the namespaces of a queue.
A closed queue admits nothing. Rejections are recorded as the job's reason.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.actions.util import JobQueue, NamespaceOrder, first_queue
from volsched.framework.decisions import Code, Status
from volsched.framework.registry import register_action
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.cluster import Job
from volsched.model.vocabulary import PodGroupPhase, QueueState, TaskStatus

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
PENDING = TaskStatus.PENDING


@register_action
class Enqueue:
    name: ClassVar[str] = "enqueue"
    #: Whether it may evict running pods (a session whose actions never do shares its bound tasks).
    evicts: ClassVar[bool] = False
    #: Whether it decides only for pods of ours that are pending: with none, it has nothing to do.
    pending_only: ClassVar[bool] = True

    def execute(self, session: Session) -> None:
        pending: dict[str, list[Job]] = {}
        for queue, jobs in session.jobs_by_queue().items():
            spec = session.queues.get(queue)
            waiting = [j for j in jobs if j.phase is PodGroupPhase.PENDING and j.status_count.get(PENDING)]
            if not waiting:
                continue
            if spec is None:
                for job in waiting:
                    session.reject(job, Status(UNRESOLVABLE, self.name, (f"queue {queue} does not exist",)))
                continue
            if spec.state is QueueState.CLOSED:
                for job in waiting:
                    closed = f"queue {queue} is closed and admits no new jobs"
                    session.reject(job, Status(UNRESOLVABLE, self.name, (closed,)))
                continue
            pending[queue] = waiting
        order: dict[str, dict[str, JobQueue]] = {}
        ns_order: dict[str, NamespaceOrder] = {}
        for q, jobs in pending.items():
            by_ns: dict[str, list[Job]] = {}
            for job in jobs:
                by_ns.setdefault(job.namespace, []).append(job)
            order[q] = {ns: JobQueue(session, js) for ns, js in by_ns.items()}
            ns_order[q] = NamespaceOrder(session, by_ns)
        while order:
            name = first_queue(session, order)
            namespaces = order[name]
            ns = ns_order[name].first()
            job = namespaces[ns].pop()
            if not namespaces[ns]:
                del namespaces[ns]
                ns_order[name].discard(ns)
                if not namespaces:
                    del order[name]
                    del ns_order[name]
            invalid = session.job_valid(job)
            if invalid:
                session.reject(job, invalid)
                continue
            refused = session.job_enqueueable(job)
            if refused is None:
                statement = Statement(session)
                statement.admit(job)
                statement.commit()
                session.job_enqueued(job)
            else:
                session.reject(job, refused.about(f"not admitted to queue {job.queue}"))
