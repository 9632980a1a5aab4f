"""The Grafana dashboard in the chart queries only metrics (and labels) the operator exports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from volsched.metrics.collector import _metrics_for
from volsched.operator.metrics import Metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "charts" / "volsched" / "dashboards" / "volsched.json"

SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def exported() -> dict[str, set[str]]:
    """Series name -> label names, as the operator's registry (session metrics + usage collector) serves them."""
    registry: CollectorRegistry = Metrics().registry
    _metrics_for(registry)  # the usage collector's instruments, registered when a metrics: source runs
    series: dict[str, set[str]] = {}
    for collector in list(registry._collector_to_names):  # every registered instrument
        for family in collector.describe():
            # (a series' own, or a family's a collector of several describes: the sessions' timings)
            labels = set(getattr(collector, "_labelnames", ()) or getattr(family, "_labelnames", ()))
            for suffix in SUFFIXES[family.type]:
                series[family.name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return series


def queries(dashboard: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if v.get("definition")]
    return exprs


def names_and_labels(expr: str) -> tuple[set[str], set[str]]:
    expr = re.sub(r'"[^"]*"', '""', expr)  # label values
    names = set(re.findall(r"\bvolsched_[a-z_]+\b", expr))
    labels = set(re.findall(r"\b([a-z_]+)\s*=~?\s*\"", expr))
    for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
        labels |= {x.strip() for x in group.split(",") if x.strip()}
    labels |= set(re.findall(r"label_values\([^,]+,\s*([a-z_]+)\)", expr))
    return names, labels - {"le"}


def test_the_registry_reading_sees_what_metrics_serves() -> None:
    from prometheus_client import generate_latest

    m = Metrics()
    m.deserved.labels(queue="q", parent="root", resource="cpu").set(1)
    m.attempts.labels("scheduled").inc()
    m.timings.add(("session", ()), 0.1)
    text = generate_latest(m.registry).decode()
    for name in (
        "volsched_queue_deserved",
        "volsched_schedule_attempts_total",
        "volsched_session_duration_seconds_bucket",
    ):
        assert name in exported() and re.search(rf"^{name}[{{ ]", text, re.M), name


def test_every_metric_the_dashboard_queries_is_exported_with_its_labels() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    series = exported()
    exprs = queries(dashboard)
    assert len(exprs) >= 10
    for expr in exprs:
        names, labels = names_and_labels(expr)
        assert names, f"query names no volsched metric: {expr}"
        missing = names - set(series)
        assert not missing, f"{sorted(missing)} in {expr!r} are not exported; exported: {sorted(series)}"
        known = set().union(*(series[n] for n in names))
        assert labels <= known, f"labels {sorted(labels - known)} of {expr!r} are not on {sorted(names)}"


@pytest.mark.parametrize(
    ("expr", "bad"),
    [
        ("rate(volsched_sessions[5m])", "volsched_sessions"),  # a counter without _total
        ("volsched_queue_deserved_total", "volsched_queue_deserved_total"),
        ("sum by (le) (volsched_session_duration_seconds)", "volsched_session_duration_seconds"),
    ],
)
def test_the_check_catches_a_misspelt_metric(expr: str, bad: str) -> None:
    names, _ = names_and_labels(expr)
    assert bad in names and bad not in exported()


def test_the_check_catches_a_label_the_metric_has_not() -> None:
    _, labels = names_and_labels('sum by (namespace) (volsched_queue_allocated{resource="cpu"})')
    assert labels == {"namespace", "resource"} and "namespace" not in exported()["volsched_queue_allocated"]


def test_every_panel_uses_the_datasource_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
