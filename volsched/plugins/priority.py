"""priority: jobs and tasks in order of priority (higher first); lower-priority pods are the victims
preempt and reclaim may take."""

from __future__ import annotations

from typing import ClassVar

from volsched.framework.plugin import BasePlugin
from volsched.framework.points import ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.cluster import Job
from volsched.model.vocabulary import Task


def _desc(left: int, right: int) -> int:
    return -1 if left > right else (1 if left < right else 0)


@register_plugin
class Priority(BasePlugin):
    name: ClassVar[str] = "priority"

    def on_session_open(self, session: ExtensionPoints) -> None:
        def job_order(left: Job, right: Job) -> int:
            return _desc(left.priority, right.priority)

        def task_order(left: Task, right: Task) -> int:
            return _desc(left.priority, right.priority)

        def victims(actor: Task, candidates: list[Task]) -> list[Task]:
            actor_job = session.jobs.get(actor.job_key)
            level = actor_job.priority if actor_job is not None else actor.priority
            out = []
            for t in candidates:
                job = session.jobs.get(t.job_key)
                if (job.priority if job is not None else t.priority) < level:
                    out.append(t)
            return out

        session.add_job_order_fn(self.name, job_order)
        session.add_task_order_fn(self.name, task_order)
        session.add_preemptable_fn(self.name, victims)
