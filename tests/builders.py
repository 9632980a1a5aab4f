"""Small builders for Kubernetes objects as plain dicts and scheduler configs, and helpers that run the
simulator on them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from volsched.cache.snapshots import SnapshotBuilder, View
from volsched.cache.state import ClusterState
from volsched.framework.config import SchedulerConfig
from volsched.framework.registry import load_config
from volsched.model.cluster import ClusterSnapshot
from volsched.model.errors import InputError
from volsched.model.vocabulary import NodeSpec, PodGroupSpec, QueueSpec, Task
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
    tolerations: list[Obj] | None = None,
    affinity: Obj | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    owner: str | None = None,
    preemption_policy: str | None = None,
    created: str | None = None,
    spread: list[Obj] | None = None,
    host_ports: list[int | tuple[int, str]] | None = None,
    claims: list[str] | None = None,
    gates: list[str] | None = None,
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
    if spread:
        spec["topologySpreadConstraints"] = spread
    if host_ports:
        spec["containers"][0]["ports"] = [
            {"containerPort": p, "hostPort": p}
            if isinstance(p, int)
            else {"containerPort": p[0], "hostPort": p[0], "hostIP": p[1]}
            for p in host_ports
        ]
    if claims:
        spec["volumes"] = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
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


def owned_by(obj: Obj, *, kind: str, owner: str, uid: str, api_version: str = "batch/v1") -> Obj:
    """``obj`` with one controller ownerReference (``kind`` ``owner``, uid ``uid``)."""
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": owner, "uid": uid, "controller": True}
    ]
    return obj


def owned(name: str, *, kind: str, owner: str, uid: str, api_version: str = "batch/v1") -> Obj:
    """A pending pod that names no PodGroup, its controller owner ``kind`` ``owner`` (uid ``uid``)."""
    return owned_by(pod(name), kind=kind, owner=owner, uid=uid, api_version=api_version)


def podgroup(
    name: str,
    *,
    ns: str = "default",
    min_member: int | None = 1,
    queue: str | None = None,
    min_resources: dict[str, str] | None = None,
    priority_class: str | None = None,
    phase: str | None = None,
    topology: tuple[str, str] | None = None,
    created: str | None = None,
) -> Obj:
    spec: Obj = {}
    if min_member is not None:
        spec["minMember"] = min_member
    if topology:
        spec["topology"] = {"key": topology[0], "mode": topology[1]}
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
    if created:
        out["metadata"]["creationTimestamp"] = created
    if phase:
        out["status"] = {"phase": phase}
    return out


def gang(
    name: str,
    *,
    size: int,
    phase: str,
    cpu: str = "1",
    priority_class: str | None = None,
    min_resources: dict[str, str] | None = None,
) -> list[Obj]:
    """A PodGroup (minMember ``size``) in queue q, namespace ns, with ``size`` pending pods of ``cpu`` each."""
    group = podgroup(
        name,
        ns="ns",
        queue="q",
        min_member=size,
        phase=phase,
        priority_class=priority_class,
        min_resources=min_resources,
    )
    members = [
        pod(f"{name}-{i}", ns="ns", cpu=cpu, group=name, priority_class=priority_class) for i in range(size)
    ]
    return [group, *members]


def running_gangs(
    count: int, *, node_cpu: str, cpus: list[str] | None = None, memory: bool = False
) -> list[Obj]:
    """Nodes n1 and n2 (``node_cpu`` each), queues a and b (weight 2), and ``count`` Running gangs of two
    pods (PodGroup ``g<i>``, one pod on each node), in namespaces ns0-ns2 in turn, gang i in queue b when
    i % 4 == 0; the pods ask ``cpus`` in turn (1 cpu without) and, with ``memory``, i + 1 Gi."""
    cpus = cpus or ["1"]
    objs: list[Obj] = [node("n1", cpu=node_cpu), node("n2", cpu=node_cpu), queue("a"), queue("b", weight=2)]
    for i in range(count):
        ns, q = f"ns{i % 3}", "a" if i % 4 else "b"
        objs.append(podgroup(f"g{i}", ns=ns, queue=q, min_member=2, phase="Running"))
        for k in range(2):
            objs.append(
                pod(
                    f"g{i}-{k}",
                    ns=ns,
                    group=f"g{i}",
                    cpu=cpus[(i + k) % len(cpus)],
                    memory=f"{i + 1}Gi" if memory else None,
                    node=f"n{k + 1}",
                )
            )
    return objs


def queue(
    name: str,
    *,
    weight: int | None = 1,
    capability: dict[str, str] | None = None,
    guarantee: dict[str, str] | None = None,
    reclaimable: bool | None = None,
    state: str | None = None,
    parent: str | None = None,
    **tenancy: Any,
) -> Obj:
    """A Queue; ``tenancy``: its spec's other fields as they are written (``allowNotPreemptable=True``,
    ``namespaceSelector={...}``, ``perNamespace={...}``)."""
    spec: Obj = dict(tenancy)
    if parent is not None:
        spec["parent"] = parent
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


def volcano(obj: Obj) -> Obj:
    """The same PodGroup or Queue as Volcano writes it (scheduling.volcano.sh; a Queue's state in status)."""
    out: Obj = {**obj, "apiVersion": "scheduling.volcano.sh/v1beta1", "spec": dict(obj.get("spec") or {})}
    if out["kind"] == "Queue" and "state" in out["spec"]:
        out["status"] = {"state": out["spec"].pop("state")}
    return out


def quota(ns: str, weight: Any, *, name: str = "weight", key: str = "volsched.io/namespace.weight") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"hard": {key: str(weight)}},
    }


