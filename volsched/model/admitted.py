"""The minMember a gang was admitted and started with: reclaim and preempt keep no more of its pods.

A raise of a running gang's minMember (ours, Volcano's, the Workload API's ``minCount``) counts for
placement, not for protection: eviction keeps ``min(minMember now, minMember started with)`` pods
(:func:`protected`), and a lowered minMember counts at once. :func:`after_session` keeps the record,
:func:`condition` says it in the PodGroup's status (:data:`CONDITION`), :func:`read` reads it back after a
restart. Design: docs/tenancy.md "Raising minMember on a running gang". Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from volsched.model.vocabulary import PodGroupPhase

#: The condition on a PodGroup that says how many of its pods reclaim and preempt keep, and why.
CONDITION = "MinMemberProtected"
#: Its reasons: minMember now is within what the gang started with; or was raised past it since.
AS_ADMITTED = "MinMemberAtStart"
RAISED = "RaisedAfterStart"
#: The tail of the condition's message that carries the record (read back after a restart).
_RECORD = re.compile(r"\(started with minMember (\d+)\)$")


def protected(min_member: int, admitted: int | None) -> int:
    """How many of a gang's pods reclaim and preempt never take it below: its minMember, but no more
    than the minMember it was admitted with (when known)."""
    return min_member if admitted is None or admitted >= min_member else admitted


def after_session(admitted: int | None, *, min_member: int, phase: PodGroupPhase, ready: int) -> int | None:
    """The record once a session gave the gang ``phase`` with ``ready`` pods placed: forgotten when it
    is back to Pending holding nothing; made (the minMember now) when it has left Pending and holds
    pods without one (it started, or is first seen started); else kept, whatever minMember says now."""
    if phase is PodGroupPhase.PENDING:
        return None if ready == 0 else admitted
    return min_member if admitted is None and ready else admitted


def condition(min_member: int, admitted: int | None) -> dict[str, str] | None:
    """The :data:`CONDITION` (without its time) for a gang with this record; None without one."""
    if admitted is None:
        return None
    keep = protected(min_member, admitted)
    if min_member > admitted:
        return {
            "type": CONDITION,
            "status": "True",
            "reason": RAISED,
            "message": (
                f"reclaim and preempt keep {keep} of its pods, not {min_member}: minMember was raised to "
                f"{min_member} after the gang started, and a raise protects more pods only once the gang "
                f"starts anew, admitted again after it holds no pod (started with minMember {admitted})"
            ),
        }
    return {
        "type": CONDITION,
        "status": "True",
        "reason": AS_ADMITTED,
        "message": f"reclaim and preempt keep {keep} of its pods (started with minMember {admitted})",
    }


def read(status: Any) -> int | None:
    """The record a PodGroup's ``status`` carries in its :data:`CONDITION`, or None."""
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    if not isinstance(conditions, list):
        return None
    for cond in conditions:
        if isinstance(cond, Mapping) and cond.get("type") == CONDITION:
            found = _RECORD.search(str(cond.get("message") or ""))
            if found:
                value = int(found.group(1))
                return value if 1 <= value < 2**31 else None
    return None
