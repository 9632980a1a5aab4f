"""What volsched writes into objects, rendered from session results as plain dicts. Pure: no I/O.

PodGroup ``status`` (phase, counts, a ``Scheduled`` condition, ``MinMemberProtected``), Queue
``status`` (state, deserved, allocated as quantities, podgroup counts by phase), the pod conditions ``PodScheduled=False`` and
``DisruptionTarget`` (True, and False again when the eviction did not happen), and events about any object.
Times are passed in, so the same input renders the same output; callers
compare renderings without times to decide whether anything needs writing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from volsched.framework.decisions import PodGroupStatus, QueueStatus
from volsched.model import admitted
from volsched.model.decode import parse_time
from volsched.model.errors import InputError
from volsched.model.resources import CPU, MEMORY, PODS, format_amount
from volsched.model.scalars import rfc3339
from volsched.redaction import redact

SCHEDULER_COMPONENT = "volsched"


def now_rfc3339(ts: float | None = None) -> str:
    """``ts`` (now when None) as an object's timestamp."""
    return rfc3339(time.time() if ts is None else ts)


def quantity(name: str, amount: float) -> str:
    """A Kubernetes quantity string: ``2``, ``1500m``, ``4Gi``, ``123456``."""
    if name == MEMORY or name.endswith("storage"):
        whole = round(amount)
        for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if whole and whole % size == 0:
                return f"{whole // size}{unit}"
        return str(whole)
    if abs(amount - round(amount)) < 1e-9:
        return str(round(amount))
    return f"{round(amount * 1000)}m"


def quantities(amounts: Mapping[str, float] | None) -> dict[str, str]:
    return {k: quantity(k, v) for k, v in sorted((amounts or {}).items()) if k != PODS}


def summary(amounts: Mapping[str, float] | None) -> str:
    """``cpu=12.85 memory=8Gi`` for printer columns (cpu and memory first), written for people as
    ``volsched simulate``, the demo and the dashboard write them (``format_amount``: cores with up to
    three decimals, not ``12850m``; never rounded to whole cores)."""
    values = {k: v for k, v in (amounts or {}).items() if k != PODS}
    order = sorted(values, key=lambda k: (k not in (CPU, MEMORY), k != CPU, k))
    return " ".join(f"{k}={format_amount(k, float(values[k]))}" for k in order) or "-"


def podgroup_condition(status: PodGroupStatus) -> dict[str, str]:
    """The ``Scheduled`` condition: True once minMember pods are placed, else False with the reason."""
    if status.scheduled >= status.min_member or status.phase in ("Running", "Completed"):
        return {
            "type": "Scheduled",
            "status": "True",
            "reason": "Scheduled",
            "message": f"{status.scheduled} of {status.min_member} minimum member(s) placed",
        }
    return {
        "type": "Scheduled",
        "status": "False",
        "reason": "Unschedulable",
        # (redacted as events are: the reason quotes what the gang's pods and objects say)
        "message": redact(status.unschedulable)
        if status.unschedulable
        else f"{status.scheduled} of {status.min_member} minimum member(s) placed",
    }


#: The condition kube-scheduler keeps on Kubernetes' own PodGroups (scheduling.k8s.io): True (terminal) once
#: the gang was placed.
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"


