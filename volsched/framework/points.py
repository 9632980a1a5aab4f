"""Extension points: the tables plugins register callbacks in, and how their answers combine.

:class:`ExtensionPoints` (a Protocol) is what a plugin sees and :class:`Plugin` the plugin contract;
:class:`PointTables` registers callbacks and combines their answers tier by tier. It keeps no cluster
state and decides nothing itself; plugins import this module, never the Session. How each kind of
answer combines: docs/design/modules.md#extension-points.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence, Set
from functools import cmp_to_key
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from volsched.framework.decisions import Code, Event, SessionResult, Status
from volsched.model.cluster import BoolArray, ClusterSnapshot, IndexArray, Job, NodeTable, key_of
from volsched.model.resources import ResourceSpace, Vector
from volsched.model.vocabulary import QueueSpec, Task, by_age
from volsched.records import dataclass

if TYPE_CHECKING:
    from volsched.framework.config import SchedulerConfig


class Vote(enum.IntEnum):
    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


CompareFn = Callable[[Any, Any], int]
#: A sort key (lower first; equal keys tell nothing): keys of one order must compare with each other.
KeyFn = Callable[[Any], Any]
VoteFn = Callable[[Job], tuple[Vote, str]]
PredicateFn = Callable[[Task, IndexArray], BoolArray]
ExplainFn = Callable[[Task, IndexArray], list[tuple[str, int]]]
ScoreFn = Callable[[Task, IndexArray], "np.ndarray[Any, np.dtype[np.float64]]"]
#: Over all nodes; None when nothing applies to the task.
ConstraintFn = Callable[[Task], "BoolArray | None"]
ConstraintExplainFn = Callable[[Task, IndexArray], list[tuple[str, int]]]
#: The placed pods (by key) whose going may let the task pass a constraint filter on their node, each with
#: what its going frees, in words.
HoldersFn = Callable[[Task], Mapping[str, str]]
#: (task, nodes passing every filter) -> scores over all nodes, or None when nothing applies.
ConstraintScoreFn = Callable[[Task, BoolArray], "np.ndarray[Any, np.dtype[np.float64]] | None"]
VictimFn = Callable[[Task, list[Task]], "list[Task] | None"]
#: Victims in (in the action's order) -> those that may go, whoever named them (see ``add_victim_filter_fn``).
VictimFilterFn = Callable[[list[Task]], list[Task]]


#: Extension points switched on and off with another one.
_SWITCH = {
    "constraint": "predicate",
    "constraint_relief": "predicate",
    "constraint_now": "predicate",
    "constraint_holders": "predicate",
    "constraint_score": "node_order",
}


class KeyOrder:
    """An order a plugin gave as a key, standing in the point's table as the comparator it implies
    (so a point where another plugin gave a comparator still combines them in tier order)."""

    __slots__ = ("key",)

    def __init__(self, key: KeyFn) -> None:
        self.key = key

    def __call__(self, left: Any, right: Any) -> int:
        a, b = self.key(left), self.key(right)
        return -1 if a < b else (1 if b < a else 0)


@dataclass
class EventHandler:
    """Called when a task takes (allocate, pipeline) or gives back (evict, discard) resources."""

    allocate: Callable[[Task], None] | None = None
    deallocate: Callable[[Task], None] | None = None


class Ledger(Protocol):
    """What the session's jobs hold, ask and still miss, per queue and per namespace, as the session
    stands when asked: the framework keeps it current as Statements change tasks and phases (an answer
    asked again after a change is summed again). Each sum adds the jobs one at a time in the session's
    order from zero, as a loop over ``session.jobs`` would, to the last bit. The vectors handed out are
    read-only: copy one to add to it. A plugin that follows its sums through the session keeps its own
    copy current with an event handler (``add_event_handler``), as proportion and drf do."""

    def held_by_queue(self) -> Mapping[str, Vector]:
        """Per queue named by a job (known or not): what its jobs hold (allocated, bound, running)."""

    def held_by_namespace(self) -> Mapping[str, Vector]:
        """Per namespace of a job: what its jobs hold."""

    def asked_by_queue(self) -> Mapping[str, Vector]:
        """Per queue named by a job: what its jobs hold plus what their pending and pipelined tasks ask
        (``Job.total_request``), the request a Queue's status shows."""

    def asked_by_namespace(self) -> Mapping[str, Vector]:
        """Per namespace of a job: what its jobs hold plus what their pending and pipelined tasks ask."""

    def unmet_by_namespace(self) -> Mapping[str, Vector]:
        """Per namespace with an admitted job: what its admitted jobs may still claim toward their minimum."""

    def unmet_by_queue(self) -> Mapping[str, Vector]:
        """Per queue with an admitted job (phase Inqueue): what its admitted jobs may still claim toward
        their minimum (``unmet_minimum``: minResources less what each holds)."""

    def unmet(self) -> Vector:
        """The same over every queue (one sum, in the jobs' order)."""

    def asking_jobs(self) -> Sequence[Job]:
        """The jobs, in the session's order, with a task pending or pipelined, or a PodGroup waiting for
        admission with no pod yet (phase Pending)."""

    def short_gangs(self) -> Sequence[Job]:
        """The jobs short of minMember that hold members or are admitted (in no particular order)."""

    def any_host_ports(self) -> bool:
        """Whether a task of the jobs that is on a node may ask for host ports."""

    def any_constrained(self) -> bool:
        """Whether a task of the jobs has pod affinity, anti-affinity or topology spread."""


