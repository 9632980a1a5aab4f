"""The operator on a real apiserver with Dynamic Resource Allocation (resource.k8s.io/v1): the test
publishes ResourceSlices as a driver would, pods claim GPUs through ResourceClaims, and the operator
writes each claim's allocation and reservation before it binds the pod."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import RECLAIM_CONFIG, Kube, Start, node, pod, podgroup, queue, wait_for

pytestmark = pytest.mark.cluster

R, V = "resource.k8s.io", "v1"
DRIVER = "gpu.example.com"


def device_class(k: Kube) -> None:
    body = {
        "apiVersion": f"{R}/{V}",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    k.custom.create_cluster_custom_object(R, V, "deviceclasses", body)


def publish(k: Kube, node_name: str, gpus: int) -> None:
    """What a driver's kubelet plugin publishes: one ResourceSlice of ``gpus`` GPUs on the node."""
    body = {
        "apiVersion": f"{R}/{V}",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {"model": {"string": "a100"}, "index": {"int": i}},
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for i in range(gpus)
            ],
        },
    }
    k.custom.create_cluster_custom_object(R, V, "resourceslices", body)


def claim(k: Kube, ns: str, name: str) -> None:
    body = {
        "apiVersion": f"{R}/{V}",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}},
    }
    k.custom.create_namespaced_custom_object(R, V, ns, "resourceclaims", body)


def get_claim(k: Kube, ns: str, name: str) -> dict[str, Any]:
    return k.custom.get_namespaced_custom_object(R, V, ns, "resourceclaims", name)  # type: ignore[no-any-return]


