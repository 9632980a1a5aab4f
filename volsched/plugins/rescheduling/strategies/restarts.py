"""removePodsHavingTooManyRestarts: a pod whose containers restarted ``podRestartThreshold`` times or more.

Not the kubelet's restart back-off: the pod is evicted, for its owner to make anew.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.model.vocabulary import Task, TaskStatus
from volsched.plugins.rescheduling.context import LIVE_OR_STARTING, Context
from volsched.plugins.rescheduling.params import Params, PodFilter
from volsched.records import dataclass

#: The ``states`` removePodsHavingTooManyRestarts knows.
RESTART_STATES = ("Running", "CrashLoopBackOff")


@dataclass(frozen=True)
class RemovePodsHavingTooManyRestarts:
    """A pod whose containers restarted ``podRestartThreshold`` times or more in sum (init containers
    too with ``includingInitContainers``); with ``states``, only one in phase ``Running`` or with a
    container waiting in ``CrashLoopBackOff`` (an init container too with ``includingInitContainers``)."""

    name: ClassVar[str] = "removePodsHavingTooManyRestarts"
    threshold: int
    init: bool = False
    pods: PodFilter = PodFilter()
    states: tuple[str, ...] = ()

    @classmethod
    def parse(cls, params: Params) -> RemovePodsHavingTooManyRestarts:
        threshold = int(params.number("podRestartThreshold", None, minimum=1, integer=True))
        return cls(
            threshold,
            params.boolean("includingInitContainers", False),
            PodFilter.parse(params),
            params.states("states", RESTART_STATES),
        )

    def _in_state(self, t: Task) -> bool:
        if not self.states:
            return True
        if t.status is TaskStatus.RUNNING and "Running" in self.states:
            return True
        rt = t.runtime
        reasons = (*rt.container_reasons, *(rt.init_container_reasons if self.init else ()))
        return any(r in self.states for r in reasons)

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        out: list[tuple[Task, str]] = []
        for t in ctx.candidates(LIVE_OR_STARTING):
            if ctx.node_of(t) is None or not self.pods.admits(t) or not self._in_state(t):
                continue
            restarts = t.runtime.restarts + (t.runtime.init_restarts if self.init else 0)
            if restarts >= self.threshold and ctx.pick(t):
                out.append(
                    (
                        t,
                        f"rescheduling (removePodsHavingTooManyRestarts): {restarts} restarts, "
                        f"threshold {self.threshold}",
                    )
                )
        return out
