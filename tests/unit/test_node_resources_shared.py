"""Nodes of one shape share their resources' parse (a node pool's thousands, listed at start: the parse
was a fifth of a node's build), by the strings of their map only: an int and a bool compare equal in
Python, and a bool is refused where the int is taken. What a node is built into is as before, and a bad
field is refused naming it as before."""

from __future__ import annotations

from typing import Any

import pytest

from volsched.model import decode
from volsched.model.decode import build_node
from volsched.model.errors import InputError
from volsched.model.vocabulary import NodeSpec


def node(name: str, allocatable: Any, **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"pool": "a"}},
        "status": {"allocatable": allocatable, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    for path, value in extra.items():
        where, _, field = path.partition("__")
        obj.setdefault(where, {})[field] = value
    return obj


def test_nodes_of_one_shape_share_one_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[Any] = []
    parse = decode.parse_resource_map

    def counted(raw: Any, *, where: str) -> dict[str, float]:
        parsed.append(raw)
        return parse(raw, where=where)

    monkeypatch.setattr(decode, "parse_resource_map", counted)
    monkeypatch.setattr(decode, "_NODE_RESOURCES", {})
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    nodes = [build_node(node(f"n{i}", dict(alloc))) for i in range(50)]
    assert len(parsed) == 1
    assert all(n.allocatable is nodes[0].allocatable for n in nodes)
    assert nodes[7] == NodeSpec(
        name="n7",
        allocatable={"cpu": 64.0, "memory": 256.0 * 2**30, "pods": 110.0},
        labels={"kubernetes.io/hostname": "n7", "pool": "a"},
        taints=(),
        unschedulable=False,
        ready=True,
        addresses=(),
        annotations={},
    )
    build_node(node("other", {"cpu": "32", "memory": "256Gi", "pods": "110"}))
    assert len(parsed) == 2


def test_only_strings_are_shared_a_bool_is_refused_after_an_equal_int() -> None:
    assert build_node(node("ints", {"cpu": 1, "pods": 110})).allocatable == {"cpu": 1.0, "pods": 110.0}
    with pytest.raises(InputError, match=r"Node bools: status\.allocatable\.cpu: expected a quantity"):
        build_node(node("bools", {"cpu": True, "pods": 110}))
    with pytest.raises(InputError, match=r"Node strs: status\.allocatable\.cpu: malformed quantity"):
        build_node(node("strs", {"cpu": "lots", "pods": "110"}))
    with pytest.raises(InputError, match=r"Node strs: status\.allocatable\.cpu: malformed quantity"):
        build_node(node("strs", {"cpu": "lots", "pods": "110"}))  # a refused map is never kept


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"spec__taints": {"key": "k"}}, r"Node n: spec\.taints: expected a list"),
        ({"spec__taints": [{"key": "k"}]}, r"Node n: spec\.taints\[0\] needs a key and an effect"),
        ({"status__conditions": "Ready"}, r"Node n: status\.conditions: expected a list"),
        ({"status__addresses": {"a": 1}}, r"Node n: status\.addresses: expected a list"),
        ({"spec__unschedulable": "maybe"}, r"Node n: spec\.unschedulable: expected true or false"),
        ({"metadata__annotations": ["a"]}, r"Node n: metadata\.annotations must be a map"),
        ({"metadata__labels": "a=b"}, r"Node n: metadata\.labels must be a map"),
    ],
)
def test_a_bad_field_is_refused_naming_it(extra: dict[str, Any], message: str) -> None:
    obj = node("n", {"cpu": "4"})
    for path, value in extra.items():
        where, _, field = path.partition("__")
        obj[where] = {**obj.get(where, {}), field: value}
    with pytest.raises(InputError, match=message):
        build_node(obj)


def test_the_other_fields_are_read_as_before() -> None:
    obj = node(
        "n",
        {"cpu": "4"},
        spec__taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
        spec__unschedulable=True,
        status__addresses=[{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "x"}],
        metadata__annotations={"a": 1},
    )
    obj["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    built = build_node(obj)
    assert built.taints == (("gpu", "yes", "NoSchedule"),)
    assert built.unschedulable is True and built.ready is False
    assert built.addresses == ("10.0.0.1",)
    assert built.annotations == {"a": "1"}
    assert built.labels == {"kubernetes.io/hostname": "n", "pool": "a"}
