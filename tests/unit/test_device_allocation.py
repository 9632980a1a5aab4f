"""The device allocator (volsched.model.devices) against the rules of the Kubernetes DRA documentation:
which nodes can give a pod's claims their devices, which devices a node gives, and why not."""

from __future__ import annotations

import numpy as np
import pytest

from tests.builders import (
    Obj,
    claiming,
    device_class,
    device_request,
    gpu,
    node,
    resource_claim,
    resource_slice,
)
from volsched.model import decode
from volsched.model.decode import build_node, build_task
from volsched.model.devices import DeviceCatalog, DeviceState, usable_devices

GPU = device_class("gpu.example.com", 'device.driver == "gpu.example.com"')
A100 = device_class("a100", 'device.attributes["gpu.example.com"].model == "a100"')


def state(objs: list[Obj]) -> DeviceState:
    nodes = sorted((build_node(o) for o in objs if o["kind"] == "Node"), key=lambda s: s.name)
    classes = {c.name: c for c in (decode.device_class(o) for o in objs if o["kind"] == "DeviceClass")}
    devices = usable_devices(decode.resource_slice(o) for o in objs if o["kind"] == "ResourceSlice")
    claims = {c.key: c for c in (decode.resource_claim(o) for o in objs if o["kind"] == "ResourceClaim")}
    return DeviceState(DeviceCatalog(devices, nodes=nodes, classes=classes), claims, nodes=nodes)


def fitting(st: DeviceState, pod: Obj) -> list[str]:
    task = build_task(pod, priority_classes={})
    plan = st.plan(task.namespace, task.resource_claims)
    idx = np.arange(len(st.nodes), dtype=np.intp)
    return [st.nodes[i].name for i in np.flatnonzero(st.fits(plan, idx))]


def reasons(st: DeviceState, pod: Obj) -> dict[str, int]:
    task = build_task(pod, priority_classes={})
    plan = st.plan(task.namespace, task.resource_claims)
    idx = np.arange(len(st.nodes), dtype=np.intp)
    bad = idx[~st.fits(plan, idx)]
    return dict(st.explain(plan, bad))


def take(st: DeviceState, pod: Obj, node_name: str) -> list[tuple[str, str, str]]:
    task = build_task(pod, priority_classes={})
    plan = st.plan(task.namespace, task.resource_claims)
    i = [s.name for s in st.nodes].index(node_name)
    taken = st.allocate(task.key, plan, i)
    return [(a.claim, r.request, r.device) for a in taken for r in a.results]


def two_nodes(n1: list[Obj], n2: list[Obj], *extra: Obj) -> list[Obj]:
    out: list[Obj] = [node("n1"), node("n2"), GPU, A100]
    if n1:
        out.append(resource_slice("n1-gpus", n1, node="n1"))
    if n2:
        out.append(resource_slice("n2-gpus", n2, node="n2"))
    return [*out, *extra]


MEM80 = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0'
NUMA = "gpu.example.com/numa"

