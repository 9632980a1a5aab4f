"""reclaim: a queue below its deserved share takes back what other queues hold beyond theirs.

The action walks starving jobs and commits a job's evictions only when its gang is then pipelined; who
may be a victim is the plugins' answer (``session.reclaimable``), where to look first is
``volsched.actions.eviction``'s. Not in the default actions. Users: docs/concepts.md#lending-and-taking-back;
notes and the config that enables it: docs/design/modules.md#reclaim.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.actions.eviction import (
    Evictable,
    Refusals,
    amounts_of,
    evict_for_job,
    eviction_reason,
    refusals_by_shape,
    starving_by_queue,
)
from volsched.actions.util import JobQueue, in_queue_order
from volsched.framework.decisions import EvictionReason
from volsched.framework.registry import register_action
from volsched.framework.session import Session
from volsched.model.cluster import BoolArray, Job
from volsched.model.vocabulary import QueueSpec, Task


@register_action
class Reclaim:
    name: ClassVar[str] = "reclaim"
    #: Whether it may evict running pods (a session whose actions never do shares its bound tasks).
    evicts: ClassVar[bool] = True
    #: Whether it decides only for pods of ours that are pending: with none, it has nothing to do.
    pending_only: ClassVar[bool] = True

    def execute(self, session: Session) -> None:
        by_queue = {
            q: JobQueue(session, jobs) for q, jobs in starving_by_queue(session, action=self.name).items()
        }
        if not by_queue:
            return
        evictable = Evictable(session)
        # Jobs alike fail alike while nothing is evicted (see preempt): asked once a shape.
        refusals = refusals_by_shape(session)
        # The queues in queue order, the first last. Only a committed turn changes what queues hold
        # (a discarded one puts everything back), so only then are they sorted again, from the order
        # they had (nearly sorted still: about one comparison a queue).
        order = in_queue_order(session, by_queue)[::-1]
        while order:
            qname = order[-1]
            queue = session.queues[qname]
            if session.overused(queue):
                del by_queue[qname]
                order.pop()
                continue
            job = by_queue[qname].pop()
            if not by_queue[qname]:
                del by_queue[qname]
                order.pop()
            gave = [session.jobs[key] for key in self._reclaim(session, queue, job, evictable, refusals)]
            if gave:
                for name in {g.queue for g in gave} & by_queue.keys():  # a job waits in its queue's
                    by_queue[name].requeue(gave)
                order = in_queue_order(session, order[::-1])[::-1]

    def _reclaim(
        self, session: Session, queue: QueueSpec, job: Job, evictable: Evictable, refusals: Refusals | None
    ) -> set[str]:
        def other_reclaimable(name: str) -> bool:
            spec = session.queues.get(name)
            return name != queue.name and spec is not None and spec.reclaimable

        def candidates(pods: Evictable) -> BoolArray:
            """Pods of the other queues that are reclaimable."""
            return pods.in_queues(other_reclaimable)

        def describe(task: Task, victim: Task, node: str) -> EvictionReason:
            owner = session.jobs[victim.job_key]
            return eviction_reason(
                session,
                action=self.name,
                task=task,
                job=job,
                victim=victim,
                holder=f"queue {owner.queue}",
                held=session.queue_allocated(owner.queue),
                facts=(
                    (f"queue {queue.name} holds", amounts_of(session, session.queue_allocated(queue.name))),
                ),
            )

        return evict_for_job(
            session,
            job,
            action=self.name,
            evictable=evictable,
            candidates=candidates,
            point="reclaimable",
            choose=session.reclaimable,
            describe=describe,
            refuse=lambda task: session.preemptive(queue, task),
            refusals=refusals,
        )
