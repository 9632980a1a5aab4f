"""Sessions woken by the cache: the doorbell rings on what a session would act on (a pod of ours pending,
capacity freed, an object a waiting pod may need changed) and on nothing else; the pacer starts the next
session at the period, or a minimum gap after the last one when the doorbell called for it; the
operator's session loop, woken from a watch thread, runs one session at a time and stops at once."""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from queue import SimpleQueue
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest

from tests.builders import (
    PRIORITIES,
    Obj,
    gang,
    namespace,
    node,
    pdb,
    pod,
    podgroup,
    priority_class,
    pv,
    pvc,
    queue,
    quota,
    volcano,
)
from tests.unit._cycle_harness import bound_event, cache, operator_at
from volsched.cache.doorbell import Doorbell, Rings
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cache.volcano import VOLCANO_PODGROUP, VOLCANO_QUEUE
from volsched.cycle import NullPort, run_cycle
from volsched.framework.registry import load_config
from volsched.kube.configsource import ConfigMapText
from volsched.kube.latency import PodLatency
from volsched.operator import Settings, sessions
from volsched.operator.aside import Activity
from volsched.operator.metrics import Metrics
from volsched.operator.sessions import Nudge, SessionLoop
from volsched.operator.settings import SessionSettings, build_parser, settings_from_args
from volsched.pacing import Pacer, pods_wait

NONE, ARRIVED, FREED, BOTH = Rings(), Rings(arrived=True), Rings(freed=True), Rings(arrived=True, freed=True)
RETRY = Rings(retry=True)
CONFIG = Rings(config=True)


# --- the pacer ------------------------------------------------------------------------------------------

PACER = Pacer(period=1.0, min_gap=0.1)

#: (case, started, ended, now, rings, waiting, leader, expected wait); retry_every is 0.25.
PACING: list[tuple[str, float, float, float, Rings, bool, bool, float]] = [
    ("nothing rang: the period from the start", 10.0, 10.05, 10.05, NONE, False, True, 0.95),
    ("a pod arrived: the minimum gap after the end", 10.0, 10.05, 10.05, ARRIVED, False, True, 0.1),
    ("a pod arrived after the gap: at once", 10.0, 10.05, 10.2, ARRIVED, False, True, 0.0),
    ("a long session: a gap as long as it took", 10.0, 10.3, 10.3, ARRIVED, False, True, 0.3),
    ("the period comes first", 10.0, 10.95, 10.95, ARRIVED, False, True, 0.05),
    ("the period is over: at once", 10.0, 11.2, 11.2, NONE, False, True, 0.0),
    ("capacity freed, nothing waits: the period", 10.0, 10.05, 10.05, FREED, False, True, 0.95),
    ("capacity freed while pods wait: the gap", 10.0, 10.05, 10.05, FREED, True, True, 0.1),
    ("both rang", 10.0, 10.05, 10.15, BOTH, False, True, 0.0),
    ("a retry never waits past the period", 10.0, 10.05, 10.05, RETRY, False, True, 0.95),
    ("a config loaded, nothing waits: the gap", 10.0, 10.05, 10.05, CONFIG, False, True, 0.1),
    ("a config loaded: never before the gap", 10.0, 10.3, 10.3, CONFIG, True, True, 0.3),
    ("a follower reads the Lease every retry_every", 10.0, 10.1, 10.1, NONE, False, False, 0.15),
    ("a follower is not woken by pods", 10.0, 10.01, 10.01, BOTH, True, False, 0.24),
]


@pytest.mark.parametrize(
    ("case", "started", "ended", "now", "rings", "waiting", "leader", "expected"),
    PACING,
    ids=[p[0] for p in PACING],
)
def test_the_next_session_starts_at_the_period_or_a_gap_after_a_ring(
    case: str,
    started: float,
    ended: float,
    now: float,
    rings: Rings,
    waiting: bool,
    leader: bool,
    expected: float,
) -> None:
    wait = PACER.next_wait(
        started=started,
        ended=ended,
        now=now,
        rings=rings,
        waiting=waiting,
        leader=leader,
        retry_every=0.25,
    )
    assert wait == pytest.approx(expected)


#: (case, started, ended, now, rings, expected wait) with an hour's period and a gap of 0.1 s.
RETRIES: list[tuple[str, float, float, float, Rings, float]] = [
    ("a bind failed after its session: a second after the end", 10.0, 10.05, 10.05, RETRY, 1.0),
    ("a second has passed since: at once", 10.0, 10.05, 11.1, RETRY, 0.0),
    ("after a long session: as long as it took", 10.0, 11.5, 11.5, RETRY, 1.5),
    ("a pod arrived too: the minimum gap", 10.0, 10.05, 10.05, Rings(arrived=True, retry=True), 0.1),
    (
        "capacity freed, nothing waits: still the retry's second",
        10.0,
        10.05,
        10.05,
        Rings(freed=True, retry=True),
        1.0,
    ),
]


@pytest.mark.parametrize(
    ("case", "started", "ended", "now", "rings", "expected"), RETRIES, ids=[r[0] for r in RETRIES]
)
def test_a_failed_bind_is_retried_a_second_after_the_last_session_not_every_min_gap(
    case: str, started: float, ended: float, now: float, rings: Rings, expected: float
) -> None:
    pacer = Pacer(period=3600.0, min_gap=0.1)
    kw: dict[str, Any] = dict(waiting=False, leader=True, retry_every=0.25)
    assert pacer.next_wait(started=started, ended=ended, now=now, rings=rings, **kw) == pytest.approx(
        expected
    )


#: (case, started, ended, busy, expected wait) with a pod arrived, a period of 1 s and a gap of 0.1 s.
BUSY: list[tuple[str, float, float, float | None, float]] = [
    ("a long session that kept the processor: as long as its CPU took", 10.0, 10.4, 0.3, 0.3),
    ("a long session mostly waiting for it: the minimum gap", 10.0, 10.4, 0.02, 0.1),
    ("CPU time never lengthens the gap past the wall's", 10.0, 10.2, 0.5, 0.2),
    ("its CPU time unknown: its wall time", 10.0, 10.3, None, 0.3),
    ("the period still comes first", 10.0, 10.8, 0.8, 0.2),
]


@pytest.mark.parametrize(("case", "started", "ended", "busy", "expected"), BUSY, ids=[b[0] for b in BUSY])
def test_a_woken_session_waits_as_long_as_the_last_one_kept_the_processor(
    case: str, started: float, ended: float, busy: float | None, expected: float
) -> None:
    kw: dict[str, Any] = dict(rings=ARRIVED, waiting=False, leader=True, retry_every=0.25)
    wait = PACER.next_wait(started=started, ended=ended, now=ended, busy=busy, **kw)
    assert wait == pytest.approx(expected)