CASES: list[tuple[str, list[Obj], list[str]]] = [
    ("a node with a device of the class", two_nodes([gpu("g0")], [], resource_claim("c")), ["n1"]),
    ("no slice, no device", two_nodes([], [], resource_claim("c")), []),
    (
        "the class's selector picks the model",
        two_nodes([gpu("g0", model="t4")], [gpu("g0")], resource_claim("c", [device_request(cls="a100")])),
        ["n2"],
    ),
    (
        "a request selector over capacity, in quantities",
        two_nodes(
            [gpu("g0", memory="40Gi")],
            [gpu("g0", memory="80Gi")],
            resource_claim("c", [device_request(selectors=(MEM80,))]),
        ),
        ["n2"],
    ),
    (
        "count 2 needs two devices on one node",
        two_nodes([gpu("g0")], [gpu("g0"), gpu("g1")], resource_claim("c", [device_request(count=2)])),
        ["n2"],
    ),
    (
        "an allocated device is not given again",
        two_nodes([gpu("g0")], [], resource_claim("c"), resource_claim("old", allocated=[("n1", "g0")])),
        [],
    ),
    (
        "All takes every matching device, and needs one at least",
        two_nodes([], [gpu("g0"), gpu("g1")], resource_claim("c", [device_request(all_devices=True)])),
        ["n2"],
    ),
    (
        "All fails where one matching device is allocated",
        two_nodes(
            [gpu("g0"), gpu("g1")],
            [],
            resource_claim("c", [device_request(all_devices=True)]),
            resource_claim("old", allocated=[("n1", "g1")]),
        ),
        [],
    ),
    (
        "matchAttribute: two requests on one NUMA node",
        two_nodes(
            [gpu("g0", numa=0), gpu("g1", numa=1)],
            [gpu("g0", numa=1), gpu("g1", numa=1)],
            resource_claim(
                "c",
                [device_request("a"), device_request("b")],
                constraints=[{"matchAttribute": NUMA}],
            ),
        ),
        ["n2"],
    ),
    (
        "matchAttribute: a device without the attribute does not match it",
        two_nodes(
            [gpu("g0"), gpu("g1")],
            [],
            resource_claim(
                "c", [device_request("a"), device_request("b")], constraints=[{"matchAttribute": NUMA}]
            ),
        ),
        [],
    ),
    (
        "matchAttribute over the named requests only",
        two_nodes(
            [gpu("g0", numa=0), gpu("g1", numa=1), gpu("g2", numa=1)],
            [],
            resource_claim(
                "c",
                [device_request("a"), device_request("b"), device_request("x")],
                constraints=[{"matchAttribute": NUMA, "requests": ["a", "b"]}],
            ),
        ),
        ["n1"],
    ),
    (
        "a version attribute compared as a semantic version",
        two_nodes(
            [gpu("g0", driverVersion=("version", "1.9.0"))],
            [gpu("g0", driverVersion=("version", "1.10.0"))],
            resource_claim(
                "c",
                [
                    device_request(
                        selectors=(
                            'device.attributes["gpu.example.com"].driverVersion.compareTo(semver("1.10.0")) >= 0',
                        )
                    )
                ],
            ),
        ),
        ["n2"],
    ),
    (
        "a device on every node (allNodes)",
        [
            node("n1"),
            node("n2"),
            GPU,
            resource_slice("shared", [gpu("g0")], pool="net", all_nodes=True),
            resource_claim("c"),
        ],
        ["n1", "n2"],
    ),
    (
        "a partitionable device is not allocated",
        two_nodes(
            [{**gpu("g0"), "consumesCounters": [{"counterSet": "s", "counters": {}}]}],
            [],
            resource_claim("c"),
        ),
        [],
    ),
    (
        "a pool with a slice missing is being updated: its devices wait",
        [node("n1"), GPU, resource_slice("s0", [gpu("g0")], node="n1", count=2), resource_claim("c")],
        [],
    ),
    (
        "only a pool's newest generation counts",
        [
            node("n1"),
            GPU,
            resource_slice("old", [gpu("g0")], node="n1", pool="p", generation=1),
            resource_slice("new", [gpu("g1", model="t4")], node="n1", pool="p", generation=2),
            resource_claim("c", [device_request(cls="a100")]),
            A100,
        ],
        [],
    ),
    (
        "an allocated claim pins the pod to its node",
        two_nodes([gpu("g0")], [gpu("g0")], resource_claim("c", allocated=[("n2", "g0")])),
        ["n2"],
    ),
    (
        "two claims of one pod never share a device",
        two_nodes([gpu("g0")], [gpu("g0"), gpu("g1")], resource_claim("c"), resource_claim("d")),
        ["n2"],
    ),
]


