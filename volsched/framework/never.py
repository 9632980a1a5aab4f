"""Pods that cannot fit, now or ever.

Whether a gang can never run as it stands (:func:`never_fits`), whatever else leaves the cluster: what the
session's close tells the gang first (the runner), what keeps it from asking its queue a share (the
proportion plugin, and the Queue's status) and from being the job the reservation plugin holds nodes for
(no room it could plan would ever admit it), and, where its pods bear the verdict out (:func:`pods_never`),
from being voted into its queue at all (enqueue keeps it Pending). Asked once per gang shape per session:
the answers are kept in the session's scratchpad.

The set-aside (:func:`take_aside`, :func:`leave_aside`): a gang that allocate tried and could not place,
and that fits on no node as the nodes stand (:func:`fits_nowhere`: their allocatable, labels and
readiness, not what runs on them), is not tried again by later sessions until a node changes or joins, the
gang itself changes, its queue changes, the config is reloaded, or ``ASIDE_FOR`` passes; it is told what
its last try found instead (kube-scheduler's unschedulable queue, with the node and pod events that may
make a pod fit as its queueing hints). It stays a job of every session.

Pods standing alone (:func:`lone_never`): the same verdict for a pending pod with no PodGroup, kept per
shape (request, placement spec, queue), so that a pod no node could ever hold asks its queue no share, as
such a gang does (:func:`job_never` answers for both). Design: docs/design/steady-state.md#gangs-set-aside.
Reads and writes the session's state only.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from volsched.framework.decisions import Code, Status
from volsched.framework.messages import amounts
from volsched.framework.points import ExtensionPoints
from volsched.framework.settled import STUCK
from volsched.model.cluster import (
    BoolArray,
    Job,
    NodeTable,
    hard_taint_groups,
    tolerated_nodes,
    unmet_minimum_rows,
)
from volsched.model.nodeterms import matches_affinity, matches_node_selector, tolerates
from volsched.model.resources import EPS, Vector
from volsched.model.scalars import human_duration
from volsched.model.vocabulary import PodGroupPhase, QueueSpec, Task, TaskStatus
from volsched.records import dataclass

if TYPE_CHECKING:
    from volsched.framework.session import Session

#: The first words of a refusal that no waiting can end (see :func:`never_fits`).
NEVER = "can never run as it stands"
#: Where :func:`never_fits` keeps its answers for the session (``ExtensionPoints.state``).
_MEMO = "never_fits"
#: Where the nodes each placement's node selector and required node affinity admit are kept with a node
#: table (its memo: they follow from the nodes' specs alone), by the placement spec (``Task.placement_key``).
_ADMITTED = "never: admitted nodes"
#: Where :func:`lone_never` keeps its answers for the session (``ExtensionPoints.state``): by job key,
#: and by shape.
_LONE = "never: alone"
#: Where :func:`job_never` keeps its answers for gangs for the session (``ExtensionPoints.state``), by
#: job key.
_GANGS = "never: gangs"
_LoneMemo = tuple[dict[str, str | None], dict[tuple[int, str, str], tuple[Vector, str | None]]]
#: At most this many placements' masks are kept with a node table (then they are made again).
_KEPT_PLACEMENTS = 256

#: A gang's shape, as far as :func:`never_fits` reads it: whether it is a pod standing alone (no
#: PodGroup: its verdict is worded for one pod), its minimum ask, whether that is its minResources, the
#: least each of its pods asks, minMember, its queue, and the placements of its pods with a node selector
#: or required node affinity ("" for a pod with neither).
Shape = tuple[bool, bytes, bool, bytes, int, str, frozenset[str]]
#: Where :func:`_judged` keeps its answers from session to session, with a node table (its memo): the
#: queues they were worked out against, and the answers by shape.
_KEPT = "never: judged"
#: At most this many shapes' answers are kept with a node table (then they are worked out again).
_KEPT_SHAPES = 4096


def never_fits(session: ExtensionPoints, job: Job) -> str | None:
    """Why a gang can never run as it stands, whatever else leaves the cluster (in one plain sentence),
    or None when it may run once room is made: its minimum (minResources, or its minMember smallest pods)
    asks more than its queue (or a parent) may ever hold, or than all the ready nodes have; or fewer than
    minMember of its pods fit on the ready nodes their node selector and required node affinity admit,
    even were they empty (each pod counted at the least any of its pods asks, on any node one of its pods
    may go to, so this never says "never" of a gang that could fit). Kept for the session by the gang's
    shape: asked again of a gang like one asked before, the answer is not worked out again."""
    return _judged(session, job)[0]


def pods_never(session: ExtensionPoints, job: Job) -> str | None:
    """:func:`never_fits` of a gang where its pods bear it out (their requests and placements against the
    ready nodes and its queue's capability), not its minResources alone, which only admission reads (the
    overcommit plugin admits minResources past the cluster by its factor, and pods that ask less then
    run): what keeps such a gang from being voted on at all (enqueue). Kept as :func:`never_fits`."""
    return _judged(session, job)[1]


def _judged(session: ExtensionPoints, job: Job) -> tuple[str | None, str | None]:
    """:func:`never_fits` and :func:`pods_never` of ``job``, kept by its shape for the session and, while
    the queues are the same, for the next sessions on the same node table (:func:`_kept_judged`)."""
    memo: dict[Shape, tuple[str | None, str | None]] | None = session.state.get(_MEMO)
    if memo is None:
        memo = session.state[_MEMO] = _kept_judged(session)
    tasks = list(job.tasks.values())
    smallest = _smallest(session, tasks)
    placements = _placements(tasks)
    by_pods = job.min_resources_map is None
    key = (
        job.podgroup is None,
        job.min_request.tobytes(),
        by_pods,
        smallest.tobytes(),
        job.min_member,
        job.queue,
        placements,
    )
    hit = memo.get(key)
    if hit is not None:
        return hit
    verdict = _queue_verdict(session, job) or _total_verdict(session, job)
    pods = None if verdict is not None and by_pods else _pods_verdict(session, job, smallest, tasks)
    verdict = verdict or pods
    hit = memo[key] = (verdict, verdict if by_pods else pods)
    return hit


def _kept_judged(session: ExtensionPoints) -> dict[Shape, tuple[str | None, str | None]]:
    """The answers by shape that the last sessions on this node table worked out, to add to: a verdict
    follows from the shape (the pods' requests and placements, minMember, minResources, the queue's
    name), the queues (their capabilities and parents) and the nodes' specs (allocatable, labels, taints,
    readiness: one node table, and its memo, per set of them) alone. Kept with the table while the
    queues are equal to those they were worked out against (else a new, empty memo): an arriving pod
    shaped like the last one is looked up, not worked out, each session."""
    return _kept(session)[1]


def _kept_lone(session: ExtensionPoints) -> dict[tuple[int, str, str], tuple[Vector, str | None]]:
    """:func:`lone_never`'s answers by shape, kept as :func:`_kept_judged`'s are."""
    return _kept(session)[2]


_Kept = tuple[
    dict[str, QueueSpec],
    dict[Shape, tuple[str | None, str | None]],
    dict[tuple[int, str, str], tuple[Vector, str | None]],
]


def _kept(session: ExtensionPoints) -> _Kept:
    """What :func:`_kept_judged` and :func:`_kept_lone` take (the queues compared once a session)."""
    out: _Kept | None = session.state.get(_KEPT)
    if out is not None:
        return out
    nodes = session.nodes
    queues = session.queues
    kept = nodes.memo.get(_KEPT)
    if (
        isinstance(kept, tuple)
        and len(kept[1]) <= _KEPT_SHAPES
        and len(kept[2]) <= _KEPT_SHAPES
        and kept[0] == queues
    ):
        out = kept
    else:
        out = nodes.memo[_KEPT] = (dict(queues), {}, {})
    session.state[_KEPT] = out
    return out


def _smallest(session: ExtensionPoints, tasks: list[Task]) -> Any:
    """The least any of ``tasks`` asks, per resource."""
    first = tasks[0].request if tasks else session.space.zeros()
    if all(t.request is first for t in tasks):  # one template's pods share one request vector
        return first
    return np.min(np.stack([t.request for t in tasks]), axis=0)


def _placements(tasks: list[Task]) -> frozenset[str]:
    """The placements of ``tasks`` with a node selector, required node affinity or tolerations ("" for a
    pod with none)."""
    return frozenset(_placement(t) for t in tasks)


def _placement(task: Task) -> str:
    return task.placement_key if task.node_selector or task.affinity_terms or task.tolerations else ""


def _where(nodes: NodeTable, tasks: list[Task]) -> BoolArray:
    """The ready nodes one of ``tasks`` may go to: its node selector, required node affinity and
    tolerations admit them."""
    return nodes.ready & _admitting(nodes, tasks)[1]


def _fit(alloc: Any, smallest: Any) -> int | None:
    """How many pods asking ``smallest`` fit on empty nodes of allocatable ``alloc`` (rows), each node
    counted alone; None when ``smallest`` asks nothing."""
    asked = smallest > EPS
    if not asked.any():
        return None
    return int(np.floor((alloc[:, asked] + EPS) / smallest[asked]).min(axis=1).sum())


def _what(job: Job) -> str:
    if job.podgroup is None:
        return "it asks"
    return "its minResources ask" if job.min_resources_map is not None else "its minMember pods ask"


def _queue_verdict(session: ExtensionPoints, job: Job) -> str | None:
    """Its minimum past its queue's capability or a parent's."""
    space = session.space
    need = job.min_request
    seen: set[str] = set()
    name: str | None = job.queue
    while name is not None and name not in seen:  # the queue and its parents
        seen.add(name)
        queue = session.queues.get(name)
        if queue is None:
            break
        over = {
            r: (float(need[space.index(r)]), cap)
            for r, cap in (queue.capability or {}).items()
            if r in space.names and need[space.index(r)] > cap + EPS
        }
        if over:
            return (
                f"{_what(job)} {amounts({r: a for r, (a, _) in over.items()}, pods=True)}, more than queue "
                f"{name} may ever hold (capability {amounts({r: c for r, (_, c) in over.items()}, pods=True)})"
            )
        name = queue.parent
    return None


def _total_verdict(session: ExtensionPoints, job: Job) -> str | None:
    """Its minimum past all the ready nodes."""
    space = session.space
    need = job.min_request
    total = session.total
    if not bool((need > total + EPS).any()):
        return None
    rows = np.flatnonzero(need > total + EPS)
    return (
        f"{_what(job)} {amounts({space.names[i]: float(need[i]) for i in rows}, pods=True)}, more than "
        f"all the ready nodes have ({amounts({space.names[i]: float(total[i]) for i in rows}, pods=True)})"
    )


def _pods_verdict(session: ExtensionPoints, job: Job, smallest: Any, tasks: list[Task]) -> str | None:
    """Fewer than minMember of its pods (a pod standing alone: it) on the ready nodes its pods may go to,
    even were they empty."""
    space = session.space
    nodes = session.nodes
    labels, where = _admitting(nodes, tasks)
    ready = nodes.ready
    where = ready & where
    alloc = nodes.allocatable[where]
    n_ready = int(ready.sum())
    on = _On(nodes, tasks, ready & labels, where, n_ready)
    if job.podgroup is None:
        return _lone_verdict(session, alloc, on, smallest)
    if n_ready and not len(alloc):
        if not on.labelled:
            return (
                f"none of the {n_ready} ready node(s) has the labels its pods' node selector or required node "
                f"affinity ask for (minMember {job.min_member})"
            )
        return f"each of {on.labelled_text(gang=True)} has a taint its pods do not tolerate ({on.taints}; minMember {job.min_member})"
    fit = _fit(alloc, smallest) if len(alloc) else None
    if fit is not None and fit < job.min_member:
        return (
            f"at most {fit} of its pods fit on {on.where_text(gang=True)}, even were they empty (minMember "
            f"{job.min_member}; each pod asks at least "
            f"{amounts({space.names[i]: float(smallest[i]) for i in np.flatnonzero(smallest > EPS)})})"
        )
    return None


class _On:
    """The ready nodes a job's pods may go to, as its verdict says them: how many there are, how many
    their node selector and required node affinity admit (``labelled``), and which taints keep them off
    those (``taints``, "" when none does)."""

    def __init__(
        self, nodes: NodeTable, tasks: list[Task], labelled: BoolArray, where: BoolArray, n_ready: int
    ) -> None:
        self.n_ready = n_ready
        self.labelled = int(labelled.sum())
        self.where = int(where.sum())
        kept_off = labelled & ~where
        self.taints = _untolerated(nodes, tasks, kept_off) if kept_off.any() else ""

    def labelled_text(self, *, gang: bool) -> str:
        """The ready nodes the pods' node selector and required node affinity admit."""
        if self.labelled == self.n_ready:
            return f"the {self.n_ready} ready node(s)"
        whose = "its pods'" if gang else "its"
        return (
            f"the {self.labelled} of {self.n_ready} ready node(s) {whose} node selector or required node "
            "affinity admit"
        )

    def where_text(self, *, gang: bool) -> str:
        """The ready nodes the pods may go to, saying what keeps them off the others."""
        if not self.taints:
            return self.labelled_text(gang=gang)
        tolerate = "its pods tolerate" if gang else "it tolerates"
        if self.labelled == self.n_ready:
            return f"the {self.where} of {self.n_ready} ready node(s) whose taints {tolerate} ({self.taints})"
        whose = "its pods'" if gang else "its"
        they = "they tolerate" if gang else "it tolerates"
        return (
            f"the {self.where} of {self.n_ready} ready node(s) {whose} node selector or required node affinity "
            f"admit and whose taints {they} ({self.taints})"
        )


