"""Pods that claim devices through Dynamic Resource Allocation (spec.resourceClaims), through the
simulator (the real engine): never placed where their claims are not allocated, and told why."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    PRIORITIES,
    Obj,
    batch_job,
    claiming,
    device_class,
    device_request,
    gpu,
    node,
    pod,
    podgroup,
    queue,
    resource_claim,
    resource_slice,
    run,
    simulate_objects,
)
from tests.sim._eviction_helpers import Staged, eviction_config
from volsched.model.decode import build_task
from volsched.model.errors import InputError
from volsched.simulate import to_json


def reason(data: dict[str, Any], key: str) -> str:
    return next(
        e["message"]
        for e in data["events"]
        if e["object"] == f"Pod {key}" and e["reason"] == "FailedScheduling"
    )


def test_a_pod_whose_claim_does_not_exist_stays_pending_and_says_why() -> None:
    data = run([node("n1"), node("n2"), claiming("gpu-job", "gpu"), pod("plain")])
    assert data["pods"]["default/gpu-job"]["node"] is None
    assert data["pods"]["default/plain"]["node"] is not None
    assert reason(data, "default/gpu-job") == "0/2 nodes fit: 2 resourceclaim gpu not found"


GPU_CLASS = device_class("gpu.example.com", 'device.driver == "gpu.example.com"')
MEM80 = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0'


def gpu_nodes(count: int, per_node: int, *, memory: str = "80Gi", first: int = 0) -> list[Obj]:
    """``count`` nodes n<i>, each with a ResourceSlice of ``per_node`` GPUs of ``memory``."""
    out: list[Obj] = []
    for i in range(first, first + count):
        out.append(node(f"n{i}"))
        out.append(
            resource_slice(
                f"n{i}-gpus", [gpu(f"gpu-{k}", memory=memory) for k in range(per_node)], node=f"n{i}"
            )
        )
    return out


def test_a_pod_gets_a_device_of_its_node_and_its_claim_says_so() -> None:
    objs = [GPU_CLASS, node("cpu-only"), *gpu_nodes(1, 1), resource_claim("c"), claiming("p", "c")]
    result = simulate_objects(objs)
    data = to_json(result)
    assert data["pods"]["default/p"]["node"] == "n0"
    claim = result.state.resource_claims["default/c"]
    assert claim.allocation is not None
    assert [(r.request, r.driver, r.pool, r.device) for r in claim.allocation.results] == [
        ("gpu", "gpu.example.com", "n0", "gpu-0")
    ]
    assert claim.allocation.node_name == "n0"
    assert claim.reserved_for == ("default/p",)


def test_a_device_is_never_given_twice() -> None:
    objs = [GPU_CLASS, *gpu_nodes(1, 1), resource_claim("a"), resource_claim("b")]
    objs += [
        claiming("p", "a", created="2024-01-01T00:00:00Z"),
        claiming("q", "b", created="2024-01-01T00:00:01Z"),
    ]
    data = run(objs)
    assert data["pods"]["default/p"]["node"] == "n0"
    assert data["pods"]["default/q"]["node"] is None
    # Queues count devices: the cluster's one GPU is held, so q is not even admitted, and says so.
    assert reason(data, "default/q") == (
        "not admitted to queue default: overcommit: minResources devices/gpu.example.com 1 "
        "> room 0.2 (cluster 1 x 1.2 - used 1 - admitted 0)"
    )


def test_why_pending_in_numbers() -> None:
    objs: list[Obj] = [GPU_CLASS, *gpu_nodes(6, 4, memory="40Gi"), *gpu_nodes(2, 4, first=6)]
    objs += [resource_claim(f"old{i}", allocated=[(f"n{i}", f"gpu-{k}") for k in range(4)]) for i in (6, 7)]
    objs += [resource_claim("c", [device_request(selectors=(MEM80,))]), claiming("p", "c")]
    data = run(objs)
    assert reason(data, "default/p") == (
        f"0/8 nodes fit: 6 no device of class gpu.example.com matching '{MEM80}', "
        f"2 all 4 matching devices of class gpu.example.com matching '{MEM80}' allocated"
    )


def gpu_gang(size: int) -> list[Obj]:
    out: list[Obj] = [podgroup("train", min_member=size)]
    for i in range(size):
        out += [resource_claim(f"train-{i}-gpu"), claiming(f"train-{i}", f"train-{i}-gpu", group="train")]
    return out


@pytest.mark.parametrize(("gpus", "placed"), [(7, 0), (8, 8)])
def test_a_gang_of_eight_each_claiming_a_gpu_is_placed_all_or_nothing(gpus: int, placed: int) -> None:
    objs = [GPU_CLASS, *gpu_nodes(gpus, 1), *gpu_gang(8)]
    result = simulate_objects(objs)
    data = to_json(result)
    where = [data["pods"][f"default/train-{i}"]["node"] for i in range(8)]
    assert sum(w is not None for w in where) == placed, where
    allocated = [c for c in result.state.resource_claims.values() if c.allocation is not None]
    assert len(allocated) == placed  # a discarded Statement allocated nothing
    if placed:
        assert sorted(where) == sorted(f"n{i}" for i in range(8))  # one GPU each, never one twice


def test_a_claim_volsched_does_not_allocate_keeps_the_pod_pending_with_that_reason() -> None:
    objs = [
        GPU_CLASS,
        *gpu_nodes(1, 1),
        resource_claim("c", [device_request(adminAccess=True)]),
        claiming("p", "c"),
    ]
    data = run(objs)
    assert data["pods"]["default/p"]["node"] is None
    assert reason(data, "default/p") == (
        "0/1 nodes fit: 1 resourceclaim c: request gpu: asks for admin access, which volsched does not allocate"
    )


def test_a_claim_shared_by_two_pods_puts_them_on_one_node() -> None:
    objs = [GPU_CLASS, *gpu_nodes(3, 1), resource_claim("shared")]
    objs += [claiming("a", "shared"), claiming("b", "shared")]
    data = run(objs)
    a, b = data["pods"]["default/a"]["node"], data["pods"]["default/b"]["node"]
    assert a is not None and a == b


def test_a_gang_with_one_claiming_member_is_not_placed_at_all() -> None:
    objs: list[Obj] = [node("n1"), podgroup("g", min_member=2)]
    objs += [pod("g-0", group="g"), claiming("g-1", "gpu", group="g")]
    data = run(objs)
    assert data["pods"]["default/g-0"]["node"] is None
    assert data["pods"]["default/g-1"]["node"] is None


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{"resourceClaimName": "gpu"}], "spec.resourceClaims[0]: missing field name"),
        ([{"name": "a"}], "exactly one of resourceClaimName and resourceClaimTemplateName"),
        (
            [{"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}],
            "exactly one of resourceClaimName and resourceClaimTemplateName",
        ),
        (
            [{"name": "a", "resourceClaimName": "x"}, {"name": "a", "resourceClaimName": "y"}],
            "spec.resourceClaims[1]: name 'a' is given twice",
        ),
        ("gpu", "spec.resourceClaims: expected a list"),
    ],
)
def test_malformed_resource_claims_are_refused_naming_the_field(entries: Any, message: str) -> None:
    raw = pod("p")
    raw["spec"]["resourceClaims"] = entries
    with pytest.raises(InputError, match="Pod default/p: ") as err:
        build_task(raw, priority_classes={})
    assert message in str(err.value)


def test_a_template_claim_takes_the_name_the_controller_gave_it() -> None:
    raw = claiming("p", templates=("gpu-template",))
    task = build_task(raw, priority_classes={})
    assert [(c.name, c.claim, c.template) for c in task.resource_claims] == [
        ("t-gpu-template", "", "gpu-template")
    ]
    raw["status"] = {"resourceClaimStatuses": [{"name": "t-gpu-template", "resourceClaimName": "p-t-gpu-x1"}]}
    task = build_task(raw, priority_classes={})
    assert [c.claim for c in task.resource_claims] == ["p-t-gpu-x1"]


def test_a_discarded_gang_gives_its_devices_back_in_the_same_session() -> None:
    # Seven GPUs for a gang of eight: its Statement is discarded, and the lone pod after it finds all
    # seven free again in that very session.
    objs = [GPU_CLASS, *gpu_nodes(7, 1), *gpu_gang(8), resource_claim("lone-gpu")]
    objs.append(claiming("lone", "lone-gpu", created="2030-01-01T00:00:00Z"))
    data = run(objs, sessions=1)
    assert data["pods"]["default/lone"]["node"] is not None
    assert all(data["pods"][f"default/train-{i}"]["node"] is None for i in range(8))


def test_a_queue_capability_counts_devices_per_device_class() -> None:
    objs: list[Obj] = [GPU_CLASS, *gpu_nodes(2, 2)]
    objs.append(queue("q", capability={"devices/gpu.example.com": "3"}))
    for i in range(4):
        objs += [
            resource_claim(f"c{i}"),
            claiming(f"p{i}", f"c{i}", queue="q", created=f"2024-01-01T00:00:0{i}Z"),
        ]
    data = run(objs)
    placed = [i for i in range(4) if data["pods"][f"default/p{i}"]["node"] is not None]
    assert placed == [0, 1, 2]  # four GPUs, a capability of three
    status = data["queues"]["q"]
    assert status["allocated"]["devices/gpu.example.com"] == 3


def test_a_pod_of_higher_priority_preempts_one_holding_a_gpu() -> None:
    # Two low-priority pods (a group of minMember 1, so one may go) hold the node's two GPUs.
    before: list[Obj] = [GPU_CLASS, *gpu_nodes(1, 2), queue("q"), *PRIORITIES]
    before.append(podgroup("low", min_member=1, queue="q", priority_class="low"))
    for i in range(2):
        before += [
            resource_claim(f"low-{i}-gpu"),
            claiming(f"low-{i}", f"low-{i}-gpu", group="low", priority_class="low"),
        ]
    after = [resource_claim("high-gpu"), claiming("high", "high-gpu", queue="q", priority_class="high")]
    s = Staged(before, after, eviction_config())
    assert s.running("default/low-", before=True) == 2
    [victim] = s.evicted()
    assert s.data["pods"]["default/high"]["node"] == "n0"
    gone = victim.split("/")[1]
    kept = "low-0" if gone == "low-1" else "low-1"
    claims = s.second.state.resource_claims
    assert claims[f"default/{gone}-gpu"].allocation is None  # released with its pod
    held, mine = claims[f"default/{kept}-gpu"].allocation, claims["default/high-gpu"].allocation
    assert held is not None and mine is not None
    assert {held.results[0].device, mine.results[0].device} == {"gpu-0", "gpu-1"}  # the victim's GPU
    assert "the devices its claims hold" in str(s.data["evictions"][0])


def _gpu_0_reserved_for(reserved: dict[str, str]) -> tuple[list[str], dict[str, Any]]:
    """gpu-0's claim, allocated, is reserved for ``reserved``; low-1 holds gpu-1 on the one node; a
    high-priority pod claims a GPU. Returns the pods evicted in three sessions, and the result's data."""
    taken = resource_claim("taken-gpu", allocated=[("n0", "gpu-0")])
    taken["status"]["reservedFor"] = [reserved]
    held = resource_claim("low-1-gpu", allocated=[("n0", "gpu-1")])
    held["status"]["reservedFor"] = [{"resource": "pods", "name": "low-1", "uid": "uid-low-1"}]
    low = claiming("low-1", "low-1-gpu", group="low", priority_class="low", node="n0")
    low["metadata"]["uid"] = "uid-low-1"
    objs: list[Obj] = [GPU_CLASS, *gpu_nodes(1, 2), queue("q"), *PRIORITIES, taken, held, low]
    objs.append(podgroup("low", min_member=1, queue="q", priority_class="low"))
    objs += [resource_claim("high-gpu"), claiming("high", "high-gpu", queue="q", priority_class="high")]
    result = simulate_objects(objs, conf=eviction_config(), sessions=3)
    return [e.pod for r in result.history for e in r.evictions], to_json(result)


