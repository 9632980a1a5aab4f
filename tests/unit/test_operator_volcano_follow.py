"""The operator follows Volcano's CRDs as the API serves them (discovery faked; no apiserver, no thread).

End to end (CRDs installed after the start, a gang bound, a CRD deleted): tests/e2e/test_operator_volcano.py.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from functools import partialmethod
from pathlib import Path
from typing import Any

import pytest

import volsched.operator.volcano as volcano_module
from tests.builders import podgroup, queue, volcano
from tests.unit._cycle_harness import operator_at
from tests.unit._scripted_server import ScriptedServer
from volsched.cache.volcano import VOLCANO_PODGROUP, VOLCANO_QUEUE
from volsched.cache.workload import WORKLOAD_GROUP, WORKLOAD_PODGROUP
from volsched.kube.watch import ListWatch
from volsched.operator import Operator


class Discovery:
    """What the fake API discovery answers next for Volcano's group: the served plurals, or an error; and how
    often it was asked. Kubernetes' own scheduling.k8s.io/v1beta1 serves ``workload`` (none unless set)."""

    def __init__(self) -> None:
        self.served: set[str] | Exception = set()
        self.workload: set[str] = set()
        self.calls = 0

    def __call__(self, _rest: Any, group: str, _version: str) -> set[str]:
        if group == WORKLOAD_GROUP:
            return set(self.workload)
        self.calls += 1
        if isinstance(self.served, Exception):
            raise self.served
        return set(self.served)


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Operator, Discovery, list[str]]]:
    discovery = Discovery()
    started: list[str] = []
    monkeypatch.setattr(volcano_module, "served_resources", discovery)
    monkeypatch.setattr(ListWatch, "start", lambda self: started.append(self.kind.plural))
    with operator_at(tmp_path) as op:
        op.feed.start()  # the operator is running: kinds found from now on are watched at once
        started.clear()  # Pods and Nodes
        yield op, discovery, started


def handed_over(w: ListWatch, obj: dict[str, Any], *, rv: str) -> None:
    """What the watch does with an object it lists: remember it, hand it over."""
    meta = obj["metadata"]
    meta.update(resourceVersion=rv, uid=f"uid-{meta['name']}")
    key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
    w.known[key] = (rv, meta["uid"])
    w.on_event("ADDED", obj)


def test_volcano_kinds_are_watched_once_served_and_dropped_from_the_cache_once_not(
    setup: tuple[Operator, Discovery, list[str]],
) -> None:
    op, discovery, started = setup
    op.volcano.follow(force=True)
    assert op.volcano.watches == {} and started == []  # no Volcano CRDs: nothing watched

    discovery.served = {"queues"}
    op.volcano.follow(force=True)
    assert set(op.volcano.watches) == {VOLCANO_QUEUE} and started == ["queues"]
    handed_over(op.volcano.watches[VOLCANO_QUEUE], volcano(queue("spark")), rv="10")

    discovery.served = {"queues", "podgroups"}
    op.volcano.follow(force=True)
    assert set(op.volcano.watches) == {VOLCANO_QUEUE, VOLCANO_PODGROUP} and started == ["queues", "podgroups"]
    handed_over(
        op.volcano.watches[VOLCANO_PODGROUP], volcano(podgroup("etl", ns="spark", queue="spark")), rv="11"
    )
    assert set(op.state.volcano_uids) == {("Queue", "spark"), ("PodGroup", "spark/etl")}

    discovery.served = RuntimeError("discovery failed")  # not knowing changes nothing
    op.volcano.follow(force=True)
    assert set(op.volcano.watches) == {VOLCANO_QUEUE, VOLCANO_PODGROUP}
    assert set(op.state.volcano_uids) == {("Queue", "spark"), ("PodGroup", "spark/etl")}

    # The PodGroup CRD deleted, and the watch missed its objects' deletions: they stop counting.
    discovery.served = {"queues"}
    op.volcano.follow(force=True)
    assert set(op.volcano.watches) == {VOLCANO_QUEUE}
    assert set(op.state.volcano_uids) == {("Queue", "spark")}

    discovery.served = {"queues", "podgroups"}  # reinstalled: watched again
    op.volcano.follow(force=True)
    assert set(op.volcano.watches) == {VOLCANO_QUEUE, VOLCANO_PODGROUP} and started[-1] == "podgroups"


def test_discovery_is_asked_once_per_volcano_check_every(
    setup: tuple[Operator, Discovery, list[str]],
) -> None:
    op, discovery, _ = setup
    op.settings.session.volcano_check_every = 3600.0
    op.volcano.follow(force=True)
    for _ in range(5):
        op.volcano.follow()  # each session looks, but only when the period has passed
    assert discovery.calls == 1


