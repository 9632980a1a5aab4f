"""A mixed cluster under reclaim and preempt reaches a steady state: evictions stop, and the placements
then stay exactly as they are, session after session (no pod moved back and forth).

The workload exercises every rule of "Lending and taking back" at once: lent capacity taken back by
weight, a queue at its capability preempting inside itself, protected pods next to budgets, gangs never
cut below minMember, a gang with a task no node takes, a half-bound gang, and a Closed queue."""

from __future__ import annotations

from typing import Any

from tests.builders import node, pod, podgroup, priority_class, queue
from tests.sim._eviction_helpers import eviction_config, job
from volsched.framework.messages import render_eviction
from volsched.simulate import Document, Simulator

Obj = dict[str, Any]


def _stage_one() -> list[Obj]:
    """Three nodes of 8 cpu, filled by queue lender, with a few protected pods among its pods."""
    objs: list[Obj] = [*(node(f"n{i}", cpu="8") for i in range(3))]
    objs += [priority_class("high", 1000), priority_class("low", 10)]
    # lender allows its jobs to mark pods not preemptable (tenancy): the keep pods are protected
    objs += [queue("lender", allowNotPreemptable=True), queue("capped", weight=2, capability={"cpu": "6"})]
    objs += [queue("shut")]
    objs += job("lend", ns="ns-l", queue="lender", size=18, min_member=4)
    objs += job("keep", ns="ns-l", queue="lender", size=2, preemptable=False)
    objs += job("low", ns="ns-c", queue="capped", size=4, priority_class="low")
    return objs


def _stage_two() -> list[Obj]:
    """Newcomers: a weighted queue taking back what it is owed, a high-priority job in the capped queue,
    a gang with a task that fits nowhere, a half-bound gang, and an admitted job of a closed queue."""
    objs: list[Obj] = [queue("taker", weight=2)]
    objs += job("take", ns="ns-t", queue="taker", size=10, min_member=2)
    objs += job("high", ns="ns-c", queue="capped", size=2, min_member=2, priority_class="high")
    objs += [podgroup("odd", ns="ns-t", queue="taker", min_member=2)]
    objs += [
        pod("odd-0", ns="ns-t", group="odd", node_selector={"zone": "mars"}, created="2026-01-01T00:00:00Z")
    ]
    objs += [pod(f"odd-{i}", ns="ns-t", group="odd", created=f"2026-01-01T00:00:0{i}Z") for i in (1, 2)]
    objs += [podgroup("half", ns="ns-t", queue="taker", min_member=3, phase="Pending")]
    objs += [pod(f"half-{i}", ns="ns-t", group="half", node="n0" if i == 0 else None) for i in range(3)]
    objs += [
        podgroup("late", ns="ns-s", queue="shut", phase="Inqueue"),
        *[pod(f"late-{i}", ns="ns-s", group="late") for i in range(3)],
    ]
    return objs


def _placements(sim: Simulator) -> dict[str, str]:
    return {k: v.node_name for k, v in sim.state.tasks.items() if v.node_name}


SETTLE_SESSIONS = 40  # the rules settle this workload in 2 sessions; the rest must decide nothing


def test_reclaim_and_preempt_settle_without_ping_pong():
    settle_sessions = SETTLE_SESSIONS
    sim = Simulator([Document(f"one {i}", o) for i, o in enumerate(_stage_one())], eviction_config())
    sim.run(30)
    sim.add([Document(f"two {i}", o) for i, o in enumerate(_stage_two())])
    # queues "shut" becomes Closed only now: its job was admitted while it was open
    sim.add([Document("close", queue("shut", state="Closed"))])

    evictions_per_session: list[int] = []
    flows: set[tuple[str, str]] = set()
    evicted: list[str] = []
    reasons: list[str] = []
    for _ in range(settle_sessions):
        result, _changed = sim.step()
        evictions_per_session.append(len(result.evictions))
        evicted += [e.pod for e in result.evictions]
        reasons += [render_eviction(e) for e in result.evictions]
        for e in result.evictions:
            why = e.reason
            if why.action == "reclaim":  # from the victim's queue to the beneficiary's
                flows.add((why.holder.removeprefix("queue "), why.beneficiary_queue))

    assert sum(evictions_per_session) > 0  # the newcomers did take capacity back
    last_eviction = max(i for i, n in enumerate(evictions_per_session) if n)
    assert last_eviction < settle_sessions - 10, evictions_per_session  # evictions stopped early
    assert not any((b, a) in flows for a, b in flows), flows  # capacity never flowed back
    assert len(evicted) == len(set(evicted))  # no pod evicted twice

    # Steady: several more sessions decide nothing, and every placement stays where it is.
    steady = _placements(sim)
    for _ in range(10):
        result, changed = sim.step()
        assert not changed and not result.binds and not result.evictions
        assert _placements(sim) == steady

    on = lambda prefix: sum(1 for k in steady if k.startswith(prefix))  # noqa: E731
    assert on("ns-c/high-") == 2 and on("ns-c/low-") == 4  # capped queue: high preempted low inside 6
    assert on("ns-l/keep-") == 2  # protected pods were never evicted
    assert on("ns-t/odd-") == 2 and "ns-t/odd-0" not in steady  # gang formed without its odd task
    assert on("ns-t/half-") == 3  # the half-bound gang was completed
    assert not any("for ns-s/" in r for r in reasons)  # the closed queue took nothing from anyone
    assert not any(k.startswith(("ns-l/keep-", "ns-s/")) for k in evicted)
    assert on("ns-l/lend-") >= 4  # the lender's gang kept at least minMember
