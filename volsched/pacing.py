"""When the next session runs: every period, or sooner when the cache's doorbell rang (see
``volsched.cache.doorbell``), but never sooner than a minimum gap after the last session ended; a pod
arriving after a session that found at most one job to place waits only as long as that session kept
the processor (arrivals are sparse: nothing is gained by waiting for others to join it).

Pure, and shared: the operator's session loop (:meth:`volsched.operator.sessions.SessionLoop.run`) asks
:meth:`Pacer.next_wait` after each session and again whenever the doorbell rings, and waits what it
answers; the simulator's time mode (:mod:`volsched.simulate.replay`) asks the same question on its
virtual clock, so a replay's sessions run when the operator's would. It is not the loop itself (no
waiting, no threads) and decides nothing about what a session does.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

from volsched.cache.doorbell import Rings
from volsched.framework.decisions import PodGroupStatus, SessionResult
from volsched.records import dataclass

#: The defaults of the operator's ``session.period`` and ``session.min_gap`` (the time mode's too).
PERIOD = 1.0
MIN_GAP = 0.02


_PENDING: attrgetter[int] = attrgetter("pending")


def pods_wait(result: SessionResult) -> bool:
    """Whether the session left pods of ours waiting, so that capacity freeing calls for a session: pods
    it could not place, and pods pipelined onto the room their victims free (pending, not unschedulable:
    their victims going is what they wait for), in a gang or standalone (no PodGroup status)."""
    return (
        bool(result.unschedulable_pods) or result.pipelined > 0 or any(map(_PENDING, _maybe_pending(result)))
    )


def _maybe_pending(result: SessionResult) -> Iterable[PodGroupStatus]:
    """The PodGroup statuses of ``result`` that may say pods are pending: those its delta lists (the
    others are of the settled run, nothing pending there), or all."""
    delta = result.podgroups_delta
    if delta is None:
        return result.podgroups.values()
    return map(result.podgroups.__getitem__, delta.keys)


@dataclass(frozen=True)
class Pacer:
    """When the next session runs: the period, the gaps after a session, and the retry backoff."""

    #: Seconds between the starts of two sessions when nothing rings.
    period: float
    #: Seconds at least between the end of a session and the start of one the doorbell called for, and
    #: at least as long as that session kept the processor (its thread's CPU time, when the loop knows
    #: it; else its wall time): the pods arriving meanwhile are placed together, and the watches, the
    #: writers and the apiserver get the processor at least half of the time. A session's wall time
    #: also counts the time those threads and processes had the processor while it ran (a loaded
    #: machine, the bind workers sending the session's own binds): waiting that long again starved
    #: nobody, and only kept the pods that arrived meanwhile waiting.
    min_gap: float
    #: Seconds at least between the end of a session and one called for by a bind that failed after its
    #: session (a retry): kube-scheduler's initial backoff for a pod, so a bind that always fails is
    #: tried about once a second, not every ``min_gap``.
    retry_gap: float = 1.0

    def next_wait(
        self,
        *,
        started: float,
        ended: float,
        now: float,
        rings: Rings,
        waiting: bool,
        leader: bool,
        retry_every: float,
        busy: float | None = None,
        sparse: bool = False,
    ) -> float:
        """Seconds from ``now`` until the next session should start (0: start it now).

        ``started``/``ended``: when the last session started and ended (one monotonic clock); ``rings``:
        what the doorbell heard since that session started (a retry waits ``retry_gap`` at least; a
        config loaded between sessions is acted on at the gap, as a pod arriving);
        ``waiting``: the last session left pods of ours pending (then freed capacity is worth a session
        too); ``busy``: the seconds of processor the last session took (its thread's CPU time; None:
        unknown, its wall time counts); ``sparse``: the last session found at most one job with anything to
        place, so a pod arriving now is not one of many arriving together: it waits only as long as that
        session kept the processor (the half of it the others keep), not ``min_gap``, which is there to
        gather pods arriving faster than sessions run (a session that found several jobs says they do);
        a follower (not ``leader``) reads the Lease every ``retry_every`` (at most every period)
        and is never called by the doorbell."""
        if not leader:
            return max(0.0, started + min(self.period, retry_every) - now)
        due = started + self.period
        took = ended - started if busy is None else min(busy, ended - started)
        gap = max(self.min_gap, took)
        if rings.arrived and sparse:
            due = min(due, ended + took)
        elif rings.arrived or rings.config or (rings.freed and waiting):
            due = min(due, ended + gap)
        elif rings.retry:
            due = min(due, ended + max(gap, self.retry_gap))
        return max(0.0, due - now)
