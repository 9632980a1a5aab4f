"""A tenant's PodDisruptionBudget does not keep what its queue borrowed: reclaim and preempt take the
pods within every budget first and, where only pods a budget protects could make room, take those past
it (deleted, not evicted, the reason naming the budget), as kube-scheduler's preemption does. Gangs
stay at or above minMember, a queue that allows ``preemptable: "false"`` still protects, and shuffle's
voluntary moves keep honouring budgets (tests/sim/test_disruption_budgets.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pdb, pod, podgroup, priority_class, queue
from tests.sim._eviction_helpers import EXAMPLES, Staged, eviction_config, job
from volsched.framework.config import SchedulerConfig
from volsched.framework.registry import load_config

Obj = dict[str, Any]

#: Every pod of namespace ns-a (an empty selector selects every pod of its namespace).
ALL_OF_NS_A = pdb("keep-all", {}, maxUnavailable=0, ns="ns-a")


def borrowed(*extra: Obj, a_size: int = 4, min_member: int = 1, **a_kwargs: Any) -> Staged:
    """qa's job a fills the one node (4 cpu) while qb is idle; then qb (equal weight: half the node)
    asks for 2 pods."""
    before = [
        node("n1", cpu="4"),
        queue("qa", **a_kwargs.pop("queue", {})),
        *job("a", ns="ns-a", queue="qa", size=a_size, min_member=min_member, **a_kwargs),
        *extra,
    ]
    after = [queue("qb"), *job("b", ns="ns-b", queue="qb", size=2)]
    return Staged(before, after, eviction_config())


def reasons(s: Staged, prefix: str = "") -> list[str]:
    return [e["reason"] for e in s.data["evictions"] if e["pod"].startswith(prefix)]


def test_a_budget_allowing_no_disruption_does_not_keep_what_the_queue_borrowed() -> None:
    """docs/tenancy.md's repro: qb's two pods waited for ever behind qa's four under the budget."""
    s = borrowed(ALL_OF_NS_A)
    assert s.running("ns-a/", before=True) == 4
    assert (s.running("ns-a/"), s.running("ns-b/")) == (2, 2)
    assert len(s.deleted("ns-a/")) == 2 and s.evicted() == [] and s.refused() == []
    for said in reasons(s, "ns-a/"):
        assert (
            said.startswith("reclaim: ns-a/a-")
            and " deleted past its disruption budget on n1 for ns-b/b-" in said
        )
        assert "queue qa holds cpu 4 -> cpu 3" in said or "queue qa holds cpu 3 -> cpu 2" in said
        assert "; past 1 pod protected by PodDisruptionBudget ns-a/keep-all (0 disruptions allowed" in said
        assert said.endswith("): the pods within every budget could not make room"), said
    first, second = reasons(s, "ns-a/")
    assert (
        "keep-all (0 disruptions allowed): " in first
        and "(0 disruptions allowed, 1 taken past it this session)" in second
    )
    assert s.held("qb") <= s.deserved("qb")
    assert s.settled() and s.stays_settled()


def test_without_a_budget_the_same_pods_are_evicted_not_deleted() -> None:
    s = borrowed()
    assert (s.running("ns-a/"), s.running("ns-b/")) == (2, 2)
    assert len(s.evicted("ns-a/")) == 2 and s.deleted() == []
    assert all(" evicted on n1 " in r and "past" not in r for r in reasons(s, "ns-a/"))


def test_pods_within_every_budget_go_first_then_by_priority_creation_and_name() -> None:
    """qa runs two jobs on the one node (5 cpu): c's three pods no budget protects (two of them spare
    above minMember), a's two are protected. Without the budget one of a's would go (made later, it
    comes first in the victims' order); with it, qb's two pods take two of c's."""
    before = [
        node("n1", cpu="5"),
        queue("qa"),
        *job("c", ns="ns-a", queue="qa", size=3),
        *job("a", ns="ns-a", queue="qa", size=2),
        pdb("keep-a", {"matchLabels": {"job-name": "a"}}, maxUnavailable=0, ns="ns-a"),
    ]
    after = [queue("qb"), *job("b", ns="ns-b", queue="qb", size=2)]
    s = Staged(before, after, eviction_config())
    assert sorted(p.rsplit("-", 1)[0] for p in s.evicted("ns-a/")) == ["ns-a/c", "ns-a/c"]
    assert s.deleted() == [] and all("past" not in r for r in reasons(s))
    assert s.running("ns-b/") == 2


def test_only_as_many_go_past_the_budget_as_the_room_needs() -> None:
    """One pod within the budget (keep-3 of 4: one disruption allowed) and one past it."""
    s = borrowed(pdb("keep-3", {}, minAvailable=3, ns="ns-a"))
    assert (s.running("ns-a/"), s.running("ns-b/")) == (2, 2)
    assert (len(s.evicted("ns-a/")), len(s.deleted("ns-a/"))) == (1, 1)
    assert s.refused() == []
    [said] = [e["reason"] for e in s.data["evictions"] if e["pod"] in s.deleted()]
    assert (
        "; past 1 pod protected by PodDisruptionBudget ns-a/keep-3 (1 disruption allowed, 4 healthy of 3"
        " desired, 1 spent this session): the pods within every budget could not make room"
    ) in said, said


