"""bench/replay_digest.py: an example's digest is the same in every checkout of one commit, though a refused
example's message names its file by its absolute path."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from replay_digest import CHECKOUT, example_digest

REFUSED = ["hierarchy-slides-services.yaml", "reclaim-preempt-scheduler.yaml"]


@pytest.mark.parametrize("name", REFUSED)
def test_a_refused_example_digests_the_same_under_two_checkouts(tmp_path: Path, name: str) -> None:
    digests = []
    for root in (tmp_path / "one", tmp_path / "another" / "checkout"):
        (root / "examples").mkdir(parents=True)
        shutil.copy(CHECKOUT / "examples" / name, root / "examples" / name)
        digests.append(example_digest(["-f", str(root / "examples" / name)], root=root))
    assert digests[0][0] == 2  # refused: its message, which names the file, is what is digested
    assert digests[0] == digests[1]
