"""overcommit: admit a job only while the minimum resources of admitted jobs fit the cluster's total
times an overcommit factor (argument ``overcommit-factor``, default 1.2), less what is in use."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.registry import register_plugin
from volsched.framework.session import Session, Vote
from volsched.model.cluster import Job
from volsched.model.objects import PodGroupPhase
from volsched.model.resources import EPS, Vector


def unmet_minimum(job: Job) -> Vector:
    """What an admitted job may still claim toward its minimum: minResources less what it holds."""
    out: Vector = np.maximum(job.min_request - job.allocated, 0.0)
    return out


@register_plugin
class Overcommit(BasePlugin):
    name: ClassVar[str] = "overcommit"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.factor = arguments.number("overcommit-factor", 1.2, minimum=1.0)

    def on_session_open(self, session: Session) -> None:
        nodes = session.nodes
        space = session.space
        capacity = session.total * self.factor
        used = nodes.used[nodes.ready].sum(axis=0) if len(nodes) else space.zeros()
        inqueue = space.zeros()
        for job in session.jobs.values():
            if job.phase is PodGroupPhase.INQUEUE:
                inqueue += unmet_minimum(job)
        state = {"inqueue": inqueue}

        def enqueueable(job: Job) -> tuple[Vote, str]:
            need = job.min_request
            dims = np.flatnonzero((need > EPS) & space.share_mask)
            room = capacity - used - state["inqueue"]
            short = [d for d in dims if need[d] > room[d] + EPS]
            if not short:
                return Vote.PERMIT, ""
            d = short[0]
            return Vote.REJECT, (
                f"minResources {space.names[d]} {space.describe(d, need[d])} > room "
                f"{space.describe(d, max(room[d], 0.0))} (cluster {space.describe(d, session.total[d])} "
                f"x {self.factor:g} - used {space.describe(d, used[d])} - admitted {space.describe(d, state['inqueue'][d])})"
            )

        def enqueued(job: Job) -> None:
            state["inqueue"] = state["inqueue"] + unmet_minimum(job)

        session.add_job_enqueueable_fn(self.name, enqueueable)
        session.add_job_enqueued_fn(self.name, enqueued)
