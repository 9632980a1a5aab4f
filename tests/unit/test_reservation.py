"""reservation alone: the earliest fit of a waiting gang over the expected ends of what runs (pure), and
in a session the EASY backfill rule: other pods use the reserved nodes only when expected to end before
the start or when they fit beside the reservation; nodes nobody reserved stay free to use."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from tests.builders import node, pod, podgroup, queue
from volsched.cache.state import ClusterState
from volsched.framework.decisions import SessionResult
from volsched.framework.registry import load_config, make_actions
from volsched.framework.runner import close_session, open_session
from volsched.plugins.reservation import CARRY, Ask, Release, earliest_fit, pack
from volsched.simulate.documents import iso

Obj = dict[str, Any]
NOW = 60 * 16_667.0  # a whole minute: the expected start is said to the minute
ALL = np.ones(3, dtype=bool)


def gpus(*amounts: float) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.array([[a] for a in amounts], dtype=float)


@pytest.mark.parametrize(
    ("free", "releases", "asks", "start", "nodes"),
    [
        pytest.param(gpus(8, 8, 0), [], [(8.0, ALL, 2)], NOW, [0, 1], id="fits-now"),
        pytest.param(gpus(4, 8, 0), [(NOW + 600, 0, 4.0), (NOW + 60, 2, 8.0)], [(8.0, ALL, 2)], NOW + 60,
                     [1, 2], id="the-first-end-that-makes-room"),
        pytest.param(gpus(4, 4, 0), [(NOW + 600, 0, 4.0), (NOW + 60, 1, 2.0)], [(8.0, ALL, 1)], NOW + 600,
                     [0], id="room-split-over-nodes-is-no-room"),
        pytest.param(gpus(0, 0, 0), [(math.inf, 0, 8.0), (NOW + 60, 1, 8.0)], [(8.0, ALL, 2)], math.inf,
                     [0, 1], id="a-pod-with-no-expected-end-frees-its-node-last"),
        pytest.param(gpus(8, 0, 0), [(NOW - 5, 1, 8.0)], [(8.0, ALL, 2)], NOW, [0, 1],
                     id="an-overdue-pod-ends-now"),
        pytest.param(gpus(8, 8, 8), [], [(8.0, np.array([False, True, True]), 2)], NOW, [1, 2],
                     id="only-feasible-nodes"),
        pytest.param(gpus(8, 8, 0), [], [(8.0, ALL, 3)], None, None, id="never-fits"),
        pytest.param(gpus(2, 8, 6), [], [(2.0, ALL, 4)], NOW, [1], id="packed-onto-the-fewest-nodes"),
    ],
)  # fmt: skip
def test_earliest_fit(
    free: Any,
    releases: list[tuple[float, int, float]],
    asks: list[tuple[float, Any, int]],
    start: float | None,
    nodes: list[int] | None,
) -> None:
    found = earliest_fit(
        free,
        [Release(end, n, np.array([amount])) for end, n, amount in releases],
        [Ask(np.array([amount]), mask, count) for amount, mask, count in asks],
        now=NOW,
    )
    if start is None:
        assert found is None
        return
    assert found is not None
    assert found[0] == start
    assert sorted(found[1]) == nodes


def test_pack_takes_what_each_node_gives() -> None:
    taken = pack(gpus(8, 8), [Ask(np.array([4.0]), np.ones(2, dtype=bool), 3)])
    assert taken is not None and {k: float(v[0]) for k, v in taken.items()} == {0: 8.0, 1: 4.0}


@pytest.mark.parametrize(
    ("idle", "nodes"),
    [
        pytest.param(None, {0: 8.0, 1: 8.0}, id="no-idle-given-node-order"),
        pytest.param(gpus(8, 0, 0), {1: 8.0, 2: 8.0}, id="a-node-idle-now-is-left-free"),
        pytest.param(gpus(0, 4, 0), {0: 8.0, 2: 8.0}, id="the-least-idle-first"),
    ],
)
def test_pack_holds_the_nodes_busy_until_the_start_before_idle_ones(
    idle: Any, nodes: dict[int, float]
) -> None:
    """Three nodes with room for one 8-GPU pod each at the start: the two held are those with the least
    room idle now (held idle until the start for nothing, where a busy one is busy anyway)."""
    taken = pack(gpus(8, 8, 8), [Ask(np.array([8.0]), ALL, 2)], idle=idle)
    assert taken is not None and {k: float(v[0]) for k, v in taken.items()} == nodes


def test_pack_drains_the_nodes_of_the_queues_furthest_past_their_share_first() -> None:
    """Three nodes as good at the start and as busy now: the two whose pods' queues come last in the
    queue order (``drain``: 1.0 the last, 0.0 the first) are held."""
    taken = pack(
        gpus(8, 8, 8), [Ask(np.array([8.0]), ALL, 2)], idle=gpus(0, 0, 0), drain=np.array([0.0, 1.0, 0.5])
    )
    assert taken is not None and sorted(taken) == [1, 2]


def test_the_reservation_drains_the_nodes_of_the_queue_past_its_share() -> None:
    """n1 runs b's pod, n2 and n3 a's; all end in 50m. Queue a holds 16 GPUs, b 8 (a comes after b in
    proportion's order): the gang reserves n2 and n3, so what stops running while they drain is a's
    (before: n1 and n2, by the nodes' order)."""
    objects = [
        node("n1", cpu="32", gpu="8"),
        node("n2", cpu="32", gpu="8"),
        node("n3", cpu="32", gpu="8"),
        queue("big", weight=4),
        queue("a"),
        queue("b"),
        created(podgroup("g", ns="ns", queue="big", min_member=2, phase="Inqueue"), NOW - 3600),
        *(pod(f"g-{i}", ns="ns", cpu="1", gpu="8", group="g") for i in range(2)),
    ]
    for name, where, q in (("x", "n1", "b"), ("y", "n2", "a"), ("z", "n3", "a")):
        obj = running(name, on=where, gpu=8, ago=600, runtime="1h")
        obj["metadata"]["annotations"]["scheduling.volsched.io/queue-name"] = q
        objects.append(obj)
    plugins = "{name: priority}, {name: gang}, {name: predicates}, {name: proportion}, {name: reservation}"
    result = session(objects, carry={"next": "ns/g"}, plugins=plugins)
    assert result.podgroups["ns/g"].reservation == "reserves 2 node(s) starting in 50m: n2, n3"


def test_a_node_free_now_stays_free_when_the_gang_starts_as_early_without_it() -> None:
    """n0 is free now, n1 and n2 free in 50m: the gang (two 8-GPU pods) starts in 50m either way, so it
    reserves n1 and n2 and a 5h pod takes n0 (before, n0 and n1 were reserved and n0 held idle)."""
    objects = [node("n0", cpu="32", gpu="8"), *cluster(waiting("s", gpu=8, runtime="5h"))]
    objects[7] = running("b", on="n2", gpu=8, ago=600, runtime="1h")
    objects.append(running("c", on="n3", gpu=8, ago=0, runtime="9h"))
    result = session(objects, carry={"next": "ns/g"})
    assert result.podgroups["ns/g"].reservation == "reserves 2 node(s) starting in 50m: n1, n2"
    assert placed(result) == {"ns/s": "n0"}


def running(name: str, *, on: str, gpu: int, ago: float, runtime: str | None) -> Obj:
    ann = {"scheduling.volsched.io/expected-runtime": runtime} if runtime else {}
    out = pod(name, ns="ns", cpu="1", gpu=str(gpu), node=on, queue="small", annotations=ann)
    out["status"]["startTime"] = iso(NOW - ago)
    return out


def waiting(name: str, *, gpu: int, runtime: str | None = None, created: float = NOW - 60) -> Obj:
    ann = {"scheduling.volsched.io/expected-runtime": runtime} if runtime else {}
    return pod(name, ns="ns", cpu="1", gpu=str(gpu), queue="small", annotations=ann, created=iso(created))


def session(objects: list[Obj], *, carry: dict[str, Any] | None, plugins: str | None = None) -> SessionResult:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    if carry is not None:
        state.carryover = {CARRY: carry}
    tiers = plugins or "{name: priority}, {name: gang}, {name: predicates}, {name: reservation}"
    config = load_config(text=f'actions: "enqueue, allocate"\ntiers:\n- plugins: [{tiers}]\n')
    s = open_session(state.snapshot(now=NOW), config)
    for action in make_actions(config):
        action.execute(s)
    return close_session(s)


def created(obj: Obj, at: float) -> Obj:
    obj["metadata"]["creationTimestamp"] = iso(at)
    return obj


def cluster(*small: Obj) -> list[Obj]:
    """n1 and n2 (8 GPUs each) busy until in 50m and 2h; n3 (8 GPUs) free; a gang of two 8-GPU pods
    created an hour ago waits in queue big."""
    return [
        node("n1", cpu="32", gpu="8"),
        node("n2", cpu="32", gpu="8"),
        node("n3", cpu="32", gpu="8"),
        queue("big"),
        queue("small"),
        running("a", on="n1", gpu=8, ago=600, runtime="1h"),
        running("b", on="n2", gpu=8, ago=0, runtime="2h"),
        created(podgroup("g", ns="ns", queue="big", min_member=2, phase="Inqueue"), NOW - 3600),
        *(pod(f"g-{i}", ns="ns", cpu="1", gpu="8", group="g") for i in range(2)),
        *small,
    ]


def placed(result: SessionResult) -> dict[str, str]:
    return {b.pod: b.node for b in result.binds}


# A gang of two 8-GPU pods needs two whole nodes; n3 is free now, n1 frees in 50m, n2 in 2h: the
# reservation is n1 and n3 from in 50m, and n3's idle GPUs go only to a pod that ends by then.
CASES = [
    ("none", [waiting("s", gpu=8, runtime="5h")], None, {"ns/s": "n3"}),
    ("short-backfills", [waiting("s", gpu=8, runtime="30m")], "g", {"ns/s": "n3"}),
    ("long-waits", [waiting("s", gpu=8, runtime="5h")], "g", {}),
    ("unknown-waits", [waiting("s", gpu=8)], "g", {}),
    ("fits-beside-nothing", [waiting("s", gpu=1, runtime="5h")], "g", {}),
]


@pytest.mark.parametrize(("small", "carry", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_easy_backfill(small: list[Obj], carry: str | None, expected: dict[str, str]) -> None:
    result = session(cluster(*small), carry=None if carry is None else {"next": f"ns/{carry}"})
    assert placed(result) == expected


def test_the_reservation_is_visible_on_the_podgroup() -> None:
    result = session(cluster(waiting("s", gpu=8, runtime="5h")), carry={"next": "ns/g"})
    status = result.podgroups["ns/g"]
    assert status.reservation == "reserves 2 node(s) starting in 50m: n1, n3"
    assert status.expected_start == NOW + 3000
    assert status.queue_position == 1
    events = [e for e in result.events if e.reason == "Reserved"]
    assert [(e.object, e.message) for e in events] == [("PodGroup ns/g", status.reservation)]
    why = result.unschedulable["ns/s"]
    assert "2 node(s) reserved for PodGroup ns/g starting in 50m" in why


def test_a_pod_of_another_namespace_is_not_told_the_name_of_the_job_nodes_are_reserved_for() -> None:
    """Whoever reads namespace other read "node(s) reserved for PodGroup ns/g" on its pending pod: another
    tenant's PodGroup name (as an eviction's beneficiary: render_eviction_told). Said now: a job of
    another namespace; a pod of the job's own namespace is told its name, as before."""
    theirs = pod("s", ns="other", cpu="1", gpu="8", queue="small", annotations={}, created=iso(NOW - 60))
    theirs["metadata"]["annotations"]["scheduling.volsched.io/expected-runtime"] = "5h"
    result = session(cluster(theirs, waiting("s", gpu=8, runtime="5h")), carry={"next": "ns/g"})
    told = result.unschedulable["other/s"]
    assert "2 node(s) reserved for a job of another namespace starting in 50m" in told, told
    assert "ns/g" not in told
    assert "2 node(s) reserved for PodGroup ns/g starting in 50m" in result.unschedulable["ns/s"]


def test_unreserved_nodes_stay_free_to_use() -> None:
    objects = [*cluster(waiting("s", gpu=4, runtime="5h")), node("n4", cpu="32", gpu="4")]
    assert placed(session(objects, carry={"next": "ns/g"})) == {"ns/s": "n4"}


def test_the_gang_is_named_for_the_next_session_and_dropped_once_placed() -> None:
    result = session(cluster(), carry=None)
    assert result.carryover[CARRY] == {"next": "ns/g"}
    free = [node("n1", cpu="32", gpu="8"), node("n2", cpu="32", gpu="8"), queue("big"),
            podgroup("g", ns="ns", queue="big", min_member=2, phase="Inqueue"),
            *(pod(f"g-{i}", ns="ns", cpu="1", gpu="8", group="g") for i in range(2))]  # fmt: skip
    result = session(free, carry={"next": "ns/g"})
    assert sorted(placed(result)) == ["ns/g-0", "ns/g-1"]
    assert CARRY not in result.carryover


@pytest.mark.parametrize(
    ("small_first", "head"), [(False, "ns/g"), (True, "ns/old")], ids=["big-first", "small-first"]
)
def test_the_head_is_the_first_waiting_job_of_the_queue_that_comes_first(
    small_first: bool, head: str
) -> None:
    """old (queue small) has waited two hours, g (queue big) one: the queue that comes first in the
    session's queue order reserves, whatever its job's age (before, the job created first did). No
    plugin orders queues here, so the older queue comes first (with proportion: the queue furthest
    below its deserved share)."""
    older = waiting("old", gpu=8, runtime="5h", created=NOW - 7200)
    objects = [*cluster(older), running("c", on="n3", gpu=8, ago=0, runtime="9h")]
    objects[3] = created(queue("big"), NOW - (100 if small_first else 200))
    objects[4] = created(queue("small"), NOW - (200 if small_first else 100))
    result = session(objects, carry=None)
    assert result.carryover[CARRY] == {"next": head}


def test_wait_time_holds_off_a_young_job() -> None:
    plugins = (
        "{name: priority}, {name: gang}, {name: predicates}, {name: reservation, arguments: {waitTime: 2h}}"
    )
    result = session(
        [*cluster(), running("c", on="n3", gpu=8, ago=0, runtime="9h")], carry=None, plugins=plugins
    )
    assert CARRY not in result.carryover


def test_a_long_pod_fits_beside_the_reservation_once() -> None:
    """n3 has 12 GPUs: the gang needs 8 of them at the start, so 4 are spare for pods that run past it,
    once (the first long pod takes them)."""
    objects = [
        *cluster(waiting("s1", gpu=4, runtime="5h"), waiting("s2", gpu=4, runtime="5h", created=NOW - 30)),
    ]
    objects[2] = node("n3", cpu="32", gpu="12")
    assert placed(session(objects, carry={"next": "ns/g"})) == {"ns/s1": "n3"}


def test_while_the_start_is_unknown_pods_that_say_their_run_time_backfill() -> None:
    """a on n1 and b on n2 say nothing of their run time: the gang's start is not known, so a 5h pod
    (it ends at a known time) may use the reserved nodes; a pod that says nothing may not."""
    objects = cluster(waiting("s", gpu=8, runtime="5h"), waiting("u", gpu=8, created=NOW - 30))
    objects[5] = running("a", on="n1", gpu=8, ago=600, runtime=None)
    objects[6] = running("b", on="n2", gpu=8, ago=0, runtime=None)
    result = session(objects, carry={"next": "ns/g"})
    assert result.podgroups["ns/g"].expected_start is None
    assert placed(result) == {"ns/s": "n3"}


def test_a_start_past_a_century_is_said_so_and_written_as_no_expected_start() -> None:
    """The defect: a running pod's expected run time of 10^12 s (any tenant's annotation may say it) put the
    reservation's start past the year 9999, and its PodGroup status could not be written as a date
    (ValueError): every status write of the session failed with it, session after session, and the
    dashboard's document with them."""
    from volsched.kube.status import podgroup_status
    from volsched.sessiondoc import session_json

    objects = cluster(waiting("s", gpu=8, runtime="5h"))
    objects[5] = running("a", on="n1", gpu=8, ago=600, runtime="1000000000000")
    objects[6] = running("b", on="n2", gpu=8, ago=0, runtime="1000000000000")
    result = session(objects, carry={"next": "ns/g"})
    status = result.podgroups["ns/g"]
    assert status.reservation == "reserves 2 node(s) starting in more than 100 years: n1, n3"
    assert status.expected_start is None
    assert podgroup_status(status)["expectedStart"] is None  # (none to write: a merge patch drops it)
    assert "expectedStart" not in session_json(result)["podgroups"]["ns/g"]


def test_a_topology_gang_is_not_planned_says_why_and_leaves_the_reservation_to_the_next() -> None:
    """An older gang placed in one domain of a node label is no head: it says on its PodGroup why none
    is held for it, and the gang behind it reserves (before, it took the head's place and nobody did)."""
    from volsched.kube.status import podgroup_status

    topo = created(podgroup("t", ns="ns", queue="small", min_member=2, phase="Inqueue", topology=("zone", "Required")),
                   NOW - 7200)  # fmt: skip
    objects = [
        *cluster(topo, *(pod(f"t-{i}", ns="ns", cpu="1", gpu="8", group="t") for i in range(2))),
        running("c", on="n3", gpu=8, ago=0, runtime="9h"),
    ]
    result = session(objects, carry=None)
    assert result.carryover[CARRY] == {"next": "ns/g"}
    reserved = [c for c in podgroup_status(result.podgroups["ns/t"])["conditions"] if c["type"] == "Reserved"]
    assert [(c["status"], c["reason"]) for c in reserved] == [("False", "NotPlanned")]
    assert "spec.topology" in reserved[0]["message"]
    assert result.podgroups["ns/g"].no_reservation is None


def pending_gang(name: str, *, at: float) -> list[Obj]:
    """A gang of two 8-GPU pods in queue big, not admitted yet (phase Pending)."""
    group = created(podgroup(name, ns="ns", queue="big", min_member=2, phase="Pending"), at)
    return [group, *(pod(f"{name}-{i}", ns="ns", cpu="1", gpu="8", group=name) for i in range(2))]


#: overcommit with no headroom: a job is admitted only while what runs and what is admitted leave it room.
TIGHT = (
    "{name: priority}, {name: gang}, {name: overcommit, arguments: {overcommit-factor: 1.0}},"
    " {name: predicates}, {name: proportion}, {name: reservation}"
)


def test_a_gang_the_clusters_room_keeps_out_reserves_and_is_admitted_once_its_nodes_drain() -> None:
    """g is not admitted (16 GPUs run of 24, it asks 16): smaller jobs would be admitted into every GPU
    that frees, so it reserves while not admitted; a pod that would run past the start stays off the
    reserved nodes, and once n1's pod ends g is admitted and placed on what was held for it."""
    objects = cluster()
    objects[3] = queue("big", weight=3)  # deserves 18 of the 24 GPUs: its share takes the gang
    objects[7:10] = pending_gang("g", at=NOW - 3600)
    result = session(objects, carry=None, plugins=TIGHT)
    assert result.podgroups["ns/g"].phase == "Pending"
    assert result.carryover[CARRY] == {"next": "ns/g"}
    result = session([*objects, waiting("s", gpu=8, runtime="5h")], carry={"next": "ns/g"}, plugins=TIGHT)
    assert placed(result) == {}
    assert result.podgroups["ns/g"].reservation == "reserves 2 node(s) starting in 50m: n1, n3"
    drained = [o for o in objects if o["metadata"]["name"] != "a"]
    result = session([*drained, waiting("s", gpu=8, runtime="5h")], carry={"next": "ns/g"}, plugins=TIGHT)
    assert placed(result) == {"ns/g-0": "n1", "ns/g-1": "n3"}


def test_a_job_not_admitted_never_reserves_ahead_of_one_its_queue_admitted() -> None:
    objects = [*cluster(), *pending_gang("p", at=NOW - 7200)]
    objects[3] = queue("big", weight=3)
    result = session(objects, carry=None, plugins=TIGHT)
    assert result.podgroups["ns/p"].phase == "Pending"
    assert result.carryover[CARRY] == {"next": "ns/g"}


def test_a_job_its_queue_would_refuse_leaves_the_reservation_to_the_next() -> None:
    """old (admitted before its queue's capability was cut) waited longer than g, but its queue may now
    hold 4 GPUs and it asks 8: no room helps it, so g reserves (before, old was the head and nobody did)."""
    old = created(podgroup("old", ns="ns", queue="capped", min_member=1, phase="Inqueue"), NOW - 7200)
    capped = [old, pod("old-0", ns="ns", cpu="1", gpu="8", group="old")]
    objects = [*cluster(*capped), queue("capped", capability={"nvidia.com/gpu": "4"})]
    plugins = "{name: priority}, {name: gang}, {name: predicates}, {name: proportion}, {name: reservation}"
    result = session(
        [*objects, running("c", on="n3", gpu=8, ago=0, runtime="9h")], carry=None, plugins=plugins
    )
    assert result.carryover[CARRY] == {"next": "ns/g"}


@pytest.mark.parametrize(
    ("limit", "p1"),
    [
        pytest.param(
            {"maxRunningJobs": 1}, [pod("p1", ns="ns", cpu="1", gpu="8", queue="limited")], id="jobs"
        ),
        pytest.param(
            {"maxRunningPods": 2},
            [
                podgroup("p1", ns="ns", queue="limited", min_member=2),
                *(pod(f"p1-{i}", ns="ns", cpu="1", gpu="4", group="p1") for i in range(2)),
            ],
            id="pods",
        ),
    ],
)
def test_a_job_its_namespaces_limit_keeps_out_reserves_nothing(limit: dict[str, int], p1: list[Obj]) -> None:
    """The defect: p1, kept out of its queue by its namespace's perNamespace limit (p0 runs), was the head
    and held n2 free for itself, though no room lets it in before p0 ends: y, another team's pod that fits
    there now, was kept off it for as long as p0 ran (a tenant could hold nodes idle so)."""
    limited = queue("limited")
    limited["spec"]["perNamespace"] = limit
    p0 = pod("p0", ns="ns", cpu="1", gpu="8", node="n1", queue="limited")
    y = pod("y", ns="team-b", cpu="1", gpu="8", queue="other", created=iso(NOW - 60))
    waiting = [created(obj, NOW - 3600) for obj in p1]
    objects = [
        node("n1", cpu="32", gpu="8"),
        node("n2", cpu="32", gpu="8"),
        limited,
        queue("other"),
        p0,
        *waiting,
        y,
    ]
    plugins = "{name: priority}, {name: gang}, {name: conformance}, {name: predicates}, {name: reservation}"
    result = session(objects, carry={"next": "ns/p1"}, plugins=plugins)
    assert placed(result) == {"team-b/y": "n2"}
    assert "ns/p1" not in str(result.carryover.get(CARRY))


def test_a_job_a_closed_queue_has_not_admitted_reserves_nothing() -> None:
    """The defect: p1 waited in a Closed queue, which admits no new job, and was the head all the same: it
    held n2 free for itself, and y, another queue's pod that fits there now, was kept off it for as long as
    the queue stayed closed."""
    closed = queue("closed")
    closed["spec"]["state"] = "Closed"
    p0 = pod("p0", ns="ns", cpu="1", gpu="8", node="n1", queue="other")
    p1 = pod("p1", ns="ns", cpu="1", gpu="8", queue="closed", created=iso(NOW - 3600))
    y = pod("y", ns="team-b", cpu="1", gpu="8", queue="other", created=iso(NOW - 60))
    objects = [
        node("n1", cpu="32", gpu="8"),
        node("n2", cpu="32", gpu="8"),
        closed,
        queue("other"),
        p0,
        p1,
        y,
    ]
    result = session(objects, carry={"next": "ns/p1"})
    assert placed(result) == {"team-b/y": "n2"}
    assert "ns/p1" not in str(result.carryover.get(CARRY))


def test_a_job_its_queues_rules_refuse_reserves_nothing_nor_holds_the_jobs_behind_it() -> None:
    """The defect: p1, of namespace evil, named queue team-a, whose namespaceSelector refuses it: it waited
    for ever and was the head all the same, holding n2 free for itself, so y, another queue's pod that fits
    there now, was kept off it (any tenant could hold nodes idle so, naming a queue not theirs)."""
    guarded = queue("team-a")
    guarded["spec"]["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    p0 = pod("p0", ns="ns", cpu="1", gpu="8", node="n1", queue="other")
    p1 = pod("p1", ns="evil", cpu="1", gpu="8", queue="team-a", created=iso(NOW - 3600))
    y = pod("y", ns="team-b", cpu="1", gpu="8", queue="other", created=iso(NOW - 60))
    objects = [
        node("n1", cpu="32", gpu="8"),
        node("n2", cpu="32", gpu="8"),
        guarded,
        queue("other"),
        p0,
        p1,
        y,
    ]
    plugins = "{name: priority}, {name: gang}, {name: conformance}, {name: predicates}, {name: reservation}"
    result = session(objects, carry={"next": "evil/p1"}, plugins=plugins)
    assert placed(result) == {"team-b/y": "n2"}
    alone = session([o for o in objects if o is not y], carry=None, plugins=plugins)
    assert CARRY not in alone.carryover  # nor is it the next head


def test_a_job_that_fits_nowhere_leaves_the_reservation_to_the_next() -> None:
    """The defect: huge (12 GPUs, no node has more than 8) could never run, yet it was the head session
    after session (its queue comes first and would take it): it planned nothing, so nobody reserved, and
    g waited while pods that run for hours took every GPU that freed."""
    first = queue("aaa")
    first["spec"]["weight"] = 10
    huge = created(pod("huge", ns="ns2", cpu="1", gpu="12", queue="aaa"), NOW - 7200)
    plugins = "{name: priority}, {name: gang}, {name: predicates}, {name: proportion}, {name: reservation}"
    objects = [*cluster(waiting("s", gpu=8, runtime="5h")), first, huge]
    assert session(objects, carry=None, plugins=plugins).carryover[CARRY] == {"next": "ns/g"}


def test_a_pod_without_a_podgroup_reserves_too() -> None:
    """one (8 GPUs, no PodGroup) fits on n1 once a (4 GPUs, ends in 50m) does: a 5h pod may not take
    n1's 4 idle GPUs meanwhile. (Before, a job of one pod was phase Pending at every session's open, so
    its reservation was never made: it could be the head and nobody reserved.)"""
    objects = [
        node("n1", cpu="32", gpu="8"),
        node("n2", cpu="32", gpu="8"),
        queue("small"),
        running("a", on="n1", gpu=4, ago=600, runtime="1h"),
        running("b", on="n2", gpu=8, ago=0, runtime="2h"),
        waiting("one", gpu=8, created=NOW - 600),
    ]
    result = session(objects, carry=None)
    assert result.carryover[CARRY] == {"next": "ns/one"}
    result = session([*objects, waiting("long", gpu=4, runtime="5h")], carry={"next": "ns/one"})
    assert placed(result) == {}
    assert "1 node(s) reserved for job ns/one starting in 50m" in result.unschedulable["ns/long"]
