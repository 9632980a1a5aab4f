"""Node views: which nodes pass a task's filters, fit it, and score best, and why none does.

:class:`NodeViews` evaluates the node filters and scores registered on the extension points
(:mod:`volsched.framework.points`) for a task: ``choose_node``, ``feasible_nodes``, ``explain_unfit``.
It reads node state and never changes it; the session's mutations call ``touch`` for a node that
changed.

Node filters and scores are vectorised over nodes. A task's view of the nodes is cached by its request
and placement spec and refreshed only for nodes that changed since, so the tasks of a gang cost one
full evaluation between them. Callbacks registered as predicates or node orders must therefore depend
only on the task's request and placement spec and on node state.

What depends on the other pods (pod affinity and anti-affinity, topology spread) breaks that: placing
a pod on one node changes the answer for every node of its topology domain, and only for tasks whose
constraints (or placed pods' constraints) select it. Such callbacks register as *constraint* filters
and scores: they are asked per task, over all nodes, on top of the cached view (never cached in it),
and return None at once for a task nothing applies to, so tasks without such constraints pay nothing.
They keep their own per-domain counts current through event handlers, which also run (in reverse) when
a Statement is discarded.
"""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from volsched.framework.points import PointTables
from volsched.model.cluster import BoolArray, IndexArray, NodeTable
from volsched.model.devices import DeviceCatalog, DeviceState, is_device_resource
from volsched.model.resources import EPS, ResourceSpace, Vector
from volsched.model.vocabulary import Task
from volsched.model.volumes import VolumeState
from volsched.records import dataclass

if TYPE_CHECKING:
    from volsched.framework.config import SchedulerConfig


@dataclass
class _NodeView:
    """A task shape's arrays over the nodes (filters, fits, scores), brought up to date from
    ``log_pos`` on."""

    log_pos: int
    predicate: BoolArray
    fits_idle: BoolArray
    fits_future: BoolArray
    score: np.ndarray[Any, np.dtype[np.float64]]
    #: ``score`` where the task passes the filters and fits idle capacity, else -inf (argmax is the pick).
    ready_score: np.ndarray[Any, np.dtype[np.float64]]
    #: the task's request less a little slack, -inf where it asks nothing (never the limit)
    floor: Vector
    #: ``floor`` as plain floats (one node is compared without numpy's per-call cost)
    floor_list: list[float]


#: Where a closed session leaves its node views for the next one (``ClusterSnapshot.kept``).
KEPT_VIEWS = "node_views"
#: At most this many views are carried (each is a few arrays over every node).
MAX_CARRIED = 64


@dataclass
class CarriedViews:
    """A closed session's node views, for the next session on the same nodes to bring up to date (see
    docs/design/steady-state.md#node-views-carried-from-session-to-session)."""

    config: SchedulerConfig
    #: The node table's memo: one per set of node specs (and resource space), shared by every session's
    #: copy of that table.
    memo: dict[str, Any]
    space: ResourceSpace
    #: The plugins whose filters and scores the views hold, in tier order.
    plugins: tuple[tuple[str, ...], tuple[str, ...]]
    #: Per node, the dict of tasks the session's snapshot lent it (the snapshot builder makes a node's
    #: anew whenever what the node holds changes), or None: not lent (its state is not known again).
    versions: list[dict[str, Task] | None]
    usage: dict[str, Any]
    #: The nodes the session changed (its views may hold their state before, or after, a change).
    touched: set[int]
    views: dict[tuple[bytes, str, tuple[float, float] | None], _NodeView]


class NodeChoice:
    """Where a task can go: ``node`` is the best index or None; ``pipelined`` if only future idle fits.

    ``reason`` says why no node takes it; given as ``explain``, it is worked out when first read (most
    refusals are never shown: reclaim and preempt read it only where no node passes the filters). A
    caller reads it before it changes the session, or it describes the nodes as they are then."""

    __slots__ = ("_explain", "_reason", "node", "pipelined")

    def __init__(
        self,
        node: int | None,
        pipelined: bool = False,
        reason: str = "",
        *,
        explain: Callable[[], str] | None = None,
    ) -> None:
        self.node, self.pipelined = node, pipelined
        self._reason, self._explain = reason, explain

    @property
    def reason(self) -> str:
        if self._explain is not None:
            self._reason, self._explain = self._explain(), None
        return self._reason