def workload_podgroup_status(
    status: PodGroupStatus, *, scheduled: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``status`` of a Kubernetes PodGroup (``scheduling.k8s.io``) without times, as kube-scheduler
    writes it: the ``PodGroupInitiallyScheduled`` condition (its object has no phase nor counts; terminal:
    ``scheduled``, the one written True, stays), and volsched's ``MinMemberProtected``."""
    cond = (
        dict(scheduled)
        if scheduled is not None
        else {**podgroup_condition(status), "type": INITIALLY_SCHEDULED}
    )
    protection = admitted.condition(status.min_member, status.admitted_min_member)
    return {"conditions": [cond, *([protection] if protection else [])]}


#: The positions in line written to PodGroups: the first this many of each queue (each job that starts
#: moves every one behind it up, and each move is a status write; ``volsched simulate`` and the
#: dashboard show every position).
WRITTEN_POSITIONS = 50


def podgroup_status(status: PodGroupStatus) -> dict[str, Any]:
    """The PodGroup ``status`` without times (see :func:`with_transition_times`): where a waiting group
    stands in its queue and when it is expected to start (null once not known: a merge patch drops
    them), a ``Reserved`` condition while nodes are reserved for it (False, and why, while none can be), and
    ``FieldsIgnored`` naming the fields it sets that volsched does not honour."""
    conditions = [podgroup_condition(status)]
    if status.reservation is not None:
        conditions.append(
            {"type": "Reserved", "status": "True", "reason": "Reserved", "message": status.reservation}
        )
    elif status.no_reservation is not None:
        conditions.append(
            {"type": "Reserved", "status": "False", "reason": "NotPlanned", "message": status.no_reservation}
        )
    protection = admitted.condition(status.min_member, status.admitted_min_member)
    if protection is not None:
        conditions.append(protection)
    return {
        "phase": status.phase,
        "running": status.running,
        "succeeded": status.succeeded,
        "failed": status.failed,
        "pending": status.pending,
        "scheduled": status.scheduled,
        "queuePosition": (
            status.queue_position
            if status.queue_position is not None and status.queue_position <= WRITTEN_POSITIONS
            else None
        ),
        "expectedStart": None if status.expected_start is None else now_rfc3339(status.expected_start),
        "conditions": [*conditions, *ignored_conditions(status.ignored)],
    }


def with_transition_times(
    rendered: Mapping[str, Any], previous: Mapping[str, Any] | None, now: str
) -> dict[str, Any]:
    """Add ``lastTransitionTime`` to each condition: kept when its status did not change, else ``now``."""
    before = {c.get("type"): c for c in (previous or {}).get("conditions") or []}
    conditions = []
    for cond in rendered.get("conditions") or []:
        old = before.get(cond["type"])
        same = old is not None and old.get("status") == cond["status"] and old.get("lastTransitionTime")
        conditions.append({**cond, "lastTransitionTime": old["lastTransitionTime"] if same else now})  # type: ignore[index]
    return {**rendered, "conditions": conditions}


def queue_status(status: QueueStatus) -> dict[str, Any]:
    counts = {phase.lower(): 0 for phase in ("Pending", "Inqueue", "Running", "Unknown", "Completed")}
    for phase, n in status.podgroups.items():
        counts[phase.lower()] = counts.get(phase.lower(), 0) + n
    out: dict[str, Any] = {
        "state": status.state,
        "parent": status.parent or "root",
        "weight": status.weight,
        "allocated": quantities(status.allocated),
        "allocatedSummary": summary(status.allocated),
        **counts,
        "conditions": [queue_condition(status), *ignored_conditions(status.ignored)],
    }
    if status.deserved is not None:
        out["deserved"] = quantities(status.deserved)
        out["deservedSummary"] = summary(status.deserved)
    if status.real_capability is not None:
        out["realCapability"] = quantities(status.real_capability)
    if status.share is not None:
        out["share"] = round(float(status.share), 4)
    return out


def queue_condition(status: QueueStatus) -> dict[str, str]:
    """The ``Valid`` condition: False, with every problem's reason and message, when the queue's parent
    or guarantee could not be honoured as written (a missing parent, a cycle, a guarantee not met)."""
    if not status.problems:
        return {
            "type": "Valid",
            "status": "True",
            "reason": "Valid",
            "message": "parent and guarantee as written",
        }
    return {
        "type": "Valid",
        "status": "False",
        "reason": status.problems[0][0],
        "message": "; ".join(message for _, message in status.problems),
    }


def ignored_conditions(ignored: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    """The ``FieldsIgnored`` condition (True) when the object sets fields volsched deliberately does not
    honour, naming each and why; none otherwise."""
    if not ignored:
        return []
    return [
        {
            "type": "FieldsIgnored",
            "status": "True",
            "reason": "NotHonoured",
            "message": "; ".join(f"{name} is ignored: {why}" for name, why in ignored),
        }
    ]


def pod_unschedulable_condition(message: str, now: str) -> dict[str, Any]:
    """A strategic-merge patch body for the pod's ``status`` (conditions merge by type)."""
    return {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                    "lastProbeTime": None,
                    "lastTransitionTime": now,
                }
            ]
        }
    }


