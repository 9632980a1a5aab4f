"""Each action alone on a small snapshot: a session opens with the reclaim/preempt example's tiers, one
action runs, and the binds, evictions, admissions and PodGroup phases it decided are compared with the case's.
The scenario tests (tests/sim) run whole sessions over many cycles; these name the piece that broke."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.builders import PRIORITIES, gang, node, pod, podgroup, priority_class, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import Code, SessionResult, Status, render
from volsched.framework.registry import load_config, make_actions
from volsched.framework.runner import close_session, open_session
from volsched.framework.session import Session
from volsched.model.vocabulary import Task

Obj = dict[str, Any]
TIERS = (Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml").read_text()


def run_action(
    action: str, objects: list[Obj], *, on_open: Callable[[Session], None] | None = None
) -> SessionResult:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    config = load_config(text=re.sub(r"^actions: .*$", f'actions: "{action}"', TIERS, flags=re.M))
    session = open_session(state.snapshot(now=1.0), config)
    if on_open is not None:
        on_open(session)
    (only,) = make_actions(config)
    only.execute(session)
    return close_session(session)


def running(
    name: str, *, size: int, on: str, ns: str = "ns", q: str = "q", prio: str | None = None
) -> list[Obj]:
    """A PodGroup (minMember 1) whose ``size`` pods of 1 cpu run on node ``on``."""
    return [
        podgroup(name, ns=ns, queue=q, min_member=1, phase="Running", priority_class=prio),
        *(
            pod(f"{name}-{i}", ns=ns, cpu="1", group=name, node=on, priority_class=prio, owner=f"ReplicaSet/{name}")
            for i in range(size)
        ),
    ]  # fmt: skip


CASES = [
    pytest.param(
        "enqueue",
        [node("n1", cpu="4"), queue("q"), *gang("g", size=2, phase="Pending")],
        {}, set(), {"ns/g": "Inqueue"}, {"ns/g"},
        id="enqueue-admits-a-gang-whose-minimum-fits",
    ),
    pytest.param(
        "enqueue",
        [node("n1", cpu="4"), queue("q"), *gang("g", size=2, phase="Pending", min_resources={"cpu": "40"})],
        {}, set(), {"ns/g": "Pending"}, set(),
        id="enqueue-holds-back-a-gang-whose-min-resources-exceed-the-cluster",
    ),
    pytest.param(
        "allocate",
        [node("n1", cpu="4"), queue("q"), *gang("g", size=2, cpu="2", phase="Inqueue")],
        {"ns/g-0": "n1", "ns/g-1": "n1"}, set(), {"ns/g": "Running"}, set(),
        id="allocate-binds-an-admitted-gang-whole",
    ),
    pytest.param(
        "allocate",
        [node("n1", cpu="4"), queue("q"), *gang("g", size=3, cpu="2", phase="Inqueue")],
        {}, set(), {"ns/g": "Inqueue"}, set(),
        id="allocate-binds-nothing-of-a-gang-that-does-not-fit-whole",
    ),
    pytest.param(
        "allocate",
        [node("n1", cpu="4"), queue("q"), *gang("g", size=2, cpu="2", phase="Pending")],
        {}, set(), {"ns/g": "Pending"}, set(),
        id="allocate-leaves-a-gang-enqueue-has-not-admitted",
    ),
    pytest.param(
        "backfill",
        [node("n1", cpu="4"), queue("q"), *gang("g", size=1, cpu="4", phase="Inqueue"),
         podgroup("be", ns="ns", queue="q", phase="Inqueue"), pod("be", ns="ns", cpu=None, group="be")],
        {"ns/be": "n1"}, set(), {}, set(),
        id="backfill-places-only-the-pod-that-requests-nothing",
    ),
    pytest.param(
        "preempt",
        [node("n1", cpu="4"), queue("q"), *PRIORITIES, *running("lo", size=4, on="n1", prio="low"),
         *gang("hi", size=1, cpu="2", phase="Inqueue", priority_class="high")],
        {}, {"ns/lo-2", "ns/lo-3"}, {}, set(),
        id="preempt-evicts-just-enough-lower-priority-pods-of-the-same-queue",
    ),
    pytest.param(
        "preempt",
        [node("n1", cpu="4"), queue("q"), *PRIORITIES, *running("hi-run", size=4, on="n1", prio="high"),
         *gang("lo", size=1, cpu="2", phase="Inqueue", priority_class="low")],
        {}, set(), {}, set(),
        id="preempt-never-evicts-for-a-lower-priority-job",
    ),
    pytest.param(
        "reclaim",
        [node("n1", cpu="8"), queue("qa"), queue("qb"), *running("a", size=8, on="n1", ns="ns-a", q="qa"),
         podgroup("b", ns="ns-b", queue="qb", phase="Inqueue"), *(pod(f"b-{i}", ns="ns-b", group="b") for i in range(4))],
        {}, {"ns-a/a-4", "ns-a/a-5", "ns-a/a-6", "ns-a/a-7"}, {}, set(),
        id="reclaim-takes-back-what-another-queue-holds-beyond-its-share",
    ),
    pytest.param(
        "reclaim",
        [node("n1", cpu="8"), queue("qa", reclaimable=False), queue("qb"),
         *running("a", size=8, on="n1", ns="ns-a", q="qa"),
         podgroup("b", ns="ns-b", queue="qb", phase="Inqueue"), *(pod(f"b-{i}", ns="ns-b", group="b") for i in range(4))],
        {}, set(), {}, set(),
        id="reclaim-leaves-a-queue-that-is-not-reclaimable",
    ),
    pytest.param(
        "preempt",
        [node("n1", cpu="4"), queue("q"), *PRIORITIES, *running("lo", size=4, on="n1", prio="low"),
         *gang("hi", size=1, cpu="2", phase="Pending", priority_class="high")],
        {}, {"ns/lo-2", "ns/lo-3"}, {"ns/hi": "Inqueue"}, {"ns/hi"},
        id="preempt-admits-the-pending-gang-it-made-room-for",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("action", "objects", "binds", "evicted", "phases", "admits"), CASES)
def test_one_action_decides_exactly_these_binds_evictions_and_admissions(
    action: str,
    objects: list[Obj],
    binds: dict[str, str],
    evicted: set[str],
    phases: dict[str, str],
    admits: set[str],
) -> None:
    result = run_action(action, objects)
    assert {a.job for a in result.admits} == admits
    assert {a.phase for a in result.admits} <= {"Inqueue"}
    assert {b.pod: b.node for b in result.binds} == binds
    assert {e.pod for e in result.evictions} == evicted
    assert {e.action for e in result.evictions} <= {action}
    for key, phase in phases.items():
        assert result.podgroups[key].phase == phase, result.podgroups[key]


REFUSED = "PodGroup ns/g"
#: Three full nodes where preempt may take one 1-cpu pod each (the other is the gang's minMember; the
#: rest is queue o's): no task of 2 cpu or more fits on any of them by preempting.
SPARE_ONE_CPU_EACH = [node(n, cpu="4") for n in ("n1", "n2", "n3")] + [queue("q"), queue("o"), *PRIORITIES] + [
    o for n in ("n1", "n2", "n3")
    for o in (*running(f"hi-{n}", size=2, on=n, q="o", prio="high"), *running(f"lo-{n}", size=2, on=n))
]  # fmt: skip
REJECTIONS = [
    pytest.param(
        "enqueue",
        [node("n1", cpu="4"), *gang("g", size=2, phase="Pending")],
        [(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "enqueue")],
        "queue q does not exist",
        id="enqueue-refuses-a-gang-of-a-missing-queue-for-good",
    ),
    pytest.param(
        "enqueue",
        [node("n1", cpu="4"), queue("q"), *gang("g", size=2, phase="Pending", min_resources={"cpu": "40"})],
        [(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gang"), (Code.UNSCHEDULABLE, "overcommit")],
        "can never run as it stands: its minResources ask cpu 40, more than all the ready nodes have (cpu 4); "
        "not admitted to queue q: overcommit: minResources cpu 40 > room 4.8"
        " (cluster 4 x 1.2 - used 0 - admitted 0)",
        id="enqueue-says-which-plugin-voted-the-gang-out",
    ),
    pytest.param(
        "allocate",
        [node("n1", cpu="4"), queue("q"), *gang("g", size=3, cpu="2", phase="Inqueue")],
        [(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gang"), (Code.UNSCHEDULABLE, "proportion"),
         (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "allocate")],
        "can never run as it stands: its minMember pods ask cpu 6, more than all the ready nodes have (cpu 4); "
        "gang g: 2/3 tasks could be placed (minMember 3): task g-2: proportion: queue q would exceed"
        " realCapability cpu 4 (allocated 4 + request 2); set aside, as the nodes could not hold it even"
        " empty: tried again once a node joins, leaves or changes, the gang or its queue changes, or in 5m;"
        " the figures here are those of its last try",
        id="allocate-names-the-plugin-that-refused-the-gangs-last-task",
    ),
    pytest.param(
        "preempt",
        [node("n1", cpu="4"), queue("q"), *PRIORITIES, *running("hi-run", size=4, on="n1", prio="high"),
         *gang("g", size=1, cpu="2", phase="Inqueue", priority_class="low")],
        [(Code.UNSCHEDULABLE, "preempt")],
        "preempt: task g-0: preempt: no pod may be evicted for it on the 1 node(s) it could use",
        id="preempt-says-why-it-could-not-help",
    ),
    pytest.param(
        "preempt",
        [*SPARE_ONE_CPU_EACH, *gang("g", size=1, cpu="3", phase="Inqueue", priority_class="low")],
        [(Code.UNSCHEDULABLE, "preempt")],
        "preempt: task g-0: preempt: on the 3 node(s) with pods it may take, evicting all of them would not"
        " make room: at most cpu 2 free of 3 on any one node",
        id="preempt-says-how-much-the-most-any-node-could-free-falls-short",
    ),
    pytest.param(
        "preempt",
        [*SPARE_ONE_CPU_EACH, node("n4", cpu="4"), *running("hi-n4", size=2, on="n4", prio="high"),
         *running("lo-n4", size=2, on="n4"), *gang("g", size=1, cpu="3", phase="Inqueue", priority_class="low")],
        [(Code.UNSCHEDULABLE, "preempt")],
        "preempt: task g-0: preempt: evicting the 2 pod(s) that may be evicted on the 1 node(s) where that"
        " could make room would not make room for it on any one of them; on the other 3 node(s) with pods it"
        " may take, evicting all of them would not make room: at most cpu 2 free of 3 on any one node",
        id="preempt-counts-the-victims-named-where-it-looked-and-the-shortfall-elsewhere",
    ),
    pytest.param(
        "preempt",
        [node("n1", cpu="8", memory="4Gi"), node("n2", cpu="4", memory="8Gi"), queue("q"), queue("o"),
         *PRIORITIES, podgroup("a", ns="ns", queue="q", min_member=1, phase="Running"),
         *(pod(f"a-{i}", ns="ns", cpu="2", group="a", node="n1") for i in range(2)),
         podgroup("b", ns="ns", queue="o", min_member=1, phase="Running"),
         pod("b-0", ns="ns", cpu="4", memory="4Gi", group="b", node="n1"),
         podgroup("c", ns="ns", queue="o", min_member=1, phase="Running"),
         pod("c-0", ns="ns", cpu="3.5", group="c", node="n2"),
         podgroup("d", ns="ns", queue="q", min_member=1, phase="Running"),
         pod("d-0", ns="ns", cpu="0.5", group="d", node="n2"),
         podgroup("g", ns="ns", queue="q", min_member=1, phase="Inqueue", priority_class="low"),
         pod("g-0", ns="ns", cpu="3", memory="2Gi", group="g", priority_class="low")],
        [(Code.UNSCHEDULABLE, "preempt")],
        "preempt: task g-0: preempt: on the 2 node(s) with pods it may take, evicting all of them would not"
        " make room: cpu 3, memory 2Gi are never free together on one node (the most on any node: cpu 4,"
        " memory 8Gi)",
        id="preempt-says-when-each-resource-is-there-but-never-all-on-one-node",
    ),
    pytest.param(
        "preempt",
        # n1 has the cpu but runs more pods than it may (evicting a-0 leaves no pod slot); n2 has slots but
        # not the cpu: the pod count is what falls short on n1, and the message must say so.
        [node("n1", cpu="8", pods="2"), node("n2", cpu="4"), queue("q"), queue("o"), *PRIORITIES,
         podgroup("a", ns="ns", queue="q", min_member=1, phase="Running"),
         pod("a-0", ns="ns", cpu="1", group="a", node="n1"),
         podgroup("b", ns="ns", queue="o", min_member=1, phase="Running"),
         *(pod(f"b-{i}", ns="ns", cpu="0.5", group="b", node="n1") for i in range(2)),
         pod("b-2", ns="ns", cpu="3.5", group="b", node="n2"),
         podgroup("d", ns="ns", queue="q", min_member=1, phase="Running"),
         pod("d-0", ns="ns", cpu="0.5", group="d", node="n2"),
         podgroup("g", ns="ns", queue="q", min_member=1, phase="Inqueue", priority_class="low"),
         pod("g-0", ns="ns", cpu="3", group="g", priority_class="low")],
        [(Code.UNSCHEDULABLE, "preempt")],
        "preempt: task g-0: preempt: on the 2 node(s) with pods it may take, evicting all of them would not"
        " make room: cpu 3, pods 1 are never free together on one node (the most on any node: cpu 7,"
        " pods 109)",
        id="preempt-names-the-pod-count-when-that-is-what-falls-short",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("action", "objects", "statuses", "text"), REJECTIONS)
def test_a_refusal_is_a_status_with_its_code_and_plugin_rendered_once_at_the_edge(
    action: str, objects: list[Obj], statuses: list[tuple[Code, str]], text: str
) -> None:
    result = run_action(action, objects)
    refused = result.rejections[REFUSED]
    assert [(s.code, s.plugin) for s in refused] == statuses
    assert render(refused) == text
    assert result.podgroups["ns/g"].unschedulable == text
    assert [e.message for e in result.events if e.object == REFUSED] == [text]


STATUSES = [
    pytest.param(Status(Code.UNSCHEDULABLE, "gang", ("a", "b")), None, "a; b", id="reasons-join-in-order"),
    pytest.param(Status(Code.ERROR, "x"), None, "", id="no-reasons-render-empty"),
    pytest.param(
        Status(Code.UNSCHEDULABLE, "proportion", ("proportion: q is full", "and more")), "task t-0",
        "task t-0: proportion: q is full; and more", id="about-prefixes-the-first-reason",
    ),
    pytest.param(Status(Code.UNSCHEDULABLE, "allocate"), "gang g", "gang g", id="about-nothing-is-the-subject"),
]  # fmt: skip


@pytest.mark.parametrize(("status", "about", "text"), STATUSES)
def test_a_status_renders_its_reasons_and_keeps_code_and_plugin(
    status: Status, about: str | None, text: str
) -> None:
    said = status.about(about) if about is not None else status
    assert said.render() == text
    assert (said.code, said.plugin) == (status.code, status.plugin)


def test_statuses_render_together_as_one_line() -> None:
    first = Status(Code.UNSCHEDULABLE, "allocate", ("gang g: 0/2 tasks could be placed",))
    later = Status(Code.UNSCHEDULABLE, "reclaim", ("reclaim: nothing to take",))
    assert render([first, later]) == "gang g: 0/2 tasks could be placed; reclaim: nothing to take"


def preempt_counting_asks(objects: list[Obj]) -> tuple[list[set[str]], SessionResult]:
    """Run preempt alone over ``objects``; returns the nodes of each candidate list the plugins were
    asked about (``session.preemptable``), in order, and the session's result."""
    asked: list[set[str]] = []

    def count(session: Session) -> None:
        preemptable = session.preemptable

        def counted(preemptor: Task, candidates: list[Task]) -> list[Task]:
            asked.append({t.node_name or "" for t in candidates})
            return preemptable(preemptor, candidates)

        session.preemptable = counted  # type: ignore[method-assign]

    return asked, run_action("preempt", objects, on_open=count)


