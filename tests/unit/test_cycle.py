"""run_cycle against a small fake port: what comes of each bind is fed back into the cache, so a failed
bind is planned again, a conflict corrects the cache, a pod that is gone leaves it, and no pod is bound
twice, whether the port answers at once or later; binds go to the port commit by commit, while the
session runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tests.builders import Obj, node, pod, podgroup
from tests.unit._cycle_harness import CONFIG, Clock, FakePort, cache, nodes_of
from volsched.cache.feeder import Feeder
from volsched.cycle import (
    BOUND,
    CONFLICT,
    EVICTED,
    FAILED,
    FENCED,
    GONE,
    UNKNOWN,
    BindOutcome,
    CycleReport,
    EvictOutcome,
    NullPort,
    run_cycle,
)
from volsched.framework.decisions import Bind, Evict, EvictionReason


def unbound(feeder: Feeder, key: str, *, rv: int) -> Obj:
    """An event for the cached pod ``key`` that shows it unbound still (e.g. a status change)."""
    raw = feeder.state.raw_pods[key]
    spec = {k: v for k, v in raw["spec"].items() if k != "nodeName"}
    return {**raw, "spec": spec, "metadata": {**raw["metadata"], "resourceVersion": str(rv)}}


def cycle(feeder: Feeder, port: Any, now: float = 5000.0) -> CycleReport:
    return run_cycle(feeder, CONFIG, port, now=now)


def test_a_bind_is_assumed_at_once_and_the_next_cycle_binds_nothing() -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"), pod("b"))
    port = FakePort()
    report = cycle(feeder, port)
    assert {o.bind.pod: o.result for o in report.binds} == {"default/a": BOUND, "default/b": BOUND}
    assert nodes_of(feeder) == {"default/a": "n1", "default/b": "n1"}
    assert cycle(feeder, port).binds == []
    assert port.sent == ["default/a", "default/b"]


@pytest.mark.parametrize("failure", [FAILED, FENCED, "skipped"])
def test_a_failed_bind_is_forgotten_and_planned_again_next_cycle(failure: str) -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"), pod("b"))
    port = FakePort({"default/a": [failure]})
    first = cycle(feeder, port)
    assert {o.bind.pod: o.result for o in first.binds} == {"default/a": failure, "default/b": BOUND}
    assert nodes_of(feeder) == {"default/a": None, "default/b": "n1"}
    assert not feeder.is_assumed("default/a")
    second = cycle(feeder, port)
    assert [(o.bind.pod, o.result) for o in second.binds] == [("default/a", BOUND)]
    assert port.bound == {"default/a": "n1", "default/b": "n1"}


def test_a_conflict_puts_the_pod_as_the_api_has_it_into_the_cache() -> None:
    feeder = cache(node("n1", cpu="4"), node("n2", cpu="4"), pod("a", cpu="3"), pod("b", cpu="3"))
    port = FakePort({"default/a": [CONFLICT]})
    first = cycle(feeder, port)
    assert {o.bind.pod: o.result for o in first.binds}["default/a"] == CONFLICT
    assert nodes_of(feeder)["default/a"] == "n2"  # corrected from the API, not pending, not assumed
    assert not feeder.is_assumed("default/a")
    assert cycle(feeder, port).binds == []
    assert port.sent.count("default/a") == 1


def test_a_pod_gone_leaves_the_cache() -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"), pod("b"))
    port = FakePort({"default/a": [GONE]})
    cycle(feeder, port)
    assert nodes_of(feeder) == {"default/b": "n1"}
    assert not feeder.is_assumed("default/a")
    assert cycle(feeder, port).binds == []


def test_a_gang_with_a_failed_bind_is_completed_by_the_next_cycle_never_bound_twice() -> None:
    members = [pod(f"g-{i}", group="g") for i in range(4)]
    feeder = cache(node("n1", cpu="2"), node("n2", cpu="2"), podgroup("g", min_member=4), *members)
    port = FakePort({"default/g-1": [FAILED, FAILED], "default/g-3": [FENCED]})
    for _ in range(4):
        cycle(feeder, port)
    assert sorted(port.bound) == [f"default/g-{i}" for i in range(4)]
    assert sorted(port.sent) == sorted(
        [
            "default/g-0",
            "default/g-1",
            "default/g-1",
            "default/g-1",
            "default/g-2",
            "default/g-3",
            "default/g-3",
        ]
    )
    assert [key for key, n in nodes_of(feeder).items() if n] == [f"default/g-{i}" for i in range(4)]


def test_a_late_port_settles_outcomes_in_the_next_cycle_and_in_flight_binds_are_not_sent_again() -> None:
    clock = Clock()
    feeder = cache(node("n1", cpu="4"), pod("a"), pod("b"), clock=clock)
    port = FakePort({"default/a": [FAILED]}, late=True)
    first = cycle(feeder, port)
    assert first.binds == []  # nothing answered yet
    assert nodes_of(feeder) == {"default/a": "n1", "default/b": "n1"}  # both assumed, in flight
    clock.now += 3600  # however long a bind stays in flight, its assumption holds
    assert feeder.apply("Pod", unbound(feeder, "default/b", rv=50))  # a late event: not bound yet
    assert nodes_of(feeder)["default/b"] == "n1"
    second = cycle(feeder, port)  # settles a (failed) and b (bound) first, then plans a again
    assert [(o.bind.pod, o.result) for o in second.binds] == [("default/a", FAILED), ("default/b", BOUND)]
    assert nodes_of(feeder) == {"default/a": "n1", "default/b": "n1"}  # a assumed again, in flight
    third = cycle(feeder, port)
    assert [(o.bind.pod, o.result) for o in third.binds] == [("default/a", BOUND)]
    assert port.sent == ["default/a", "default/b", "default/a"]
    assert port.bound == {"default/a": "n1", "default/b": "n1"}


def test_a_finished_bind_expires_after_its_time_to_live_when_the_watch_never_confirms_it() -> None:
    clock = Clock()
    feeder = cache(node("n1", cpu="4"), pod("a"), clock=clock)
    cycle(feeder, NullPort())
    clock.now += 29
    assert feeder.apply("Pod", unbound(feeder, "default/a", rv=9))
    assert nodes_of(feeder) == {"default/a": "n1"}
    clock.now += 2
    assert feeder.apply("Pod", unbound(feeder, "default/a", rv=10))
    assert nodes_of(feeder) == {"default/a": None}


def test_a_bind_whose_outcome_is_unknown_keeps_its_room_until_the_watch_shows_it_or_its_time_ends() -> None:
    """UNKNOWN: sent, no answer, the pod unread. It may be bound: the pod stays on its node in the cache
    (the next session plans around it, nothing binds it again) as a finished bind does."""
    clock = Clock()
    feeder = cache(node("n1", cpu="1"), pod("a", cpu="1"), pod("b", cpu="1"), clock=clock)
    port = FakePort({"default/a": [UNKNOWN]})
    first = cycle(feeder, port)
    assert [(o.bind.pod, o.result) for o in first.binds] == [("default/a", UNKNOWN)]
    assert nodes_of(feeder) == {"default/a": "n1", "default/b": None} and feeder.is_assumed("default/a")
    assert cycle(feeder, port).result.binds == []  # no room for b, and a is not bound again
    clock.now += 31  # the watch never showed it bound: the assumption ends, a is pending again
    assert feeder.apply("Pod", unbound(feeder, "default/a", rv=9))
    assert nodes_of(feeder)["default/a"] is None


@pytest.mark.parametrize(("result", "placed_again"), [(UNKNOWN, True), (BOUND, False)])
def test_a_bind_of_unknown_outcome_that_never_lands_is_placed_again_once_its_time_ends(
    result: str, placed_again: bool
) -> None:
    """A bind that never landed brings no event of its pod: once its assumption's time is over, an
    unknown one is pending again (a gang is not left half-bound for good); a bound one stays."""
    clock = Clock()
    feeder = cache(
        node("n1", cpu="2"),
        podgroup("g", min_member=2),
        pod("a", cpu="1", group="g"),
        pod("b", cpu="1", group="g"),
        clock=clock,
    )
    port = FakePort({"default/a": [result]})
    first = cycle(feeder, port)
    assert sorted((o.bind.pod, o.result) for o in first.binds) == [
        ("default/a", result),
        ("default/b", BOUND),
    ]
    clock.now += 29
    assert cycle(feeder, port).result.binds == []  # within its time: a keeps its room, not bound again
    clock.now += 2
    again = cycle(feeder, port)
    assert [b.pod for b in again.result.binds] == (["default/a"] if placed_again else [])
    assert nodes_of(feeder)["default/a"] == "n1"
    assert port.sent.count("default/a") == (2 if placed_again else 1)


def test_podgroup_phases_go_back_into_the_cache_and_the_port_writes_status() -> None:
    feeder = cache(node("n1", cpu="4"), podgroup("g", min_member=2), pod("a", group="g"), pod("b", group="g"))
    report = cycle(feeder, FakePort())
    assert report.phases_changed == ["default/g"]
    assert feeder.state.podgroups["default/g"].phase.value == report.result.podgroups["default/g"].phase
    assert report.status_writes == 1
    assert cycle(feeder, FakePort()).phases_changed == []


def test_an_eviction_settled_late_still_keeps_the_owner_off_the_node() -> None:
    feeder = cache(node("n1", cpu="4"), pod("a", node="n1", owner="ReplicaSet/web"))

    class LateEvictions(NullPort):
        def settle(self) -> tuple[list[BindOutcome], list[EvictOutcome]]:
            return [], [
                EvictOutcome(
                    Evict(
                        "default/a",
                        "",
                        "n1",
                        EvictionReason(action="shuffle", detail="moved"),
                        may_return=False,
                    ),
                    EVICTED,
                )
            ]

    cycle(feeder, LateEvictions(), now=5000.0)
    assert feeder.state.avoid == {"ReplicaSet/web": ("n1",)}


def test_a_port_that_raises_leaves_no_assumption_behind() -> None:
    feeder = cache(node("n1", cpu="4"), pod("a"))

    class Broken(NullPort):
        def bind(
            self, binds: Sequence[Bind], pods: Mapping[str, Any], *, lone: bool = False
        ) -> list[BindOutcome]:
            raise RuntimeError("the writer's pool is shut down")

    with pytest.raises(RuntimeError):
        cycle(feeder, Broken())
    assert not feeder.is_assumed("default/a") and nodes_of(feeder) == {"default/a": None}
    assert [o.result for o in cycle(feeder, NullPort()).binds] == [BOUND]  # planned again


def test_a_bind_the_cache_fails_to_assume_leaves_no_assumption_of_its_commit_behind() -> None:
    feeder = cache(node("n1", cpu="4"), *_gang("g", 2, created=_at(1)))
    assume = feeder.assume

    def failing(pod_key: str, uid: str, node_name: str, *, record: str = "") -> None:
        if pod_key == "default/g-1":
            raise RuntimeError("the cache failed")
        assume(pod_key, uid, node_name, record=record)

    feeder.assume = failing  # type: ignore[method-assign]
    port = FakePort()
    with pytest.raises(RuntimeError):
        cycle(feeder, port)
    # Nothing was sent; no pod of the gang stays bound in the cache, waiting for an outcome never to come.
    assert port.sent == [] and not feeder.is_assumed("default/g-0")
    assert nodes_of(feeder) == {"default/g-0": None, "default/g-1": None}
    feeder.assume = assume  # type: ignore[method-assign]
    assert sorted(o.bind.pod for o in cycle(feeder, port).binds) == ["default/g-0", "default/g-1"]


class RecordingPort(FakePort):
    """A FakePort that keeps each ``bind`` call's pods and which pods the cache held assumed then;
    with ``fail_call``, that call (counted from 1) raises instead, as a writer shut down would."""

    def __init__(self, feeder: Feeder, *, fail_call: int = 0, late: bool = False) -> None:
        super().__init__(late=late)
        self.feeder = feeder
        self.fail_call = fail_call
        self.calls: list[list[str]] = []
        self.assumed_at_call: list[set[str]] = []

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Any], *, lone: bool = False
    ) -> list[BindOutcome]:
        self.calls.append([b.pod for b in binds])
        self.assumed_at_call.append({k for k in self.feeder.state.tasks if self.feeder.is_assumed(k)})
        assert sorted(pods) == sorted(b.pod for b in binds)  # the raw pods of this call's binds
        if len(self.calls) == self.fail_call:
            raise RuntimeError("the writer's pool is shut down")
        return super().bind(binds, pods, lone=lone)


def _at(minute: int) -> str:
    return f"2026-01-01T00:{minute:02d}:00Z"


def _gang(name: str, size: int, *, created: str, cpu: str = "1") -> list[Obj]:
    group = podgroup(name, min_member=size)
    group["metadata"]["creationTimestamp"] = created
    return [
        group,
        *(pod(f"{name}-{i}", group=name, created=created, cpu=cpu) for i in range(size)),
    ]


@pytest.mark.parametrize(
    ("objects", "calls"),
    [
        pytest.param(
            [*_gang("g", 3, created=_at(1)), pod("b", created=_at(2)), pod("a", created=_at(3))],
            [["default/g-0", "default/g-1", "default/g-2"], ["default/b"], ["default/a"]],
            id="a gang's binds in one call, then each job's in commit order",
        ),
        pytest.param(
            [
                pod("a", created=_at(1)),
                *_gang("big", 3, created=_at(2), cpu="2"),  # 6 cpu: never fits, never sent
                *_gang("g", 2, created=_at(3)),
            ],
            [["default/a"], ["default/g-0", "default/g-1"]],
            id="a gang that does not fit sends nothing; the jobs after it still go out",
        ),
    ],
)
def test_each_commit_goes_to_the_port_while_the_session_runs(
    objects: list[Obj], calls: list[list[str]]
) -> None:
    feeder = cache(node("n1", cpu="4"), node("n2", cpu="1"), *objects)
    port = RecordingPort(feeder)
    report = cycle(feeder, port)
    assert [sorted(c) for c in port.calls] == calls
    # When a commit went out, the jobs committed after it were not decided yet: the session ran on.
    assert [sorted(c) for c in port.assumed_at_call] == [
        sorted(p for c in calls[: i + 1] for p in c) for i in range(len(calls))
    ]
    # The result still lists every bind, in commit order, each answered once; nothing is sent twice.
    assert [b.pod for b in report.result.binds] == [p for c in port.calls for p in c]
    assert (
        sorted(o.bind.pod for o in report.binds) == sorted(port.sent) == sorted(p for c in calls for p in c)
    )
    assert cycle(feeder, port).binds == [] and len(port.calls) == len(calls)


def test_a_port_that_raises_mid_session_forgets_only_that_calls_binds() -> None:
    feeder = cache(
        node("n1", cpu="4"),
        pod("a", created=_at(1)),
        *_gang("g", 2, created=_at(2)),
        pod("c", created=_at(3)),
    )
    port = RecordingPort(feeder, fail_call=2, late=True)
    with pytest.raises(RuntimeError):
        cycle(feeder, port)
    # The session ended with the failed call: c was never decided, let alone sent.
    assert [sorted(c) for c in port.calls] == [["default/a"], ["default/g-0", "default/g-1"]]
    # a was accepted (its outcome is still to come): it stays assumed; the gang's binds are forgotten.
    assert feeder.is_assumed("default/a")
    assert nodes_of(feeder) == {
        "default/a": "n1",
        "default/c": None,
        "default/g-0": None,
        "default/g-1": None,
    }
    port.fail_call = 0
    report = cycle(feeder, port)  # settles a; binds the gang and c, never a again
    assert [(o.bind.pod, o.result) for o in report.binds] == [("default/a", BOUND)]
    assert [sorted(c) for c in port.calls[2:]] == [["default/g-0", "default/g-1"], ["default/c"]]
    cycle(feeder, port)
    assert port.bound == {p: "n1" for p in ("default/a", "default/c", "default/g-0", "default/g-1")}