class ExtensionPoints(Protocol):
    """What a plugin sees of a session: the extension points it registers callbacks on (in
    ``on_session_open``, nothing else), and the state its callbacks read. Not the mutations, the
    Statement or the refusals: those are the actions'. A Session is one."""

    # --- the state callbacks read (the session's; never reassigned) --------------------------------
    @property
    def snapshot(self) -> ClusterSnapshot: ...
    @property
    def config(self) -> SchedulerConfig: ...
    @property
    def space(self) -> ResourceSpace: ...
    @property
    def nodes(self) -> NodeTable: ...
    @property
    def jobs(self) -> dict[str, Job]: ...
    @property
    def queues(self) -> dict[str, QueueSpec]: ...
    @property
    def total(self) -> Vector: ...
    @property
    def now(self) -> float: ...
    @property
    def ledger(self) -> Ledger:
        """What the jobs hold, ask and still miss, per queue and per namespace."""

    @property
    def state(self) -> dict[str, Any]:
        """Per-session scratchpad (like the Kubernetes framework's CycleState)."""

    @property
    def carryover(self) -> dict[str, Any]:
        """Kept across sessions: the result hands it back, the driver stores it."""

    @property
    def result(self) -> SessionResult:
        """For ``on_session_close``: status a plugin adds to (queues' deserved shares)."""

    def feasible_nodes(self, task: Task) -> BoolArray: ...
    def overused(self, queue: QueueSpec) -> Status | None:
        """The combined answer of every plugin's ``overused`` (ask it once every plugin opened)."""

    def allocatable(self, queue: QueueSpec, task: Task) -> Status | None:
        """The combined answer of every plugin's ``allocatable`` (ask it once every plugin opened)."""

    def job_valid(self, job: Job) -> Status | None:
        """None when every plugin takes the job as valid, else the first refusal (ask it once every plugin
        opened)."""

    def jobs_valid(self, jobs: Sequence[Job]) -> list[Status | None]:
        """``job_valid`` of each of ``jobs``."""

    def queue_less(self, left: QueueSpec, right: QueueSpec) -> bool:
        """Whether ``left`` comes before ``right`` in the session's queue order now (ask it once every
        plugin opened)."""

    def jobs_by_queue(self, jobs: Iterable[Job] | None = None) -> dict[str, list[Job]]: ...
    def job_keys(self) -> Callable[[Sequence[Job]], list[Any]]:
        """The session's job order as sort keys of a list of jobs (ask it once every plugin opened)."""

    def pending_jobs(self) -> list[Job]:
        """The jobs with a task pending now."""

    def emit(self, event: Event) -> None: ...

    # --- registration ------------------------------------------------------------------------------
    def add_queue_order_fn(self, plugin: str, fn: CompareFn) -> None: ...
    def add_namespace_order_fn(self, plugin: str, fn: CompareFn) -> None: ...
    def add_job_order_fn(self, plugin: str, fn: CompareFn) -> None: ...
    def add_task_order_fn(self, plugin: str, fn: CompareFn) -> None: ...
    def add_namespace_key_fn(self, plugin: str, fn: KeyFn) -> None:
        """Namespace order as a key. The key of a namespace may change only when a task of that
        namespace takes or gives back resources (the session keeps it until then)."""

    def add_job_key_fn(self, plugin: str, fn: KeyFn) -> None:
        """Job order as a key. The key of a job may change only when its own tasks change (actions
        compute it when a job enters their queue, and again when they requeue it)."""

    def add_task_key_fn(self, plugin: str, fn: KeyFn) -> None:
        """Task order as a key; a task's key must not change while it waits."""

    def add_job_valid_fn(self, plugin: str, fn: Callable[[Job], str | None]) -> None:
        """Whether a job can ever run (None) or why not. The answer may change only when a task of the
        job changes status (the session keeps it until then)."""

    def add_jobs_valid_fn(self, plugin: str, fn: Callable[[Sequence[Job]], list[str | None]]) -> None:
        """The plugin's job_valid over a list of jobs: its answer for each, in order (asked where the
        session wants many jobs' validity at once: a backlog's, before the first bind). Only used where
        the plugin registered job_valid too."""

    def add_job_enqueueable_fn(self, plugin: str, fn: VoteFn) -> None: ...
    def add_job_enqueued_fn(self, plugin: str, fn: Callable[[Job], None]) -> None: ...
    def add_jobs_enqueueable_fn(self, plugin: str, fn: Callable[[Sequence[Job]], int]) -> None:
        """The plugin's job_enqueueable over a run: how many of the jobs, from the first, its vote would
        PERMIT when each is asked after those before it were admitted (its job_enqueued called on them).
        Fewer is allowed (those jobs are then asked one by one), more never. Only used where the plugin
        registered job_enqueueable too (and under its switch)."""

    def add_jobs_enqueued_fn(self, plugin: str, fn: Callable[[Sequence[Job]], None]) -> None:
        """The plugin's job_enqueued over a run: what calling it on each job in order does. A plugin's
        job_enqueued reads and writes the plugin's own state only (so plugin by plugin over a run is
        job by job)."""

    def add_job_ready_fn(self, plugin: str, fn: Callable[[Job], bool]) -> None: ...
    def add_job_pipelined_fn(self, plugin: str, fn: VoteFn) -> None: ...
    def add_job_starving_fn(self, plugin: str, fn: Callable[[Job], bool]) -> None: ...
    def add_allocatable_fn(self, plugin: str, fn: Callable[[QueueSpec, Task], str | None]) -> None: ...
    def add_overused_fn(self, plugin: str, fn: Callable[[QueueSpec], str | None]) -> None: ...
    def add_preemptive_fn(self, plugin: str, fn: Callable[[QueueSpec, Task], str | None]) -> None: ...
    def add_predicate_fn(self, plugin: str, fn: PredicateFn, *, explain: ExplainFn | None = None) -> None: ...
    def add_node_order_fn(self, plugin: str, fn: ScoreFn) -> None: ...
    def add_constraint_fn(
        self,
        plugin: str,
        fn: ConstraintFn,
        *,
        explain: ConstraintExplainFn,
        relief: ConstraintFn | None = None,
        now: ConstraintFn | None = None,
        holders: HoldersFn | None = None,
    ) -> None: ...
    def add_constraint_score_fn(self, plugin: str, fn: ConstraintScoreFn) -> None: ...
    def add_reclaimable_fn(self, plugin: str, fn: VictimFn) -> None: ...
    def add_preemptable_fn(self, plugin: str, fn: VictimFn) -> None: ...
    def add_victim_tasks_fn(self, plugin: str, fn: Callable[[], list[Task]]) -> None: ...
    def add_victim_filter_fn(
        self,
        plugin: str,
        fn: VictimFilterFn,
        *,
        explain: Callable[[list[Task], str], list[str]] | None = None,
    ) -> None:
        """A filter every eviction's victims pass last (preempt's, reclaim's and shuffle's alike, as
        far as the plugin's switches for preemptable, reclaimable and victim are on); the
        victim contract holds (it passes a pod in a list only if it would pass it alone, and passes any
        subset of what it passed). ``explain(pods, namespace)`` says why it keeps the pods of a list it
        would not pass alone (one clause each, as users read it), to a pod of ``namespace``: naming
        nothing of another namespace's (another tenant's names). A budget, not a wall, for preempt and reclaim: where
        what it keeps is all that could make room, they take it past the filter (deleted, the reason
        saying what was gone past, in ``explain``'s words); shuffle never does."""

    def add_shape_fn(self, plugin: str, fn: Callable[[Job, list[Task]], Hashable]) -> None:
        """For a plugin that declares ``answers_by_shape`` but answers two jobs of one shape apart by
        something else it reads of them (the job a reservation is held for, a pod's age against a
        delay): ``fn`` says that of a job and its tasks (``job_shape``'s), and jobs it tells apart are
        never given each other's answers."""

    def add_event_handler(self, handler: EventHandler) -> None: ...