def _untolerated(nodes: NodeTable, tasks: list[Task], kept_off: BoolArray) -> str:
    """The taints that keep ``tasks`` off the nodes of ``kept_off``, with how many of them carry each
    (``untolerated taint {dedicated: gpu} on 2``): those none of the tasks tolerates (every taint of a
    node where the tasks tolerate each but none all)."""
    group, groups = hard_taint_groups(nodes)
    tolerations = list({_placement(t): t.tolerations for t in tasks}.values())
    counts: dict[str, int] = {}
    ids, sizes = np.unique(group[kept_off], return_counts=True)
    for g, size in zip(ids.tolist(), sizes.tolist(), strict=True):
        taints = groups[g]
        untolerated = [t for t in taints if not any(tolerates(tols, t) for tols in tolerations)] or list(
            taints
        )
        for t in untolerated:
            text = f"{{{t[0]}: {t[1]}}}" if t[1] else f"{{{t[0]}}}"
            counts[text] = counts.get(text, 0) + size
    return "untolerated taint " + ", ".join(f"{text} on {n}" for text, n in counts.items())


def _lone_verdict(session: ExtensionPoints, alloc: Any, on: _On, request: Any) -> str | None:
    """:func:`_pods_verdict` of a pod standing alone asking ``request``: no ready node its node selector,
    required node affinity and tolerations admit (``alloc``: their allocatable) could hold it even empty."""
    if on.n_ready and not len(alloc):
        if not on.labelled:
            return (
                f"none of the {on.n_ready} ready node(s) has the labels its node selector or required node "
                "affinity ask for"
            )
        return f"each of {on.labelled_text(gang=False)} has a taint it does not tolerate ({on.taints})"
    fit = _fit(alloc, request) if len(alloc) else None
    if fit is None or fit >= 1:
        return None
    names = session.space.names
    return (
        f"none of {on.where_text(gang=False)} could hold it, even were they empty (it asks "
        f"{amounts({names[i]: float(request[i]) for i in np.flatnonzero(request > EPS)})})"
    )


