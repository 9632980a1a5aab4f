"""gang: a job starts with at least minMember tasks or not at all.

Per-role minimums (a Volcano PodGroup's ``minTaskMember``: a master and N workers, the role being a pod's
``volcano.sh/task-spec`` annotation) bind as in Volcano's gang plugin: the gang is valid, ready and
pipelined only when each role has its minimum too, and victims never take a role below it; they are
skipped when minMember is below their sum (Volcano's rule).

Registers: job validity (enough pods to ever form the gang; a PodGroup with no pod yet is valid, its
pods come once it is admitted), readiness and pipelining (minMember tasks
placed), not-ready-first job order (and among those, gangs that already hold some members first, so a
half-bound gang is completed before others take the room), and victim filters that never take a running
gang below minMember (no more than the minMember it was admitted with: ``volsched.model.admitted``); a job
of minMember 1 is no gang, and any of its pods may go (:func:`victim_floor`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from volsched.framework.plugin import BasePlugin
from volsched.framework.points import ExtensionPoints, Vote
from volsched.framework.registry import register_plugin
from volsched.model.admitted import kept
from volsched.model.cluster import READY_STATUSES, Job
from volsched.model.vocabulary import TASK_ROLE_ANNOTATION, Task, TaskStatus

PENDING = TaskStatus.PENDING
#: What counts toward a role's minimum, as toward minMember: for validity (the pods that may still form
#: the gang), readiness (placed or done) and pipelining (placed, done or pipelined).
_GONE = frozenset({TaskStatus.FAILED, TaskStatus.RELEASING})
_PIPELINED = READY_STATUSES | {TaskStatus.PIPELINED}


def role_minimums(job: Job, min_member: int | None = None) -> dict[str, int] | None:
    """The per-role minimums that bind the job (Volcano's ``minTaskMember``, roles with a minimum of 0
    left out), or None. As Volcano's gang plugin: they bind only when they fit in minMember (a
    minMember below their sum is the gang's own choice, and the per-role check is skipped); ``min_member``
    (the job's when None) is the one they must fit in."""
    pg = job.podgroup
    roles = pg.min_task_member if pg is not None else None
    if not roles or sum(roles.values()) > (job.min_member if min_member is None else min_member):
        return None
    return {role: n for role, n in roles.items() if n > 0} or None


def victim_floor(job: Job) -> int:
    """How many of a running job's pods reclaim and preempt leave it (:func:`volsched.model.admitted.kept`,
    the one rule): its minMember, no more than the minMember it was admitted with; none when that is 1.
    A job of minMember 1 is no gang (a lone pod, a controller owner's pods, a PodGroup of minMember 1):
    any number of its pods is whole, so it may lose every one, as a pod may to kube-scheduler's
    preemption, and its owner makes them again. A gang of two or more is never taken below its
    minMember, nor evicted whole (docs/starvation.md#who-may-be-a-victim)."""
    pg = job.podgroup
    return kept(job.min_member, None if pg is None else pg.admitted_min_member)


def role_of(task: Task) -> str:
    return task.annotations.get(TASK_ROLE_ANNOTATION, "")


def role_short(
    job: Job, roles: dict[str, int], counts: frozenset[TaskStatus], *, gone: bool = False
) -> str | None:
    """The first role (by name) with fewer tasks in ``counts`` (``gone``: not in them) than its
    minimum, said as ``role worker: 1 of 2``; None when every role has its minimum."""
    have = dict.fromkeys(roles, 0)
    for t in job.tasks.values():
        role = role_of(t)
        if role in have and ((t.status not in counts) if gone else (t.status in counts)):
            have[role] += 1
    for role in sorted(roles):
        if have[role] < roles[role]:
            return f"role {role}: {have[role]} of {roles[role]}"
    return None


@register_plugin
class Gang(BasePlugin):
    name: ClassVar[str] = "gang"
    reads_clock: ClassVar[bool] = False
    answers_by_shape: ClassVar[bool] = True
    job_answers_kept: ClassVar[bool] = True

    def on_session_open(self, session: ExtensionPoints) -> None:
        def valid(job: Job) -> str | None:
            # A PodGroup with no pod yet waits for admission (Volcano's job flow: its controller makes
            # the pods once the group is Inqueue): it is valid, admitted on its minResources.
            if not job.tasks:
                return None
            if job.valid_count < job.min_member:
                return f"gang {job.title}: {job.valid_count} pod(s) exist, minMember is {job.min_member}"
            roles = role_minimums(job)
            short = role_short(job, roles, _GONE, gone=True) if roles else None
            if short:
                return f"gang {job.title}: too few pods of a role to form the gang (minTaskMember {short})"
            return None

        def valid_run(jobs: Sequence[Job]) -> list[str | None]:
            """``valid`` of each job: a job with minMember tasks ready or pending and no per-role minimum
            is valid without its every status summed (those count toward ``valid_count``): a backlog's
            every job."""
            return [
                None
                if j.ready + j.status_count.get(PENDING, 0) >= j.min_member and role_minimums(j) is None
                else valid(j)
                for j in jobs
            ]

        def ready(job: Job) -> bool:
            if job.ready_count < job.min_member:
                return False
            roles = role_minimums(job)
            return roles is None or role_short(job, roles, READY_STATUSES) is None

        def pipelined(job: Job) -> tuple[Vote, str]:
            if job.pipelined_count < job.min_member:
                return Vote.REJECT, f"{job.pipelined_count}/{job.min_member} tasks placed or pipelined"
            roles = role_minimums(job)
            short = role_short(job, roles, _PIPELINED) if roles else None
            if short:
                return Vote.REJECT, f"too few tasks of a role placed or pipelined (minTaskMember {short})"
            return Vote.PERMIT, ""

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
            """Take from a job only what it holds beyond its :func:`victim_floor` (its minMember, none
            for a job of minMember 1), and from a role only what it holds beyond its minimum
            (``minTaskMember``)."""
            spare: dict[str, int] = {}
            role_spare: dict[tuple[str, str], int] = {}
            out = []
            for t in candidates:
                job = session.jobs.get(t.job_key)
                if job is None:
                    continue
                if job.key not in spare:
                    spare[job.key] = job.ready_count - victim_floor(job)
                left = spare[job.key]
                if left <= 0:
                    continue
                roles = role_minimums(job, victim_floor(job))
                role = role_of(t)
                if roles and role in roles:
                    key = (job.key, role)
                    if key not in role_spare:
                        held = sum(
                            1 for u in job.tasks.values() if u.status in READY_STATUSES and role_of(u) == role
                        )
                        role_spare[key] = held - roles[role]
                    if role_spare[key] <= 0:
                        continue
                    role_spare[key] -= 1
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
