"""What the benchmarks build their clusters from, one shape each:

* raw objects as the watches deliver them, parsed by the cache (``bench_cache``, ``bench_steady``):
  :func:`raw_node`, :func:`raw_pod`, :func:`raw_podgroup`;
* pods to create on a real apiserver (``bind_throughput``, ``bind_cpu``, ``pod_path_cpu``): :func:`pod_body`;
* parsed specs put straight into a cache, as the watches would leave it (``bench_allocate``,
  ``bench_evict``; parsing 50,000 raw pods is ``bench_parse``'s subject): :func:`node_specs`,
  :func:`gang_tasks`, :func:`parsed_cache`; and :func:`timed_cycle`, one cycle to a ``NullPort`` timed in wall and CPU time;
* the watch confirming a cycle's binds (``bench_steady``, ``bench_aside``): :func:`confirm_binds`.

volsched is imported inside the functions: a benchmark puts the checkout on ``sys.path`` first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

GIB = 2.0**30


def raw_node(i: int, *, resource_version: str = "1") -> dict[str, Any]:
    """Node ``node-<i>``: 64 cpu, 256Gi, 110 pods, Ready, in zone ``z<i % 4>``."""
    return {
        "kind": "Node",
        "metadata": {
            "name": f"node-{i:05d}",
            "resourceVersion": resource_version,
            "labels": {"kubernetes.io/hostname": f"node-{i:05d}", "zone": f"z{i % 4}"},
        },
        "status": {
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def raw_pod(
    name: str,
    *,
    namespace: str,
    uid: str,
    rv: int,
    labels: Mapping[str, str],
    group: str | None = None,
    owner: str | None = None,
    owner_uid: str | None = None,
    node: str | None = None,
    tolerations: Iterable[Mapping[str, str]] = (),
    priority_class: str | None = None,
) -> dict[str, Any]:
    """A pod of ours asking for 500m cpu and 1Gi: in PodGroup ``group`` (its annotation), owned by Job
    ``owner`` (uid ``owner_uid``, else ``u-<owner>``), Running on ``node`` (else Pending)."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid,
        "resourceVersion": str(rv),
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": dict(labels),
        "annotations": {"scheduling.k8s.io/group-name": group} if group else {},
    }
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": owner,
                "uid": owner_uid or f"u-{owner}",
                "controller": True,
            }
        ]
    spec: dict[str, Any] = {
        "schedulerName": "volsched",
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.36",
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
            }
        ],
    }
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if priority_class:
        spec["priorityClassName"] = priority_class
    status: dict[str, Any] = {"phase": "Pending"}
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running", "startTime": "2026-01-01T00:00:05Z"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def pod_body(name: str, scheduler_name: str) -> dict[str, Any]:
    """A pod to create on a real apiserver (in the namespace the request names): 100m cpu and 64Mi, the
    pause image, no grace period, label ``app=bench``; the live benchmarks' pods (``bind_throughput``,
    ``bind_cpu``, ``pod_path_cpu``, ``bench_startup``)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "schedulerName": scheduler_name,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
    }


def raw_podgroup(name: str, *, namespace: str, min_member: int, phase: str | None = None) -> dict[str, Any]:
    """A PodGroup of queue ``default`` (with ``status.phase`` when ``phase`` is given)."""
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.volsched.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": "5"},
        "spec": {"minMember": min_member, "queue": "default"},
    }
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def node_specs(nodes: int, labels: Callable[[int], dict[str, str]]) -> list[Any]:
    """``nodes`` parsed nodes ``node-<i>`` of 16 cpu, 64 GiB and 110 pods, Ready, labelled ``labels(i)``."""
    from volsched.model.vocabulary import NodeSpec

    return [
        NodeSpec(
            name=f"node-{i:05d}",
            allocatable={"cpu": 16.0, "memory": 64 * GIB, "pods": 110.0},
            labels=labels(i),
            taints=(),
            unschedulable=False,
            ready=True,
        )
        for i in range(nodes)
    ]


def gang_tasks(
    namespace: str,
    name: str,
    size: int,
    *,
    request: dict[str, float],
    priority: int,
    node: str | None,
    creation: float,
    labels: Callable[[int], dict[str, str]] = lambda k: {},
    constraints: Any = None,
) -> list[Any]:
    """The ``size`` parsed pods ``<name>-<k>`` of job ``namespace/name``: Running on ``node``, else
    Pending; pod k labelled ``labels(k)``."""
    from volsched.model.vocabulary import Task, TaskStatus

    return [
        Task(
            namespace=namespace,
            name=f"{name}-{k}",
            uid=f"{namespace}/{name}-{k}",
            job_key=f"{namespace}/{name}",
            request_map=dict(request),
            priority=priority,
            status=TaskStatus.RUNNING if node else TaskStatus.PENDING,
            node_name=node,
            scheduler_name="volsched",
            creation=creation,
            labels=labels(k),
            constraints=constraints,
        )
        for k in range(size)
    ]


def parsed_cache(
    *,
    nodes: Iterable[Any],
    tasks: Iterable[Any],
    podgroups: Iterable[Any],
    queues: Iterable[Any],
    namespaces: set[str],
    quota_weights: dict[str, int] | None = None,
) -> Any:
    """A Feeder over a cache holding these parsed objects, as the watches would leave it."""
    from volsched.cache.feeder import Feeder
    from volsched.cache.state import ClusterState

    state = ClusterState()
    state.nodes = {n.name: n for n in nodes}
    state.tasks = {t.key: t for t in tasks}
    state.podgroups = {pg.key: pg for pg in podgroups}
    state.queues = {q.name: q for q in queues}
    state.namespaces = namespaces
    if quota_weights is not None:
        state.quota_weights = quota_weights
    return Feeder(state)


def timed_cycle(feeder: Any, config: Any) -> tuple[Any, float, float]:
    """One cycle at time 0 to a ``NullPort`` (every bind and eviction succeeds): its report, and the
    seconds it took in wall time and in this process's CPU time."""
    from volsched.cycle import NullPort, run_cycle

    t1, c1 = time.perf_counter(), time.process_time()
    report = run_cycle(feeder, config, NullPort(), now=0.0)
    return report, time.perf_counter() - t1, time.process_time() - c1


def confirm_binds(
    feeder: Any, arrived: dict[str, dict[str, Any]], confirm: Mapping[str, str], rv: int
) -> int:
    """The watch confirming the last cycle's binds: each pod of ``confirm`` (key -> node), taken out of
    ``arrived``, applied again on its node and running, a resourceVersion each after ``rv``; returns the
    last resourceVersion given."""
    for key, node in confirm.items():
        pod = arrived.pop(key)
        rv += 1
        pod["metadata"]["resourceVersion"] = str(rv)
        pod["spec"] = {**pod["spec"], "nodeName": node}
        pod["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:05Z"}
        feeder.apply("Pod", pod)
    return rv