def test_preempt_asks_the_plugins_only_on_nodes_where_evicting_could_make_room() -> None:
    """n1..n3 hold 2 cpu preempt may take at most (the plugins name 1), n4 holds 4: a 3-cpu task is
    tried on n4 alone, the others are ruled out by the numbers, over all nodes at once."""
    asked, result = preempt_counting_asks(
        [*SPARE_ONE_CPU_EACH, node("n4", cpu="4"), *running("lo-n4", size=4, on="n4"),
         *gang("g", size=1, cpu="3", phase="Inqueue", priority_class="low")]
    )  # fmt: skip
    assert asked == [{"n4"}]
    assert len(result.evictions) == 3
    assert {e.node for e in result.evictions} == {"n4"}


def test_preempt_that_fails_does_not_ask_the_plugins_on_the_nodes_the_numbers_ruled_out() -> None:
    """As above, but n4 holds two pods of a higher priority: the plugins name one pod there, too few, and
    the task fails; n1..n3 are never walked pod by pod to say so (the numbers say it)."""
    asked, result = preempt_counting_asks(
        [*SPARE_ONE_CPU_EACH, node("n4", cpu="4"), *running("hi-n4", size=2, on="n4", prio="high"),
         *running("lo-n4", size=2, on="n4"),
         *gang("g", size=1, cpu="3", phase="Inqueue", priority_class="low")]
    )  # fmt: skip
    assert asked == [{"n4"}]
    assert not result.evictions
    assert "at most cpu 2 free of 3" in render(result.rejections[REFUSED])


