"""``volsched simulate --compare OTHER``: the same workload replayed as given and with OTHER (objects that
replace the input's of the same kind and name, or a scheduler config), side by side."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.builders import node, pod, queue
from tests.sim.test_replay_clock import at
from volsched.cli import main
from volsched.simulate import Document
from volsched.simulate.annotations import DURATION_ANNOTATION
from volsched.simulate.compare import override

ROOT = Path(__file__).resolve().parents[2]


def _backlog(tmp_path: Path) -> str:
    """One node of 4 cpu; queues a and b each submit eight 1-cpu jobs of 100 s at once."""
    objs = [node("n0", cpu="4"), queue("a"), queue("b")]
    for q in ("a", "b"):
        objs += [
            pod(f"{q}{i}", queue=q, created=at(0), annotations={DURATION_ANNOTATION: "100s"})
            for i in range(8)
        ]
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


def test_tripling_a_queues_weight_lengthens_the_others_waits(tmp_path, capsys):
    # Equal weights: each queue runs 2 jobs per 100 s wave. Weight 3 for a: a deserves 3 cpu and b 1,
    # so a runs 3, 3, then its last 2 (b takes the other 2 at 200), and b's last 4 run at 300.
    change = tmp_path / "a-weight-3.yaml"
    change.write_text(yaml.safe_dump(queue("a", weight=3)))
    assert main(["simulate", "-f", _backlog(tmp_path), "--compare", str(change), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["a"]["label"], data["b"]["label"]) == ("as given", "a-weight-3.yaml")
    waits = {run: {q: sorted(v) for q, v in data[run]["report"]["waits"]["queues"].items()} for run in "ab"}
    assert waits["a"] == {
        "a": [0, 0, 100, 100, 200, 200, 300, 300],
        "b": [0, 0, 100, 100, 200, 200, 300, 300],
    }
    assert waits["b"] == {
        "a": [0, 0, 0, 100, 100, 100, 200, 200],
        "b": [0, 100, 200, 200, 300, 300, 300, 300],
    }
    b = data["diff"]["b"]
    assert b["waitP50"] == {"a": 150.0, "b": 250.0, "change": 100.0}
    assert data["diff"]["a"]["waitMax"] == {"a": 300.0, "b": 200.0, "change": -100.0}


def test_a_scheduler_config_is_compared_as_a_config(tmp_path, capsys):
    config = tmp_path / "fifo.yaml"
    config.write_text(
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: predicates\n'
    )
    assert main(["simulate", "-f", _backlog(tmp_path), "--compare", str(config)]) == 0
    out = capsys.readouterr().out
    assert "as given (A) against fifo.yaml (B)" in out
    assert "team" not in out and " a " in out.replace("│", " ")


def test_the_change_replaces_objects_of_the_same_kind_and_name_and_adds_the_others(tmp_path):
    change = tmp_path / "c.yaml"
    change.write_text(yaml.safe_dump_all([queue("a", weight=5), queue("new")]))
    docs = [Document("x", queue("a")), Document("y", node("n0")), Document("z", queue("b"))]
    out = override(docs, change)
    assert [(d.obj["metadata"]["name"], d.obj["spec"].get("weight")) for d in out] == [
        ("a", 5),
        ("n0", None),
        ("b", 1),
        ("new", 1),
    ]


def test_a_compare_file_of_neither_kind_exits_2(tmp_path, capsys):
    other = tmp_path / "odd.yaml"
    other.write_text("just: data\n")
    assert main(["simulate", "-f", _backlog(tmp_path), "--compare", str(other)]) == 2
    assert "scheduler config (actions, tiers) or Kubernetes objects" in capsys.readouterr().err


def test_the_worked_example_runs(capsys):
    examples = ROOT / "examples"
    args = ["-f", str(examples / "replay-teams.yaml"), "--trace", str(examples / "replay-teams-day.jsonl")]
    assert (
        main(["simulate", *args, "--compare", str(examples / "replay-teams-a-weight-2.yaml"), "-o", "json"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["a"]["report"]["all"]["jobs"] == data["b"]["report"]["all"]["jobs"] == 160
    # Team A's weight doubled: team B's median wait grows.
    b = data["diff"]["team-b"]["waitP50"]
    assert b["change"] is not None and b["change"] > 0
