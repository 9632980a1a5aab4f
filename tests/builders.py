"""Small builders for Kubernetes objects as plain dicts, and a helper that runs the simulator on them."""

from __future__ import annotations

from typing import Any

from volsched.framework.config import SchedulerConfig, load_config
from volsched.simulate import Document, SimulationResult, Simulator, to_json

Obj = dict[str, Any]


def _resources(
    cpu: str | None, memory: str | None, gpu: str | None, extra: dict[str, str] | None = None
) -> dict[str, str]:
    out: dict[str, str] = {}
    if cpu is not None:
        out["cpu"] = cpu
    if memory is not None:
        out["memory"] = memory
    if gpu is not None:
        out["nvidia.com/gpu"] = gpu
    out.update(extra or {})
    return out


def node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    gpu: str | None = None,
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
    annotations: dict[str, str] | None = None,
) -> Obj:
    alloc = _resources(cpu, memory, gpu)
    alloc["pods"] = pods
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
        "spec": spec,
        "status": {
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    *,
    ns: str = "default",
    cpu: str | None = "1",
    memory: str | None = None,
    gpu: str | None = None,
    group: str | None = None,
    queue: str | None = None,
    node: str | None = None,
    phase: str | None = None,
    priority_class: str | None = None,
    scheduler: str = "volsched",
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    affinity: Obj | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    owner: str | None = None,
    preemption_policy: str | None = None,
    created: str | None = None,
) -> Obj:
    ann = dict(annotations or {})
    if group:
        ann["scheduling.k8s.io/group-name"] = group
    if queue:
        ann["scheduling.volsched.io/queue-name"] = queue
    requests = _resources(cpu, memory, gpu)
    spec: Obj = {
        "schedulerName": scheduler,
        "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": requests} if requests else {}}
        ],
    }
    if node:
        spec["nodeName"] = node
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity:
        spec["affinity"] = affinity
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    meta: Obj = {"name": name, "namespace": ns, "annotations": ann, "labels": labels or {}}
    if owner:
        kind, _, oname = owner.partition("/")
        meta["ownerReferences"] = [{"kind": kind, "name": oname, "controller": True}]
    if created:
        meta["creationTimestamp"] = created
    out: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if phase or node:
        out["status"] = {"phase": phase or "Running"}
    return out


def pods(prefix: str, count: int, **kwargs: Any) -> list[Obj]:
    return [pod(f"{prefix}-{i}", **kwargs) for i in range(count)]


def podgroup(
    name: str,
    *,
    ns: str = "default",
    min_member: int | None = 1,
    queue: str | None = None,
    min_resources: dict[str, str] | None = None,
    priority_class: str | None = None,
    phase: str | None = None,
) -> Obj:
    spec: Obj = {}
    if min_member is not None:
        spec["minMember"] = min_member
    if queue:
        spec["queue"] = queue
    if min_resources:
        spec["minResources"] = min_resources
    if priority_class:
        spec["priorityClassName"] = priority_class
    out: Obj = {
        "apiVersion": "scheduling.volsched.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }
    if phase:
        out["status"] = {"phase": phase}
    return out


def queue(
    name: str,
    *,
    weight: int | None = 1,
    capability: dict[str, str] | None = None,
    guarantee: dict[str, str] | None = None,
    reclaimable: bool | None = None,
    state: str | None = None,
) -> Obj:
    spec: Obj = {}
    if weight is not None:
        spec["weight"] = weight
    if capability is not None:
        spec["capability"] = capability
    if guarantee is not None:
        spec["guarantee"] = {"resource": guarantee}
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if state:
        spec["state"] = state
    return {
        "apiVersion": "scheduling.volsched.io/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def quota(ns: str, weight: Any, *, name: str = "weight", key: str = "volsched.io/namespace.weight") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"hard": {key: str(weight)}},
    }


def namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def priority_class(name: str, value: int, *, default: bool = False) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": default,
    }


def batch_job(
    name: str,
    *,
    ns: str = "default",
    parallelism: int = 1,
    group: str | None = None,
    cpu: str = "1",
    gpu: str | None = None,
) -> Obj:
    ann = {"scheduling.k8s.io/group-name": group} if group else {}
    requests = _resources(cpu, None, gpu)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "parallelism": parallelism,
            "template": {
                "metadata": {"annotations": ann},
                "spec": {
                    "schedulerName": "volsched",
                    "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}],
                },
            },
        },
    }


def config(text: str) -> SchedulerConfig:
    return load_config(text=text)


def run(objects: list[Obj], *, conf: SchedulerConfig | None = None, sessions: int = 50) -> dict[str, Any]:
    """Simulate ``objects`` to a steady state and return the ``-o json`` document."""
    return to_json(simulate_objects(objects, conf=conf, sessions=sessions))


def simulate_objects(
    objects: list[Obj], *, conf: SchedulerConfig | None = None, sessions: int = 50
) -> SimulationResult:
    docs = [Document(f"test: document {i + 1}", o) for i, o in enumerate(objects)]
    return Simulator(docs, conf).run(sessions)


def placed(data: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Pods with a node, ``{"ns/name": node}``, optionally only those whose key starts with ``prefix``."""
    return {k: v["node"] for k, v in data["pods"].items() if v["node"] and k.startswith(prefix)}


def count_placed(data: dict[str, Any], prefix: str) -> int:
    return len(placed(data, prefix))
