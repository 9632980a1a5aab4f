"""A pod the last session could not place, and that nothing changed for since, does not count as a job to
place when another pod arrives (kube-scheduler keeps its unschedulable pods aside the same way): the
arriving pod's session is still sparse (no minimum gap for the next arrival) and its bind still goes out
on the session's thread (``lone``). The session tries the held-back pod all the same: decisions are
unchanged. A node joining, the pod edited or another config brings it back into the count."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from tests.builders import Obj, node, pod, podgroup
from tests.unit._cycle_harness import FakePort, cache
from volsched.cache.feeder import Feeder
from volsched.cycle import BOUND, NOTHING_HELD, BindOutcome, run_cycle, to_place
from volsched.framework.decisions import Bind
from volsched.framework.registry import load_config

CONFIG = load_config(None)


class LonePort(FakePort):
    """A FakePort that keeps the ``lone`` of each bind call."""

    def __init__(self) -> None:
        super().__init__()
        self.lone: list[bool] = []

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Any], *, lone: bool = False
    ) -> list[BindOutcome]:
        self.lone.append(lone)
        return super().bind(binds, pods, lone=lone)


def _apply(feeder: Feeder, obj: Obj, rv: int) -> None:
    obj["metadata"].update(resourceVersion=str(rv), uid=f"uid-{obj['metadata']['name']}")
    feeder.apply(obj["kind"], obj)


def _edited(feeder: Feeder, key: str, rv: int) -> None:
    """The pod ``key`` edited where placing it reads (a label), as its watch event shows it."""
    raw = feeder.state.raw_pods[key]
    meta = raw["metadata"]
    feeder.apply(
        "Pod", {**raw, "metadata": {**meta, "labels": {"edited": "yes"}, "resourceVersion": str(rv)}}
    )


#: (what happened after a session that could not place pod ``big``; what the next session found: sparse,
#: the ``lone`` of its binds, the pods it bound). A pod ``a`` arrives in every case.
CASES: list[tuple[str, Callable[[Feeder], object], bool, list[bool], set[str]]] = [
    ("a pod arrives: the pod that does not fit is held back", lambda f: None, True, [True], {"default/a"}),
    (
        "two pods arrive",
        lambda f: _apply(f, pod("b"), 20),
        False, [False, False], {"default/a", "default/b"},
    ),
    (
        "a node joins: the held pod may fit now, and does",
        lambda f: _apply(f, node("n2", cpu="8"), 20),
        False, [False, False], {"default/a", "default/big"},
    ),
    (
        "the held pod is edited",
        lambda f: _edited(f, "default/big", 20),
        False, [False], {"default/a"},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("what", "then", "sparse", "lone", "bound"), CASES, ids=[c[0] for c in CASES])
def test_a_pod_that_could_not_be_placed_is_held_back_until_something_changes_for_it(
    what: str, then: Callable[[Feeder], object], sparse: bool, lone: list[bool], bound: set[str]
) -> None:
    feeder = cache(node("n1", cpu="2"), pod("big", cpu="4"))
    first = run_cycle(feeder, CONFIG, FakePort(), now=5000.0)
    assert first.result.unschedulable_pods == ("default/big",)
    _apply(feeder, pod("a"), 10)
    then(feeder)
    port = LonePort()
    report = run_cycle(feeder, CONFIG, port, now=5001.0)
    assert report.sparse is sparse
    assert port.lone == lone
    assert {b.bind.pod for b in report.binds if b.result == BOUND} == bound


def test_another_config_brings_the_held_pod_back_into_the_count() -> None:
    feeder = cache(node("n1", cpu="2"), pod("big", cpu="4"))
    run_cycle(feeder, CONFIG, FakePort(), now=5000.0)
    _apply(feeder, pod("a"), 10)
    report = run_cycle(feeder, load_config(None), FakePort(), now=5001.0)
    assert not report.sparse


def test_a_pod_held_back_over_several_sessions_stays_held_back() -> None:
    """Each session that leaves it unplaced holds it back again: the third arrival is as alone as the first."""
    feeder = cache(node("n1", cpu="8"), pod("big", cpu="16"))
    run_cycle(feeder, CONFIG, FakePort(), now=5000.0)
    for i in range(3):
        _apply(feeder, pod(f"a{i}"), 10 + i)
        port = LonePort()
        report = run_cycle(feeder, CONFIG, port, now=5001.0 + i)
        assert report.sparse and port.lone == [True], i
        assert "default/big" in report.result.unschedulable_pods


def test_what_may_be_placed_is_every_private_job_when_nothing_is_known() -> None:
    feeder = cache(node("n1", cpu="2"), pod("big", cpu="4"), pod("a"))
    snapshot = feeder.state.snapshot(now=5000.0)
    assert to_place(snapshot, CONFIG, held_back=(frozenset(), -1, None), freed=0) == snapshot.private
    held = (frozenset({"default/big"}), 0, CONFIG)
    assert snapshot.touched is None  # the first snapshot: built from scratch
    assert to_place(snapshot, CONFIG, held_back=held, freed=0) == snapshot.private


#: (what changed between two snapshots, the jobs the second one says were touched)
TOUCHED: list[tuple[str, Callable[[Feeder], object], set[str]]] = [
    ("nothing", lambda f: None, set()),
    ("a pod arrives", lambda f: _apply(f, pod("c"), 30), {"default/c"}),
    ("a pending pod is edited", lambda f: _edited(f, "default/a", 30), {"default/a"}),
    ("a bound pod is deleted", lambda f: f.delete("Pod", {"metadata": {"namespace": "default", "name": "b"}}), {"default/b"}),
    ("a gang's PodGroup changes", lambda f: _apply(f, podgroup("g", min_member=3), 30), {"default/g"}),
    ("a node joins", lambda f: _apply(f, node("n2"), 30), set()),
]  # fmt: skip


@pytest.mark.parametrize(("what", "change", "touched"), TOUCHED, ids=[c[0] for c in TOUCHED])
def test_a_snapshot_names_the_jobs_whose_pods_or_podgroup_changed_since_the_last(
    what: str, change: Callable[[Feeder], object], touched: set[str]
) -> None:
    feeder = cache(
        node("n1", cpu="8"), pod("a", cpu="16"), pod("b", node="n1"), podgroup("g", min_member=2),
        *(pod(f"g-{i}", group="g") for i in range(2)),
    )  # fmt: skip
    assert feeder.state.snapshot(now=5000.0).touched is None  # built from scratch
    change(feeder)
    assert feeder.state.snapshot(now=5001.0).touched == touched


class FailingPort(FakePort):
    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Any], *, lone: bool = False
    ) -> list[BindOutcome]:
        raise OSError("the apiserver went away")


def test_a_session_that_fails_holds_nothing_back() -> None:
    """Its snapshot took the changes the next session would have read: what it held back, unsaid, is
    nothing (the next session counts every job)."""
    feeder = cache(node("n1", cpu="2"), pod("big", cpu="4"))
    run_cycle(feeder, CONFIG, FakePort(), now=5000.0)
    assert feeder.state.held_back[0] == {"default/big"}
    _apply(feeder, pod("a"), 10)
    with pytest.raises(OSError):
        run_cycle(feeder, CONFIG, FailingPort(), now=5001.0)
    assert feeder.state.held_back == NOTHING_HELD
