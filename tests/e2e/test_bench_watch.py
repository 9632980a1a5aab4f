"""The bind benchmark's own watch (bench/bind_throughput.py) on a real kube-apiserver: it counts the pods
the run created and bound, not the pods that were there before it (pods that never fit, ``--stuck``),
whose status a scheduler writes once it starts (a MODIFIED event the watch sees first) and which a bare
binder might even bind."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import wait_for
from volsched_dev.devcluster import LocalControlPlane

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bind_throughput import Conn, build_loadgen, pod_body, start_watch

pytestmark = pytest.mark.cluster


def _bind(core: client.CoreV1Api, namespace: str, name: str, node: str) -> None:
    core.create_namespaced_binding(
        namespace,
        client.V1Binding(
            metadata=client.V1ObjectMeta(name=name),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        ),
        _preload_content=False,  # the client cannot read the Status a binding answers with
    )


@pytest.mark.parametrize("watcher", ["python", "go"])
def test_the_watch_counts_only_the_pods_the_run_created(
    watcher: str, control_plane: LocalControlPlane, kube: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    core = client.CoreV1Api(kube)
    stuck = pod_body("stuck-000", "volsched")
    stuck["spec"]["nodeSelector"] = {"bench.volsched.io/nowhere": "true"}
    core.create_namespaced_pod(namespace, stuck)
    there = core.list_namespaced_pod(namespace)
    loadgen = build_loadgen() if watcher == "go" else None
    if watcher == "go":
        assert loadgen is not None, "no Go toolchain to build bench/loadgen with"
    conn = Conn(control_plane.host, str(control_plane.ca_cert_path), control_plane.admin_token)
    watch = start_watch(
        conn,
        there.metadata.resource_version,
        tmp_path,
        loadgen,
        before=frozenset(p.metadata.name for p in there.items),
        namespace=namespace,
    )
    try:
        # A scheduler starts: the stuck pod's status says why it waits (the watch's first event of it),
        # and a binder that reads no nodeSelector binds it.
        core.patch_namespaced_pod_status(
            "stuck-000",
            namespace,
            {
                "status": {
                    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
                }
            },
        )
        _bind(core, namespace, "stuck-000", "node-0")
        for name in ("pod-000000", "pod-000001"):
            core.create_namespaced_pod(namespace, pod_body(name, "volsched"))
        _bind(core, namespace, "pod-000000", "node-1")
        # The run's bind is the watch's last event: once it is counted, every event before it is too
        # (and a stuck pod counted would have been counted first).
        wait_for(lambda: watch.counts()[1] >= 1, what="a bind seen by the watch")
        assert watch.counts() == (2, 1)
    finally:
        added, bound = watch.result()
    assert set(added) == {"pod-000000", "pod-000001"}
    assert {name: node for name, (_t, node) in bound.items()} == {"pod-000000": "node-1"}