def claiming(name: str, claim_name: str, **kwargs: Any) -> dict[str, Any]:
    out = pod(name, **kwargs)
    out["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    out["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return out


def devices_of(c: dict[str, Any]) -> list[tuple[str, str]]:
    results = (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return [(r["pool"], r["device"]) for r in results]


def test_a_claim_is_allocated_and_reserved_before_its_pod_is_bound(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1"), node("n2"))
    device_class(k)
    publish(k, "n1", 1)
    ns = k.namespace("dra")
    claim(k, ns, "first")
    claim(k, ns, "second")
    k.pods(ns, claiming("a", "first"))
    start_operator()
    bound = wait_for(lambda: k.bound(ns), 30, what="the pod that claims a GPU bound")
    assert bound == {f"{ns}/a": "n1"}  # n2 publishes no device
    first = get_claim(k, ns, "first")
    assert devices_of(first) == [("n1", "gpu-0")]
    uid = k.core.read_namespaced_pod("a", ns).metadata.uid
    assert [(r["resource"], r["name"], r["uid"]) for r in first["status"]["reservedFor"]] == [
        ("pods", "a", uid)
    ]
    terms = first["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]

    # The one GPU is taken: the next pod waits, saying why, and is placed once a driver publishes more.
    k.pods(ns, claiming("b", "second"))

    def said() -> str:
        events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "b"]
        return next((e.message for e in events if e.reason == "FailedScheduling"), "")

    message = wait_for(said, 30, what="b's FailedScheduling event")
    # Queues count devices per DeviceClass: the cluster's one GPU is held, so b is not admitted yet.
    assert "overcommit: minResources devices/gpu.example.com 1 > room 0.2" in message, message
    assert f"{ns}/b" not in k.bound(ns)
    publish(k, "n2", 1)
    wait_for(lambda: k.bound(ns).get(f"{ns}/b") == "n2", 30, what="b bound where the new GPU is")
    assert devices_of(get_claim(k, ns, "second")) == [("n2", "gpu-0")]


def test_a_gang_of_eight_each_claiming_a_gpu_is_bound_all_or_nothing(k: Kube, start_operator: Start) -> None:
    k.nodes(*(node(f"n{i}") for i in range(4)))
    device_class(k)
    for i in range(3):
        publish(k, f"n{i}", 2)
    publish(k, "n3", 1)  # seven GPUs for eight pods
    ns = k.namespace("train")
    k.podgroup(ns, podgroup("train", 8))
    for i in range(8):
        claim(k, ns, f"train-{i}")
    k.pods(ns, *(claiming(f"train-{i}", f"train-{i}", group="train") for i in range(8)))
    start_operator()

    def unschedulable() -> bool:
        conds = {
            c["type"]: c for c in (k.get_podgroup(ns, "train").get("status") or {}).get("conditions") or []
        }
        return conds.get("Scheduled", {}).get("status") == "False"

    wait_for(unschedulable, 30, what="the gang reported unschedulable")
    assert k.bound(ns) == {}
    assert all(devices_of(get_claim(k, ns, f"train-{i}")) == [] for i in range(8))  # nothing allocated

    # The eighth GPU: the driver republishes n3's pool with two devices (a new generation).
    body = k.custom.get_cluster_custom_object(R, V, "resourceslices", f"n3-{DRIVER}")
    body["spec"]["pool"]["generation"] = 2
    body["spec"]["devices"].append({**body["spec"]["devices"][0], "name": "gpu-1"})
    k.custom.replace_cluster_custom_object(R, V, "resourceslices", f"n3-{DRIVER}", body)
    bound = wait_for(lambda: len(k.bound(ns)) == 8 and k.bound(ns), 60, what="the whole gang bound")
    taken = [d for i in range(8) for d in devices_of(get_claim(k, ns, f"train-{i}"))]
    assert len(taken) == 8 and len(set(taken)) == 8  # one GPU each, never one twice
    for i in range(8):  # each pod where its claim's device is
        [(pool, _)] = devices_of(get_claim(k, ns, f"train-{i}"))
        assert bound[f"{ns}/train-{i}"] == pool


@pytest.mark.parametrize(
    ("lows", "min_member"),
    [
        pytest.param(3, 2, id="gang-of-3-min-2"),
        pytest.param(2, 1, id="lone-pods-min-1"),
    ],
)
def test_a_higher_priority_pod_preempts_one_gpu_holder(
    k: Kube, start_operator: Start, lows: int, min_member: int
) -> None:
    """preempt for devices: low-priority pods hold every GPU of the node, and a high-priority pod that
    claims one GPU evicts one of them (Eviction API), no more. Once the test, playing
    kube-controller-manager's resource claim controller, deallocates the victim's claim, the preemptor
    is bound on that GPU.
    - A gang of 3 with minMember 2: one pod is all preempt may take.
    - A job of minMember 1 (no gang, docs/starvation.md#who-may-be-a-victim): both may be victims, and
      one GPU is what the high pod needs. Before fd14e53 the second went too: once the first was gone
      its claim still held its GPU until deallocated, and the next session's preempt took that GPU for
      held, not coming free."""
    k.set_config(RECLAIM_CONFIG)
    sched = client.SchedulingV1Api(k.api)
    for name, value in (("low", 10), ("high", 1000)):
        sched.create_priority_class({"metadata": {"name": name}, "value": value})
    k.nodes(node("n1"))
    device_class(k)
    publish(k, "n1", lows)
    k.queue(queue("q"))
    ns = k.namespace("pre")
    k.podgroup(ns, podgroup("low", min_member, queue="q", priority_class="low"))
    for i in range(lows):
        claim(k, ns, f"low-{i}")
    k.pods(ns, *(claiming(f"low-{i}", f"low-{i}", group="low") for i in range(lows)))
    start_operator()
    wait_for(lambda: len(k.bound(ns)) == lows, 30, what="the low pods bound")
    k.podgroup(ns, podgroup("high", 1, queue="q", priority_class="high"))
    claim(k, ns, "high")
    k.pods(ns, claiming("high", "high", group="high"))

    def gone() -> list[str]:
        left = {p.metadata.name for p in k.core.list_namespaced_pod(ns).items}
        return [f"low-{i}" for i in range(lows) if f"low-{i}" not in left]

    [victim] = wait_for(gone, 60, what="a low pod evicted for the high one")
    freed = devices_of(get_claim(k, ns, victim))
    assert len(freed) == 1
    # The resource claim controller's part: the pod is gone, its claim is deallocated.
    body = get_claim(k, ns, victim)
    body["status"] = {}
    k.custom.replace_namespaced_custom_object_status(R, V, ns, "resourceclaims", victim, body)
    wait_for(lambda: k.bound(ns).get(f"{ns}/high") == "n1", 60, what="the high pod bound on the freed GPU")
    assert devices_of(get_claim(k, ns, "high")) == freed
    assert gone() == [victim]  # the other low pods kept their GPUs
