"""preempt: inside a queue, a starving job takes capacity from jobs the plugins rank below it.

Like reclaim, but within one queue: victims are what the plugins name (``session.preemptable``), the
search is ``volsched.actions.eviction``'s, and a job's evictions are committed only when its gang is then
pipelined. Not in the default actions. Users: docs/concepts.md#lending-and-taking-back; notes:
docs/design/modules.md#preempt.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.actions.eviction import (
    Evictable,
    Refusals,
    evict_for_job,
    eviction_reason,
    refusals_by_shape,
    refused_as_before,
    starving_by_queue,
)
from volsched.actions.util import JobQueue, in_queue_order
from volsched.framework.decisions import EvictionReason
from volsched.framework.registry import register_action
from volsched.framework.session import Session
from volsched.model.cluster import BoolArray, Job
from volsched.model.vocabulary import Task


@register_action
class Preempt:
    name: ClassVar[str] = "preempt"
    #: Whether it may evict running pods (a session whose actions never do shares its bound tasks).
    evicts: ClassVar[bool] = True
    #: Whether it decides only for pods of ours that are pending: with none, it has nothing to do.
    pending_only: ClassVar[bool] = True

    def execute(self, session: Session) -> None:
        by_queue = starving_by_queue(session, action=self.name)
        if not by_queue:
            return
        evictable = Evictable(session)
        # A backlog of jobs alike (one queue's, one class's) fails the same way job after job while
        # nothing is evicted: asked once a shape.
        refusals = refusals_by_shape(session)
        for qname in in_queue_order(session, by_queue):
            jobs = JobQueue(session, by_queue[qname])
            while jobs:
                job = jobs.pop()
                if refused_as_before(session, job, action=self.name, refusals=refusals):
                    continue
                gave = self._preempt(session, job, evictable, refusals)
                if gave:
                    jobs.requeue(session.jobs[key] for key in gave)

    def _preempt(
        self, session: Session, job: Job, evictable: Evictable, refusals: Refusals | None
    ) -> set[str]:
        def candidates(pods: Evictable) -> BoolArray:
            """Pods of the other jobs of the job's queue."""
            return pods.in_queues(lambda q: q == job.queue) & ~pods.of_job(job.key)

        def describe(task: Task, victim: Task, node: str) -> EvictionReason:
            owner = session.jobs[victim.job_key]
            return eviction_reason(
                session,
                action=self.name,
                task=task,
                job=job,
                victim=victim,
                holder=f"job {owner.key}",
                held=owner.allocated,
                priority=owner.priority,
                beneficiary_priority=job.priority,
            )

        def lower_priority(task: Task, pool: list[Task]) -> list[Task]:
            """Where other pods keep ``task`` out (anti-affinity), only pods of jobs of lower priority
            than its job go (as kube-scheduler takes only lower-priority pods), whatever share the
            plugins would let it take from equals."""
            out = []
            for v in pool:
                owner = session.jobs.get(v.job_key)
                if owner is not None and owner.priority < job.priority:
                    out.append(v)
            return out

        return evict_for_job(
            session,
            job,
            action=self.name,
            evictable=evictable,
            candidates=candidates,
            point="preemptable",
            choose=session.preemptable,
            describe=describe,
            in_the_way=lower_priority,
            refusals=refusals,
        )
