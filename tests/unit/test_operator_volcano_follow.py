"""The operator follows Volcano's CRDs as the API serves them (discovery faked; no apiserver, no thread).

End to end (CRDs installed after the start, a gang bound, a CRD deleted): tests/e2e/test_operator_volcano.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import volsched.operator as operator_module
from tests.builders import podgroup, queue, volcano
from tests.unit._cycle_harness import KUBECONFIG
from volsched.cache.volcano import VOLCANO_PODGROUP, VOLCANO_QUEUE
from volsched.kube.watch import ListWatch
from volsched.operator import Operator, Settings


class Discovery:
    """What the fake API discovery answers next: the served plurals, or an error; and how often it was asked."""

    def __init__(self) -> None:
        self.served: set[str] | Exception = set()
        self.calls = 0

    def __call__(self, *_: Any) -> set[str]:
        self.calls += 1
        if isinstance(self.served, Exception):
            raise self.served
        return set(self.served)


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Operator, Discovery, list[str]]]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    discovery = Discovery()
    started: list[str] = []
    monkeypatch.setattr(operator_module, "served_plurals", discovery)
    monkeypatch.setattr(ListWatch, "start", lambda self: started.append(self.kind.plural))
    op = Operator(Settings(kubeconfig=str(kubeconfig)))
    op.start_watches()  # the operator is running: kinds found from now on are watched at once
    started.clear()  # Pods and Nodes
    yield op, discovery, started
    op.api.close()  # type: ignore[no-untyped-call]
    op.watch_api.close()  # type: ignore[no-untyped-call]


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
    op.follow_volcano(force=True)
    assert op.volcano == {} and started == []  # no Volcano CRDs: nothing watched

    discovery.served = {"queues"}
    op.follow_volcano(force=True)
    assert set(op.volcano) == {VOLCANO_QUEUE} and started == ["queues"]
    handed_over(op.volcano[VOLCANO_QUEUE], volcano(queue("spark")), rv="10")

    discovery.served = {"queues", "podgroups"}
    op.follow_volcano(force=True)
    assert set(op.volcano) == {VOLCANO_QUEUE, VOLCANO_PODGROUP} and started == ["queues", "podgroups"]
    handed_over(op.volcano[VOLCANO_PODGROUP], volcano(podgroup("etl", ns="spark", queue="spark")), rv="11")
    assert set(op.state.volcano_uids) == {("Queue", "spark"), ("PodGroup", "spark/etl")}

    discovery.served = RuntimeError("discovery failed")  # not knowing changes nothing
    op.follow_volcano(force=True)
    assert set(op.volcano) == {VOLCANO_QUEUE, VOLCANO_PODGROUP}
    assert set(op.state.volcano_uids) == {("Queue", "spark"), ("PodGroup", "spark/etl")}

    # The PodGroup CRD deleted, and the watch missed its objects' deletions: they stop counting.
    discovery.served = {"queues"}
    op.follow_volcano(force=True)
    assert set(op.volcano) == {VOLCANO_QUEUE}
    assert set(op.state.volcano_uids) == {("Queue", "spark")}

    discovery.served = {"queues", "podgroups"}  # reinstalled: watched again
    op.follow_volcano(force=True)
    assert set(op.volcano) == {VOLCANO_QUEUE, VOLCANO_PODGROUP} and started[-1] == "podgroups"


def test_discovery_is_asked_once_per_volcano_check_every(
    setup: tuple[Operator, Discovery, list[str]],
) -> None:
    op, discovery, _ = setup
    op.settings.session.volcano_check_every = 3600.0
    op.follow_volcano(force=True)
    for _ in range(5):
        op.follow_volcano()  # each session looks, but only when the period has passed
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
    op.keep_up()
    assert renewed == [True] and started == ["podgroups"] and set(op.volcano) == {VOLCANO_PODGROUP}


def test_a_volcano_kind_found_after_the_watches_stopped_is_not_watched(
    setup: tuple[Operator, Discovery, list[str]],
) -> None:
    """A session still running at shutdown (past the hand-over's limit) must not start a watch thread
    that nothing stops any more."""
    op, discovery, started = setup
    op.stop_watches()
    discovery.served = {"queues", "podgroups"}
    op.follow_volcano(force=True)
    assert started == []
