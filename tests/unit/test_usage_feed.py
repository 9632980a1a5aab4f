"""UsageFeed: the operator's collector follows the config's metrics section; usage reaches the cache;
shuffle evictions keep the owner off the node (ClusterState.moved_off). No servers, no threads waited on
by the clock: fake sources and bounded polls."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from volsched.cache.state import AVOID_SECONDS, ClusterState
from volsched.metrics.collector import UsageCollector
from volsched.metrics.config import MetricsConfig, MetricsConfigError
from volsched.metrics.source import NodeTargets, SourceError
from volsched.model.decode import build_task
from volsched.model.usage import NodeUsage
from volsched.usagefeed import UsageFeed

NOW = 1_800_000_000.0
PROM = {"type": "prometheus", "address": "http://prom:9090", "interval": "1s"}
PROM_OTHER = {**PROM, "address": "http://other:9090"}
ADAPTOR = {"type": "prometheus_adaptor", "interval": "1s"}


class FakeSource:
    name = "fake"

    def __init__(self, config: MetricsConfig, fail: bool = False) -> None:
        self.config = config
        self.fail = fail
        self.closed = False
        self.targets: list[NodeTargets] = []

    def fetch(self, nodes: NodeTargets = None) -> dict[str, NodeUsage]:
        self.targets.append(nodes)
        if self.fail:
            raise SourceError("connection refused")
        return {"n1": NodeUsage(cpu=90.0, memory=10.0, measured_at=NOW)}

    def close(self) -> None:
        self.closed = True


class Factory:
    def __init__(self, state: ClusterState, fail: bool = False) -> None:
        self.state = state
        self.fail = fail
        self.sources: list[FakeSource] = []
        self.registry = CollectorRegistry()

    def __call__(self, config: MetricsConfig) -> UsageCollector:
        source = FakeSource(config, self.fail)
        self.sources.append(source)
        return UsageCollector(
            source, interval=config.interval, nodes=self.state.node_targets, registry=self.registry
        )


def node(name: str, ip: str) -> Mapping[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "addresses": [{"type": "InternalIP", "address": ip}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def wait(cond: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.01)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.parametrize(
    ("sections", "builds", "running"),
    [
        pytest.param([None], 0, False, id="no-section-no-collector"),
        pytest.param([PROM], 1, True, id="section-starts-one"),
        pytest.param([PROM, dict(PROM)], 1, True, id="same-section-kept"),
        pytest.param([PROM, PROM_OTHER], 2, True, id="changed-section-rebuilt"),
        pytest.param([PROM, ADAPTOR], 2, True, id="changed-type-rebuilt"),
        pytest.param([PROM, None], 1, False, id="removed-section-stopped"),
        pytest.param([PROM, {}], 1, False, id="empty-section-stopped"),
        pytest.param([None, PROM, None, PROM], 2, True, id="re-added"),
    ],
)
def test_the_collector_follows_the_metrics_section(
    sections: list[Mapping[str, Any] | None], builds: int, running: bool
) -> None:
    state = ClusterState()
    factory = Factory(state)
    feed = UsageFeed(state, factory=factory)
    try:
        for section in sections:
            feed.configure(section)
        assert feed.builds == builds == len(factory.sources)
        assert (feed.collector is not None and feed.collector.running) is running
        # Every replaced collector is stopped and its source closed (on a thread of its own).
        for old in factory.sources[: builds - 1 if running else builds]:
            wait(lambda old=old: old.closed, "the old source closed")
    finally:
        feed.close()


def test_a_bad_section_raises_before_touching_the_running_collector() -> None:
    state = ClusterState()
    feed = UsageFeed(state, factory=Factory(state))
    feed.configure(PROM)
    running = feed.collector
    with pytest.raises(MetricsConfigError, match=r"metrics\.type"):
        feed.configure({"type": "graphite", "address": "http://g:1"})
    assert feed.collector is running and running is not None and running.running
    feed.close()


def test_fresh_usage_reaches_the_cache_with_node_addresses_as_targets() -> None:
    state = ClusterState()
    state.apply(node("n1", "10.0.0.1"))
    factory = Factory(state)
    feed = UsageFeed(state, factory=factory)
    feed.configure(PROM)
    collector = feed.collector
    assert collector is not None
    wait(lambda: collector.last_success is not None, "the first fetch")
    assert factory.sources[0].targets[0] == {"n1": ("10.0.0.1",)}
    assert feed.refresh(NOW) == 1
    assert state.snapshot(now=NOW).nodes.usage["n1"].cpu == 90.0
    # Stale (older than staleAfter) is left out; removing the section clears the cache.
    assert feed.refresh(NOW + 3600) == 0
    feed.configure(None)
    assert state.usage == {}
    feed.close()


def test_a_source_that_is_down_leaves_no_usage_and_raises_nothing() -> None:
    state = ClusterState()
    factory = Factory(state, fail=True)
    feed = UsageFeed(state, factory=factory)
    feed.configure(PROM)
    collector = feed.collector
    assert collector is not None
    wait(lambda: collector.consecutive_failures >= 1, "a failed fetch")
    assert feed.refresh(NOW) == 0 and state.usage == {}
    feed.close()


def test_without_a_collector_refresh_leaves_the_cache_alone() -> None:
    state = ClusterState()
    state.set_usage({"n1": NodeUsage(cpu=1.0, memory=2.0, measured_at=NOW)})
    assert UsageFeed(state).refresh(NOW) == 1
    assert set(state.usage) == {"n1"}


def _pod(name: str, owner: str | None, node: str | None = None) -> Mapping[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": name}
    if owner:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": owner, "uid": owner, "controller": True}]
    spec: dict[str, Any] = {"schedulerName": "volsched", "containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


@pytest.mark.parametrize(
    ("owner", "at", "avoided"),
    [
        pytest.param("rs", NOW + 1, ("n1",), id="replacement-keeps-off"),
        pytest.param("rs", NOW + AVOID_SECONDS + 1, None, id="expires"),
        pytest.param(None, NOW + 1, None, id="no-owner-no-replacement"),
    ],
)
def test_moved_off_keeps_the_owner_off_the_node(
    owner: str | None, at: float, avoided: tuple[str, ...] | None
) -> None:
    state = ClusterState()
    state.apply(node("n1", "10.0.0.1"))
    evicted = build_task(_pod("old", owner, "n1"), priority_classes={})
    state.moved_off(evicted, "n1", now=NOW)
    state.apply(_pod("new", owner))
    state.snapshot(now=at)  # expires what is due
    assert (state.avoid.get(evicted.owner) if evicted.owner else None) == avoided
