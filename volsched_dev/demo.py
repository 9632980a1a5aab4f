"""``volsched demo``: a real kube-apiserver, the CRDs, a mixed workload and the operator, converging.

Starts a :class:`~volsched_dev.devcluster.LocalControlPlane`, applies ``crds/``, creates nodes, queues
(weights 1, 2, 3), namespaces with ResourceQuota weights and gangs of pods, runs the operator in-process
and prints queue shares and pod placements as they converge, then stops everything.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from rich.console import Console
from rich.table import Table

from volsched.model.objects import API_GROUP
from volsched_dev.devcluster import LocalControlPlane

CRDS = Path(__file__).resolve().parent.parent / "crds"
V = "v1beta1"


def _workload(api: client.ApiClient) -> None:
    core: Any = client.CoreV1Api(api)  # dict bodies: the client accepts them
    custom: Any = client.CustomObjectsApi(api)
    ext = client.ApiextensionsV1Api(api)
    for path in sorted(CRDS.glob("*.yaml")):
        ext.create_custom_resource_definition(yaml.safe_load(path.read_text()))
    for _ in range(100):
        try:
            custom.list_cluster_custom_object(API_GROUP, V, "queues")
            break
        except client.ApiException:
            time.sleep(0.1)
    for i in range(4):
        res = {"cpu": "8", "memory": "32Gi", "pods": "110"}
        core.create_node({"metadata": {"name": f"node-{i}"}, "status": {"capacity": res, "allocatable": res,
                          "conditions": [{"type": "Ready", "status": "True"}]}})  # fmt: skip
    core.create_namespace({"metadata": {"name": "volsched-system"}})
    for name, weight in (("default", 1), ("research", 1), ("prod", 3)):
        custom.create_cluster_custom_object(API_GROUP, V, "queues", {
            "apiVersion": f"{API_GROUP}/{V}", "kind": "Queue", "metadata": {"name": name}, "spec": {"weight": weight}})  # fmt: skip
    teams = {"team-a": ("research", 1), "team-b": ("research", 3), "team-c": ("prod", 1)}
    for ns, (q, weight) in teams.items():
        core.create_namespace({"metadata": {"name": ns}})
        core.create_namespaced_resource_quota(
            ns,
            {"metadata": {"name": "weight"}, "spec": {"hard": {"volsched.io/namespace.weight": str(weight)}}},
        )
        for job, size in (("train", 4), ("sweep", 24 if q == "prod" else 12)):
            custom.create_namespaced_custom_object(API_GROUP, V, ns, "podgroups", {
                "apiVersion": f"{API_GROUP}/{V}", "kind": "PodGroup", "metadata": {"name": job},
                "spec": {"minMember": 4 if job == "train" else 1, "queue": q}})  # fmt: skip
            for i in range(size):
                core.create_namespaced_pod(ns, {
                    "metadata": {"name": f"{job}-{i}", "annotations": {"scheduling.k8s.io/group-name": job}},
                    "spec": {"schedulerName": "volsched", "terminationGracePeriodSeconds": 0, "containers": [
                        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}})  # fmt: skip


def _tables(api: client.ApiClient, step: int) -> Table:
    core: Any = client.CoreV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    t = Table(title=f"volsched demo, look {step}: queues", title_justify="left")
    for col in ("queue", "weight", "deserved", "allocated", "share", "podgroups running/pending"):
        t.add_column(col)
    for q in custom.list_cluster_custom_object(API_GROUP, V, "queues")["items"]:
        st: dict[str, Any] = q.get("status") or {}
        t.add_row(q["metadata"]["name"], str(q["spec"]["weight"]), st.get("deservedSummary", "-"),
                  st.get("allocatedSummary", "-"), str(st.get("share", "-")),
                  f"{st.get('running', 0)}/{st.get('pending', 0) + st.get('inqueue', 0)}")  # fmt: skip
    per: dict[str, dict[str, int]] = {}
    for p in core.list_pod_for_all_namespaces().items:
        row = per.setdefault(p.metadata.namespace, {})
        key = p.spec.node_name or "pending"
        row[key] = row.get(key, 0) + 1
    nodes = sorted({n for row in per.values() for n in row if n != "pending"})
    placements = Table(title="pods per namespace and node", title_justify="left")
    for col in ("namespace", *nodes, "pending"):
        placements.add_column(col)
    for ns, row in sorted(per.items()):
        placements.add_row(ns, *(str(row.get(n, 0)) for n in nodes), str(row.get("pending", 0)))
    grid = Table.grid()
    grid.add_row(t)
    grid.add_row(placements)
    return grid


def run_demo(looks: int = 4, interval: float = 2.0, console: Console | None = None) -> int:
    from volsched.operator import Operator, Settings

    console = console or Console()
    with LocalControlPlane() as cp:
        console.print(f"[bold]kube-apiserver[/bold] {cp.host} (kubeconfig {cp.kubeconfig_path})")
        with cp.api_client() as api:
            _workload(api)
            settings = Settings(kubeconfig=str(cp.kubeconfig_path))
            settings.http.host, settings.http.port = "127.0.0.1", 0
            settings.session.period = 0.5
            op = Operator(settings)
            loop = asyncio.new_event_loop()
            stop = asyncio.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.run_until_complete(op.run(stop))

            thread = threading.Thread(target=serve, name="volsched-operator", daemon=True)
            thread.start()
            try:
                for step in range(1, looks + 1):
                    time.sleep(interval)
                    console.print(_tables(api, step))
            finally:
                loop.call_soon_threadsafe(stop.set)
                thread.join(timeout=30)
                loop.close()
    console.print("stopped the operator and the control plane")
    return 0
