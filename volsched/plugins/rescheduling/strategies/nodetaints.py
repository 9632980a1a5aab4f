"""removePodsViolatingNodeTaints: a pod on a node with a taint it does not tolerate (NoSchedule, and
PreferNoSchedule if asked), the taints counted narrowed by ``includedTaints`` and ``excludedTaints``.

Not NoExecute taints: Kubernetes' taint-based eviction removes those pods itself.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.model.nodeterms import tolerates
from volsched.model.vocabulary import Task
from volsched.plugins.rescheduling.context import Context
from volsched.plugins.rescheduling.params import Params, PodFilter
from volsched.records import dataclass


def _names_taint(entries: tuple[str, ...], key: str, value: str) -> bool:
    """Whether one of ``entries`` (``key`` or ``key=value``) names the taint."""
    return key in entries or (bool(value) and f"{key}={value}" in entries)


@dataclass(frozen=True)
class RemovePodsViolatingNodeTaints:
    """A pod on a node with a NoSchedule taint (and PreferNoSchedule with ``includePreferNoSchedule``)
    it does not tolerate; ``excludedTaints`` entries (``key`` or ``key=value``) are ignored, and with
    ``includedTaints`` only the taints it names count."""

    name: ClassVar[str] = "removePodsViolatingNodeTaints"
    excluded: tuple[str, ...] = ()
    prefer_no_schedule: bool = False
    pods: PodFilter = PodFilter()
    included: tuple[str, ...] | None = None

    @classmethod
    def parse(cls, params: Params) -> RemovePodsViolatingNodeTaints:
        given = params.get("includedTaints") is not None
        return cls(
            params.strings("excludedTaints"),
            params.boolean("includePreferNoSchedule", False),
            PodFilter.parse(params),
            params.strings("includedTaints") if given else None,
        )

    def _counts(self, taint: tuple[str, str, str]) -> bool:
        key, value, effect = taint
        if effect != "NoSchedule" and not (self.prefer_no_schedule and effect == "PreferNoSchedule"):
            return False
        if self.included is not None and not _names_taint(self.included, key, value):
            return False
        return not _names_taint(self.excluded, key, value)

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        out: list[tuple[Task, str]] = []
        nodes = ctx.session.nodes
        for t in ctx.candidates():
            i = ctx.node_of(t)
            if i is None or not self.pods.admits(t):
                continue
            spec = nodes.specs[i]
            bad = next((x for x in spec.taints if self._counts(x) and not tolerates(t.tolerations, x)), None)
            if bad is None or not ctx.pick(t):
                continue
            shown = f"{bad[0]}={bad[1]}:{bad[2]}" if bad[1] else f"{bad[0]}:{bad[2]}"
            out.append(
                (
                    t,
                    f"rescheduling (removePodsViolatingNodeTaints): node {spec.name} has taint {shown}, not tolerated",
                )
            )
        return out
