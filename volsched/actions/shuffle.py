"""shuffle: evict the running pods that plugins name as victims, so they are placed again elsewhere.

The victims come from ``session.victim_tasks()`` in the order the plugins give them (the rescheduling
plugin answers at most once per its interval): running pods, pods bound but not started, and failed
pods (which hold nothing; evicting one deletes it), less what a victim filter keeps (a pod a
PodDisruptionBudget protects: the filter is asked again just before each eviction, so the victims
evicted before it count against its budget). Each is evicted through a Statement, at most
``maxEvictionsPerSession`` per session, and never a running or bound one that would take a gang (a job
with a PodGroup and a minMember above 1) below its minMember. Why each pod moves is read from ``session.state["victim_reasons"]`` when a plugin
left it there, and becomes a ``Rescheduled`` event on the pod.

Arguments, in the scheduler config's ``configurations`` section::

    configurations:
    - name: shuffle
      arguments:
        maxEvictionsPerSession: 5   # default 5; 0 turns evictions off

Its evictions are ``may_return=False``: whoever carries them out records that the pod's owner should not
go back to the node it left (``ClusterState.moved_off``; the operator and the simulator do), and the Eviction API enforces PodDisruptionBudgets.
"""

from __future__ import annotations

from typing import ClassVar

from volsched.actions.eviction import ran_seconds
from volsched.framework.decisions import EvictionReason
from volsched.framework.plugin import Arguments
from volsched.framework.registry import register_action
from volsched.framework.session import Session
from volsched.framework.statement import Statement
from volsched.model.errors import InputError
from volsched.model.vocabulary import TaskStatus

DEFAULT_MAX_EVICTIONS = 5
#: Statuses of a pod shuffle may evict.
SHUFFLED = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED})


@register_action
class Shuffle:
    name: ClassVar[str] = "shuffle"
    #: Whether it may evict running pods (a session whose actions never do shares its bound tasks).
    evicts: ClassVar[bool] = True
    #: It moves running pods, whether any pod is pending or not.
    pending_only: ClassVar[bool] = False

    @staticmethod
    def check_arguments(args: Arguments) -> int:
        limit = args.number("maxEvictionsPerSession", DEFAULT_MAX_EVICTIONS, minimum=0)
        if limit != int(limit):
            raise InputError(
                f"action shuffle: argument maxEvictionsPerSession: expected an integer, got {limit:g}"
            )
        unknown = args.unknown()
        if unknown:
            raise InputError(
                f"action shuffle: unknown argument(s) {', '.join(unknown)}; known: maxEvictionsPerSession"
            )
        return int(limit)

    def execute(self, session: Session) -> None:
        limit = self.check_arguments(Arguments("shuffle", session.config.action_arguments(self.name)))
        if not limit:
            return
        victims = session.victim_tasks()
        reasons: dict[str, str] = session.state.get("victim_reasons", {})
        statement = Statement(session)
        for task in victims:
            if len(statement) >= limit:
                break
            if task.status not in SHUFFLED:
                continue
            job = session.jobs.get(task.job_key)
            counted = task.status is not TaskStatus.FAILED
            # minMember 1 is no gang: the pod's owner recreates it (a pod with no owner is never a victim).
            if counted and job is not None and job.min_member > 1 and job.ready_count - 1 < job.min_member:
                continue
            if not session.filter_victims([task], point="victim"):
                continue  # a victim filter keeps it now (a PodDisruptionBudget spent by those before)
            why = EvictionReason(
                action=self.name,
                detail=reasons.get(task.key, "rebalancing nodes"),
                ran=ran_seconds(task, session.now),
            )
            statement.evict(task, reason=why, may_return=False)
        statement.commit()
