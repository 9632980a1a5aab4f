"""proportion: each queue's deserved share of the cluster, and the checks that keep queues to it.

``deserved`` is found by water-filling the cluster's total by queue weight, capped by what the queue
asks for (allocated + pending) and by its realCapability, and never below its guarantee:

    realCapability = min(capability, total - sum of the other queues' guarantees)

Idle capacity is lent: a queue that asks for nothing gets nothing, and the rest is shared among the
queues that ask. Capacity is held for a queue only through its guarantee.

A queue may allocate a task while ``allocated + request <= deserved`` (in the dimensions the task asks
for); it is overused once ``deserved <= allocated``. Queue order: the smaller share
(``max allocated / deserved``) first. Admission: ``minResources + allocated + inqueue`` within both
realCapability and deserved.

Taking back (reclaim): a queue may take capacity back for a task only while it stays within its
deserved share after placing it (preemptive); a victim is named only from another reclaimable queue
that holds more than its deserved share, and only as long as the queue keeps at least its deserved
share, in some dimension the reclaimer asks for, after losing it (reclaimable). Together these keep
reclaim from ever moving a pod back and forth between two queues.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import BasePlugin
from volsched.framework.registry import register_plugin
from volsched.framework.session import EventHandler, Session, Vote
from volsched.model.cluster import Job
from volsched.model.objects import PodGroupPhase, QueueSpec, Task
from volsched.model.resources import EPS, ResourceSpace, Vector
from volsched.plugins.overcommit import unmet_minimum


@dataclass
class QueueAttr:
    name: str
    weight: int
    guarantee: Vector
    capability: Vector  # +inf where unset
    real_capability: Vector
    allocated: Vector
    request: Vector
    inqueue: Vector
    deserved: Vector
    #: Dimensions that count toward shares (all but ``pods``).
    mask: np.ndarray[Any, np.dtype[np.bool_]] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    _share: float | None = None

    @property
    def share(self) -> float:
        """``queue_share(allocated, deserved)``, recomputed only after ``allocated`` changed."""
        if self._share is None:
            self._share = queue_share(self.allocated, self.deserved, self.mask)
        return self._share

    def add(self, amount: Vector) -> None:
        self.allocated = self.allocated + amount
        self._share = None


def queue_share(allocated: Vector, deserved: Vector, mask: np.ndarray) -> float:
    """Largest ``allocated / deserved`` over the share dimensions (1 where nothing is deserved but
    something is held)."""
    share = 0.0
    for d in np.flatnonzero(mask):
        if deserved[d] > EPS:
            share = max(share, allocated[d] / deserved[d])
        elif allocated[d] > EPS:
            share = max(share, 1.0)
    return share


def water_fill(
    total: Vector,
    weights: np.ndarray,
    request: np.ndarray,
    real_capability: np.ndarray,
    guarantee: np.ndarray,
) -> np.ndarray:
    """Deserved per queue (rows) and resource (columns). Pure function, vectorised over queues."""
    q = len(weights)
    deserved = np.zeros_like(request)
    if q == 0:
        return deserved
    meet = np.zeros(q, dtype=bool)
    remaining = total.astype(np.float64).copy()
    for _ in range(10 * q + 10):
        active = ~meet
        total_weight = float(weights[active].sum())
        if total_weight <= 0:
            break
        old = deserved.copy()
        share = np.where(active, weights / total_weight, 0.0)
        grown = deserved + share[:, None] * remaining[None, :]
        grown = np.minimum(grown, real_capability)
        grown = np.minimum(grown, request)
        grown = np.maximum(grown, guarantee)
        deserved = np.where(active[:, None], grown, deserved)
        satisfied = np.all(request <= deserved + EPS, axis=1)
        unchanged = np.all(np.abs(deserved - old) <= EPS, axis=1)
        meet |= active & (satisfied | unchanged)
        diff = deserved - old
        previous = remaining.copy()
        remaining = remaining - diff.sum(axis=0)
        if np.all(remaining <= EPS) or np.allclose(remaining, previous, atol=EPS):
            break
    return deserved


def queue_attrs(session: Session) -> dict[str, QueueAttr]:
    space: ResourceSpace = session.space
    total = session.total
    names = sorted(session.queues)
    specs = [session.queues[n] for n in names]
    guarantee = np.array([space.vector(s.guarantee) for s in specs]).reshape(len(specs), len(space))
    capability = np.array(
        [
            space.vector(s.capability) if s.capability is not None else np.full(len(space), np.inf)
            for s in specs
        ]
    ).reshape(len(specs), len(space))
    if specs:
        # A capability map that leaves a resource out does not limit that resource.
        for i, s in enumerate(specs):
            if s.capability is not None:
                for d, rname in enumerate(space.names):
                    if rname not in s.capability:
                        capability[i, d] = np.inf
    others = guarantee.sum(axis=0)[None, :] - guarantee if len(specs) else guarantee
    real_capability = np.minimum(capability, np.maximum(total[None, :] - others, 0.0))
    allocated = np.zeros((len(specs), len(space)))
    request = np.zeros((len(specs), len(space)))
    inqueue = np.zeros((len(specs), len(space)))
    row = {n: i for i, n in enumerate(names)}
    for job in session.jobs.values():
        r = row.get(job.queue)
        if r is None:
            continue
        i = r
        allocated[i] += job.allocated
        request[i] += job.total_request()
        if job.phase is PodGroupPhase.INQUEUE:
            inqueue[i] += unmet_minimum(job)
    weights = np.array([s.weight for s in specs], dtype=np.float64)
    mask = space.share_mask
    deserved = water_fill(
        np.where(mask, total, 0.0),
        weights,
        np.where(mask[None, :], request, 0.0),
        real_capability,
        np.where(mask[None, :], guarantee, 0.0),
    )
    attrs = {}
    for n, i in row.items():
        attrs[n] = QueueAttr(
            name=n,
            weight=specs[i].weight,
            guarantee=guarantee[i],
            capability=capability[i],
            real_capability=real_capability[i],
            allocated=allocated[i],
            request=request[i],
            inqueue=inqueue[i],
            deserved=deserved[i],
            mask=mask,
        )
    return attrs


@register_plugin
class Proportion(BasePlugin):
    name: ClassVar[str] = "proportion"

    def on_session_open(self, session: Session) -> None:
        space = session.space
        mask = space.share_mask
        attrs = queue_attrs(session)
        self.attrs = attrs
        session.state["proportion.attrs"] = attrs

        def describe(d: int | np.integer[Any], amount: float) -> str:
            return space.describe(d, amount)

        def queue_order(left: QueueSpec, right: QueueSpec) -> int:
            ls, rs = attrs[left.name].share, attrs[right.name].share
            if abs(ls - rs) <= 1e-9:
                return 0
            return -1 if ls < rs else 1

        def allocatable(queue: QueueSpec, task: Task) -> str | None:
            attr = attrs[queue.name]
            future = attr.allocated + task.request
            for d in np.flatnonzero((task.request > EPS) & mask):
                if future[d] > attr.deserved[d] + EPS:
                    return (
                        f"queue {queue.name} would exceed deserved {space.names[d]} {describe(d, attr.deserved[d])}"
                        f" (allocated {describe(d, attr.allocated[d])} + request {describe(d, task.request[d])})"
                    )
            return None

        def overused(queue: QueueSpec) -> str | None:
            attr = attrs[queue.name]
            dims = np.flatnonzero(mask & ((attr.deserved > EPS) | (attr.allocated > EPS)))
            if len(dims) and np.all(attr.deserved[dims] <= attr.allocated[dims] + EPS):
                d = dims[0]
                return (
                    f"queue {queue.name} holds its deserved share "
                    f"({space.names[d]} allocated {describe(d, attr.allocated[d])} >= deserved "
                    f"{describe(d, attr.deserved[d])})"
                )
            return None

        def enqueueable(job: Job) -> tuple[Vote, str]:
            attr = attrs.get(job.queue)
            if attr is None:
                return Vote.REJECT, f"queue {job.queue} does not exist"
            need = job.min_request
            future = need + attr.allocated + attr.inqueue
            # realCapability is the hard limit. deserved bounds admission too: allocate never takes a
            # queue past it, so admitting more would only park jobs whose minimums hold the cluster's
            # overcommit room away from queues that are owed it.
            for label, limit in (("realCapability", attr.real_capability), ("deserved", attr.deserved)):
                for d in np.flatnonzero((need > EPS) & mask):
                    if future[d] > limit[d] + EPS:
                        return Vote.REJECT, (
                            f"queue {job.queue}: minResources {space.names[d]} {describe(d, need[d])} + allocated "
                            f"{describe(d, attr.allocated[d])} + admitted {describe(d, attr.inqueue[d])} > {label} "
                            f"{describe(d, limit[d])}"
                        )
            return Vote.PERMIT, ""

        def enqueued(job: Job) -> None:
            attr = attrs.get(job.queue)
            if attr is not None:
                attr.inqueue = attr.inqueue + unmet_minimum(job)

        def on_allocate(task: Task) -> None:
            job = session.jobs.get(task.job_key)
            attr = attrs.get(job.queue) if job is not None else None
            if attr is not None:
                attr.add(task.request)

        def on_deallocate(task: Task) -> None:
            job = session.jobs.get(task.job_key)
            attr = attrs.get(job.queue) if job is not None else None
            if attr is not None:
                attr.add(-task.request)

        def reclaimable(reclaimer: Task, candidates: list[Task]) -> list[Task]:
            asked = (reclaimer.request > EPS) & mask
            left: dict[str, Vector] = {}
            victims = []
            for t in candidates:
                job = session.jobs.get(t.job_key)
                spec = session.queues.get(job.queue) if job is not None else None
                if job is None or spec is None or not spec.reclaimable:
                    continue
                attr = attrs[job.queue]
                held = left.setdefault(job.queue, attr.allocated.copy())
                after = held - t.request
                dims = asked & (t.request > EPS)
                if np.any(after[dims] >= attr.deserved[dims] - EPS):
                    victims.append(t)
                    left[job.queue] = after
            return victims

        # Taking back for a task is allowed exactly when the queue could then hold it within deserved.
        session.add_preemptive_fn(self.name, allocatable)
        session.add_reclaimable_fn(self.name, reclaimable)
        session.add_queue_order_fn(self.name, queue_order)
        session.add_allocatable_fn(self.name, allocatable)
        session.add_overused_fn(self.name, overused)
        session.add_job_enqueueable_fn(self.name, enqueueable)
        session.add_job_enqueued_fn(self.name, enqueued)
        session.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))

    def on_session_close(self, session: Session) -> None:
        space = session.space
        for name, attr in self.attrs.items():
            status = session.result.queues.get(name)
            if status is None:
                continue
            status.deserved = space.to_dict(np.where(space.share_mask, attr.deserved, 0.0))
            status.real_capability = space.to_dict(
                np.where(np.isfinite(attr.real_capability) & space.share_mask, attr.real_capability, 0.0)
            )
            status.inqueue = space.to_dict(attr.inqueue)
            status.share = round(queue_share(attr.allocated, attr.deserved, space.share_mask), 6)
