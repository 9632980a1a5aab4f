"""binpack: prefer nodes that the task fills up, to keep whole nodes free for big jobs.

Arguments (Volcano's names): ``binpack.weight`` (default 1), ``binpack.cpu`` and ``binpack.memory``
(default 1), ``binpack.resources`` (comma-separated extra resources) with ``binpack.resources.<name>``
weights (default 1). Score: weighted mean of ``used after placing / allocatable`` over the resources the
task asks for, times 100 and the plugin weight.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.registry import register_plugin
from volsched.framework.session import Session
from volsched.model.cluster import IndexArray
from volsched.model.errors import InputError
from volsched.model.objects import Task
from volsched.model.resources import CPU, EPS, MEMORY


@register_plugin
class Binpack(BasePlugin):
    name: ClassVar[str] = "binpack"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weight = arguments.number("binpack.weight", 1, minimum=0)
        self.resource_weights: dict[str, float] = {
            CPU: arguments.number("binpack.cpu", 1, minimum=0),
            MEMORY: arguments.number("binpack.memory", 1, minimum=0),
        }
        extra = arguments.raw("binpack.resources", "")
        if not isinstance(extra, str):
            raise InputError(
                f"plugin binpack: argument binpack.resources: expected a comma-separated string, got {extra!r}"
            )
        for name in (n.strip() for n in extra.split(",")):
            if name:
                self.resource_weights[name] = arguments.number(f"binpack.resources.{name}", 1, minimum=0)
        for key, _ in list(arguments.with_prefix("binpack.resources.")):
            if key not in self.resource_weights:
                raise InputError(
                    f"plugin binpack: argument binpack.resources.{key} names a resource missing from binpack.resources"
                )

    def on_session_open(self, session: Session) -> None:
        if not self.weight:
            return
        nodes = session.nodes
        space = session.space
        dims = [space.index(n) for n in self.resource_weights if n in space.names]
        weights = np.array([self.resource_weights[space.names[d]] for d in dims])

        def score(task: Task, idx: IndexArray) -> np.ndarray[Any, np.dtype[np.float64]]:
            req = task.request[dims]
            asked = (req > EPS) & (weights > 0)
            if not asked.any():
                return np.zeros(len(idx))
            d = np.asarray(dims, dtype=np.intp)[asked]
            w = weights[asked]
            alloc = nodes.allocatable[idx][:, d]
            used = alloc - nodes.idle[idx][:, d] + task.request[d]
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(alloc > 0, used / alloc, 0.0)
            frac = np.where(frac > 1.0, 0.0, frac)
            return np.asarray((frac * w).sum(axis=1) / w.sum() * 100.0 * self.weight, dtype=np.float64)

        session.add_node_order_fn(self.name, score)
