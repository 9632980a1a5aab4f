"""A gang that can never run as it stands says so first, in one plain clause, before the numbers of
why it waits: minResources (or its minMember pods) beyond its queue's capability or a parent's, beyond
all the ready nodes, or more pods than the nodes could hold even empty. A gang that may run once room
is made is not told "never"."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import Obj, node, placed, pod, podgroup, queue, run


def _gang(
    name: str, *, size: int, cpu: str, q: str = "default", min_member: int | None = None, **kw: Any
) -> list[Obj]:
    return [
        podgroup(name, queue=q, min_member=min_member or size, **kw),
        *(pod(f"{name}-{i}", group=name, cpu=cpu) for i in range(size)),
    ]


TWO_NODES = [node("n1", cpu="4"), node("n2", cpu="4")]

CASES: list[tuple[str, list[Obj], str | None]] = [
    ("over_the_queue_capability", [*TWO_NODES, queue("small", capability={"cpu": "2"}), *_gang("g", size=1, cpu="3", q="small", min_resources={"cpu": "3"})],
     "can never run as it stands: its minResources ask cpu 3, more than queue small may ever hold (capability cpu 2); "),
    ("over_a_parent_capability", [*TWO_NODES, queue("org", capability={"cpu": "2"}), queue("team", parent="org"), *_gang("g", size=1, cpu="3", q="team")],
     "can never run as it stands: its minMember pods ask cpu 3, more than queue org may ever hold (capability cpu 2); "),
    ("over_the_cluster", [*TWO_NODES, *_gang("g", size=2, cpu="1", min_resources={"cpu": "20"})],
     "can never run as it stands: its minResources ask cpu 20, more than all the ready nodes have (cpu 8); "),
    # minResources pods (Volcano's controllers write it): it said "ask nothing, ... (nothing)".
    ("pods_over_the_cluster", [*TWO_NODES, *_gang("g", size=2, cpu="1", min_resources={"cpu": "2", "pods": "300"})],
     "can never run as it stands: its minResources ask pods 300, more than all the ready nodes have (pods 220); "),
    ("more_pods_than_the_nodes_hold", [*TWO_NODES, *_gang("g", size=3, cpu="2500m")],
     "can never run as it stands: at most 2 of its pods fit on the 2 ready node(s), even were they empty (minMember 3; each pod asks at least cpu 2.5); "),
    ("a_pod_bigger_than_any_node", [*TWO_NODES, *_gang("g", size=1, cpu="6")],
     "can never run as it stands: at most 0 of its pods fit on the 2 ready node(s), even were they empty (minMember 1; each pod asks at least cpu 6); "),
    # Waits, but may run once room is made: no "never".
    ("waiting_for_room", [*TWO_NODES, pod("busy", cpu="4", node="n1"), pod("busy2", cpu="4", node="n2"), *_gang("g", size=2, cpu="3")], None),
]  # fmt: skip


@pytest.mark.parametrize(("objs", "first"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_gang_that_can_never_run_says_so_first(objs: list[Obj], first: str | None) -> None:
    data = run(objs)
    messages = {e["object"]: e["message"] for e in data["events"]}
    said = messages["PodGroup default/g"]
    pods = [m for o, m in messages.items() if o.startswith("Pod default/g-")]
    if first is None:
        assert "never" not in said and all("never" not in m for m in pods), said
        return
    assert said.startswith(first), said
    assert len(said) > len(first)  # the numbers of why it waits follow
    assert pods and all(m.startswith(first) for m in pods)


@pytest.mark.parametrize(
    "min_resources",
    [{"nvidia.com/gpu": "1"}, {"cpu": "100"}],
    ids=["a-resource-no-node-has", "past-the-cluster"],
)
def test_a_gang_that_can_never_run_holds_no_node_for_itself(min_resources: dict[str, str]) -> None:
    """The defect: such a gang (a typo in its minResources, say) was the job the reservation held nodes
    for, and the pod of its queue arriving after it waited for ever on an empty node ("1 node(s)
    reserved for PodGroup default/g from now"). It is never the head now: the pod runs."""
    from volsched.simulate import Document, Replay
    from volsched.simulate.annotations import DURATION_ANNOTATION
    from volsched.simulate.documents import EPOCH, iso

    objs = [
        node("n1", cpu="4"),
        queue("q"),
        *_gang("g", size=2, cpu="2", q="q", min_resources=min_resources),
        pod("later", queue="q", cpu="3", created=iso(EPOCH + 60), annotations={DURATION_ANNOTATION: "10m"}),
    ]
    for obj in objs[2:5]:
        obj["metadata"]["creationTimestamp"] = iso(EPOCH)
    result = Replay([Document(f"test: document {i}", o) for i, o in enumerate(objs)], until=7200.0).run()
    later = result.runs["default/later"]
    assert later.started is not None and later.finished is not None
    assert later.started - result.start == 60


@pytest.mark.parametrize(
    ("min_resources", "pods"),
    [({"nvidia.com/gpu": "1"}, 1), ({"cpu": "100"}, 1), (None, 2), ({"cpu": "1"}, 3)],
    ids=["a-resource-no-node-has", "past-the-cluster", "past-the-queue-capability", "more-pods-than-fit"],
)
def test_a_gang_that_can_never_run_asks_no_share_of_the_cluster(
    min_resources: dict[str, str] | None, pods: int
) -> None:
    """The defect: such a gang counted toward its queue's demand, so proportion gave its queue a share it
    could never use, and another queue's pod waited for ever on an empty cluster ("minResources cpu 2 +
    allocated 2 + admitted 0 > deserved 3"). It asks for nothing now (its PodGroup still says why): the
    other queue's pods take the whole node."""
    gang_cpu = "3" if min_resources is None else ("5" if pods == 3 else "1")
    objs = [
        node("n1", cpu="4"),
        queue("a", capability={"cpu": "2"}),
        queue("b"),
        *_gang("g", size=pods, cpu=gang_cpu, q="a", min_resources=min_resources),
        pod("b1", queue="b", cpu="2"),
        pod("b2", queue="b", cpu="2"),
    ]
    data = run(objs)
    assert placed(data) == {"default/b1": "n1", "default/b2": "n1"}
    said = {e["object"]: e["message"] for e in data["events"]}["PodGroup default/g"]
    assert said.startswith("can never run as it stands: "), said


def test_a_gang_whose_pods_select_a_label_no_node_has_can_never_run() -> None:
    """The defect: ``never_fits`` read no node selector, so a gang whose pods select a label no node has
    (a typo in ``nodeSelector``) was told only the numbers of why it waits, never that it cannot run, and
    its queue asked a share for it. Now it says so first, and the other queue's pods take the node."""
    objs = [
        node("n1", cpu="4", labels={"zone": "a"}),
        queue("a"),
        queue("b"),
        podgroup("g", queue="a", min_member=2),
        *(pod(f"g-{i}", group="g", cpu="2", node_selector={"zone": "nowhere"}) for i in range(2)),
        pod("b1", queue="b", cpu="2"),
        pod("b2", queue="b", cpu="2"),
    ]
    data = run(objs)
    said = {e["object"]: e["message"] for e in data["events"]}["PodGroup default/g"]
    assert said.startswith(
        "can never run as it stands: none of the 1 ready node(s) has the labels its pods' node selector or "
        "required node affinity ask for (minMember 2); "
    ), said
    assert placed(data) == {"default/b1": "n1", "default/b2": "n1"}


def test_a_gang_counts_only_the_nodes_its_selector_admits() -> None:
    """Two nodes, one of them labelled as the gang's pods select: at most two of its three pods fit on
    the one node they may go to, so it can never run (the other node does not count)."""
    objs = [
        node("n1", cpu="4", labels={"zone": "a"}),
        node("n2", cpu="4", labels={"zone": "b"}),
        podgroup("g", min_member=3),
        *(pod(f"g-{i}", group="g", cpu="2", node_selector={"zone": "a"}) for i in range(3)),
    ]
    said = {e["object"]: e["message"] for e in run(objs)["events"]}["PodGroup default/g"]
    assert said.startswith(
        "can never run as it stands: at most 2 of its pods fit on the 1 of 2 ready node(s) its pods' node "
        "selector or required node affinity admit, even were they empty (minMember 3; each pod asks at "
        "least cpu 2); "
    ), said


def test_a_gang_that_may_go_to_some_node_is_not_told_never() -> None:
    objs = [
        node("n1", cpu="4", labels={"zone": "a"}),
        node("n2", cpu="4", labels={"zone": "b"}),
        pod("busy", cpu="4", node="n1"),
        podgroup("g", min_member=2),
        *(pod(f"g-{i}", group="g", cpu="2", node_selector={"zone": "a"}) for i in range(2)),
    ]
    said = {e["object"]: e["message"] for e in run(objs)["events"]}["PodGroup default/g"]
    assert "never" not in said, said


def test_a_queue_status_asks_nothing_for_a_gang_that_can_never_run() -> None:
    """The defect: the Queue's status ``request`` still counted a gang that can never run as it stands,
    which proportion gives no share (so the queue looked as if it asked more than it was given, for ever).
    Now it shows what the queue's other jobs hold and ask."""
    objs = [
        node("n1", cpu="4"),
        queue("a"),
        *_gang("g", size=2, cpu="3", q="a"),  # two pods of 3 cpu on one 4-cpu node: never
        pod("a1", queue="a", cpu="1"),
        pod("a2", queue="a", cpu="4"),  # waits for room: asks, and is counted
    ]
    data = run(objs)
    assert placed(data) == {"default/a1": "n1"}
    assert data["queues"]["a"]["request"]["cpu"] == 5


@pytest.mark.parametrize("config", [None, "proportion"], ids=["default", "proportion-alone"])
def test_an_admitted_gang_that_can_never_run_keeps_no_room_from_the_others(config: str | None) -> None:
    """The defect: a gang admitted before the nodes changed (phase Inqueue), that can never run now, kept
    what it may still claim toward its minimum out of the room admission hands out: overcommit's "room
    0 (cluster 4 x 1.2 - used 0 - admitted 9)" kept every other pod of the cluster out for ever, and
    proportion's admitted sum its queue's. No room is held for it now: the pod arriving after it runs."""
    from tests.builders import config as make_config

    conf = None
    if config == "proportion":
        conf = make_config(
            'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
            "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]\n"
        )
    objs = [
        node("n1", cpu="4"),
        queue("q"),
        podgroup("g", queue="q", min_member=3, phase="Inqueue"),
        *(pod(f"g-{i}", group="g", cpu="3", queue="q") for i in range(3)),
        pod("p", queue="q", cpu="1"),
    ]
    data = run(objs, conf=conf)
    assert placed(data) == {"default/p": "n1"}
    said = {e["object"]: e["message"] for e in data["events"]}["PodGroup default/g"]
    assert said.startswith("can never run as it stands: "), said


def _lone_never_objects(**kw: Any) -> list[Obj]:
    """Two queues of weight 1 on two 4-cpu nodes; queue a's six 1-cpu pods (no PodGroup) fit on no node
    (``kw``: what keeps them off), queue b's eight 1-cpu pods fit anywhere."""
    return [
        *TWO_NODES,
        queue("a"),
        queue("b"),
        *(pod(f"a{i}", queue="a", **({"cpu": "1"} | kw)) for i in range(6)),
        *(pod(f"b{i}", queue="b", cpu="1") for i in range(8)),
    ]


@pytest.mark.parametrize(
    "kw",
    [
        {"node_selector": {"zone": "nowhere"}},
        {"cpu": "6"},
    ],
    ids=["a-label-no-node-has", "bigger-than-any-node"],
)
def test_a_lone_pod_that_can_never_run_asks_no_share_of_the_cluster(kw: dict[str, Any]) -> None:
    """The defect: a pod standing alone (no PodGroup) that fits on no node still counted toward its
    queue's demand, so proportion gave queue a a share it could never use: b was bound 4 pods and its
    other 4 were refused "... > deserved 4" session after session, with 4 cpu idle for ever. Such a pod
    asks for nothing now, as a gang that can never run (it is still told why it waits): b takes both
    nodes, and the Queue's status shows a asking nothing."""
    data = run(_lone_never_objects(**kw))
    assert len(placed(data, "default/b")) == 8, placed(data)
    assert not placed(data, "default/a")
    said = {e["object"]: e["message"] for e in data["events"]}
    assert all(said[f"Pod default/a{i}"] for i in range(6))
    assert data["queues"]["a"]["request"].get("cpu", 0) == 0, data["queues"]["a"]


def test_pods_standing_alone_that_can_never_run_keep_no_place_from_the_pods_behind_them() -> None:
    """Older pods of a queue that no node could hold come first in its order; asking no share, they
    are not voted into it either (voted on, each took a place in the queue's share from the pods behind
    it, which then waited on an empty node): the pod made after them is bound."""
    from volsched.simulate.documents import EPOCH, iso

    objs = [
        node("n1", cpu="4"),
        queue("q"),
        *(
            pod(f"old{i}", queue="q", cpu="1", node_selector={"zone": "nowhere"}, created=iso(EPOCH))
            for i in range(3)
        ),
        pod("new", queue="q", cpu="1", created=iso(EPOCH + 60)),
    ]
    data = run(objs)
    assert placed(data) == {"default/new": "n1"}
    said = {e["object"]: e["message"] for e in data["events"]}
    assert all(said[f"Pod default/old{i}"].startswith("can never run as it stands: ") for i in range(3))


@pytest.mark.parametrize(
    ("kw", "size"),
    [({"node_selector": {"zone": "nowhere"}}, 2), ({"cpu": "2500m"}, 4)],
    ids=["a-label-no-node-has", "more-pods-than-the-nodes-hold"],
)
def test_a_pending_gang_that_can_never_run_keeps_no_place_from_the_pods_behind_it(
    kw: dict[str, Any], size: int
) -> None:
    """The defect: a gang in phase Pending that can never run (on three 4-cpu nodes: its pods select a
    label no node has, or four pods of 2.5 cpu, one a node) was voted into its queue in the session it
    came, its minimum taking a place in its queue's share, and a pod of its queue arriving with it waited
    for the session after ("minResources cpu 4 + allocated 0 + admitted 12 > deserved 12"). Not voted on
    now, it stays Pending, told why, and the three pods start as they arrive."""
    from volsched.simulate import Document, Replay
    from volsched.simulate.annotations import DURATION_ANNOTATION
    from volsched.simulate.documents import EPOCH, iso

    made = iso(EPOCH + 60)
    objs = [
        *(node(f"n{i}", cpu="4") for i in range(3)),
        queue("q"),
        podgroup("g", queue="q", min_member=size),
        *(pod(f"g-{i}", group="g", queue="q", created=made, **({"cpu": "2"} | kw)) for i in range(size)),
        *(
            pod(f"later{i}", queue="q", cpu="4", created=made, annotations={DURATION_ANNOTATION: "10m"})
            for i in range(3)
        ),
    ]
    objs[4]["metadata"]["creationTimestamp"] = made
    result = Replay([Document(f"test: document {i}", o) for i, o in enumerate(objs)], until=7200.0).run()
    for i in range(3):
        later = result.runs[f"default/later{i}"]
        assert later.started == later.created, later
    assert result.runs["default/g-0"].started is None


GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TOLERATES_GPU = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]


@pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
def test_a_lone_pod_that_tolerates_no_node_asks_no_share_of_the_cluster(effect: str) -> None:
    """The defect: ``never_fits`` read no taints, so queue a's six pods, which tolerate none of the taint
    both nodes carry, counted in a's demand: b (whose pods tolerate it) was bound 4 pods and its other 4
    refused "... > deserved 4" session after session, 4 cpu idle for ever. Now a's pods say which taint
    keeps them off, ask nothing, and b takes both nodes."""
    taint = GPU_TAINT | {"effect": effect}
    tolerations = [TOLERATES_GPU[0] | {"effect": effect}]
    objs = [
        node("n1", cpu="4", taints=[taint]),
        node("n2", cpu="4", taints=[taint]),
        queue("a"),
        queue("b"),
        *(pod(f"a{i}", queue="a", cpu="1") for i in range(6)),
        *(pod(f"b{i}", queue="b", cpu="1", tolerations=tolerations) for i in range(8)),
    ]
    data = run(objs)
    assert len(placed(data, "default/b")) == 8, placed(data)
    assert not placed(data, "default/a")
    said = {e["object"]: e["message"] for e in data["events"]}
    assert said["Pod default/a0"].startswith(
        "can never run as it stands: each of the 2 ready node(s) has a taint it does not tolerate "
        "(untolerated taint {dedicated: gpu} on 2); "
    ), said["Pod default/a0"]
    assert data["queues"]["a"]["request"].get("cpu", 0) == 0, data["queues"]["a"]