def test_preempt_takes_the_next_job_by_its_share_after_earlier_preemptions_took_its_pods() -> None:
    """A (priority 100) takes three of y's pods on n1, so y (4 cpu of 9 before) holds less than x (2):
    of the two equal jobs y comes first now, and takes v's one spare pod; x, ahead of y before, finds
    none left. Taken in the order the jobs had before A's turn, x would get it."""
    objects = [
        node("n1", cpu="4"), node("n2", cpu="3"), node("n3", cpu="2"), queue("q"),
        priority_class("top", 100), priority_class("mid", 10),
        podgroup("y", ns="ns", queue="q", min_member=1, priority_class="mid"),
        *(pod(f"y-{i}", ns="ns", group="y", node="n1", priority_class="mid") for i in range(4)),
        pod("y-4", ns="ns", group="y", priority_class="mid"),
        podgroup("x", ns="ns", queue="q", min_member=2, priority_class="mid"),
        *(pod(f"x-{i}", ns="ns", group="x", node="n3", priority_class="mid") for i in range(2)),
        pod("x-2", ns="ns", group="x", priority_class="mid"),
        podgroup("v", ns="ns", queue="q", min_member=2),
        *(pod(f"v-{i}", ns="ns", group="v", node="n2") for i in range(3)),
        *gang("a", size=3, phase="Inqueue", priority_class="top"),
    ]  # fmt: skip
    result = run_action("preempt", objects)
    assert {e.pod: e.reason.beneficiary_job for e in result.evictions} == {
        "ns/y-3": "ns/a", "ns/y-2": "ns/a", "ns/y-1": "ns/a", "ns/v-2": "ns/y",
    }  # fmt: skip
    # The session runs preempt alone, so the pod's reason starts with the config placing nothing.
    config_gap, *refusals = result.rejections["Pod ns/x-2"]
    assert config_gap.plugin == "config" and "allocate is not among them" in render((config_gap,))
    assert render(refusals) == (
        "preempt: task x-2: preempt: no pod may be evicted for it on the 3 node(s) it could use"
    )


