"""overcommit: admit a job only while the minimum resources of admitted jobs fit the cluster's total
times an overcommit factor (argument ``overcommit-factor``, default 1.2), less what is in use.

A queue's guarantee is held for it even when the cluster is full: a job whose minResources fit in what
remains of its queue's guarantee (guarantee - what the queue holds - what it has admitted) is let in
whatever the cluster's room (reclaim then takes the capacity back from queues above their share).
The guarantee held is the effective one proportion holds too (:mod:`volsched.plugins.shared.queue_config`):
guarantees that cannot all be met are cut to ``min(guarantee, weighted share among siblings)``, so an
impossible guarantee admits no more into a full cluster than its cut part."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from volsched.framework.never import never_admitted, never_fits
from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.points import ExtensionPoints, Vote
from volsched.framework.registry import register_plugin
from volsched.model.cluster import (
    Job,
    NodeTable,
    run_rows,
    running_sums,
    unmet_minimum,
    unmet_minimum_floats,
)
from volsched.model.resources import EPS, Vector
from volsched.model.vocabulary import PodGroupPhase
from volsched.plugins.shared.queue_config import queue_config

#: Where :func:`used_on_ready` keeps whether every node of the table is ready (``NodeTable.memo``).
_ALL_READY = "overcommit: every node ready"


def used_on_ready(nodes: NodeTable) -> Vector:
    """What the ready nodes hold, summed (``nodes.used[nodes.ready].sum(axis=0)``): the rows of every node
    where all are ready (kept in the table's memo: readiness comes with the nodes' specs), without the
    pick of the ready rows, a copy of the whole table every session. The same rows in the same order:
    the same sums."""
    every: bool | None = nodes.memo.get(_ALL_READY)
    if every is None:
        every = nodes.memo[_ALL_READY] = bool(nodes.ready.all())
    used = nodes.used
    out: Vector = (used if every else used[nodes.ready]).sum(axis=0)
    return out


@register_plugin
class Overcommit(BasePlugin):
    name: ClassVar[str] = "overcommit"
    reads_clock: ClassVar[bool] = False
    answers_by_shape: ClassVar[bool] = True

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.factor = arguments.number("overcommit-factor", 1.2, minimum=1.0)
        #: Where :meth:`_capacity` is kept in a node table's memo (made with the plugin, off the session's
        #: way).
        self._capacity_key = f"overcommit: capacity x {self.factor!r}"

    def _capacity(self, nodes: NodeTable, total: Vector) -> Vector:
        """The ready nodes' total times the factor (read-only). The total follows from the nodes' specs
        alone and is kept in the table's memo (``NodeTable.total``): so is this, with the very total it
        was made of."""
        kept: tuple[Vector, Vector] | None = nodes.memo.get(self._capacity_key)
        if kept is not None and kept[0] is total:
            return kept[1]
        out: Vector = total * self.factor
        out.setflags(write=False)
        nodes.memo[self._capacity_key] = (total, out)
        return out

    def on_session_open(self, session: ExtensionPoints) -> None:
        nodes = session.nodes
        space = session.space
        capacity = self._capacity(nodes, session.total)
        used = used_on_ready(nodes) if len(nodes) else space.zeros()
        # The room is ``unused - admitted``: capacity - used - admitted, subtracted in that order.
        unused = capacity - used
        # What admitted jobs may still claim, as plain floats: enqueue asks and adds to it for every
        # pending job (50,000 one-pod jobs at a large backlog) before the first bind, and a few float
        # operations over the dimensions cost less than the arrays' calls (the same IEEE arithmetic,
        # dimension by dimension: the same answers).
        # (but what admitted gangs that can never run as it stands claim: no room is held for them)
        never = never_admitted(session)
        inqueue: list[float] = (session.ledger.unmet() if never is None else never[0]).tolist()
        unused_floats: list[float] = unused.tolist()
        # Per queue: the effective guarantee less what the queue holds and has admitted (the queue
        # configuration's, found once for it: most sessions' queues guarantee nothing).
        queues = queue_config(session)
        guarantee_left: dict[str, Vector] = {name: held.copy() for name, held in queues.guaranteed.items()}
        cut = queues.cut
        for job in session.jobs.values() if guarantee_left else ():
            left = guarantee_left.get(job.queue)
            if left is not None:
                left -= job.allocated
                if job.phase is PodGroupPhase.INQUEUE and (never is None or never_fits(session, job) is None):
                    left -= unmet_minimum(job)

        share_dims = space.share_dims

        def within_guarantee(job: Job) -> str | None:
            left = guarantee_left.get(job.queue)
            if left is None:
                return None
            need = job.min_request
            dims = np.flatnonzero((need > EPS) & space.share_mask)
            if not len(dims) or any(need[d] > left[d] + EPS for d in dims):
                return None
            return ", ".join(
                f"{space.names[d]} {space.describe(d, need[d])} <= {space.describe(d, left[d])}" for d in dims
            )

        def enqueueable(job: Job) -> tuple[Vote, str]:
            need = job.min_request
            if job.queue in guarantee_left:
                guaranteed = within_guarantee(job)
                if guaranteed:
                    return Vote.PERMIT, f"within the guarantee of queue {job.queue} ({guaranteed})"
            # The first share dimension the job asks for that the room (unused - admitted) lacks.
            asked = need.tolist()
            short = None
            for d in share_dims:
                if asked[d] > EPS and asked[d] > unused_floats[d] - inqueue[d] + EPS:
                    short = d
                    break
            if short is None:
                return Vote.PERMIT, ""
            d = short
            room = unused_floats[d] - inqueue[d]
            reason = (
                f"minResources {space.names[d]} {space.describe(d, need[d])} > room "
                f"{space.describe(d, max(room, 0.0))} (cluster {space.describe(d, session.total[d])} "
                f"x {self.factor:g} - used {space.describe(d, used[d])} - admitted {space.describe(d, inqueue[d])})"
            )
            i = cut.get(job.queue)
            if i is not None and queues.guarantee[i][d] > EPS:
                reason += (
                    f"; queue {job.queue}'s guarantee {space.names[d]} {space.describe(d, queues.guarantee[i][d])} "
                    f"cannot be met and holds only {space.names[d]} {space.describe(d, queues.effective_guarantee[i][d])}"
                )
            return Vote.REJECT, reason

        def enqueued(job: Job) -> None:
            unmet = unmet_minimum_floats(job)
            inqueue[:] = [q + u for q, u in zip(inqueue, unmet, strict=True)]
            left = guarantee_left.get(job.queue)
            if left is not None:
                left -= np.asarray(unmet)

        share_rows = space.share_mask  # (True at share_dims)
        rows = run_rows(session.state)
        # The run answers (enqueue's runs of jobs): the room vote and the admitted sums above over a run
        # at once, the sums as running sums row after row (the same floats in the same order). A job of
        # a queue with a guarantee ends the run's answer (it is asked alone).

        def unguaranteed(jobs: Sequence[Job]) -> Sequence[Job]:
            if guarantee_left:
                for k, job in enumerate(jobs):
                    if job.queue in guarantee_left:
                        return jobs[:k]
            return jobs

        def enqueueable_run(jobs: Sequence[Job]) -> int:
            jobs = unguaranteed(jobs)
            if not jobs:
                return 0
            need, unmet = rows.ask(jobs)
            before = running_sums(inqueue, unmet)[:-1]
            room = np.asarray(unused_floats) - before + EPS  # unused - admitted + EPS, left to right
            short = np.flatnonzero(((need > EPS) & share_rows & (need > room)).any(axis=1))
            return int(short[0]) if len(short) else len(jobs)

        def enqueued_run(jobs: Sequence[Job]) -> None:
            if len(unguaranteed(jobs)) < len(jobs):
                for job in jobs:
                    enqueued(job)
                return
            inqueue[:] = running_sums(inqueue, rows.take(jobs)[1])[-1].tolist()

        session.add_job_enqueueable_fn(self.name, enqueueable)
        session.add_job_enqueued_fn(self.name, enqueued)
        session.add_jobs_enqueueable_fn(self.name, enqueueable_run)
        session.add_jobs_enqueued_fn(self.name, enqueued_run)
