"""A listing's page goes into the cache under one hold of the feeder's lock and the cache's
(``Feeder.page``, ``ClusterState.batch``), not one hold of each an object, and the doorbell rings once a
kind for the page, counting every ring (``cycle`` reads the count of capacity freed). The hold is never
taken while the Pods' or Nodes' listing waits for the few other kinds, whose listings take the same
locks."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit._cycle_harness import operator_at
from volsched.cache.doorbell import ARRIVED, FREED
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.kube.lister import WATCHED
from volsched.kube.watch import HELD_AT_MOST, ListWatch
from volsched.operator import Operator

PODS = next(k for k in WATCHED if k.kind == "Pod")


def pod(name: str, rv: int = 10) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": str(rv)},
        "spec": {"schedulerName": "volsched", "containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": "Pending"},
    }


def node(name: str, rv: int = 10) -> dict[str, Any]:
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "uid": f"u-{name}", "resourceVersion": str(rv)},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def rung(state: ClusterState) -> list[str]:
    """The kinds the doorbell's listener is told of, in order (each time a kind goes from quiet to
    rung; taken back to quiet at once)."""
    told: list[str] = []

    def listener() -> None:
        rings = state.doorbell.take()
        told.extend(k for k in (ARRIVED, FREED) if getattr(rings, k))

    state.doorbell.listen(listener)
    return told


def test_a_batch_rings_once_a_kind_as_it_ends_counting_every_ring() -> None:
    state = ClusterState(scheduler_names=["volsched"])
    told = rung(state)
    with state.batch():
        for i in range(3):
            state.apply(pod(f"p{i}"))
        state.apply(node("n0"))
        state.apply(node("n1"))
        assert told == [] and state.doorbell.count[ARRIVED] == 0  # nothing rung while held
        assert len(state.tasks) == 3 and len(state.nodes) == 2  # (the cache has them all the same)
    assert sorted(told) == [ARRIVED, FREED]  # once each
    assert state.doorbell.count[ARRIVED] == 3 and state.doorbell.count[FREED] == 2  # as one at a time

    # A delete rings as the batch ends as well; one that changes nothing, not at all.
    with state.batch():
        state.delete("Node", None, "n0")
        state.delete("Node", None, "gone")
        state.apply(pod("p0"))  # the same pod again: no news
    assert state.doorbell.count[ARRIVED] == 3 and state.doorbell.count[FREED] == 2


def test_a_batch_rings_what_it_took_when_it_ends_in_an_error() -> None:
    state = ClusterState(scheduler_names=["volsched"])
    told = rung(state)
    with pytest.raises(RuntimeError), state.batch():
        state.apply(pod("p0"))
        raise RuntimeError("a bug")
    assert told == [ARRIVED] and state.doorbell.count[ARRIVED] == 1
    state.apply(pod("p1"))  # not held any more: rings at once
    assert told == [ARRIVED, ARRIVED]


def test_a_batch_within_a_batch_is_part_of_it() -> None:
    state = ClusterState(scheduler_names=["volsched"])
    told = rung(state)
    with state.batch():
        with state.batch():
            state.apply(pod("p0"))
        assert told == []
        state.apply(pod("p1"))
    assert told == [ARRIVED] and state.doorbell.count[ARRIVED] == 2


def test_the_feeders_page_holds_its_lock_and_the_caches() -> None:
    state = ClusterState(scheduler_names=["volsched"])
    feeder = Feeder(state)
    free: dict[str, bool] = {}

    def look() -> None:  # from another thread, without waiting
        for name, lock in (("feeder", feeder._lock), ("cache", state._lock)):
            free[name] = lock.acquire(blocking=False)
            if free[name]:
                lock.release()

    with feeder.page():
        feeder.apply("Pod", pod("p0"))
        feeder.apply("Node", node("n0"))
        t = threading.Thread(target=look)
        t.start()
        t.join()
        assert free == {"feeder": False, "cache": False}
    t = threading.Thread(target=look)
    t.start()
    t.join()
    assert free == {"feeder": True, "cache": True}
    assert state.doorbell.count[ARRIVED] == 1 and state.doorbell.count[FREED] == 1


class Early:
    """Every page of a listing at hand, by the continue token that asks for it."""

    def __init__(self, *pages: list[dict[str, Any]]) -> None:
        self.by_token = {}
        for i, items in enumerate(pages):
            following = str(i + 1) if i + 1 < len(pages) else ""
            body = {"metadata": {"resourceVersion": "50", "continue": following}, "items": items}
            self.by_token["" if i == 0 else str(i)] = json.dumps(body).encode()

    def page(self, token: str) -> bytes | None:
        return self.by_token.get(token)

    at_hand = page

    def drop(self) -> None:
        pass


def test_a_listings_page_is_held_for_a_hundred_objects_at_a_time() -> None:
    held = {"now": False, "times": 0}
    outside: list[str] = []

    class Hold:
        def __enter__(self) -> None:
            held["now"] = True
            held["times"] += 1

        def __exit__(self, *exc: object) -> None:
            held["now"] = False

    def sink(type_: str, obj: dict[str, Any]) -> None:
        if not held["now"]:
            outside.append(obj["metadata"]["name"])

    w = ListWatch(None, PODS, on_event=sink, hold_page=Hold)
    w._early = Early([pod(f"a{i}") for i in range(2 * HELD_AT_MOST + 1)], [pod("b")])  # type: ignore[assignment]
    w.relist()
    assert len(w.known) == 2 * HELD_AT_MOST + 2
    assert held["times"] == 4 and outside == []  # 100, 100 and 1 of the first page; the second's one


@pytest.fixture
def op(tmp_path: Path) -> Iterator[Operator]:
    with operator_at(tmp_path) as made:
        yield made


def test_the_pods_listing_waits_for_the_few_kinds_without_holding_the_cache(
    op: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Pods' first page comes before the PriorityClasses are in: its listing waits for them
    without holding the feeder's and the cache's locks, which the PriorityClasses' listing takes."""
    feed = op.feed
    waiting = threading.Event()
    wait_prelisted = feed._wait_prelisted

    def wait(kind: str) -> bool:
        waiting.set()
        return wait_prelisted(kind)

    monkeypatch.setattr(feed, "_wait_prelisted", wait)
    pods = feed.lean["Pod"]
    pods._early = Early([pod("p0"), pod("p1")])  # type: ignore[assignment]
    listing = threading.Thread(target=pods.relist)
    listing.start()
    assert waiting.wait(30)  # the Pods' listing waits for the few kinds
    assert not feed._prelisted.is_set() and op.state.tasks == {}
    cls = {"kind": "PriorityClass", "metadata": {"name": "high", "resourceVersion": "3"}, "value": 1000}
    few = threading.Thread(target=feed.handle_event, args=("PriorityClass", "ADDED", cls))
    few.start()
    few.join(30)  # (held up, it would wait for the Pods' listing, which waits for it)
    assert not few.is_alive() and op.state.priority_classes["high"] == 1000
    feed._prelisted.set()
    listing.join(30)
    assert sorted(op.state.tasks) == ["ns/p0", "ns/p1"]
