"""What a rescheduling strategy sees: the :class:`Context` it is asked with (the session, the candidate
pods in the plugin's order, the usage estimate, and :meth:`Context.pick`, the evictor's checks and limits of
one answer), the :class:`Selector` protocol each strategy implements, and the few questions several
strategies ask of the session (how many other nodes could take a pod; the placed pods' constraint counts).

Not a strategy (``strategies/``), not the reading of params (``params.py``), and not the default evictor's
rules (``evictor.py``). No I/O happens here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any, ClassVar, Protocol

import numpy as np

from volsched.framework.points import ExtensionPoints
from volsched.model.constraints import ConstraintState
from volsched.model.resources import EPS
from volsched.model.vocabulary import ALLOCATED_STATUSES, Task, TaskStatus
from volsched.plugins.rescheduling.evictor import Evictor
from volsched.plugins.shared.usage_estimate import UsageEstimate, build_estimate
from volsched.records import dataclass

#: The pod states a strategy asks :meth:`Context.candidates` for.
LIVE = frozenset({TaskStatus.RUNNING})
LIVE_OR_STARTING = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})
FAILED = frozenset({TaskStatus.FAILED})


@dataclass
class Context:
    """What a selector may read: the session, the plugin's candidate filter and order, the metrics
    period (for estimates of real usage); and :meth:`pick`, which a selector asks before it counts a
    pod as moved (the evictor's checks of a picked pod and the limits of one answer)."""

    session: ExtensionPoints
    candidate: Callable[[Task, frozenset[TaskStatus]], bool]
    key: Callable[[Task], tuple[Any, ...]]
    metrics_period: float
    evictor: Evictor = field(default_factory=Evictor)
    _estimate: UsageEstimate | None = field(default=None, repr=False)
    #: The pods picked so far in this answer (by every strategy), and their count per node, namespace.
    picked: set[str] = field(default_factory=set)
    _per_node: dict[str, int] = field(default_factory=dict)
    _per_namespace: dict[str, int] = field(default_factory=dict)
    _selected: np.ndarray[Any, np.dtype[np.bool_]] | None = field(default=None, repr=False)

    def pick(self, task: Task) -> bool:
        """Whether ``task`` may move, counting it as moved if so: not picked before in this answer,
        within ``maxNoOfPodsToEvictPerNode``, ``...PerNamespace`` and ``...Total``, and with ``nodeFit``
        some other ready node the pod fits now (its filters, ``nodeSelector`` and free capacity)."""
        ev = self.evictor
        node = task.node_name or ""
        if task.key in self.picked:
            return False
        if ev.max_total is not None and len(self.picked) >= ev.max_total:
            return False
        if ev.max_per_node is not None and self._per_node.get(node, 0) >= ev.max_per_node:
            return False
        if (
            ev.max_per_namespace is not None
            and self._per_namespace.get(task.namespace, 0) >= ev.max_per_namespace
        ):
            return False
        if ev.node_fit and not self.fits_elsewhere(task).any():
            return False
        self.picked.add(task.key)
        self._per_node[node] = self._per_node.get(node, 0) + 1
        self._per_namespace[task.namespace] = self._per_namespace.get(task.namespace, 0) + 1
        return True

    def fits_elsewhere(
        self, task: Task, idle: np.ndarray[Any, np.dtype[np.float64]] | None = None
    ) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """The ready, schedulable nodes other than its own that pass every filter of the session for
        ``task`` and ``nodeSelector``, and have the idle capacity for its request now (in ``idle``, the
        nodes' idle capacity less what a strategy already sent there, when given)."""
        nodes = self.session.nodes
        need = task.request > EPS
        ok = self.session.feasible_nodes(task) & nodes.ready & self.selected_nodes()
        free = nodes.idle if idle is None else idle
        ok &= np.all(free[:, need] >= task.request[need] - EPS, axis=1)
        i = self.node_of(task)
        if i is not None:
            ok[i] = False
        return ok

    def selected_nodes(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """The schedulable nodes ``nodeSelector`` selects (every schedulable node without one)."""
        if self._selected is None:
            sel = self.evictor.node_selector
            self._selected = np.array(
                [
                    not s.unschedulable and (sel is None or sel.matches(s.labels))
                    for s in self.session.nodes.specs
                ],
                dtype=bool,
            )
        return self._selected

    def candidates(self, statuses: frozenset[TaskStatus] = LIVE) -> list[Task]:
        """Every candidate pod in one of ``statuses``, in eviction order."""
        out = [
            t
            for job in self.session.jobs.values()
            for t in job.tasks.values()
            if t.status in statuses and self.candidate(t, statuses)
        ]
        out.sort(key=self.key)
        return out

    def estimate(self) -> UsageEstimate:
        if self._estimate is None:
            self._estimate = build_estimate(self.session, self.metrics_period)
        return self._estimate

    def node_of(self, task: Task) -> int | None:
        return self.session.nodes.index.get(task.node_name or "")

    def age(self, task: Task) -> float:
        return self.session.now - task.creation


class Selector(Protocol):
    """A strategy: made once from its ``params``, and asked once per answer of the plugin for the pods
    to move, each with the reason the eviction gives, first evicted first."""

    name: ClassVar[str]

    def select(self, ctx: Context) -> list[tuple[Task, str]]: ...


def feasible_elsewhere(ctx: Context, task: Task, node: int) -> int:
    """How many other nodes pass every filter of the session for ``task`` (capacity aside)."""
    mask = ctx.session.feasible_nodes(task)
    return int(mask.sum()) - int(mask[node])


def placed_state(session: ExtensionPoints) -> ConstraintState:
    """A fresh :class:`ConstraintState` holding every pod placed on a node (this scheduler's and
    others'), counted as placement counts them; the strategy may remove pods from it as it picks them."""
    nodes = session.nodes
    state = ConstraintState(nodes.specs, session.snapshot.namespace_labels)
    counted = ALLOCATED_STATUSES | {TaskStatus.PIPELINED}
    for i, on_node in enumerate(nodes.tasks):
        for t in on_node.values():
            if t.status in counted:
                state.add(t, i)
    return state