def test_a_gang_whose_pods_tolerate_no_node_stays_pending_and_asks_no_share() -> None:
    """The gang's two pods tolerate neither node's taint: it can never run, says so with the taint and how
    many nodes carry it, is not voted into its queue, and queue b's pods take both nodes."""
    objs = [
        node("n1", cpu="4", taints=[GPU_TAINT]),
        node("n2", cpu="4", taints=[GPU_TAINT]),
        queue("a"),
        queue("b"),
        podgroup("g", queue="a", min_member=2),
        *(pod(f"g-{i}", group="g", cpu="2") for i in range(2)),
        *(pod(f"b{i}", queue="b", cpu="2", tolerations=TOLERATES_GPU) for i in range(4)),
    ]
    data = run(objs)
    assert len(placed(data, "default/b")) == 4, placed(data)
    said = data["podgroups"]["default/g"]
    assert said["phase"] == "Pending", said
    assert said["reason"].startswith(
        "can never run as it stands: each of the 2 ready node(s) has a taint its pods do not tolerate "
        "(untolerated taint {dedicated: gpu} on 2; minMember 2); not admitted to queue a while it can never run"
    ), said


def test_a_gang_counts_only_the_nodes_whose_taints_its_pods_tolerate() -> None:
    """Three 4-cpu nodes, two tainted: at most one of its three 3-cpu pods fits on the node left, so it
    can never run; the nodes' taints are named in the count."""
    objs = [
        node("n1", cpu="4"),
        node("n2", cpu="4", taints=[GPU_TAINT]),
        node("n3", cpu="4", taints=[GPU_TAINT | {"effect": "NoExecute"}]),
        podgroup("g", min_member=3),
        *(pod(f"g-{i}", group="g", cpu="3") for i in range(3)),
    ]
    said = {e["object"]: e["message"] for e in run(objs)["events"]}["PodGroup default/g"]
    assert said.startswith(
        "can never run as it stands: at most 1 of its pods fit on the 1 of 3 ready node(s) whose taints its "
        "pods tolerate (untolerated taint {dedicated: gpu} on 2), even were they empty (minMember 3; each pod "
        "asks at least cpu 3); "
    ), said