def test_a_gpu_whose_pod_is_gone_is_coming_free_and_nobody_else_is_preempted_for_it() -> None:
    # The victim evicted for the high pod is gone, but its claim still holds gpu-0 until the resource
    # claim controller deallocates it. That GPU is coming free: the high pod waits for it, and low-1,
    # holding the other GPU, stays. Before, preempt took low-1 too (two victims for
    # one pod: the DRA preempt e2e case with a job of minMember 1).
    evicted, data = _gpu_0_reserved_for({"resource": "pods", "name": "gone", "uid": "uid-of-a-gone-pod"})
    assert evicted == []
    assert data["pods"]["default/low-1"]["node"] == "n0"
    assert data["pods"]["default/high"]["node"] is None


def test_a_pod_of_lower_priority_preempts_nobody_for_a_gpu() -> None:
    before: list[Obj] = [GPU_CLASS, *gpu_nodes(1, 2), queue("q"), *PRIORITIES]
    before.append(podgroup("high", min_member=1, queue="q", priority_class="high"))
    for i in range(2):
        before += [
            resource_claim(f"high-{i}-gpu"),
            claiming(f"high-{i}", f"high-{i}-gpu", group="high", priority_class="high"),
        ]
    after = [resource_claim("low-gpu"), claiming("low", "low-gpu", queue="q", priority_class="low")]
    s = Staged(before, after, eviction_config())
    assert s.evicted() == []
    assert s.data["pods"]["default/low"]["node"] is None