class Plugin(Protocol):
    """Registers callbacks on the session's extension points in ``on_session_open``; nothing else."""

    name: ClassVar[str]

    def on_session_open(self, session: ExtensionPoints) -> None: ...

    def on_session_close(self, session: ExtensionPoints) -> None: ...


class _Layouts:
    """What a config's tiers make of each point, by the names of the plugins that registered there: the
    rows of names, tier by tier, of those the config switches on at that point. A function of the config
    and the names alone, the same in every session that config runs (each session's callbacks are its
    own: only the names are kept)."""

    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config
        self.enabled = {opt.name: opt for opt in config.plugin_options()}
        self.tiers: list[list[str]] = [[p.name for p in t.plugins] for t in config.tiers]
        self._rows: dict[tuple[str, tuple[str, ...]], list[list[str]]] = {}

    def rows(self, point: str, names: tuple[str, ...]) -> list[list[str]]:
        key = (point, names)
        out = self._rows.get(key)
        if out is None:
            switch = _SWITCH.get(point, point)
            registered = set(names)
            out = []
            for tier in self.tiers:
                row = [name for name in tier if name in registered and self.enabled[name].enabled(switch)]
                if row:
                    out.append(row)
            if len(self._rows) >= _LAYOUT_ROWS_KEPT:
                self._rows.clear()
            self._rows[key] = out
        return out


#: The layouts of the last few configs, by identity (the config is held with them, so its id is no other's
#: while kept); and how many points' rows each keeps (a bound, never reached by a config's own plugins).
_LAYOUTS: dict[int, _Layouts] = {}
_LAYOUTS_KEPT = 8
_LAYOUT_ROWS_KEPT = 256


