"""``volsched check-config FILE``: exit 0 for a config the operator would load, exit 2 with one line
``FILE:LINE: field: why`` per problem, whether the file is a scheduler config, a ConfigMap (as ``helm
template`` renders it) or the chart's values (whose schema does not look inside schedulerConfig or
metrics); its metrics: section is checked as the operator checks it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from volsched.cli import main
from volsched.framework.config import DEFAULT_CONFIG_YAML

CONFIG = """actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: nodeorder
    arguments:
      leastrequested.weight: 1
"""

CONFIG_MAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: volsched-scheduler-config
data:
  volsched-scheduler.conf: |
{body}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: volsched}}
"""

VALUES = """maxIdle: 10
schedulerConfig:
  actions: "enqueue, allocate"
  tiers:
  - plugins:
    - name: gang
    - name: nodeorder
      arguments:
        mostrequested:
          weight: 1
metrics:
  source: {}
  existingSecret: volsched-metrics
"""


def _config_map(config: str) -> str:
    return CONFIG_MAP.format(body="\n".join("    " + line for line in config.splitlines()))


@pytest.mark.parametrize(
    ("name", "text", "line", "problem"),
    [
        ("config.yaml", CONFIG.replace("weight: 1", "weight: -1"), 7, "plugin nodeorder: argument leastrequested.weight: must be >= 0, got -1"),
        ("config.yaml", CONFIG.replace("allocate", "allocate, teleport"), 1, "unknown action 'teleport'"),
        ("config.yaml", CONFIG.replace("  - name: gang", "  - name: gnag"), 4, "tiers[0].plugins[0]: unknown plugin 'gnag'"),
        ("config.yaml", CONFIG + "metrics:\n  type: prometheus\n  adress: http://p\n", 10, "metrics.adress: unknown setting"),
        ("config.yaml", CONFIG.replace("leastrequested.weight", "leastrequested.wieght"), 7, "plugin nodeorder: unknown argument(s) leastrequested.wieght"),
        ("config.yaml", CONFIG + "schedule: fast\n", 8, "unknown field(s) schedule"),
        # A ConfigMap: the line in the file, below the key its block scalar hangs from.
        ("rendered.yaml", _config_map(CONFIG.replace("weight: 1", "weight: -1")), 13, "argument leastrequested.weight: must be >= 0"),
        # The chart's values: schedulerConfig, and metrics.source as the chart joins it in.
        ("values.yaml", VALUES.replace("weight: 1", "weight: lots"), 10, "plugin nodeorder: argument mostrequested.weight: expected a number"),
        ("values.yaml", VALUES.replace("source: {}", "source: {type: prometheus, address: 'http://p:9090', interval: soon}"), 12, "metrics.interval: not a duration"),
        ("values.yaml", VALUES.replace("source: {}", "source: {type: graphite}"), 12, "metrics.type: unknown source type 'graphite'"),
    ],
)  # fmt: skip
def test_a_bad_config_exits_2_naming_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, line: int, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert main(["check-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{line}: "), err
    assert problem in err


@pytest.mark.parametrize(
    "text",
    [CONFIG, DEFAULT_CONFIG_YAML, _config_map(DEFAULT_CONFIG_YAML), VALUES],
    ids=["config", "default", "config-map", "values"],
)
def test_a_good_config_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(text)
    assert main(["check-config", str(path)]) == 0
    assert "the scheduler config loads" in capsys.readouterr().out


def test_standard_input_and_a_file_without_a_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(_config_map(CONFIG).encode())))
    assert main(["check-config", "-"]) == 0
    other = tmp_path / "deployment.yaml"
    other.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")
    assert main(["check-config", str(other)]) == 2
    assert "no scheduler config in it" in capsys.readouterr().err
    assert main(["check-config", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read it" in capsys.readouterr().err
