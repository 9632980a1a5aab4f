"""reclaim: a queue below its deserved share takes back what other queues hold beyond theirs.

For each starving job of a queue that is not overused (queues in queue order, jobs in job order), each
pending task is placed, through one Statement, on capacity that is free, being released, or freed by
evicting running pods of *other*, reclaimable queues that the plugins name (``session.reclaimable``),
node by node; the task is then pipelined onto the released capacity. The Statement is committed only if
it evicted something and the gang is pipelined (``session.job_pipelined``); otherwise it is discarded
and nothing is evicted. ``session.preemptive(queue, task)`` must allow every task: with proportion, the
reclaiming queue stays within its deserved share after placing it.

A job that enqueue held back (phase Pending, e.g. because the cluster is full) takes part too, as long
as its queue is open: if its gang can be placed within what its queue is owed, the committed reclaim
admits it (Inqueue). Otherwise a full cluster would keep it Pending forever, as in Volcano.

Pods with ``preemptionPolicy: Never`` are placed only where there is room already; they never cause an
eviction. Every eviction carries a reason naming the action, the beneficiary and the amounts, and
becomes an ``Evicted`` event on the pod.

Reclaim is not in the default actions. To enable it (and preempt), list it after allocate, and put the
plugins that name victims in one tier (victims are the intersection inside the first tier that
answers, so proportion's and drf's answers count only next to gang's and conformance's)::

    actions: "enqueue, allocate, reclaim, preempt, backfill"
    tiers:
    - plugins:
      - name: priority
        enablePreemptable: false   # drf's answer covers priority: lower always, equal by share
      - name: gang
      - name: conformance
      - name: drf
      - name: overcommit
      - name: proportion
    - plugins:
      - name: predicates
      - name: nodeorder
      - name: binpack
"""

from __future__ import annotations

from typing import ClassVar

from volsched.actions.eviction import (
    EVICTABLE,
    append_job_error,
    describe_amounts,
    emit_evictions,
    place_by_evicting,
    queue_holds,
)
from volsched.actions.util import JobQueue, TaskQueue, first
from volsched.framework.registry import register_action
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.cluster import Job
from volsched.model.objects import PodGroupPhase, QueueSpec, QueueState, Task

NEVER = "Never"


@register_action
class Reclaim:
    name: ClassVar[str] = "reclaim"

    def execute(self, session: Session) -> None:
        by_queue: dict[str, JobQueue] = {}
        for job in session.jobs.values():
            if self._wants(session, job):
                by_queue.setdefault(job.queue, JobQueue(session)).push(job)
        while by_queue:
            qname = first(by_queue, lambda a, b: session.queue_less(session.queues[a], session.queues[b]))
            queue = session.queues[qname]
            if session.overused(queue):
                del by_queue[qname]
                continue
            job = by_queue[qname].pop()
            if not by_queue[qname]:
                del by_queue[qname]
            self._reclaim(session, queue, job)

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

    def _reclaim(self, session: Session, queue: QueueSpec, job: Job) -> None:
        statement = Statement(session)
        log: list[tuple[Task, str]] = []

        def candidates(node: int) -> list[Task]:
            out = []
            for t in session.nodes.tasks[node].values():
                if t.status not in EVICTABLE or not t.schedulable_by_us:
                    continue
                owner = session.jobs.get(t.job_key)
                if owner is None or owner.queue == queue.name:
                    continue
                spec = session.queues.get(owner.queue)
                if spec is not None and spec.reclaimable:
                    out.append(t)
            return out

        def describe(task: Task, victim: Task, node: str) -> str:
            owner = session.jobs[victim.job_key]
            held = queue_holds(session, owner.queue)
            return (
                f"reclaim: {victim.key} of queue {owner.queue} evicted on {node} for {task.key} (job {job.key},"
                f" queue {queue.name} holding {describe_amounts(session, queue_holds(session, queue.name))},"
                f" needs {describe_amounts(session, task.request)}); frees"
                f" {describe_amounts(session, victim.request)}, queue {owner.queue} holds"
                f" {describe_amounts(session, held)} -> {describe_amounts(session, held - victim.request)}"
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
            refused = session.preemptive(queue, task)
            if refused:
                reason = f"task {task.name}: {refused}"
                break
            why = place_by_evicting(
                session,
                statement,
                task,
                action=self.name,
                candidates=candidates,
                choose=session.reclaimable,
                describe=describe,
                log=log,
            )
            if why:
                reason = f"task {task.name}: {why}"
                break
        if log and session.job_pipelined(job):
            statement.commit()
            emit_evictions(session, log, "Evicted")
            if job.phase is PodGroupPhase.PENDING:
                job.phase = PodGroupPhase.INQUEUE
                session.job_enqueued(job)
            return
        statement.discard()
        if reason:
            append_job_error(session, job.key, f"reclaim: {reason}")
