"""examples/volcano-spark.yaml: a workload written for Volcano runs unchanged once volsched answers to
Volcano's scheduler name (and not before)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders import owner_group
from volsched.cli import main

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "volcano-spark.yaml")


def _simulate(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["simulate", "-f", EXAMPLE, "-o", "json", *extra]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_the_spark_gang_runs_in_its_volcano_queue_and_the_job_waits_for_the_queues_capability(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = _simulate(capsys, "--scheduler-names", "volsched,volcano")
    spark = {k: v["node"] for k, v in data["pods"].items() if "spark-pi" in k}
    assert len(spark) == 3 and all(spark.values())
    assert data["podgroups"]["analytics/spark-pi-pg"]["phase"] == "Running"
    assert data["queues"]["spark"]["allocated"]["cpu"] == 3
    report = owner_group(data, "Job report", ns="analytics")
    assert (report["queue"], report["minMember"], report["phase"]) == ("spark", 2, "Pending")
    assert "realCapability 6" in report["reason"]  # the Volcano Queue's capability, in numbers
    assert not [k for k, v in data["pods"].items() if "report" in k and v["node"]]  # the gang waits whole


def test_without_volcanos_scheduler_name_the_pods_are_not_ours(capsys: pytest.CaptureFixture[str]) -> None:
    data = _simulate(capsys)
    assert not [k for k, v in data["pods"].items() if v["node"]]