def lone_never(session: ExtensionPoints, job: Job) -> str | None:
    """:func:`never_fits` of a pod standing alone (``job``: its one-pod job, no PodGroup) while it is
    pending, or None (a pod placed, pipelined or claiming devices is not judged: the device check places
    it, node capacity does not count it). Kept by the pod's shape (its request, its placement spec, its
    queue) for the session and, as :func:`_kept_judged`'s, for the next ones on the same node table: a
    backlog's many such pods share a few shapes, each worked out once, over all the nodes at once, and an
    arriving pod shaped like the last one is a lookup."""
    kept: _LoneMemo | None = session.state.get(_LONE)
    if kept is None:
        kept = session.state[_LONE] = ({}, _kept_lone(session))
    by_job, memo = kept
    # (each such pod is asked of by enqueue, proportion, allocate and the close: answered once a session
    # by its key. A pending pod's answer holds all session: nothing in it changes the nodes' specs, and
    # a pod that can never fit is never placed; one asked of before it is pending is not one the session
    # makes pending again)
    if job.key in by_job:
        return by_job[job.key]
    verdict: str | None = None
    for task in job.tasks.values():
        if task.status is not TaskStatus.PENDING or task.resource_claims:
            break
        request = task.request
        # (by the request's identity, checked: the pods of one template share one request vector, and
        # the one kept here stays alive, so its id is no other's while the entry stands)
        key = (id(request), task.placement_key, job.queue)
        hit = memo.get(key)
        if hit is not None and hit[0] is request:
            verdict = hit[1]
        else:
            verdict = never_fits(session, job)
            memo[key] = (request, verdict)
        break
    by_job[job.key] = verdict
    return verdict