#: (case, started, ended, now, busy, rings, waiting, sparse, expected wait), a period of 1 s and a gap of
#: 0.1 s. ``sparse``: the last session found at most one job to place.
SPARSE: list[tuple[str, float, float, float, float | None, Rings, bool, bool, float]] = [
    ("a pod after a one-job session: as long as that session's CPU", 10.0, 10.005, 10.005, 0.002, ARRIVED, False, True, 0.002),
    ("the same, 1 ms later: what is left of it", 10.0, 10.005, 10.006, 0.002, ARRIVED, False, True, 0.001),
    ("a pod after a one-job session whose CPU is unknown: its wall time", 10.0, 10.005, 10.005, None, ARRIVED, False, True, 0.005),
    ("a pod after a session with several jobs: the minimum gap", 10.0, 10.005, 10.005, 0.002, ARRIVED, False, False, 0.1),
    ("a long one-job session: as long as it kept the processor", 10.0, 10.4, 10.4, 0.3, ARRIVED, False, True, 0.3),
    ("capacity freed while pods wait: the gap still", 10.0, 10.005, 10.005, 0.002, FREED, True, True, 0.1),
    ("a config loaded: the gap still", 10.0, 10.005, 10.005, 0.002, CONFIG, False, True, 0.1),
    ("nothing rang: the period", 10.0, 10.005, 10.005, 0.002, NONE, False, True, 0.995),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "started", "ended", "now", "busy", "rings", "waiting", "sparse", "expected"),
    SPARSE,
    ids=[c[0] for c in SPARSE],
)
def test_a_pod_arriving_after_a_session_with_one_job_waits_only_as_long_as_that_session_took(
    case: str,
    started: float,
    ended: float,
    now: float,
    busy: float | None,
    rings: Rings,
    waiting: bool,
    sparse: bool,
    expected: float,
) -> None:
    """The minimum gap gathers pods arriving faster than sessions run; after a session that found one
    job to place (or none), a pod that arrives is alone: it waits only the half of the processor the
    others keep."""
    wait = PACER.next_wait(
        started=started, ended=ended, now=now, rings=rings, waiting=waiting, leader=True,
        retry_every=0.25, busy=busy, sparse=sparse,
    )  # fmt: skip
    assert wait == pytest.approx(expected)


#: (what the session met, how many jobs it had to place: 0 and 1 are sparse)
SPARSE_CYCLES: list[tuple[str, list[Obj], bool]] = [
    ("nothing pending", [node("n1", cpu="4"), pod("a", node="n1")], True),
    ("one pod pending", [node("n1", cpu="4"), pod("a")], True),
    ("a gang of two pending: one job", [node("n1", cpu="4"), queue("q"), *gang("g", size=2, phase="Inqueue")], True),
    ("two pods pending", [node("n1", cpu="4"), pod("a"), pod("b")], False),
]  # fmt: skip


@pytest.mark.parametrize(("what", "objects", "sparse"), SPARSE_CYCLES, ids=[c[0] for c in SPARSE_CYCLES])
def test_a_cycle_says_whether_it_found_at_most_one_job_to_place(
    what: str, objects: list[Obj], sparse: bool
) -> None:
    report = run_cycle(cache(*objects), load_config(None), NullPort(), now=5000.0)
    assert report.sparse is sparse


def test_a_gap_as_long_as_the_period_means_a_session_every_period_only() -> None:
    pacer = Pacer(period=1.0, min_gap=1.0)
    kw: dict[str, Any] = dict(ended=10.05, now=10.05, rings=BOTH, waiting=True, leader=True, retry_every=0.25)
    assert pacer.next_wait(started=10.0, **kw) == pytest.approx(0.95)


#: (what the session met, the cluster, whether pods of ours are left waiting for capacity to free)
LEFT_WAITING: list[tuple[str, list[Obj], bool]] = [
    ("everything placed", [node("n1", cpu="2"), pod("a")], False),
    ("a gang placed", [node("n1", cpu="2"), queue("q"), *gang("a", size=2, phase="Inqueue")], False),
    ("a pod that does not fit", [node("n1", cpu="1"), pod("a", cpu="2")], True),
    (
        "a gang pipelined onto the room its victims free",
        [
            node("n1", cpu="3"), queue("q"), *PRIORITIES,
            podgroup("v", ns="ns", queue="q", min_member=1, priority_class="low"),
            *(pod(f"v-{i}", ns="ns", group="v", node="n1", priority_class="low") for i in range(3)),
            *gang("a", size=2, phase="Inqueue", priority_class="high"),
        ],
        True,
    ),
    (
        "a pod without a PodGroup pipelined onto the room its victim frees",
        [
            node("n1", cpu="10"), queue("q"), *PRIORITIES,
            podgroup("v", ns="ns", queue="q", min_member=1, priority_class="low"),
            *(pod(f"v-{i}", ns="ns", group="v", node="n1", priority_class="low") for i in range(9)),
            pod("a", cpu="2", priority_class="high"),
        ],
        True,
    ),
]  # fmt: skip