def no_devices(nodes: NodeTable) -> DeviceCatalog:
    """A catalog of no device over the table's nodes, made once per set of node specs (kept in the
    table's memo, which every session's copy of it shares: a catalog of 1,000 nodes cost every session
    a pass over them)."""
    catalog = nodes.memo.get("no devices")
    if not isinstance(catalog, DeviceCatalog):
        catalog = nodes.memo["no devices"] = DeviceCatalog((), nodes=nodes.specs, classes={})
    return catalog


def _all_nodes(nodes: NodeTable) -> IndexArray:
    """Every node's index, read-only: made once per table (its memo, shared by every session's copy)."""
    out: IndexArray | None = nodes.memo.get("all nodes")
    if out is None or len(out) != len(nodes):
        out = np.arange(len(nodes), dtype=np.intp)
        out.setflags(write=False)
        nodes.memo["all nodes"] = out
    return out


def _device_dims(nodes: NodeTable, space: ResourceSpace) -> BoolArray | None:
    """The dimensions of ``space`` that count devices of a DeviceClass (None: none), kept in the table's
    memo with the space they are of."""
    memo: tuple[ResourceSpace, BoolArray | None] | None = nodes.memo.get("device dims")
    if memo is None or memo[0] is not space:
        dims = np.array([is_device_resource(n) for n in space.names], dtype=bool)
        if dims.any():
            dims.setflags(write=False)
        memo = nodes.memo["device dims"] = (space, dims if dims.any() else None)
    return memo[1]


