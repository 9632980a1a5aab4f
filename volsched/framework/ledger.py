"""The session's ledger: what its jobs hold, ask and still miss, per queue and per namespace.

:class:`SessionLedger` answers the questions of :class:`~volsched.framework.points.Ledger` (what plugins
see) for one session, as the session stands when asked: the session tells it of every change a
Statement makes (a task's status, a job's phase), and an answer is summed again, when next asked, after
one. Every sum is the float a walk adding each job in the session's order from zero gives. It decides
nothing and does no I/O.

How it avoids that walk over the jobs nobody changes (the settled run kept from the last session, its
gaps) is private to it and :mod:`volsched.framework.settled`: docs/design/steady-state.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from volsched.framework.settled import KEPT, Settled, ahead, fold, settle
from volsched.model.cluster import (
    Holdings,
    Job,
    any_constrained,
    any_held_host_ports,
    holdings,
    minimum_met,
    unmet_minimum_rows,
)
from volsched.model.resources import Vector, stack_rows
from volsched.model.vocabulary import PodGroupPhase, TaskStatus
from volsched.records import dataclass

_QUEUE: attrgetter[str] = attrgetter("queue")
_NAMESPACE: attrgetter[str] = attrgetter("namespace")


@dataclass
class _Answers:
    """The ledger's answers since the last change (None: not asked since)."""

    held_by_queue: Mapping[str, Vector] | None = None
    held_by_namespace: Mapping[str, Vector] | None = None
    asked_by_queue: Mapping[str, Vector] | None = None
    asked_by_namespace: Mapping[str, Vector] | None = None
    unmet_by_namespace: Mapping[str, Vector] | None = None
    unmet_by_queue: Mapping[str, Vector] | None = None
    unmet: Vector | None = None
    asking_jobs: Sequence[Job] | None = None
    #: What each job after the run holds, one row each (the sums' rows once a status changed).
    rest_rows: npt.NDArray[np.float64] | None = None
    short_gangs: Sequence[Job] | None = None


