"""The operator under change: config reloads, stale caches, and restarts mid-workload (real apiserver)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.operator_fixtures import (
    CONFIG_MAP,
    OPERATOR_NS,
    PLACE_NONE,
    Kube,
    Start,
    failed_scheduling,
    node,
    node_usage,
    pod,
    podgroup,
    wait_for,
)
from volsched.framework.config import DEFAULT_CONFIG_YAML
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster


def test_config_is_reloaded_and_a_bad_one_keeps_the_last_good(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="8"))
    ns = k.namespace("reload")
    k.set_config(DEFAULT_CONFIG_YAML)
    op = start_operator()
    k.pods(ns, pod("first"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/first"), 30, what="first pod bound")

    # A config without allocate: it loads, and new pods wait. What proves a pod waits is a session's word
    # on it (its FailedScheduling event: the config places none), not a count of cycles.
    k.set_config(DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue"))
    wait_for(lambda: op.metric("volsched_config_reloads_total", result="loaded") >= 2, 20, what="reload")
    k.pods(ns, pod("second"))
    said = wait_for(
        lambda: failed_scheduling(k, ns, "second"), 30, what="second's FailedScheduling event", operator=op
    )
    assert said.startswith(PLACE_NONE), said
    assert f"{ns}/second" not in k.bound(ns)

    # A broken config is rejected with an event; the last good one (no allocate) stays in force.
    k.set_config("actions: enqueue, allocate, teleport\ntiers: []\n")
    wait_for(lambda: op.metric("volsched_config_reloads_total", result="rejected") >= 1, 20, what="rejection")
    events = wait_for(
        lambda: [
            e for e in k.core.list_namespaced_event(OPERATOR_NS).items if e.reason == "InvalidSchedulerConfig"
        ],
        20,
        what="InvalidSchedulerConfig event",
    )
    assert "teleport" in events[0].message and events[0].involved_object.name == CONFIG_MAP
    assert "rejected scheduler config" in op.log()
    k.pods(ns, pod("still"))  # a session's word on a pod that came after the rejection: no allocate still
    said = wait_for(
        lambda: failed_scheduling(k, ns, "still"), 30, what="still's FailedScheduling event", operator=op
    )
    assert said.startswith(PLACE_NONE), said
    assert f"{ns}/second" not in k.bound(ns) and f"{ns}/still" not in k.bound(ns)

    k.set_config(DEFAULT_CONFIG_YAML)  # fixed: pods are placed again
    wait_for(lambda: k.bound(ns).get(f"{ns}/second"), 30, what="second pod bound after the fix")
    wait_for(lambda: k.bound(ns).get(f"{ns}/still"), 30, what="still bound after the fix")

    # A config naming actions and plugins the operator had not imported yet (each is imported as a config
    # names it): it loads, and pods are placed under it.
    more = DEFAULT_CONFIG_YAML.replace(
        "enqueue, allocate, backfill", "enqueue, allocate, preempt, reclaim, backfill"
    )
    k.set_config(more + "  - name: usage\n  - name: minruntime\n")
    wait_for(lambda: op.metric("volsched_config_reloads_total", result="loaded") >= 4, 20, what="reload")
    k.pods(ns, pod("third"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/third"), 30, what="third pod bound under the new config")
    assert op.metric("volsched_config_reloads_total", result="rejected") == 1


def test_the_config_map_is_read_at_start_without_the_clients_models(
    k: Kube, start_operator: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ConfigMap in force from the first session, read (like the listings and discovery before
        ready) as plain JSON: the client's CoreV1Api, whose module imports every core model, is not used on
        the way to ready (``-X importtime`` writes each import statement's module to the operator's log;
        the client's lazy ``import_module`` of the API module itself is not among them, its models are). The
    Lease is read and written the same way."""
    k.nodes(node("n1", cpu="8"))
    ns = k.namespace("startcfg")
    k.set_config(DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue"))
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    op = start_operator()  # returns once /healthz says ready
    started = op.log()
    assert "volsched.operator" in started, "no import times in the log: the check below would prove nothing"
    assert "kubernetes.client.models.v1_config_map\n" not in started
    assert "kubernetes.client.models.v1_pod_spec\n" not in started
    assert "kubernetes.client.models.v1_lease_spec\n" not in started  # the Lease too: plain JSON
    assert op.metric("volsched_config_reloads_total", result="loaded") == 1
    assert "loaded scheduler config from ConfigMap" in started

    k.pods(ns, pod("waits"))  # the ConfigMap's config (no allocate) is in force: nothing is bound
    said = wait_for(
        lambda: failed_scheduling(k, ns, "waits"), 30, what="waits' FailedScheduling event", operator=op
    )
    assert said.startswith(PLACE_NONE), said
    assert f"{ns}/waits" not in k.bound(ns)

    k.set_config(DEFAULT_CONFIG_YAML)  # a new resourceVersion: read again and loaded
    wait_for(lambda: k.bound(ns).get(f"{ns}/waits"), 30, what="the pod bound under the new config")
    # /metrics serves the text it made up to a second ago: the count is read once that text is newer.
    wait_for(
        lambda: op.metric("volsched_config_reloads_total", result="loaded") >= 2,
        10,
        what="the reload counted",
    )
    assert op.metric("volsched_config_reloads_total", result="loaded") == 2


def _config_events(k: Kube, *needles: str) -> list[Any]:
    return [
        e
        for e in k.core.list_namespaced_event(OPERATOR_NS).items
        if e.reason == "InvalidSchedulerConfig" and all(n in (e.message or "") for n in needles)
    ]


def test_a_config_that_breaks_the_loader_is_rejected_with_an_event_and_retried_when_it_changes(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="8"))
    ns = k.namespace("badconfig")
    k.set_config(DEFAULT_CONFIG_YAML)
    op = start_operator()
    k.pods(ns, pod("first"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/first"), 30, what="first pod bound")
    no_allocate = DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue")

    # Nested 3,000 deep (RecursionError in the YAML composer before): a rejection with an event, and the
    # last good config (with allocate) stays in force: the next pod is bound.
    nested = no_allocate.replace(
        "  - name: binpack\n", "  - name: binpack\n    arguments: {x: " + "[" * 3000 + "]" * 3000 + "}\n"
    )
    k.set_config(nested)
    wait_for(lambda: op.metric("volsched_config_reloads_total", result="rejected") >= 1, 30, what="rejection")
    wait_for(
        lambda: _config_events(k, "nested deeper than 100 levels"), 20, what="event for the nested config"
    )
    k.pods(ns, pod("second"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/second"), 30, what="second pod bound under the last good config")

    # overcommit-factor: .nan used to load and silently disable the limit.
    nan = no_allocate.replace(
        "  - name: overcommit\n", "  - name: overcommit\n    arguments: {overcommit-factor: .nan}\n"
    )
    k.set_config(nan)
    wait_for(lambda: op.metric("volsched_config_reloads_total", result="rejected") >= 2, 30, what="rejection")
    events = wait_for(lambda: _config_events(k, "overcommit-factor"), 20, what="event for the NaN factor")
    assert "finite" in events[0].message and events[0].involved_object.name == CONFIG_MAP
    k.pods(ns, pod("third"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/third"), 30, what="third pod bound under the last good config")
    assert op.metric("volsched_config_reloads_total", result="loaded") == 1

    # A live PodGroup whose minResources Kubernetes' pattern lets through (1e400) is a rejected object.
    group = podgroup("huge", 1)
    group["spec"]["minResources"] = {"cpu": "1e400"}
    k.podgroup(ns, group)
    wait_for(lambda: f"ignoring PodGroup {ns}/huge" in op.log(), 20, what="the PodGroup rejected")

    # The ConfigMap changes again: it is read again, and a good config loads (no allocate: pods wait).
    # What proves a pod waits under it is a session's word on that pod (its FailedScheduling event says
    # the config places none), not a count of cycles, which a session may have skipped before the pod
    # was in the cache, and which a loaded machine made slow to come.
    k.set_config(no_allocate)
    wait_for(lambda: op.metric("volsched_config_reloads_total", result="loaded") >= 2, 30, what="reload")
    k.pods(ns, pod("fourth"))
    said = wait_for(
        lambda: failed_scheduling(k, ns, "fourth"), 30, what="fourth's FailedScheduling event", operator=op
    )
    assert said.startswith(PLACE_NONE), said
    assert f"{ns}/fourth" not in k.bound(ns)
    assert "Traceback" not in op.log() and "RecursionError" not in op.log()


def test_bind_conflicts_and_pods_deleted_mid_session_correct_the_cache(
    cluster: LocalControlPlane, k: Kube
) -> None:
    from volsched.cycle import CONFLICT, GONE
    from volsched.operator import Operator, Settings

    k.nodes(node("n1", cpu="2"), node("n2", cpu="2"))
    ns = k.namespace("stale")
    k.pods(ns, pod("taken"), pod("deleted"), pod("fine"))
    settings = Settings(kubeconfig=str(cluster.kubeconfig_path))
    settings.lease.enabled = False
    op = Operator(settings)
    try:
        op.prelist()
        # Behind the cache's back: someone else binds one pod and another pod is deleted.
        from kubernetes import client

        k.core.create_namespaced_pod_binding(
            "taken",
            ns,
            client.V1Binding(
                metadata=client.V1ObjectMeta(name="taken", namespace=ns),
                target=client.V1ObjectReference(kind="Node", api_version="v1", name="n2"),
            ),
            _preload_content=False,
        )
        k.core.delete_namespaced_pod("deleted", ns, grace_period_seconds=0)

        first = op.loop.run_once()
        assert first is not None
        assert len(first[0].binds) == 3
        assert op.state.tasks[f"{ns}/fine"].node_name  # assumed bound as the bind is decided
        assert op.port.drain(30)  # the binds go out in the background; the next cycle settles them
        out = op.loop.run_once()
        assert out is not None
        result, report = out
        by_pod = {o.bind.pod: o.result for o in [*first[1].binds, *report.binds]}  # whenever they settled
        assert by_pod[f"{ns}/taken"] == CONFLICT
        assert by_pod[f"{ns}/deleted"] == GONE
        assert by_pod[f"{ns}/fine"] == "bound"
        assert result.binds == []  # nothing is bound twice
        assert op.state.tasks[f"{ns}/taken"].node_name == "n2"  # corrected from the API
        assert f"{ns}/deleted" not in op.state.tasks

        assert op.port.drain(30)
        again = op.loop.run_once()
        assert again is not None and again[0].binds == [] and again[1].binds == []
    finally:
        op.port.close()
        op.writer.close()
        op.api.close()
    assert k.bound(ns)[f"{ns}/taken"] == "n2"
    assert all(used <= alloc for used, alloc in node_usage(k).values())


def test_restart_mid_workload_binds_nothing_twice(
    k: Kube, start_operator: Start, cluster: LocalControlPlane, tmp_path: Path
) -> None:
    k.nodes(*(node(f"n{i}", cpu="4") for i in range(3)))
    ns = k.namespace("restart")
    k.podgroup(ns, podgroup("gang", 4))
    k.pods(ns, *(pod(f"gang-{i}", group="gang") for i in range(4)))
    k.pods(ns, *(pod(f"solo-{i}") for i in range(6)))
    first = start_operator()
    wait_for(lambda: len(k.bound(ns)) >= 4, 30, what="some pods bound")
    first.stop(signal.SIGTERM)
    before = k.bound(ns)

    k.pods(ns, *(pod(f"late-{i}") for i in range(10)))  # arrive while no scheduler runs
    second = start_operator()
    wait_for(lambda: len(k.bound(ns)) == 12, 40, what="the cluster filled (12 cpu)")
    second.stop(signal.SIGKILL)  # a crash: its Lease must expire before a successor binds

    victim = next(key for key in sorted(k.bound(ns)) if "/gang-" not in key)
    k.core.delete_namespaced_pod(victim.split("/", 1)[1], ns, grace_period_seconds=0)
    third = start_operator()
    wait_for(lambda: len(k.bound(ns)) == 12, 40, what="the freed cpu used again after the crash")
    # The successor bound only once the crashed one's Lease had expired (it was never released).
    assert "(expired, was " in third.log()

    after = k.bound(ns)
    for key, node_name in before.items():
        assert after.get(key, node_name) == node_name, f"{key} moved"
    gang = [key for key in after if "/gang-" in key]
    assert len(gang) in (0, 4)
    for used, alloc in node_usage(k).values():
        assert used <= alloc + 1e-9
    assert third.metric("volsched_schedule_attempts_total", result="bind_conflict") == 0
    assert ": conflict (" not in third.log()  # the log of all three: no bind was ever refused
