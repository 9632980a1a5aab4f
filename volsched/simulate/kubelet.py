"""The time mode's kubelet: a pod bound with a duration runs for it, and succeeds when it is due; the
latencies it draws (the bind landing, the start-up, the end reaching the scheduler) are the
:class:`~volsched.simulate.latencies.Latencies`'.

Not what the pod's success does to the cache (the time mode's port, :mod:`volsched.simulate.timeport`)
nor the records (:mod:`volsched.simulate.runs`): this module keeps only when each running pod is due.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping

from volsched.simulate.latencies import Latencies
from volsched.simulate.runs import PodRun


class Kubelet:
    """When each pod that runs for a duration is due to succeed, over the records ``runs`` (a pod evicted
    or ended meanwhile leaves a stale entry, skipped)."""

    def __init__(self, runs: Mapping[str, PodRun]) -> None:
        self._runs = runs
        #: Pods due to succeed: (when, sequence, pod key, when it started).
        self._due: list[tuple[float, int, str, float]] = []
        self._seq = 0
        self.latencies = Latencies()

    @property
    def latencies(self) -> Latencies:
        return self._latencies

    @latencies.setter
    def latencies(self, value: Latencies) -> None:
        self._latencies, self._draw = value, value.drawer("pods")
        self._draw_bind = value.drawer("binds")

    def landing(self) -> float:
        """Seconds from the end of a session to the landing of a bind it decided (one draw)."""
        return self._draw_bind(self._latencies.bind)

    def start(self, run: PodRun, at: float, *, landed: float) -> None:
        """``run``, bound at ``at`` with its bind landing ``landed`` seconds later, runs from its start
        delay on (``run.delay``), and is due after its duration and the finish latency."""
        if run.duration is not None:
            self._seq += 1
            lat, draw = self._latencies, self._draw
            run.delay = landed + draw(lat.start)  # from the bind decided to the pod running
            due = at + run.delay + run.duration + draw(lat.finish)
            heapq.heappush(self._due, (due, self._seq, run.key, at))

    def next_due(self) -> float | None:
        """When the next pod succeeds (None: none runs with a duration)."""
        while self._due:
            when, _, key, started = self._due[0]
            run = self._runs.get(key)
            if run is not None and run.started == started and run.finished is None and run.evicted is None:
                return when
            heapq.heappop(self._due)  # evicted meanwhile: a stale entry
        return None

    def due(self, now: float) -> Iterator[tuple[float, PodRun]]:
        """Each pod due by ``now``, in the order they are due, with when: taken off the queue as it is
        handed out (the next is looked for once the caller has recorded this one's end)."""
        while (when := self.next_due()) is not None and when <= now:
            _, _, key, _ = heapq.heappop(self._due)
            yield when, self._runs[key]