def test_a_gang_is_never_taken_below_min_member_whatever_the_budget() -> None:
    s = borrowed(ALL_OF_NS_A, min_member=4)
    assert s.evicted() == s.deleted() == s.refused() == []
    assert (s.running("ns-a/"), s.running("ns-b/")) == (4, 0)


def test_a_queue_that_allows_not_preemptable_pods_still_protects_them() -> None:
    s = borrowed(ALL_OF_NS_A, preemptable=False, queue={"allowNotPreemptable": True})
    assert s.evicted() == s.deleted() == s.refused() == []
    assert (s.running("ns-a/"), s.running("ns-b/")) == (4, 0)


def test_preempt_takes_a_protected_victim_on_the_node_that_goes_past_fewest_budgets() -> None:
    """n1 and n2 (2 cpu) run two low-priority 1-cpu pods each; every pod is protected but one on n2.
    n1 comes first in every other respect; a high-priority 2-cpu pod goes to n2, past one budget, not
    two on n1."""
    before = [
        node("n1", cpu="2"), node("n2", cpu="2"), queue("q"), priority_class("high", 1000),
        priority_class("low", 10), podgroup("a", ns="ns", queue="q", priority_class="low"),
        pod("a-1", ns="ns", cpu="1", group="a", node="n1", labels={"keep": "yes"}),
        pod("a-2", ns="ns", cpu="1", group="a", node="n1", labels={"keep": "yes"}),
        pod("a-3", ns="ns", cpu="1", group="a", node="n2", labels={"keep": "yes"}),
        pod("a-4", ns="ns", cpu="1", group="a", node="n2", labels={"keep": "no"}),
        pdb("keep", {"matchLabels": {"keep": "yes"}}, maxUnavailable=0, ns="ns"),
    ]  # fmt: skip
    after = [
        podgroup("b", ns="ns", queue="q", priority_class="high"),
        pod("new", ns="ns", cpu="2", group="b"),
    ]
    s = Staged(before, after, eviction_config())
    assert (s.evicted(), s.deleted()) == (["ns/a-4"], ["ns/a-3"])
    assert s.data["pods"]["ns/new"]["node"] == "n2"


def test_kube_systems_pods_stay_exempt_past_any_budget() -> None:
    before = [
        node("n1", cpu="4"),
        queue("qa"),
        *job("a", ns="kube-system", queue="qa", size=4),
        pdb("keep-all", {}, maxUnavailable=0, ns="kube-system"),
    ]
    after = [queue("qb"), *job("b", ns="ns-b", queue="qb", size=2)]
    s = Staged(before, after, eviction_config())
    assert s.running("kube-system/", before=True) == 4
    assert s.evicted() == s.deleted() == s.refused() == []
    assert s.running("ns-b/") == 0


def _preempt_named_by_no_plugin(*, with_pdb: bool) -> SchedulerConfig:
    """Preempt where no plugin names victims (priority, gang, conformance and drf switched off for it), with
    or without pdb."""
    text = (EXAMPLES / "reclaim-preempt-scheduler.yaml").read_text()
    text = text.replace(
        'actions: "enqueue, allocate, reclaim, preempt, backfill"',
        'actions: "enqueue, allocate, preempt, backfill"',
    )
    for name in ("gang", "conformance", "drf"):
        text = text.replace(f"  - name: {name}\n", f"  - name: {name}\n    enablePreemptable: false\n")
    if not with_pdb:
        text = text.replace("  - name: pdb\n", "")
    return load_config(text=text)


@pytest.mark.parametrize("with_pdb", [False, True], ids=["without-pdb", "with-pdb"])
def test_a_budget_never_lets_preempt_take_what_no_plugin_names(with_pdb: bool) -> None:
    """Where no plugin answers for preempt's victims, it takes none; pdb, which can only protect, must not
    change that. Its last resort past the budgets returned every candidate when no other plugin answered:
    with pdb, a pod of the low-priority gang a (minMember 2) was deleted past its budget, the gang below
    minMember, where without pdb nothing went."""
    before = [
        node("n1", cpu="2"), queue("q"), priority_class("high", 1000), priority_class("low", 10),
        podgroup("a", ns="ns", queue="q", priority_class="low", min_member=2),
        pod("a-1", ns="ns", cpu="1", group="a", node="n1", labels={"keep": "yes"}),
        pod("a-2", ns="ns", cpu="1", group="a", node="n1", labels={"keep": "yes"}),
        pdb("keep", {"matchLabels": {"keep": "yes"}}, maxUnavailable=0, ns="ns"),
    ]  # fmt: skip
    after = [
        podgroup("b", ns="ns", queue="q", priority_class="high"),
        pod("new", ns="ns", cpu="1", group="b"),
    ]
    s = Staged(before, after, _preempt_named_by_no_plugin(with_pdb=with_pdb))
    assert (s.evicted(), s.deleted()) == ([], [])
    assert s.data["pods"]["ns/new"].get("node") is None
