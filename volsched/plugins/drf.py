"""drf: dominant resource fairness between jobs, and between namespaces by weight.

Job order: the job with the smaller dominant share of the cluster goes first. Namespace order: the
namespace with the smaller ``dominant share / weight`` goes first (namespace weights come from
ResourceQuota). Shares follow every allocation and eviction in the session.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.framework.plugin import BasePlugin
from volsched.framework.registry import register_plugin
from volsched.framework.session import EventHandler, Session
from volsched.model.cluster import Job, dominant_share
from volsched.model.objects import Task
from volsched.model.resources import Vector

_TOL = 1e-9


def compare_shares(left: float, right: float) -> int:
    if abs(left - right) <= _TOL:
        return 0
    return -1 if left < right else 1


@register_plugin
class Drf(BasePlugin):
    name: ClassVar[str] = "drf"

    def on_session_open(self, session: Session) -> None:
        total = session.total
        mask = session.space.share_mask
        ns_alloc: dict[str, Vector] = {}
        for job in session.jobs.values():
            acc = ns_alloc.setdefault(job.namespace, session.space.zeros())
            acc += job.allocated
        self.ns_alloc = ns_alloc

        def ns_share(ns: str) -> float:
            alloc = ns_alloc.get(ns)
            if alloc is None:
                return 0.0
            return dominant_share(alloc, total, mask) / session.snapshot.namespace_weight(ns)

        def job_share(job: Job) -> float:
            return dominant_share(job.allocated, total, mask)

        def job_order(left: Job, right: Job) -> int:
            return compare_shares(job_share(left), job_share(right))

        def namespace_order(left: str, right: str) -> int:
            return compare_shares(ns_share(left), ns_share(right))

        def on_allocate(task: Task) -> None:
            acc = ns_alloc.setdefault(task.namespace, session.space.zeros())
            acc += task.request

        def on_deallocate(task: Task) -> None:
            ns_alloc[task.namespace] -= task.request

        session.add_job_order_fn(self.name, job_order)
        session.add_namespace_order_fn(self.name, namespace_order)
        session.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))
        session.state["drf.namespace_share"] = ns_share
        session.state["drf.job_share"] = job_share
