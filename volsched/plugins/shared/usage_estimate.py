"""Estimated node usage (percent of allocatable cpu and memory): the measured value plus what the
measurement cannot have seen yet, kept current by an event handler. Read by the usage plugin (filter,
score, victims) and by the rescheduling plugin's utilization strategies. No I/O happens here."""

from __future__ import annotations

from typing import Any

import numpy as np

from volsched.framework.points import ExtensionPoints
from volsched.model.cluster import BoolArray, IndexArray, NodeTable
from volsched.model.resources import CPU, MEMORY, Vector
from volsched.model.usage import NodeUsage
from volsched.model.vocabulary import Task, TaskStatus
from volsched.records import dataclass


def counts_since(task: Task, measured_at: float) -> bool:
    """Whether a task on a node is too new for a measurement taken at ``measured_at`` to include."""
    if task.status in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BOUND):
        return True
    return task.status is TaskStatus.RUNNING and task.start_time > measured_at


@dataclass
class UsageEstimate:
    """Per-node estimated usage in percent over (cpu, memory), kept current by an event handler.

    ``measured`` is the measured value (the cluster average for nodes without fresh data), ``fluctuation``
    the measured swing, ``fresh`` whether the node has fresh data, and ``added`` what was placed since
    the measurement. ``estimate()`` is measured plus added.
    """

    nodes: NodeTable
    dims: np.ndarray[Any, np.dtype[np.intp]]
    measured: Vector
    fluctuation: Vector
    fresh: BoolArray
    added: Vector
    measured_at: np.ndarray[Any, np.dtype[np.float64]]
    counted: dict[str, tuple[int, Vector]]

    @property
    def any_fresh(self) -> bool:
        return bool(self.fresh.any())

    def share(self, node: int, task: Task) -> Vector:
        """The task's request as percent of the node's allocatable cpu and memory."""
        alloc = self.nodes.allocatable[node, self.dims]
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(alloc > 0, task.request[self.dims] / alloc * 100.0, 0.0)
        return np.asarray(out, dtype=np.float64)

    def estimate(self, idx: IndexArray) -> Vector:
        return np.asarray(self.measured[idx] + self.added[idx], dtype=np.float64)

    def _counts(self, node: int, task: Task) -> bool:
        if not self.fresh[node]:
            return task.status in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED)
        return counts_since(task, float(self.measured_at[node]))

    def on_allocate(self, task: Task) -> None:
        node = self.nodes.index.get(task.node_name or "")
        if node is None or task.key in self.counted or not self._counts(node, task):
            return
        share = self.share(node, task)
        self.added[node] += share
        self.counted[task.key] = (node, share)

    def on_deallocate(self, task: Task) -> None:
        hit = self.counted.pop(task.key, None)
        if hit is not None:
            node, share = hit
            self.added[node] -= share


def fresh_usage(usage: dict[str, NodeUsage], now: float, stale_after: float) -> dict[str, NodeUsage]:
    """The entries measured no longer than ``stale_after`` before ``now`` (and not in the future by
    more than that either, which would mean a broken clock). ``now <= 0`` means the time is unknown:
    everything is taken as fresh."""
    if now <= 0:
        return dict(usage)
    return {n: u for n, u in usage.items() if abs(now - u.measured_at) <= stale_after}


def build_estimate(session: ExtensionPoints, stale_after: float) -> UsageEstimate:
    """Estimated usage of every node at session open; register ``on_allocate``/``on_deallocate`` as an
    event handler to keep it current."""
    nodes = session.nodes
    n = len(nodes)
    dims = np.array([session.space.index(CPU), session.space.index(MEMORY)], dtype=np.intp)
    fresh_map = fresh_usage(nodes.usage, session.now, stale_after)
    measured = np.zeros((n, 2))
    fluctuation = np.zeros((n, 2))
    measured_at = np.zeros(n)
    fresh = np.zeros(n, dtype=bool)
    for name, u in fresh_map.items():
        i = nodes.index.get(name)
        if i is None:
            continue
        fresh[i] = True
        measured[i] = (u.cpu, u.memory)
        fluctuation[i] = (u.cpu_fluctuation, u.mem_fluctuation)
        measured_at[i] = u.measured_at
    if fresh.any():
        measured[~fresh] = measured[fresh].mean(axis=0)
        fluctuation[~fresh] = fluctuation[fresh].mean(axis=0)
    est = UsageEstimate(nodes, dims, measured, fluctuation, fresh, np.zeros((n, 2)), measured_at, {})
    for i in range(n):
        for task in nodes.tasks[i].values():
            est.on_allocate(task)
    return est
