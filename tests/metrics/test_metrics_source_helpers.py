"""Node matching and sample cleaning shared by all sources."""

from __future__ import annotations

import math

import pytest

from volsched.metrics.source import NodeIndex, clean_percent, strip_port, summarize


@pytest.mark.parametrize(
    ("instance", "host"),
    [
        ("10.0.0.1:9100", "10.0.0.1"),
        ("node-a", "node-a"),
        ("[fd00::1]:9100", "fd00::1"),
        ("fd00::1", "fd00::1"),
        ("host.example:9100", "host.example"),
    ],
)
def test_strip_port(instance: str, host: str) -> None:
    assert strip_port(instance) == host


def test_node_index_matches_names_and_addresses() -> None:
    index = NodeIndex({"node-a": {"10.0.0.1", "a.example"}, "node-b": ["10.0.0.2:9100"]})
    assert index.resolve("10.0.0.1:9100") == "node-a"
    assert index.resolve("A.example:1") == "node-a"
    assert index.resolve(None, "10.0.0.2") == "node-b"
    assert index.resolve("node-b") == "node-b"
    assert index.resolve("node-z", "10.9.9.9:1") is None
    # the `node` label is tried first
    assert index.resolve("node-a", "10.0.0.2:9100") == "node-a"


def test_node_index_from_names_and_none() -> None:
    assert NodeIndex(["n1"]).resolve("n1:9100") == "n1"
    assert NodeIndex(["n1"]).resolve("10.0.0.1:9100") is None
    assert NodeIndex(None).resolve("10.0.0.1:9100") == "10.0.0.1"


def test_own_name_wins_over_other_nodes_address() -> None:
    index = NodeIndex({"a": {"b"}, "b": set()})
    assert index.resolve("b") == "b"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (50, 50.0),
        ("12.5", 12.5),
        (-0.5, 0.0),
        (100.4, 100.0),
        (-5, None),
        (150, None),
        ("abc", None),
        (math.nan, None),
        (math.inf, None),
        (None, None),
        (True, None),
        ([1], None),
    ],
)
def test_clean_percent(value: object, expected: float | None) -> None:
    assert clean_percent(value) == expected


def test_summarize() -> None:
    assert summarize(["40", "40"]) == (40.0, 0.0)
    mean, std = summarize([20, 80, "NaN"]) or (0, 0)
    assert mean == 50 and std == 30
    assert summarize(["NaN"]) is None
    assert summarize([]) is None
    assert summarize([10, -50]) is None  # one impossible sample spoils the series
    assert summarize([10, "x"]) is None
