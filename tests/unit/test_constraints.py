"""volsched.model.constraints and constraintdecode: selectors, parsing and per-domain counting (pure logic)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.builders import node
from volsched.model.constraintdecode import parse_pod_constraints, parse_selector
from volsched.model.constraints import ConstraintState
from volsched.model.decode import build_node
from volsched.model.errors import InputError
from volsched.model.vocabulary import Task, TaskStatus


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {"app": "a"}, None),  # nil: parse gives None, which matches nothing
        ({}, {}, True),
        ({"matchLabels": {"app": "a"}}, {"app": "a", "x": "y"}, True),
        ({"matchLabels": {"app": "a"}}, {"app": "b"}, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]}, {"app": "b"}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}, {"app": "a"}, False),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {"app": ""}, True),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {"app": "a"}, False),
    ],
)
def test_label_selector_matches_as_kubernetes(
    selector: Any, labels: dict[str, str], expected: bool | None
) -> None:
    parsed = parse_selector(selector, where="s")
    if expected is None:
        assert parsed is None
    else:
        assert parsed is not None and parsed.matches(labels) is expected


def _anti(term: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        (_anti({"labelSelector": {}}), "topologyKey: required"),
        (
            _anti(
                {"topologyKey": "z", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}
            ),
            "operator: 'Gt' is not one of In, NotIn, Exists, DoesNotExist",
        ),
        (
            _anti(
                {"topologyKey": "z", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}
            ),
            "values: must not be empty for operator In",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
            "maxSkew: expected an integer >= 1, got 0",
        ),
        (
            {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "Maybe"}]},
            "whenUnsatisfiable: expected DoNotSchedule or ScheduleAnyway, got 'Maybe'",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}
                ]
            },
            "minDomains: only allowed with whenUnsatisfiable DoNotSchedule",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "z",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "nodeTaintsPolicy": "x",
                    }
                ]
            },
            "nodeTaintsPolicy: expected Honor or Ignore, got 'x'",
        ),
        (
            {
                "affinity": {
                    "podAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 101, "podAffinityTerm": {"topologyKey": "z"}}
                        ]
                    }
                }
            },
            "weight: expected an integer 1..100, got 101",
        ),
    ],
)
def test_invalid_constraints_name_the_field(spec: dict[str, Any], error: str) -> None:
    with pytest.raises(InputError, match=None) as exc:
        parse_pod_constraints(spec, namespace="ns", labels={}, where="Pod ns/p")
    assert error in str(exc.value)
    assert "Pod ns/p: spec." in str(exc.value)


def test_match_label_keys_merge_the_pods_own_values() -> None:
    spec = _anti(
        {"topologyKey": "z", "labelSelector": {"matchLabels": {"app": "w"}}, "matchLabelKeys": ["job", "x"]}
    )
    c = parse_pod_constraints(spec, namespace="ns", labels={"app": "w", "job": "j1"}, where="p")
    assert c is not None
    term = c.anti_affinity[0]
    assert term.describe() == "app=w,job=j1, z"
    assert term.namespaces == frozenset({"ns"})


def _task(name: str, labels: dict[str, str], ns: str = "default") -> Task:
    return Task(
        namespace=ns,
        name=name,
        uid=name,
        job_key=f"{ns}/{name}",
        request_map={},
        priority=0,
        status=TaskStatus.RUNNING,
        node_name=None,
        scheduler_name="volsched",
        creation=0.0,
        labels=labels,
    )


def test_domain_counts_follow_pods_coming_and_going() -> None:
    specs = [build_node(node(f"n{i}", labels={"zone": "ab"[i // 2]})) for i in range(4)] + [
        build_node(node("bare"))
    ]
    state = ConstraintState(specs, {})
    a = _task("a", {"app": "w"})
    state.add(a, 0)
    state.add(_task("b", {"app": "w"}), 3)
    state.add(_task("c", {"app": "other"}), 3)
    spec = _anti({"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "w"}}})
    c = parse_pod_constraints(spec, namespace="default", labels={}, where="p")
    assert c is not None
    counter = state.term_counter(c.anti_affinity)
    dom, counts = counter.domain_counts("zone")
    assert counts.tolist() == [1.0, 1.0, 0.0]  # zone a, zone b, no zone
    assert dom.tolist() == [0, 0, 1, 1, 2]
    state.add(_task("d", {"app": "w"}), 4)  # a node without the key: counted per node only
    state.remove(a)
    state.remove(a)  # twice is once
    assert counts.tolist() == [0.0, 1.0, 0.0]
    assert counter.node_counts.tolist() == [0.0, 0.0, 0.0, 1.0, 1.0]
    # An unindexed selector (NotIn) made later counts what is placed now.
    spec2 = _anti(
        {
            "topologyKey": "zone",
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["w"]}]},
        }
    )
    c2 = parse_pod_constraints(spec2, namespace="default", labels={}, where="p")
    assert c2 is not None
    assert np.array_equal(state.term_counter(c2.anti_affinity).domain_counts("zone")[1], [0.0, 1.0, 0.0])


WEB = {"app": "web"}


def _with_anti(task: Task, key: str, match: dict[str, str]) -> Task:
    spec = _anti({"topologyKey": key, "labelSelector": {"matchLabels": match}})
    task.constraints = parse_pod_constraints(spec, namespace=task.namespace, labels=task.labels, where="p")
    return task


@pytest.mark.parametrize(
    ("placed", "pending", "failing", "relievable"),
    [
        # its own term by hostname: each node with a web pod fails, and only its own pods count there
        ([("w0", 0, WEB, None), ("w2", 2, WEB, None)], ("kubernetes.io/hostname", WEB, {}), "1010", "1111"),
        # by zone: two web pods in zone a on two nodes: evicting one node's pods cannot clear zone a
        ([("w0", 0, WEB, None), ("w1", 1, WEB, None)], ("zone", WEB, {}), "1100", "0011"),
        # by zone, one web pod on n0: n0 may be cleared; n1 (same zone, nothing to evict there) not
        ([("w0", 0, WEB, None)], ("zone", WEB, {}), "1100", "1011"),
        # symmetric: a running pod's term selects the pending pod
        ([("g2", 2, {}, ("kubernetes.io/hostname", WEB))], (None, None, WEB), "0010", "1111"),
        # symmetric by zone, guards on n2 and n3: neither node alone can be cleared
        (
            [("g2", 2, {}, ("zone", WEB)), ("g3", 3, {}, ("zone", WEB))],
            (None, None, WEB),
            "0011",
            "1100",
        ),
    ],
)
def test_relievable_nodes_are_those_whose_own_pods_alone_break_anti_affinity(
    placed: list[tuple[str, int, dict[str, str], tuple[str, dict[str, str]] | None]],
    pending: tuple[str | None, dict[str, str] | None, dict[str, str]],
    failing: str,
    relievable: str,
) -> None:
    specs = [
        build_node(node(f"n{i}", labels={"zone": "ab"[i // 2], "kubernetes.io/hostname": f"n{i}"}))
        for i in range(4)
    ]
    state = ConstraintState(specs, {})
    for name, on, labels, anti in placed:
        t = _task(name, labels)
        state.add(_with_anti(t, *anti) if anti else t, on)
    key, match, labels = pending
    task = _task("new", labels)
    if key is not None and match is not None:
        _with_anti(task, key, match)
    check = state.check(task)
    mask = state.relievable(task)
    assert check is not None and mask is not None
    assert "".join("0" if ok else "1" for ok in check.mask) == failing
    assert "".join("1" if ok else "0" for ok in mask) == relievable


def test_nothing_to_relieve_without_anti_affinity() -> None:
    state = ConstraintState([build_node(node("n0"))], {})
    state.add(_task("w", WEB), 0)
    assert state.relievable(_task("new", {"app": "other"})) is None
