"""nodeorder: score nodes by how their cpu and memory would be used after placing the task.

Arguments (Volcano's names): ``leastrequested.weight`` (default 1, spreads), ``mostrequested.weight``
(default 0, packs), ``balancedresource.weight`` (default 1, evens cpu against memory). Each score is
0..100 over cpu and memory, as in the Kubernetes scheduler; the plugin's score is the weighted sum.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.registry import register_plugin
from volsched.framework.session import Session
from volsched.model.cluster import IndexArray
from volsched.model.objects import Task
from volsched.model.resources import CPU, MEMORY


@register_plugin
class NodeOrder(BasePlugin):
    name: ClassVar[str] = "nodeorder"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.least = arguments.number("leastrequested.weight", 1, minimum=0)
        self.most = arguments.number("mostrequested.weight", 0, minimum=0)
        self.balanced = arguments.number("balancedresource.weight", 1, minimum=0)

    def on_session_open(self, session: Session) -> None:
        nodes = session.nodes
        dims = np.array([session.space.index(CPU), session.space.index(MEMORY)], dtype=np.intp)
        if not (self.least or self.most or self.balanced):
            return

        alloc = nodes.allocatable[:, dims]
        # 1/allocatable, and 0 where a node has none of a resource: it then counts as full (frac 1).
        inv = np.divide(1.0, alloc, out=np.zeros_like(alloc), where=alloc > 0)

        # score = least*50*(2 - f0 - f1) + most*50*(f0 + f1) + balanced*(100 - 50*|f0 - f1|), where f is the
        # fraction of cpu (f0) and memory (f1) used after placing; folded into c0 + c1*(f0+f1) + c2*|f0-f1|.
        c0 = 100.0 * (self.least + self.balanced)
        c1 = 50.0 * (self.most - self.least)
        c2 = -50.0 * self.balanced

        idle = nodes.idle
        cpu, mem = int(dims[0]), int(dims[1])

        def score(task: Task, idx: IndexArray) -> np.ndarray[Any, np.dtype[np.float64]]:
            if len(idx) == 1:
                # One node (the one the last placement changed): plain float math, the same operations
                # in the same order as below, so both paths give bit-identical scores.
                i = int(idx[0])
                f0 = min(max(1.0 - (idle.item(i, cpu) - task.request.item(cpu)) * inv.item(i, 0), 0.0), 1.0)
                f1 = min(max(1.0 - (idle.item(i, mem) - task.request.item(mem)) * inv.item(i, 1), 0.0), 1.0)
                value = c0 + c1 * (f0 + f1)
                if c2:
                    value += c2 * abs(f0 - f1)
                return np.array([value])
            frac = 1.0 - (nodes.idle[idx][:, dims] - task.request[dims]) * inv[idx]
            np.clip(frac, 0.0, 1.0, out=frac)
            out: np.ndarray[Any, np.dtype[np.float64]] = c0 + c1 * (frac[:, 0] + frac[:, 1])
            if c2:
                out += c2 * np.abs(frac[:, 0] - frac[:, 1])
            return out

        session.add_node_order_fn(self.name, score)
