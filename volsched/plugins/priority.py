"""priority: jobs and tasks in order of priority (higher first); lower-priority pods are the victims
preempt and reclaim may take."""

from __future__ import annotations

from typing import ClassVar

from volsched.framework.plugin import BasePlugin
from volsched.framework.points import ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.cluster import Job
from volsched.model.vocabulary import Task


@register_plugin
class Priority(BasePlugin):
    name: ClassVar[str] = "priority"
    reads_clock: ClassVar[bool] = False
    answers_by_shape: ClassVar[bool] = True
    job_answers_kept: ClassVar[bool] = True

    def on_session_open(self, session: ExtensionPoints) -> None:
        def job_key(job: Job) -> int:
            return -job.priority

        def task_key(task: Task) -> int:
            return -task.priority

        def victims(actor: Task, candidates: list[Task]) -> list[Task]:
            actor_job = session.jobs.get(actor.job_key)
            level = actor_job.priority if actor_job is not None else actor.priority
            out = []
            for t in candidates:
                job = session.jobs.get(t.job_key)
                if (job.priority if job is not None else t.priority) < level:
                    out.append(t)
            return out

        session.add_job_key_fn(self.name, job_key)
        session.add_task_key_fn(self.name, task_key)
        session.add_preemptable_fn(self.name, victims)
