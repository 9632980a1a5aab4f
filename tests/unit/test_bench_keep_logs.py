"""bench/bind_throughput.py --keep-logs DIR: each run writes into a fresh subdirectory of DIR, never into
files an earlier run left there (its pods.jsonl and watch.txt were read back as the new run's binds)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bind_throughput import _workdir


def test_each_run_keeps_its_logs_in_a_fresh_subdirectory(tmp_path: Path) -> None:
    keep = tmp_path / "logs"
    with _workdir(str(keep)) as first:
        (first / "volsched-backlog").mkdir()
        (first / "volsched-backlog" / "watch.txt").write_text("an earlier run's binds\n")
    with _workdir(str(keep)) as second:
        assert second != first
        assert second.parent == keep.resolve()
        assert list(second.iterdir()) == []  # nothing of the earlier run to read back
    assert (first / "volsched-backlog" / "watch.txt").exists()  # the earlier run's logs are kept