class SessionLedger:
    """The ledger of one session's jobs (``jobs``: the session's, in its order). ``kept``: where the
    snapshot keeps what the last session's ledger found (``ClusterSnapshot.kept``)."""

    def __init__(self, jobs: dict[str, Job], kept: dict[str, object], width: int) -> None:
        self._jobs = jobs
        self._kept = kept
        self._width = width
        #: The leading run of jobs no session changes (found when first needed) and the jobs after it
        #: (its gaps first).
        self._run: Settled | None = None
        #: The run as ``settle`` kept it (``_run`` may name the session's copies in ``committed``).
        self._base: Settled | None = None
        self._rest: list[Job] = []
        #: The keys of the run's gaps: a change to one drops the run, found again when next needed.
        self._gaps: frozenset[str] = frozenset()
        #: Whether the run was found once already (the opens read it then).
        self._found = False
        #: The jobs after the run that hold something, and what each holds (dropped by every change).
        self._holdings: Holdings | None = None
        #: Answers given since the last change.
        self._answers = _Answers()
        #: Whether a task's status changed in this session: a job whose tasks are all pending then may
        #: hold float dust (placements undone), so the sums walk it too.
        self._moved = False
        #: Whether a task's status or a job's phase changed in this session: the run's unmet minimums
        #: are then no longer sure (a gap admitted, or holding dust), so the unmet sums walk every job.
        self._changed = False
        #: The jobs after the run that the last session's open did not see (``_unseen``), with the list of
        #: jobs after the run they were found in, and what the last session saw (None: not taken).
        self._unseen: tuple[list[Job], tuple[Sequence[Job], _Seen] | None] | None = None
        #: What the next session will have seen: the run, what this one saw, the shared jobs after them.
        self._grow: tuple[Settled, _Seen, Sequence[Job]] | None = None

    # --- what the session tells it ------------------------------------------------------------------

    def status_changed(self, job: Job) -> None:
        """A task of ``job`` changed status (the Statement did or undid something)."""
        self._holdings = None
        self._answers = _Answers()
        self._moved = self._changed = True
        if job.origin is not None:  # a copy of a shared job, changed: no longer what it stands for
            job.origin = None
            self._run = None  # the run may hold it: found again when next needed
        elif self._gaps and job.key in self._gaps:  # a gap of the run, changed: no longer as it was
            self._run = None
            self._gaps = frozenset()

    def phases_changing(self, jobs: Sequence[Job]) -> None:
        """``jobs`` are about to change phase (admitted, or an admission undone)."""
        self._answers = _Answers()
        self._changed = True
        for job in jobs:
            if job.origin is not None:
                job.origin = None
                self._run = None

    # --- the run (framework-private) ----------------------------------------------------------------

    def settled(self) -> Settled:
        """The leading run of the session's jobs that no session changes, with what it sums to (see
        :mod:`volsched.framework.settled`): kept from the last session's snapshot while the jobs begin
        with the same ones (or a session's unchanged copies of them). The same from open to close, but
        for a copy of a shared job or a gap that the session changed: the run is found again, up to it,
        when next asked."""
        out = self._run
        if out is None:
            jobs = list(self._jobs.values())
            # (found again after the session changed a job: for the close, which adds no unmet minimum)
            out = settle(jobs, self._kept, self._width, again=self._found, present=self._jobs)
            self._found = True
            self._base = out
            mine = self._jobs
            if any(mine[j.key] is not j for j in out.committed):
                # The run names shared jobs; those short of minMember are read (proportion) as the
                # session changes them: the session's own copies, then.
                out = replace(out, committed=[mine[j.key] for j in out.committed])
            self._run = out
            gaps = out.gaps
            self._rest = [jobs[g.at] for g in gaps] + jobs[out.span :] if gaps else jobs[out.span :]
            self._gaps = frozenset(g.key for g in gaps)
        return out

    def keep_ahead(self) -> None:
        """At the close, the session's binds sent: the kept run extended by the jobs that settled after it
        (``settled.ahead``), for the next session; the session asks nothing after this. Nothing when
        the run was dropped since it was last found (a copy of a shared job changed)."""
        if self._run is not None and self._base is not None:
            ahead(self._kept, self._base, self._rest)
        grow = self._grow
        # (the run extended: the next session's open sees anew what follows it)
        if grow is not None and self._kept.get(KEPT) is grow[0]:
            self._kept[_KEPT_SEEN] = _grown(*grow)

    def unsettled(self) -> list[Job]:
        """The session's jobs not in its :meth:`settled` run, in order: the run's gaps (the jobs in its
        span that are not in it), then the jobs after its span."""
        self.settled()
        return self._rest

    def holdings(self) -> Holdings:
        """The jobs after the :meth:`settled` run that hold something now (not all pending), in the
        session's order, and what each holds, one row each (made again after a change)."""
        out = self._holdings
        if out is None:
            out = self._holdings = holdings(self.unsettled(), self._width)
        return out

    def _since(self) -> tuple[Sequence[Job], _Seen] | None:
        """The jobs after the run that the last session's open did not see, in order, with what it saw
        (:class:`_Seen`), where this session's jobs after the run begin with the very shared jobs it saw
        there, on the very same run with no gap; None where they do not (the walks then go over every job
        after the run). Those jobs are shared: no session changes them, so what was said of them holds
        (whether one asks, is a gang short of its minimum, adds to the unmet sums, may hold host ports or
        has pod constraints), and a walk over the jobs after the run need only go over the others. Found
        once for the jobs after the run (again where the run was found again); kept for the next
        session, grown by the shared jobs that now lead the ones not seen (at the close, off the way to
        the bind, where the run is not extended then)."""
        rest = self.unsettled()
        found = self._unseen
        if found is not None and found[0] is rest:
            return found[1]
        base = self._base
        if base is None or base.gaps:
            self._unseen = (rest, None)
            return None
        last = self._kept.get(_KEPT_SEEN)
        seen = last if isinstance(last, _Seen) and last.run is base and _leads(last.jobs, rest) else None
        unseen = rest[len(seen.jobs) :] if seen is not None else rest
        k = 0
        for job in unseen:  # (the shared ones that lead those not seen: seen from now on)
            if not job.shared:
                break
            k += 1
        if seen is None:  # (the first session on this run: what it sees is said of now)
            self._kept[_KEPT_SEEN] = _grown(base, None, unseen[:k])
        elif k:  # (grown at the close, after the binds went out: ``keep_ahead``)
            self._grow = (base, seen, unseen[:k])
        out = None if seen is None else (unseen, seen)
        self._unseen = (rest, out)
        return out

    def _rest_rows(self) -> npt.NDArray[np.float64]:
        """What each job after the run holds now, one row each, stacked once until the next change."""
        out = self._answers.rest_rows
        if out is None:
            out = self._answers.rest_rows = stack_rows([j.allocated for j in self.unsettled()], self._width)
        return out

    def _after_gaps(self) -> Sequence[Job]:
        """The jobs after the run's span (what the run's gaps ask is in its sums already)."""
        run = self.settled()
        rest = self._rest
        return rest[len(run.gaps) :] if run.gaps else rest

    # --- the questions (points.Ledger) --------------------------------------------------------------

    def held_by_queue(self) -> Mapping[str, Vector]:
        out = self._answers.held_by_queue
        if out is None:
            out = self._alike(_QUEUE, self._answers.held_by_namespace)
            out = self._answers.held_by_queue = self._held(_QUEUE) if out is None else out
        return out

    def held_by_namespace(self) -> Mapping[str, Vector]:
        out = self._answers.held_by_namespace
        if out is None:
            out = self._alike(_NAMESPACE, self._answers.held_by_queue)
            out = self._answers.held_by_namespace = self._held(_NAMESPACE) if out is None else out
        return out

    def _alike(self, key: attrgetter[str], other: Mapping[str, Vector] | None) -> dict[str, Vector] | None:
        """What the jobs hold per ``key`` (queue or namespace) as the other one's answer ``other`` (given
        since the last change) has it, where both are one sum of the very same rows: every job after the
        run in one queue and one namespace, and the run's one sum per queue and per namespace the same
        floats (or none). Its one vector then (read-only, shared), else None. A cluster whose pods
        stand alone in one namespace and its default queue asks both every session (drf, proportion);
        not asked past ``_ALIKE`` jobs after the run (a backlog's first session: a walk over them all)."""
        if other is None or len(other) != 1 or len(self.unsettled()) > _ALIKE:
            return None
        run = self.settled()
        mine, theirs = (run.queue, run.namespace) if key is _QUEUE else (run.namespace, run.queue)
        if len(mine) != len(theirs) or len(mine) > 1:
            return None
        if mine:
            ((name, a),) = mine.items()
            ((_, b),) = theirs.items()
            if a.tobytes() != b.tobytes():
                return None
        else:
            jobs = self.unsettled()
            if not jobs:
                return None
            name = key(jobs[0])
        ((kept, held),) = other.items()
        them = _NAMESPACE if key is _QUEUE else _QUEUE
        for job in self.unsettled():
            if key(job) != name or them(job) != kept:
                return None
        return {name: held}

    def _held(self, key: attrgetter[str]) -> dict[str, Vector]:
        """Per ``key`` of a job (its queue or namespace): what the jobs hold. As the session opened (no
        task moved yet), the last session's answer as it opened brought up by the jobs that hold
        something since, where it stands on the same run and the jobs after the run that held
        something then still begin the ones that do (:meth:`_held_since`)."""
        run = self.settled()
        start = run.queue if key is _QUEUE else run.namespace
        if self._moved:  # every job after the run (a job all pending again may hold float dust)
            return _frozen(fold(start, list(map(key, self.unsettled())), self._rest_rows(), self._width))
        kept_as = _KEPT_HELD[key]
        carried = self._kept.get(kept_as)
        if isinstance(carried, _OpenHeld) and carried.run is self._base:
            since = self._held_since(carried, key)
            if since is not None:
                return since
        held = self.holdings()  # (a job all pending holds zeros: only the keys are wanted of it)
        out = fold(start, list(map(key, held.jobs)), held.matrix, self._width)
        for k in set(map(key, self.unsettled())).difference(out):
            out[k] = np.zeros(self._width)
        out = _frozen(out)
        # (the run's keys and no other: a key new after the run, or one only all-pending jobs have, takes
        # a place in the order the next session's fold may not give it)
        if len(out) == len(start) and self._base is not None and all(map(_SHARED, held.jobs)):
            self._kept[kept_as] = _OpenHeld(self._base, held.jobs, out)
        return out

    def _held_since(self, carried: _OpenHeld, key: attrgetter[str]) -> dict[str, Vector] | None:
        """:meth:`_held` as this session opens, from the last session's (``carried``, on the very run
        this one starts from): where the jobs after the run that hold something begin with the very jobs
        that held something then (shared: no session changes them, so they hold what they held) and
        the ones after those are shared too, and every job after the run is of a key of the run, the
        answer is the last one with each later job's holding added to its key's sum, in order: the
        additions :func:`~volsched.framework.settled.fold` makes, the earlier ones already made (the same
        floats, the same keys in the same order). None where that does not hold."""
        rest = self.unsettled()
        pending = TaskStatus.PENDING
        # (``holdings``' jobs, not stacked)
        held = [j for j in rest if j.status_count.get(pending, 0) != len(j.tasks)]
        before = carried.jobs
        n = len(before)
        if held[:n] != before:  # (by identity: a Job has no __eq__)
            return None
        after = held[n:]
        if after and not before:  # (``fold`` of no row copies the run's sums, of a row adds them to 0.0)
            return None
        sums = carried.sums
        if not all(map(_SHARED, after)) or not sums.keys() >= set(map(key, rest)):
            return None
        out = dict(sums)  # (read-only vectors, shared: a sum no later job adds to is the one kept)
        for job in after:
            k = key(job)
            out[k] = total = out[k] + job.allocated
            total.setflags(write=False)
        self._kept[_KEPT_HELD[key]] = _OpenHeld(carried.run, held, out)
        return out

    def asked_by_queue(self) -> Mapping[str, Vector]:
        out = self._answers.asked_by_queue
        if out is None:
            run = self.settled()
            pending, pipelined = TaskStatus.PENDING, TaskStatus.PIPELINED
            rest = self.unsettled()
            gaps = len(run.gaps)  # the first of the jobs after the run: what they ask is in its sums
            asking = [
                k
                for k, job in enumerate(rest)
                if k >= gaps and (job.status_count.get(pending) or job.status_count.get(pipelined))
            ]
            if asking or run.request:
                # each job's row: what it holds, or for one that asks what it holds and asks
                rows = self._rest_rows()
                if asking:
                    rows = _asked_rows(rows, rest, asking, self._width)
                out = _frozen(fold({**run.queue, **run.request}, list(map(_QUEUE, rest)), rows, self._width))
            else:
                out = self.held_by_queue()
            self._answers.asked_by_queue = out
        return out

    def asked_by_namespace(self) -> Mapping[str, Vector]:
        # (no consumer sums it every session: a walk over every job, the run kept no sum for it)
        out = self._answers.asked_by_namespace
        if out is None:
            jobs = list(self._jobs.values())
            rows = [j.total_request() for j in jobs]
            out = self._answers.asked_by_namespace = _frozen(
                fold({}, list(map(_NAMESPACE, jobs)), rows, self._width)
            )
        return out

    def unmet_by_namespace(self) -> Mapping[str, Vector]:
        # (a walk over every job, as ``asked_by_namespace``)
        out = self._answers.unmet_by_namespace
        if out is None:
            out = self._answers.unmet_by_namespace = self._unmet_walk(_NAMESPACE)
        return out

    def unmet_by_queue(self) -> Mapping[str, Vector]:
        out = self._answers.unmet_by_queue
        if out is None:
            if self._changed:
                out = self._answers.unmet_by_queue = self._unmet_walk(_QUEUE)
                return out
            run = self.settled()
            inqueue = PodGroupPhase.INQUEUE
            admitted = [j for j in self._after_gaps() if j.phase is inqueue]
            if not _adding(admitted):  # the run's sums, nothing added: an arriving pod's session
                out = dict(run.unmet_queue)
                for job in admitted:  # (the queue of a job that adds zeros: zeros, as the sum it has)
                    if job.queue not in out:
                        out[job.queue] = _read_only(np.zeros(self._width))
                self._answers.unmet_by_queue = out
                return out
            index = {q: i for i, q in enumerate(run.unmet_queue)}
            rows = [index.setdefault(j.queue, len(index)) for j in admitted]
            sums = np.zeros((len(index), self._width))
            for i, v in enumerate(run.unmet_queue.values()):
                sums[i] = v
            unmet_minimum_rows(admitted, rows, sums)
            out = self._answers.unmet_by_queue = _frozen({q: sums[i] for q, i in index.items()})
        return out

    def unmet(self) -> Vector:
        out = self._answers.unmet
        if out is None:
            inqueue = PodGroupPhase.INQUEUE
            if self._changed:
                admitted = [j for j in self._jobs.values() if j.phase is inqueue]
                total = np.zeros((1, self._width))
            else:
                since = self._since()
                # (none of the jobs seen adds: shared, as they were)
                if (
                    since is not None
                    and not since[1].adding
                    and not _adding([j for j in since[0] if j.phase is inqueue])
                ):
                    out = self._answers.unmet = self.settled().unmet_all
                    return out
                admitted = [j for j in self._after_gaps() if j.phase is inqueue]
                if not _adding(admitted):  # the run's sum, nothing added: an arriving pod's session
                    out = self._answers.unmet = self.settled().unmet_all
                    return out
                total = self.settled().unmet_all.reshape(1, self._width).copy()
            unmet_minimum_rows(admitted, [0] * len(admitted), total)
            out = self._answers.unmet = total[0]
            out.setflags(write=False)
        return out

    def _unmet_walk(self, key: attrgetter[str]) -> dict[str, Vector]:
        """Per ``key`` of an admitted job (its queue or namespace): its unmet minimum, a walk over every
        job (after a change in the session, or for a sum the run does not keep)."""
        inqueue = PodGroupPhase.INQUEUE
        admitted = [j for j in self._jobs.values() if j.phase is inqueue]
        index: dict[str, int] = {}
        rows = [index.setdefault(key(j), len(index)) for j in admitted]
        sums = np.zeros((len(index), self._width))
        unmet_minimum_rows(admitted, rows, sums)
        return _frozen({k: sums[i] for k, i in index.items()})

    def asking_jobs(self) -> Sequence[Job]:
        out = self._answers.asking_jobs
        if out is None:
            pending, pipelined, waiting = TaskStatus.PENDING, TaskStatus.PIPELINED, PodGroupPhase.PENDING
            since = self._since()
            out = [
                j
                for j in (since[0] if since is not None and not since[1].asking else self.unsettled())
                if j.status_count.get(pending)
                or j.status_count.get(pipelined)
                or (j.phase is waiting and not j.tasks and j.podgroup is not None)
            ]
            self._answers.asking_jobs = out
        return out

    def short_gangs(self) -> Sequence[Job]:
        out = self._answers.short_gangs
        if out is None:
            inqueue = PodGroupPhase.INQUEUE
            since = self._since()
            jobs = since[0] if since is not None and not since[1].short else self.unsettled()
            out = [
                *self.settled().committed,
                # (``settled.committed``, written out: a call per job costs a backlog's first session more)
                *(j for j in jobs if j.ready < j.min_member and (j.ready or j.phase is inqueue)),
            ]
            self._answers.short_gangs = out
        return out

    def any_host_ports(self) -> bool:
        # (the jobs after the run: ``any_held_host_ports`` passes over one whose every task is pending,
        # which holds no port on a node, so the jobs that hold something need not be picked first)
        if self.settled().host_ports:
            return True
        since = self._since()
        if since is not None:
            return since[1].host_ports or any_held_host_ports(since[0])
        return any_held_host_ports(self.unsettled())

    def any_constrained(self) -> bool:
        if self.settled().constrained:
            return True
        since = self._since()
        if since is not None:
            return since[1].constrained or any_constrained(since[0])
        return any_constrained(self.unsettled())


