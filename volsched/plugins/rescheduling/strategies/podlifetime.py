"""podLifeTime: a pod older than ``maxPodLifeTimeSeconds``, optionally only in some states (its phase, its
reason or a container's).

A maximum age before the pod is moved; not ``minruntime``'s minimum run before preemption may take it.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.model.vocabulary import Task, TaskStatus
from volsched.plugins.rescheduling.context import FAILED, LIVE_OR_STARTING, Context
from volsched.plugins.rescheduling.params import Params, PodFilter
from volsched.records import dataclass

#: The ``states`` podLifeTime knows (the descheduler's list): phases, pod reasons, container reasons.
LIFETIME_STATES = (
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "Unknown",
    "NodeAffinity",
    "NodeLost",
    "Shutdown",
    "UnexpectedAdmissionError",
    "PodInitializing",
    "ContainerCreating",
    "ImagePullBackOff",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "ErrImagePull",
    "CreateContainerError",
    "InvalidImageName",
    "OOMKilled",
    "Error",
    "Completed",
    "DeadlineExceeded",
    "Evicted",
    "ContainerCannotRun",
    "StartError",
)


@dataclass(frozen=True)
class PodLifeTime:
    """A pod older than ``maxPodLifeTimeSeconds`` (since its creation); with ``states``, only one in
    one of them: its phase (``Running``, ``Pending``: bound, not started, ``Unknown``, ``Failed``), its
    reason (``NodeLost``, ``NodeAffinity``, ``Shutdown``, ``UnexpectedAdmissionError``...), or a
    container's waiting or terminated reason (``ContainerCreating``, ``CrashLoopBackOff``, ``OOMKilled``...;
    init containers' with ``includingInitContainers``, ephemeral ones' with
    ``includingEphemeralContainers``). Failed pods are asked only with ``states``."""

    name: ClassVar[str] = "podLifeTime"
    max_seconds: float
    states: tuple[str, ...] = ()
    pods: PodFilter = PodFilter()
    init: bool = False
    ephemeral: bool = False

    @classmethod
    def parse(cls, params: Params) -> PodLifeTime:
        return cls(
            params.number("maxPodLifeTimeSeconds", None, integer=True),
            params.states("states", LIFETIME_STATES),
            PodFilter.parse(params),
            params.boolean("includingInitContainers", False),
            params.boolean("includingEphemeralContainers", False),
        )

    def _in_state(self, t: Task) -> bool:
        if not self.states:
            return True
        rt = t.runtime
        if t.status is TaskStatus.FAILED:
            phase = "Failed"
        elif rt.phase_unknown:
            phase = "Unknown"
        else:
            phase = "Running" if t.status is TaskStatus.RUNNING else "Pending"
        reasons = [
            phase,
            rt.reason,
            *rt.container_reasons,
            *(rt.init_container_reasons if self.init else ()),
            *(rt.ephemeral_container_reasons if self.ephemeral else ()),
        ]
        return any(r in self.states for r in reasons)

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        out: list[tuple[Task, str]] = []
        for t in ctx.candidates(LIVE_OR_STARTING | FAILED if self.states else LIVE_OR_STARTING):
            if ctx.node_of(t) is None or not self.pods.admits(t) or not self._in_state(t):
                continue
            age = ctx.age(t)
            if age > self.max_seconds and ctx.pick(t):
                out.append(
                    (t, f"rescheduling (podLifeTime): pod is {age:.0f}s old, over {self.max_seconds:g}s")
                )
        return out
