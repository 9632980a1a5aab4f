"""The scheduling session: the snapshot's state, its mutations, and the result.

A session opens on a :class:`ClusterSnapshot`, lets every configured plugin register callbacks, runs
the configured actions, lets plugins close, and returns a :class:`SessionResult`. It is a pure function
of its snapshot and config: nothing here talks to the cluster.

What a :class:`Session` is made of, one module each: the extension points plugins register on and the
tier-wise combination of their answers (:class:`~volsched.framework.points.PointTables`); the
evaluation of nodes for a task (:class:`~volsched.framework.nodeviews.NodeViews`); and here, the state
(jobs, queues, the result, refusals recorded) and its mutations. Only a
:class:`~volsched.framework.statement.Statement` calls the mutations (``do_*`` and ``undo_*``); actions
record refusals with ``reject`` and ``record_fit_error``. Nothing here decides what to place or evict:
that is the actions' (:mod:`volsched.actions`).

A session may be given a sink for its binds (``on_binds``): each commit that decides binds hands them
to it at once, a gang's together, while the session goes on (the cycle sends them to the cluster as
Volcano's cache binds a Statement's allocations as it commits). The result lists every bind still.

What the jobs hold, ask and still miss per queue and per namespace is the session's ledger
(:class:`~volsched.framework.ledger.SessionLedger`), which every mutation tells of the change. Shared
jobs, thawed copies and their origin: docs/design/steady-state.md.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from volsched.framework.decisions import Bind, Event, SessionResult, Status
from volsched.framework.ledger import SessionLedger
from volsched.framework.nodeviews import KEPT_VIEWS, CarriedViews, NodeViews, no_devices
from volsched.framework.points import Plugin
from volsched.model.cluster import ClusterSnapshot, Job
from volsched.model.devices import ClaimAllocation, DeviceState
from volsched.model.resources import Vector
from volsched.model.vocabulary import (
    ALLOCATED_STATUSES,
    NODE_HOLDING_STATUSES,
    PodGroupPhase,
    QueueSpec,
    Task,
    TaskStatus,
)
from volsched.model.volumes import VolumeState

if TYPE_CHECKING:
    from volsched.framework.config import SchedulerConfig


class Action(Protocol):
    """Walks the session through its callbacks; never names a plugin."""

    name: ClassVar[str]

    def execute(self, session: Session) -> None: ...


#: Takes the binds of one commit, in the order decided (see ``Session.on_binds``).
BindSink = Callable[[list[Bind]], None]


class Session(NodeViews):
    def __init__(
        self,
        snapshot: ClusterSnapshot,
        config: SchedulerConfig,
        plugins: Iterable[Plugin],
        *,
        on_binds: BindSink | None = None,
    ) -> None:
        # The last session's node views (taken from what sessions keep: no two sessions share them),
        # when no device filter is in them (the devices' state is the session's own).
        carried = snapshot.kept.pop(KEPT_VIEWS, None)
        self._devices_known = snapshot.device_catalog is None and not snapshot.resource_claims
        super().__init__(
            config,
            snapshot.nodes,
            snapshot.space,
            carried=carried if isinstance(carried, CarriedViews) and self._devices_known else None,
        )
        self.snapshot = snapshot
        self.config = config
        self.jobs: dict[str, Job] = snapshot.jobs
        self.queues: dict[str, QueueSpec] = snapshot.queues
        self.total: Vector = snapshot.total
        self.now = snapshot.now
        #: State kept across sessions, a copy of the snapshot's: plugins write here, the result hands it
        #: back (``SessionResult.carryover``) and the driver stores it for the next session.
        self.carryover: dict[str, Any] = dict(snapshot.carryover)
        self.result = SessionResult(carryover=self.carryover)
        self.plugins: list[Plugin] = list(plugins)
        #: Why a task was not placed this session, as data (rendered at close). Written through
        #: ``record_fit_error``.
        self.fit_errors: dict[str, Status] = {}
        #: Why a job was refused (not enqueued, gang not ready, queue overused...). Written through ``reject``.
        self.job_errors: dict[str, list[Status]] = {}
        #: Free-form per-session scratchpad for plugins (like the framework's CycleState).
        self.state: dict[str, Any] = {}
        #: Called by ``Statement.commit`` with the binds it just decided (after recording them in the
        #: result); what it raises ends the session.
        self.on_binds = on_binds
        #: What each queue's jobs hold, summed when first asked (``queue_allocated``), then kept current
        #: by every status change.
        self._queue_allocated: dict[str, Vector] | None = None
        #: The jobs that may have a task pending (``pending_jobs``), gathered when first asked.
        self._maybe_pending: list[Job] | None = None
        #: Those of them with a task pending, found when first asked after the last status change.
        self._pending: list[Job] | None = None
        #: What the jobs hold, ask and still miss, per queue and per namespace (what plugins ask).
        self.ledger = SessionLedger(self.jobs, snapshot.kept, len(self.space))
        if snapshot.device_catalog is not None or snapshot.resource_claims:
            self.devices = DeviceState(
                snapshot.device_catalog or no_devices(snapshot.nodes),
                snapshot.resource_claims,
                nodes=snapshot.nodes.specs,
            )
            if snapshot.nodes.incoming_tasks:  # pods being deleted: their devices are being released
                for held in snapshot.nodes.tasks:
                    for t in held.values():
                        if t.resource_claims and t.status is TaskStatus.RELEASING:
                            self.devices.start_releasing(t.key, t.namespace, t.resource_claims, t.uid)
            if any(c.allocation is not None and c.reserved_for for c in snapshot.resource_claims.values()):
                live = snapshot.reserved_live  # (the builder's: by uid, not a walk over every pod)
                self.devices.release_orphans((pod_uids(snapshot) if live is None else live).__contains__)
        if snapshot.volume_catalog is not None:
            self.volume_binding = VolumeState(
                snapshot.volume_catalog, nodes=snapshot.nodes.specs, memo=snapshot.nodes.memo
            )
        #: How many pending pods name each ResourceClaim by name (counted when first asked).
        self._claim_users: Counter[str] | None = None
        self._bind_users: Counter[str] | None = None

    # --- mutations (only Statement calls these) -------------------------------------------------------

    def _set_status(self, task: Task, status: TaskStatus) -> None:
        if task.shared:
            raise RuntimeError(
                f"session changing task {task.key} that other snapshots share: open the session with "
                "may_evict=True (its actions declare evicts)"
            )
        job = self.jobs.get(task.job_key)
        old = task.status
        self._pending = None
        if job is not None:
            self.ledger.status_changed(job)
            job.count_status(old, status)
            self.job_changed(job)
            was, now = old in ALLOCATED_STATUSES, status in ALLOCATED_STATUSES
            held = self._queue_allocated
            if was and not now:
                job.allocated -= task.request
                if held is not None:
                    held[job.queue] -= task.request
            elif now and not was:
                job.allocated += task.request
                if held is not None:
                    held[job.queue] += task.request
        task.status = status

    def _changing(self, jobs: Sequence[Job]) -> None:
        """``jobs`` are about to change (their phase): refused for a shared job, as :meth:`_set_status`
        refuses a shared task; the ledger is told."""
        for job in jobs:
            if job.shared:
                raise RuntimeError(f"session changing the phase of job {job.key} that other snapshots share")
        self.ledger.phases_changing(jobs)

    def do_admit(self, jobs: Sequence[Job]) -> tuple[PodGroupPhase, ...]:
        """Admit ``jobs`` into their queues (phase Inqueue); their phases before, for :meth:`undo_admit`."""
        self._changing(jobs)
        previous = tuple(job.phase for job in jobs)
        inqueue = PodGroupPhase.INQUEUE
        for job in jobs:
            job.phase = inqueue
        return previous

    def undo_admit(self, jobs: Sequence[Job], previous: Sequence[PodGroupPhase]) -> None:
        self._changing(jobs)
        for job, phase in zip(jobs, previous, strict=True):
            job.phase = phase

    def _fire(self, task: Task, *, allocate: bool) -> None:
        self.namespace_changed(task.namespace)
        for h in self.event_handlers:
            fn = h.allocate if allocate else h.deallocate
            if fn is not None:
                fn(task)

    def _take_devices(self, task: Task, node: int, *, future: bool = False) -> None:
        """Allocate the devices of ``task``'s claims on ``node`` (before anything else changes: a node
        that cannot give them raises, and nothing is half done); ``future``: pipelined, it may take
        devices being released."""
        devices = self.devices
        plan = devices.plan(task.namespace, task.resource_claims, pod_uid=task.uid)
        taken = devices.allocate(task.key, plan, node, future=future)
        self._devices_moved(task, taken)

    def _give_devices(self, task: Task) -> None:
        self._devices_moved(task, self.devices.release(task.key))

    def _devices_moved(self, task: Task, taken: tuple[ClaimAllocation, ...]) -> None:
        """Devices were taken or given back: the other nodes whose answer that changes are looked at
        again (those reaching a device several nodes reach, and every node when a claim other pending
        pods name was allocated or given back: they go where it is)."""
        for i in self.devices.nodes_of(taken):
            self.touch(i)
        if all(pc.template for pc in task.resource_claims):  # claims made for the pod alone
            return
        named = {f"{task.namespace}/{pc.claim}" for pc in task.resource_claims if not pc.template}
        if named and any(not a.existing and a.key in named and self.claim_users()[a.key] > 1 for a in taken):
            for i in range(len(self.nodes)):
                self.touch(i)

    def _release_devices(self, task: Task, node: int) -> None:
        """``task`` (on ``node``) is being evicted: the devices only it holds are being released."""
        for d in self.devices.start_releasing(task.key, task.namespace, task.resource_claims, task.uid):
            self._touch_reach(d)

    def _touch_reach(self, device: int) -> None:
        """The nodes device ``device`` is reached from (beyond its own node, touched already) changed."""
        for i in self.devices.catalog.shared_nodes.get(device, ()):
            self.touch(int(i))

    def _take_volumes(self, task: Task, node: int) -> None:
        """Bind ``task``'s WaitForFirstConsumer claims on ``node`` (before anything else changes: a node
        that cannot bind them raises, and nothing is half done); the nodes its volumes reach are looked
        at again."""
        binding = self.volume_binding
        if binding is None:
            raise ValueError(f"task {task.key}: no volume binding in this session")
        for i in binding.nodes_of(binding.take(task.key, task.namespace, task.bind_claims, node)):
            self.touch(int(i))
        self._volumes_moved(task)

    def _give_volumes(self, task: Task) -> None:
        binding = self.volume_binding
        if binding is not None:
            for i in binding.nodes_of(binding.release(task.key)):
                self.touch(int(i))
            self._volumes_moved(task)

    def _volumes_moved(self, task: Task) -> None:
        """A claim other pending pods name was given a volume (or a node) or given back: every node is
        looked at again for them (they follow it, or may go anywhere again)."""
        users = self._bind_claim_users()
        if any(users[f"{task.namespace}/{c}"] > 1 for c in task.bind_claims):
            for i in range(len(self.nodes)):
                self.touch(i)

    def _bind_claim_users(self) -> Counter[str]:
        """How many pods with a task pending name each claim to bind (counted when first asked)."""
        if self._bind_users is None:
            self._bind_users = self._pending_users(lambda t: t.bind_claims)
        return self._bind_users

    def claim_users(self) -> Counter[str]:
        """How many pods with a task pending name each ResourceClaim (by name, not from a template)."""
        if self._claim_users is None:
            self._claim_users = self._pending_users(
                lambda t: [pc.claim for pc in t.resource_claims if not pc.template]
            )
        return self._claim_users

    def _pending_users(self, names: Callable[[Task], Iterable[str]]) -> Counter[str]:
        """How many pods with a task pending (allocated or pipelined in this session included) name each
        of ``names(task)``, by ``namespace/name``."""
        return Counter(
            f"{t.namespace}/{name}"
            for job in self.pending_jobs()
            for t in job.tasks.values()
            if t.status in (TaskStatus.PENDING, TaskStatus.ALLOCATED, TaskStatus.PIPELINED)
            for name in names(t)
        )

    def _take_claims(self, task: Task, node: int, *, future: bool) -> None:
        """Take ``task``'s volumes to bind and its devices on ``node``: both or neither (a device that
        cannot be taken gives the volumes back)."""
        if task.bind_claims:
            self._take_volumes(task, node)
        if task.resource_claims:
            try:
                self._take_devices(task, node, future=future)
            except BaseException:
                if task.bind_claims:
                    self._give_volumes(task)
                raise

    def do_allocate(self, task: Task, node: int) -> None:
        self._take_claims(task, node, future=False)
        self._set_status(task, TaskStatus.ALLOCATED)
        task.node_name = self.nodes.names[node]
        self.nodes.hold(node, task)
        self.touch(node)
        self._fire(task, allocate=True)

    def undo_allocate(self, task: Task, node: int) -> None:
        self.nodes.free(node, task)
        self._set_status(task, TaskStatus.PENDING)
        task.node_name = None
        self.touch(node)
        if task.resource_claims:
            self._give_devices(task)
        if task.bind_claims:
            self._give_volumes(task)
        self._fire(task, allocate=False)

    def do_pipeline(self, task: Task, node: int) -> None:
        self._take_claims(task, node, future=True)
        self._set_status(task, TaskStatus.PIPELINED)
        task.node_name = self.nodes.names[node]
        self.nodes.pipeline(node, task)
        self.touch(node)
        self._fire(task, allocate=True)

    def undo_pipeline(self, task: Task, node: int) -> None:
        self.nodes.unpipeline(node, task)
        self._set_status(task, TaskStatus.PENDING)
        task.node_name = None
        self.touch(node)
        if task.resource_claims:
            self._give_devices(task)
        if task.bind_claims:
            self._give_volumes(task)
        self._fire(task, allocate=False)

    def do_evict(self, task: Task) -> TaskStatus:
        """A task starts releasing its node. A task that held nothing (a failed pod) releases nothing:
        only its status changes."""
        previous = task.status
        holds = previous in NODE_HOLDING_STATUSES
        node = self.nodes.index.get(task.node_name or "") if holds else None
        self._set_status(task, TaskStatus.RELEASING)
        if node is not None:
            self.nodes.start_releasing(node, task)
            self.touch(node)
            if task.resource_claims:
                self._release_devices(task, node)
        if holds:
            self._fire(task, allocate=False)
        return previous

    def undo_evict(self, task: Task, previous: TaskStatus) -> None:
        holds = previous in NODE_HOLDING_STATUSES
        node = self.nodes.index.get(task.node_name or "") if holds else None
        if node is not None:
            self.nodes.stop_releasing(node, task)
            self.touch(node)
            if task.resource_claims:
                for d in self.devices.stop_releasing(task.key):
                    self._touch_reach(d)
        self._set_status(task, previous)
        if holds:
            self._fire(task, allocate=True)

    # --- helpers for actions --------------------------------------------------------------------------

    def pending_jobs(self) -> list[Job]:
        """The jobs with a task pending now (read-only: the same list until a task's status changes).
        Only jobs that had one when the snapshot was built can
        (a session never makes a task pending that was not: it only undoes its own placements), and
        the snapshot names those (``ClusterSnapshot.private``): the few of a steady state are read by
        key, not found among every bound job each time an action asks. In the jobs' order when most
        jobs may be pending (a backlog), else in key order: an action's decisions never depend on it
        (it orders jobs by the session's orders, whose keys tell any two jobs apart). Found again only
        after a task's status changed (every change goes through ``_set_status``): the pods set aside,
        pending all session, are walked once per change, not once per action that asks."""
        out = self._pending
        if out is not None:
            return out
        maybe = self._maybe_pending
        if maybe is None:
            jobs = self.jobs
            private = self.snapshot.private
            if private is None or len(private) == len(jobs):  # (every job: a backlog's first session)
                maybe = list(jobs.values())
            elif len(private) * 4 > len(jobs):
                maybe = [job for key, job in jobs.items() if key in private]
            else:
                maybe = [jobs[key] for key in sorted(private) if key in jobs]
            self._maybe_pending = maybe
        pending = TaskStatus.PENDING
        out = self._pending = [job for job in maybe if job.status_count.get(pending)]
        return out

    def admission_jobs(self) -> list[Job]:
        """The jobs enqueue decides for: those with a task pending (``pending_jobs``), and the PodGroups
        in phase Pending with no pod at all yet. Volcano's job controller (and the operators built like
        it) makes a PodGroup first and its pods only once the scheduler moved it to Inqueue: such a group
        is admitted on its minResources, as Volcano's enqueue admits it. Phase Pending makes a job private
        in the snapshot, so these are found among the same few jobs as ``pending_jobs``."""
        self.pending_jobs()  # (gathers the jobs that may be pending)
        maybe = self._maybe_pending
        assert maybe is not None
        pending, waiting = TaskStatus.PENDING, PodGroupPhase.PENDING
        return [
            job
            for job in maybe
            if job.status_count.get(pending)
            or (not job.tasks and job.podgroup is not None and job.phase is waiting)
        ]

    def jobs_by_queue(self, jobs: Iterable[Job] | None = None) -> dict[str, list[Job]]:
        out: dict[str, list[Job]] = {}
        for job in self.jobs.values() if jobs is None else jobs:
            out.setdefault(job.queue, []).append(job)
        return out

    def queue_allocated(self, queue: str) -> Vector:
        """What the jobs of ``queue`` hold now (allocated, bound or running): summed over the jobs the
        first time a session asks, then kept current by every status change (reclaim says it for every
        victim)."""
        held = self._queue_allocated
        if held is None:
            held = self._queue_allocated = {}
            for job in self.jobs.values():
                total = held.get(job.queue)
                if total is None:
                    held[job.queue] = job.allocated.copy()
                else:
                    total += job.allocated
        total = held.get(queue)
        return self.space.zeros() if total is None else total.copy()

    def record_fit_error(self, task: Task, status: Status) -> None:
        """Why ``task`` was not placed (the latest answer wins)."""
        self.fit_errors[task.key] = status

    def reject(self, job: Job, status: Status, *, add: bool = False) -> None:
        """Record why ``job`` was refused. The latest refusal replaces the earlier ones unless ``add``
        (preempt and reclaim add why they could not help to why allocate could not place)."""
        if add:
            self.job_errors.setdefault(job.key, []).append(status)
        else:
            self.job_errors[job.key] = [status]

    def emit(self, event: Event) -> None:
        self.result.events.append(event)

    def keep_views(self) -> None:
        """Leave this session's node views for the next session (see ``NodeViews.carry_views``), and its
        ledger's settled run extended by the jobs settled after it (``SessionLedger.keep_ahead``); the
        session asks neither after this."""
        start = time.perf_counter()
        self.ledger.keep_ahead()
        self.result.timings["close:ahead"] = time.perf_counter() - start
        if not self._devices_known:
            return
        plugins = {p.name: p for p in self.plugins}
        carried = self.carry_views(reads_clock=lambda name: getattr(plugins.get(name), "reads_clock", True))
        if carried is not None:
            self.snapshot.kept[KEPT_VIEWS] = carried

    def release(self) -> None:
        """Drop everything the session holds, once its result is taken (``run_session`` calls it last;
        the session is of no use after). Plugins register callbacks that close over the session, which
        holds them: reference cycles, so without this the session, its snapshot and its copies of the
        jobs would live on until the cyclic collector found them, every young collection walking them
        meanwhile. See docs/design/steady-state.md#the-session-leaves-no-garbage."""
        self.__dict__.clear()

    def timed(self, label: str, fn: Callable[[], None]) -> None:
        start = time.perf_counter()
        try:
            fn()
        finally:
            self.result.timings[label] = self.result.timings.get(label, 0.0) + time.perf_counter() - start


def pod_uids(snapshot: ClusterSnapshot) -> set[str]:
    """The uids of the pods in ``snapshot``, placed or not, ours or not: a pod the cache refused that
    its node runs is there too (it holds its room, though the cache keeps none of its claims)."""
    out = {t.uid for held in snapshot.nodes.tasks for t in held.values()}
    for job in snapshot.jobs.values():
        out.update(t.uid for t in job.tasks.values())
    return out