@dataclass(slots=True)
class _OpenHeld:
    """What a session's jobs held per queue or per namespace as it opened (``sums``, read-only), made
    from ``run`` (the settled run as ``settle`` gave it) and what each of ``jobs`` (the jobs after the
    run that held something, all shared, in order) held, for the next session (``SessionLedger._held``;
    kept in ``ClusterSnapshot.kept``; not frozen, as :class:`_Seen`)."""

    run: Settled
    jobs: list[Job]
    sums: dict[str, Vector]


@dataclass(slots=True)
class _Seen:
    """The jobs after ``run`` (the settled run as ``settle`` gave it, with no gap) that a session's open
    found shared, from the first, in order, and whether any of them asks of its queue
    (``asking_jobs``), is a gang short of its minimum (``short_gangs``), adds to the unmet sums
    (``unmet``), may hold host ports on a node or has pod constraints: shared jobs, which no session
    changes, so each stays as said. Kept for the next session (``SessionLedger._since``). Not frozen: a
    frozen class's ``__init__`` sets each field through ``object.__setattr__``, and one is made every
    session; nothing changes one once made."""

    run: Settled
    jobs: list[Job]
    asking: bool
    short: bool
    adding: bool
    host_ports: bool
    constrained: bool


def _grown(run: Settled, seen: _Seen | None, jobs: Sequence[Job]) -> _Seen:
    """``seen`` (None: nothing seen) on ``run``, with the shared ``jobs`` that follow its jobs seen too."""
    inqueue = PodGroupPhase.INQUEUE
    return _Seen(
        run=run,
        jobs=[*seen.jobs, *jobs] if seen is not None else list(jobs),
        asking=(seen is not None and seen.asking) or any(map(_asking, jobs)),
        short=(seen is not None and seen.short) or any(map(_short, jobs)),
        adding=(seen is not None and seen.adding) or _adding([j for j in jobs if j.phase is inqueue]),
        host_ports=(seen is not None and seen.host_ports) or any_held_host_ports(jobs),
        constrained=(seen is not None and seen.constrained) or any_constrained(jobs),
    )


