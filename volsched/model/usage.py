"""Measured node load: what a metrics source reports about one node.

This module is plain data. It does no I/O; the collectors in ``volsched.metrics`` fill it
and the cache hands it to plugins (usage, rescheduling) through the snapshot.
"""

from __future__ import annotations

from volsched.records import dataclass


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """Real usage of one node, averaged over a period.

    Percentages are 0..100 (the unit of the usage plugin's thresholds). ``cpu_fluctuation`` and
    ``mem_fluctuation`` are the standard deviation, in percentage points, of the samples the average
    was taken over: a node whose load swings widely has a large value. ``measured_at`` is a Unix
    timestamp (seconds) of the newest sample.
    """

    cpu: float
    memory: float
    measured_at: float
    cpu_fluctuation: float = 0.0
    mem_fluctuation: float = 0.0