def job_never(session: ExtensionPoints, job: Job) -> str | None:
    """Why ``job`` can never run as it stands: :func:`never_fits` of a gang short of minMember,
    :func:`lone_never` of a pod standing alone; None for a job that may run (or runs)."""
    if job.podgroup is None:
        return lone_never(session, job)
    if job.ready_count >= job.min_member:
        return None
    return _gang_judged(session, job)[0]


def unvoted_never(session: ExtensionPoints, job: Job) -> str | None:
    """Why ``job``, waiting for admission, is decided for without the votes (enqueue): :func:`lone_never`
    of a pod standing alone, :func:`pods_never` of a gang short of minMember; None for a job the votes
    decide."""
    if job.podgroup is None:
        return lone_never(session, job)
    if job.ready_count >= job.min_member:
        return None
    return _gang_judged(session, job)[1]


def _gang_judged(session: ExtensionPoints, job: Job) -> tuple[str | None, str | None]:
    """:func:`_judged` of a gang, kept for the session by its key as well: asked of each gang by enqueue,
    proportion and the close, it is answered once a session by its key. It holds all session: the
    gang's pods, minMember and queue and the nodes' specs do not change in one."""
    by_job: dict[str, tuple[str | None, str | None]] | None = session.state.get(_GANGS)
    if by_job is None:
        by_job = session.state[_GANGS] = {}
    hit = by_job.get(job.key)
    if hit is None:
        hit = by_job[job.key] = _judged(session, job)
    return hit