@pytest.mark.parametrize(("what", "objects", "waiting"), LEFT_WAITING, ids=[w[0] for w in LEFT_WAITING])
def test_pods_left_pending_or_pipelined_make_freed_capacity_call_for_a_session(
    what: str, objects: list[Obj], waiting: bool
) -> None:
    """A preemptor pipelined onto its victims' room is not unschedulable, but it waits for them to go:
    their going must wake a session, or it waits out the period."""
    config = load_config(Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml")
    result = run_cycle(cache(*objects), config, NullPort(), now=5000.0).result
    assert pods_wait(result) is waiting


# --- what rings -----------------------------------------------------------------------------------------


def finished(feeder: Any, key: str, *, rv: int) -> Obj:
    raw = feeder.state.raw_pods[key]
    return {
        **raw,
        "status": {"phase": "Succeeded"},
        "metadata": {**raw["metadata"], "resourceVersion": str(rv)},
    }


def updated(feeder: Any, key: str, *, rv: int, **status: Any) -> Obj:
    """The cached pod ``key`` again with another resourceVersion and ``status`` (a status update)."""
    raw = feeder.state.raw_pods[key]
    return {
        **raw,
        "status": {**raw.get("status", {}), **status},
        "metadata": {**raw["metadata"], "resourceVersion": str(rv)},
    }


def edited(feeder: Any, key: str, *, rv: int, spec: Obj | None = None, labels: Obj | None = None) -> Obj:
    """The cached pod ``key`` again with another resourceVersion, its spec and labels updated."""
    raw = feeder.state.raw_pods[key]
    meta = {**raw["metadata"], "resourceVersion": str(rv)}
    if labels is not None:
        meta["labels"] = {**meta.get("labels", {}), **labels}
    return {**raw, "spec": {**raw["spec"], **(spec or {})}, "metadata": meta}


def ungated(feeder: Any, key: str, *, rv: int) -> Obj:
    """The cached pod ``key`` with its scheduling gates removed (what the controller holding it does)."""
    raw = edited(feeder, key, rv=rv)
    raw["spec"] = {k: v for k, v in raw["spec"].items() if k != "schedulingGates"}
    return raw


def versioned(obj: Obj, rv: int) -> Obj:
    obj["metadata"].update(resourceVersion=str(rv), uid=f"uid-{obj['metadata']['name']}")
    return obj


def delete(kind: str, name: str, ns: str | None = "default") -> Callable[[Any], object]:
    return lambda f: f.delete(kind, {"metadata": {"namespace": ns, "name": name}})


def budget(
    rv: int = 60, *, allowed: int = 1, app: str = "r", policy: str | None = None, **status: int
) -> Obj:
    """PodDisruptionBudget "keep" (app=``app``), as the disruption controller left it."""
    obj = pdb("keep", {"matchLabels": {"app": app}}, maxUnavailable=1)
    if policy:
        obj["spec"]["unhealthyPodEvictionPolicy"] = policy
    obj["status"] = {"disruptionsAllowed": allowed, **status}
    return versioned(obj, rv)


def put_budget(**kw: Any) -> Callable[[Any], object]:
    return lambda f: f.apply("PodDisruptionBudget", budget(**kw))


#: (what happens, the event, expected rings). The cache holds nodes n1 and n2, pod "a" of ours pending,
#: pod "r" of ours running on n1, pod "other" of another scheduler pending, PodGroup "g", Queue "q".
RINGS: list[tuple[str, Callable[[Any], object], Rings]] = [
    ("a new pod of ours", lambda f: f.apply("Pod", versioned(pod("b"), 60)), ARRIVED),
    (
        "a new pod of another scheduler",
        lambda f: f.apply("Pod", versioned(pod("c", scheduler="x"), 60)),
        NONE,
    ),
    ("a new pod bound already", lambda f: f.apply("Pod", versioned(pod("d", node="n2"), 60)), NONE),
    (
        "a status update of a pending pod",
        lambda f: f.apply("Pod", updated(f, "default/a", rv=60, reason="x")),
        NONE,
    ),
    (
        "a status update of a running pod",
        lambda f: f.apply("Pod", updated(f, "default/r", rv=60, reason="x")),
        NONE,
    ),
    (
        "a pending pod's last scheduling gate removed",
        lambda f: f.apply("Pod", ungated(f, "default/gated", rv=60)),
        ARRIVED,
    ),
    (
        "a gated pod's status updated",
        lambda f: f.apply("Pod", updated(f, "default/gated", rv=60, reason="x")),
        NONE,
    ),
    (
        "a new gated pod of ours",
        lambda f: f.apply("Pod", versioned(pod("b", gates=["example.com/wait"]), 60)),
        NONE,
    ),
    (
        "a pending pod's node selector edited",
        lambda f: f.apply("Pod", edited(f, "default/a", rv=60, spec={"nodeSelector": {"zone": "b"}})),
        ARRIVED,
    ),
    (
        "a pending pod relabelled",
        lambda f: f.apply("Pod", edited(f, "default/a", rv=60, labels={"x": "y"})),
        ARRIVED,
    ),
    (
        "a pending pod sent again, another resourceVersion",
        lambda f: f.apply("Pod", edited(f, "default/a", rv=60)),
        NONE,
    ),
    (
        "a running pod relabelled",
        lambda f: f.apply("Pod", edited(f, "default/r", rv=60, labels={"x": "y"})),
        NONE,
    ),
    ("a running pod finished", lambda f: f.apply("Pod", finished(f, "default/r", rv=60)), FREED),
    ("a running pod deleted", delete("Pod", "r"), FREED),
    ("a pending pod deleted", delete("Pod", "a"), NONE),
    ("a new node", lambda f: f.apply("Node", versioned(node("n3"), 60)), FREED),
    ("a node changed", lambda f: f.apply("Node", versioned(node("n1", cpu="16"), 60)), FREED),
    ("a node's heartbeat", lambda f: f.apply("Node", versioned(node("n1", cpu="4"), 60)), NONE),
    ("a node deleted", delete("Node", "n2", None), NONE),
    ("a PodGroup changed", lambda f: f.apply("PodGroup", versioned(podgroup("g", min_member=3), 60)), FREED),
    (
        "a PodGroup's status echoed",
        lambda f: f.apply("PodGroup", versioned(podgroup("g", min_member=2), 60)),
        NONE,
    ),
    ("a Queue changed", lambda f: f.apply("Queue", versioned(queue("q", weight=5), 60)), FREED),
    ("a Queue deleted", delete("Queue", "q", None), FREED),
    ("a claim bound", lambda f: f.apply("PersistentVolumeClaim", versioned(pvc("c", volume="v"), 60)), FREED),
    (
        "a PriorityClass",
        lambda f: f.apply("PriorityClass", versioned(priority_class("high", 100), 60)),
        FREED,
    ),
    ("a budget that allows more", put_budget(allowed=2), FREED),
    ("a budget that allows less", put_budget(allowed=0), NONE),
    ("a budget's status sent again", put_budget(allowed=1), NONE),
    ("a budget selecting other pods", put_budget(app="s"), FREED),
    ("a budget letting unready pods go", put_budget(policy="AlwaysAllow"), FREED),
    ("a budget with more healthy pods", put_budget(currentHealthy=3, desiredHealthy=2), FREED),
    ("a budget deleted", delete("PodDisruptionBudget", "keep"), FREED),
    (
        "a new budget",
        lambda f: f.apply("PodDisruptionBudget", versioned(pdb("new", {}, minAvailable=1), 60)),
        NONE,
    ),
    ("an assumed bind", lambda f: f.assume("default/a", "uid-a", "n2"), NONE),
    ("a stale event", lambda f: f.apply("Pod", {**f.state.raw_pods["default/a"]}), NONE),
]


def ringing_cache() -> Any:
    return cache(
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        pod("a"),
        pod("r", node="n1"),
        pod("other", scheduler="x"),
        pod("gated", gates=["example.com/wait"]),
        podgroup("g", min_member=2),
        queue("q"),
        budget(50),
    )


@pytest.mark.parametrize(("what", "event", "rings"), RINGS, ids=[r[0] for r in RINGS])
def test_the_doorbell_rings_on_what_a_session_would_act_on_only(
    what: str, event: Callable[[Any], object], rings: Rings
) -> None:
    feeder = ringing_cache()
    feeder.state.doorbell.take()
    event(feeder)
    assert feeder.state.doorbell.take() == rings


#: (what the watch sends, whether it differs from what the cache holds). The cache holds namespace "ns"
#: (label team=a) with a ResourceQuota giving it weight 3, claim "c" bound to volume "v" (on n1), and
#: PriorityClass "low" (10); pod "a" of ours waits. The same object again (a quota's status updated,
#: another resourceVersion) is nothing a session reads: no session for it, no change for IdleSkip.
AGAIN: list[tuple[str, Obj, bool]] = [
    ("a quota's status updated", {**quota("ns", 3), "status": {"used": {"pods": "4"}}}, False),
    ("a quota's weight changed", quota("ns", 5), True),
    ("a quota in a namespace not seen yet", quota("other", 3), True),
    ("a namespace again", namespace("ns", labels={"team": "a"}), False),
    ("a namespace relabelled", namespace("ns", labels={"team": "b"}), True),
    ("a claim again", pvc("c", volume="v"), False),
    ("a claim bound elsewhere", pvc("c", volume="w"), True),
    ("a volume again", pv("v", nodes=["n1"]), False),
    ("a volume moved", pv("v", nodes=["n2"]), True),
    ("a PriorityClass again", priority_class("low", 10), False),
    ("a PriorityClass's value changed", priority_class("low", 20), True),
    ("a PriorityClass made the default", priority_class("low", 10, default=True), True),
]


@pytest.mark.parametrize(("what", "obj", "differs"), AGAIN, ids=[a[0] for a in AGAIN])
def test_an_object_sent_again_unchanged_neither_rings_nor_counts_as_a_change(
    what: str, obj: Obj, differs: bool
) -> None:
    feeder = cache(
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        pod("a"),
        namespace("ns", labels={"team": "a"}),
        quota("ns", 3),
        pvc("c", volume="v"),
        pv("v", nodes=["n1"]),
        priority_class("low", 10),
    )
    feeder.state.doorbell.take()
    before = feeder.state.changes
    assert feeder.apply(obj["kind"], versioned(obj, 60))
    assert feeder.state.doorbell.take() == (FREED if differs else NONE)
    assert (feeder.state.changes != before) is differs


#: (kind, namespace, name) of objects the cache of ``ringing_cache`` never held: their deletion (a
#: watch's replay, an object refused as invalid, the last events of a kind no longer served) frees
#: nothing and is not a change, so IdleSkip does not run a session for it.
NEVER_HELD: list[tuple[str, str | None, str]] = [
    ("Node", None, "n9"),
    ("Pod", "default", "ghost"),
    ("PodGroup", "default", "ghost"),
    ("Queue", None, "ghost"),
    (VOLCANO_PODGROUP, "default", "ghost"),
    (VOLCANO_QUEUE, None, "ghost"),
    ("ResourceQuota", "default", "ghost"),
    ("Namespace", None, "ghost"),
    ("PersistentVolumeClaim", "default", "ghost"),
    ("PersistentVolume", None, "ghost"),
    ("PriorityClass", None, "ghost"),
]


@pytest.mark.parametrize(("kind", "ns", "name"), NEVER_HELD, ids=[n[0] for n in NEVER_HELD])
def test_deleting_an_object_the_cache_never_held_neither_rings_nor_counts_as_a_change(
    kind: str, ns: str | None, name: str
) -> None:
    feeder = ringing_cache()
    feeder.state.doorbell.take()
    before = feeder.state.changes
    feeder.delete(kind, {"metadata": {"namespace": ns, "name": name, "resourceVersion": "60"}})
    assert feeder.state.doorbell.take() == NONE
    assert feeder.state.changes == before


#: (what the watch sends: kind and object, whether it differs from what the cache holds). The cache holds
#: PodGroup "g" (minMember 1, queue q, phase Inqueue: the status volsched wrote) and Queue "q" (weight 1),
#: ours and Volcano's "vg"/"vq" alike; pod "a" of ours waits. The same object again (the echo of a status
#: volsched wrote, another resourceVersion) is nothing a session reads: no session, no change for IdleSkip.
GROUPS_AGAIN: list[tuple[str, str, Obj, bool]] = [
    ("a PodGroup's status echoed", "PodGroup", podgroup("g", queue="q", phase="Inqueue"), False),
    ("a PodGroup's minMember changed", "PodGroup", podgroup("g", min_member=2, queue="q", phase="Inqueue"), True),
    ("a PodGroup's phase changed", "PodGroup", podgroup("g", queue="q", phase="Pending"), True),
    ("a Queue again", "Queue", queue("q"), False),
    ("a Queue's weight changed", "Queue", queue("q", weight=2), True),
    ("a Volcano PodGroup again", VOLCANO_PODGROUP, volcano(podgroup("vg", queue="q", phase="Inqueue")), False),
    (
        "a Volcano PodGroup's minMember changed",
        VOLCANO_PODGROUP,
        volcano(podgroup("vg", min_member=2, queue="q", phase="Inqueue")),
        True,
    ),
    ("a Volcano Queue again", VOLCANO_QUEUE, volcano(queue("vq")), False),
    ("a Volcano Queue's weight changed", VOLCANO_QUEUE, volcano(queue("vq", weight=3)), True),
]  # fmt: skip


@pytest.mark.parametrize(("what", "kind", "obj", "differs"), GROUPS_AGAIN, ids=[a[0] for a in GROUPS_AGAIN])
def test_a_podgroup_or_queue_sent_again_unchanged_neither_rings_nor_counts_as_a_change(
    what: str, kind: str, obj: Obj, differs: bool
) -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"))
    for k, held in [
        ("Queue", queue("q")),
        ("PodGroup", podgroup("g", queue="q", phase="Inqueue")),
        (VOLCANO_QUEUE, volcano(queue("vq"))),
        (VOLCANO_PODGROUP, volcano(podgroup("vg", queue="q", phase="Inqueue"))),
    ]:
        assert feeder.apply(k, versioned(held, 50))
    feeder.state.doorbell.take()
    before = feeder.state.changes
    assert feeder.apply(kind, versioned(obj, 60))
    assert feeder.state.doorbell.take() == (FREED if differs else NONE)
    assert (feeder.state.changes != before) is differs


#: (what happens once pod "a"'s bind to n1 is assumed, the event, expected rings)
ASSUMED: list[tuple[str, Callable[[Any], object], Rings]] = [
    ("the watch confirms the bind", lambda f: f.apply("Pod", bound_event(f, "default/a", "n1", rv=60)), NONE),
    (
        "the watch confirms the bind of a pod that already finished",
        lambda f: f.apply(
            "Pod", {**bound_event(f, "default/a", "n1", rv=60), "status": {"phase": "Succeeded"}}
        ),
        FREED,
    ),
    ("the bind failed: the cache forgets it", lambda f: f.forget("default/a"), NONE),
    # Its time to live over, unconfirmed: a bind whose outcome is unknown never landed, so the pod
    # waits again (ringing as the watch would for a pod pending again); a bind that completed keeps
    # its node until the watch says otherwise.
    ("an unknown bind expires: the pod waits again", lambda f: expired(f, unsure=True), ARRIVED),
    ("a completed bind expires", lambda f: expired(f, unsure=False), NONE),
]


def expired(feeder: Any, *, unsure: bool) -> None:
    """Pod "a"'s bind completed (``unsure``: its outcome unknown) and its time to live ends at once."""
    feeder.assume_ttl = 0.0
    feeder.finish("default/a", unsure=unsure)
    assert feeder.expire() == 1
    assert feeder.state.tasks["default/a"].node_name == (None if unsure else "n1")


@pytest.mark.parametrize(("what", "event", "rings"), ASSUMED, ids=[r[0] for r in ASSUMED])
def test_the_doorbell_does_not_ring_for_what_the_session_did_itself(
    what: str, event: Callable[[Any], object], rings: Rings
) -> None:
    feeder = ringing_cache()
    feeder.assume("default/a", "uid-a", "n1")
    feeder.state.doorbell.take()
    event(feeder)
    assert feeder.state.doorbell.take() == rings


def test_the_listener_hears_each_kind_once_until_the_bell_is_taken() -> None:
    bell = Doorbell()
    heard: list[Rings] = []
    bell.listen(lambda: heard.append(bell.peek()))
    for kind in ("arrived", "arrived", "freed", "arrived", "freed"):
        bell.ring(kind)
    assert heard == [ARRIVED, BOTH] and bell.count == {"arrived": 3, "freed": 2, "retry": 0, "config": 0}
    assert bell.take() == BOTH and bell.peek() == NONE
    bell.ring("freed")
    assert heard[-1] == FREED and len(heard) == 3
    with pytest.raises(ValueError, match="unknown ring"):
        bell.ring("bogus")


# --- the operator's session loop ------------------------------------------------------------------------


class LoopWorld:
    """What ``SessionLoop.run`` reads of the operator, with a ``run_once`` that counts sessions and
    leaves pods waiting or not."""

    def __init__(self, *, period: float, min_gap: float, leader: bool = True, leaves_waiting: bool = False):
        self.settings = SimpleNamespace(
            session=SessionSettings(period=period, min_gap=min_gap),
            lease=SimpleNamespace(retry_every=0.05, renew_every=3600.0),
        )
        self.feeder = Feeder(ClusterState())
        self.state = self.feeder.state
        self.lease = SimpleNamespace(is_leader=leader, ensure=self.ensure)
        self.ensured = 0
        self.health = SimpleNamespace(failed=lambda *_: None)
        self.metrics = Metrics()
        self.latency = PodLatency()
        self.leaves_waiting = leaves_waiting
        self.waiting = False
        self.sparse = False
        self.last_tick = 0.0
        self.sessions = 0
        #: The last session's processor time, for the pacer (see ``run_once``).
        self.session_cpu: float | None = None
        self.ran = threading.Condition()
        #: The thread each session ran on.
        self.threads: list[int] = []
        #: The thread each connection opened ahead was opened on, and the sessions run before it.
        self.connected: list[tuple[int, int]] = []
        self.writer = SimpleNamespace(
            connect_ahead=lambda: self.connected.append((threading.get_ident(), self.sessions))
        )
        self.activity = Activity()
        #: The pod watch's thread (``SessionLoop.pod_thread_started``): none here but where a test says.
        self.inline_thread: int | None = None
        self._turns: Any = None  # SessionLoop.run's, while it runs
        #: Whether the imports after ready saw the sessions quiet, in each session.
        self.quiet_in_session: list[bool] = []
        #: Whether the ConfigMap or Volcano's kinds are due a look (``SessionLoop.chores_due``).
        self.chores = False
        #: The session thread's nudge (see :func:`watched`).
        self.nudge = WatchedNudge()

    def chores_due(self, now: float) -> bool:
        return self.chores

    def run_once(self) -> None:
        with self.ran:
            self.quiet_in_session.append(self.activity.quiet())
            self.threads.append(threading.get_ident())
            self.sessions += 1
            self.waiting = self.leaves_waiting
            # What the cycle measures (its thread's processor time): none worth a gap. Left unknown, the
            # pacer would count the session's wall time, which a loaded machine stretches at random, and
            # a pod arriving after a sparse session would find its session not due at once.
            self.session_cpu = 0.0
            self.ran.notify_all()

    def ran_here(self, pod_event: Callable[[], object]) -> int:
        """The sessions run on the calling thread while ``pod_event`` ran (counted before and after: an
        ended thread's identity is given to the next one started)."""
        with self.ran:
            before = self.threads.count(threading.get_ident())
        pod_event()
        with self.ran:
            return self.threads.count(threading.get_ident()) - before

    def ensure(self) -> bool:
        """The Lease renewed outside a session (``run_once`` renews it itself)."""
        with self.ran:
            self.ensured += 1
            self.ran.notify_all()
        return bool(self.lease.is_leader)

    def keep_up(self) -> None:
        """Between far-apart sessions: the Lease renewed (and the ConfigMap, Volcano's CRDs looked at)."""
        self.ensure()

    def wait_ensured(self, n: int) -> bool:
        with self.ran:
            return self.ran.wait_for(lambda: self.ensured >= n, timeout=30)

    def woken(self) -> float | None:
        return self.metrics.registry.get_sample_value("volsched_sessions_woken_total")

    def wait_sessions(self, n: int) -> bool:
        with self.ran:
            return self.ran.wait_for(lambda: self.sessions >= n, timeout=30)


async def in_loop(world: LoopWorld, body: Callable[[], Any]) -> None:
    """Run the session loop while ``body`` runs; then stop it, which must end its wait at once (the
    period is an hour: a loop that waited it out would fail the wait below)."""
    stop = asyncio.Event()
    with watched(world):
        task = asyncio.create_task(SessionLoop.run(world, stop))  # type: ignore[arg-type]
        try:
            await body()
        finally:
            stop.set()
            await asyncio.wait_for(task, timeout=30)


class WatchedNudge(Nudge):
    """The session thread's nudge, as an Event under one Condition, telling when that thread *parks*:
    waits with the flag clear. The flag is cleared just before the thread looks at the doorbell, and any
    ring after that sets it; so while the thread is parked it has looked at everything rung before and
    found no session to run before the wait it parked for. What a test waits for to know that nothing
    more happens, instead of a moment."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = threading.Condition()
        self._flag = False
        #: The timeout of the wait the thread is parked in; None when it is not parked.
        self._parked_for: float | None = None

    def set(self) -> None:
        with self._changed:
            self._flag = True
            self._changed.notify_all()

    def clear(self) -> None:
        with self._changed:
            self._flag = False

    def is_set(self) -> bool:
        with self._changed:
            return self._flag

    def wait(self, timeout: float) -> bool:
        with self._changed:
            if not self._flag and timeout > 0:
                self._parked_for = timeout
                self._changed.notify_all()
            self._changed.wait_for(lambda: self._flag, timeout=max(timeout, 0.0))
            self._parked_for = None
            return self._flag

    def parked(self) -> float:
        """Blocks until the session thread is parked; the seconds it parked for."""
        with self._changed:
            assert self._changed.wait_for(
                lambda: self._parked_for is not None and not self._flag, timeout=30
            ), "the session thread did not park"
            assert self._parked_for is not None
            return self._parked_for


class WaitedLock:
    """``threading.Lock``'s interface, telling who waits to acquire it (by thread name)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self.waiting: list[str] = []

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(blocking=False):
            return True
        if not blocking:
            return False
        with self._changed:
            self.waiting.append(threading.current_thread().name)
            self._changed.notify_all()
        try:
            return self._lock.acquire(timeout=timeout)
        finally:
            with self._changed:
                self.waiting.remove(threading.current_thread().name)

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *_: object) -> None:
        self.release()

    def wait_for_waiter(self, who: Callable[[str], bool]) -> None:
        """Blocks until a thread ``who`` accepts (by name) waits to acquire the lock."""
        with self._changed:
            assert self._changed.wait_for(lambda: any(who(n) for n in self.waiting), timeout=30)


