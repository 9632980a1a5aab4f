"""What takes time in a replayed cluster beside the scheduler's decisions (:class:`Latencies`): the
kubelet's start-up, the bind landing, the pod's end reaching the scheduler, the Job controller, the
session itself; each a fixed figure or drawn at random from a seeded generator.

Not where they are spent: the kubelet (:mod:`volsched.simulate.kubelet`) draws a pod's, the replay's loop
(:mod:`volsched.simulate.replay`) a Job's and a session's.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from volsched.model.errors import InputError
from volsched.records import dataclass

#: The longest latency (a mean, in seconds) a replay takes: a day.
MAX_LATENCY = 86400.0


@dataclass(frozen=True, slots=True)
class Latencies:
    """What takes time in a cluster beside the scheduler's decisions, in seconds (all 0 by default: the
    replay's pods start when bound and their room frees when they end). See docs/simulator-time.md."""

    #: From a bind to the pod running (the kubelet's start-up: image pull, containers); the pod's
    #: duration counts from then, as a kubelet's (and kwok's) does. Its room is held from the bind.
    start: float = 0.0
    #: From the end of the session that decided a bind to the bind landing (the bind request, the
    #: watch that shows the pod bound): a job's wait ends then, and the pod's start delay counts from
    #: then. Its room is held from the session's end, as the scheduler assumes its binds at once.
    bind: float = 0.0
    #: From a pod's end to the scheduler seeing its room free (the kubelet's status, the watch).
    finish: float = 0.0
    #: From a Job's creation to its pods' (the Job controller); its jobs' waits count from the Job's.
    create: float = 0.0
    #: How long a session that runs takes: its binds and evictions land at its end, and the next
    #: session the doorbell calls for waits at least that long after it (the operator's pacing).
    session: float = 0.0
    #: None: every pod and Job takes the figures above. A number: each pod's bind, start and finish and
    #: each Job's create latency is drawn at random (exponentially, the figure its mean) from a generator
    #: seeded with it, as a real cluster's vary: the same seed gives the same replay.
    seed: int | None = None

    def check(self) -> None:
        for name in ("start", "bind", "finish", "create", "session"):
            value = getattr(self, name)
            if not (value >= 0 and value <= MAX_LATENCY):
                raise InputError(
                    f"the {name} latency must be a number of seconds from 0 to {MAX_LATENCY:g} (a day), got {value}"
                )

    def drawer(self, stream: str) -> Callable[[float], float]:
        """Draws one latency of the given mean: the mean itself without a seed, else from the generator
        of ``stream`` (one per kind of draw, so adding Jobs does not move the pods' draws)."""
        if self.seed is None:
            return lambda mean: mean
        rng = random.Random(f"{self.seed}/{stream}")
        return lambda mean: rng.expovariate(1.0 / mean) if mean > 0 else 0.0