def test_a_quiet_leader_between_far_apart_sessions_still_follows_volcanos_crds(
    setup: tuple[Operator, Discovery, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a period far longer than ``--volcano-check-every``, the CRDs are looked for between sessions
    too (where the Lease is renewed), not only when a session runs."""
    op, discovery, started = setup
    renewed: list[bool] = []
    monkeypatch.setattr(op.lease, "ensure", lambda: renewed.append(True) or True)
    monkeypatch.setattr(op.reloader, "reload", lambda **_: None)
    op.settings.session.volcano_check_every = 0.0
    discovery.served = {"podgroups"}
    op.loop.keep_up()
    assert renewed == [True] and started == ["podgroups"] and set(op.volcano.watches) == {VOLCANO_PODGROUP}


def test_a_volcano_kind_found_after_the_watches_stopped_is_not_watched(
    setup: tuple[Operator, Discovery, list[str]],
) -> None:
    """A session still running at shutdown (past the hand-over's limit) must not start a watch thread
    that nothing stops any more."""
    op, discovery, started = setup
    op.feed.stop()
    discovery.served = {"queues", "podgroups"}
    op.volcano.follow(force=True)
    assert started == []


class Held(ScriptedServer):
    """Holds every request with ``held`` in its target until ``gate`` opens; ``arrived`` counts them."""

    def __init__(self, held: str) -> None:
        super().__init__()
        self.held = held
        self.gate = threading.Event()
        self.arrived = threading.Semaphore(0)

    def before_answer(self, path: str) -> None:
        if self.held in path:
            self.arrived.release()
            self.gate.wait(HOLD)


#: Seconds the server holds a request at most (the test fails rather than hangs).
HOLD = 20.0

#: (case, the request held, whether stop ends the thread at once): a listing's page on its way is given
#: up; a watch whose answer has not begun is what stop cannot end.
STUCK: list[tuple[str, str, bool]] = [
    ("the listing's page held", "limit=", True),
    ("the watch's answer held", "watch=true", False),
]


@pytest.mark.parametrize(("case", "held", "ends"), STUCK, ids=[c[0] for c in STUCK])
def test_a_removed_kinds_objects_a_stuck_watch_brings_late_never_return_to_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, held: str, ends: bool
) -> None:
    """The PodGroup CRD is deleted while its watch's listing or watch is still unanswered (the apiserver
    slow to answer), and what comes afterwards must not put the removed kind's objects back into the
    cache (fault injection: a server holding the request)."""
    server = Held(held)
    pg = volcano(podgroup("etl", ns="spark", queue="spark"))
    pg["metadata"].update(resourceVersion="5", uid="uid-etl")
    server.script["limit=500"] = [(200, {}, {"metadata": {"resourceVersion": "5"}, "items": [pg]})]
    late = copy.deepcopy(pg)
    late["metadata"].update(resourceVersion="6", name="late", uid="uid-late")
    server.script["resourceVersion=5"] = [(200, {}, {"type": "ADDED", "object": late})]
    discovery = Discovery()
    monkeypatch.setattr(volcano_module, "served_resources", discovery)
    monkeypatch.setattr(ListWatch, "stop", partialmethod(ListWatch.stop, timeout=0.2))  # gives up sooner
    with operator_at(tmp_path, server.port) as op:
        try:
            for w in op.feed.lean.values():
                monkeypatch.setattr(w, "start", lambda: None)  # Pods and Nodes are not the point here
            op.feed.start()
            discovery.served = {"podgroups"}
            op.volcano.follow(force=True)
            stuck = op.volcano.watches[VOLCANO_PODGROUP]
            assert server.arrived.acquire(timeout=HOLD)  # on its way, held by the server
            discovery.served = set()  # the CRD deleted
            op.volcano.follow(force=True)
            assert op.volcano.watches == {}
            assert stuck._thread is not None and stuck._thread.is_alive() is not ends  # stop gave up on it
            server.gate.set()  # the answer arrives after all
            stuck._thread.join(HOLD)
            assert not stuck._thread.is_alive()
            for t in threading.enumerate():
                if t.name == "volsched-list-podgroups":  # a page given up: its answer is dropped
                    t.join(HOLD)
            assert op.state.volcano_uids == {} and op.state.podgroups == {}
        finally:
            server.gate.set()
            server.httpd.shutdown()
            op.feed.stop()


def test_kubernetes_podgroups_are_watched_only_while_the_workload_api_is_served(
    setup: tuple[Operator, Discovery, list[str]],
) -> None:
    op, discovery, started = setup
    op.volcano.follow(force=True)
    assert WORKLOAD_PODGROUP not in op.volcano.watches  # 1.37 without the feature gate: not served
    discovery.workload = {"workloads", "podgroups"}
    op.volcano.follow(force=True)
    assert set(op.volcano.watches) == {WORKLOAD_PODGROUP} and started == ["podgroups"]
    pg = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "ml", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}},
    }
    handed_over(op.volcano.watches[WORKLOAD_PODGROUP], pg, rv="12")
    assert op.state.podgroups["ml/train"].min_member == 4
    discovery.workload = set()  # the apiserver restarted without the gate: the groups stop counting
    op.volcano.follow(force=True)
    assert op.volcano.watches == {} and "ml/train" not in op.state.podgroups
