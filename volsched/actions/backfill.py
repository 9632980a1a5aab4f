"""backfill: place admitted tasks that request nothing (best-effort pods) on any node that passes the
filters. A gang of such tasks still starts all at once or not at all."""

from __future__ import annotations

from typing import ClassVar

from volsched.actions.allocate import admitted_jobs, gang_message
from volsched.actions.util import JobQueue, TaskQueue
from volsched.framework.decisions import Code, Status
from volsched.framework.registry import register_action
from volsched.framework.session import Session
from volsched.framework.statement import Statement


@register_action
class Backfill:
    name: ClassVar[str] = "backfill"
    #: Which pending pods it places (a config with no action placing every pod is warned of).
    places: ClassVar[str] = "pods that request nothing"
    #: Whether it may evict running pods (a session whose actions never do shares its bound tasks).
    evicts: ClassVar[bool] = False
    #: Whether it decides only for pods of ours that are pending: with none, it has nothing to do.
    pending_only: ClassVar[bool] = True

    def execute(self, session: Session) -> None:
        jobs = JobQueue(session, admitted_jobs(session, best_effort=True))
        while jobs:
            job = jobs.pop()
            tasks = TaskQueue(
                session, [t for t in job.pending_tasks() if t.best_effort and t.schedulable_by_us]
            )
            statement = Statement(session)
            reason: Status | None = None
            while tasks:
                task = tasks.pop()
                choice = session.choose_node(task, allow_pipeline=False)
                if choice.node is None:
                    unfit = Status(Code.UNSCHEDULABLE, self.name, (choice.reason,))
                    reason = unfit.about(f"task {task.name}")
                    session.record_fit_error(task, unfit)
                    continue
                statement.allocate(task, choice.node)
            if session.job_ready(job):
                statement.commit()
            else:
                message = gang_message(job, reason, action=self.name)
                statement.discard()
                session.reject(job, message)
