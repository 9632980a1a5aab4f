"""`volsched demo` lives in the development harness (volsched_dev), which an install without a source
checkout (the image) lacks: the command then says so instead of failing with a traceback."""

from __future__ import annotations

import sys

import pytest

from volsched.cli import main


def test_demo_without_the_dev_harness_points_at_a_checkout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # import volsched_dev fails as if not installed, also when an earlier test imported its demo already
    # (a cached submodule would be found without its parent package)
    for name in ("volsched_dev", "volsched_dev.demo"):
        monkeypatch.setitem(sys.modules, name, None)
    assert main(["demo"]) == 1
    assert "runs from a source checkout" in capsys.readouterr().err
