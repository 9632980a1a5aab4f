"""A Statement records allocate, pipeline, evict and admit operations and applies or undoes them as a
whole.

Actions place a gang through one Statement: ``commit()`` when the gang is ready, ``discard()`` otherwise,
so a gang is never half-placed and nothing is evicted for a task that does not end up placed.
Operations take effect on the session's snapshot at once (so later choices see them); only ``commit``
turns them into decisions (binds, evictions, admissions) in the session result, and hands its binds to
the session's ``on_binds`` sink, if any, at once (the cycle sends them while the session goes on).
Actions change session state only through a Statement (and record refusals with ``session.reject``).
"""

from __future__ import annotations

from collections.abc import Sequence

from volsched.framework.decisions import Bind, Evict, EvictionReason
from volsched.framework.session import Session
from volsched.model import admitted
from volsched.model.cluster import Job, key_of
from volsched.model.vocabulary import PodGroupPhase, Task, TaskStatus
from volsched.records import dataclass


@dataclass(frozen=True, slots=True)
class _Op:
    """One allocation or pipelining in a statement, undone in reverse order."""

    kind: str  # allocate | pipeline
    task: Task
    node: int


@dataclass(frozen=True, slots=True)
class _EvictOp:
    """One eviction in a statement, with the status it had before."""

    task: Task
    previous: TaskStatus
    reason: EvictionReason
    may_return: bool


@dataclass(frozen=True, slots=True)
class _AdmitOp:
    """One job's admission in a statement, with the phase it had before."""

    job: Job
    previous: PodGroupPhase


@dataclass(frozen=True, slots=True)
class _AdmitRunOp:
    """Admissions of several jobs at once (``admit_all``), one operation."""

    jobs: tuple[Job, ...]
    previous: tuple[PodGroupPhase, ...]


class Statement:
    def __init__(self, session: Session) -> None:
        self.session = session
        self._ops: list[_Op | _EvictOp | _AdmitOp | _AdmitRunOp] = []

    def __len__(self) -> int:
        return len(self._ops)

    def allocate(self, task: Task, node: int) -> None:
        self.session.do_allocate(task, node)
        self._ops.append(_Op("allocate", task, node))

    def pipeline(self, task: Task, node: int) -> None:
        self.session.do_pipeline(task, node)
        self._ops.append(_Op("pipeline", task, node))

    def evict(self, task: Task, *, reason: EvictionReason, may_return: bool = True) -> None:
        """Evict ``task`` for ``reason.action``. ``may_return=False`` moves the pod off its node for good
        (its owner keeps off it for a while)."""
        previous = self.session.do_evict(task)
        self._ops.append(_EvictOp(task, previous, reason, may_return))

    def admit(self, job: Job) -> None:
        """Admit ``job`` into its queue (phase Inqueue): allocate may place it from now on."""
        (previous,) = self.session.do_admit((job,))
        self._ops.append(_AdmitOp(job, previous))

    def admit_all(self, jobs: Sequence[Job]) -> None:
        """:meth:`admit` each of ``jobs`` in order, as one operation (enqueue admits runs of jobs: one
        record for the run, not one a job); committed, discarded and rolled back as a whole."""
        run = tuple(jobs)
        self._ops.append(_AdmitRunOp(run, self.session.do_admit(run)))

    def commit(self) -> None:
        """Turn the recorded operations into decisions; the binds go to the session's ``on_binds`` at
        once, all of this commit's in one call. Pipelined tasks stay promised for this session only: the
        next session places them again once the evicted pods have released their nodes."""
        result = self.session.result
        binds: list[Bind] = []
        records: dict[str, str] = {}  # by job: one record for a gang's binds
        for op in self._ops:
            if isinstance(op, _AdmitOp):
                result.admitted.append(op.job.key)
            elif isinstance(op, _AdmitRunOp):
                result.admitted.extend(map(key_of, op.jobs))
            elif isinstance(op, _EvictOp):
                result.evictions.append(
                    Evict(
                        pod=op.task.key,
                        uid=op.task.uid,
                        node=op.task.node_name or "",
                        reason=op.reason,
                        may_return=op.may_return,
                    )
                )
            elif op.kind == "allocate":
                task = op.task
                node = self.session.nodes.names[op.node]
                result.bound_jobs.setdefault(task.job_key, []).append(node)
                under = records.get(task.job_key)
                if under is None:
                    under = records[task.job_key] = self._bound_under(task)
                if task.resource_claims or task.bind_claims:
                    claims = self.session.devices.by_task.get(task.key, ()) if task.resource_claims else ()
                    binding = self.session.volume_binding
                    volumes = binding.by_task.get(task.key, ()) if binding is not None else ()
                    binds.append(
                        Bind(
                            pod=task.key,
                            uid=task.uid,
                            node=node,
                            claims=claims,
                            volumes=volumes,
                            bound_under=under,
                        )
                    )
                else:
                    binds.append(Bind(pod=task.key, uid=task.uid, node=node, bound_under=under))
        self._ops.clear()
        if binds:
            result.binds.extend(binds)
            if self.session.on_binds is not None:
                self.session.on_binds(binds)  # one call per commit: a gang's binds go out together

    def _bound_under(self, task: Task) -> str:
        """The record a bind of ``task`` writes on its pod: the PodGroup object its job stands for, the
        queue, priority class and priority the job has, the minMember it started with (this one, when
        it starts now). For a pod standing alone, ``admitted.STANDING_ALONE``: the cluster then shows it
        was bound so, and it keeps its name against a PodGroup of it (``volsched.cache.names``). "" for
        a pod of a group made for a controller owner's pods: no object of theirs can be made again."""
        job = self.session.jobs.get(task.job_key)
        pg = job.podgroup if job is not None else None
        if pg is None and task.standing_alone:
            return admitted.STANDING_ALONE
        if job is None or pg is None or pg.owner is not None or not pg.uid:
            return ""
        start = pg.admitted_min_member
        return admitted.bound_under(
            uid=pg.uid,
            queue=job.queue,
            priority_class=pg.priority_class_name,
            priority=job.priority,
            min_member=job.min_member if start is None else start,
        )

    def hold(self) -> None:
        """Keep the operations in effect for the rest of this session without making decisions of them
        (a gang that is pipelined but not ready keeps its promised capacity until the next session)."""
        self._ops.clear()

    def discard(self) -> None:
        """Undo every recorded operation, newest first."""
        self.rollback(0)

    def rollback(self, mark: int) -> None:
        """Undo the operations recorded since ``mark`` (an earlier ``len(statement)``), newest first."""
        while len(self._ops) > mark:
            op = self._ops.pop()
            if isinstance(op, _AdmitOp):
                self.session.undo_admit((op.job,), (op.previous,))
            elif isinstance(op, _AdmitRunOp):
                self.session.undo_admit(op.jobs, op.previous)
            elif isinstance(op, _EvictOp):
                self.session.undo_evict(op.task, op.previous)
            elif op.kind == "allocate":
                self.session.undo_allocate(op.task, op.node)
            else:
                self.session.undo_pipeline(op.task, op.node)
