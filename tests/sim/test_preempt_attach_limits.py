"""preempt and reclaim free CSI attach capacity, as kube-scheduler's preemption dry run does: a pod kept off
every node only by a CSINode's attach limit (``allocatable.count``) evicts, on one node, the pods whose
volumes free the attachment it needs (a volume frees one only once every pod there mounting it goes), and
what room needs besides, the least important first; never a pod the plugins protect (equal or higher
priority, a gang at its minMember); nothing when evicting cannot help."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import csi_node, node, pod, podgroup, priority_class, pv, pvc, queue, run
from tests.sim._eviction_helpers import Staged, eviction_config

Obj = dict[str, Any]
DRIVER = "csi.example.com"
WORK = {"pool": "work"}
PRIORITIES = [priority_class("high", 1000), priority_class("mid", 100), priority_class("low", 10)]


def volumes(*names: str) -> list[Obj]:
    """A volume of the driver and a claim bound to it, for each name."""
    out: list[Obj] = []
    for n in names:
        out += [pv(f"v-{n}", csi=DRIVER), pvc(n, volume=f"v-{n}")]
    return out


def running(
    name: str,
    on: str,
    *,
    prio: str = "low",
    claims: list[str] | None = None,
    cpu: str = "1",
    created: str = "2026-01-01T00:00:00Z",
    q: str = "q",
    group: str | None = None,
) -> Obj:
    """A running pod on node ``on``, in the job of its queue and priority (see ``jobs``) or ``group``."""
    return pod(
        name,
        node=on,
        group=group or f"{q}-{prio}",
        priority_class=prio,
        claims=claims,
        cpu=cpu,
        created=created,
        phase="Running",
    )


def jobs(*queues: str) -> list[Obj]:
    """One PodGroup per queue and priority, each with a pod on node "spares" (the preemptor keeps off it):
    minMember is 1, so the gang lets every pod the tests place go."""
    out: list[Obj] = [node("spares", cpu="64")]
    for q in queues:
        for p in ("low", "mid", "high"):
            out.append(podgroup(f"{q}-{p}", queue=q, priority_class=p, min_member=1))
            out.append(running(f"{q}-{p}-spare", "spares", prio=p, q=q, created="2025-01-01T00:00:00Z"))
    return out


def preemptor(claim: str = "mine", *, q: str = "q", cpu: str = "1") -> list[Obj]:
    new = pod("new", group="new", priority_class="high", claims=[claim], cpu=cpu, node_selector=WORK)
    return [podgroup("new", queue=q, priority_class="high"), *volumes(claim), new]


def work_nodes(*names: str, cpu: str = "4", limit: int = 1) -> list[Obj]:
    out: list[Obj] = []
    for n in names:
        out += [node(n, cpu=cpu, labels=WORK), csi_node(n, csi_example_com=limit)]
    return out


CASES = [
    pytest.param(
        [
            *volumes("a", "b"),
            running("holder-1", "n1", claims=["a"], created="2026-01-01T00:00:00Z"),
            running("idle-1", "n1", created="2026-01-02T00:00:00Z"),  # younger: would go first for room
            running("holder-2", "n2", prio="mid", claims=["b"]),
        ],
        ["default/holder-1"],
        "n1",
        "1",
        id="only-the-pod-whose-volume-frees-the-attachment",
    ),
    pytest.param(
        [
            *volumes("a", "b"),
            running("holder-1", "n1", prio="mid", claims=["a"]),
            running("holder-2", "n2", claims=["b"]),
        ],
        ["default/holder-2"],
        "n2",
        "1",
        id="the-lowest-priority-holder-first",
    ),
    pytest.param(
        [
            *volumes("a", "b"),
            running("shared-1", "n1", claims=["a"]),
            running("shared-2", "n1", claims=["a"]),
            running("holder-2", "n2", prio="mid", claims=["b"]),
            running("other-2", "n2"),
        ],
        ["default/shared-1", "default/shared-2"],
        "n1",
        "1",
        id="a-volume-frees-its-attachment-once-every-pod-mounting-it-goes",
    ),
    # Room too (it asks 3 cpus): the holder goes, then the least important pod that frees enough cpu.
    pytest.param(
        [
            *volumes("a", "b"),
            running("holder-1", "n1", claims=["a"], cpu="2", created="2026-01-01T00:00:00Z"),
            running("low-1", "n1", created="2026-01-02T00:00:00Z"),
            running("mid-1", "n1", prio="mid"),
            running("keep-2", "n2", prio="high", claims=["b"]),
        ],
        ["default/holder-1", "default/low-1"],
        "n1",
        "3",
        id="the-holder-and-room-the-least-important-first",
    ),
    pytest.param(
        [
            *volumes("a", "b"),
            running("holder-1", "n1", prio="high", claims=["a"]),
            running("holder-2", "n2", prio="high", claims=["b"]),
            running("low-1", "n1"),
        ],
        [],
        None,
        "1",
        id="equal-priority-holders-stay",
    ),
    pytest.param(
        [
            *volumes("a", "b"),
            podgroup("gang", queue="q", priority_class="low", min_member=2),
            running("holder-1", "n1", claims=["a"], group="gang"),
            running("holder-2", "n2", claims=["b"], group="gang"),
        ],
        [],
        None,
        "1",
        id="a-gang-at-its-min-member-stays",
    ),
]


@pytest.mark.parametrize(("before", "evicted", "placed_on", "cpu"), CASES)
def test_preempt_frees_an_attachment(
    before: list[Obj], evicted: list[str], placed_on: str | None, cpu: str
) -> None:
    s = Staged(
        [*work_nodes("n1", "n2"), queue("q"), *PRIORITIES, *jobs("q"), *before],
        preemptor(cpu=cpu),
        eviction_config(),
    )
    assert s.running("default/", before=True) == sum(1 for o in before if o["kind"] == "Pod") + 3
    assert sorted(s.evicted()) == evicted
    assert s.data["pods"]["default/new"]["node"] == placed_on
    assert {e["action"] for e in s.data["evictions"]} <= {"preempt"}


def test_the_eviction_reason_says_it_frees_an_attachment() -> None:
    before = [*work_nodes("n1"), queue("q"), *PRIORITIES, *jobs("q"), *volumes("a")]
    before.append(running("holder", "n1", claims=["a"]))
    s = Staged(before, preemptor(), eviction_config())
    [e] = s.data["evictions"]
    assert e["pod"] == "default/holder"
    assert s.data["pods"]["default/new"]["node"] == "n1"
    assert e["reason"].endswith(f"; frees an attachment of {DRIVER}"), e["reason"]


def test_a_pod_no_eviction_can_help_says_why() -> None:
    before = [*work_nodes("n1"), queue("q"), *PRIORITIES, *jobs("q"), *volumes("a")]
    before.append(running("holder", "n1", prio="high", claims=["a"]))
    s = Staged(before, preemptor(), eviction_config())
    assert s.evicted() == []
    reason = s.data["podgroups"]["default/new"]["reason"]
    assert f"exceed max volume count of {DRIVER}" in reason, reason


def test_reclaim_frees_an_attachment_in_another_queue() -> None:
    # "lender" holds 6 of 8 cpus, "taker" asks 6 (4 for a pod no node has room for), so lender's 2 beyond
    # its deserved 4 may be reclaimed. Each node has a cpu free, but lender's volumes fill both nodes'
    # attachments: reclaim evicts one holder, which makes room too (equal priority and age: the node whose
    # name sorts first).
    lender = [podgroup("lender-job", queue="lender", priority_class="high", min_member=1), *volumes("a", "b")]
    for on, claim in (("n1", "a"), ("n2", "b")):
        lender.append(
            running(f"holder-{on}", on, claims=[claim], q="lender", prio="high", group="lender-job")
        )
        lender += [running(f"fill-{on}-{i}", on, q="lender", group="lender-job") for i in range(2)]
    before = [
        *work_nodes("n1", "n2"),
        queue("lender", reclaimable=True),
        queue("taker"),
        *PRIORITIES,
        *lender,
    ]
    after = [*preemptor(q="taker", cpu="2"), pod("nowhere", queue="taker", cpu="4")]
    s = Staged(before, after, eviction_config())
    assert s.running("default/", before=True) == 6
    assert s.evicted() == ["default/holder-n1"]
    assert {e["action"] for e in s.data["evictions"]} == {"reclaim"}
    assert s.data["pods"]["default/new"]["node"] == "n1"


def test_a_pod_waits_for_a_terminating_pods_volume_to_be_detached() -> None:
    """A pod being deleted keeps its volume attached until it is gone: a pod that needs its attachment
    may be pipelined onto it (as onto the capacity it releases), never bound beside it."""
    going = running("going", "n1", claims=["a"])
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    new = pod("new", claims=["b"], node_selector=WORK)
    data = run([*work_nodes("n1"), *volumes("a", "b"), going, new])
    assert data["pods"]["default/new"]["node"] is None
