"""removeFailedPods: a pod in phase Failed on a node, optionally only for some reasons or exit codes.

Not the pod garbage collector: it deletes nothing; what it picks the shuffle action evicts.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.model.vocabulary import Task
from volsched.plugins.rescheduling.context import FAILED, Context
from volsched.plugins.rescheduling.params import Params, PodFilter, owner_kinds_excluded
from volsched.records import dataclass


@dataclass(frozen=True)
class RemoveFailedPods:
    """A pod in phase Failed on a node (not already being deleted: the default evictor), optionally only
    for ``reasons`` (the pod's ``status.reason`` or a container's waiting/terminated reason) and for
    ``exitCodes`` (a terminated container's), init containers' too with ``includingInitContainers``; at
    least ``minPodLifetimeSeconds`` old, and not owned by one of ``excludeOwnerKinds``."""

    name: ClassVar[str] = "removeFailedPods"
    reasons: tuple[str, ...] = ()
    init: bool = False
    exclude_owner_kinds: tuple[str, ...] = ()
    min_seconds: float = 0.0
    pods: PodFilter = PodFilter()
    exit_codes: tuple[int, ...] = ()

    @classmethod
    def parse(cls, params: Params) -> RemoveFailedPods:
        return cls(
            params.strings("reasons"),
            params.boolean("includingInitContainers", False),
            params.strings("excludeOwnerKinds"),
            params.number("minPodLifetimeSeconds", 0, integer=True),
            PodFilter.parse(params),
            params.integers("exitCodes"),
        )

    def _exit_code(self, t: Task) -> int | None:
        """The first exit code of ``exitCodes`` the pod's containers ended with (None: none did)."""
        rt = t.runtime
        codes = (*rt.exit_codes, *(rt.init_exit_codes if self.init else ()))
        return next((c for c in codes if c in self.exit_codes), None)

    def _reason(self, t: Task) -> str | None:
        rt = t.runtime
        seen = [rt.reason, *rt.container_reasons, *(rt.init_container_reasons if self.init else ())]
        if not self.reasons:
            return next((r for r in seen if r), "")
        return next((r for r in seen if r in self.reasons), None)

    def select(self, ctx: Context) -> list[tuple[Task, str]]:
        out: list[tuple[Task, str]] = []
        for t in ctx.candidates(FAILED):
            if ctx.node_of(t) is None or not self.pods.admits(t):
                continue
            if owner_kinds_excluded(t, self.exclude_owner_kinds) or ctx.age(t) < self.min_seconds:
                continue
            reason = self._reason(t)
            if reason is None:
                continue
            if self.exit_codes:
                code = self._exit_code(t)
                if code is None:
                    continue
                reason = f"{reason}, exit code {code}" if reason else f"exit code {code}"
            if not ctx.pick(t):
                continue
            because = f" ({reason})" if reason else ""
            out.append((t, f"rescheduling (removeFailedPods): pod failed{because} on node {t.node_name}"))
        return out
