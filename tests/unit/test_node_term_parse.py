"""A node selector term Kubernetes cannot read matches no node, as kube-scheduler's nodeaffinity
(component-helpers' LazyErrorNodeSelector) treats it: the API server stores a pod's node affinity
without checking its label values, and the scheduler then skips the term."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node
from volsched.model.decode import build_node
from volsched.model.nodeterms import matches_affinity, matches_node_selector, matches_node_term, tolerates

NODE = build_node(node("n1", labels={"zone": "a", "gen": "5"}))


def _expr(key: str, op: str, values: list[Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        out["values"] = values
    return out


@pytest.mark.parametrize(
    ("term", "matches"),
    [
        # Terms Kubernetes reads: they match as they say.
        ({"matchExpressions": [_expr("zone", "In", ["a"])]}, True),
        ({"matchExpressions": [_expr("zone", "NotIn", ["b"])]}, True),
        ({"matchExpressions": [_expr("zone", "Exists")]}, True),
        ({"matchExpressions": [_expr("gen", "Gt", ["4"])]}, True),
        ({"matchExpressions": [_expr("gen", "Lt", ["6"])]}, True),
        ({"matchFields": [_expr("metadata.name", "In", ["n1"])]}, True),
        ({"matchFields": [_expr("metadata.name", "NotIn", ["n2"])]}, True),
        # A value that is not a label value: the term matches nothing (it matched before).
        ({"matchExpressions": [_expr("zone", "NotIn", ["not a label value!"])]}, False),
        ({"matchExpressions": [_expr("zone", "In", ["a", "-bad-"])]}, False),
        ({"matchExpressions": [_expr("zone", "NotIn", ["x" * 64])]}, False),
        # Values that do not suit the operator.
        ({"matchExpressions": [_expr("zone", "NotIn", [])]}, False),
        ({"matchExpressions": [_expr("zone", "Exists", ["a"])]}, False),
        ({"matchExpressions": [_expr("gen", "Gt", ["4", "5"])]}, False),
        ({"matchExpressions": [_expr("gen", "Lt", ["six"])]}, False),
        ({"matchExpressions": [_expr("gen", "Lt", ["1_000"])]}, False),
        ({"matchExpressions": [_expr("gen", "Lt", ["+6"])]}, False),  # a whole number, but no label value
        # A key that is not a label key.
        ({"matchExpressions": [_expr("bad key", "DoesNotExist")]}, False),
        # Fields: In and NotIn of exactly one value only.
        ({"matchFields": [_expr("metadata.name", "NotIn", ["n2", "n3"])]}, False),
        ({"matchFields": [_expr("metadata.name", "Exists")]}, False),
        # One expression Kubernetes cannot read spoils its whole term, whatever the others say.
        ({"matchExpressions": [_expr("zone", "In", ["a"]), _expr("zone", "NotIn", ["?"])]}, False),
    ],
)
def test_a_term_kubernetes_cannot_read_matches_no_node(term: dict[str, Any], matches: bool) -> None:
    assert matches_node_term(NODE, term) is matches


def test_a_readable_term_still_matches_beside_one_that_is_not() -> None:
    bad = {"matchExpressions": [_expr("zone", "NotIn", ["not valid!"])]}
    good = {"matchExpressions": [_expr("zone", "In", ["a"])]}
    assert matches_affinity(NODE, [bad]) is False
    assert matches_affinity(NODE, [bad, good]) is True


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ({}, True),
        ({"zone": "a"}, True),
        ({"zone": "a", "gen": "5"}, True),
        ({"zone": "b"}, False),
        ({"zone": "a", "gpu": "yes"}, False),  # a label the node lacks
        ({"Zone": "a"}, False),  # keys are exact
    ],
)
def test_a_node_selector_needs_every_label_with_its_value(selector: dict[str, str], matches: bool) -> None:
    assert matches_node_selector(NODE, selector) is matches


TAINT = ("example.com/sla", "950", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "example.com/sla", "operator": "Equal", "value": "950"}, True),
        ({"key": "example.com/sla", "value": "950"}, True),  # Equal is the default
        ({"key": "example.com/sla", "operator": "Exists"}, True),
        # Kubernetes 1.35's numeric operators (TaintTolerationComparisonOperators): the toleration's
        # value against the taint's, as integers. They were read as Equal: Gt 950 tolerated 950.
        ({"key": "example.com/sla", "operator": "Gt", "value": "950"}, False),
        ({"key": "example.com/sla", "operator": "Gt", "value": "990"}, True),
        ({"key": "example.com/sla", "operator": "Lt", "value": "900"}, True),
        ({"key": "example.com/sla", "operator": "Lt", "value": "950"}, False),
        ({"key": "example.com/sla", "operator": "Gt", "value": "high"}, False),  # not an integer: no match
        ({"key": "example.com/sla", "operator": "Like", "value": "950"}, False),  # unknown: no match
    ],
)
def test_a_toleration_matches_a_taint_as_kubernetes_matches_it(
    toleration: dict[str, Any], tolerated: bool
) -> None:
    assert tolerates([toleration], TAINT) is tolerated


def test_numeric_operators_match_no_taint_whose_value_is_not_an_integer() -> None:
    assert not tolerates(
        [{"key": "example.com/sla", "operator": "Lt", "value": "1"}],
        ("example.com/sla", "high", "NoSchedule"),
    )
