"""drf: dominant resource fairness between jobs, and between namespaces by weight.

Job order: the job with the smaller dominant share of the cluster goes first. Namespace order: the
namespace with the smaller ``dominant share / weight`` with half its next pod goes first (namespace weights
come from ResourceQuota), so the pods of a small share go by weight, not by name. Shares follow every allocation and eviction in the session.
With ``fairShare.halfLife`` (default off) a namespace's share in that order mixes what it holds with
what it held over time, decayed with that half-life (``fairShare.usageWeight`` of it; see
``plugins.shared.decayed_usage`` and docs/starvation.md).

Preemptable (inside a queue): a pod of a lower-priority job is always a victim; one of a
higher-priority job never is; between jobs of equal priority a pod is a victim only if, after the move,
the preemptor's side would still hold no more than the victim's side: by weighted namespace share when
the two jobs are in different namespaces, else by job share. The preemptor must end up strictly below
where the victim started, so two equal jobs or namespaces never trade pods back and forth.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.points import EventHandler, ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.cluster import Job, NodeTable, dominant_share
from volsched.model.resources import EPS, Vector, stack_rows
from volsched.model.vocabulary import Task, TaskStatus
from volsched.plugins.shared.decayed_usage import Decay

_TOL = 1e-9


def share_key(share: float) -> float:
    """A share as a sort key, rounded to 1e-9: shares that differ by float noise are equal (and the
    name, creation or weight decides) unless they fall either side of a rounding step, which is rare
    and still deterministic; two that differ by more than 1e-9 never are."""
    return round(share, 9)


def share_rows(
    total: Vector, mask: np.ndarray[Any, np.dtype[np.bool_]], amounts: Sequence[Vector]
) -> list[float]:
    """``dominant_share(total, mask)`` of each of ``amounts``, over all of them at once: the same divisions
    and the largest kept (0 when none is positive), so the same values."""
    dims = [i for i, (t, m) in enumerate(zip(total.tolist(), mask.tolist(), strict=False)) if m and t > EPS]
    if not dims:
        return [0.0] * len(amounts)
    if not amounts:
        return []
    matrix = stack_rows(amounts, len(total))
    shares = (matrix[:, dims] / total[dims]).max(axis=1)
    out: list[float] = np.maximum(shares, 0.0).tolist()
    return out


#: Where :func:`_share_of` keeps the share function in a node table's memo.
_SHARE = "drf: dominant share"


def _share_of(
    nodes: NodeTable, total: Vector, mask: np.ndarray[Any, np.dtype[np.bool_]]
) -> Callable[[Vector], float]:
    """``dominant_share(total, mask)``: the ready nodes' total follows from the nodes' specs alone and is
    kept in the table's memo (``NodeTable.total``), and so is this, with the very total and mask it was
    made of (the function reads nothing else, and keeps nothing)."""
    kept: tuple[Vector, np.ndarray[Any, np.dtype[np.bool_]], Callable[[Vector], float]] | None = (
        nodes.memo.get(_SHARE)
    )
    if kept is not None and kept[0] is total and kept[1] is mask:
        return kept[2]
    share = dominant_share(total, mask)
    nodes.memo[_SHARE] = (total, mask, share)
    return share


#: The carryover key of the namespaces' decayed usage (``fairShare.halfLife``).
USAGE_CARRY = "drf.usage"


@register_plugin
class Drf(BasePlugin):
    name: ClassVar[str] = "drf"
    #: With ``fairShare.halfLife`` its order reads the carryover too, but a session skipped on an unchanged
    #: cache loses nothing: the next one integrates the whole interval (``plugins.shared.decayed_usage``).
    reads_clock: ClassVar[bool] = False
    answers_by_shape: ClassVar[bool] = True
    job_answers_kept: ClassVar[bool] = True

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.decay = Decay.from_arguments(arguments)
        self._ns_alloc: dict[str, Vector] = {}
        self._averages: dict[str, Vector] = {}

    def on_session_close(self, session: ExtensionPoints) -> None:
        if self.decay.on:
            session.carryover[USAGE_CARRY] = Decay.carry(
                now=session.now, averages=self._averages, held=self._ns_alloc, space=session.space
            )

    def on_session_open(self, session: ExtensionPoints) -> None:
        total = session.total
        mask = session.space.share_mask
        ns_alloc: dict[str, Vector] = {}
        decay = self.decay
        averages = (
            decay.averages(session.carryover.get(USAGE_CARRY), now=session.now, space=session.space)
            if decay.on
            else {}
        )
        self._ns_alloc, self._averages = ns_alloc, averages
        share = _share_of(session.nodes, total, mask)
        # What each namespace holds (the ledger's sums, copied: they follow the session's placements
        # here), and each asking job's first pending task.
        ns_alloc.update((ns, held.copy()) for ns, held in session.ledger.held_by_namespace().items())
        # (two lists, not a list of pairs: a backlog's first session has 50,000 jobs, and a pair each
        # is as many objects for the collector)
        next_ns: list[str] = []
        next_request: list[Vector] = []
        pending = TaskStatus.PENDING
        for job in session.ledger.asking_jobs():
            if job.status_count.get(pending):
                for t in job.tasks.values():
                    if t.status is pending:
                        next_ns.append(job.namespace)
                        next_request.append(t.request)
                        break
        #: Per namespace, the request of its smallest next pod (by dominant share of the cluster), made
        #: when the namespace order first asks (of the pods pending as the session opened: their requests
        #: are read-only): a session whose asking jobs are all of one namespace, as an arriving pod's,
        #: places them without it.
        made: list[dict[str, tuple[float, Vector]]] = []

        def next_pods() -> dict[str, tuple[float, Vector]]:
            if made:
                return made[0]
            ns_next: dict[str, tuple[float, Vector]] = {}
            sizes = share_rows(total, mask, next_request)
            for ns, request, size in zip(next_ns, next_request, sizes, strict=True):
                best = ns_next.get(ns)
                if size > 0 and (best is None or size < best[0]):
                    ns_next[ns] = (size, request)
            made.append(ns_next)
            return ns_next

        def ns_share(ns: str) -> float:
            alloc = ns_alloc.get(ns)
            if alloc is None:
                return 0.0
            return share(alloc) / session.snapshot.namespace_weight(ns)

        def job_share(job: Job) -> float:
            return share(job.allocated)

        def job_key(job: Job) -> float:
            if not job.ready:
                # No task allocated, bound or running: it holds nothing, so its share is 0 (asked of
                # every job a queue sorts: 50,000 pending ones at a backlog, twice before the first
                # bind). Float dust left by placements undone in this session rounds to 0 all the same.
                return 0.0
            return share_key(job_share(job))

        def ns_share_after_next(ns: str) -> float:
            """The weighted share the namespace would have with half its next pod: the next pod goes to
            whoever is then least served (Sainte-Lague apportionment, which keeps every namespace closest
            to its fluid share), so a namespace with a large weight is not left out of a small share by
            name order, nor does it take the small namespaces' last pods."""
            nxt = next_pods().get(ns)
            if decay.on:  # what it holds now mixed with what it held over time
                alloc = ns_alloc.get(ns)
                mixed = decay.mixed(session.space.zeros() if alloc is None else alloc, averages.get(ns))
                held = mixed if nxt is None else mixed + nxt[1] / 2
                return share(held) / session.snapshot.namespace_weight(ns)
            if nxt is None:
                return ns_share(ns)
            alloc = ns_alloc.get(ns)
            held = nxt[1] / 2 if alloc is None else alloc + nxt[1] / 2
            return share(held) / session.snapshot.namespace_weight(ns)

        def namespace_key(ns: str) -> tuple[float, float]:
            # a tie goes to the larger weight
            return share_key(ns_share_after_next(ns)), share_key(-session.snapshot.namespace_weight(ns))

        def on_allocate(task: Task) -> None:
            acc = ns_alloc.get(task.namespace)
            if acc is None:
                acc = ns_alloc[task.namespace] = session.space.zeros()
            acc += task.request

        def on_deallocate(task: Task) -> None:
            # The namespace has an entry: the ledger has one for every namespace of a job, and
            # on_allocate makes one for a placement of this session.
            ns_alloc[task.namespace] -= task.request

        def held(job: Job) -> Vector:
            """What the job holds, counting tasks pipelined onto capacity being released."""
            out = job.allocated.copy()
            for t in job.tasks.values():
                if t.status is TaskStatus.PIPELINED:
                    out += t.request
            return out

        def preemptable(preemptor: Task, candidates: list[Task]) -> list[Task]:
            pjob = session.jobs.get(preemptor.job_key)
            if pjob is None:
                return []
            weight = session.snapshot.namespace_weight
            p_job_alloc = held(pjob) + preemptor.request
            p_ns_alloc = ns_alloc.get(pjob.namespace, session.space.zeros()) + preemptor.request
            taken_job: dict[str, Vector] = {}
            taken_ns: dict[str, Vector] = {}
            victims = []
            for t in candidates:
                vjob = session.jobs.get(t.job_key)
                if vjob is None or vjob.key == pjob.key or vjob.priority > pjob.priority:
                    continue
                if vjob.priority < pjob.priority:
                    victims.append(t)
                    continue
                if vjob.namespace != pjob.namespace:
                    ns = vjob.namespace
                    before = ns_alloc.get(ns, session.space.zeros()) - taken_ns.get(ns, 0.0)
                    mine = share(p_ns_alloc) / weight(pjob.namespace)
                    theirs = share(before - t.request) / weight(ns)
                    if mine <= theirs + _TOL and mine < share(before) / weight(ns) - _TOL:
                        victims.append(t)
                        taken_ns[ns] = taken_ns.get(ns, session.space.zeros()) + t.request
                    continue
                before = vjob.allocated - taken_job.get(vjob.key, 0.0)
                mine = share(p_job_alloc)
                if mine <= share(before - t.request) + _TOL and mine < share(before) - _TOL:
                    victims.append(t)
                    taken_job[vjob.key] = taken_job.get(vjob.key, session.space.zeros()) + t.request
            return victims

        session.add_preemptable_fn(self.name, preemptable)
        session.add_job_key_fn(self.name, job_key)
        session.add_namespace_key_fn(self.name, namespace_key)
        session.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))
        session.state["drf.namespace_share"] = ns_share
        session.state["drf.job_share"] = job_share
        session.state["drf.namespace_share_after_next"] = ns_share_after_next