@contextlib.contextmanager
def watched(world: LoopWorld) -> Iterator[None]:
    """While it lasts, ``SessionLoop.run`` parks its session thread on ``world.nudge`` and takes turns on
    a :class:`WaitedLock`."""

    class Turns(sessions._Turns):
        def __init__(self, loop: SessionLoop, *, halt: threading.Event, nudge: Nudge) -> None:
            super().__init__(loop, halt=halt, nudge=nudge)
            self.running = WaitedLock()  # type: ignore[assignment]

    with (
        mock.patch.object(sessions, "Nudge", lambda: world.nudge),
        mock.patch.object(sessions, "_Turns", Turns),
    ):
        yield


async def parked(world: LoopWorld) -> float:
    """Once the session thread has parked: it has looked at everything rung so far and runs no session
    before the seconds returned (or a ring)."""
    return await asyncio.to_thread(world.nudge.parked)


def test_a_pod_arriving_on_a_watch_thread_wakes_a_session_long_before_the_period() -> None:
    world = LoopWorld(period=3600, min_gap=0.0)

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)  # the first session runs at once
        for expected in (2, 3):
            threading.Thread(target=world.state.doorbell.ring, args=("arrived",)).start()
            assert await asyncio.to_thread(world.wait_sessions, expected)
        assert await parked(world) > 60
        assert world.sessions == 3  # one session for each ring, none more
        assert world.woken() == 2

    asyncio.run(in_loop(world, body))