def _admitting(nodes: NodeTable, tasks: list[Task]) -> tuple[BoolArray, BoolArray]:
    """The nodes of ``nodes`` (ready or not) that the node selector and required node affinity of at
    least one of ``tasks`` admit, and those of them whose hard taints it tolerates as well (each
    placement's masks kept with the table: they follow from the nodes' specs alone)."""
    kept: dict[str, tuple[BoolArray, BoolArray]] | None = nodes.memo.get(_ADMITTED)
    if kept is None or len(kept) > _KEPT_PLACEMENTS:
        kept = nodes.memo[_ADMITTED] = {}
    labels: BoolArray | None = None
    where: BoolArray | None = None
    seen: set[str] = set()
    for t in tasks:
        key = _placement(t)
        if key in seen:
            continue
        seen.add(key)
        masks = kept.get(key)
        if masks is None:
            if t.node_selector or t.affinity_terms:
                admitted = np.fromiter(
                    (
                        matches_node_selector(s, t.node_selector) and matches_affinity(s, t.affinity_terms)
                        for s in nodes.specs
                    ),
                    dtype=bool,
                    count=len(nodes),
                )
            else:
                admitted = np.ones(len(nodes), dtype=bool)
            tolerated = admitted & tolerated_nodes(nodes, t.tolerations)
            admitted.setflags(write=False)
            tolerated.setflags(write=False)
            masks = kept[key] = (admitted, tolerated)
        labels = masks[0] if labels is None else labels | masks[0]
        where = masks[1] if where is None else where | masks[1]
    if labels is None or where is None:  # no task: any node
        everywhere = np.ones(len(nodes), dtype=bool)
        return everywhere, everywhere
    return labels, where


