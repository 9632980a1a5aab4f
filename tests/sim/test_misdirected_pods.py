"""A pending pod that names a volsched PodGroup (or carries volsched's queue annotation) but whose
schedulerName volsched does not answer to is told so on the pod, once; a pod naming a Volcano PodGroup
under Volcano's name (a real Volcano's to schedule) is not. The simulator says why pods under another
scheduler's name were never placed, and that a config given with -f belongs in --config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.builders import node, pod, podgroup, queue, volcano
from volsched.cache.state import ClusterState
from volsched.cache.volcano import VOLCANO_PODGROUP
from volsched.cli import main
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session
from volsched.model.vocabulary import MISDIRECTED

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _volcano_podgroup(name: str) -> dict[str, object]:
    """A PodGroup of Volcano's, as the operator's watch of scheduling.volcano.sh hands it to the cache."""
    return {**volcano(podgroup(name)), "kind": VOLCANO_PODGROUP}


def _told(objs: list[dict[str, object]]) -> dict[str, str]:
    state = ClusterState()
    for obj in objs:
        state.apply(obj)
    result = run_session(state.snapshot(now=1.0), load_config())
    return {f"{e.namespace}/{e.name}": e.message for e in result.events if e.reason == MISDIRECTED}


@pytest.mark.parametrize(
    ("pods", "told"),
    [
        ([pod("typo", group="g", scheduler="volshed")], {"default/typo": 'names PodGroup default/g of volsched, but its spec.schedulerName is "volshed" (did you mean "volsched"?): volsched schedules only pods whose schedulerName is volsched'}),
        ([pod("unset", group="g", scheduler="")], {"default/unset": "names PodGroup default/g of volsched, but its spec.schedulerName is not set (default-scheduler)"}),
        ([pod("queued", queue="q", scheduler="default-scheduler")], {"default/queued": "names volsched's queue 'q' (scheduling.volsched.io/queue-name), but its spec.schedulerName is not set"}),
        # Not told: ours, bound, naming no PodGroup of volsched's, or Volcano's under Volcano's name.
        ([pod("ours", group="g")], {}),
        ([pod("bound", group="g", scheduler="other", node="n1")], {}),
        ([pod("nogroup", group="missing", scheduler="other")], {}),
        ([pod("volcano", group="vg", scheduler="volcano")], {}),
    ],
)  # fmt: skip
def test_a_pod_under_another_schedulers_name_is_told_why_it_waits(
    pods: list[dict[str, object]], told: dict[str, str]
) -> None:
    got = _told([node("n1"), queue("q"), podgroup("g"), _volcano_podgroup("vg"), *pods])
    assert set(got) == set(told)
    for key, start in told.items():
        assert got[key].startswith(start), got[key]
        assert got[key].endswith("(set spec.schedulerName, or add the name to --scheduler-names)")


def test_the_simulator_says_why_a_volcano_workload_places_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    example = str(EXAMPLES / "volcano-spark.yaml")
    assert main(["simulate", "-f", example, "-o", "json"]) == 0
    err = capsys.readouterr().err
    assert "pending pod(s) ask for schedulerName 'volcano', which this run does not schedule" in err
    assert "run with --scheduler-names volsched,volcano" in err
    assert main(["simulate", "-f", example, "-o", "json", "--scheduler-names", "volsched,volcano"]) == 0
    assert "schedulerName" not in capsys.readouterr().err


def test_a_typo_in_the_scheduler_name_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([node("n1"), pod("p", scheduler="volshed")]))
    assert main(["simulate", "-f", str(path), "-o", "json"]) == 0
    assert "schedulerName 'volshed'" in (err := capsys.readouterr().err) and "did you mean 'volsched'" in err


def test_a_config_given_with_f_is_sent_to_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "scheduler.yaml"
    path.write_text((EXAMPLES / "reclaim-preempt-scheduler.yaml").read_text())
    assert main(["simulate", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: document 1: this is a scheduler config (actions, tiers), not a Kubernetes object" in err
    assert f"pass it with --config {path}, not -f" in err
