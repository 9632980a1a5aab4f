"""conformance: jobs keep to their queue's rules, and victims to the cluster's protections.

* A job is valid only where its queue lets it in (``job_valid``, the queue's :class:`QueueAccess`):
  its namespace must match the queue's ``namespaceSelector``, every priority class it names must be
  one of the queue's ``priorityClasses`` (a system-critical class outside kube-system only when the
  queue lists it), and no priority of it may pass the queue's ``maxPriority``. A job that breaks a
  rule stays pending, its event naming the rule.
* Per namespace inside a queue (``perNamespace``): at most ``maxRunningJobs`` admitted jobs (voted at
  enqueue) and ``maxRunningPods`` pods holding a node (voted at enqueue for the job's minimum, and at every
  placement); a job these votes keep out is not allocatable either (no reservation, no eviction for
  it). Registered only while some queue sets a limit.
* Never a victim: anything in kube-system; a system-critical pod whose queue allows its class; a pod
  annotated ``scheduling.volsched.io/preemptable: "false"`` whose queue has ``allowNotPreemptable``.

Who may do what, and why: docs/tenancy.md. The rules read the snapshot only (no I/O).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import ClassVar

from volsched.framework.plugin import BasePlugin
from volsched.framework.points import EventHandler, ExtensionPoints, Vote
from volsched.framework.registry import register_plugin
from volsched.model.cluster import Job
from volsched.model.tenancy import critical_allowed, queue_refusal
from volsched.model.vocabulary import (
    ALLOCATED_STATUSES,
    CRITICAL_PRIORITY_CLASSES,
    OPEN_ACCESS,
    SYSTEM_NAMESPACE,
    PodGroupPhase,
    QueueAccess,
    QueueSpec,
    Task,
    TaskStatus,
)


def protected(task: Task, access: QueueAccess = OPEN_ACCESS) -> bool:
    """Whether ``task`` (of a job in a queue with ``access``) is never a victim."""
    if task.namespace == SYSTEM_NAMESPACE:
        return True
    if task.critical and critical_allowed(access, task.priority_class, task.namespace):
        return True
    return task.preemptable is False and access.allow_not_preemptable


def job_classes(job: Job) -> list[str]:
    """The priority classes a job names (its PodGroup's and its pods'), each once, in order."""
    out: dict[str, None] = {}
    if job.podgroup is not None and job.podgroup.priority_class_name:
        out[job.podgroup.priority_class_name] = None
    for t in job.tasks.values():
        if t.priority_class:
            out[t.priority_class] = None
    return list(out)


def access_refusal(job: Job, queue: QueueSpec, namespace_labels: Mapping[str, str]) -> str | None:
    """Which of ``queue``'s rules ``job`` breaks (the first), or None."""
    top = max([job.priority, *(t.priority for t in job.tasks.values())])
    return queue_refusal(
        queue,
        namespace=job.namespace,
        namespace_labels=namespace_labels,
        classes=job_classes(job),
        priority=top,
    )


def _live(job: Job) -> bool:
    """An admitted job that still counts as running in its queue (not finished)."""
    if job.phase is PodGroupPhase.PENDING or job.phase is PodGroupPhase.COMPLETED:
        return False
    if not job.tasks:
        return True
    c = job.status_count
    return len(job.tasks) > c.get(TaskStatus.SUCCEEDED, 0) + c.get(TaskStatus.FAILED, 0)


def _holding(job: Job) -> int:
    c = job.status_count
    return sum(c.get(s, 0) for s in ALLOCATED_STATUSES)


