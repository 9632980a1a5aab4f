"""preempt: inside a queue, a starving job takes capacity from jobs the plugins rank below it.

Queues in queue order, and inside each the admitted starving jobs in job order: each pending task is
placed through one Statement on capacity that is free, being released, or freed by evicting running
pods of *other jobs of the same queue* that the plugins name (``session.preemptable``: priority's
lower-priority pods, drf's larger job or weighted namespace shares, gang's spare pods, never
conformance's protected pods), node by node, and pipelined there. The Statement is committed only if it
evicted something and the gang is pipelined; otherwise it is discarded and nothing is evicted.

A job that enqueue held back because its queue is full (``minResources + allocated + inqueue >
realCapability``) takes part too, as long as its queue is open: a committed preemption makes room for it
inside the queue and admits it (Inqueue); otherwise a full queue could never let a more important job in.

Pods with ``preemptionPolicy: Never`` never cause an eviction. Every eviction carries a reason naming
the action, the beneficiary and the amounts, and becomes a ``Preempted`` event on the pod.

Not in the default actions; see ``volsched.actions.reclaim`` for the config that enables both.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.actions.eviction import (
    EVICTABLE,
    append_job_error,
    describe_amounts,
    emit_evictions,
    place_by_evicting,
)
from volsched.actions.util import JobQueue, TaskQueue
from volsched.framework.registry import register_action
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.cluster import Job
from volsched.model.objects import PodGroupPhase, QueueState, Task

NEVER = "Never"


@register_action
class Preempt:
    name: ClassVar[str] = "preempt"

    def execute(self, session: Session) -> None:
        by_queue: dict[str, list[Job]] = {}
        for job in session.jobs.values():
            if self._wants(session, job):
                by_queue.setdefault(job.queue, []).append(job)
        queues = sorted(
            by_queue,
            key=lambda q: sum(
                1 for other in by_queue if session.queue_less(session.queues[other], session.queues[q])
            ),
        )
        for qname in queues:
            jobs = JobQueue(session, by_queue[qname])
            while jobs:
                self._preempt(session, jobs.pop())

    @staticmethod
    def _pending(job: Job) -> list[Task]:
        return [t for t in job.pending_tasks() if not t.best_effort and t.schedulable_by_us]

    def _wants(self, session: Session, job: Job) -> bool:
        queue = session.queues.get(job.queue)
        if queue is None or job.phase is PodGroupPhase.COMPLETED or not self._pending(job):
            return False
        if job.phase is PodGroupPhase.PENDING and queue.state is QueueState.CLOSED:
            return False
        return session.job_valid(job) is None and session.job_starving(job)

    def _preempt(self, session: Session, job: Job) -> None:
        statement = Statement(session)
        log: list[tuple[Task, str]] = []

        def candidates(node: int) -> list[Task]:
            out = []
            for t in session.nodes.tasks[node].values():
                if t.status not in EVICTABLE or not t.schedulable_by_us or t.job_key == job.key:
                    continue
                owner = session.jobs.get(t.job_key)
                if owner is not None and owner.queue == job.queue:
                    out.append(t)
            return out

        def describe(task: Task, victim: Task, node: str) -> str:
            owner = session.jobs[victim.job_key]
            return (
                f"preempt: {victim.key} (job {owner.key}, priority {owner.priority}, namespace {owner.namespace})"
                f" evicted on {node} for {task.key} (job {job.key}, priority {job.priority}, namespace"
                f" {job.namespace}, queue {job.queue}, needs {describe_amounts(session, task.request)}); frees"
                f" {describe_amounts(session, victim.request)}, job {owner.key} holds"
                f" {describe_amounts(session, owner.allocated)} -> "
                f"{describe_amounts(session, owner.allocated - victim.request)}"
            )

        reason: str | None = None
        tasks = TaskQueue(session, self._pending(job))
        while tasks:
            task = tasks.pop()
            if task.preemption_policy == NEVER:
                choice = session.choose_node(task)
                if choice.node is None:
                    reason = f"task {task.name} has preemptionPolicy Never and fits nowhere: {choice.reason}"
                    break
                statement.pipeline(task, choice.node)
                continue
            why = place_by_evicting(
                session,
                statement,
                task,
                action=self.name,
                candidates=candidates,
                choose=session.preemptable,
                describe=describe,
                log=log,
            )
            if why:
                reason = f"task {task.name}: {why}"
                break
        if log and session.job_pipelined(job):
            statement.commit()
            emit_evictions(session, log, "Preempted")
            if job.phase is PodGroupPhase.PENDING:
                job.phase = PodGroupPhase.INQUEUE
                session.job_enqueued(job)
            return
        statement.discard()
        if reason:
            append_job_error(session, job.key, f"preempt: {reason}")
