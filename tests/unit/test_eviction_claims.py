"""reservation's claims alone: room an eviction freed is held for the pod it was freed for (kube-scheduler's
nominated node) into the next session. Another pod of no higher priority uses that node only with room
beside the claim; the claimant goes back to its node; the claim ends once its pod is placed, or when the
room is free and the pod was not placed, or when the pod or the node is gone."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, podgroup, priority_class, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import SessionResult
from volsched.framework.registry import load_config, make_actions
from volsched.framework.runner import close_session, open_session
from volsched.model.errors import InputError
from volsched.plugins.reservation import CARRY, CLAIMS, NOMINATIONS_READ
from volsched.simulate.documents import iso

Obj = dict[str, Any]
NOW = 1_000_000.0
PLUGINS = "{name: priority}, {name: gang, enablePreemptable: false}, {name: predicates}, {name: reservation}"
CONFIG = f'actions: "enqueue, allocate, preempt"\ntiers:\n- plugins: [{PLUGINS}]\n'


def waiting(name: str, *, gpu: int, ago: float, priority: str = "low") -> Obj:
    return pod(
        name, ns="ns", cpu="1", gpu=str(gpu), queue="q", priority_class=priority, created=iso(NOW - ago)
    )


def running(name: str, *, on: str, gpu: int, priority: str = "low") -> Obj:
    out = pod(name, ns="ns", cpu="1", gpu=str(gpu), queue="q", node=on, priority_class=priority)
    out["status"]["startTime"] = iso(NOW - 3600)
    return out


def base(*objects: Obj) -> list[Obj]:
    return [queue("q"), priority_class("low", 1), priority_class("high", 100), *objects]


def run_session(state: ClusterState) -> SessionResult:
    config = load_config(text=CONFIG)
    s = open_session(state.snapshot(now=NOW), config)
    for action in make_actions(config):
        action.execute(s)
    return close_session(s)


def session(objects: list[Obj], *, claims: dict[str, list[str]] | None = None) -> SessionResult:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    if claims:
        state.carryover = {CLAIMS: claims}
    return run_session(state)


def placed(result: SessionResult) -> dict[str, str]:
    return {b.pod: b.node for b in result.binds}


#: The claimant ``c`` (4 GPUs) holds room on n1; ``o`` was created before it, so it would go first.
CLAIM = {"ns/c": ["ns/c", "n1", "ns/c"]}  # (a pod with no uid: its key stands for it)


@pytest.mark.parametrize(
    ("objects", "claims", "expected"),
    [
        pytest.param([node("n1", gpu="4"), waiting("o", gpu=4, ago=60), waiting("c", gpu=4, ago=30)], None,
                     {"ns/o": "n1"}, id="no-claim-first-come"),
        pytest.param([node("n1", gpu="4"), waiting("o", gpu=4, ago=60), waiting("c", gpu=4, ago=30)], CLAIM,
                     {"ns/c": "n1"}, id="the-claimed-room-is-the-claimants"),
        pytest.param([node("n1", gpu="8"), waiting("o", gpu=4, ago=60), waiting("c", gpu=4, ago=30)], CLAIM,
                     {"ns/o": "n1", "ns/c": "n1"}, id="room-beside-the-claim-is-free-to-use"),
        pytest.param([node("n1", gpu="4"), waiting("o", gpu=4, ago=60, priority="high"),
                      waiting("c", gpu=4, ago=30)], CLAIM,
                     {"ns/o": "n1"}, id="a-higher-priority-pod-is-not-held-off"),
        pytest.param([node("n0", gpu="4"), node("n1", gpu="4"), waiting("c", gpu=4, ago=30)], None,
                     {"ns/c": "n0"}, id="no-claim-node-order"),
        pytest.param([node("n0", gpu="4"), node("n1", gpu="4"), waiting("c", gpu=4, ago=30)], CLAIM,
                     {"ns/c": "n1"}, id="the-claimant-goes-back-to-its-node"),
        pytest.param([node("n0", gpu="4"), waiting("o", gpu=4, ago=60), waiting("c", gpu=4, ago=30)], CLAIM,
                     {"ns/o": "n0"}, id="a-claim-on-a-node-gone-holds-nothing"),
    ],
)  # fmt: skip
def test_the_claimed_room(
    objects: list[Obj], claims: dict[str, list[str]] | None, expected: dict[str, str]
) -> None:
    assert placed(session(base(*objects), claims=claims)) == expected


def test_a_pod_kept_off_its_node_by_a_claim_is_told_why() -> None:
    result = session(
        base(node("n1", gpu="4"), waiting("o", gpu=4, ago=60), waiting("c", gpu=4, ago=30)), claims=CLAIM
    )
    assert "1 node(s) whose room an eviction freed for another pod" in result.unschedulable["ns/o"]


@pytest.mark.parametrize(
    ("objects", "kept"),
    [
        pytest.param([node("n1", gpu="4"), waiting("c", gpu=4, ago=30)], False, id="placed-it-ends"),
        pytest.param([node("n1", gpu="2"), waiting("c", gpu=4, ago=30)], False, id="room-free-not-placed-it-ends"),
        pytest.param([node("n1", gpu="4"), waiting("o", gpu=4, ago=60)], False, id="the-pod-gone-it-ends"),
        pytest.param([node("n1", gpu="4"), running("v", on="n1", gpu=4), waiting("c", gpu=4, ago=30)], False,
                     id="nothing-being-freed-for-it-it-ends"),
    ],
)  # fmt: skip
def test_the_claim_ends(objects: list[Obj], kept: bool) -> None:
    result = session(base(*objects), claims=CLAIM)
    assert (CLAIMS in result.carryover) is kept


def test_an_eviction_claims_the_room_it_frees_for_its_pod_and_says_so() -> None:
    result = session(
        base(node("n1", gpu="4"), running("v", on="n1", gpu=4), waiting("c", gpu=4, ago=30, priority="high"))
    )
    assert [e.pod for e in result.evictions] == ["ns/v"]
    assert result.carryover[CLAIMS] == {"ns/c": ["ns/c", "n1", "ns/c", "ns/v"]}
    [event] = [e for e in result.events if e.reason == "Nominated"]
    assert event.object == "Pod ns/c"
    assert "room on node n1" in event.message


def test_the_room_an_eviction_freed_goes_to_its_pod_at_the_next_session() -> None:
    """The defect: the preemptor was pipelined onto its victim's room, and at the next session (the
    victim gone) a pod created before it, of no higher priority, took that room first: the victim's
    work was thrown away for a pod that kept waiting (and evicted again)."""
    state = ClusterState()
    for obj in base(
        node("n1", gpu="4"), running("v", on="n1", gpu=4), waiting("c", gpu=4, ago=30, priority="high")
    ):
        state.apply(obj)
    first = run_session(state)
    assert [e.pod for e in first.evictions] == ["ns/v"]
    state.delete("Pod", "ns", "v")
    state.apply(waiting("o", gpu=4, ago=90, priority="high"))
    state.carryover = first.carryover
    second = run_session(state)
    assert placed(second) == {"ns/c": "n1"}
    assert not second.evictions
    assert CLAIMS not in second.carryover


def test_a_pod_made_again_under_the_claimants_name_does_not_take_its_claim() -> None:
    """The defect: the claims were carried by the pod's name alone, so a pod deleted and made again under
    it (a StatefulSet's) took the room evicted for the one that went, over a pod that came before it, and
    was given its nominated node."""
    state = ClusterState()
    claimant = waiting("c", gpu=4, ago=30, priority="high")
    claimant["metadata"]["uid"] = "uid-old"
    for obj in base(node("n1", gpu="4"), running("v", on="n1", gpu=4), claimant):
        state.apply(obj)
    first = run_session(state)
    assert first.nominated == {"ns/c": "n1"}
    state.delete("Pod", "ns", "v")
    state.delete("Pod", "ns", "c")
    state.apply(waiting("o", gpu=4, ago=90, priority="high"))
    again = waiting("c", gpu=4, ago=1, priority="high")
    again["metadata"]["uid"] = "uid-new"
    state.apply(again)
    state.carryover = first.carryover
    second = run_session(state)
    assert placed(second) == {"ns/o": "n1"}
    assert second.nominated == {}


def test_a_pod_of_lower_priority_does_not_reserve_the_room_evicted_for_one_of_its_queue() -> None:
    """The defect: while the preemptor waited, pipelined onto its victim's room, it was not "waiting" to the
    reservation, so the next pod of its queue (``o``, of lower priority) became the job the nodes are held
    for; claims do not hold room against that job, and its reservation kept the preemptor off the room
    evicted for it: once the victim was gone, ``o`` took it."""
    state = ClusterState()
    victim = running("v", on="n1", gpu=4)
    for obj in base(node("n1", gpu="4"), victim, waiting("c", gpu=4, ago=30, priority="high")):
        state.apply(obj)
    first = run_session(state)
    assert [e.pod for e in first.evictions] == ["ns/v"]
    state.apply(terminating(victim))
    state.apply(waiting("o", gpu=4, ago=90))
    state.carryover = first.carryover
    second = run_session(state)
    assert (placed(second), second.nominated) == ({}, {"ns/c": "n1"})
    assert CARRY not in second.carryover  # the first job of queue q waits for its room: no head
    state.delete("Pod", "ns", "v")
    state.carryover = second.carryover
    assert placed(run_session(state)) == {"ns/c": "n1"}


def test_a_claimants_podgroup_says_the_room_is_held() -> None:
    group = podgroup("g", ns="ns", queue="q", min_member=1, phase="Inqueue", priority_class="high")
    claimant = pod("g-0", ns="ns", cpu="1", gpu="4", group="g", priority_class="high", created=iso(NOW - 30))
    result = session(base(node("n1", gpu="4"), running("v", on="n1", gpu=4), group, claimant))
    assert result.carryover[CLAIMS] == {"ns/g-0": ["ns/g", "n1", "ns/g-0", "ns/v"]}
    assert result.podgroups["ns/g"].reservation == (
        "room on node(s) n1 that evictions free is held for 1 pod(s) until they are placed"
    )
    [event] = [e for e in result.events if e.reason == "Nominated"]
    assert (event.object, event.podgroup) == ("Pod ns/g-0", "ns/g")


def test_a_claim_does_not_hold_room_against_the_job_the_reservation_is_held_for() -> None:
    """The defect: a gang whose nodes had drained but for the last, where an eviction had just freed room
    for a small pod, was held off that node by the claim, and its reservation moved on to later nodes
    (over the replayed week, one gang waited 1.75 h where it waited 1.0 h)."""
    group = podgroup("g", ns="ns", queue="q", min_member=2, phase="Inqueue", priority_class="low")
    gang = [pod(f"g-{i}", ns="ns", cpu="1", gpu="8", group="g", priority_class="low") for i in range(2)]
    state = ClusterState()
    for obj in base(node("n1", gpu="8"), node("n2", gpu="8"), group, *gang, waiting("c", gpu=4, ago=30)):
        state.apply(obj)
    state.carryover = {CARRY: {"next": "ns/g"}, CLAIMS: {"ns/c": ["ns/c", "n2", "ns/c"]}}
    assert sorted(placed(run_session(state))) == ["ns/g-0", "ns/g-1"]


def test_the_nominated_node_is_the_claim_from_when_it_is_made_until_its_pod_is_placed() -> None:
    """``SessionResult.nominated`` (what the operator writes to the pod's status.nominatedNodeName) is
    the claims standing after each session: made with the eviction, carried while the victim terminates,
    gone once the pod is placed."""
    state = ClusterState()
    victim = running("v", on="n1", gpu=4)
    for obj in base(node("n1", gpu="4"), victim, waiting("c", gpu=4, ago=30, priority="high")):
        state.apply(obj)
    first = run_session(state)
    assert [e.pod for e in first.evictions] == ["ns/v"]
    assert first.nominated == {"ns/c": "n1"}
    terminating = {**victim, "metadata": {**victim["metadata"], "deletionTimestamp": iso(NOW)}}
    state.apply(terminating)  # its room is not free yet
    state.carryover = first.carryover
    second = run_session(state)
    assert (placed(second), second.evictions) == ({}, [])
    assert second.nominated == {"ns/c": "n1"}
    state.delete("Pod", "ns", "v")
    state.carryover = second.carryover
    third = run_session(state)
    assert placed(third) == {"ns/c": "n1"}
    assert third.nominated == {}


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param([node("n1", gpu="2"), waiting("c", gpu=4, ago=30)], id="room-free-not-placed"),
        pytest.param([node("n1", gpu="4"), waiting("o", gpu=4, ago=60)], id="the-pod-gone"),
        pytest.param([node("n0", gpu="4"), waiting("c", gpu=4, ago=30)], id="the-node-gone"),
    ],
)
def test_a_claim_that_ends_unplaced_leaves_no_nominated_node(objects: list[Obj]) -> None:
    result = session(base(*objects), claims=CLAIM)
    assert CLAIMS not in result.carryover
    assert result.nominated == {}


def test_without_claims_nothing_is_nominated() -> None:
    result = session(base(node("n1", gpu="4"), waiting("c", gpu=4, ago=30)))
    assert (placed(result), result.nominated) == ({"ns/c": "n1"}, {})


# --- a nomination an earlier leader wrote, taken over ----------------------------------------------------


def nominated(obj: Obj, node_name: str) -> Obj:
    """``obj`` with ``status.nominatedNodeName`` (written by the leader before this one)."""
    return {**obj, "status": {**(obj.get("status") or {}), "nominatedNodeName": node_name}}


def terminating(obj: Obj) -> Obj:
    return {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": iso(NOW)}}


#: n1's victim terminates (its room is not free yet); ``o`` was created before ``c``, so it would go first.
FAILOVER = [node("n1", gpu="4"), terminating(running("v", on="n1", gpu=4)), waiting("o", gpu=4, ago=60)]


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(nominated(waiting("c", gpu=4, ago=30), "n1"), "n1", id="pending-ours"),
        pytest.param(waiting("c", gpu=4, ago=30), "", id="none"),
        pytest.param(nominated(running("c", on="n1", gpu=4), "n1"), "", id="bound"),
        pytest.param(nominated({**waiting("c", gpu=4, ago=30), "spec": {
            **waiting("c", gpu=4, ago=30)["spec"], "schedulerName": "default-scheduler"}}, "n1"), "",
            id="another-schedulers"),
    ],
)  # fmt: skip
def test_a_pods_nominated_node_is_decoded_only_while_it_is_ours_and_pending(pod: Obj, expected: str) -> None:
    state = ClusterState()
    state.apply(pod)
    assert state.tasks["ns/c"].nominated_node == expected


def test_a_nomination_found_is_a_claim_in_the_first_session() -> None:
    """The defect: a new leader (after a failover while the victim terminated) had no claims, so the room
    evicted for ``c`` went to ``o``, created before it, and ``c`` lost what was evicted for it."""
    result = session(base(*FAILOVER, nominated(waiting("c", gpu=4, ago=30), "n1")))
    assert result.carryover[CLAIMS] == {"ns/c": ["ns/c", "n1", "ns/c"]}
    assert result.nominated == {"ns/c": "n1"}  # (what the writer finds there: kept, not cleared)
    assert "1 node(s) whose room an eviction freed for another pod" in result.unschedulable["ns/o"]
    assert not [e for e in result.events if e.reason == "Nominated"]  # told once, by the leader that made it


def test_without_the_nomination_the_room_goes_to_whichever_pod_comes_first() -> None:
    result = session(base(*FAILOVER, waiting("c", gpu=4, ago=30)))
    assert (CLAIMS in result.carryover, result.nominated) == (False, {})
    assert "ns/o" not in result.unschedulable


@pytest.mark.parametrize(
    ("objects", "on", "expected"),
    [
        pytest.param([node("n1", gpu="4"), waiting("o", gpu=4, ago=60)], "gone", {"ns/o": "n1"},
                     id="its-node-gone-dropped"),
        pytest.param([node("n0", gpu="4"), node("n1", gpu="4")], "n1", {"ns/c": "n1"},
                     id="placed-on-its-node-it-ends"),
        pytest.param([node("n1", gpu="2")], "n1", {}, id="room-free-not-placed-it-ends"),
        pytest.param([node("n1", gpu="4"), running("v", on="n1", gpu=4)], "n1", {},
                     id="nothing-being-freed-for-it-it-ends"),
    ],
)  # fmt: skip
def test_a_nomination_taken_over_ends_as_a_claim_made_here(
    objects: list[Obj], on: str, expected: dict[str, str]
) -> None:
    result = session(base(*objects, nominated(waiting("c", gpu=4, ago=30), on)))
    assert (placed(result), result.nominated) == (expected, {})
    assert CLAIMS not in result.carryover


def test_a_nomination_is_taken_over_in_the_first_session_only() -> None:
    """Later, a nominated node the pod still shows is one this leader ended (the writer clears it; the
    watch has not shown that yet): it is not a claim again."""
    state = ClusterState()
    for obj in base(*FAILOVER, nominated(waiting("c", gpu=4, ago=30), "n1")):
        state.apply(obj)
    state.carryover = {NOMINATIONS_READ: True}
    result = run_session(state)
    assert (CLAIMS in result.carryover, result.nominated) == (False, {})


def test_a_claim_held_wins_over_what_the_pod_says() -> None:
    state = ClusterState()
    for obj in base(node("n2", gpu="4"), terminating(running("w", on="n2", gpu=4)), *FAILOVER,
                    nominated(waiting("c", gpu=4, ago=30), "n1")):  # fmt: skip
        state.apply(obj)
    state.carryover = {CLAIMS: {"ns/c": ["ns/c", "n2", "ns/c"]}}
    result = run_session(state)
    assert result.nominated == {"ns/c": "n2"}


def test_a_nominated_node_not_a_string_is_refused_with_its_field() -> None:
    with pytest.raises(InputError, match=r"Pod ns/c: status.nominatedNodeName must be a string"):
        ClusterState().apply(nominated(waiting("c", gpu=4, ago=30), ["n1"]))  # type: ignore[arg-type]


# --- two claims on one node --------------------------------------------------------------------------------


@pytest.mark.parametrize("failover", [False, True], ids=["carried", "read-back-after-a-failover"])
def test_two_claimants_on_one_node_keep_their_own_rooms(failover: bool) -> None:
    """The defect: ``c`` evicted ``v`` and ``o`` (of its priority, created before it) evicted ``w`` on
    the same node; once ``v`` was gone and ``w`` still terminated, ``o`` counted ``w``'s room as
    covering ``c``'s claim and was placed in ``v``'s room, evicted for ``c``, and ``c`` was sent to wait
    for ``w``'s. The claim whose victims are gone holds the free room; the other waits for its own.
    After a failover ``c``'s claim is read back from its nominated node (no victims recorded): it
    holds the free room first too."""
    state = ClusterState()
    v, w = running("v", on="n1", gpu=4), running("w", on="n1", gpu=4)
    for obj in base(node("n1", gpu="8"), v, w, waiting("c", gpu=4, ago=30, priority="high")):
        state.apply(obj)
    first = run_session(state)
    [evicted] = [e.pod for e in first.evictions]
    v, w = (v, w) if evicted == "ns/v" else (w, v)  # v: c's victim
    vkey, wkey = f"ns/{v['metadata']['name']}", f"ns/{w['metadata']['name']}"
    assert first.carryover[CLAIMS] == {"ns/c": ["ns/c", "n1", "ns/c", vkey]}
    state.apply(terminating(v))
    if failover:
        state.apply(nominated(waiting("c", gpu=4, ago=30, priority="high"), "n1"))
        state.carryover = {}
    else:
        state.carryover = first.carryover
    state.apply(waiting("o", gpu=4, ago=90, priority="high"))
    second = run_session(state)
    assert [e.pod for e in second.evictions] == [wkey]
    assert second.nominated == {"ns/c": "n1", "ns/o": "n1"}
    assert second.carryover[CLAIMS]["ns/o"] == ["ns/o", "n1", "ns/o", wkey]
    state.apply(terminating(w))
    state.delete("Pod", "ns", v["metadata"]["name"])
    state.carryover = second.carryover
    third = run_session(state)
    assert (placed(third), third.evictions) == ({"ns/c": "n1"}, [])
    assert third.nominated == {"ns/o": "n1"}  # o still waits, for w's room
    state.apply(running("c", on="n1", gpu=4, priority="high"))
    state.delete("Pod", "ns", w["metadata"]["name"])
    state.carryover = third.carryover
    assert placed(run_session(state)) == {"ns/o": "n1"}
