"""minruntime: no pod is a victim of preempt or reclaim before it has run its minimum run time.

Arguments (durations): ``minRuntime`` for every pod, ``queues.<name>`` per queue, ``priorityClasses.<name>``
per priority class; a pod's minimum is the largest that applies (see
:class:`~volsched.plugins.shared.runtimes.MinRuntimes`). ``preemptionDelay`` (as YuniKorn's): a pending
pod causes no eviction before it has waited that long since its creation (room that frees by itself
meanwhile costs no work). ``protectFinishing`` (default true): a pod that has run more than it has
left to run, by its expected run time, is no victim either: waiting for its end frees the room at less
cost than the work its eviction would throw away (not a pod past its expected end: its estimate
failed, when it ends is not known). ``weighWork`` (default true): a pod is a victim
only if the work its eviction throws away (what it ran times its size; for a pod whose gang then falls
below its minimum, what the whole gang ran) is no more than the wait it saves (how long the pending pod
would wait for room by itself, by the expected ends of what runs on the nodes it may use, times its
size; see :mod:`~volsched.plugins.shared.waits`). With no expected end known the wait is unbounded and
the rule keeps no pod. A pod counts as running from its
``status.startTime``; one placed, bound or started without a known start time has run nothing yet,
so it is protected too. Hence a pod placed by evicting others is itself never evicted before its own
minimum: no eviction places a pod that would be thrown away in turn before it did its minimum of work.

Answers at ``preemptable`` and ``reclaimable`` (Volcano's victim points): it names the candidates past
their minimum, so it narrows whatever the other plugins name and never adds a victim. It does not
decide which victims go first, nor touch ``shuffle`` (rescheduling's own rules say when a pod moves).
"""

from __future__ import annotations

from typing import ClassVar

from volsched.framework.plugin import Arguments, BasePlugin
from volsched.framework.points import ExtensionPoints
from volsched.framework.registry import register_plugin
from volsched.model.vocabulary import Task
from volsched.plugins.shared.runtimes import MinRuntimes, ran_for, runtimes_of
from volsched.plugins.shared.waits import Waits


@register_plugin
class MinRuntime(BasePlugin):
    name: ClassVar[str] = "minruntime"
    #: What a pod has run grows with the clock: a victim refused now may be taken later.
    reads_clock: ClassVar[bool] = True
    #: Its answers read the victims and, of the pod that would take their room, its request, its nodes
    #: and (``preemptionDelay``) its age, which ``add_shape_fn`` tells apart.
    answers_by_shape: ClassVar[bool] = True

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.minimums = MinRuntimes.from_arguments(arguments)
        self.delay = arguments.duration("preemptionDelay", 0.0, allow_zero=True)
        self.finishing = arguments.boolean("protectFinishing", True)
        self.weigh = arguments.boolean("weighWork", True)

    def on_session_open(self, session: ExtensionPoints) -> None:
        minimums, delay, finishing, weigh = self.minimums, self.delay, self.finishing, self.weigh
        if not minimums.any and delay <= 0 and not finishing and not weigh:
            return
        now = session.now
        jobs = session.jobs
        waits = Waits(session)
        expected_runtime = runtimes_of(session)

        def past_minimum(task: Task) -> bool:
            job = jobs.get(task.job_key)
            queue = job.queue if job is not None else ""
            ran = ran_for(task, now)
            if ran < minimums.of(task, queue):
                return False
            if finishing:
                expected = expected_runtime(task)
                if expected is not None and 0 < expected - ran <= ran:
                    # more run than left: its end frees the room at less cost than its work. A pod past its
                    # expected end is not finishing: its estimate failed (what it says is its own: a
                    # tenant's 1s would make its pods no victim)
                    return False
            return True

        def victims(actor: Task, candidates: list[Task]) -> list[Task]:
            if now - actor.creation < delay:
                return []
            out = [t for t in candidates if past_minimum(t)]
            if weigh and out:
                saved = waits.wait(actor) * waits.size(actor.request)
                out = [t for t in out if waits.thrown_away(t, jobs.get(t.job_key)) <= saved]
            return out

        session.add_preemptable_fn(self.name, victims)
        session.add_reclaimable_fn(self.name, victims)
        if delay > 0:
            session.add_shape_fn(self.name, lambda _, tasks: tuple(now - t.creation < delay for t in tasks))