def never_asks(session: ExtensionPoints) -> dict[str, Vector]:
    """Per queue, what its gangs and pods standing alone that can never run as it stands
    (:func:`job_never`) ask beyond what they hold: their pending and pipelined pods' requests. No share
    is theirs (the proportion plugin counts none of it in its queue's demand), so a Queue's status does
    not show it asked either.

    The sums over the leading asking jobs that were set aside (told: ``TOLD``) are kept with the node
    table (:class:`_Asked`) and taken again by the next session whose asking jobs begin with those very
    jobs: each lent again as the same object, untouched (a session that changes a shared job works on a
    copy), whose verdict follows from its shape, the queues and the nodes' specs (:func:`_kept`, the same
    premise as the verdicts kept there); one that can never run is placed by no session, and what it
    holds stays (a pod evicted holds its node until it is gone), so it asks what it asked. The same
    floats: the same additions in the same order, from the same start."""
    asking = session.ledger.asking_jobs()
    told: dict[str, Refused] = session.state.get(TOLD) or {}
    lead = _told_lead(asking, told) if told else 0
    out: dict[str, Vector] = {}
    start = 0
    if lead:
        kept = _kept(session)
        memo = session.nodes.memo
        carried = memo.get(_ASKED)
        if (
            isinstance(carried, _Asked)
            and carried.kept is kept
            and len(carried.jobs) <= lead
            and asking[: len(carried.jobs)] == carried.jobs  # (by identity: a Job has no __eq__)
        ):
            out, start = dict(carried.sums), len(carried.jobs)
        if lead > start:
            _add_never(session, asking[start:lead], out)
            jobs = list(asking[:lead])
            memo[_ASKED] = _Asked(kept=kept, jobs=jobs, sums=dict(out), never=_never_run(session, jobs))
            start = lead
    _add_never(session, asking[start:], out)
    return out


def _add_never(session: ExtensionPoints, jobs: Sequence[Job], out: dict[str, Vector]) -> None:
    """Add to ``out`` (per queue) what each of ``jobs`` that can never run as it stands asks, in order."""
    pending, pipelined = TaskStatus.PENDING, TaskStatus.PIPELINED
    for job in jobs:
        c = job.status_count
        if not (c.get(pending) or c.get(pipelined)) or job_never(session, job) is None:
            continue
        if job.podgroup is None:  # its one pod, pending (total_request less the zeros it holds: the same)
            (task,) = job.tasks.values()
            ask = task.request
        else:
            ask = job.total_request() - job.allocated
        held = out.get(job.queue)
        out[job.queue] = ask if held is None else held + ask


def _never_run(session: ExtensionPoints, jobs: list[Job]) -> _NeverRun:
    """The verdicts of the leading run of ``jobs`` that can never run as they stand (:func:`job_never`),
    as the session keeps them: a pod standing alone's (:func:`lone_never`) and a gang's
    (:func:`_gang_judged`), each by job key, and how many jobs the run spans."""
    lone: dict[str, str | None] = {}
    gangs: dict[str, tuple[str | None, str | None]] = {}
    n = 0
    for job in jobs:
        if job_never(session, job) is None:
            break
        if job.podgroup is None:
            lone[job.key] = lone_never(session, job)
        else:
            gangs[job.key] = _gang_judged(session, job)
        n += 1
    return _NeverRun(span=n, lone=lone, gangs=gangs)


def never_lead(session: ExtensionPoints, asking: Sequence[Job]) -> int:
    """How many of the session's asking jobs (``asking``, the ledger's) lead that can never run as they
    stand, as the last session to set aside the run of them found (:func:`never_asks` keeps their
    verdicts in its :class:`_Asked`); 0 unless ``asking`` begins with those very jobs. Each lent again as
    the same object, untouched, its verdict follows from its shape, the queues and the nodes' specs
    (:func:`_kept`, the premise of :func:`never_asks`' kept sums): from here on the session's
    :func:`job_never` looks each of them up rather than working it out, and a walk that passes over the
    jobs that can never run (proportion's open) may pass over these without asking."""
    carried = session.nodes.memo.get(_ASKED)
    if not isinstance(carried, _Asked) or not carried.never.span:
        return 0
    never = carried.never
    n = never.span
    if len(asking) < n or carried.kept is not _kept(session) or asking[:n] != carried.jobs[:n]:
        return 0  # (by identity: a Job has no __eq__)
    state = session.state
    if never.lone:
        lone: _LoneMemo | None = state.get(_LONE)
        if lone is None:
            state[_LONE] = (dict(never.lone), _kept_lone(session))
        else:
            lone[0].update(never.lone)
    if never.gangs:
        gangs: dict[str, tuple[str | None, str | None]] | None = state.get(_GANGS)
        if gangs is None:
            state[_GANGS] = dict(never.gangs)
        else:
            gangs.update(never.gangs)
    return n


