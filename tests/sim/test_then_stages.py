"""``volsched simulate -f before --then later`` shows each stage as it settled, not only the end: the
table output has one section per stage, the JSON output its final document plus ``stages``, each what
the cluster looked like before the next stage's objects came."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.builders import node, pod, queue
from volsched.cli import main


def _stages(tmp_path: Path) -> list[str]:
    before, later = tmp_path / "before.yaml", tmp_path / "later.yaml"
    before.write_text(yaml.safe_dump_all([node("n1", cpu="2"), queue("q"), pod("first", queue="q")]))
    later.write_text(yaml.safe_dump_all([pod("second", queue="q"), pod("third", queue="q")]))
    return ["simulate", "-f", str(before), "--then", str(later)]


def test_json_lists_each_stage_as_it_settled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*_stages(tmp_path), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    first, second = data["stages"]
    assert first["stage"] == 1 and first["files"][0].endswith("before.yaml")
    assert set(first["pods"]) == {"default/first"}  # the later pods had not come yet
    assert second["files"][0].endswith("later.yaml")
    assert {k: v["node"] for k, v in second["pods"].items()} == {
        "default/first": "n1",
        "default/second": "n1",
        "default/third": None,  # 2 cpu: the third waits
    }
    assert data["pods"] == second["pods"]  # the document itself is the end, as without --then


def test_the_table_shows_every_stage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_stages(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "stage 1 of 2" in out and "stage 2 of 2" in out
    assert out.index("stage 1 of 2") < out.index("stage 2 of 2")
    one, two = out.split("stage 2 of 2")
    assert "default/first" in one and "default/second" not in one
    assert "default/second" in two