def test_the_sessions_are_busy_for_the_imports_after_ready_from_a_pods_arrival_to_its_sessions_end() -> None:
    """What the imports after ready step aside for (``volsched.operator.aside``): a pod of ours arrived
    (the doorbell, on the watch thread that rang), a session that runs; quiet once it ended."""
    world = LoopWorld(period=3600, min_gap=3600)  # a ring calls for a session only an hour after the last

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        assert await asyncio.to_thread(world.activity.wait_quiet, 30)  # the session ended
        assert world.quiet_in_session == [False]
        ring = threading.Thread(target=world.state.doorbell.ring, args=("arrived",))
        ring.start()
        ring.join()
        assert not world.activity.quiet()  # arrived: its session is to come
        assert world.sessions == 1

    asyncio.run(in_loop(world, body))


def test_a_ring_wakes_the_session_thread_while_the_event_loop_is_busy() -> None:
    """The watch thread's ring wakes the sessions' own thread directly: a session starts while the
    event loop is held (kopf, the HTTP server), and all sessions run on that one thread (its connection
    is the one a lone session's bind goes out on, kept warm)."""
    world = LoopWorld(period=3600, min_gap=0.0)

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        for expected in (2, 3):
            threading.Thread(target=world.state.doorbell.ring, args=("arrived",)).start()
            assert world.wait_sessions(expected)  # on the event loop's thread, holding it
        assert len(set(world.threads)) == 1
        assert world.threads[0] != threading.get_ident()

    asyncio.run(in_loop(world, body))