def test_a_queue_takes_back_its_share_of_the_gpus() -> None:
    # Queue b took both GPUs while queue a asked for none; a deserves one of them (equal weights), and
    # reclaim takes it back from b when a asks.
    before: list[Obj] = [GPU_CLASS, *gpu_nodes(1, 2), *PRIORITIES]
    before += [queue("a"), queue("b")]
    before.append(podgroup("borrow", min_member=1, queue="b"))
    for i in range(2):
        before += [resource_claim(f"b-{i}-gpu"), claiming(f"b-{i}", f"b-{i}-gpu", group="borrow")]
    after = [resource_claim("a-gpu"), claiming("a-0", "a-gpu", queue="a")]
    s = Staged(before, after, eviction_config())
    assert s.running("default/b-", before=True) == 2
    [victim] = s.evicted()
    assert victim.startswith("default/b-")
    assert s.data["pods"]["default/a-0"]["node"] == "n0"
    assert s.held("a", "devices/gpu.example.com") == 1 and s.held("b", "devices/gpu.example.com") == 1


def claim_template(name: str, *, ns: str = "default") -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": {"requests": [device_request()]}}},
    }


def test_the_simulator_makes_the_claims_of_a_jobs_pods_from_their_template() -> None:
    job = batch_job("train", parallelism=4, group="train")
    job["spec"]["template"]["spec"]["resourceClaims"] = [
        {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    ]
    objs: list[Obj] = [
        GPU_CLASS,
        *gpu_nodes(3, 1),
        claim_template("one-gpu"),
        podgroup("train", min_member=3),
        job,
    ]
    result = simulate_objects(objs)
    data = to_json(result)
    running = sorted(k for k, v in data["pods"].items() if v["node"])
    assert len(running) == 3  # three GPUs for four pods
    claims = result.state.resource_claims
    assert len(claims) == 4  # one a pod, made from the template
    for key in running:
        [pc] = result.state.tasks[key].resource_claims
        assert pc.template == "one-gpu" and pc.claim.startswith(f"{key.split('/')[1]}-gpu-")
        assert claims[f"default/{pc.claim}"].allocation is not None
    devices = {r.pool for c in claims.values() if c.allocation for r in c.allocation.results}
    assert devices == {"n0", "n1", "n2"}


def test_a_gang_stays_in_one_domain_named_by_a_device_attribute() -> None:
    # Two NVLink domains, published by the driver as a device attribute (no node label says so): a
    # has n0 and n1 with one GPU each, b has n2 and n3 with two each. A gang of three that must share a
    # domain goes to b, though a's nodes come first by name.
    objs: list[Obj] = [GPU_CLASS]
    for i, (domain, gpus) in enumerate([("a", 1), ("a", 1), ("b", 2), ("b", 2)]):
        objs.append(node(f"n{i}"))
        devices = [gpu(f"gpu-{k}", nvlinkDomain=domain) for k in range(gpus)]
        objs.append(resource_slice(f"n{i}-gpus", devices, node=f"n{i}"))
    objs.append(podgroup("train", min_member=3, topology=("gpu.example.com/nvlinkDomain", "Required")))
    for i in range(3):
        objs += [resource_claim(f"train-{i}-gpu"), claiming(f"train-{i}", f"train-{i}-gpu", group="train")]
    data = run(objs)
    where = {data["pods"][f"default/train-{i}"]["node"] for i in range(3)}
    assert where <= {"n2", "n3"} and None not in where, where


def test_a_gpu_reserved_for_a_consumer_that_is_no_pod_is_held_not_coming_free() -> None:
    # status.reservedFor may name any consumer (apiGroup, resource): one that is not a pod is not a pod
    # gone. Before, its GPU was taken for coming free for good: the high pod waited on it and preempt
    # took no victim for it.
    reserved = {"apiGroup": "example.com", "resource": "trainers", "name": "t", "uid": "uid-t"}
    evicted, _ = _gpu_0_reserved_for(reserved)
    assert evicted == ["default/low-1"]
