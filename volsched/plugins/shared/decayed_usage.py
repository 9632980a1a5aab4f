"""Usage with memory: what each queue (or namespace) held over time, averaged with an exponential decay
of a configurable half-life, for the fair-share orders of ``proportion`` and ``drf`` (off unless a
half-life is given; see docs/starvation.md for a worked example).

The average is kept across sessions in the carryover as ``{"at": t, "avg": {name: amounts},
"held": {name: amounts}}``: ``avg`` the decayed average at ``t`` (a session's close), ``held`` what
each held then. At the next session (``now``), what was held is taken to have been held since ``t``
(it was: the holdings change only in sessions and as pods end), so the average is exact for that
interval: ``avg(now) = avg(t) * f + held(t) * (1 - f)`` with ``f = 2 ** (-(now - t) / halfLife)``.
A session that is skipped (nothing new) loses nothing: the next one integrates the whole interval.

It decides nothing itself: the plugins mix the average with what is held now (``usageWeight``) in
their order. Pure arithmetic on numpy vectors over the session's resource space.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volsched.framework.plugin import Arguments
from volsched.model.resources import ResourceSpace, Vector
from volsched.records import dataclass


@dataclass(frozen=True)
class Decay:
    """``fairShare.halfLife`` (a duration; 0: off) and ``fairShare.usageWeight`` (0 to 1: how much of
    the order's share is the decayed average rather than what is held now)."""

    half_life: float = 0.0
    weight: float = 0.5

    @classmethod
    def from_arguments(cls, args: Arguments) -> Decay:
        half_life = args.duration("fairShare.halfLife", 0.0, allow_zero=True)
        weight = args.number("fairShare.usageWeight", 0.5, minimum=0.0, maximum=1.0)
        return cls(half_life, weight)

    @property
    def on(self) -> bool:
        return self.half_life > 0

    def averages(
        self, carried: Mapping[str, Any] | None, *, now: float, space: ResourceSpace
    ) -> dict[str, Vector]:
        """Each name's decayed average at ``now`` from what the last close carried (none: empty)."""
        if not carried:
            return {}
        at = float(carried.get("at", now))
        keep = 2.0 ** (-max(0.0, now - at) / self.half_life)
        avg: Mapping[str, Mapping[str, float]] = carried.get("avg") or {}
        held: Mapping[str, Mapping[str, float]] = carried.get("held") or {}
        out: dict[str, Vector] = {}
        for name in avg.keys() | held.keys():
            before = space.vector(avg.get(name) or {})
            then = space.vector(held.get(name) or {})
            out[name] = before * keep + then * (1.0 - keep)
        return out

    def mixed(self, held: Vector, average: Vector | None) -> Vector:
        """What the order's share is computed on: ``(1 - w) * held + w * average``."""
        if average is None:
            return held * (1.0 - self.weight)
        return held * (1.0 - self.weight) + average * self.weight

    @staticmethod
    def carry(
        *, now: float, averages: Mapping[str, Vector], held: Mapping[str, Vector], space: ResourceSpace
    ) -> dict[str, Any]:
        """What a close carries to the next session: the averages at ``now`` and what is held now."""
        mask = space.share_mask  # (not the pods count)
        return {
            "at": now,
            "avg": {
                name: space.to_dict(v * mask) for name, v in sorted(averages.items()) if (v * mask).any()
            },
            "held": {name: space.to_dict(v * mask) for name, v in sorted(held.items()) if (v * mask).any()},
        }