class NamespaceCounts:
    """Per (queue, namespace): the admitted jobs still running, and the pods holding a node, for the
    queues that limit namespaces; kept as the session admits jobs and places or evicts pods."""

    def __init__(self, queues: Mapping[str, QueueSpec], jobs: Mapping[str, Job]) -> None:
        self.queues = queues
        self.jobs = jobs
        self.running: dict[tuple[str, str], int] = {}
        self.pods: dict[tuple[str, str], int] = {}
        #: The pods admitted jobs still need to reach their minimum (what admission promised them).
        self.promised: dict[tuple[str, str], int] = {}
        limited = {name for name, q in queues.items() if q.access.limits_namespaces}
        for job in jobs.values():
            if job.queue not in limited:
                continue
            key = (job.queue, job.namespace)
            held = _holding(job)
            if _live(job):
                self.running[key] = self.running.get(key, 0) + 1
                self.promised[key] = self.promised.get(key, 0) + max(job.min_member - held, 0)
            if held:
                self.pods[key] = self.pods.get(key, 0) + held

    def enqueueable(self, job: Job) -> tuple[Vote, str]:
        q = self.queues.get(job.queue)
        if q is None or not q.access.limits_namespaces:
            return Vote.ABSTAIN, ""
        access, key = q.access, (job.queue, job.namespace)
        most = access.max_running_jobs
        if most is not None and self.running.get(key, 0) + 1 > most:
            return Vote.REJECT, (
                f"namespace {job.namespace} runs {self.running.get(key, 0)} jobs in queue {q.name}, "
                f"its perNamespace.maxRunningJobs is {most}"
            )
        most = access.max_running_pods
        need = max(job.min_member - _holding(job), 0)
        held = self.pods.get(key, 0) + self.promised.get(key, 0)
        if most is not None and held + need > most:
            return Vote.REJECT, (
                f"namespace {job.namespace} runs or was promised {held} pods in queue {q.name}; "
                f"{need} more would pass its perNamespace.maxRunningPods {most}"
            )
        return Vote.ABSTAIN, ""

    def enqueued(self, job: Job) -> None:
        q = self.queues.get(job.queue)
        if q is not None and q.access.limits_namespaces:
            key = (job.queue, job.namespace)
            self.running[key] = self.running.get(key, 0) + 1
            self.promised[key] = self.promised.get(key, 0) + max(job.min_member - _holding(job), 0)

    def allocatable(self, queue: QueueSpec, task: Task) -> str | None:
        job = self.jobs.get(task.job_key)
        if job is not None and job.phase is PodGroupPhase.PENDING:
            # Not admitted: as enqueue would vote (what a reservation or an eviction for it asks; neither
            # lets it in before the namespace's jobs or pods in the queue end).
            vote, why = self.enqueueable(job)
            if vote is Vote.REJECT:
                return why
        most = queue.access.max_running_pods
        if most is None:
            return None
        held = self.pods.get((queue.name, task.namespace), 0)
        if held + 1 > most:
            return (
                f"namespace {task.namespace} runs {held} pods in queue {queue.name}, "
                f"its perNamespace.maxRunningPods is {most}"
            )
        return None

    def moved(self, step: int) -> Callable[[Task], None]:
        def handler(task: Task) -> None:
            job = self.jobs.get(task.job_key)
            q = self.queues.get(job.queue) if job is not None else None
            if job is not None and q is not None and q.access.max_running_pods is not None:
                key = (q.name, task.namespace)
                self.pods[key] = self.pods.get(key, 0) + step

        return handler


@register_plugin
class Conformance(BasePlugin):
    name: ClassVar[str] = "conformance"
    reads_clock: ClassVar[bool] = False
    answers_by_shape: ClassVar[bool] = True
    job_answers_kept: ClassVar[bool] = True

    def on_session_open(self, session: ExtensionPoints) -> None:
        queues = session.queues
        jobs = session.jobs
        labels = session.snapshot.namespace_labels
        no_labels: dict[str, str] = {}
        ruled = {name for name, q in queues.items() if q.access is not OPEN_ACCESS}

        def access_of(task: Task) -> QueueAccess:
            job = jobs.get(task.job_key)
            q = queues.get(job.queue) if job is not None else None
            return q.access if q is not None else OPEN_ACCESS

        def victims(actor: Task, candidates: list[Task]) -> list[Task]:
            return [t for t in candidates if not protected(t, access_of(t))]

        def valid(job: Job) -> str | None:
            q = queues.get(job.queue)
            if q is None:
                return None  # the action says the queue does not exist
            if job.queue not in ruled and not _names_critical(job):
                return None
            return access_refusal(job, q, labels.get(job.namespace, no_labels))

        def valid_run(run: Sequence[Job]) -> list[str | None]:
            """``valid`` of each job. With no queue that has rules, only a job that may name a
            system-critical class is asked: one of a PodGroup, or a pod standing alone at a
            system-critical priority (the classes' values; a backlog's every pod, as a rule, is
            passed over by C-level scans, with no call per job)."""
            if ruled:
                return [valid(job) for job in run]
            out: list[str | None] = [None] * len(run)
            every = range(len(run))
            asked = set(compress(every, map(CRITICAL_FLOOR.__le__, map(_priority, run))))
            asked.update(compress(every, map(is_not, map(_podgroup, run), repeat(None))))
            for k in sorted(asked):
                out[k] = valid(run[k])
            return out

        session.add_preemptable_fn(self.name, victims)
        session.add_reclaimable_fn(self.name, victims)
        session.add_job_valid_fn(self.name, valid)
        session.add_jobs_valid_fn(self.name, valid_run)
        if any(q.access.limits_namespaces for q in queues.values()):
            counts = NamespaceCounts(queues, jobs)
            session.add_job_enqueueable_fn(self.name, counts.enqueueable)
            session.add_job_enqueued_fn(self.name, counts.enqueued)
            session.add_allocatable_fn(self.name, counts.allocatable)
            session.add_event_handler(EventHandler(allocate=counts.moved(1), deallocate=counts.moved(-1)))


#: The lowest priority of the system-critical classes (system-cluster-critical's 2000000000): a pod of
#: such a class below it was not given the class's priority (its class is not defined).
CRITICAL_FLOOR = 2_000_000_000
_priority = attrgetter("priority")
_podgroup = attrgetter("podgroup")


def _names_critical(job: Job) -> bool:
    """Whether a job outside kube-system names a system-critical class (the one rule every queue has)."""
    if job.namespace == SYSTEM_NAMESPACE:
        return False
    if job.podgroup is not None and job.podgroup.priority_class_name in CRITICAL_PRIORITY_CLASSES:
        return True
    return any(t.critical for t in job.tasks.values())