def test_the_session_thread_opens_its_connection_once_after_its_first_session() -> None:
    """A lone session's bind goes out on the session thread's own connection (``KubePort.bind``): it is
    opened after the first session, before any pod arrives, not by the first arriving pod's bind."""
    world = LoopWorld(period=3600, min_gap=0.0)

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        for expected in (2, 3):
            threading.Thread(target=world.state.doorbell.ring, args=("arrived",)).start()
            assert await asyncio.to_thread(world.wait_sessions, expected)
        await parked(world)
        assert world.connected == [(world.threads[0], 1)]  # once, on the sessions' thread, after the first

    asyncio.run(in_loop(world, body))


def test_an_unknown_bind_whose_time_to_live_ends_between_sessions_wakes_one() -> None:
    """A bind whose outcome is unknown keeps its pod assumed for the time to live; when that ends with
    no event showing the pod bound, the pod waits again and a session places it, not the period."""
    world = LoopWorld(period=3600, min_gap=0.0)
    feeder = world.feeder
    feeder.assume_ttl = 0.3
    assert feeder.apply("Pod", {**pod("a"), "metadata": {"name": "a", "namespace": "default", "uid": "u"}})
    feeder.assume("default/a", "u", "n1")
    feeder.finish("default/a", unsure=True)

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 2)  # the first at once, the next at expiry
        assert world.state.tasks["default/a"].node_name is None  # the pod waits again
        assert await parked(world) > 60  # nothing left to expire
        assert world.sessions == 2 and world.woken() == 1

    asyncio.run(in_loop(world, body))


@pytest.mark.parametrize("leaves_waiting", [False, True], ids=["nothing waits", "pods wait"])
def test_freed_capacity_wakes_a_session_only_while_pods_wait(leaves_waiting: bool) -> None:
    world = LoopWorld(period=3600, min_gap=0.0, leaves_waiting=leaves_waiting)

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        await asyncio.to_thread(ring_on_a_thread, world, "freed")
        if leaves_waiting:
            assert await asyncio.to_thread(world.wait_sessions, 2)
        else:
            assert await parked(world) > 60
            assert world.sessions == 1

    asyncio.run(in_loop(world, body))


def test_a_follower_is_not_woken_by_pods() -> None:
    world = LoopWorld(period=3600, min_gap=0.0, leader=False)
    world.settings.lease.retry_every = 3600  # the Lease is read again only in an hour

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        await asyncio.to_thread(ring_on_a_thread, world, "arrived")
        assert await parked(world) > 60
        assert world.sessions == 1 and world.woken() == 0

    asyncio.run(in_loop(world, body))


def test_a_followers_reads_of_the_lease_are_not_counted_as_woken_sessions() -> None:
    world = LoopWorld(period=3600, min_gap=0.0, leader=False)  # reads the Lease every 0.05 s

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 3)
        assert world.woken() == 0

    asyncio.run(in_loop(world, body))


def test_a_quiet_leader_with_a_long_period_renews_the_lease_without_running_sessions() -> None:
    world = LoopWorld(period=3600, min_gap=0.0)
    world.settings.lease.renew_every = 0.05  # the Lease would lapse long before the next period

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        assert await asyncio.to_thread(world.wait_ensured, 3)
        assert world.sessions == 1 and world.woken() == 0

    asyncio.run(in_loop(world, body))


# --- an arriving pod's session on the pod watch's thread ------------------------------------------------


def ring_on_a_thread(world: LoopWorld, kind: str) -> None:
    """The doorbell rung on a watch thread of its own, once that thread has ended."""
    thread = threading.Thread(target=world.state.doorbell.ring, args=(kind,))
    thread.start()
    thread.join(30)
    assert not thread.is_alive()


def pod_watch(world: LoopWorld, body: Callable[[], object]) -> object:
    """``body`` run on a thread of its own taken as the pod watch's (``SessionLoop.pod_thread_started``):
    what it returns, once it has."""
    out: list[object] = []

    def watch() -> None:
        world.inline_thread = threading.get_ident()
        out.append(body())

    thread = threading.Thread(target=watch)
    thread.start()
    thread.join(30)
    assert out, "the pod watch's thread did not end"
    return out[0]


def turn_let_go(world: LoopWorld) -> None:
    """Wait for the session thread to let its turn go after its first session and park (the connection it
    opens then, the pacing): until then a pod's offer finds the turn taken and wakes that thread instead,
    which under load came first. The turn let go once is not enough: that thread takes it again at the
    top of its loop to pace, and a pod's session arriving meanwhile found it taken (under load, once in
    15 runs: the stop test then waited on that thread, which waited for the turn)."""
    world.nudge.parked()


