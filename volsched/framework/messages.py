"""Text for people, rendered from decision data at the edge (the kube writer, the simulator's output).

The engine hands back :class:`~volsched.framework.decisions.EvictionReason` data; this module is the one
place that turns it into words, so the operator's condition and event and the simulator's report say
the same thing. It renders whatever fields the engine filled in and skips the rest. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from volsched.framework.decisions import KEEPS_OUT, Event, Evict, SessionResult
from volsched.model.constraints import OWN_TERMS
from volsched.model.resources import EPS, PODS, format_amount
from volsched.model.scalars import human_duration

#: The event reason a pod gets when an action evicts it (``Evicted`` for any action not listed).
EVENT_REASONS = {"preempt": "Preempted", "shuffle": "Rescheduled"}


def amounts(values: Mapping[str, float], *, pods: bool = False) -> str:
    """``cpu 2, memory 4Gi`` (zero amounts left out, and pods unless ``pods``; ``nothing`` when empty)."""
    parts = [
        f"{name} {format_amount(name, float(v))}"
        for name, v in sorted(values.items(), key=lambda kv: (kv[0] != "cpu", kv[0] != "memory", kv[0]))
        if (pods or name != PODS) and abs(float(v)) > EPS
    ]
    return ", ".join(parts) or "nothing"


def _who(job: str, priority: int | None, *more: str) -> str:
    parts = [f"job {job}"] if job else []
    if priority is not None:
        parts.append(f"priority {priority}")
    parts.extend(m for m in more if m)
    return f" ({', '.join(parts)})" if parts else ""


#: What became of a victim taken past its disruption budget (``Evict.deletes``): the outcome's detail,
#: and the verb of its reason.
DELETED = "deleted past its disruption budget"


def render_eviction(eviction: Evict) -> str:
    """One line naming the action, the victim, the beneficiary and the numbers, e.g. ``preempt: ns/a-0
    (job ns/a, priority 10) evicted on n1 for ns/b-0 (job ns/b, priority 1000, queue q, needs cpu 1);
    frees cpu 1; job ns/a holds cpu 8 -> cpu 7``."""
    r = eviction.reason
    done = DELETED if r.past_budget else "evicted"
    text = f"{r.action}: {eviction.pod}{_who(r.victim_job, r.priority)} {done}"
    if eviction.node:
        text += f" on {eviction.node}"
    if r.beneficiary:
        queue = f"queue {r.beneficiary_queue}" if r.beneficiary_queue else ""
        needs = f"needs {amounts(r.needs)}" if r.needs else ""
        text += f" for {r.beneficiary}{_who(r.beneficiary_job, r.beneficiary_priority, queue, needs)}"
    clauses = []
    if r.frees:
        clauses.append(f"frees {amounts(r.frees)}")
    if r.holder:
        clauses.append(f"{r.holder} holds {amounts(r.holds_before)} -> {amounts(r.holds_after)}")
    clauses.extend(
        f"{label} {value if isinstance(value, str) else amounts(value)}" for label, value in r.facts
    )
    if r.ran > 0:
        on = f" on {amounts(r.frees)}" if r.frees else ""
        clauses.append(f"throws away {human_duration(r.ran)} of work{on}")
    if r.detail:
        clauses.append(r.detail)
    if r.past_budget:
        clauses.append(f"past {'; '.join(r.past_budget)}: the pods within every budget could not make room")
    return "; ".join([text, *clauses])


#: What a victim is told of the pod placed in its stead when that pod is of another namespace.
OTHER_NAMESPACE = "a pod of another namespace"
#: What a victim is told of that pod's own term it kept the pod out by (its anti-affinity, say).
OTHER_TERM = "a term of another namespace"


def render_eviction_told(eviction: Evict) -> str:
    """:func:`render_eviction` as the victim's namespace reads it (its ``DisruptionTarget`` condition, its
    event, the dashboard of a caller who may list its pods): a beneficiary of another namespace is not
    named, nor is its job (:data:`OTHER_NAMESPACE`, with its priority, queue and needs), nor its own
    terms the victim kept it out by (:data:`OTHER_TERM`: its anti-affinity's selector), as kube-scheduler
    names no preemptor to its victim (kubernetes#114882): one tenant's pod names are not another's to
    read. The operator's log and the simulator's report, read by who holds the whole cluster, say all."""
    r = eviction.reason
    if not r.beneficiary or r.beneficiary.partition("/")[0] == eviction.pod.partition("/")[0]:
        return render_eviction(eviction)
    facts = tuple((label, _term_unsaid(value) if label == KEEPS_OUT else value) for label, value in r.facts)
    unnamed = replace(r, beneficiary=OTHER_NAMESPACE, beneficiary_job="", facts=facts)
    return render_eviction(replace(eviction, reason=unnamed))


def _term_unsaid(reason: str | Mapping[str, float]) -> str | Mapping[str, float]:
    """A filter's reason the victim kept the beneficiary out by, without the term it quotes when that
    term is the beneficiary's own (``pod anti-affinity (a term of another namespace)``); the placed
    pods' terms that repel it (the victim's own) are said whole."""
    for head in OWN_TERMS:
        if isinstance(reason, str) and reason.startswith(f"{head} ("):
            return f"{head} ({OTHER_TERM})"
    return reason


def eviction_event_reason(eviction: Evict) -> str:
    return EVENT_REASONS.get(eviction.action, "Evicted")


def eviction_events(result: SessionResult) -> list[Event]:
    """One Normal event per eviction of a session, on the evicted pod."""
    out = []
    for e in result.evictions:
        ns, _, name = e.pod.partition("/")
        out.append(
            Event(
                kind="Pod",
                namespace=ns,
                name=name,
                reason=eviction_event_reason(e),
                message=render_eviction(e),
                type="Normal",
            )
        )
    return out
