"""A gang (PodGroup in phase Pending) that no set of nodes could ever hold is not voted into its queue:
no share is its, so admitted it would take a place in its queue's share (and in the cluster's room) from
the jobs behind it for the session that admitted it. It stays Pending, says why with its numbers, and is
asked again (and admitted) in the session after a node that may hold it joins or is labelled."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import SessionResult, render
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session

Obj = dict[str, Any]

#: The default config: gang, overcommit and proportion vote on admission.
DEFAULT = load_config()
#: No proportion: what a gang admitted takes is overcommit's room, the whole cluster's.
OVERCOMMIT = load_config(
    text='actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}, {name: overcommit}]\n'
    "- plugins: [{name: predicates}, {name: nodeorder}]\n"
)


def _session(objects: list[Obj], conf: Any = DEFAULT, *, now: float = 1.0) -> SessionResult:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    return run_session(state.snapshot(now=now), conf)


def _never(q: str, **pod_kw: Any) -> list[Obj]:
    """A gang of two 2-cpu pods in queue ``q`` (``pod_kw``: what keeps them off every node), made first."""
    return [
        podgroup("g", queue=q, min_member=2, phase="Pending"),
        *(
            pod(f"g-{i}", group="g", queue=q, created="2026-01-01T00:00:00Z", **({"cpu": "2"} | pod_kw))
            for i in range(2)
        ),
    ]


#: (what keeps the gang's pods off every node, the start of what it is told)
NEVER = [
    pytest.param(
        {"node_selector": {"zone": "nowhere"}},
        "can never run as it stands: none of the 1 ready node(s) has the labels its pods' node selector or "
        "required node affinity ask for (minMember 2); not admitted to queue a while it can never run",
        id="a-label-no-node-has",
    ),
    pytest.param(
        {"cpu": "3"},
        "can never run as it stands: its minMember pods ask cpu 6, more than all the ready nodes have (cpu 4); "
        "not admitted to queue a while it can never run: asked again once a node joins, leaves or changes, or "
        "the gang or its queue changes",
        id="more-than-the-nodes-hold",
    ),
]


@pytest.mark.parametrize(("kw", "why"), NEVER)
@pytest.mark.parametrize(
    ("conf", "other"), [(DEFAULT, "a"), (OVERCOMMIT, "b")], ids=["its-queue-share", "the-cluster-room"]
)
def test_a_gang_that_can_never_run_is_not_admitted_and_keeps_no_share_from_the_jobs_behind_it(
    kw: dict[str, Any], why: str, conf: Any, other: str
) -> None:
    """The defect: voted on and admitted (phase Inqueue), the gang counted in its queue's admitted sum
    (proportion: "minResources cpu 4 + allocated 0 + admitted 4 > realCapability 4") or the cluster's
    (overcommit: "room 0.8 (cluster 4 x 1.2 - used 0 - admitted 4)"), and the pod made after it, of its
    queue or another, waited a session on an empty node. Now it stays Pending, told why, and the pod is
    bound in the first session."""
    result = _session(
        [
            node("n1", cpu="4"),
            queue("a"),
            queue("b"),
            *_never("a", **kw),
            pod("p", queue=other, cpu="4", created="2026-01-01T00:01:00Z"),
        ],
        conf,
    )
    assert [b.pod for b in result.binds] == ["default/p"]
    assert "default/g" not in result.admitted
    group = result.podgroups["default/g"]
    assert group.phase == "Pending"
    said = render(result.rejections["PodGroup default/g"])
    assert said.startswith(why), said
    assert all(render(result.rejections[f"Pod default/g-{i}"]) == said for i in range(2))


def test_the_gang_is_admitted_and_bound_once_a_node_is_labelled_or_joins_for_it() -> None:
    state = ClusterState()
    for obj in (node("n1", cpu="4"), queue("a"), *_never("a", node_selector={"zone": "z"})):
        state.apply(obj)
    first = run_session(state.snapshot(now=1.0), DEFAULT)
    assert first.podgroups["default/g"].phase == "Pending"
    state.apply(node("n1", cpu="4", labels={"zone": "z"}))
    second = run_session(state.snapshot(now=2.0), DEFAULT)
    assert second.admitted == ["default/g"]
    assert sorted(b.pod for b in second.binds) == ["default/g-0", "default/g-1"]

    state = ClusterState()
    for obj in (node("n1", cpu="4"), queue("a"), *_never("a", cpu="3")):
        state.apply(obj)
    assert run_session(state.snapshot(now=1.0), DEFAULT).podgroups["default/g"].phase == "Pending"
    state.apply(node("n2", cpu="4"))
    second = run_session(state.snapshot(now=2.0), DEFAULT)
    assert sorted(b.pod for b in second.binds) == ["default/g-0", "default/g-1"]


def test_a_gang_that_may_run_once_room_is_made_is_still_voted_on() -> None:
    """Not "never": two 2-cpu pods on a 4-cpu node that a running pod fills. The votes decide, and say
    why they keep it out."""
    result = _session(
        [node("n1", cpu="4"), queue("a"), pod("busy", queue="a", cpu="4", node="n1"), *_never("a")]
    )
    assert render(result.rejections["PodGroup default/g"]) == (
        "not admitted to queue a: overcommit: minResources cpu 4 > room 0.8 (cluster 4 x 1.2 - used 4 - admitted 0)"
    )


def test_a_gang_kept_off_by_a_taint_is_admitted_once_the_taint_goes_or_a_node_joins_it_tolerates() -> None:
    """Both nodes' taint is tolerated by none of its pods: Pending, told the taint; the session after a
    node's taint is removed (or a node without it joins) admits and binds it."""
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
    for change in (node("n1", cpu="4"), node("n3", cpu="4")):
        state = ClusterState()
        for obj in (
            node("n1", cpu="4", taints=[taint]),
            node("n2", cpu="4", taints=[taint]),
            queue("a"),
            *_never("a"),
        ):
            state.apply(obj)
        first = run_session(state.snapshot(now=1.0), DEFAULT)
        assert first.podgroups["default/g"].phase == "Pending"
        assert render(first.rejections["PodGroup default/g"]).startswith(
            "can never run as it stands: each of the 2 ready node(s) has a taint its pods do not tolerate "
            "(untolerated taint {dedicated: gpu} on 2; minMember 2); not admitted to queue a"
        )
        state.apply(change)
        second = run_session(state.snapshot(now=2.0), DEFAULT)
        assert second.admitted == ["default/g"]
        assert sorted(b.pod for b in second.binds) == ["default/g-0", "default/g-1"]