#: Where the ledger keeps :class:`_Seen` (``ClusterSnapshot.kept``).
_KEPT_SEEN = "ledger: seen after the run"


def _leads(jobs: list[Job], rest: list[Job]) -> bool:
    """Whether ``rest`` begins with the very ``jobs`` (by identity: a Job has no __eq__)."""
    return len(jobs) <= len(rest) and rest[: len(jobs)] == jobs


def _asking(job: Job) -> bool:
    """Whether ``job`` is among ``asking_jobs``' (a pod pending or pipelined, or a PodGroup waiting
    for admission with no pod)."""
    c = job.status_count
    return bool(
        c.get(TaskStatus.PENDING)
        or c.get(TaskStatus.PIPELINED)
        or (job.phase is PodGroupPhase.PENDING and not job.tasks and job.podgroup is not None)
    )


def _short(job: Job) -> bool:
    """Whether ``job`` is among ``short_gangs``' (short of minMember, holding members or admitted)."""
    return job.ready < job.min_member and bool(job.ready or job.phase is PodGroupPhase.INQUEUE)


#: Where the ledger keeps :class:`_OpenHeld` for each of the keys it sums by.
_KEPT_HELD = {_QUEUE: "ledger: held by queue", _NAMESPACE: "ledger: held by namespace"}
_SHARED: attrgetter[bool] = attrgetter("shared")