def _told_lead(jobs: Sequence[Job], told: Mapping[str, object]) -> int:
    """How many of ``jobs`` lead that were told what their last try found (``told``): one pass in C."""
    return sum(1 for _ in itertools.takewhile(told.__contains__, map(_JOB_KEY, jobs)))


@dataclass(frozen=True, slots=True)
class _Asked:
    """What :func:`never_asks` added over the leading asking jobs that were set aside (``jobs``), per
    queue (``sums``, read-only), against the verdicts kept in ``kept`` (:func:`_kept`'s, by identity);
    and the verdicts of the leading run of them that can never run as they stand (``never``:
    :func:`never_lead`)."""

    kept: object
    jobs: list[Job]
    sums: dict[str, Vector]
    never: _NeverRun


@dataclass(frozen=True, slots=True)
class _NeverRun:
    """The leading run of the jobs in an :class:`_Asked` that can never run as they stand: how many jobs
    it spans, and their verdicts as the session keeps them, by job key (a pod standing alone's, a
    gang's)."""

    span: int
    lone: dict[str, str | None]
    gangs: dict[str, tuple[str | None, str | None]]


#: Where :func:`never_asks` keeps its :class:`_Asked` with a node table (its memo).
_ASKED = "never: asked"
_JOB_KEY: attrgetter[str] = attrgetter("key")


# --- the set-aside: gangs that fit on no node as the nodes stand, not tried again until a node changes ---

#: Where a session leaves the gangs it set aside for the next (``ClusterSnapshot.kept``).
KEPT_ASIDE = "set aside"
#: Where a session keeps the gangs it told what their last try found (``Session.state``), for its close.
TOLD = "never: told"
#: A gang set aside is tried again once this long (seconds of the sessions' clock) has passed since it was
#: last tried, whatever changed: a safety net, as kube-scheduler moves a pod out of its unschedulable queue
#: after five minutes.
ASIDE_FOR = 300.0


@dataclass(frozen=True, slots=True)
class Refused:
    """What the last try of a gang set aside came to: when (the session's clock), the refusals the gang
    was told, and those each of its pods was told (by pod key)."""

    since: float
    job: tuple[Status, ...]
    tasks: tuple[tuple[str, Status], ...]


@dataclass
class Aside:
    """What a session set aside, for the next session on the same nodes, config and queues (see
    :func:`take_aside`)."""

    config: object
    #: The node table's memo: one per set of node specs (and resource space), so one per set of nodes
    #: with the same allocatable, labels, taints and readiness.
    memo: dict[str, Any]
    queues: dict[str, QueueSpec]
    jobs: dict[str, Refused]


def fits_nowhere(session: ExtensionPoints, job: Job) -> bool:
    """Whether fewer than minMember of the gang's pods (a pod alone: the pod) fit on the ready nodes their
    node selector and required node affinity admit, even were those nodes empty: what the nodes are (their
    allocatable, labels and readiness) keeps it off every node, not what runs on them nor what its queue
    may hold, so no placement, eviction, bind or departure can change that. Only a node that changes (or
    joins) or the gang itself may. Pods that claim devices are never judged so (the device check places
    them, node capacity does not count them)."""
    tasks = list(job.tasks.values())
    if not tasks or any(t.resource_claims for t in tasks):
        return False
    nodes = session.nodes
    where = _where(nodes, tasks)
    if not where.any():
        return True
    fit = _fit(nodes.allocatable[where], _smallest(session, tasks))
    return fit is not None and fit < job.min_member


def take_aside(session: Session) -> dict[str, Refused]:
    """The gangs the last session set aside (:func:`leave_aside`) that are still to be: the session's
    config, nodes (their specs: allocatable, labels, taints, readiness) and queues are those of the last
    session, and the gang is as it was (its pods and PodGroup: ``ClusterSnapshot.touched``, which names
    what changed since the last snapshot), still in the snapshot, and was last tried less than
    ``ASIDE_FOR`` ago. Taken (popped): a session that fails before it leaves its own sets nothing aside
    for the next, whose snapshot is then not the one after the set-aside's."""
    kept = session.snapshot.kept.pop(KEPT_ASIDE, None)
    touched = session.snapshot.touched
    if (
        not isinstance(kept, Aside)
        or touched is None
        or kept.config is not session.config
        or kept.memo is not session.nodes.memo
        or kept.queues != session.queues
    ):
        return {}
    jobs, now = session.jobs, session.now
    return {
        key: refused
        for key, refused in kept.jobs.items()
        if key not in touched and key in jobs and now - refused.since < ASIDE_FOR
    }


