"""How long a pending pod would wait for room by itself, and how much work an eviction throws away: what
``minruntime`` weighs before it lets a pod be a victim.

Only the expected ends of what runs (:func:`~volsched.plugins.shared.runtimes.runtimes_of` from each
pod's start); a pod with no expected run time, or one past it (its estimate failed), is taken never to
end. Not a plan: room that frees may go to another pod first (the wait is the least it could be), and
nothing here is kept past the session. Sizes are dominant shares of the cluster (the largest fraction of
the cluster's total a request takes over the share dimensions), so pods of different shapes compare.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from volsched.framework.points import ExtensionPoints
from volsched.model.cluster import Job
from volsched.model.resources import EPS, Vector
from volsched.model.vocabulary import Task, TaskStatus
from volsched.plugins.shared.runtimes import ran_for, runtimes_of

#: Statuses of a pod that holds its node's room until it ends (a releasing one is counted as free).
_HOLDING = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.ALLOCATED, TaskStatus.PIPELINED})
#: Statuses of a pod whose work an eviction throws away (or that keeps its gang whole).
_RUNNING = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})


class Waits:
    """One session's expected ends of the pods on the nodes, as arrays (built when first asked)."""

    def __init__(self, session: ExtensionPoints) -> None:
        self.session = session
        total = np.where(session.space.share_mask, session.total, 0.0)
        self._scale = np.where(total > EPS, 1.0 / np.maximum(total, EPS), 0.0)
        self._built = False
        self._node: np.ndarray[Any, np.dtype[np.intp]] = np.zeros(0, dtype=np.intp)
        self._end: np.ndarray[Any, np.dtype[np.float64]] = np.zeros(0)
        self._cum: Vector = np.zeros((0, len(session.space)))
        self._waits: dict[str, float] = {}

    def size(self, request: Vector) -> float:
        """The dominant share of the cluster ``request`` takes."""
        return float(np.max(request * self._scale, initial=0.0))

    def _build(self) -> None:
        """The pods that hold room and are expected to end, by node then end, with what each node has
        released (cumulated) once each has ended."""
        session, now = self.session, self.session.now
        expected_runtime = runtimes_of(session)
        nodes, ends, rows = [], [], []
        for i, held in enumerate(session.nodes.tasks):
            for task in held.values():
                if task.status not in _HOLDING:
                    continue
                runtime = expected_runtime(task)
                if runtime is None:
                    continue
                began = task.start_time if task.status is TaskStatus.RUNNING and task.start_time > 0 else now
                ending = began + runtime
                if ending < now:
                    continue  # past its expected end: its estimate failed, its end is not known
                nodes.append(i)
                ends.append(ending)
                rows.append(task.request)
        width = len(session.space)
        node = np.array(nodes, dtype=np.intp)
        end = np.array(ends, dtype=np.float64)
        request = np.array(rows, dtype=np.float64).reshape(len(rows), width)
        order = np.lexsort((end, node))
        node, end, request = node[order], end[order], request[order]
        cum = np.cumsum(request, axis=0)
        # Per node, the cumulated release restarts: subtract what the nodes before it released.
        first = np.flatnonzero(np.r_[True, node[1:] != node[:-1]]) if len(node) else np.zeros(0, np.intp)
        before = np.zeros((len(first), width))
        before[1:] = cum[first[1:] - 1]
        counts = np.diff(np.r_[first, len(node)])
        cum -= np.repeat(before, counts, axis=0)
        self._node, self._end, self._cum = node, end, cum
        self._built = True

    def wait(self, task: Task) -> float:
        """Seconds until room for ``task`` frees by itself on a node it may use, by the expected ends
        of what runs there; inf when no expected end frees enough, and when a node has room now (then
        room is not what keeps it out: its queue's limit, or pods in its way, are; no wait is known)."""
        known = self._waits.get(task.key)
        if known is not None:
            return known
        session = self.session
        feasible = session.feasible_nodes(task)
        nodes = session.nodes
        dims = task.request > EPS
        need = task.request[dims]
        free = (nodes.idle + nodes.incoming)[:, dims]
        if bool((feasible & np.all(free >= need - EPS, axis=1)).any()):
            out = math.inf
        else:
            if not self._built:
                self._build()
            node = self._node
            room = free[node] + self._cum[:, dims]
            fits = feasible[node] & np.all(room >= need - EPS, axis=1)
            out = float(self._end[fits].min()) - session.now if fits.any() else math.inf
        self._waits[task.key] = out
        return out

    def thrown_away(self, victim: Task, job: Job | None) -> float:
        """The work evicting ``victim`` throws away, in cluster-share-seconds: what it ran times its
        size; for a pod whose gang then falls below its minimum (it restarts whole), what every running
        pod of the gang ran."""
        now = self.session.now
        if job is not None and job.min_member > 1:
            running = [t for t in job.tasks.values() if t.status in _RUNNING]
            if len(running) - 1 < job.min_member:
                return sum(ran_for(t, now) * self.size(t.request) for t in running)
        return ran_for(victim, now) * self.size(victim.request)