def _adding(admitted: Sequence[Job]) -> bool:
    """Whether one of the ``admitted`` jobs adds to the unmet sums: all but a shared job that holds its
    minimum, which ``unmet_minimum_rows`` leaves out (its zeros change no sum). An arriving pod's
    session has none such after the run: the pods bound before it hold their one-pod minimum."""
    return any(not (j.shared and minimum_met(j)) for j in admitted)


def _read_only(v: Vector) -> Vector:
    v.setflags(write=False)
    return v


#: At most this many jobs after the run for :meth:`SessionLedger._alike` to look at each.
_ALIKE = 64


def _asked_rows(
    rows: npt.NDArray[np.float64], jobs: Sequence[Job], asking: list[int], width: int
) -> npt.NDArray[np.float64]:
    """A copy of ``rows`` (what each of ``jobs`` holds) with the rows ``asking`` plus their jobs' pending
    and pipelined tasks' requests, each added in task order (``Job.total_request``'s floats), with one
    ``np.add.at`` over the tasks rather than a vector made per job (a backlog's thousand waiting jobs,
    every session)."""
    pending, pipelined = TaskStatus.PENDING, TaskStatus.PIPELINED
    at: list[int] = []
    requests: list[Vector] = []
    for k in asking:
        for t in jobs[k].tasks.values():
            status = t.status
            if status is pending or status is pipelined:
                at.append(k)
                requests.append(t.request)
    out = rows.copy()
    if at:  # (ufunc.at adds in the order of ``at``: a row taking several tasks adds them in task order)
        np.add.at(out, np.asarray(at, dtype=np.intp), stack_rows(requests, width))
    return out


def _frozen(sums: dict[str, Vector]) -> dict[str, Vector]:
    """``sums`` with its vectors read-only (a reader that adds to one copies it first)."""
    for v in sums.values():
        v.setflags(write=False)
    return sums