def leave_aside(session: Session, tried: list[Job], aside: dict[str, Refused]) -> None:
    """Set aside for the next session the gangs this one tried and could not place that fit nowhere as the
    nodes stand (:func:`fits_nowhere`), with what they were told, and keep those told this session what
    their last try found (``aside``: :func:`take_aside`'s, :func:`tell_aside` told them)."""
    session.state[TOLD] = aside
    fits, fit_errors = session.job_errors, session.fit_errors
    kept = dict(aside)
    now = session.now
    for job in tried:
        statuses = fits.get(job.key)
        if not statuses or not fits_nowhere(session, job):
            continue
        said = set_aside_note(job)
        statuses.append(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "allocate", (said,)))
        tasks = tuple(
            (t.key, fit_errors[t.key].also(said)) for t in job.tasks.values() if t.key in fit_errors
        )
        fit_errors.update(tasks)
        kept[job.key] = Refused(since=now, job=tuple(statuses), tasks=tasks)
    if kept:
        session.snapshot.kept[KEPT_ASIDE] = Aside(
            config=session.config, memo=session.nodes.memo, queues=dict(session.queues), jobs=kept
        )
        # (the settled run goes on past as many of them as there are: every session has them)
        session.snapshot.kept[STUCK] = frozenset(kept)
    else:
        session.snapshot.kept.pop(STUCK, None)


def set_aside_note(job: Job) -> str:
    """What a gang set aside is told after its refusals (its own and each of its pods'), from the try
    that set it aside on: that it is not tried again until what may make it fit happens, so the figures
    its refusals give (the idle capacity in "most idle", a queue's share) are those of its last try, not
    of now. Said by the session that sets it aside too, so its words do not change (nor are written
    again) from one session to the next; the condition's time is when they were first written."""
    who = "the pod" if job.podgroup is None else "the gang"
    return (
        f"set aside, as the nodes could not hold it even empty: tried again once a node joins, leaves or "
        f"changes, {who} or its queue changes, or in {human_duration(ASIDE_FOR)}; the figures here are those "
        "of its last try"
    )


def tell_aside(session: Session, refused: Refused, job: Job) -> None:
    """Tell ``job``, set aside, what its last try found (its refusals and its pods')."""
    session.job_errors[job.key] = list(refused.job)
    session.fit_errors.update(refused.tasks)


def never_admitted(session: ExtensionPoints) -> tuple[Vector, dict[str, Vector]] | None:
    """What the admitted jobs (phase Inqueue) may still claim toward their minimum, over all and per queue
    (the ledger's ``unmet`` and ``unmet_by_queue``), without the admitted gangs that can never run as it
    stands (:func:`never_fits`); None when there is none such (then the ledger's sums are the answer).
    No room would ever let such a gang run, so what admission hands out (the room overcommit counts, the
    share proportion admits into) is not held for it: else one such gang, admitted before the nodes
    changed, kept every other job of its queue (or of the cluster) out for ever. The sums are the walk the
    ledger's are, over the other admitted jobs in the session's order from zero: the same floats."""
    inqueue = PodGroupPhase.INQUEUE
    never = {
        job.key
        for job in session.ledger.short_gangs()
        if job.phase is inqueue and job.podgroup is not None and never_fits(session, job) is not None
    }
    if not never:
        return None
    admitted = [j for j in session.jobs.values() if j.phase is inqueue and j.key not in never]
    width = len(session.space)
    index: dict[str, int] = {}
    rows = [index.setdefault(j.queue, len(index)) for j in admitted]
    sums = np.zeros((len(index), width))
    unmet_minimum_rows(admitted, rows, sums)
    total = np.zeros((1, width))
    unmet_minimum_rows(admitted, [0] * len(admitted), total)
    return total[0], {q: sums[i] for q, i in index.items()}
