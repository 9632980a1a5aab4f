"""binpack: prefer nodes that the task fills up, to keep whole nodes free for big jobs.

Arguments (Volcano's names): ``binpack.weight`` (default 1); the resource weights ``binpack.cpu``,
``binpack.memory``, ``binpack.resources`` and ``binpack.resources.<name>``, read (and refused) as
:mod:`volsched.plugins.shared.resource_weights` says. Score: weighted mean of ``used after placing /
allocatable`` over the resources the task asks for, times 100 and the plugin weight."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.points import ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.cluster import IndexArray, NodeTable
from volsched.model.resources import EPS
from volsched.model.vocabulary import Task
from volsched.plugins.shared.resource_weights import resource_weights

#: Per distinct request: which columns count and their normalised weights (or None: no score).
_Plans = dict[bytes, tuple[np.ndarray[Any, np.dtype[np.intp]], np.ndarray[Any, np.dtype[np.float64]]] | None]
_Columns = tuple[
    np.ndarray[Any, np.dtype[np.intp]],
    np.ndarray[Any, np.dtype[np.float64]],
    np.ndarray[Any, np.dtype[np.float64]],
    np.ndarray[Any, np.dtype[np.float64]],
    _Plans,
]
#: At most this many requests' plans kept with a node table.
_MOST_PLANS = 4096


@register_plugin
class Binpack(BasePlugin):
    name: ClassVar[str] = "binpack"
    reads_clock: ClassVar[bool] = False
    answers_by_shape: ClassVar[bool] = True

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.number("binpack.weight", 1, minimum=0)
        self.resource_weights = resource_weights(arguments, "binpack", cpu_memory_listed=True)
        #: Where the columns are kept in a node table's memo: made with the plugin (ahead of the session,
        #: off its way), not formatted again by every session's open.
        self._memo_key = f"binpack {self.weight} {list(self.resource_weights.items())}"

    def _columns(self, nodes: NodeTable) -> _Columns:
        """The resources scored (their columns), their weights, 1/allocatable (0 where a node has none of
        a resource: it then adds nothing to the score), whether a node has any, and the plan per
        distinct request (filled as tasks ask). They follow from the nodes' allocatable and this
        plugin's arguments alone: kept in the node table's memo for every session on these nodes
        (read-only; each session made them anew before)."""
        key = self._memo_key
        kept: _Columns | None = nodes.memo.get(key)
        if kept is None:
            space = nodes.space
            names = space.names
            dims = np.array([space.index(n) for n in self.resource_weights if n in names], dtype=np.intp)
            weights = np.array([self.resource_weights[names[d]] for d in dims])
            alloc = nodes.allocatable[:, dims]
            inv = np.divide(1.0, alloc, out=np.zeros_like(alloc), where=alloc > 0)
            has = (alloc > 0).astype(np.float64)
            for a in (dims, weights, inv, has):
                a.setflags(write=False)
            kept = nodes.memo[key] = (dims, weights, inv, has, {})
        elif len(kept[4]) > _MOST_PLANS:  # (a long-lived table asked by ever new requests)
            kept[4].clear()
        return kept

    def on_session_open(self, session: ExtensionPoints) -> None:
        if not self.weight:
            return
        nodes = session.nodes
        dims, weights, inv, has, per_request = self._columns(nodes)

        def score(task: Task, idx: IndexArray) -> np.ndarray[Any, np.dtype[np.float64]]:
            key = task.request.tobytes()
            if key not in per_request:
                asked = (task.request[dims] > EPS) & (weights > 0)
                w = weights[asked]
                per_request[key] = (
                    (np.flatnonzero(asked), w * (100.0 * self.weight / w.sum())) if asked.any() else None
                )
            plan = per_request[key]
            if plan is None:
                return np.zeros(len(idx))
            cols, w = plan
            d = dims[cols]
            # fraction used after placing; a node the task would overfill scores 0 for that resource.
            # Summed column by column in both paths, so they give bit-identical scores.
            if len(idx) == 1:  # the one node the last placement changed: plain float math
                i, total = int(idx[0]), 0.0
                for k, (col, dim) in enumerate(zip(cols.tolist(), d.tolist(), strict=True)):
                    f = has.item(i, col) - (nodes.idle.item(i, dim) - task.request.item(dim)) * inv.item(
                        i, col
                    )
                    total += (0.0 if f > 1.0 + EPS else f) * w.item(k)
                return np.array([total])
            frac = has[idx][:, cols] - (nodes.idle[idx][:, d] - task.request[d]) * inv[idx][:, cols]
            frac[frac > 1.0 + EPS] = 0.0
            out = np.zeros(len(idx))
            for k in range(len(cols)):
                out += frac[:, k] * w[k]
            return out

        session.add_node_order_fn(self.name, score)
