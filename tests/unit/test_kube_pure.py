"""The pure parts of the operator: the token bucket, status rendering and the watch feeder."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

from tests.builders import node as builders_node
from tests.builders import pod as builders_pod
from tests.builders import podgroup, queue
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.framework.decisions import Code, PodGroupStatus, QueueStatus, Status
from volsched.kube import status
from volsched.kube.ratelimit import EventFilter, TokenBucket
from volsched.kube.writer import EventTarget, event_name


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_token_bucket_allows_a_burst_then_the_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=10, burst=3, clock=clock, sleep=clock.sleep)
    assert [bucket.try_take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.try_take() == pytest.approx(0.1)
    for _ in range(5):
        bucket.take()
    assert clock.now == pytest.approx(0.5)  # five more tokens at 10/s


def test_token_bucket_never_saves_more_than_the_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=100, burst=2, clock=clock, sleep=clock.sleep)
    clock.now = 60
    assert bucket.available == 2


@pytest.mark.parametrize("bad", [{"rate": 0, "burst": 1}, {"rate": 1, "burst": 0}])
def test_token_bucket_rejects_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        TokenBucket(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "amount", "text"),
    [
        ("cpu", 2, "2"),
        ("cpu", 1.5, "1500m"),
        ("memory", 4 * 2**30, "4Gi"),
        ("memory", 1000, "1000"),
        ("pods", 3, "3"),
    ],
)
def test_quantities_are_kubernetes_quantities(name: str, amount: float, text: str) -> None:
    assert status.quantity(name, amount) == text


def _pg(**kw: object) -> PodGroupStatus:
    base = dict(
        phase="Pending", queue="q", min_member=3, running=0, succeeded=0, failed=0, pending=3, scheduled=0
    )
    base.update(kw)
    return PodGroupStatus(**base)  # type: ignore[arg-type]


def test_podgroup_status_says_why_it_is_not_scheduled() -> None:
    why = Status(Code.UNSCHEDULABLE, "allocate", ("3 pods need 6 cpu, 4 free",))
    out = status.podgroup_status(_pg(rejections=(why,)))
    assert out["phase"] == "Pending"
    assert out["conditions"] == [
        {
            "type": "Scheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "3 pods need 6 cpu, 4 free",
        }
    ]
    ok = status.podgroup_status(_pg(phase="Running", scheduled=3, pending=0))
    assert ok["conditions"][0]["status"] == "True"


def test_podgroup_status_says_where_it_stands_and_what_is_reserved_for_it() -> None:
    out = status.podgroup_status(
        _pg(
            queue_position=2,
            expected_start=1_800_000_000.0,
            reservation="reserves 1 node(s) starting in 5m: n1",
        )
    )
    assert out["queuePosition"] == 2
    assert out["expectedStart"] == "2027-01-15T08:00:00Z"
    assert out["conditions"][1] == {
        "type": "Reserved",
        "status": "True",
        "reason": "Reserved",
        "message": "reserves 1 node(s) starting in 5m: n1",
    }
    far = status.podgroup_status(_pg(queue_position=status.WRITTEN_POSITIONS + 1))
    assert far["queuePosition"] is None  # written for the first of each queue only
    plain = status.podgroup_status(_pg())
    # null: a merge patch drops what an earlier session wrote
    assert plain["queuePosition"] is None and plain["expectedStart"] is None
    assert [c["type"] for c in plain["conditions"]] == ["Scheduled"]


def test_transition_time_is_kept_while_the_condition_holds() -> None:
    rendered = status.podgroup_status(_pg())
    first = status.with_transition_times(rendered, None, "T1")
    again = status.with_transition_times(rendered, first, "T2")
    assert again["conditions"][0]["lastTransitionTime"] == "T1"
    flipped = status.with_transition_times(
        status.podgroup_status(_pg(phase="Running", scheduled=3)), again, "T3"
    )
    assert flipped["conditions"][0]["lastTransitionTime"] == "T3"


def test_queue_status_counts_podgroups_and_renders_quantities() -> None:
    q = QueueStatus(
        name="q", state="Open", weight=2, allocated={"cpu": 1.5, "memory": 2 * 2**30, "pods": 2},
        request={}, guarantee={}, capability=None, deserved={"cpu": 4.0}, share=0.375,
        podgroups={"Running": 1, "Inqueue": 2},
    )  # fmt: skip
    out = status.queue_status(q)
    assert out["allocated"] == {"cpu": "1500m", "memory": "2Gi"}
    assert out["allocatedSummary"] == "cpu=1.5 memory=2Gi"  # as people read it, as the demo and dashboard
    assert out["deserved"] == {"cpu": "4"} and out["share"] == 0.375
    assert (out["running"], out["inqueue"], out["pending"]) == (1, 2, 0)


def test_queue_status_shows_the_parent_and_a_problem_as_a_condition() -> None:
    q = QueueStatus(
        name="hadoop", state="Open", weight=1, allocated={"cpu": 8.0}, request={}, guarantee={},
        capability=None, deserved={"cpu": 8.0}, real_capability={"cpu": 32.0}, parent="bigdata",
        problems=[("GuaranteeNotMet", "guarantee of queue hadoop cannot be met: ... (missing cpu 4)")],
    )  # fmt: skip
    out = status.queue_status(q)
    assert out["parent"] == "bigdata" and out["realCapability"] == {"cpu": "32"}
    (cond,) = out["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Valid", "False", "GuaranteeNotMet")
    assert "missing cpu 4" in cond["message"]
    top = status.queue_status(
        QueueStatus(name="q", state="Open", weight=1, allocated={}, request={}, guarantee={}, capability=None)
    )
    assert top["parent"] == "root" and top["conditions"][0]["status"] == "True"


def test_simulate_table_lists_queues_as_a_tree() -> None:
    from volsched.render import queue_tree_order

    queues = {
        "spark": {"parent": "bigdata"},
        "bigdata": {"parent": None},
        "hadoop": {"parent": "bigdata"},
        "services": {"parent": None},
        "x": {"parent": "y"},
        "y": {"parent": "x"},
    }
    assert queue_tree_order(queues) == [
        ("bigdata", 0), ("hadoop", 1), ("spark", 1), ("services", 0), ("x", 0), ("y", 0)
    ]  # fmt: skip


def test_an_event_names_its_object_and_counts() -> None:
    ev = status.object_event(
        kind="Pod", api_version="v1", namespace="ns", name="p", uid="u", reason="FailedScheduling",
        message="why", now="T", event_name="p.x", count=3,
    )  # fmt: skip
    assert ev["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "ns",
        "name": "p",
        "uid": "u",
    }
    assert (ev["reason"], ev["message"], ev["count"]) == ("FailedScheduling", "why", 3)


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ("preempt", "PreemptionByScheduler"),
        ("reclaim", "ReclaimByScheduler"),
        ("shuffle", "RebalancingByScheduler"),
        ("something-new", "EvictionByScheduler"),
    ],
)
def test_disruption_target_condition_reason_names_the_action(action: str, reason: str) -> None:
    cond = status.disruption_target_condition(action, "why", "T")["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "DisruptionTarget",
        "True",
        reason,
        "why",
    )


def test_event_names_are_one_per_object_and_reason_and_valid() -> None:
    a = EventTarget("Pod", "v1", "ns", "P" * 300, "0d3f-UID-9")
    names = {event_name(a, r) for r in ("FailedScheduling", "Preempted", "PodGroupNotFound")}
    assert len(names) == 3
    for name in names:
        assert len(name) <= 253 and name == name.lower() and re.fullmatch(r"[a-z0-9.-]+", name)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_event_filter_never_repeats_a_message_and_limits_the_rate() -> None:
    clock = _Clock()
    f = EventFilter(burst=2, every=10.0, clock=clock)
    assert f.admit("u1", "R", "a")
    f.sent("u1", "R", "a")
    assert not f.admit("u1", "R", "a")  # the same message twice in a row: never
    assert f.admit("u1", "R", "b")
    f.sent("u1", "R", "b")
    assert not f.admit("u1", "R", "c")  # burst of 2 used up
    assert f.admit("u2", "R", "c")  # another object has its own budget
    clock.now = 10.0
    assert f.admit("u1", "R", "c")  # one more per 10 s
    assert f.last("u1", "R") == ("b", 2) and f.limited == 1
    f.forget("u1")
    assert f.last("u1", "R") is None and f.admit("u1", "R", "b")


def _pod(rv: int, node: str | None = None, uid: str = "u1") -> dict[str, object]:
    spec: dict[str, object] = {
        "schedulerName": "volsched",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": uid, "resourceVersion": str(rv)},
        "spec": spec,
    }


def test_feeder_drops_events_older_than_what_it_holds() -> None:
    feeder = Feeder(ClusterState())
    assert feeder.apply("Pod", _pod(5, node="n1"))
    assert not feeder.apply("Pod", _pod(3))  # a late replay of the unbound pod
    assert feeder.state.tasks["ns/p"].node_name == "n1"
    feeder.delete("Pod", _pod(6, node="n1"))
    assert not feeder.apply("Pod", _pod(6, node="n1"))
    assert "ns/p" not in feeder.state.tasks


def test_an_assumed_bind_survives_stale_events_until_it_expires() -> None:
    clock = Clock()
    feeder = Feeder(ClusterState(), assume_ttl=10, clock=clock)
    feeder.apply("Pod", _pod(1))
    feeder.assume("ns/p", "u1", "n2")
    assert feeder.state.tasks["ns/p"].node_name == "n2"
    clock.now = 100  # the bind is still in flight: its assumption does not expire
    feeder.apply("Pod", _pod(2))  # e.g. our own status patch, before the bind shows in the watch
    assert feeder.state.tasks["ns/p"].node_name == "n2"
    feeder.finish("ns/p")  # the bind completed at 100: the time to live counts from here
    clock.now = 109
    feeder.apply("Pod", _pod(3))
    assert feeder.state.tasks["ns/p"].node_name == "n2"
    clock.now = 111
    feeder.apply("Pod", _pod(4))
    assert feeder.state.tasks["ns/p"].node_name is None


def test_a_forgotten_bind_leaves_the_pod_pending_unless_the_api_bound_it() -> None:
    feeder = Feeder(ClusterState())
    feeder.apply("Pod", _pod(1))
    feeder.assume("ns/p", "u1", "n2")
    feeder.forget("ns/p")  # the bind failed
    assert feeder.state.tasks["ns/p"].node_name is None and not feeder.is_assumed("ns/p")
    feeder.apply("Pod", _pod(2))
    assert feeder.state.tasks["ns/p"].node_name is None
    feeder.assume("ns/p", "u1", "n2")
    feeder.apply("Pod", _pod(3, node="n1"))  # someone else bound it meanwhile
    feeder.forget("ns/p")
    assert feeder.state.tasks["ns/p"].node_name == "n1"


def test_an_assumption_ends_when_the_api_confirms_or_the_pod_is_replaced() -> None:
    feeder = Feeder(ClusterState())
    feeder.apply("Pod", _pod(1))
    feeder.assume("ns/p", "u1", "n2")
    feeder.apply("Pod", _pod(2, node="n2"))
    assert not feeder.is_assumed("ns/p")
    feeder.assume("ns/p", "u1", "n2")
    feeder.apply("Pod", _pod(3, uid="u2"))  # same name, a new pod
    assert feeder.state.tasks["ns/p"].node_name is None


@pytest.mark.parametrize(
    ("second", "then", "node"),
    [
        ("n2", "forget", None),  # the second bind failed: pending again, not left on the first node
        ("n3", "forget", None),
        ("n2", "in-flight", "n2"),  # a stale unbound event while the second bind is in flight
        ("n3", "in-flight", "n3"),
        ("n3", "finish", "n3"),  # completed, within its time to live
        ("n3", "expire", None),  # its time to live over: the next event says what the API holds
    ],
)
def test_a_pod_assumed_twice_follows_its_latest_assumption(second: str, then: str, node: str | None) -> None:
    clock = Clock()
    feeder = Feeder(ClusterState(), assume_ttl=10, clock=clock)
    feeder.apply("Pod", _pod(1))
    feeder.assume("ns/p", "u1", "n2")
    feeder.assume("ns/p", "u1", second)
    assert feeder.is_assumed("ns/p")
    assert feeder.state.tasks["ns/p"].node_name == second
    if then == "forget":
        feeder.forget("ns/p")
    elif then in ("finish", "expire"):
        feeder.finish("ns/p")
        clock.now = 5 if then == "finish" else 11
        assert feeder.expire() == (then == "expire")
    feeder.apply("Pod", _pod(2))  # the pod as the API showed it before the bind
    assert feeder.state.tasks["ns/p"].node_name == node
    assert feeder.is_assumed("ns/p") == (node is not None)


def test_bad_objects_are_reported_not_raised() -> None:
    feeder = Feeder(ClusterState())
    assert not feeder.apply("Queue", {"metadata": {"name": "q"}, "spec": {"weight": 0}})
    assert "Queue q" in feeder.rejected


@pytest.mark.parametrize(
    ("kind", "obj", "ref"),
    [
        ("PodGroup", podgroup("g", ns="ns", min_resources={"cpu": "1e400"}), "PodGroup ns/g"),
        ("Queue", queue("q", capability={"cpu": "NaN"}), "Queue q"),
        ("Queue", queue("q", guarantee={"memory": float("inf")}), "Queue q"),  # type: ignore[dict-item]
        ("Pod", builders_pod("p", ns="ns", cpu=float("nan")), "Pod ns/p"),  # type: ignore[arg-type]
        ("Node", builders_node("n", cpu="Infinity"), "Node n"),
    ],
    ids=["podgroup-1e400", "queue-nan-string", "queue-inf", "pod-nan", "node-infinity"],
)
def test_a_live_object_with_a_nan_or_infinite_quantity_is_rejected_not_kept(kind, obj, ref) -> None:
    feeder = Feeder(ClusterState())
    assert not feeder.apply(kind, obj)
    why = feeder.rejected[ref].message
    assert "a quantity must be finite" in why or "malformed quantity" in why
    assert not feeder.state.tasks and not feeder.state.podgroups and not feeder.state.nodes
    assert set(feeder.state.queues) <= {"default"}


def test_queue_gauges_follow_a_queue_to_its_new_parent_and_forget_it_when_gone() -> None:
    from prometheus_client import generate_latest

    from volsched.framework.decisions import SessionResult
    from volsched.operator.metrics import Metrics

    def session(parent: str | None, *, gone: bool = False) -> SessionResult:
        result = SessionResult()
        if not gone:
            result.queues["q"] = QueueStatus(
                name="q", state="Open", weight=1, allocated={"cpu": 2.0}, request={}, guarantee={},
                capability=None, deserved={"cpu": 4.0}, share=0.5, parent=parent,
            )  # fmt: skip
        return result

    m = Metrics()
    m.observe(session("area-a"), None)
    m.observe(session("area-b"), None)
    text = generate_latest(m.registry).decode()
    assert 'volsched_queue_deserved{parent="area-b",queue="q",resource="cpu"} 4.0' in text
    assert 'parent="area-a"' not in text
    m.observe(session(None, gone=True), None)
    assert 'queue="q"' not in generate_latest(m.registry).decode()


def test_a_rejection_keeps_what_an_event_needs_and_ends_when_fixed_or_deleted() -> None:
    feeder = Feeder(ClusterState())
    bad = {
        "apiVersion": "scheduling.volsched.io/v1beta1",
        "metadata": {
            "name": "pg",
            "namespace": "ns",
            "uid": "pg-uid",
            "creationTimestamp": "2024-01-01T00:00:00Z",
        },
        "spec": {"minMember": 1, "minResources": {"cpu": "-1"}},
    }
    assert not feeder.apply("PodGroup", bad)
    r = feeder.rejected["PodGroup ns/pg"]
    assert (r.kind, r.api_version, r.namespace, r.name, r.uid) == (
        "PodGroup", "scheduling.volsched.io/v1beta1", "ns", "pg", "pg-uid",
    )  # fmt: skip
    assert "spec.minResources.cpu" in r.message and "'-1'" in r.message
    assert feeder.apply("PodGroup", {**bad, "spec": {"minMember": 1}})
    assert "PodGroup ns/pg" not in feeder.rejected
    feeder.apply("PodGroup", bad)
    feeder.delete("PodGroup", bad)
    assert "PodGroup ns/pg" not in feeder.rejected


@pytest.mark.parametrize(
    ("weight", "expect", "problem"),
    [("3", 3, False), ("0", 1, True), ("1500m", 1, True), ("heavy", 1, True)],
)
def test_a_garbage_namespace_weight_counts_as_1_and_is_reported(
    weight: str, expect: int, problem: bool
) -> None:
    feeder = Feeder(ClusterState())
    quota = {
        "metadata": {"name": "w", "namespace": "team", "uid": "q1"},
        "spec": {"hard": {"volsched.io/namespace.weight": weight}},
    }
    assert feeder.apply("ResourceQuota", quota)  # the quota itself is taken
    assert feeder.state.quota_weights["team/w"] == expect
    if problem:
        message = feeder.rejected["ResourceQuota team/w"].message
        assert f"{weight!r} is not a whole number >= 1" in message and "namespace weight 1" in message
    else:
        assert not feeder.rejected


class _SaysWhenWaitedFor:
    """A lock that sets ``waited`` when a thread finds it held by another and waits for it."""

    def __init__(self, lock: Any, waited: threading.Event) -> None:
        self._lock = lock
        self._waited = waited

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self._waited.set()
            self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_a_forget_is_not_undone_by_an_event_laid_over_the_assumption_before_it() -> None:
    """The watch thread lays the assumption over an event; the cycle's thread forgets the failed bind
    before the watch thread stores the event: the pod must end up pending, not on the assumed node."""
    feeder = Feeder(ClusterState())
    feeder.apply("Pod", _pod(1))
    feeder.assume("ns/p", "u1", "n2")
    store = feeder.state.apply
    settled = threading.Event()  # the forget waits for the feeder's lock, or is done
    feeder._lock = _SaysWhenWaitedFor(feeder._lock, settled)  # type: ignore[assignment]

    def forget() -> None:
        feeder.forget("ns/p")
        settled.set()

    forgetting = threading.Thread(target=forget)

    def apply_after_a_forget(obj: Any, *, confirming: bool = False, api_node: bool = True) -> str | None:
        if not forgetting.is_alive() and forgetting.ident is None:
            forgetting.start()  # the other thread forgets now, between the overlay and the store
            settled.wait()  # (not a time: it waits for the lock the store is under, or it has forgotten)
        return store(obj, confirming=confirming, api_node=api_node)

    feeder.state.apply = apply_after_a_forget  # type: ignore[method-assign]
    feeder.apply("Pod", _pod(2))  # e.g. a status change, still unbound
    forgetting.join()
    assert not feeder.is_assumed("ns/p")
    assert feeder.state.tasks["ns/p"].node_name is None