class NodeViews(PointTables):
    """The session's cached per-task views of the nodes, and the node choice made from them."""

    def __init__(
        self,
        config: SchedulerConfig,
        nodes: NodeTable,
        space: ResourceSpace,
        *,
        carried: CarriedViews | None = None,
    ) -> None:
        super().__init__(config)
        self.config = config
        self.space = space
        self.nodes = nodes
        self._changes: list[int] = []
        self._views: dict[tuple[bytes, str, tuple[float, float] | None], _NodeView] = {}
        #: The last session's views, taken over when a view is first asked for (``_take_carried``).
        self._carried = carried
        #: How many of the first entries of ``_changes`` are the nodes that changed before this session
        #: (the taken views are brought up to date on them), not nodes this session changed.
        self._inherited = 0
        lent = nodes.lent
        #: Per node, the dict of tasks the snapshot lent (None: the table's own, its state not known).
        self._versions: list[dict[str, Task] | None] | None = (
            None
            if lent is None
            else list(nodes.tasks)
            if lent.find(0) < 0
            else [t if k else None for t, k in zip(nodes.tasks, lent, strict=True)]
        )
        self._all_nodes: IndexArray = _all_nodes(nodes)
        #: Nodes placements are limited to for now (an action placing a gang in one topology domain),
        #: and how to say so in a pending reason; None: every node.
        self.node_limit: BoolArray | None = None
        self.node_limit_reason = ""
        #: ``devices`` once set or first asked for.
        self._device_state: DeviceState | None = None
        #: Volume binding of the pods' WaitForFirstConsumer claims (the session sets it when the snapshot
        #: has a class that waits; None: no pod has such a claim), and the keys of the views it is in
        #: (never carried to the next session: the volumes free then are not these).
        self.volume_binding: VolumeState | None = None
        self._volume_views: set[tuple[bytes, str, tuple[float, float] | None]] = set()
        #: The dimensions that count devices of a DeviceClass (None: none), which capacity never checks.
        self._device_dims: BoolArray | None = _device_dims(nodes, space)
        #: The constraint filters' answers for the last task asked about: (task, the change log's length
        #: then, (plugin, mask) of each filter that has one). Actions ask choose_node, feasible_nodes and
        #: blocked_by_pods about one task in a row; every placement, eviction or undo touches its node
        #: (and moves the counts the filters read), which ends the answers' use.
        self._constraint_memo: tuple[Task, int, list[tuple[str, BoolArray]]] | None = None
        #: ``explain_unfit``'s answers by the view's key, with the change log's length then: a task like
        #: one explained before (the same request and placement spec, no constraint filter, device claim
        #: or placement limit) while no node changed is unfit for the same reasons.
        self._unfit: dict[tuple[bytes, str], tuple[int, str]] = {}

    @property
    def devices(self) -> DeviceState:
        """Which devices are free, and what this session allocated of the pods' ResourceClaims (the
        session sets it; until then none is published, and every pod that claims devices stays
        pending). Made when first asked for: most sessions place no pod that claims devices."""
        out = self._device_state
        if out is None:
            out = self._device_state = DeviceState(no_devices(self.nodes), {}, nodes=self.nodes.specs)
        return out

    @devices.setter
    def devices(self, value: DeviceState) -> None:
        self._device_state = value

    def capacity_asked(self, task: Task) -> BoolArray:
        """The dimensions of ``task``'s request that node capacity checks: what it asks for, but the
        devices it claims (``devices/<class>``: counted for queues; the device check places them)."""
        need: BoolArray = task.request > EPS
        return need if self._device_dims is None else need & ~self._device_dims

    # --- nodes ------------------------------------------------------------------------------------

    def touch(self, node: int) -> None:
        """Record that node ``node`` changed, so cached views re-evaluate it."""
        self._changes.append(node)

    def _evaluate(self, task: Task, idx: IndexArray, view: _NodeView | None) -> _NodeView:
        # This runs once per placed task (for the one node that changed), so it sticks to few numpy
        # calls, and ndarray methods rather than the slower module-level wrappers.
        nodes = self.nodes
        if view is not None and len(idx) == 1:
            return self._evaluate_one(task, idx, view)
        mask = nodes.ready[idx]
        devices_now: BoolArray | None = None  # (None: as the filter says)
        if task.resource_claims:
            devices_then = self._devices(task, idx, future=True)
            mask = mask & devices_then
            if self.devices.releasing_any():  # placed now: on free devices only
                devices_now = self._devices(task, idx)
        if task.bind_claims:
            mask = mask & self._volumes(task, idx)
        for _, fn in self._flat("predicate"):
            mask = mask & fn(task, idx)
        # Dimensions the task does not ask for never fail (a node may be over-committed in those).
        if view is not None:
            floor = view.floor
        else:
            floor = np.where(task.request > EPS, task.request - EPS, -np.inf)
            if self._device_dims is not None:  # counted for queues; the device check places pods
                floor[self._device_dims] = -np.inf
        idle = nodes.idle[idx]
        fits_idle: BoolArray = np.asarray((idle >= floor).all(axis=1))
        fits_future: BoolArray = (
            np.asarray((idle + nodes.incoming[idx] >= floor).all(axis=1))
            if nodes.incoming_tasks
            else fits_idle
        )
        if devices_now is not None:  # devices being released are future room, as capacity is
            fits_future = fits_future.copy() if fits_future is fits_idle else fits_future
            fits_idle = fits_idle & devices_now
        # A node's score is read only where it passes the filters and fits now or once room frees
        # (``choose_node``; fits_idle is within fits_future): it is 0 elsewhere, and not computed at all
        # where no node can use it (a pod that fits nowhere, tried again every session).
        usable = mask & fits_future
        if usable.any():
            score = np.zeros(len(idx))
            for _, fn in self._flat("node_order"):
                score += fn(task, idx)
            if not usable.all():
                score = np.where(usable, score, 0.0)
        else:
            score = np.zeros(len(idx))
        ready_score = np.where(mask & fits_idle, score, -np.inf)
        if view is None:
            if fits_future is fits_idle:  # the view keeps them apart: incoming capacity may appear later
                fits_future = fits_idle.copy()
            return _NodeView(
                len(self._changes), mask, fits_idle, fits_future, score, ready_score, floor, floor.tolist()
            )
        view.predicate[idx] = mask
        view.fits_idle[idx] = fits_idle
        view.fits_future[idx] = fits_future
        view.score[idx] = score
        view.ready_score[idx] = ready_score
        view.log_pos = len(self._changes)
        return view

    def _evaluate_one(self, task: Task, idx: IndexArray, view: _NodeView) -> _NodeView:
        """``_evaluate`` for a single node, with scalars: the same results, a fraction of the numpy calls."""
        nodes = self.nodes
        i = int(idx[0])
        ok = bool(nodes.ready[i])
        devices_now = True
        if ok and task.resource_claims:
            devices = self.devices
            plan = devices.plan(task.namespace, task.resource_claims, pod_uid=task.uid)
            ok = devices.fits_one(plan, i, devices.available(future=True))
            if ok and devices.releasing_any():  # placed now: on free devices only
                devices_now = devices.fits_one(plan, i)
        if ok and task.bind_claims:
            ok = bool(self._volumes(task, idx)[0])
        for _, fn in self._flat("predicate"):
            ok = ok and bool(fn(task, idx)[0])
        floor = view.floor_list
        row = nodes.idle[i].tolist()  # the same comparisons over plain floats: the same answers
        fits_idle = all(x >= f for x, f in zip(row, floor, strict=True))
        fits_future = (
            all(x + y >= f for x, y, f in zip(row, nodes.incoming[i].tolist(), floor, strict=True))
            if nodes.incoming_tasks
            else fits_idle
        )
        score = 0.0
        if ok and fits_future:  # (read only then: see ``_evaluate``)
            for _, fn in self._flat("node_order"):
                score += float(fn(task, idx)[0])
        fits_idle = fits_idle and devices_now
        view.predicate[i] = ok
        view.fits_idle[i] = fits_idle
        view.fits_future[i] = fits_future
        view.score[i] = score
        view.ready_score[i] = score if ok and fits_idle else -np.inf
        view.log_pos = len(self._changes)
        return view

    def _devices(self, task: Task, idx: IndexArray, *, future: bool = False) -> BoolArray:
        """Which of nodes ``idx`` can give ``task`` the devices its ResourceClaims ask for: the session's
        own check (like capacity), whatever the plugins, so a pod that claims devices is never bound
        where they are not allocated (see ``volsched.model.devices``). ``future``: counting the devices
        being released (of pods being evicted), as future idle capacity counts what they release."""
        devices = self.devices
        plan = devices.plan(task.namespace, task.resource_claims, pod_uid=task.uid)
        return devices.fits(plan, idx, devices.available(future=future))

    def _volumes(self, task: Task, idx: IndexArray) -> BoolArray:
        """Which of nodes ``idx`` can give ``task``'s WaitForFirstConsumer claims a volume (a free one
        that reaches the node, or one the class provisions there): the session's own check, whatever the
        plugins, so a pod is never bound where its claims cannot be (see ``volsched.model.volumes``)."""
        binding = self.volume_binding
        if binding is None:
            return np.zeros(len(idx), dtype=bool)
        return binding.fits(task.namespace, task.bind_claims, idx)

    def _explain_devices(self, task: Task, idx: IndexArray) -> list[tuple[str, int]]:
        """Why nodes ``idx`` (all failing :meth:`_devices`) cannot give ``task`` its devices."""
        devices = self.devices
        return devices.explain(devices.plan(task.namespace, task.resource_claims, pod_uid=task.uid), idx)

    def _fn_plugins(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The plugins whose filters and scores a view holds, in tier order."""
        return tuple(n for n, _ in self._flat("predicate")), tuple(n for n, _ in self._flat("node_order"))

    def _take_carried(self) -> None:
        """Take over the last session's views, if they were made on the same nodes with the same
        filters and scores: each is brought up to date, when next asked for, on the nodes that
        changed since (what they hold, their usage) or that the last session changed."""
        carried, self._carried = self._carried, None
        versions = self._versions
        if (
            carried is None
            or versions is None
            or carried.config is not self.config
            or carried.memo is not self.nodes.memo
            or carried.space is not self.space
            or carried.plugins != self._fn_plugins()
        ):
            return
        dirty = set(carried.touched)
        then = carried.versions
        if None in versions or None in then:
            dirty.update(
                i for i, (a, b) in enumerate(zip(then, versions, strict=True)) if a is None or a is not b
            )
        else:
            dirty.update(itertools.compress(range(len(versions)), map(operator.is_not, then, versions)))
        usage, before = self.nodes.usage, carried.usage
        if usage or before:
            index = self.nodes.index
            for name in usage.keys() | before.keys():
                if usage.get(name) is not before.get(name) and name in index:
                    dirty.add(index[name])
        # (before any change this session made: each taken view is then brought up to date on both)
        self._changes[:0] = sorted(dirty)
        self._inherited = len(dirty)
        for view in carried.views.values():
            view.log_pos = 0
        self._views.update(carried.views)

    def carry_views(self, *, reads_clock: Callable[[str], bool]) -> CarriedViews | None:
        """This session's views for the next session (it asks none after this), or None when they may
        not serve another session: a filter or score of a plugin that may answer otherwise with time
        alone (``reads_clock(plugin)``), a table whose nodes' state is not known by what they hold."""
        if self._versions is None or not self._views or len(self._views) > MAX_CARRIED:
            return None
        plugins = self._fn_plugins()
        if any(map(reads_clock, itertools.chain.from_iterable(plugins))):
            return None
        # The nodes changed since the least up-to-date view was: a view taken over and not asked for this
        # session is still to be brought up to date on the nodes it was taken over with (the log's first
        # ``_inherited``), not only on those this session changed.
        since = min(self._inherited, min(v.log_pos for v in self._views.values()))
        return CarriedViews(
            config=self.config,
            memo=self.nodes.memo,
            space=self.space,
            plugins=plugins,
            versions=self._versions,
            usage=self.nodes.usage,
            touched=set(self._changes[since:]),
            views=(
                {k: v for k, v in self._views.items() if k not in self._volume_views}
                if self._volume_views
                else self._views
            ),
        )

    def _view(self, task: Task) -> _NodeView:
        if self._carried is not None:
            self._take_carried()
        key = (task.request.tobytes(), task.placement_key, task.score_extra)
        view = self._views.get(key)
        if view is None:
            view = self._evaluate(task, self._all_nodes, None)
            self._views[key] = view
            if task.bind_claims:
                self._volume_views.add(key)
            return view
        if view.log_pos < len(self._changes):
            new = self._changes[view.log_pos :]
            dirty = np.asarray(new if len(new) == 1 else sorted(set(new)), dtype=np.intp)
            if len(dirty) * 4 > len(self.nodes):
                view = self._evaluate(task, self._all_nodes, None)
                self._views[key] = view
            else:
                self._evaluate(task, dirty, view)
        return view

    def choose_node(self, task: Task, *, allow_pipeline: bool = True) -> NodeChoice:
        """The best node for ``task``: highest score among nodes that pass every filter and have idle
        room; else (if allowed) among nodes whose capacity being released would make room. Ties go to
        the node whose name sorts first."""
        if not len(self.nodes):
            return NodeChoice(None, reason="no nodes in the cluster")
        view = self._view(task)
        mask = self._constraint_mask(task)
        ready_score, predicate, score = view.ready_score, view.predicate, view.score
        if mask is not None:
            predicate = predicate & mask
        for _, fn in self._flat("constraint_score"):
            extra = fn(task, predicate)
            if extra is not None:
                score = score + extra
        if score is not view.score:
            ready_score = np.where(view.fits_idle & predicate, score, -np.inf)
        elif mask is not None:
            ready_score = np.where(mask, ready_score, -np.inf)
        for _, fn in self._flat("constraint_now"):  # placed now: with what pods being evicted hold
            held = fn(task)
            if held is not None:
                ready_score = np.where(held, ready_score, -np.inf)
        best = int(np.argmax(ready_score))
        if ready_score[best] > -np.inf:
            return NodeChoice(best)
        if allow_pipeline:
            ok = predicate & view.fits_future
            if ok.any():
                return NodeChoice(int(np.argmax(np.where(ok, score, -np.inf))), pipelined=True)
        return NodeChoice(None, explain=lambda: self.explain_unfit(task))

    def _constraints(self, task: Task) -> list[tuple[str, BoolArray]]:
        """Each constraint filter's mask for ``task`` (those with nothing to say about it left out),
        asked again only once a node changed or another task is asked about."""
        memo = self._constraint_memo
        if memo is not None and memo[0] is task and memo[1] == len(self._changes):
            return memo[2]
        out = [(name, ok) for name, fn in self._flat("constraint") if (ok := fn(task)) is not None]
        self._constraint_memo = (task, len(self._changes), out)
        return out

    def _constraint_mask(self, task: Task) -> BoolArray | None:
        mask: BoolArray | None = self.node_limit
        for _, ok in self._constraints(task):
            mask = ok if mask is None else mask & ok
        return mask

    def feasible_nodes(self, task: Task) -> BoolArray:
        """Nodes that pass every filter, whatever their free capacity (for reclaim and preempt).

        Capacity is the session's own check (idle and future idle, see ``choose_node``); predicates
        judge everything else, so this is the cached filter mask."""
        if not len(self.nodes):
            return np.zeros(0, dtype=bool)
        mask = self._constraint_mask(task)
        view = self._view(task)
        return view.predicate.copy() if mask is None else view.predicate & mask

    def feasible_at(self, task: Task, node: int) -> bool:
        """``feasible_nodes(task)[node]``, for one node: the cached view's answer there (refreshed only
        for the nodes that changed) and each constraint filter's (asked over all nodes as always, once
        until a node changes), without combining their masks over every node."""
        if self.node_limit is not None and not self.node_limit[node]:
            return False
        if not self._view(task).predicate[node]:
            return False
        return all(ok[node] for _, ok in self._constraints(task))

    def blocked_by_pods(self, task: Task) -> BoolArray:
        """Nodes that pass every filter but the ones that depend on other pods, fail those, and might
        pass them once pods of the node itself are evicted (the filters' ``relief``: required
        anti-affinity held against the task by pods of that node alone): where reclaim and preempt may
        make room for ``task`` by evicting the pods in the way. Whatever their free capacity."""
        none = np.zeros(len(self.nodes), dtype=bool)
        if not len(self.nodes):
            return none
        reliefs = dict(self._flat("constraint_relief"))
        passing: BoolArray | None = None
        could: BoolArray | None = None
        for name, ok in self._constraints(task):  # as feasible_nodes just asked them, mostly
            relief = reliefs.get(name)
            eased = relief(task) if relief is not None else None
            passing = ok if passing is None else passing & ok
            after = ok if eased is None else ok | eased
            could = after if could is None else could & after
        if passing is None or could is None:
            return none
        out: BoolArray = self._view(task).predicate & could & ~passing
        return out if self.node_limit is None else out & self.node_limit

    def pods_holding(self, task: Task) -> dict[str, str]:
        """The placed pods (by key) whose eviction may let ``task`` pass a filter that depends on other
        pods on their node, besides those that repel it (a volume attached at the node's limit), each
        with what its going frees, in words (empty: none)."""
        out: dict[str, str] = {}
        for _, fn in self._flat("constraint_holders"):
            for key, frees in fn(task).items():
                out[key] = f"{out[key]}, {frees}" if key in out else frees
        return out

    def pod_filter_reasons(self, task: Task, node: int) -> list[str]:
        """Why the filters that depend on other pods reject ``task`` on ``node`` now (empty: they pass),
        e.g. ``["pod anti-affinity (app=web, kubernetes.io/hostname)"]``."""
        idx = np.array([node], dtype=np.intp)
        out: list[str] = []
        for name, ok in self._constraints(task):
            if not ok[node]:
                out.extend(reason for reason, _ in self._explain[f"constraint:{name}"](task, idx))
        return out

    def explain_unfit(self, task: Task) -> str:
        """Why no node takes ``task``, in numbers: "0/4 nodes fit: 4 insufficient cpu (needs 2, most idle 1)".

        Each filter counts the nodes it rejects (a node may be counted by several); capacity is judged
        among the nodes every filter accepts, so its numbers say what is missing where the pod could go.
        Kept for the tasks alike until a node changes (see ``_unfit``)."""
        memo: tuple[bytes, str] | None = None
        if (
            not task.resource_claims
            and not task.bind_claims
            and self.node_limit is None
            and not self._constraints(task)
        ):
            memo = (task.request.tobytes(), task.placement_key)
            hit = self._unfit.get(memo)
            if hit is not None and hit[0] == len(self._changes):
                return hit[1]
        reason = self._explain_unfit(task)
        if memo is not None:
            self._unfit[memo] = (len(self._changes), reason)
        return reason

    def _explain_unfit(self, task: Task) -> str:
        nodes = self.nodes
        n = len(nodes)
        counts: Counter[str] = Counter()
        ready = np.flatnonzero(nodes.ready)
        if n - len(ready):
            counts["node(s) not ready"] += n - len(ready)
        eligible = np.ones(len(ready), dtype=bool)
        if task.resource_claims and len(ready):
            eligible &= self._devices(task, ready, future=True)
            for reason, count in self._explain_devices(task, ready[~eligible]):
                counts[reason] += count
        if task.bind_claims and len(ready):
            ok = self._volumes(task, ready)
            failing = ready[eligible & ~ok]
            eligible &= ok
            if len(failing):
                binding = self.volume_binding
                if binding is None:
                    counts["persistentvolumeclaim(s) not bound yet"] += len(failing)
                else:
                    for reason, count in binding.explain(task.namespace, task.bind_claims, failing):
                        counts[reason] += count
        for name, fn in self._flat("predicate"):
            if not len(ready):
                break
            ok = fn(task, ready)
            eligible &= ok
            failing = ready[~ok]
            if not len(failing):
                continue
            explain = self._explain.get(name)
            if explain is None:
                counts[f"rejected by {name}"] += len(failing)
            else:
                for reason, count in explain(task, failing):
                    counts[reason] += count
        for name, mask in self._constraints(task) if len(ready) else ():  # as choose_node just asked
            ok = mask[ready]
            eligible &= ok
            failing = ready[~ok]
            if len(failing):
                for reason, count in self._explain[f"constraint:{name}"](task, failing):
                    counts[reason] += count
        if self.node_limit is not None and len(ready):
            ok = self.node_limit[ready]
            outside = int(len(ready) - ok.sum())
            if outside:
                counts[self.node_limit_reason or "node(s) outside the placement limit"] += outside
            eligible &= ok
        where = ready[eligible]
        if len(where):
            future = nodes.idle[where] + nodes.incoming[where]
            for d in np.flatnonzero(task.request > EPS):
                if self._device_dims is not None and self._device_dims[d]:
                    continue
                short = int(np.sum(future[:, d] < task.request[d] - EPS))
                if short:
                    most = max(float(future[:, d].max()), 0.0)
                    name = "pods (max pods reached)" if self.space.names[d] == "pods" else self.space.names[d]
                    counts[
                        f"insufficient {name} (needs {self.space.describe(d, task.request[d])}, "
                        f"most idle {self.space.describe(d, most)})"
                    ] += short
        parts = ", ".join(f"{c} {r}" for r, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"0/{n} nodes fit: {parts}" if parts else f"0/{n} nodes fit"
