"""bench/bench_steady.py's ``--source``: each grid point runs from each checkout in turn, in a process whose
``volsched`` is that checkout's, labelled with its commit (a directory that is not a git checkout by its
name), and a directory with no ``volsched`` package is refused before anything runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import bench_steady  # noqa: E402


def test_a_grid_point_runs_with_the_checkouts_own_volsched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in checkout whose volsched says where it is, and a script that prints the volsched it imports
    # as a grid point's JSON would be printed.
    (tmp_path / "volsched").mkdir()
    (tmp_path / "volsched" / "__init__.py").write_text("WHERE = 'stand-in'\n")
    script = tmp_path / "point.py"
    script.write_text("import json, volsched\nprint(json.dumps({'where': volsched.WHERE}))\n")
    monkeypatch.setattr(bench_steady, "__file__", str(script))
    assert bench_steady._in_checkout(tmp_path, []) == {"where": "stand-in"}
    assert bench_steady._commit(tmp_path) == tmp_path.name  # not a git checkout: its name


def test_a_source_with_no_volsched_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "bench_steady.py"),
            "--nodes",
            "1",
            "--pods",
            "1",
            "--source",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "no volsched package there" in done.stderr, done.stderr
    assert not done.stdout  # refused before the machine's line or any grid point