def arrive(world: LoopWorld) -> int:
    """What the pod watch's thread does with an arriving pod's event: the doorbell rung as the cache
    takes the pod, then the offer made once the event is in (``SessionLoop.after_pod_event``); returns
    the sessions run on that thread by the time the offer came back (not all sessions run by then: the
    session thread, woken by the offer or by a ring of the session the offer ran, may have run one too)."""

    def event() -> None:
        world.state.doorbell.ring("arrived")
        SessionLoop.after_pod_event(world)  # type: ignore[arg-type]

    return world.ran_here(event)


def test_a_pod_arriving_after_a_sparse_session_has_its_session_on_the_pod_watchs_thread() -> None:
    """No wake-up of the session thread and no hand-over of the interpreter on the pod's way: the thread
    that took the pod into the cache runs its session at once, before it reads the next event."""
    world = LoopWorld(period=3600, min_gap=0.0)
    world.sparse = True  # the last session found at most one job to place

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        await asyncio.to_thread(turn_let_go, world)
        watch_thread: list[int] = []

        def one() -> object:
            watch_thread.append(threading.get_ident())
            return arrive(world)

        assert await asyncio.to_thread(pod_watch, world, one) == 1  # run by the time the offer returned
        assert world.threads[1] == watch_thread[0] != world.threads[0]
        assert await parked(world) > 60  # never nudged: the offer ran the session itself
        assert world.sessions == 2 and world.woken() == 1  # not run again by the session thread

    asyncio.run(in_loop(world, body))


@pytest.mark.parametrize("why", ["not sparse", "freed, nothing waits", "a follower"])
def test_the_pod_watchs_thread_runs_no_session_the_pacer_would_not_run_now(why: str) -> None:
    """The pod watch's thread runs a session only for a pod arriving alone when the pacer calls for a
    session at once: after a session with several jobs (pods arriving together are gathered by the gap)
    the session thread runs it, woken, as before; capacity freed while nothing waits, or a pod arriving
    at a follower (never woken by pods), call for none."""
    world = LoopWorld(period=3600, min_gap=0.0, leader=why != "a follower")
    world.sparse = why != "not sparse"
    world.settings.lease.retry_every = 3600
    kind = "freed" if why.startswith("freed") else "arrived"

    def event() -> None:
        world.state.doorbell.ring(kind)
        SessionLoop.after_pod_event(world)  # type: ignore[arg-type]

    def one() -> object:
        return world.ran_here(event)

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        assert await asyncio.to_thread(pod_watch, world, one) == 0
        if why == "not sparse":
            assert await asyncio.to_thread(world.wait_sessions, 2)
            assert len(set(world.threads)) == 1
        else:
            assert await parked(world) > 60  # nudged by the offer, it looked and runs none
            assert world.sessions == 1

    asyncio.run(in_loop(world, body))


def test_an_arriving_pod_while_a_session_runs_is_placed_by_the_next_one_on_the_session_thread() -> None:
    """The offer finds a session under way (on the session thread): no second session beside it, and the
    ring not lost: the session thread runs the next one once its own has ended."""
    world = LoopWorld(period=3600, min_gap=0.0)
    world.sparse = True
    in_session, release = threading.Event(), threading.Event()
    count = world.run_once

    def slow_session() -> None:
        count()
        if world.sessions == 2:  # the second session holds on until the pod has arrived
            in_session.set()
            assert release.wait(30)

    world.run_once = slow_session  # type: ignore[method-assign]

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        world.waiting = True  # freed capacity calls for a session: the second, on the session thread
        world.leaves_waiting = True
        threading.Thread(target=world.state.doorbell.ring, args=("freed",)).start()
        assert await asyncio.to_thread(in_session.wait, 30)
        assert await asyncio.to_thread(pod_watch, world, lambda: arrive(world)) == 0
        release.set()
        assert await asyncio.to_thread(world.wait_sessions, 3)
        assert len(set(world.threads)) == 1  # all three on the session thread

    asyncio.run(in_loop(world, body))


def test_a_ring_from_a_session_on_the_pod_watchs_thread_wakes_the_session_thread() -> None:
    """What a session run on the pod watch's thread rings itself (a failed bind's retry, claims given
    back) is not left for that thread's next event: the session thread hears it."""
    world = LoopWorld(period=3600, min_gap=0.0)
    world.sparse = True
    count = world.run_once

    def ringing_session() -> None:
        count()
        if world.sessions == 2:
            world.state.doorbell.ring("arrived")  # (a pod of ours back to pending)

    world.run_once = ringing_session  # type: ignore[method-assign]

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        await asyncio.to_thread(turn_let_go, world)
        assert await asyncio.to_thread(pod_watch, world, lambda: arrive(world)) == 1
        assert await asyncio.to_thread(world.wait_sessions, 3)
        assert world.threads[2] == world.threads[0] != world.threads[1]

    asyncio.run(in_loop(world, body))


def test_stopping_waits_for_a_session_on_the_pod_watchs_thread_and_none_starts_after() -> None:
    world = LoopWorld(period=3600, min_gap=0.0)
    world.sparse = True
    in_session, release = threading.Event(), threading.Event()
    count = world.run_once

    def slow_session() -> None:
        count()
        if world.sessions == 2:
            in_session.set()
            assert release.wait(30)

    world.run_once = slow_session  # type: ignore[method-assign]
    watch_result: list[object] = []

    async def main() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(SessionLoop.run(world, stop))  # type: ignore[arg-type]
        assert await asyncio.to_thread(world.wait_sessions, 1)
        await asyncio.to_thread(turn_let_go, world)
        turns = world._turns
        watch = threading.Thread(target=lambda: watch_result.append(pod_watch(world, lambda: arrive(world))))
        watch.start()
        assert await asyncio.to_thread(in_session.wait, 30)
        stop.set()
        # Stopping has come to wait for the turn the session on the pod watch's thread holds (on a thread
        # of the event loop's pool: not the session thread, which ends at the stop without a turn).
        await asyncio.to_thread(turns.running.wait_for_waiter, lambda name: name != "volsched-sessions")
        assert not task.done()  # the session on the pod watch's thread ends first
        release.set()
        await asyncio.wait_for(task, timeout=30)
        await asyncio.to_thread(watch.join, 30)
        assert watch_result == [1]
        assert pod_watch(world, lambda: arrive(world)) == 0  # stopped: no session any more
        assert world.sessions == 2

    with watched(world):
        asyncio.run(main())


def test_min_gap_is_a_flag_and_a_setting() -> None:
    args = build_parser().parse_args(["--min-gap", "0.25", "--period", "2"])
    s = settings_from_args(args).session
    assert (s.min_gap, s.period) == (0.25, 2.0)
    assert settings_from_args(build_parser().parse_args([])).session.min_gap == SessionSettings().min_gap


def test_the_operators_bind_failing_after_its_session_rings_the_doorbell(tmp_path: Path) -> None:
    """The failed bind is settled, and the pod placed again, by a cycle: the port's call rings for one."""
    with operator_at(tmp_path) as op:
        op.state.doorbell.take()
        assert op.port.on_failed is not None
        op.port.on_failed()  # what a bind worker calls
        assert op.state.doorbell.take() == RETRY  # a retry: not at once (see the pacing table)


