"""bench/replay_digest.py's ``moves`` part: its replay evicts by every action and strategy it is there for,
so a change to any of their decisions changes its digest."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from replay_digest import moves_replay

import volsched.simulate.replay as replay_module
from volsched.cycle import CycleReport


def test_the_moves_replay_evicts_by_preempt_reclaim_and_the_rescheduling_strategies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: Counter[str] = Counter()
    run_cycle = replay_module.run_cycle

    def counting(*args: Any, **kwargs: Any) -> CycleReport:
        report = run_cycle(*args, **kwargs)
        for e in report.result.evictions:
            strategy = e.reason.detail.split(":", 1)[0] if e.reason.action == "shuffle" else ""
            seen[f"{e.reason.action} {strategy}".strip()] += 1
        return report

    monkeypatch.setattr(replay_module, "run_cycle", counting)
    result = moves_replay().run()
    assert seen["preempt"] > 0
    assert seen["reclaim"] > 0
    assert seen["shuffle rescheduling (podLifeTime)"] > 0
    assert seen["shuffle rescheduling (removeDuplicates)"] > 0
    assert seen["shuffle rescheduling (lowNodeUtilization)"] > 0
    assert seen["shuffle rescheduling (highNodeUtilization)"] > 0
    assert result.report()
