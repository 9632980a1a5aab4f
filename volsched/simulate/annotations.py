"""The annotations the time mode reads on its input, and the one that needs reading: how long a pod runs
(:func:`pod_duration`), its job's class, when a node goes, what a job does when one of its pods is evicted.

Not what is done with them: the kubelet (:mod:`volsched.simulate.kubelet`) runs a pod for its duration,
the time mode's port (:mod:`volsched.simulate.timeport`) plays the owners and removes the nodes.
"""

from __future__ import annotations

from volsched.model.errors import InputError
from volsched.model.raw import Raw, meta_of
from volsched.model.scalars import duration_seconds

#: How long a pod runs once bound (on the pod, or on a Job's pod template).
DURATION_ANNOTATION = "simulate.volsched.io/duration"
#: The job class a pod's job belongs to (the report groups by it).
CLASS_ANNOTATION = "simulate.volsched.io/class"
#: When a Node is removed: a duration from the replay's start (``"6h"``).
REMOVE_ANNOTATION = "simulate.volsched.io/remove-after"
#: What a job does when one of its pods is evicted: RestartJob or RestartPod (see
#: :mod:`volsched.simulate.timeport`).
EVICTION_POLICY_ANNOTATION = "simulate.volsched.io/on-eviction"
RESTART_JOB = "RestartJob"
RESTART_POD = "RestartPod"


def pod_duration(raw: Raw, *, where: str) -> float | None:
    """The pod's ``simulate.volsched.io/duration`` in seconds, None when it has none; a value that is
    not a duration >= 0 raises :class:`InputError` naming ``where``."""
    value = (meta_of(raw).get("annotations") or {}).get(DURATION_ANNOTATION)
    if value is None:
        return None
    seconds = duration_seconds(value)
    if seconds is None or seconds < 0:
        raise InputError(
            f"{where}: annotation {DURATION_ANNOTATION}: expected a duration like 90s, 10m or 1h30m, "
            f"got {value!r}"
        )
    return seconds