def test_a_quiet_leader_with_a_long_period_ticks_the_liveness_clock_as_it_renews() -> None:
    world = LoopWorld(period=3600, min_gap=0.0)
    world.settings.lease.renew_every = 0.05

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 1)
        await parked(world)  # the session (or a renewal after it) ended: its tick is in
        after_session, ensured = world.last_tick, world.ensured
        assert await asyncio.to_thread(world.wait_ensured, ensured + 2)  # the first one has ticked
        assert world.sessions == 1 and world.last_tick > after_session  # alive, not a session

    asyncio.run(in_loop(world, body))


def test_a_stalled_session_loop_shows_within_the_liveness_floor_whatever_the_period(tmp_path: Path) -> None:
    """The loop ticks at least every ``lease.renew_every`` (a session or a renewal): a loop silent for
    100 s is stalled with a one-hour period too, not only after ten periods (ten hours)."""

    def hourly(settings: Settings) -> None:
        settings.session.period = 3600.0

    with operator_at(tmp_path, configure=hourly) as op:
        op.synced.set()
        op.loop.last_tick = time.monotonic() - 100.0
        assert op._liveness() == "session loop stalled"
        op.loop.last_tick = time.monotonic() - 5.0
        assert op._liveness() is None


@pytest.mark.parametrize("holds", [False, True], ids=["the Lease lost", "the Lease kept"])
def test_renewing_the_lease_between_far_apart_sessions_updates_the_leader_gauge(
    tmp_path: Path, holds: bool
) -> None:
    """With a long period, keep_up is the only read of the Lease for a while: volsched_leader must say
    what it found, as a session's read does, not what the last session found."""
    with operator_at(tmp_path) as op:
        op.metrics.leader.set(0 if holds else 1)  # what the last session found
        op.lease.ensure = lambda: holds  # type: ignore[method-assign]
        op.reloader.reload = lambda **_: False  # type: ignore[method-assign]
        op.volcano.follow = lambda **_: None  # type: ignore[method-assign]
        op.loop.keep_up()
        assert op.metrics.registry.get_sample_value("volsched_leader") == (1.0 if holds else 0.0)


def test_a_gated_pod_is_not_placed_until_its_last_gate_is_removed() -> None:
    """The apiserver refuses the binding of a pod with scheduling gates: a session must not place it
    (nor bind it in a loop of retries); once the gates are gone it is placed."""
    feeder = cache(node("n1", cpu="4"), pod("gated", gates=["example.com/a", "example.com/b"]))
    config = load_config()
    assert run_cycle(feeder, config, NullPort(), now=5000.0).result.binds == []
    assert feeder.apply(
        "Pod", edited(feeder, "default/gated", rv=60, spec={"schedulingGates": [{"name": "example.com/b"}]})
    )
    assert run_cycle(feeder, config, NullPort(), now=5001.0).result.binds == []
    assert feeder.apply("Pod", ungated(feeder, "default/gated", rv=61))
    binds = run_cycle(feeder, config, NullPort(), now=5002.0).result.binds
    assert [(b.pod, b.node) for b in binds] == [("default/gated", "n1")]


def test_a_config_loaded_between_far_apart_sessions_wakes_one() -> None:
    """keep_up (the Lease renewed between sessions of an hour's period) found a new config: the session
    that acts on it runs now, not at the period."""
    world = LoopWorld(period=3600, min_gap=0.0)
    world.settings.lease.renew_every = 0.05
    loads = iter([True])

    def keep_up() -> None:
        world.ensure()
        if next(loads, False):
            world.state.doorbell.ring("config")

    world.keep_up = keep_up  # type: ignore[method-assign]

    async def body() -> None:
        assert await asyncio.to_thread(world.wait_sessions, 2)
        assert await asyncio.to_thread(world.wait_ensured, 4)  # renewals go on, with no more sessions
        assert world.sessions == 2 and world.woken() == 1

    asyncio.run(in_loop(world, body))


def test_the_operator_rings_when_a_poll_read_behind_the_sessions_finds_a_new_config(tmp_path: Path) -> None:
    """The first read is made at once (no session runs before it); a poll's read is made on a thread of
    its own, and when it shows another resourceVersion the doorbell rings: the session it calls for (here
    keep_up, between far-apart sessions) loads that config and acts on it."""
    with operator_at(tmp_path) as op:
        text = (
            Path(__file__).resolve().parents[2] / "examples" / "reclaim-preempt-scheduler.yaml"
        ).read_text()
        version = ["1"]
        reads: list[str] = []
        readers: SimpleQueue[threading.Thread] = SimpleQueue()  # each read's thread, as it reads

        def read(at_start: bool) -> ConfigMapText:
            reads.append(threading.current_thread().name)
            readers.put(threading.current_thread())
            return ConfigMapText(resource_version=version[0], uid="u", text=text)

        def poll() -> Rings:
            """A poll falls due; keep_up starts its read behind; what rang once that read's thread ended
            (it rings after it is no longer fetching: waiting for the flag alone could look too soon)."""
            op.reloader._checked = -math.inf
            n = len(reads)
            op.loop.keep_up()
            reader = readers.get(timeout=10)  # the read, made on its own thread
            assert len(reads) == n + 1 and reader is not threading.current_thread()
            reader.join(10)  # that thread ended: it rang, or never will
            assert not reader.is_alive()
            return op.state.doorbell.take()

        op.lease.ensure = lambda: True  # type: ignore[method-assign]
        op.volcano.follow = lambda **_: None  # type: ignore[method-assign]
        op.reloader.read = read  # type: ignore[method-assign]
        op.state.doorbell.take()
        op.loop.keep_up()  # the first read, at once
        assert readers.get_nowait() is threading.current_thread()
        assert op.state.doorbell.take() == CONFIG and op.config.source.endswith("(resourceVersion 1)")
        assert poll() == NONE  # the same version: nothing to act on
        op.loop.keep_up()  # judges that read: nothing new
        assert op.state.doorbell.take() == NONE
        version[0] = "2"
        assert poll() == CONFIG  # the read behind found another version
        assert op.config.source.endswith("(resourceVersion 1)")  # not loaded on the reading thread
        op.loop.keep_up()  # what the rung session does first
        assert op.config.source.endswith("(resourceVersion 2)")
        assert reads[0] != "volsched-config-read" and set(reads[1:]) == {"volsched-config-read"}


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "aiohttp's client (a proxy configured)"])
def test_the_pod_watchs_thread_opens_its_write_connection_as_it_starts_when_it_has_one_of_its_own(
    direct: bool,
) -> None:
    """The lone bind of a session on the pod watch's thread goes out on that thread's own connection,
    opened as the thread starts (before its first event), not by the first arriving pod's bind. Through
    aiohttp's client no connection is any thread's own: nothing is opened then (nor aiohttp imported on the
    way to the first session)."""
    world = LoopWorld(period=3600, min_gap=0.0)
    world.writer.rest = SimpleNamespace(direct=direct)
    ident = pod_watch(world, lambda: (SessionLoop.pod_thread_started(world), threading.get_ident())[1])  # type: ignore[arg-type]
    assert world.inline_thread == ident
    assert world.connected == ([(ident, 0)] if direct else [])