def test_unschedulable_pods_are_their_rejections_rendered() -> None:
    """What a pending pod's PodScheduled condition says is its rejection rendered: a pod the snapshot
    refused (its PodGroup is missing) as much as the pods of a gang allocate refused; a PodGroup's own
    rejection names no pod."""
    objects = [
        node("n1", cpu="2"), queue("q"), *gang("big", size=3, phase="Inqueue"),
        pod("lost", ns="ns", group="nowhere"),
    ]  # fmt: skip
    result = run_action("allocate", objects)
    assert sorted(result.unschedulable) == ["ns/big-0", "ns/big-1", "ns/big-2", "ns/lost"]
    assert result.unschedulable_pods == tuple(result.unschedulable)
    assert result.unschedulable_pods is result.unschedulable_pods  # derived once
    assert result.unschedulable["ns/lost"] == "pod group nowhere does not exist"
    assert result.rejections["Pod ns/lost"][0].code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    for key, message in result.unschedulable.items():
        assert message and message == render(result.rejections[f"Pod {key}"])
    assert "PodGroup ns/big" in result.rejections
    result.rejections["Pod ns/late"] = result.rejections["Pod ns/lost"]  # a rejection added later
    assert result.unschedulable_pods[-1] == "ns/late"
    # rejections of the same size, but others: what is derived follows the dict, not only its size
    result.rejections = {key.replace("ns/late", "ns/other"): why for key, why in result.rejections.items()}
    assert result.unschedulable_pods[-1] == "ns/other"
    assert result.unschedulable_pods == tuple(result.unschedulable)


def test_reclaim_turns_to_the_queue_that_comes_first_after_each_commit() -> None:
    """Queues qa and qb (equal weights, qa first by name) each take back from lend; once qa's first job
    has taken its share, qb comes first in queue order, and its job goes before qa's second."""
    objects = [
        node("n1", cpu="12"),
        queue("lend", reclaimable=True),
        queue("qa"),
        queue("qb"),
        *running("lend-run", size=12, on="n1", q="lend"),
        *(
            o
            for name, q in (("a1", "qa"), ("a2", "qa"), ("b1", "qb"))
            for o in (
                podgroup(name, ns="ns", queue=q, min_member=1, phase="Inqueue"),
                pod(f"{name}-0", ns="ns", cpu="2", group=name),
            )
        ),
    ]
    result = run_action("reclaim", objects)
    turns = [e.reason.beneficiary_job for e in result.evictions]
    assert list(dict.fromkeys(turns)) == ["ns/a1", "ns/b1", "ns/a2"]
