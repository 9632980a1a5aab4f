"""What makes a replica healthy (``/healthz``: :func:`health_problem`) and ready (``/readyz``:
:func:`readiness_problem`), from the facts the operator hands in.

Pure: no clock of its own, no I/O. :mod:`volsched.operator.http` serves the answers; the operator gathers
the facts (the cache synced, the session loop's last tick, the ConfigMap read or rejected).
"""

from __future__ import annotations


def health_problem(*, synced: bool, last_tick: float, period: float, now: float) -> str | None:
    """Why ``/healthz`` answers 503 (the cache is not synced yet, or the session loop stalled), or None.

    ``period``: the longest a healthy session loop goes without a tick (besides a session's own time)."""
    stale = max(30.0, 10 * period)
    if not synced:
        return "cache not synced"
    if last_tick and now - last_tick > stale:
        return "session loop stalled"
    return None


def readiness_problem(
    *, liveness: str | None, config_read: bool, config: str, rejected: str | None = None
) -> str | None:
    """Why ``/readyz`` answers 503, or None: what ``/healthz`` fails on, the scheduler config not read
    yet (sessions are held: a replica that could not read it decides nothing, and a restart would not
    help, so it is no liveness failure), and the user's config rejected with none of theirs loaded
    before (``rejected``: where and why; the built-in default runs meanwhile, which the user did not
    choose). ``config`` names the ConfigMap and why it is unread."""
    problems = [liveness] if liveness else []
    if not config_read:
        problems.append(f"scheduler config not read ({config}): no session runs until it is")
    if rejected:
        problems.append(
            f"scheduler config rejected ({rejected}): the built-in default runs until a config of yours loads"
        )
    return "; ".join(problems) or None