def test_a_pod_that_tolerates_the_taint_is_not_told_never() -> None:
    objs = [
        node("n1", cpu="4", taints=[GPU_TAINT]),
        pod("busy", cpu="4", node="n1", tolerations=TOLERATES_GPU),
        pod("w", cpu="2", tolerations=TOLERATES_GPU),
        podgroup("g", min_member=2),
        *(pod(f"g-{i}", group="g", cpu="2", tolerations=[{"operator": "Exists"}]) for i in range(2)),
    ]
    said = {e["object"]: e["message"] for e in run(objs)["events"]}
    assert "never" not in said["Pod default/w"], said
    assert "never" not in said["PodGroup default/g"], said


@pytest.mark.parametrize("lone_first", [True, False], ids=["lone-first", "gang-first"])
def test_a_lone_pod_and_a_gang_of_one_of_the_same_shape_are_each_told_in_their_own_words(
    lone_first: bool,
) -> None:
    """The defect: the verdicts were kept by a shape that did not say whether the job was a pod standing
    alone, so a pod alone asking what a one-pod gang asks (no minResources) was told the gang's words
    ("at most 0 of its pods fit ... (minMember 1; ...)"), whichever of the two was asked first."""
    lone = [pod("lone", cpu="6")]
    gang = _gang("g", size=1, cpu="6")
    data = run([*TWO_NODES, *(lone + gang if lone_first else gang + lone)])
    said = {e["object"]: e["message"] for e in data["events"]}
    assert said["Pod default/lone"].startswith(
        "can never run as it stands: none of the 2 ready node(s) could hold it, even were they empty "
        "(it asks cpu 6); "
    ), said["Pod default/lone"]
    assert said["PodGroup default/g"].startswith(
        "can never run as it stands: at most 0 of its pods fit on the 2 ready node(s), even were they "
        "empty (minMember 1; each pod asks at least cpu 6); "
    ), said["PodGroup default/g"]
