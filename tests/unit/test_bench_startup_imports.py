"""bench/bench_startup.py --imports: the CPU of ``volsched run``'s imports to ready, timed in a fresh
interpreter of each source in turn, and each later source against the first, pair by pair."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_startup import imports_cpu

ROOT = Path(__file__).resolve().parents[2]


def test_each_source_is_timed_in_turn_and_compared_with_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    other.symlink_to(ROOT)  # a second source: the same checkout by another name
    imports_cpu([ROOT, other], 2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2, lines
    figures = r"imports to ready, CPU ms: least \d+, median \d+ \(2 runs\)"
    assert re.fullmatch(rf"{re.escape(str(ROOT))}: {figures}", lines[0]), lines[0]
    against = rf"; against {re.escape(ROOT.name)}: median of the pairs [+-]\d+\.\d ms, lower in [0-2] of 2"
    assert re.fullmatch(rf"{re.escape(str(other))}: {figures}{against}", lines[1]), lines[1]
