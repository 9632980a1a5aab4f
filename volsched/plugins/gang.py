"""gang: a job starts with at least minMember tasks or not at all.

Registers: job validity (enough pods to ever form the gang; a PodGroup with no pod yet is valid, its
pods come once it is admitted), readiness and pipelining (minMember tasks
placed), not-ready-first job order (and among those, gangs that already hold some members first, so a
half-bound gang is completed before others take the room), and victim filters that never take a running
gang below minMember.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from volsched.framework.plugin import BasePlugin
from volsched.framework.points import ExtensionPoints, Vote
from volsched.framework.registry import register_plugin
from volsched.model.cluster import Job
from volsched.model.vocabulary import Task, TaskStatus

PENDING = TaskStatus.PENDING


@register_plugin
class Gang(BasePlugin):
    name: ClassVar[str] = "gang"
    reads_clock: ClassVar[bool] = False

    def on_session_open(self, session: ExtensionPoints) -> None:
        def valid(job: Job) -> str | None:
            # A PodGroup with no pod yet waits for admission (Volcano's job flow: its controller makes
            # the pods once the group is Inqueue): it is valid, admitted on its minResources.
            if job.valid_count < job.min_member and job.tasks:
                return f"gang {job.title}: {job.valid_count} pod(s) exist, minMember is {job.min_member}"
            return None

        def valid_run(jobs: Sequence[Job]) -> list[str | None]:
            """``valid`` of each job: a job with minMember tasks ready or pending is valid without its
            every status summed (those count toward ``valid_count``): a backlog's every job."""
            return [
                None if j.ready + j.status_count.get(PENDING, 0) >= j.min_member else valid(j) for j in jobs
            ]

        def ready(job: Job) -> bool:
            return job.ready_count >= job.min_member

        def pipelined(job: Job) -> tuple[Vote, str]:
            if job.pipelined_count >= job.min_member:
                return Vote.PERMIT, ""
            return Vote.REJECT, f"{job.pipelined_count}/{job.min_member} tasks placed or pipelined"

        def job_key(job: Job) -> int:
            """Not ready first (0, 1), ready last (2). Among gangs not ready, one that already holds
            members (left half-bound, or short of a member it lost) comes first (0): what it holds is
            idle until it is complete."""
            held = job.ready  # ``ready_count``, read once (asked for every job a queue sorts)
            if held >= job.min_member:
                return 2
            return 0 if held > 0 else 1

        def starving(job: Job) -> bool:
            return job.ready_count < job.min_member or bool(job.pending_tasks())

        def victims(actor: Task, candidates: list[Task]) -> list[Task]:
            """Take from a job only what it holds beyond minMember."""
            spare: dict[str, int] = {}
            out = []
            for t in candidates:
                job = session.jobs.get(t.job_key)
                if job is None:
                    continue
                left = spare.setdefault(job.key, job.ready_count - job.min_member)
                if left > 0:
                    out.append(t)
                    spare[job.key] = left - 1
            return out

        session.add_job_valid_fn(self.name, valid)
        session.add_jobs_valid_fn(self.name, valid_run)
        session.add_job_ready_fn(self.name, ready)
        session.add_job_pipelined_fn(self.name, pipelined)
        session.add_job_key_fn(self.name, job_key)
        session.add_job_starving_fn(self.name, starving)
        session.add_reclaimable_fn(self.name, victims)
        session.add_preemptable_fn(self.name, victims)
