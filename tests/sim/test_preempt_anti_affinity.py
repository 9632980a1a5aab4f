"""preempt and reclaim evict the pods that keep a pending pod out through required pod anti-affinity
(its own terms, and running pods' terms that match it), as kube-scheduler's default preemption does:
on a node, only the pods in the way (and what room needs), the least important first; never a pod the
plugins protect (equal or higher priority, a gang at its minMember); nothing when evicting cannot help."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, pod_affinity, pod_term, podgroup, priority_class, queue
from tests.sim._eviction_helpers import Staged, eviction_config
from volsched.framework.messages import OTHER_TERM, render_eviction, render_eviction_told

Obj = dict[str, Any]
WEB = {"app": "web"}
WORK = {"pool": "work"}
PRIORITIES = [priority_class("high", 1000), priority_class("mid", 100), priority_class("low", 10)]


def running(
    name: str,
    on: str,
    *,
    prio: str = "low",
    labels: dict[str, str] | None = None,
    anti: dict[str, str] | None = None,
    created: str = "2026-01-01T00:00:00Z",
    q: str = "q",
    group: str | None = None,
    pod_priority: bool = True,
) -> list[Obj]:
    """A running pod on node ``on``, in the job of its queue and priority (see ``jobs``) or ``group``;
    the pod names the priority class too unless ``pod_priority`` is False (then only its job does)."""
    affinity = pod_affinity(anti=[pod_term(match=anti)]) if anti else None
    return [
        pod(
            name,
            node=on,
            group=group or f"{q}-{prio}",
            priority_class=prio if pod_priority else None,
            labels=labels,
            affinity=affinity,
            created=created,
        )
    ]


def jobs(*queues: str) -> list[Obj]:
    """One PodGroup per queue and priority, each with a pod on node "spares" (the preemptor keeps off
    it): minMember is 1, so the gang lets every pod the tests place go."""
    out: list[Obj] = [node("spares", cpu="64")]
    for q in queues:
        for p in ("low", "mid", "high"):
            out.append(podgroup(f"{q}-{p}", queue=q, priority_class=p, min_member=1))
            out.extend(running(f"{q}-{p}-spare", "spares", prio=p, q=q, created="2025-01-01T00:00:00Z"))
    return out


def preemptor(
    *,
    anti: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    q: str = "q",
    cpu: str = "1",
    pod_priority: bool = True,
) -> list[Obj]:
    affinity = pod_affinity(anti=[pod_term(match=anti)]) if anti else None
    prio = "high" if pod_priority else None
    new = pod("new", group="new", priority_class=prio, labels=labels, affinity=affinity, cpu=cpu)
    new["spec"]["nodeSelector"] = WORK
    return [podgroup("new", queue=q, priority_class="high"), new]


def nodes(*names: str, cpu: str = "4") -> list[Obj]:
    return [node(n, cpu=cpu, labels=WORK) for n in names]


CASES = [
    # (a) its own anti-affinity: a web pod on each node; one goes, on one node, and nothing else there.
    pytest.param(
        [*running("web-1", "n1", labels=WEB), *running("web-2", "n2", labels=WEB), *running("other-2", "n2")],
        preemptor(anti=WEB),
        ["default/web-1"],  # equal priority, age and count: the node whose name sorts first
        "n1",
        id="own-anti-affinity-evicts-only-the-pod-in-the-way",
    ),
    pytest.param(
        [
            *running("web-1", "n1", labels=WEB),
            *running("web-2", "n1", labels=WEB),
            *running("web-3", "n2", labels=WEB),
        ],
        preemptor(anti=WEB),
        ["default/web-3"],
        "n2",
        id="the-node-with-fewer-pods-in-the-way",
    ),
    pytest.param(
        [*running("web-1", "n1", prio="mid", labels=WEB), *running("web-2", "n2", labels=WEB)],
        preemptor(anti=WEB),
        ["default/web-2"],
        "n2",
        id="lowest-priority-pod-in-the-way-first",
    ),
    pytest.param(
        [
            *running("web-1", "n1", labels=WEB, created="2026-01-01T00:00:00Z"),
            *running("web-2", "n2", labels=WEB, created="2026-01-02T00:00:00Z"),
        ],
        preemptor(anti=WEB),
        ["default/web-2"],
        "n2",
        id="equal-priority-the-youngest-first",
    ),
    pytest.param(
        [*running("web-b", "n1", labels=WEB), *running("web-a", "n2", labels=WEB)],
        preemptor(anti=WEB),
        ["default/web-b"],
        "n1",
        id="equal-priority-and-age-by-node-name",
    ),
    # Room too: the pod in the way goes, and then the least important pod that frees enough cpu.
    pytest.param(
        [
            *running("web-1", "n1", labels=WEB),
            *running("mid-1", "n1", prio="mid"),
            *running("low-1", "n1"),
            *running("fill-1", "n1", prio="mid"),
            *running("web-2", "n2", prio="mid", labels=WEB),
            *running("fill-2", "n2", prio="mid", labels={}),
            *running("fill-3", "n2", prio="mid"),
            *running("fill-4", "n2", prio="mid"),
        ],
        preemptor(anti=WEB, cpu="2"),
        ["default/low-1", "default/web-1"],
        "n1",
        id="pod-in-the-way-and-room-lowest-priority-first",
    ),
    # Priority is the jobs' (their PodGroups'), as for room: pods that name no class of their own.
    pytest.param(
        [
            *running("web-1", "n1", prio="mid", labels=WEB, pod_priority=False),
            *running("web-2", "n2", labels=WEB, pod_priority=False),
        ],
        preemptor(anti=WEB, pod_priority=False),
        ["default/web-2"],
        "n2",
        id="priority-of-the-jobs",
    ),
    pytest.param(
        [
            *running("web-1", "n1", prio="high", labels=WEB, pod_priority=False),
            *running("web-2", "n2", prio="high", labels=WEB, pod_priority=False),
        ],
        preemptor(anti=WEB, pod_priority=False),
        [],
        None,
        id="equal-job-priority-stays-though-pods-name-none",
    ),
    # A term that requires no label pair (NotIn): every pod is asked, and only those it selects go.
    pytest.param(
        [
            *running("db-1", "n1", labels={"app": "db"}),
            *running("web-1", "n1", labels=WEB),
            *running("db-2", "n2", prio="mid", labels={"app": "db"}),
            *running("web-2", "n2", labels=WEB),
        ],
        [
            podgroup("new", queue="q", priority_class="high"),
            pod(
                "new",
                group="new",
                priority_class="high",
                node_selector=WORK,
                affinity=pod_affinity(
                    anti=[pod_term(expressions=[{"key": "app", "operator": "NotIn", "values": ["web"]}])]
                ),
            ),
        ],
        ["default/db-1"],
        "n1",
        id="a-term-without-in-evicts-only-the-pods-it-selects",
    ),
    # (b) the symmetric case: a running pod's anti-affinity term matches the pending pod.
    pytest.param(
        [*running("guard-1", "n1", anti=WEB), *running("guard-2", "n2", anti=WEB, prio="mid")],
        preemptor(labels=WEB),
        ["default/guard-1"],
        "n1",
        id="running-pods-anti-affinity-against-it",
    ),
    # (c) nothing the spec forbids: equal or higher priority, or a gang at its minMember, stays.
    pytest.param(
        [*running("web-1", "n1", prio="high", labels=WEB), *running("web-2", "n2", prio="high", labels=WEB)],
        preemptor(anti=WEB),
        [],
        None,
        id="equal-priority-pods-in-the-way-stay",
    ),
    pytest.param(
        [
            podgroup("gang", queue="q", priority_class="low", min_member=2),
            *running("web-1", "n1", labels=WEB, group="gang"),
            *running("web-2", "n2", labels=WEB, group="gang"),
        ],
        preemptor(anti=WEB),
        [],
        None,
        id="gang-at-its-min-member-stays",
    ),
    pytest.param(
        [*running("guard-1", "n1", prio="high", anti=WEB), *running("guard-2", "n2", prio="high", anti=WEB)],
        preemptor(labels=WEB),
        [],
        None,
        id="higher-priority-guards-stay",
    ),
    # (d) evicting would not make it fit: nothing is evicted.
    pytest.param(
        [
            *running("web-1", "n1", labels=WEB),
            *running("web-2", "n2", labels=WEB),
            *running("big-1", "n1", prio="high", labels={}),
            *running("big-2", "n2", prio="high", labels={}),
        ],
        preemptor(anti=WEB, cpu="4"),
        [],
        None,
        id="no-room-even-without-the-pods-in-the-way",
    ),
    pytest.param(
        [*running("web-1", "n1", labels=WEB), *running("web-2", "n2", prio="high", labels=WEB)],
        preemptor(anti={"app": "web"}, labels={"tier": "x"}),
        ["default/web-1"],
        "n1",
        id="only-the-node-whose-pod-in-the-way-may-go",
    ),
]


@pytest.mark.parametrize(("before", "after", "evicted", "placed_on"), CASES)
def test_preempt_evicts_the_pods_in_the_way_of_anti_affinity(
    before: list[Obj], after: list[Obj], evicted: list[str], placed_on: str | None
) -> None:
    s = Staged([*nodes("n1", "n2"), queue("q"), *PRIORITIES, *jobs("q"), *before], after, eviction_config())
    assert s.running("default/", before=True) == sum(1 for o in before if o["kind"] == "Pod") + 3
    assert sorted(s.evicted()) == evicted
    assert s.data["pods"]["default/new"]["node"] == placed_on
    assert {e["action"] for e in s.data["evictions"]} <= {"preempt"}


def test_eviction_reason_names_the_term_and_the_preemptor() -> None:
    before = [*nodes("n1"), queue("q"), *PRIORITIES, *jobs("q"), *running("web-1", "n1", labels=WEB)]
    before += running("other-1", "n1")  # the gang lets one pod go: the one in the way, not the younger
    s = Staged(before, preemptor(anti=WEB), eviction_config())
    [e] = s.data["evictions"]
    assert e["pod"] == "default/web-1"
    assert s.data["pods"]["default/new"]["node"] == "n1"
    assert "default/new" in e["reason"]
    assert e["reason"].endswith("; keeps it out by pod anti-affinity (app=web, kubernetes.io/hostname)")


def test_eviction_reason_names_the_running_pods_term() -> None:
    before = [*nodes("n1"), queue("q"), *PRIORITIES, *jobs("q"), *running("guard", "n1", anti=WEB)]
    s = Staged(before, preemptor(labels=WEB), eviction_config())
    [e] = s.data["evictions"]
    assert e["pod"] == "default/guard"
    assert e["reason"].endswith(
        "; keeps it out by existing pods' anti-affinity (app=web, kubernetes.io/hostname)"
    )


def test_a_victim_of_another_namespace_is_told_the_preemptors_term_without_its_words() -> None:
    # team-b's pod keeps out of default's web pods by a term of its own naming default; the victim,
    # read by whoever reads default, is not told that term (nor the pod: 0dcac1e), only what kind.
    secret = [{"key": "app", "operator": "In", "values": ["web", "team-b-secret"]}]
    term = pod_term(expressions=secret, namespaces=["default"])
    new = pod("new", ns="team-b", group="new", priority_class="high", affinity=pod_affinity(anti=[term]))
    new["spec"]["nodeSelector"] = WORK
    after = [podgroup("new", ns="team-b", queue="q", priority_class="high"), new]
    before = [*nodes("n1"), queue("q"), *PRIORITIES, *jobs("q"), *running("web-1", "n1", labels=WEB)]
    before += running("other-1", "n1")
    s = Staged(before, after, eviction_config())
    [e] = [e for r in s.history for e in r.evictions]
    assert e.pod == "default/web-1"
    whole, told = render_eviction(e), render_eviction_told(e)
    assert whole.endswith(
        "; keeps it out by pod anti-affinity (app in (team-b-secret,web), kubernetes.io/hostname)"
    )
    assert "team-b" not in told, told
    assert told.endswith(f"; keeps it out by pod anti-affinity ({OTHER_TERM})"), told
    # The victim's own term that repels a pod of another namespace is its own to read.
    guard = running("guard", "n1", anti=WEB)
    guard[0]["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "namespaces"
    ] = ["team-b"]
    new = pod("new", ns="team-b", group="new", priority_class="high", labels=WEB)
    new["spec"]["nodeSelector"] = WORK
    after = [podgroup("new", ns="team-b", queue="q", priority_class="high"), new]
    s = Staged([*nodes("n1"), queue("q"), *PRIORITIES, *jobs("q"), *guard], after, eviction_config())
    [e] = [e for r in s.history for e in r.evictions]
    assert e.pod == "default/guard" and "team-b" not in render_eviction_told(e)
    assert render_eviction_told(e).endswith(
        "; keeps it out by existing pods' anti-affinity (app=web, kubernetes.io/hostname)"
    )


def test_pods_in_the_way_on_other_nodes_of_the_zone_are_not_evicted() -> None:
    # Anti-affinity over a zone: the two web pods of zone a run on two nodes; evicting the pods of one
    # node does not let the pod in (victims are taken on the node it goes to), so nothing is evicted.
    zoned = [node(n, cpu="4", labels={**WORK, "zone": "a"}) for n in ("n1", "n2")]
    before = [*zoned, queue("q"), *PRIORITIES, *jobs("q")]
    before += [*running("web-1", "n1", labels=WEB), *running("web-2", "n2", labels=WEB)]
    after = preemptor()
    after[1]["spec"]["affinity"] = pod_affinity(anti=[pod_term("zone", match=WEB)])
    s = Staged(before, after, eviction_config())
    assert s.evicted() == []
    assert s.data["pods"]["default/new"]["node"] is None


def test_a_pod_that_cannot_be_helped_says_why() -> None:
    before = [
        *nodes("n1"),
        queue("q"),
        *PRIORITIES,
        *jobs("q"),
        *running("web-1", "n1", prio="high", labels=WEB),
    ]
    s = Staged(before, preemptor(anti=WEB), eviction_config())
    assert s.evicted() == []
    reason = s.data["podgroups"]["default/new"]["reason"]
    assert "anti-affinity" in reason, reason


def test_reclaim_evicts_the_pods_in_the_way_in_another_queue() -> None:
    # "lender" holds 6 of the 8 cpus; "taker" asks 6 (4 for a pod no node takes), so 4 is each queue's
    # deserved share and lender's 2 beyond it may be reclaimed. There is a free cpu on each node, but
    # lender's web pods keep taker's pod (2 cpus) off both: reclaim evicts one, and that makes room too.
    lender = [podgroup("lender-job", queue="lender", priority_class="high", min_member=1)]
    for on, web in (("n1", "web-1"), ("n2", "web-2")):
        lender += running(web, on, labels=WEB, q="lender", prio="high", group="lender-job")
        lender += [p for i in range(2) for p in running(f"fill-{on}-{i}", on, q="lender", group="lender-job")]
    # (a pod standing alone that an empty node could hold, so it asks a share, but that no node has room
    # for, nor could reclaim make it any: one no node could ever hold asks no share, gang or not)
    nowhere = pod("nowhere", queue="taker", cpu="4")
    before = [*nodes("n1", "n2"), queue("lender", reclaimable=True), queue("taker"), *PRIORITIES, *lender]
    after = [
        *preemptor(anti=WEB, q="taker", cpu="2"),
        nowhere,
    ]
    s = Staged(before, after, eviction_config())
    assert s.running("default/", before=True) == 6
    assert s.evicted() == ["default/web-1"]  # equal priority and age: the node whose name sorts first
    assert {e["action"] for e in s.data["evictions"]} == {"reclaim"}
    assert s.data["pods"]["default/new"]["node"] == "n1"