def namespace(name: str, *, labels: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def pod_term(
    key: str = "kubernetes.io/hostname",
    *,
    match: dict[str, str] | None = None,
    expressions: list[Obj] | None = None,
    namespaces: list[str] | None = None,
    namespace_selector: Obj | None = None,
    match_label_keys: list[str] | None = None,
    mismatch_label_keys: list[str] | None = None,
) -> Obj:
    """A podAffinityTerm."""
    selector: Obj = {}
    if match:
        selector["matchLabels"] = match
    if expressions:
        selector["matchExpressions"] = expressions
    term: Obj = {"topologyKey": key, "labelSelector": selector}
    if namespaces:
        term["namespaces"] = namespaces
    if namespace_selector is not None:
        term["namespaceSelector"] = namespace_selector
    if match_label_keys:
        term["matchLabelKeys"] = match_label_keys
    if mismatch_label_keys:
        term["mismatchLabelKeys"] = mismatch_label_keys
    return term


def pod_affinity(
    *,
    required: list[Obj] | None = None,
    anti: list[Obj] | None = None,
    preferred: list[tuple[int, Obj]] | None = None,
    preferred_anti: list[tuple[int, Obj]] | None = None,
) -> Obj:
    """spec.affinity with podAffinity / podAntiAffinity blocks from terms (see pod_term)."""
    out: Obj = {}
    if required or preferred:
        out["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": required or [],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred or []
            ],
        }
    if anti or preferred_anti:
        out["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": anti or [],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti or []
            ],
        }
    return out


def spread(
    key: str,
    *,
    match: dict[str, str],
    max_skew: int = 1,
    hard: bool = True,
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: list[str] | None = None,
) -> Obj:
    """One topologySpreadConstraint."""
    out: Obj = {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": match},
    }
    if min_domains is not None:
        out["minDomains"] = min_domains
    if node_affinity_policy:
        out["nodeAffinityPolicy"] = node_affinity_policy
    if node_taints_policy:
        out["nodeTaintsPolicy"] = node_taints_policy
    if match_label_keys:
        out["matchLabelKeys"] = match_label_keys
    return out


def pdb(name: str, selector: Obj | None, *, ns: str = "default", **spec: Any) -> Obj:
    """A policy/v1 PodDisruptionBudget; ``spec`` gives minAvailable or maxUnavailable."""
    body: Obj = dict(spec)
    if selector is not None:
        body["selector"] = selector
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ns},
        "spec": body,
    }


def pvc(
    name: str, *, ns: str = "default", volume: str | None = None, storage_class: str | None = None
) -> Obj:
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    if storage_class:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def pv(
    name: str,
    *,
    nodes: list[str] | None = None,
    zone: str | None = None,
    storage_class: str | None = None,
    csi: str | None = None,
) -> Obj:
    """A local PersistentVolume reachable from the named nodes (by hostname) or one zone; ``csi``: a volume
    of that CSI driver instead (its handle the volume's name)."""
    spec: Obj = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt"}}
    if csi:
        del spec["local"]
        spec["csi"] = {"driver": csi, "volumeHandle": f"handle-{name}"}
    if storage_class:
        spec["storageClassName"] = storage_class
    exprs = []
    if nodes:
        exprs.append({"key": "kubernetes.io/hostname", "operator": "In", "values": nodes})
    if zone:
        exprs.append({"key": "zone", "operator": "In", "values": [zone]})
    if exprs:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def csi_node(name: str, **counts: int | None) -> Obj:
    """A CSINode of node ``name``: its drivers (``_`` for ``.`` in their names) with their attach limits
    (None: a driver without a count)."""
    drivers = []
    for driver, count in counts.items():
        d: Obj = {"name": driver.replace("_", "."), "nodeID": name}
        if count is not None:
            d["allocatable"] = {"count": count}
        drivers.append(d)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": drivers},
    }