class PointTables:
    """The extension-point tables of one session, and their tier-wise combination (the implementation
    behind :class:`ExtensionPoints`; Session extends it)."""

    def __init__(self, config: SchedulerConfig) -> None:
        layouts = _LAYOUTS.get(id(config))
        if layouts is None or layouts.config is not config:
            if len(_LAYOUTS) >= _LAYOUTS_KEPT:
                _LAYOUTS.clear()
            layouts = _LAYOUTS[id(config)] = _Layouts(config)
        self._layouts = layouts
        self._enabled = layouts.enabled
        self._tiers = layouts.tiers
        self._fns: dict[str, dict[str, Any]] = {}
        self._tier_cache: dict[str, list[list[tuple[str, Any]]]] = {}
        self._flat_cache: dict[str, list[tuple[str, Any]]] = {}
        self._key_cache: dict[str, Callable[[Any], Any]] = {}
        self._keys_cache: dict[str, Callable[[Sequence[Any]], list[Any]]] = {}
        self._explain: dict[str, ExplainFn] = {}
        self._victim_explain: dict[str, Callable[[list[Task], str], list[str]]] = {}
        #: How many times the victim filters kept a pod the plugins named (``_victims``): an action's
        #: last resort past them changes nothing unless this moved while it tried.
        self.victim_filters_kept = 0
        self.event_handlers: list[EventHandler] = []
        #: Each job's validity as last asked (``job_valid``), kept until one of its tasks changes status
        #: (``job_changed``): enqueue and allocate both ask it of every pending job.
        self._valid: dict[str, Status | None] = {}
        #: The jobs a task of which changed status this session (``job_changed``): what is asked of them
        #: now may differ from what was asked of them as the session opened.
        self._changed_jobs: set[str] = set()
        #: Each namespace's order key as last computed, kept until its tasks take or give back resources.
        self._ns_keys: dict[str, Any] = {}
        #: Each namespace whose tasks took or gave back resources, with the position of its latest change
        #: in the change count, in the order of those latest changes (``namespaces_changed``): one entry
        #: a namespace, not one a placement, so it stays as small as the namespaces all session long.
        self._ns_log: dict[str, int] = {}
        #: Changes so far (the position ``namespaces_changed`` hands out).
        self._ns_changes = 0

    # --- registration (plugins call these in on_session_open) ---------------------------------------

    def _add(self, point: str, plugin: str, fn: Any) -> None:
        fns = self._fns.get(point)
        if fns is None:
            fns = self._fns[point] = {}
        fns[plugin] = fn
        # What was combined or answered before goes (nothing, in the opens: a session registers some
        # forty callbacks before it asks any, and each asked nothing to drop)
        if self._tier_cache:
            self._tier_cache.pop(point, None)
        if self._flat_cache:
            self._flat_cache.pop(point, None)
        if self._key_cache:
            self._key_cache.pop(point, None)
        if self._keys_cache:
            self._keys_cache.pop(point, None)
        if self._ns_keys:
            self._ns_keys.clear()
        if self._valid:
            self._valid.clear()

    def add_queue_order_fn(self, plugin: str, fn: CompareFn) -> None:
        self._add("queue_order", plugin, fn)

    def add_namespace_order_fn(self, plugin: str, fn: CompareFn) -> None:
        self._add("namespace_order", plugin, fn)

    def add_job_order_fn(self, plugin: str, fn: CompareFn) -> None:
        self._add("job_order", plugin, fn)

    def add_task_order_fn(self, plugin: str, fn: CompareFn) -> None:
        self._add("task_order", plugin, fn)

    def add_namespace_key_fn(self, plugin: str, fn: KeyFn) -> None:
        self._add("namespace_order", plugin, KeyOrder(fn))

    def add_job_key_fn(self, plugin: str, fn: KeyFn) -> None:
        self._add("job_order", plugin, KeyOrder(fn))

    def add_task_key_fn(self, plugin: str, fn: KeyFn) -> None:
        self._add("task_order", plugin, KeyOrder(fn))

    def add_job_valid_fn(self, plugin: str, fn: Callable[[Job], str | None]) -> None:
        self._add("job_valid", plugin, fn)

    def add_jobs_valid_fn(self, plugin: str, fn: Callable[[Sequence[Job]], list[str | None]]) -> None:
        self._add("jobs_valid", plugin, fn)

    def add_job_enqueueable_fn(self, plugin: str, fn: VoteFn) -> None:
        self._add("job_enqueueable", plugin, fn)

    def add_job_enqueued_fn(self, plugin: str, fn: Callable[[Job], None]) -> None:
        self._add("job_enqueued", plugin, fn)

    def add_jobs_enqueueable_fn(self, plugin: str, fn: Callable[[Sequence[Job]], int]) -> None:
        self._add("jobs_enqueueable", plugin, fn)

    def add_jobs_enqueued_fn(self, plugin: str, fn: Callable[[Sequence[Job]], None]) -> None:
        self._add("jobs_enqueued", plugin, fn)

    def add_job_ready_fn(self, plugin: str, fn: Callable[[Job], bool]) -> None:
        self._add("job_ready", plugin, fn)

    def add_job_pipelined_fn(self, plugin: str, fn: VoteFn) -> None:
        self._add("job_pipelined", plugin, fn)

    def add_job_starving_fn(self, plugin: str, fn: Callable[[Job], bool]) -> None:
        self._add("job_starving", plugin, fn)

    def add_allocatable_fn(self, plugin: str, fn: Callable[[QueueSpec, Task], str | None]) -> None:
        """``fn`` returns None when the queue may take the task, else the reason it may not."""
        self._add("allocatable", plugin, fn)

    def add_overused_fn(self, plugin: str, fn: Callable[[QueueSpec], str | None]) -> None:
        """``fn`` returns the reason a queue is overused, or None."""
        self._add("overused", plugin, fn)

    def add_preemptive_fn(self, plugin: str, fn: Callable[[QueueSpec, Task], str | None]) -> None:
        """``fn`` returns None when the queue may take capacity back for the task, else why not."""
        self._add("preemptive", plugin, fn)

    def add_shape_fn(self, plugin: str, fn: Callable[[Job, list[Task]], Hashable]) -> None:
        """``fn`` tells apart jobs of one shape the plugin answers apart (see the Protocol)."""
        self._add("shape", plugin, fn)

    def shape_of(self, job: Job, tasks: list[Task]) -> tuple[Hashable, ...]:
        """What the plugins' shape functions say of ``job`` and its ``tasks`` (empty without any)."""
        fns = self._flat("shape")
        if not fns:  # (asked of every job of a backlog, twice a session)
            return ()
        return tuple(fn(job, tasks) for _, fn in fns)

    def add_predicate_fn(self, plugin: str, fn: PredicateFn, *, explain: ExplainFn | None = None) -> None:
        self._add("predicate", plugin, fn)
        if explain is not None:
            self._explain[plugin] = explain

    def add_node_order_fn(self, plugin: str, fn: ScoreFn) -> None:
        self._add("node_order", plugin, fn)

    def add_constraint_fn(
        self,
        plugin: str,
        fn: ConstraintFn,
        *,
        explain: ConstraintExplainFn,
        relief: ConstraintFn | None = None,
        now: ConstraintFn | None = None,
        holders: HoldersFn | None = None,
    ) -> None:
        """A filter that depends on the other pods placed (see the module docstring); switched with
        the plugin's predicates. ``relief`` names the nodes where the filter might pass once pods of
        that node are evicted (None: nothing that eviction could change applies to the task). ``now``:
        where ``fn`` counts what pods being evicted release as released (it says where a task may be
        pipelined), the nodes where it passes with what they hold still held (where the task may be
        placed now; None: as ``fn``). ``holders``: the pods whose eviction may let the task pass on
        their node, beyond those that repel it (reclaim and preempt take them first there)."""
        self._add("constraint", plugin, fn)
        self._explain[f"constraint:{plugin}"] = explain
        if relief is not None:
            self._add("constraint_relief", plugin, relief)
        if now is not None:
            self._add("constraint_now", plugin, now)
        if holders is not None:
            self._add("constraint_holders", plugin, holders)

    def add_constraint_score_fn(self, plugin: str, fn: ConstraintScoreFn) -> None:
        """A score that depends on the other pods placed; switched with the plugin's node order."""
        self._add("constraint_score", plugin, fn)

    def add_reclaimable_fn(self, plugin: str, fn: VictimFn) -> None:
        self._add("reclaimable", plugin, fn)

    def add_preemptable_fn(self, plugin: str, fn: VictimFn) -> None:
        self._add("preemptable", plugin, fn)

    def add_victim_tasks_fn(self, plugin: str, fn: Callable[[], list[Task]]) -> None:
        self._add("victim", plugin, fn)

    def add_victim_filter_fn(
        self,
        plugin: str,
        fn: VictimFilterFn,
        *,
        explain: Callable[[list[Task], str], list[str]] | None = None,
    ) -> None:
        self._add("victim_filter", plugin, fn)
        for point in ("preemptable", "reclaimable", "victim"):
            self._flat_cache.pop(f"victim_filter/{point}", None)
        if explain is not None:
            self._victim_explain[plugin] = explain

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    # --- combination ------------------------------------------------------------------------------

    def _tiered(self, point: str) -> list[list[tuple[str, Any]]]:
        cached = self._tier_cache.get(point)
        if cached is not None:
            return cached
        fns = self._fns.get(point, {})
        out = [[(name, fns[name]) for name in row] for row in self._layouts.rows(point, tuple(fns))]
        self._tier_cache[point] = out
        return out

    def _flat(self, point: str) -> list[tuple[str, Any]]:
        cached = self._flat_cache.get(point)
        if cached is None:
            cached = [item for tier in self._tiered(point) for item in tier]
            self._flat_cache[point] = cached
        return cached

    def _compare(self, point: str, left: Any, right: Any) -> int:
        for tier in self._tiered(point):
            for _, fn in tier:
                c = int(fn(left, right))
                if c:
                    return c
        return 0

    def queue_less(self, left: QueueSpec, right: QueueSpec) -> bool:
        c = self._compare("queue_order", left, right)
        if c:
            return c < 0
        return by_age(left) < by_age(right)

    def job_less(self, left: Job, right: Job) -> bool:
        """The job order, one pair at a time: the comparator chain with :meth:`job_key`'s tie-break
        (what that key's order is checked against; sorting asks the key)."""
        c = self._compare("job_order", left, right)
        if c:
            return c < 0
        return by_age(left) < by_age(right)

    def _order_key(self, point: str, tie: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """The sort key of ``point``'s order: what sorting by it gives is the order ``_compare`` then
        ``tie`` give (tiers in turn, the first plugin that tells two apart wins, ties by ``tie``).
        When every plugin gave a key, the tuple of their keys in tier order, then the tie-break (each
        plugin's key computed once per item); else the comparator chain wrapped as a key."""
        cached = self._key_cache.get(point)
        if cached is not None:
            return cached
        fns = self._flat(point)
        key: Callable[[Any], Any]
        if all(isinstance(fn, KeyOrder) for _, fn in fns):
            keys = tuple(fn.key for _, fn in fns)
            if not keys:
                key = tie
            elif len(keys) == 1:
                (k0,) = keys

                def key(item: Any) -> Any:
                    return (k0(item), tie(item))
            elif len(keys) == 2:
                k0, k1 = keys

                def key(item: Any) -> Any:
                    return (k0(item), k1(item), tie(item))
            elif len(keys) == 3:  # the default job order: priority, gang, drf
                k0, k1, k2 = keys

                def key(item: Any) -> Any:
                    return (k0(item), k1(item), k2(item), tie(item))
            else:

                def key(item: Any) -> Any:
                    return (*[k(item) for k in keys], tie(item))
        else:

            def compare(left: Any, right: Any) -> int:
                c = self._compare(point, left, right)
                if c:
                    return c
                a, b = tie(left), tie(right)
                return -1 if a < b else (1 if b < a else 0)

            key = cmp_to_key(compare)
        self._key_cache[point] = key
        return key

    def _order_keys(
        self, point: str, tie: Callable[[Any], Any], ties: Callable[[Sequence[Any]], Iterable[Any]]
    ) -> Callable[[Sequence[Any]], list[Any]]:
        """``_order_key(point, tie)`` of each of a list of items, in one go: each plugin's key over all
        of them, then the tie-break over all (``ties``: ``tie`` of each item), zipped into the same
        tuples the key makes one item at a time. A backlog's 50,000 jobs are sorted at once: no call
        a job to gather its plugins' keys, nor one to make its tie-break."""
        cached = self._keys_cache.get(point)
        if cached is not None:
            return cached
        fns = self._flat(point)
        many: Callable[[Sequence[Any]], list[Any]]
        if fns and all(isinstance(fn, KeyOrder) for _, fn in fns):
            keys = tuple(fn.key for _, fn in fns)

            def many(items: Sequence[Any]) -> list[Any]:
                return list(zip(*[map(k, items) for k in keys], ties(items), strict=True))
        else:
            one = self._order_key(point, tie)

            def many(items: Sequence[Any]) -> list[Any]:
                return list(map(one, items))

        self._keys_cache[point] = many
        return many

    def job_key(self) -> Callable[[Job], Any]:
        """The job order as a sort key (distinct jobs never have equal keys)."""
        return self._order_key("job_order", by_age)

    def job_keys(self) -> Callable[[Sequence[Job]], list[Any]]:
        """:meth:`job_key` of each job of a list, as a list (computed plugin by plugin over the list)."""
        return self._order_keys("job_order", by_age, _creations_then_keys)

    def task_key(self) -> Callable[[Task], Any]:
        """The task order as a sort key (distinct tasks never have equal keys)."""
        return self._order_key("task_order", by_age)

    def namespace_key(self, ns: str) -> Any:
        """The namespace order's sort key of ``ns`` as it stands now: kept from the last time it was
        asked until a task of ``ns`` takes or gives back resources (``namespace_changed``)."""
        key = self._ns_keys.get(ns, _MISSING)
        if key is _MISSING:
            key = self._ns_keys[ns] = self._order_key("namespace_order", _itself)(ns)
        return key

    def namespace_changed(self, ns: str) -> None:
        """A task of ``ns`` took or gave back resources: its namespace key is computed again."""
        self._ns_keys.pop(ns, None)
        self._ns_changes += 1
        log = self._ns_log
        log.pop(ns, None)  # to the end: the log stays in the order of the latest changes
        log[ns] = self._ns_changes

    def namespace_keys_hold(self) -> bool:
        """Whether a namespace's key holds its value until its tasks change (every plugin of the order
        gave a key); a comparator's key compares by the state at each comparison."""
        return all(isinstance(fn, KeyOrder) for _, fn in self._flat("namespace_order"))

    def namespaces_changed(self, since: int | None = None) -> tuple[list[str], int]:
        """The namespaces whose key may have changed since position ``since`` of the change log (None:
        none, only the position), latest first, and the log's position now: the only keys
        ``namespace_key`` answers differently for."""
        now = self._ns_changes
        if since is None or since >= now:
            return [], now
        out: list[str] = []
        for ns, at in reversed(self._ns_log.items()):
            if at <= since:
                break
            out.append(ns)
        return out, now

    def job_valid(self, job: Job) -> Status | None:
        """None when every plugin takes the job as valid, else the first refusal (nothing a later turn
        or an eviction would change). Asked once per job until one of its tasks changes status
        (``job_changed``): a plugin's validity reads the job's tasks, not what other jobs hold."""
        memo = self._valid
        out = memo.get(job.key, _MISSING)
        if out is _MISSING:
            out = memo[job.key] = self._job_valid(job)
        return out  # type: ignore[return-value]

    def jobs_valid(self, jobs: Sequence[Job]) -> list[Status | None]:
        """``job_valid`` of each of ``jobs``: the jobs not asked yet are asked plugin by plugin over all
        of them, through the plugin's answer for a list where it gave one (``add_jobs_valid_fn``; a
        job's validity reads its own tasks only, so the first refusal is the same as job by job), and
        kept."""
        memo = self._valid
        out: list[Status | None]
        if memo:
            kept: list[object] = [memo.get(job.key, _MISSING) for job in jobs]
            ask = [k for k, answer in enumerate(kept) if answer is _MISSING]
            if not ask:  # all kept (allocate after enqueue asked them all): nothing to ask or keep
                return kept  # type: ignore[return-value]
            out = [None if answer is _MISSING else answer for answer in kept]  # type: ignore[misc]
            pool = [jobs[k] for k in ask]
        else:  # none asked yet (enqueue at a backlog asks first)
            ask, out, pool = list(range(len(jobs))), [None] * len(jobs), list(jobs)
        runs = self._fns.get("jobs_valid", {})
        for name, fn in self._flat("job_valid") if pool else ():
            run = runs.get(name)
            reasons: list[str | None] = run(pool) if run is not None else list(map(fn, pool))
            if any(reasons):
                left: list[int] = []
                for k, reason in zip(ask, reasons, strict=True):
                    if reason:
                        out[k] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, name, (reason,))
                    else:
                        left.append(k)
                ask = left
                pool = [jobs[k] for k in ask]
        memo.update(zip(map(key_of, jobs), out, strict=True))
        return out

    def _job_valid(self, job: Job) -> Status | None:
        for name, fn in self._flat("job_valid"):
            reason: str | None = fn(job)
            if reason:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, name, (reason,))
        return None

    def job_changed(self, job: Job) -> None:
        """A task of ``job`` changed status: its validity is asked again."""
        self._valid.pop(job.key, None)
        self._changed_jobs.add(job.key)

    def jobs_answered(self) -> tuple[Mapping[str, Status | None], Set[str]]:
        """Each job's validity as asked so far (``job_valid``, kept), and the jobs changed so far
        (``job_changed``): the answers of the jobs not among them are what the jobs as the session
        opened are answered (the live objects: read them once the session is over)."""
        return self._valid, self._changed_jobs

    def jobs_known_valid(self, answers: Iterable[tuple[str, Status | None]]) -> None:
        """The validity of jobs known already (kept from the last session, where nothing it reads
        changed since: ``volsched.actions.kept``), taken as if asked; a job asked already keeps its own."""
        memo = self._valid
        if not memo:
            memo.update(answers)
            return
        for key, answer in answers:
            memo.setdefault(key, answer)

    def registered(self, point: str) -> list[tuple[str, bool]]:
        """The plugins whose callbacks ``point`` combines in this session (switched on, in tier order),
        each with whether it gave a key (``add_*_key_fn``) rather than a comparator."""
        return [(name, isinstance(fn, KeyOrder)) for name, fn in self._flat(point)]

    def _vote(self, point: str, job: Job) -> Status | None:
        """None when the job is let through: no plugin rejects before a tier permits."""
        for tier in self._tiered(point):
            permitted = False
            for name, fn in tier:
                vote, reason = fn(job)
                if vote is Vote.REJECT:
                    return Status(Code.UNSCHEDULABLE, name, (f"{name}: {reason}" if reason else name,))
                if vote is Vote.PERMIT:
                    permitted = True
            if permitted:
                return None
        return None

    def job_enqueueable(self, job: Job) -> Status | None:
        """None when the job may be admitted, else the vote that refused it."""
        return self._vote("job_enqueueable", job)

    def job_enqueued(self, job: Job) -> None:
        for _, fn in self._flat("job_enqueued"):
            fn(job)

    def jobs_enqueueable(self, jobs: Sequence[Job]) -> int:
        """How many of ``jobs``, from the first, ``job_enqueueable`` would let in one after another (each
        asked after ``job_enqueued`` of those before it): the least of the run answers of the plugins
        in the first tier that votes (each of them permits those jobs, which settles the tier), or 0
        when one of them gives no run answer (then the jobs are asked one by one). Nobody votes: all."""
        tiers = self._tiered("job_enqueueable")
        if not tiers:
            return len(jobs)
        runs = self._fns.get("jobs_enqueueable", {})
        n = len(jobs)
        for name, _ in tiers[0]:
            fn = runs.get(name)
            if fn is None:
                return 0
            n = min(n, fn(jobs[:n] if n < len(jobs) else jobs))
            if n <= 0:
                return 0
        return n

    def jobs_enqueued(self, jobs: Sequence[Job]) -> None:
        """``job_enqueued`` of each of ``jobs`` in order: plugin by plugin, a plugin's run answer where it
        gave one (a plugin's job_enqueued touches its own state only: the same as job by job)."""
        if not jobs:
            return
        runs = self._fns.get("jobs_enqueued", {})
        for name, fn in self._flat("job_enqueued"):
            run = runs.get(name)
            if run is not None:
                run(jobs)
            else:
                for job in jobs:
                    fn(job)

    def job_pipelined(self, job: Job) -> bool:
        return self._vote("job_pipelined", job) is None

    def job_ready(self, job: Job) -> bool:
        return all(fn(job) for _, fn in self._flat("job_ready"))

    def job_starving(self, job: Job) -> bool:
        for tier in self._tiered("job_starving"):
            if tier:
                return all(fn(job) for _, fn in tier)
        return False

    def allocatable(self, queue: QueueSpec, task: Task) -> Status | None:
        """None when ``queue`` may take ``task``, else the first plugin's refusal."""
        for name, fn in self._flat("allocatable"):
            reason = fn(queue, task)
            if reason:
                return Status(Code.UNSCHEDULABLE, name, (f"{name}: {reason}",))
        return None

    def overused(self, queue: QueueSpec) -> Status | None:
        """None unless a plugin says ``queue`` is overused (then why)."""
        for name, fn in self._flat("overused"):
            reason = fn(queue)
            if reason:
                return Status(Code.UNSCHEDULABLE, name, (f"{name}: {reason}",))
        return None

    def preemptive(self, queue: QueueSpec, task: Task) -> Status | None:
        """None when ``queue`` may take capacity back for ``task``, else the refusal."""
        for tier in self._tiered("preemptive"):
            for name, fn in tier:
                reason = fn(queue, task)
                if reason:
                    return Status(Code.UNSCHEDULABLE, name, (f"{name}: {reason}",))
            if tier:
                return None
        return None

    def _victims(
        self, point: str, actor: Task, candidates: list[Task], *, past_budgets: bool = False
    ) -> list[Task]:
        """Victims among ``candidates`` (in their order): the pods every plugin that answers accepts,
        in every tier, then what the victim filters let through. Tiers give the order in which plugins
        narrow, never the right to override another plugin's protection or budget (a queue's share
        beyond deserved in a later tier still bounds what gang and conformance in the first would give).

        First every candidate that some answering plugin or filter would not name even alone (a pod it
        protects, or one beyond any budget) leaves the list; then the plugins narrow what is left in tier
        order, each counting its budget only over what the ones before it named; the filters narrow
        last. So a budget (a queue's share beyond deserved, a gang's members beyond minMember, a
        PodDisruptionBudget's allowance) is never spent on a protected pod, and a filter's on none that
        another plugin then drops. Relies on the victim contract: a plugin names a candidate in a list
        only if it would name it alone, and names any subset of what it named.

        ``past_budgets`` (reclaim's and preempt's last resort, see :meth:`past_budget`): the filters
        keep nobody; what they would let through comes first (the plugins' budgets spent on those
        first), then the pods they would keep, each part in the candidates' order."""
        fns = [fn for tier in self._tiered(point) for _, fn in tier if fn(actor, candidates) is not None]
        filters = [fn for _, fn in self._victim_filters(point)]
        if past_budgets:
            if filters:
                candidates = self.budgets_first(candidates, point=point)
            filters = []
        if not fns:
            # No plugin answers: a filter then answers alone, as Volcano's pdb (a preemptable and
            # reclaimable plugin there) does in a config where it is the only one. Past it, nobody:
            # no plugin names a pod it would keep, and a budget must never let go more than no budget.
            if past_budgets:
                return []
            return self._filtered(candidates, point=point) if filters else []
        pool = [t for t in candidates if all(fn(actor, [t]) for fn in fns)]
        if filters:
            named = len(pool)
            pool = [t for t in pool if all(f([t]) for f in filters)]
            self.victim_filters_kept += len(pool) < named
        for fn in fns:
            if not pool:
                break
            keys = {t.key for t in fn(actor, pool) or ()}
            pool = [t for t in pool if t.key in keys]
        if past_budgets:
            return self.budgets_first(pool, point=point) if self._victim_filters(point) else pool
        return self._filtered(pool, point=point)

    def _filtered(self, victims: list[Task], *, point: str) -> list[Task]:
        """:meth:`filter_victims`, counting in ``victim_filters_kept`` whether the filters kept any."""
        out = self.filter_victims(victims, point=point)
        self.victim_filters_kept += len(out) < len(victims)
        return out

    def has_victim_filters(self, point: str) -> bool:
        """Whether any victim filter applies to ``point``'s victims (none: nothing to go past)."""
        return bool(self._victim_filters(point))

    def budgets_first(self, victims: list[Task], *, point: str) -> list[Task]:
        """``victims`` with what the victim filters of ``point`` let through (as a list, in order) first,
        then the rest, each part in their order: the pods whose eviction spends no budget past what it
        allows before those it would."""
        passed = self.filter_victims(victims, point=point)
        if len(passed) == len(victims):
            return victims
        keys = {t.key for t in passed}
        return passed + [t for t in victims if t.key not in keys]

    def past_budget(self, victim: Task, *, point: str) -> tuple[str, ...]:
        """What taking ``victim`` now goes past (empty: nothing): the victim filters of ``point`` that
        would keep it, in their words (a PodDisruptionBudget that allows no further disruption). Asked
        just before it is evicted, with what this session evicted before counted.

        Reclaim and preempt go past a budget only as a last resort, where the pods that spend none could
        not make room, as kube-scheduler's preemption does: the pod is then deleted, not evicted
        (the Eviction API would refuse it), and its reason says which budget and why. Shuffle (the
        ``victim`` point) never does: its moves are voluntary and no one's share is at stake."""
        if self.filter_victims([victim], point=point):
            return ()
        kept = self.victim_protections([victim], point=point, told=victim.namespace)
        return kept.reasons if kept is not None else ("a victim filter keeps it",)

    def _victim_filters(self, point: str) -> list[tuple[str, VictimFilterFn]]:
        """The victim filters that apply to ``point``'s victims (``preemptable``, ``reclaimable`` or
        ``victim``): those of plugins that point is switched on for too. Volcano's ``pdb`` answers at those
        three points, so a config written for Volcano that switches it off for one (``enablePreemptable:
        false``, ``enableReclaimable: false``, ``enableVictim: false``) keeps its budgets out of that one
        action's victims here as well; ``enableVictimFilter: false`` switches the filter off for all."""
        key = f"victim_filter/{point}"
        cached = self._flat_cache.get(key)
        if cached is None:
            cached = [(n, fn) for n, fn in self._flat("victim_filter") if self._enabled[n].enabled(point)]
            self._flat_cache[key] = cached
        return cached

    def filter_victims(self, victims: list[Task], *, point: str) -> list[Task]:
        """What the victim filters of ``point`` (see :meth:`_victim_filters`) let through of ``victims``
        (in their order; all of them when no plugin filters). An action that evicts the victims it was
        given one at a time, skipping some for reasons of its own, asks again for each just before
        evicting it."""
        for _, fn in self._victim_filters(point):
            if not victims:
                break
            keys = {t.key for t in fn(victims)}
            victims = [t for t in victims if t.key in keys]
        return victims

    def victim_protections(self, candidates: list[Task], *, point: str, told: str) -> Status | None:
        """Why the victim filters of ``point`` keep pods of ``candidates`` (each alone), as a refusal
        said by the first filter that keeps any (None: they keep none), to a pod of namespace ``told``."""
        said: list[tuple[str, str]] = []
        for name, _ in self._victim_filters(point):
            explain = self._victim_explain.get(name)
            if explain is not None:
                said.extend((name, r) for r in explain(candidates, told))
        if not said:
            return None
        return Status(Code.UNSCHEDULABLE, said[0][0], tuple(r for _, r in said))

    def reclaimable(
        self, reclaimer: Task, candidates: list[Task], *, past_budgets: bool = False
    ) -> list[Task]:
        return self._victims("reclaimable", reclaimer, candidates, past_budgets=past_budgets)

    def preemptable(
        self, preemptor: Task, candidates: list[Task], *, past_budgets: bool = False
    ) -> list[Task]:
        return self._victims("preemptable", preemptor, candidates, past_budgets=past_budgets)

    def victim_tasks(self) -> list[Task]:
        """The union of what the victim_tasks plugins name (in their order), less what a victim filter
        would not let go even alone (see :meth:`filter_victims` for the count)."""
        seen: dict[str, Task] = {}
        for _, fn in self._flat("victim"):
            for t in fn():
                seen.setdefault(t.key, t)
        filters = [fn for _, fn in self._victim_filters("victim")]
        return [t for t in seen.values() if all(f([t]) for f in filters)]


#: Not a key (a key may be anything a sort compares, None included).
_MISSING = object()


_CREATION = attrgetter("creation")


def _creations_then_keys(items: Sequence[Job | Task]) -> Iterator[tuple[float, str]]:
    """:func:`~volsched.model.vocabulary.by_age` of each of ``items`` (the tuples made by ``zip``, not by a call each)."""
    return zip(map(_CREATION, items), map(key_of, items), strict=True)


def _itself(item: str) -> str:
    return item