#: The pod condition ``DisruptionTarget``'s reason for each action that evicts (as kube-scheduler's
#: ``PreemptionByScheduler``); any other action gets ``EvictionByScheduler``.
DISRUPTION_REASONS = {
    "preempt": "PreemptionByScheduler",
    "reclaim": "ReclaimByScheduler",
    "shuffle": "RebalancingByScheduler",
}


def disruption_target_condition(action: str, message: str, now: str) -> dict[str, Any]:
    """A strategic-merge patch body for the pod's ``status``: ``DisruptionTarget=True`` saying why."""
    return {
        "status": {
            "conditions": [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": DISRUPTION_REASONS.get(action, "EvictionByScheduler"),
                    "message": message,
                    "lastTransitionTime": now,
                }
            ]
        }
    }


def disruption_target_withdrawn(message: str, why: str, now: str) -> dict[str, Any]:
    """A strategic-merge patch body for the pod's ``status``: ``DisruptionTarget=False``, the eviction
    the True one told of (its ``message``; "" when not known) not having happened (``why``: the
    apiserver's answer, or what stopped it). The pod keeps running."""
    said = f"not evicted ({why})" if why else "not evicted"
    return {
        "status": {
            "conditions": [
                {
                    "type": "DisruptionTarget",
                    "status": "False",
                    "reason": NOT_EVICTED,
                    "message": f"{said}: {message}" if message else said,
                    "lastTransitionTime": now,
                }
            ]
        }
    }


#: ``DisruptionTarget=False``'s reason (:func:`disruption_target_withdrawn`).
NOT_EVICTED = "NotEvicted"


def marked_by_scheduler(pod: Any) -> bool:
    """Whether ``pod`` (raw, pruned or not) carries ``DisruptionTarget=True`` with a reason volsched
    writes (:data:`DISRUPTION_REASONS`, ``EvictionByScheduler``; kube-scheduler's preemption writes the
    first too) and is not being deleted: an eviction was told of that has not happened (yet)."""
    if not isinstance(pod, Mapping):
        return False
    meta, status = pod.get("metadata"), pod.get("status")
    if not isinstance(status, Mapping) or (isinstance(meta, Mapping) and meta.get("deletionTimestamp")):
        return False
    conditions = status.get("conditions")
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and c.get("type") == "DisruptionTarget":
            return c.get("status") == "True" and c.get("reason") in _OUR_REASONS
    return False


_OUR_REASONS = frozenset((*DISRUPTION_REASONS.values(), "EvictionByScheduler"))


def marked_at(pod: Any) -> float | None:
    """When ``pod``'s ``DisruptionTarget`` condition last changed (its ``lastTransitionTime``, Unix
    seconds; the clock of the scheduler that wrote it), or None when it has none or it does not read."""
    status = pod.get("status") if isinstance(pod, Mapping) else None
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and c.get("type") == "DisruptionTarget":
            at = c.get("lastTransitionTime")
            if not isinstance(at, str) or not at:
                return None
            try:
                return parse_time(at, where="DisruptionTarget.lastTransitionTime")
            except InputError:
                return None
    return None


def object_event(
    *,
    kind: str,
    api_version: str,
    namespace: str,
    name: str,
    uid: str,
    reason: str,
    message: str,
    now: str,
    type_: str = "Warning",
    event_name: str,
    count: int = 1,
) -> dict[str, Any]:
    """A core/v1 Event about any object (a ConfigMap with a bad config, a PodGroup that cannot run)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name, "namespace": namespace or "default"},
        "involvedObject": {
            "apiVersion": api_version,
            "kind": kind,
            "namespace": namespace,
            "name": name,
            "uid": uid,
        },
        "reason": reason,
        "message": message,
        "type": type_,
        "count": count,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "source": {"component": SCHEDULER_COMPONENT},
        "reportingComponent": SCHEDULER_COMPONENT,
        "reportingInstance": SCHEDULER_COMPONENT,
    }
