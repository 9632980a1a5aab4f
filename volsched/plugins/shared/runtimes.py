"""How long a task has run and is expected to run, as the ``reservation`` and ``minruntime`` plugins
read it; and the minimum run time a configuration gives a queue or a priority class.

What the task says: its ``scheduling.volsched.io/expected-runtime`` annotation, then its
``activeDeadlineSeconds`` (the kubelet ends it by then); then (:func:`runtimes_of`) what the pods of its
namespace and queue took before (the snapshot's ``learned_runtimes``). What a plugin does without any
(how it stays conservative) is its own: see docs/starvation.md. Pure functions of the task, the
snapshot and the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field

from volsched.framework.plugin import Arguments
from volsched.framework.points import ExtensionPoints
from volsched.model.scalars import parse_duration
from volsched.model.vocabulary import DEFAULT_QUEUE, Task, TaskStatus
from volsched.records import dataclass

RUNNING = TaskStatus.RUNNING


def expected_runtime(task: Task) -> float | None:
    """Seconds ``task`` is expected to run once started: its annotation, else its active deadline (the
    most it may run), else None (not known)."""
    if task.expected_runtime is not None:
        return task.expected_runtime
    return task.active_deadline


def runtimes_of(session: ExtensionPoints) -> Callable[[Task], float | None]:
    """The session's expected run time of a task: what it says (:func:`expected_runtime`), else what
    the pods of its namespace and queue took before (the longest of the last runs, see
    :mod:`volsched.model.history`), else None."""
    learned = session.snapshot.learned_runtimes
    if not learned:
        return expected_runtime
    jobs = session.jobs

    def of(task: Task) -> float | None:
        own = expected_runtime(task)
        if own is not None:
            return own
        job = jobs.get(task.job_key)
        return learned.get((task.namespace, job.queue if job is not None else DEFAULT_QUEUE))

    return of


def ran_for(task: Task, now: float) -> float:
    """Seconds ``task`` has run at ``now``: 0 unless it is running with a known start (a pod bound but
    not started, or placed this session, has run nothing yet)."""
    if task.status is not RUNNING or task.start_time <= 0:
        return 0.0
    return max(0.0, now - task.start_time)


@dataclass(frozen=True)
class MinRuntimes:
    """Minimum run times, in seconds: for every pod, per queue and per priority class. A pod's is the
    largest that applies to it (each is a protection; the strictest holds)."""

    default: float = 0.0
    queues: Mapping[str, float] = field(default_factory=dict)
    priority_classes: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_arguments(cls, args: Arguments) -> MinRuntimes:
        """``minRuntime`` (every pod), ``queues.<name>`` and ``priorityClasses.<name>`` (durations)."""
        default = args.duration("minRuntime", 0.0, allow_zero=True)
        where = f"plugin {args.plugin}: argument"
        queues = {k: _duration(v, where=f"{where} queues.{k}") for k, v in args.with_prefix("queues.")}
        classes = {
            k: _duration(v, where=f"{where} priorityClasses.{k}")
            for k, v in args.with_prefix("priorityClasses.")
        }
        return cls(default, queues, classes)

    @property
    def any(self) -> bool:
        """Whether any pod has a minimum."""
        return (
            self.default > 0
            or any(v > 0 for v in self.queues.values())
            or any(v > 0 for v in self.priority_classes.values())
        )

    def of(self, task: Task, queue: str) -> float:
        """The minimum run time of ``task`` (of a job in ``queue``)."""
        return max(
            self.default, self.queues.get(queue, 0.0), self.priority_classes.get(task.priority_class, 0.0)
        )


def _duration(value: object, *, where: str) -> float:
    return parse_duration(value, where=where, allow_zero=True)