def storage_class(
    name: str, *, provisioner: str = "kubernetes.io/no-provisioner", zones: list[str] | None = None
) -> Obj:
    """A StorageClass whose claims wait for their first consumer (``zones``: its allowedTopologies)."""
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    if zones:
        obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": "zone", "values": zones}]}]
    return obj


def priority_class(name: str, value: int, *, default: bool = False) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": default,
    }


#: Two PriorityClasses, low (1) and high (100).
PRIORITIES = [priority_class("low", 1), priority_class("high", 100)]


def batch_job(
    name: str,
    *,
    ns: str = "default",
    parallelism: int = 1,
    group: str | None = None,
    cpu: str = "1",
    gpu: str | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    ann = {"scheduling.k8s.io/group-name": group} if group else {}
    ann.update(annotations or {})
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


def rescheduling_refused(arguments: dict[str, Any], *, actions: str = "shuffle") -> str:
    """The error a config is refused with whose one plugin is rescheduling with ``arguments``."""
    text = json.dumps(
        {"actions": actions, "tiers": [{"plugins": [{"name": "rescheduling", "arguments": arguments}]}]}
    )
    with pytest.raises(InputError) as err:
        config(text)
    return str(err.value)


def run(objects: list[Obj], *, conf: SchedulerConfig | None = None, sessions: int = 50) -> dict[str, Any]:
    """Simulate ``objects`` to a steady state and return the ``-o json`` document."""
    return to_json(simulate_objects(objects, conf=conf, sessions=sessions))


def simulate_objects(
    objects: list[Obj], *, conf: SchedulerConfig | None = None, sessions: int = 50
) -> SimulationResult:
    docs = [Document(f"test: document {i + 1}", o) for i, o in enumerate(objects)]
    return Simulator(docs, conf).run(sessions)


def owner_group(data: dict[str, Any], owner: str, *, ns: str = "default") -> dict[str, Any]:
    """The ``-o json`` PodGroup that stands for ``owner`` ("Job train"), named ``podgroup-<its uid>``."""
    [group] = [
        g for k, g in data["podgroups"].items() if k.startswith(f"{ns}/podgroup-") and g["owner"] == owner
    ]
    return group  # type: ignore[no-any-return]


def placed(data: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Pods with a node, ``{"ns/name": node}``, optionally only those whose key starts with ``prefix``."""
    return {k: v["node"] for k, v in data["pods"].items() if v["node"] and k.startswith(prefix)}


def count_placed(data: dict[str, Any], prefix: str) -> int:
    return len(placed(data, prefix))


def snapshot_of(
    *,
    nodes: list[NodeSpec],
    tasks: list[Task],
    podgroups: list[PodGroupSpec],
    queues: list[QueueSpec],
) -> ClusterSnapshot:
    """A session's snapshot of parsed objects, built as the cache builds its own (the one path)."""
    view = View(
        tasks={t.key: t for t in tasks},
        seq={t.key: i for i, t in enumerate(tasks)},
        nodes={n.name: n for n in nodes},
        podgroups={pg.key: pg for pg in podgroups},
        queues=queues,
        namespace_weights={},
        priority_classes={},
        usage={},
        avoid={},
        namespace_labels={},
    )
    builder = SnapshotBuilder()
    builder.prepare(view)
    return builder.build(view, podgroups=podgroups, now=0.0, carryover={})


#: The rescheduling plugin's lowNodeUtilization strategy: under 20% is low, over 50% high.
LOW_NODE = {
    "name": "lowNodeUtilization",
    "params": {
        "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
        "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
    },
}


def resched_config(
    *strategies: dict[str, Any],
    limit: int | None = None,
    scorer: str = "binpack",
    plugins: tuple[str, ...] = (),
    **arguments: Any,
) -> SchedulerConfig:
    """Shuffle with the rescheduling plugin's ``strategies``; ``plugins`` are added to the first tier."""
    doc: dict[str, Any] = {
        "actions": "enqueue, allocate, backfill, shuffle",
        "tiers": [
            {
                "plugins": [
                    {"name": "priority"},
                    {"name": "gang"},
                    {"name": "conformance"},
                    {
                        "name": "rescheduling",
                        "arguments": {"strategies": list(strategies or [LOW_NODE]), **arguments},
                    },
                    *({"name": name} for name in plugins),
                ]
            },
            {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"}, {"name": scorer}]},
        ],
    }
    if limit is not None:
        doc["configurations"] = [{"name": "shuffle", "arguments": {"maxEvictionsPerSession": limit}}]
    return config(json.dumps(doc))


def first_evictions(objs: list[Obj], conf: SchedulerConfig) -> list[str]:
    """The pods the first session evicts, in order."""
    result = simulate_objects(objs, conf=conf, sessions=1)
    return [e.pod for e in result.history[0].evictions]


def preempting_cluster() -> ClusterState:
    """Four low-priority pods fill n1; a high-priority pod waits for two of them to go."""
    state = ClusterState()
    for obj in [
        node("n1", cpu="4"),
        queue("q"),
        priority_class("low", 1),
        priority_class("high", 100),
        podgroup("lo", ns="ns", queue="q", phase="Running", priority_class="low"),
        *[pod(f"lo-{i}", ns="ns", group="lo", node="n1", priority_class="low") for i in range(4)],
        podgroup("hi", ns="ns", queue="q", phase="Inqueue", priority_class="high"),
        pod("hi-0", ns="ns", cpu="2", group="hi", priority_class="high"),
    ]:
        state.apply(obj)
    return state


# --- Dynamic Resource Allocation (resource.k8s.io/v1) ---------------------------------------------------------


def device_class(name: str, *selectors: str, config: list[Obj] | None = None) -> Obj:
    """A DeviceClass whose devices every CEL selector matches."""
    spec: Obj = {"selectors": [{"cel": {"expression": s}} for s in selectors]}
    if config:
        spec["config"] = config
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def gpu(name: str, *, model: str = "a100", memory: str = "80Gi", **attributes: Any) -> Obj:
    """A device of a ResourceSlice: attributes ``model`` and any others (plain values: int, bool, str;
    ``("version", "1.2.3")`` for a version), capacity ``memory``."""
    attrs: Obj = {"model": {"string": model}}
    for key, value in attributes.items():
        if isinstance(value, tuple):
            attrs[key] = {value[0]: value[1]}
        elif isinstance(value, bool):
            attrs[key] = {"bool": value}
        elif isinstance(value, int):
            attrs[key] = {"int": value}
        else:
            attrs[key] = {"string": value}
    return {"name": name, "attributes": attrs, "capacity": {"memory": {"value": memory}}}


def resource_slice(
    name: str,
    devices: list[Obj],
    *,
    node: str | None = None,
    driver: str = "gpu.example.com",
    pool: str | None = None,
    all_nodes: bool = False,
    generation: int = 1,
    count: int = 1,
) -> Obj:
    """A ResourceSlice a driver publishes: ``devices`` on ``node`` (or on every node)."""
    spec: Obj = {
        "driver": driver,
        "pool": {"name": pool or node or name, "generation": generation, "resourceSliceCount": count},
        "devices": devices,
    }
    if all_nodes:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": spec,
    }


def device_request(
    name: str = "gpu",
    *,
    cls: str = "gpu.example.com",
    selectors: tuple[str, ...] = (),
    count: int | None = None,
    all_devices: bool = False,
    **extra: Any,
) -> Obj:
    exactly: Obj = {"deviceClassName": cls, **extra}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if count is not None:
        exactly["count"] = count
    if all_devices:
        exactly["allocationMode"] = "All"
    return {"name": name, "exactly": exactly}


def resource_claim(
    name: str,
    requests: list[Obj] | None = None,
    *,
    ns: str = "default",
    constraints: list[Obj] | None = None,
    allocated: list[tuple[str, str]] | None = None,
    driver: str = "gpu.example.com",
    uid: str | None = None,
) -> Obj:
    """A ResourceClaim (one request for a device of class gpu.example.com unless ``requests``);
    ``allocated``: (node, device) pairs it was allocated already (pool named after the node)."""
    devices: Obj = {"requests": requests if requests is not None else [device_request()]}
    if constraints:
        devices["constraints"] = constraints
    out: Obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns, "uid": uid or f"uid-{ns}-{name}"},
        "spec": {"devices": devices},
    }
    if allocated:
        node_name = allocated[0][0]
        out["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": driver, "pool": n, "device": d} for n, d in allocated
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                    ]
                },
            }
        }
    return out


def claiming(name: str, *claims: str, templates: tuple[str, ...] = (), **kwargs: Any) -> Obj:
    """A pending pod whose spec.resourceClaims names ``claims`` (one entry each, named after the claim)
    and ``templates`` (entries ``t-<template>`` made from those ResourceClaimTemplates)."""
    out = pod(name, **kwargs)
    entries: list[Obj] = [{"name": c, "resourceClaimName": c} for c in claims]
    entries += [{"name": f"t-{t}", "resourceClaimTemplateName": t} for t in templates]
    out["spec"]["resourceClaims"] = entries
    return out
