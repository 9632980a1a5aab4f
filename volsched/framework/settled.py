"""What a session's opens and close sum over the jobs nobody changes, kept from one session to the next.

:class:`Settled` is the *settled run*: the leading run of a session's jobs that are shared (no session
changes them), with its *gaps* (jobs in its span that hold nothing), and what the run sums to per queue
and per namespace; the next session reuses it while its jobs begin with the same objects. It is an
optimisation only: every sum is the float a walk over every job gives. It decides nothing and does no
I/O. The run, gaps, thawed copies and their origin: docs/design/steady-state.md.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Container, Hashable, Iterable, Mapping, Sequence
from dataclasses import field, replace
from functools import cached_property
from operator import attrgetter, methodcaller
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from volsched.model.cluster import (
    Job,
    any_constrained,
    any_held_host_ports,
    minimum_met,
    sum_rows,
    unmet_minimum,
)
from volsched.model.resources import Vector, stack_rows
from volsched.model.vocabulary import PodGroupPhase, Task, TaskStatus
from volsched.records import dataclass

K = TypeVar("K", bound=Hashable)
#: Rows of sums: a matrix, or a list of vectors.
Rows = Sequence[Vector] | npt.NDArray[np.float64]

_QUEUE: attrgetter[str] = attrgetter("queue")
_NAMESPACE: attrgetter[str] = attrgetter("namespace")
_ORIGIN: attrgetter[Job | None] = attrgetter("origin")
_TASKS: attrgetter[dict[str, object]] = attrgetter("tasks")
_KEY: attrgetter[str] = attrgetter("key")
_PHASE: attrgetter[PodGroupPhase] = attrgetter("phase")
_COUNTS: attrgetter[Mapping[TaskStatus, int]] = attrgetter("status_count")
_ALLOCATED: attrgetter[Vector] = attrgetter("allocated")
_REQUEST: attrgetter[Vector] = attrgetter("request")
_JOB_TASKS: attrgetter[dict[str, Task]] = attrgetter("tasks")
_PENDING_COUNT = methodcaller("get", TaskStatus.PENDING, 0)

#: Where the run is kept in ``ClusterSnapshot.kept``.
KEPT = "settled"
#: At most this many gaps in a run (each is checked again by every session, and a backlog's first
#: session would otherwise look at every pending job for a shared one after them), but for the jobs set
#: aside (``STUCK``): those every session has, and a run that stopped at the first one past the limit left
#: every job after them (a cluster's every bound job) to be walked by every session.
MAX_GAPS = 64
#: Where the keys of the jobs set aside by the last session are kept (``ClusterSnapshot.kept``: a
#: frozenset, written by ``volsched.framework.never``): gaps the limit does not count.
STUCK = "settled: stuck"
#: At most this many jobs of a run may have left the session for the rest to be kept (each is looked
#: for with a few list comparisons).
MAX_GONE = 64
#: A run (not empty, with no gap) is extended only once at least this many jobs after it settle: until
#: then they are walked as the jobs after the run are, which gives the same floats (see "Same floats"
#: in docs/design/steady-state.md). An arriving pod's session finds one job settled since the last (the
#: pod placed then): extending the run by it (its sums folded, their exactness checked, its lists made
#: again) cost each such session more than walking a few jobs more does.
LAG = 8
#: At a session's close, a kept run with no gap is extended (:func:`ahead`) once at least this many jobs
#: after it settled: ``LAG - 1``, where the next session, finding one more settled (the pod bound by this
#: one), would extend it on its way to its first bind.
AHEAD = LAG - 1
#: A run's sums are exact (see :func:`_exactness`) while every row is a multiple of ``1 / GRAIN`` and a
#: column's sum stays under ``FRACTION_BOUND``, or every row of the column is whole and its sum stays
#: under ``WHOLE_BOUND``: each partial sum, in any order, is then a float with no rounding.
GRAIN = 1024.0
FRACTION_BOUND = 2.0**42
WHOLE_BOUND = 2.0**52


@dataclass(frozen=True)
class Gap:
    """A job in the run's span that is not in the run (see the module docstring): where it stands among
    the session's jobs, and what it asks of its queue (read-only), for the next session to check; and
    the run up to it, for a session that finds it changed to go on from there."""

    at: int
    key: str
    queue: str
    ask: Vector
    #: Its unmet minimum, when it is admitted and short of it (else None), read-only.
    unmet: Vector | None
    #: The run just before this gap, its lists left out (they are the prefixes of the later run's
    #: lists, these long: ``_before``).
    before: Settled
    jobs: int
    podgroups: int
    committed: int


@dataclass(frozen=True)
class Settled:
    """What the leading run of shared jobs holds (see the module docstring). The vectors are the run's
    own, read-only once kept: read them, copy them to add to them."""

    #: The run, in the session's order.
    jobs: list[Job]
    #: Resource dimensions.
    width: int
    #: Per queue name (known or not), what the run's jobs hold, added in order from zero.
    queue: dict[str, Vector]
    #: Per namespace of a job of the run, likewise (zeros for one whose jobs hold nothing).
    namespace: dict[str, Vector]
    #: The namespaces of the run's jobs that hold something (not all pending).
    holding_namespaces: frozenset[str]
    #: Per queue, the unmet minimum of the run's admitted (Inqueue) jobs, added in order from zero.
    unmet_queue: dict[str, Vector]
    #: The same over every queue (one sum, in the jobs' order).
    unmet_all: Vector
    #: The run's jobs short of minMember that hold members or are admitted (proportion completes them).
    committed: list[Job]
    #: Whether a task of the run's jobs on a node may ask for host ports (``any_held_host_ports``).
    host_ports: bool
    #: Whether a task of the run's jobs has pod affinity, anti-affinity or spread (``any_constrained``).
    constrained: bool
    #: The run's jobs with a PodGroup, in order.
    podgroups: list[Job]
    #: How many of the session's jobs the run spans: its jobs and its gaps.
    span: int = 0
    #: The gaps in the span, in order (see the module docstring).
    gaps: tuple[Gap, ...] = ()
    #: Per queue with a gap that asks something: what the run's jobs hold and the gaps ask, added in
    #: order from zero (the close's request; for another queue, what its jobs hold is what they ask).
    request: dict[str, Vector] = field(default_factory=dict)
    #: Per resource column, whether every row the run's sums added (what its jobs hold, their unmet
    #: minimums) is whole, and whether each is a multiple of ``1 / GRAIN`` (None: no row yet).
    whole: npt.NDArray[np.bool_] | None = None
    fraction: npt.NDArray[np.bool_] | None = None
    #: Whether every sum of the run is exact, whatever the order its rows are added in (see
    #: :func:`_exactness`): then the run of the jobs left when some leave is this run less their rows.
    exact: bool = True
    #: Each block of its gaps (:attr:`gap_blocks`) by its (first, last) indices, as :func:`_same_gaps`
    #: compares them (:func:`_block`): made once for the sessions that check them, and handed to the runs
    #: extended from this one past the same gaps (:func:`_share_gaps`).
    blocks: dict[tuple[int, int], _Block] = field(default_factory=dict, init=False, compare=False, repr=False)

    @cached_property
    def gap_blocks(self) -> list[tuple[int, int]]:
        """The runs of consecutive gaps (:func:`_gap_blocks`). They follow from the gaps alone, which do
        not change, so they are made once for the sessions that check them (every session, for the pods
        set aside), and handed to the runs extended from this one past the same gaps."""
        return _gap_blocks(self.gaps)


def empty(width: int) -> Settled:
    zeros = np.zeros(width)
    zeros.setflags(write=False)
    return Settled(
        jobs=[],
        width=width,
        queue={},
        namespace={},
        holding_namespaces=frozenset(),
        unmet_queue={},
        unmet_all=zeros,
        committed=[],
        host_ports=False,
        constrained=False,
        podgroups=[],
    )


def fold(
    start: dict[K, Vector],
    keys: Sequence[K],
    rows: Sequence[Vector] | npt.NDArray[np.float64],
    width: int,
) -> dict[K, Vector]:
    """Per key: ``start[key]`` (zero for a key it lacks) plus the ``rows`` of that key, one at a time in
    order (``keys[i]`` is the key of ``rows[i]``; ``rows`` a list or a matrix): the floats a walk adding
    every row in order from zero makes, when ``start`` is such a walk over the rows before. New arrays;
    ``start`` is not changed."""
    if not keys:
        return {key: row.copy() for key, row in start.items()}
    if len(keys) <= _FEW_ROWS:
        return _fold_few(start, keys, rows, width)
    index: dict[K, int] = {key: i for i, key in enumerate(start)}
    for key in dict.fromkeys(keys):  # new keys in the order first seen (a pass in C, then the few)
        index.setdefault(key, len(index))
    body = rows if isinstance(rows, np.ndarray) else stack_rows(rows, width)
    matrix = np.concatenate([stack_rows(list(start.values()), width), body.reshape(len(keys), width)])
    order = np.concatenate(
        [np.arange(len(start), dtype=np.intp), np.fromiter(map(index.__getitem__, keys), np.intp, len(keys))]
    )
    sums = sum_rows(matrix, order, len(index))
    return {key: sums[i] for key, i in index.items()}


#: Up to this many rows, :func:`fold` adds them one vector at a time (:func:`_fold_few`): a session
#: after one pod arrived folds a row or two into a few queues' sums, where the vectorised path's
#: dozen numpy calls cost more than the additions.
_FEW_ROWS = 8


def _fold_few(
    start: dict[K, Vector],
    keys: Sequence[K],
    rows: Sequence[Vector] | npt.NDArray[np.float64],
    width: int,
) -> dict[K, Vector]:
    """:func:`fold` for a few rows: the same IEEE additions in the same order (``sum_rows`` adds each
    key's rows one at a time from zero: ``0.0 + start``, then each row), the keys in the same order
    (``start``'s, then the new ones as first seen)."""
    out = {key: 0.0 + row for key, row in start.items()}
    body = rows.reshape(len(keys), width) if isinstance(rows, np.ndarray) else rows
    for key, row in zip(keys, body, strict=True):
        held = out.get(key)
        out[key] = 0.0 + row if held is None else held + row
    return out


def _unmet_rows(jobs: Iterable[Job]) -> list[tuple[Job, Vector]]:
    """The admitted jobs of ``jobs`` short of their minimum, each with its unmet minimum (one that holds
    it adds zeros: left out, as ``unmet_minimum_rows`` leaves it out)."""
    return [(job, unmet) for job in jobs if (unmet := _unmet(job)) is not None]


def committed(job: Job) -> bool:
    """Whether proportion completes ``job`` up to minMember past its queue's share: short of it, and
    holding members or admitted."""
    return job.ready < job.min_member and bool(job.ready or job.phase is PodGroupPhase.INQUEUE)


def _root(job: Job) -> Job:
    """The shared job that ``job`` stands for: itself, or the one a session's unchanged copy was
    copied from (``Job.origin``: a session that may evict works on copies, ``ClusterSnapshot.thaw``)."""
    origin = job.origin
    return job if origin is None else origin


def _settles(job: Job) -> bool:
    """Whether ``job`` may join the run: shared (so no session changes it) or a session's unchanged copy
    of a shared job, with nothing pending."""
    c = job.status_count
    return (
        (job.shared or job.origin is not None)
        and job.phase is not PodGroupPhase.PENDING
        and not c.get(TaskStatus.PENDING)
        and not c.get(TaskStatus.PIPELINED)
    )


def _gap(job: Job) -> bool:
    """Whether the run may go on past ``job``, which does not :func:`_settles`: it holds nothing (every
    task pending, or none)."""
    return job.status_count.get(TaskStatus.PENDING, 0) == len(job.tasks)


def _unmet(job: Job) -> Vector | None:
    """``job``'s unmet minimum when it is admitted and short of it, else None."""
    if job.phase is PodGroupPhase.INQUEUE and not minimum_met(job):
        return unmet_minimum(job)
    return None


def _extend(base: Settled, jobs: Sequence[Job]) -> Settled:
    """``base`` with ``jobs`` (shared, each :func:`_settles`, no gap among them) added after its span."""
    if not jobs:
        return base
    width = base.width
    unmet = _unmet_rows(jobs)
    unmet_rows = [u for _, u in unmet]
    few = len(jobs) <= _FEW_ROWS  # (a session after one pod arrived and another was bound: one or two)
    rows: Rows = [j.allocated for j in jobs] if few else stack_rows([j.allocated for j in jobs], width)
    request = base.request
    if request:  # a queue with a gap that asks: what the jobs in it hold, in order
        asked = [(j.queue, j.allocated) for j in jobs if j.queue in request]
        if asked:
            request = fold(request, [q for q, _ in asked], [r for _, r in asked], width)
    queue = fold(base.queue, [j.queue for j in jobs], rows, width)
    # (sums no row is added to are the run's own, read-only: kept as they are, where ``fold`` would copy
    # them; a steady state's jobs hold their minimum, and their queue has no gap)
    if unmet:
        unmet_all = fold({None: base.unmet_all}, [None] * len(unmet), unmet_rows, width)[None]
        unmet_queue = fold(base.unmet_queue, [j.queue for j, _ in unmet], unmet_rows, width)
    else:
        unmet_all, unmet_queue = base.unmet_all, base.unmet_queue
    exactness = _exactness_few if few else _exactness
    whole, fraction, exact = exactness(base, [rows, unmet_rows], [queue, {None: unmet_all}], width)
    out = Settled(
        jobs=[*base.jobs, *jobs],
        width=width,
        queue=queue,
        namespace=fold(base.namespace, [j.namespace for j in jobs], rows, width),
        # (not all pending: a job of the run has no task pending, so one with a task)
        holding_namespaces=base.holding_namespaces | {j.namespace for j in jobs if j.tasks},
        unmet_queue=unmet_queue,
        unmet_all=unmet_all,
        committed=[*base.committed, *(j for j in jobs if committed(j))],
        host_ports=base.host_ports or any_held_host_ports(jobs),
        constrained=base.constrained or any_constrained(jobs),
        podgroups=[*base.podgroups, *(j for j in jobs if j.podgroup is not None)],
        span=base.span + len(jobs),
        gaps=base.gaps,
        request=request,
        whole=whole,
        fraction=fraction,
        exact=exact,
    )
    _share_gaps(base, out)
    return out


def _share_gaps(base: Settled, out: Settled) -> None:
    """Hand ``out``, a run with ``base``'s very gaps, what was made of them for ``base`` (its
    ``gap_blocks`` and ``blocks``): they follow from the gaps alone, so a run extended by the jobs after
    its span (every session that bound a pod, the pods set aside its gaps) does not make them again."""
    if not base.gaps or out.gaps is not base.gaps:
        return
    object.__setattr__(out, "blocks", base.blocks)  # (a frozen dataclass: set as its __init__ sets)
    made = base.__dict__.get("gap_blocks")  # (a cached_property keeps its value in the instance's dict)
    if made is not None:
        out.__dict__["gap_blocks"] = made


def _total(sums: Mapping[Any, Vector], width: int) -> Vector:
    """The sums' sum per column (about: only compared with a bound far from it)."""
    return np.sum(stack_rows(list(sums.values()), width), axis=0) if sums else np.zeros(width)


def _exactness(
    base: Settled, families: Sequence[Rows], sums: Sequence[Mapping[Any, Vector]], width: int
) -> tuple[npt.NDArray[np.bool_] | None, npt.NDArray[np.bool_] | None, bool]:
    """``base``'s exactness with the rows of ``matrices`` added (their sums then ``totals``, per family
    of sums): whether each column's rows are all whole, all multiples of ``1 / GRAIN``, and whether
    the run's sums are exact in any order. They are when no row is negative and, per column, every row
    is a multiple of ``1 / GRAIN`` and the largest sum (the whole family's: no partial sum of rows that
    are not negative is larger) under ``FRACTION_BOUND``, or every row is whole and it is under
    ``WHOLE_BOUND``: every partial sum is then a multiple of the grain below 2^53 of it, a float with no
    rounding. Exact sums lose a job's rows by one subtraction each, giving the floats a walk over the
    jobs left makes. ``families``: the rows each family of sums added (a matrix or a list of rows);
    ``sums``: each family's sums, whose sum per column is the family's total."""
    whole, fraction = base.whole, base.fraction
    exact = base.exact
    for rows in families:
        if not len(rows):
            continue
        m = rows if isinstance(rows, np.ndarray) else stack_rows(list(rows), width)
        if not exact or bool((m < 0).any()):
            return whole, fraction, False
        w = (m == np.floor(m)).all(axis=0)
        scaled = m * GRAIN
        f = (scaled == np.floor(scaled)).all(axis=0)
        whole = w if whole is None else whole & w
        fraction = f if fraction is None else fraction & f
    if not exact or whole is None or fraction is None:
        return whole, fraction, exact
    for family in sums:
        total = _total(family, width)
        ok = (fraction & (total < FRACTION_BOUND)) | (whole & (total < WHOLE_BOUND))
        if not bool(ok.all()):
            return whole, fraction, False
    return whole, fraction, True


def _exactness_few(
    base: Settled, families: Sequence[Rows], sums: Sequence[Mapping[Any, Vector]], width: int
) -> tuple[npt.NDArray[np.bool_] | None, npt.NDArray[np.bool_] | None, bool]:
    """:func:`_exactness` for a few rows, in plain floats: the same tests on the same IEEE values (a row
    whole where ``floor`` leaves it as it is, infinity too; a multiple of the grain likewise once
    scaled), and a column's total added row after row as numpy's sum along the rows adds it; the
    arrays kept as they were where every row passes."""
    whole, fraction = base.whole, base.fraction
    exact = base.exact
    inf = _INF
    for rows in families:
        if not len(rows):
            continue
        if not exact:
            return whole, fraction, False
        values = [row.tolist() for row in rows]
        flat = list(itertools.chain.from_iterable(values))
        if any(x < 0 for x in flat):
            return whole, fraction, False
        if not all(x.is_integer() or x == inf for x in flat):
            w = np.array([all(v[d].is_integer() or v[d] == inf for v in values) for d in range(width)])
            whole = w if whole is None else whole & w
        elif whole is None:
            whole = np.ones(width, dtype=bool)
        scaled = [x * GRAIN for x in flat]
        if not all(s.is_integer() or s == inf for s in scaled):
            f = np.array(
                [
                    all((v[d] * GRAIN).is_integer() or v[d] * GRAIN == inf for v in values)
                    for d in range(width)
                ]
            )
            fraction = f if fraction is None else fraction & f
        elif fraction is None:
            fraction = np.ones(width, dtype=bool)
    if not exact or whole is None or fraction is None:
        return whole, fraction, exact
    wholes, fractions = whole.tolist(), fraction.tolist()
    for family in sums:
        if not family:
            total = [0.0] * width
        else:
            columns = iter(family.values())
            total = next(columns).tolist()
            for v in columns:
                total = [a + b for a, b in zip(total, v.tolist(), strict=True)]
        for d in range(width):
            t = total[d]
            if not ((fractions[d] and t < FRACTION_BOUND) or (wholes[d] and t < WHOLE_BOUND)):
                return whole, fraction, False
    return whole, fraction, True


_INF = float("inf")


def _past(base: Settled, jobs: Sequence[Job]) -> Settled:
    """``base`` with the gaps ``jobs`` (one after another) after its span: what each asks added to its
    queue's request, and its unmet minimum (admitted) to the unmet sums, in its place. Each gap keeps
    the run just before the first of them (a session that finds one of them changed goes on from there:
    the gaps before it in the block are found again, as they were)."""
    width = base.width
    asks = [job.total_request() for job in jobs]  # what each asks of its queue, as the close adds it
    unmets = [_unmet(job) for job in jobs]
    light = replace(base, jobs=[], podgroups=[], committed=[])
    n_jobs, n_groups, n_committed = len(base.jobs), len(base.podgroups), len(base.committed)
    gaps = []
    for i, (job, ask, unmet) in enumerate(zip(jobs, asks, unmets, strict=True)):
        ask.setflags(write=False)
        if unmet is not None:
            unmet.setflags(write=False)
        gaps.append(
            Gap(
                at=base.span + i,
                key=job.key,
                queue=job.queue,
                ask=ask,
                unmet=unmet,
                before=light,
                jobs=n_jobs,
                podgroups=n_groups,
                committed=n_committed,
            )
        )
    request = base.request
    asking = [(job.queue, ask) for job, ask in zip(jobs, asks, strict=True) if ask.any()]
    if asking:
        # a queue's first gap starts from what its jobs hold (none asked more); each queue in the order
        # a walk first names it: the request's, then the new ones as the gaps first name them
        start = dict(request)
        for q, _ in asking:
            if q not in start:
                held = base.queue.get(q)
                start[q] = np.zeros(width) if held is None else held
        request = fold(start, [q for q, _ in asking], [a for _, a in asking], width)
    out = replace(base, span=base.span + len(jobs), gaps=(*base.gaps, *gaps), request=request)
    admitted = [(job.queue, unmet) for job, unmet in zip(jobs, unmets, strict=True) if unmet is not None]
    if not admitted:
        return out
    rows = [u for _, u in admitted]
    return replace(
        out,
        unmet_queue=fold(base.unmet_queue, [q for q, _ in admitted], rows, width),
        unmet_all=fold({None: base.unmet_all}, [None] * len(rows), rows, width)[None],
    )


def _before(run: Settled, gap: Gap) -> Settled:
    """``run`` as it was just before ``gap``."""
    return replace(
        gap.before,
        jobs=run.jobs[: gap.jobs],
        podgroups=run.podgroups[: gap.podgroups],
        committed=run.committed[: gap.committed],
    )


def extend(base: Settled, items: Sequence[Job], gaps: Sequence[int] = ()) -> Settled:
    """``base`` with ``items`` added after its span: the session's jobs that follow it, each
    :func:`_settles` (a session's unchanged copy stands for its shared job) but those at ``gaps``
    (places in ``items``, in order), each a :func:`_gap`."""
    out = base
    prev = 0
    for first, last in _blocks(gaps):
        out = _past(_frozen(_extend(out, [_root(j) for j in items[prev:first]])), items[first : last + 1])
        prev = last + 1
    return _frozen(_extend(_frozen(out), [_root(j) for j in items[prev:]]))


def _blocks(places: Sequence[int]) -> list[tuple[int, int]]:
    """``places`` (in order) as runs of consecutive ones: (first, last) each."""
    out: list[tuple[int, int]] = []
    for k in places:
        if out and out[-1][1] == k - 1:
            out[-1] = (out[-1][0], k)
        else:
            out.append((k, k))
    return out


def settle(
    jobs: list[Job],
    kept: dict[str, object],
    width: int,
    *,
    again: bool = False,
    present: Container[str] | None = None,
) -> Settled:
    """The leading run of ``jobs`` that :func:`_settles` (going on past up to ``MAX_GAPS`` gaps), from
    what ``kept`` holds of the last session's as far as ``jobs`` begin with the same objects and the
    same gaps (else from scratch), or, for a run with no gap whose sums are exact, with the same objects
    but for jobs that left the session (``present``: the keys of ``jobs``, or a mapping by them); kept
    anew for the next session.

    ``again``: the run found again after the session changed a job, for the close, which adds no unmet
    minimum: a gap the session admitted is still the gap it was (the next session checks it again,
    with the phase its snapshot gives), and no new gap is looked for (its unmet minimum would be what
    this session made it).

    A kept run that is not empty and has no gap, which fewer than ``LAG`` jobs would extend (and no gap),
    is kept as it is: those jobs are walked with the jobs after it."""
    base = kept.get(KEPT)
    if not (isinstance(base, Settled) and base.width == width):
        base = empty(width)
    else:
        base = _reusable(jobs, base, present if present is not None else {j.key for j in jobs}, again=again)
    start = end = i = base.span
    gaps: list[int] = []
    kept_gaps = 0  # the gaps before ``end`` (those after the run's last job are not part of it)
    stuck = kept.get(STUCK)
    if not isinstance(stuck, frozenset):
        stuck = frozenset()
    # (the gaps the limit counts: all but those set aside)
    room = 0 if again else MAX_GAPS - sum(1 for g in base.gaps if g.key not in stuck)
    n = len(jobs)
    while i < n:
        job = jobs[i]
        if _settles(job):
            i += 1
            end = i
            kept_gaps = len(gaps)
        elif not again and (room > 0 or job.key in stuck) and _gap(job):
            if job.key not in stuck:
                room -= 1
            gaps.append(i - start)
            i += 1
        else:
            break
    if not again and not kept_gaps and not base.gaps and base.span and end - start < LAG:
        kept[KEPT] = base  # (the few jobs that settled since are walked as the jobs after it: see LAG)
        return base
    out = extend(base, jobs[start:end], gaps[:kept_gaps])
    kept[KEPT] = out
    return out


def ahead(kept: dict[str, object], run: Settled, after: Sequence[Job]) -> None:
    """At a session's close, after its binds went out: the kept run, when it is ``run`` (what this
    session's :func:`settle` kept, not empty, with no gap), extended by the jobs just after it that
    :func:`_settles` (``after``: the session's jobs after the run's span, in order), for the next session
    to reuse. :func:`settle` leaves such a run as it is for fewer than ``LAG`` jobs and walks them with
    the jobs after it: extended here, an arriving pod's session finds it ending at the pod bound the
    session before last, and walks that pod and its own, where it walked up to ``LAG`` more (and one
    session in ``LAG`` extended it on the pod's way to its bind). The same floats: see *Same floats* in
    docs/design/steady-state.md; the next session takes it only where its jobs begin with the same
    objects (:func:`_reusable`)."""
    if kept.get(KEPT) is not run or run.gaps or not run.span:
        return
    n = 0
    for job in after:
        if not _settles(job):
            break
        n += 1
    if n and n >= AHEAD:  # (fewer: the next session walks them, as it would)
        kept[KEPT] = extend(run, after[:n])


def _frozen(run: Settled) -> Settled:
    """``run`` with its sums read-only: whoever adds to one must copy it (see the module docstring). Every
    run made is, the ones a gap keeps too (a later session may go back to one)."""
    for sums in (run.queue, run.namespace, run.unmet_queue, run.request):
        for v in sums.values():
            v.setflags(write=False)
    run.unmet_all.setflags(write=False)
    return run


def _same(jobs: list[Job], run: list[Job]) -> bool:
    """Whether ``jobs`` are the run's shared jobs, in order, or unchanged copies of them (by identity:
    a Job has no ``__eq__``)."""
    return jobs == run or (any(map(_ORIGIN, jobs)) and _roots(jobs) == run)


def _roots(jobs: list[Job]) -> list[Job]:
    """:func:`_root` of each job (``jobs`` itself when none is a copy: one pass in C)."""
    return list(map(_root, jobs)) if any(map(_ORIGIN, jobs)) else jobs


def _same_unmet(a: Vector | None, b: Vector | None) -> bool:
    return a is b or (a is not None and b is not None and a.tobytes() == b.tobytes())


def _reusable(jobs: list[Job], base: Settled, present: Container[str], *, again: bool) -> Settled:
    """As much of ``base`` as ``jobs`` begin with: its jobs, in order, or unchanged copies of them, and
    at each gap's place a job that is still a gap as it was (the same key and queue, asking the very
    same floats); up to (before) the first gap that changed or that a changed job follows."""
    run = base.jobs
    if not base.gaps:
        if _same(jobs[: len(run)], run):
            return base
        return _without_gone(jobs, base, present) if base.exact and run else empty(base.width)
    r = prev = 0
    gaps = base.gaps
    for first, last in base.gap_blocks:
        gap = gaps[first]
        head = jobs[prev : gap.at]
        if len(head) != gap.at - prev or not _same(head, run[r : r + len(head)]):  # (or the jobs end first)
            return _before(base, gaps[first - 1]) if first else empty(base.width)
        r += len(head)
        end = gap.at + last - first + 1
        if not _same_gaps(jobs[gap.at : end], _block(base, first, last), base.width, again=again):
            for k in range(first, last + 1):
                if not _same_gap(jobs[gaps[k].at] if gaps[k].at < len(jobs) else None, gaps[k], again=again):
                    return _before(base, gaps[k])
        prev = end
    if _same(jobs[prev : base.span], run[r:]):
        return base
    return _before(base, gaps[-1])


def _gap_blocks(gaps: Sequence[Gap]) -> list[tuple[int, int]]:
    """The runs of consecutive gaps (each at the place after the one before), as (first, last) indices
    of ``gaps``."""
    out: list[tuple[int, int]] = []
    for k, gap in enumerate(gaps):
        if out and gaps[out[-1][1]].at == gap.at - 1:
            out[-1] = (out[-1][0], k)
        else:
            out.append((k, k))
    return out


def _same_gap(job: Job | None, gap: Gap, *, again: bool) -> bool:
    """Whether ``job`` is still the gap ``gap`` as it was: the same key and queue, asking the very same
    floats (and, but for the close, with the same unmet minimum)."""
    return (
        job is not None
        and job.key == gap.key
        and job.queue == gap.queue
        and not _settles(job)
        and _gap(job)
        and job.total_request().tobytes() == gap.ask.tobytes()
        and (again or _same_unmet(_unmet(job), gap.unmet))
    )


@dataclass(frozen=True, slots=True)
class _Block:
    """A block of consecutive gaps as :func:`_same_gaps` compares them: their keys, queues, whether one
    has an unmet minimum, their asks as one block of bytes."""

    size: int
    keys: list[str]
    queues: list[str]
    unmet: bool
    asks: bytes
    #: The jobs whose asks last matched ``asks`` (at most one list, the last): see :func:`_same_gaps`.
    matched: list[list[Job]] = field(default_factory=list, compare=False, repr=False)


def _block(base: Settled, first: int, last: int) -> _Block:
    """The block of ``base``'s gaps ``first`` to ``last``, made once per run (``Settled.blocks``)."""
    key = (first, last)
    out = base.blocks.get(key)
    if out is None:
        gaps = base.gaps[first : last + 1]
        out = base.blocks[key] = _Block(
            size=len(gaps),
            keys=[g.key for g in gaps],
            queues=[g.queue for g in gaps],
            unmet=any(g.unmet is not None for g in gaps),
            asks=stack_rows([g.ask for g in gaps], base.width).tobytes(),
        )
    return out


def _same_gaps(jobs: list[Job], gaps: _Block, width: int, *, again: bool) -> bool:
    """:func:`_same_gap` of each of ``jobs`` and the block of gaps ``gaps`` in turn, at once where every
    job has one task (a pod standing alone, a stuck backlog's every job): what each asks, what it holds
    plus its pending request (``total_request``'s one addition), compared with the gaps' asks as one
    block of bytes. False when any is not (or where it cannot tell at once: then ask each). Each test is
    one pass in C over the jobs (the pods set aside: every session has them): one task each, pending
    (so each is a gap, :func:`_gap`, and does not settle, :func:`_settles`). The asks of the very jobs
    whose asks matched last (``gaps.matched``) are not added up again: each such job, one pending pod on
    no node, is lent again as the same object only as it was lent (its task the very one, with the very
    request vector, of its untouched entry; holding nothing, as each status its pod passed through added
    and took away the same request: ``cache.snapshots._taken_back``), so it asks what it asked."""
    if len(jobs) != gaps.size:
        return False
    if list(map(_KEY, jobs)) != gaps.keys or list(map(_QUEUE, jobs)) != gaps.queues:
        return False
    tasks = list(map(_JOB_TASKS, jobs))
    if not all(map(operator.eq, map(len, tasks), itertools.repeat(1))):
        return False
    if not all(map(operator.eq, map(_PENDING_COUNT, map(_COUNTS, jobs)), itertools.repeat(1))):
        return False
    inqueue = itertools.repeat(PodGroupPhase.INQUEUE)
    if not again and (gaps.unmet or any(map(operator.is_, map(_PHASE, jobs), inqueue))):
        return False
    matched = gaps.matched
    if matched and jobs == matched[0]:  # (by identity: a Job has no __eq__)
        return True
    held = stack_rows(list(map(_ALLOCATED, jobs)), width)
    asked = stack_rows(list(map(_REQUEST, itertools.chain.from_iterable(map(dict.values, tasks)))), width)
    if (held + asked).tobytes() != gaps.asks:
        return False
    matched[:] = [list(jobs)]
    return True


def _without_gone(jobs: list[Job], base: Settled, present: Container[str]) -> Settled:
    """``base`` (no gaps, exact) less the jobs of it that left the session (``present``: the keys of the
    session's jobs), as a job that finished leaves the cache: the run of the jobs ``jobs`` begin with
    that are in ``base``, in its order, up to the first job of ``base`` still in the session that
    ``jobs`` do not have there (changed); each sum less what the jobs dropped added (exact: the floats
    a walk over the jobs left makes, see :func:`_exactness`)."""
    run = base.jobs
    roots = _roots(jobs)
    gone: list[Job] = []
    i = k = 0  # where the run and the session's jobs stand (the jobs before match, but for ``gone``)
    while i < len(run):
        rest = run[i:]
        if roots[k : k + len(rest)] == rest:  # (identity: a Job has no __eq__)
            i, k = len(run), k + len(rest)
            break
        lo, hi = 0, min(len(rest), len(roots) - k)  # the longest prefix alike: rest[:lo] matches
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if roots[k : k + mid] == rest[:mid]:
                lo = mid
            else:
                hi = mid - 1
        i, k = i + lo, k + lo
        if i < len(run) and run[i].key not in present and len(gone) < MAX_GONE:
            gone.append(run[i])  # it left the session
            i += 1
        else:
            break  # changed (or too many left): the run ends before it
    if not k:
        return empty(base.width)
    left = roots[:k]
    gone += run[i:]
    dropped = set(gone).__contains__  # (by identity: a Job has no __eq__)
    width = base.width
    rows = stack_rows([j.allocated for j in gone], width)
    unmet = _unmet_rows(gone)
    unmet_rows = stack_rows([u for _, u in unmet], width)
    inqueue = PodGroupPhase.INQUEUE
    return Settled(
        jobs=left,
        width=width,
        queue=_less(base.queue, _first_seen(left, _QUEUE, base.queue), list(map(_QUEUE, gone)), rows),
        namespace=_less(
            base.namespace, _first_seen(left, _NAMESPACE, base.namespace), list(map(_NAMESPACE, gone)), rows
        ),
        holding_namespaces=_holding(left, base.holding_namespaces),
        unmet_queue=_less(
            base.unmet_queue,
            # (the queues of the admitted jobs short of their minimum, in order: none in a steady state)
            dict.fromkeys(j.queue for j in left if j.phase is inqueue and not minimum_met(j))
            if base.unmet_queue
            else {},
            [j.queue for j, _ in unmet],
            unmet_rows,
        ),
        unmet_all=_less({None: base.unmet_all}, {None: None}, [None] * len(unmet), unmet_rows)[None],
        committed=list(itertools.filterfalse(dropped, base.committed)),
        host_ports=base.host_ports and any_held_host_ports(left),
        constrained=base.constrained and any_constrained(left),
        podgroups=list(itertools.filterfalse(dropped, base.podgroups)),  # (in C: 1,000+ a session)
        span=k,
        whole=base.whole,
        fraction=base.fraction,
        exact=True,
    )


#: At most this many names (queues, namespaces) of a run are each looked for in the jobs left, one scan
#: in C apiece that stops where it is first found; with more, one pass over the jobs finds them all.
FEW_NAMES = 8


def _first_seen(jobs: list[Job], name: attrgetter[str], among: Iterable[str]) -> dict[str, None]:
    """The names (``name``: a job's queue or namespace) of ``jobs`` in the order first seen, as
    ``dict.fromkeys(map(name, jobs))``; ``among``: every name they may have (the run's, a few). Each is
    looked for from the start and found near it, not one lookup per job of 1,000+."""
    names = list(among)
    if len(names) > FEW_NAMES:
        return dict.fromkeys(map(name, jobs))
    first: dict[str, int] = {}
    for n in names:
        at = next(itertools.compress(itertools.count(), map(n.__eq__, map(name, jobs))), None)
        if at is not None:
            first[n] = at
    return dict.fromkeys(sorted(first, key=first.__getitem__))


def _holding(jobs: list[Job], among: frozenset[str]) -> frozenset[str]:
    """The namespaces of ``jobs`` that have tasks, as ``frozenset(map(_NAMESPACE, filter(_TASKS, jobs)))``;
    ``among``: every one they may be (the run's, a few), each looked for as :func:`_first_seen` does."""
    if len(among) > FEW_NAMES:
        return frozenset(map(_NAMESPACE, filter(_TASKS, jobs)))
    return frozenset(
        ns
        for ns in among
        if any(map(_TASKS, itertools.compress(jobs, map(ns.__eq__, map(_NAMESPACE, jobs)))))
    )


def _less(
    sums: dict[K, Vector], keys: dict[K, None], gone: Sequence[K], rows: npt.NDArray[np.float64]
) -> dict[K, Vector]:
    """Per key of ``keys`` (in its order: the order the jobs left first name them), ``sums[key]`` less
    the ``rows`` of that key (``gone[i]`` is the key of ``rows[i]``): exact sums, so any order of
    subtraction gives the same floats."""
    width = rows.shape[1]
    index = {key: i for i, key in enumerate(keys)}
    out = np.zeros((len(index), width))
    for key, i in index.items():
        out[i] = sums[key]
    for key, row in zip(gone, rows, strict=True):
        at = index.get(key)
        if at is not None:
            out[at] -= row
    return {key: out[i] for key, i in index.items()}
