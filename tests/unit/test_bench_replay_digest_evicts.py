"""bench/replay_digest.py's ``moves`` and ``spec`` parts: each replay evicts by every action and strategy it
is there for, so a change to any of their decisions changes its digest."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from replay_digest import moves_replay, spec_replay

import volsched.simulate.replay as replay_module
from volsched.cycle import CycleReport
from volsched.simulate import Replay


def evictions_by(replay: Replay, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Run ``replay``; its evictions counted by action (and, for shuffle, by strategy); evictions of a
    preempt or reclaim that freed devices are counted apart too, as ``<action> devices``."""
    seen: Counter[str] = Counter()
    run_cycle = replay_module.run_cycle

    def counting(*args: Any, **kwargs: Any) -> CycleReport:
        report = run_cycle(*args, **kwargs)
        for e in report.result.evictions:
            strategy = e.reason.detail.split(":", 1)[0] if e.reason.action == "shuffle" else ""
            seen[f"{e.reason.action} {strategy}".strip()] += 1
            if ("frees", "the devices its claims hold") in e.reason.facts:
                seen[f"{e.reason.action} devices"] += 1
        return report

    monkeypatch.setattr(replay_module, "run_cycle", counting)
    assert replay.run().report()
    return seen


def test_the_moves_replay_evicts_by_preempt_reclaim_and_the_rescheduling_strategies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = evictions_by(moves_replay(), monkeypatch)
    assert seen["preempt"] > 0
    assert seen["reclaim"] > 0
    assert seen["shuffle rescheduling (podLifeTime)"] > 0
    assert seen["shuffle rescheduling (removeDuplicates)"] > 0
    assert seen["shuffle rescheduling (lowNodeUtilization)"] > 0
    assert seen["shuffle rescheduling (highNodeUtilization)"] > 0


@pytest.fixture(scope="module")
def spec_evictions() -> Counter[str]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return evictions_by(spec_replay(), monkeypatch)


@pytest.mark.parametrize(
    "strategy",
    [
        "removeFailedPods",
        "removePodsHavingTooManyRestarts",
        "removePodsViolatingNodeTaints",
        "removePodsViolatingNodeAffinity",
        "removePodsViolatingTopologySpreadConstraint",
        "removePodsViolatingInterPodAntiAffinity",
    ],
)
def test_the_spec_replay_evicts_by_each_strategy_that_reads_a_pods_spec_or_status(
    strategy: str, spec_evictions: Counter[str]
) -> None:
    assert spec_evictions[f"shuffle rescheduling ({strategy})"] > 0


def test_the_spec_replay_preempts_the_holders_of_the_devices_a_pod_claims(
    spec_evictions: Counter[str],
) -> None:
    assert spec_evictions["preempt devices"] > 0