@pytest.mark.parametrize(("objs", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_which_nodes_can_give_the_claims_their_devices(objs: list[Obj], expected: list[str]) -> None:
    claims = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "ResourceClaim" and "status" not in o)
    pinned = [o["metadata"]["name"] for o in objs if o["kind"] == "ResourceClaim" and "status" in o]
    # The pod claims the claims not allocated yet; where all are, the allocated one.
    assert fitting(state(objs), claiming("p", *(claims or pinned))) == expected


def test_a_node_gives_the_first_free_devices_and_takes_them_back_on_release() -> None:
    st = state(
        two_nodes([gpu("g0"), gpu("g1")], [], resource_claim("c"), resource_claim("d"), resource_claim("e"))
    )
    assert take(st, claiming("p", "c"), "n1") == [("c", "gpu", "g0")]
    assert take(st, claiming("q", "d"), "n1") == [("d", "gpu", "g1")]
    assert fitting(st, claiming("r", "e")) == []  # both taken by earlier pods of this session
    st.release("default/p")
    assert fitting(st, claiming("r", "e")) == ["n1"]
    assert take(st, claiming("r", "e"), "n1") == [("e", "gpu", "g0")]


def test_a_shared_claim_allocated_in_the_session_pins_its_other_pods() -> None:
    st = state(two_nodes([gpu("g0")], [gpu("g0")], resource_claim("shared")))
    assert take(st, claiming("p", "shared"), "n2") == [("shared", "gpu", "g0")]
    assert fitting(st, claiming("q", "shared")) == ["n2"]


def test_a_device_every_node_reaches_is_taken_from_every_node() -> None:
    objs: list[Obj] = [
        node("n1"),
        node("n2"),
        GPU,
        resource_slice("net", [gpu("g0")], pool="net", all_nodes=True),
    ]
    st = state([*objs, resource_claim("c"), resource_claim("d")])
    task = build_task(claiming("p", "c"), priority_classes={})
    taken = st.allocate(task.key, st.plan(task.namespace, task.resource_claims), 0)
    assert st.nodes_of(taken) == {0, 1}
    assert taken[0].node_name == "" and taken[0].node_terms == ()
    assert fitting(st, claiming("q", "d")) == []


def test_the_configuration_of_class_and_claim_is_copied_into_the_allocation() -> None:
    opaque: Obj = {"opaque": {"driver": "gpu.example.com", "parameters": {"sharing": "none"}}}
    cls = device_class("gpu.example.com", config=[opaque])
    claim = resource_claim("c")
    claim["spec"]["devices"]["config"] = [{"requests": ["gpu"], **opaque}]
    st = state([node("n1"), cls, resource_slice("s", [gpu("g0")], node="n1"), claim])
    task = build_task(claiming("p", "c"), priority_classes={})
    (a,) = st.allocate(task.key, st.plan(task.namespace, task.resource_claims), 0)
    assert [(source, requests) for source, requests, _ in a.config] == [
        ("FromClass", ("gpu",)),
        ("FromClaim", ()),
    ]
    assert a.node_name == "n1"


REASON_CASES: list[tuple[str, list[Obj], str, dict[str, int]]] = [
    (
        "no matching device, in numbers",
        [*(node(f"n{i}") for i in range(8)), GPU]
        + [
            resource_slice(f"s{i}", [gpu(f"g{k}", memory="40Gi") for k in range(4)], node=f"n{i}")
            for i in range(6)
        ]
        + [resource_slice(f"s{i}", [gpu(f"g{k}") for k in range(4)], node=f"n{i}") for i in (6, 7)]
        + [resource_claim(f"old{i}", allocated=[(f"n{i}", f"g{k}") for k in range(4)]) for i in (6, 7)]
        + [resource_claim("c", [device_request(selectors=(MEM80,))])],
        "c",
        {
            f"no device of class gpu.example.com matching '{MEM80}'": 6,
            f"all 4 matching devices of class gpu.example.com matching '{MEM80}' allocated": 2,
        },
    ),
    (
        "a claim that does not exist",
        [node("n1")],
        "nope",
        {"resourceclaim nope not found": 1},
    ),
    (
        "a class that does not exist",
        [node("n1"), resource_claim("c", [device_request(cls="tpu")])],
        "c",
        {"resourceclaim c: device class tpu not found": 1},
    ),
    (
        "admin access is refused",
        [node("n1"), GPU, resource_claim("c", [device_request(adminAccess=True)])],
        "c",
        {"resourceclaim c: request gpu: asks for admin access, which volsched does not allocate": 1},
    ),
    (
        "a selector that does not compile",
        [
            node("n1"),
            GPU,
            resource_slice("s", [gpu("g0")], node="n1"),
            resource_claim("c", [device_request(selectors=("device.(",))]),
        ],
        "c",
        {},  # checked by prefix below
    ),
    (
        "fewer free devices than the count",
        [
            node("n1"),
            GPU,
            resource_slice("s", [gpu("g0"), gpu("g1")], node="n1"),
            resource_claim("c", [device_request(count=3)]),
        ],
        "c",
        {"2 of 2 matching devices of class gpu.example.com free, 3 needed": 1},
    ),
]


@pytest.mark.parametrize(
    ("objs", "claim", "expected"), [c[1:] for c in REASON_CASES], ids=[c[0] for c in REASON_CASES]
)
def test_why_no_node_can_give_the_devices(objs: list[Obj], claim: str, expected: dict[str, int]) -> None:
    got = reasons(state(objs), claiming("p", claim))
    if not expected:
        [(reason, count)] = got.items()
        assert reason.startswith("resourceclaim c: request gpu: selector 'device.(' does not compile"), reason
        assert count == 1
    else:
        assert got == expected


def test_a_template_claim_not_made_yet_is_said() -> None:
    got = reasons(state([node("n1")]), claiming("p", templates=("gpu-template",)))
    assert got == {
        "resourceclaim for t-gpu-template (template gpu-template) not made yet by the resource claim controller": 1
    }
