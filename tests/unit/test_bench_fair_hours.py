"""bench/starvation.py's fairness measure, worked by hand: a queue deserves, minute by minute, its weight's
part of what the small queues hold, no more than it asks then (the rest goes to the others); an hour is
fair when each queue's mean holding is within one of its pods of its mean deserved part."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from starvation import GPU, deserved_over, fair_hour, measure, spread

from volsched.simulate.runs import PodRun


def _hour(
    first: dict[str, tuple[float, float]], second: dict[str, tuple[float, float]]
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """(held, asked) per minute: 30 minutes of ``first``, then 30 of ``second`` ({queue: (held, asked)})."""
    held = {q: [first[q][0]] * 30 + [second[q][0]] * 30 for q in first}
    asked = {q: [first[q][1]] * 30 + [second[q][1]] * 30 for q in first}
    return held, asked


def test_a_queue_asking_less_than_its_share_deserves_what_it_asks_and_the_rest_goes_to_the_others() -> None:
    # 12 GPUs held between them, equal weights: a asks 2, so b and c share the other 10.
    held = {"a": [2.0], "b": [5.0], "c": [5.0]}
    asked = {"a": [2.0], "b": [20.0], "c": [20.0]}
    assert deserved_over(held, asked) == pytest.approx({"a": 2.0, "b": 5.0, "c": 5.0})


def test_the_hours_deserved_part_is_the_mean_of_its_minutes_not_the_fill_of_its_mean_asks() -> None:
    # First half: a holds all 8 (asks 16), b asks nothing: a deserves 8, b 0. Second half: a asks 4 and
    # holds 4, b asks 12 and holds 4: 4 each. Fair at every minute: a deserves 6 over the hour, b 2,
    # as they hold. (Filling the hour's mean asks, a 10 and b 6, would say 4 each: a 2 over, b 2 under.)
    held, asked = _hour({"a": (8, 16), "b": (0, 0), "c": (0, 0)}, {"a": (4, 4), "b": (4, 12), "c": (0, 0)})
    assert deserved_over(held, asked) == pytest.approx({"a": 6.0, "b": 2.0, "c": 0.0})
    assert fair_hour(held, asked, {"a": 1.0, "b": 1.0, "c": 1.0})


@pytest.mark.parametrize(("pod", "fair"), [(1.0, False), (2.0, True), (4.0, True)])
def test_an_hour_is_fair_within_one_pod_of_the_queues_own_size(pod: float, fair: bool) -> None:
    # Second half: a keeps all 8 while b asks 12: b deserves 4 there, 2 over the hour, and holds 0.
    held, asked = _hour({"a": (8, 16), "b": (0, 0), "c": (0, 0)}, {"a": (8, 8), "b": (0, 12), "c": (0, 0)})
    assert deserved_over(held, asked) == pytest.approx({"a": 6.0, "b": 2.0, "c": 0.0})
    assert fair_hour(held, asked, {"a": pod, "b": pod, "c": pod}) is fair


def test_a_minute_partly_held_counts_its_part() -> None:
    series = [0.0] * 4
    spread(series, 90.0, 150.0, 2.0, start=0.0, step=60.0)  # 2 GPUs from 1:30 to 2:30
    spread(series, 200.0, 1_000.0, 1.0, start=0.0, step=60.0)  # from 3:20, past the end: cut there
    assert series == pytest.approx([0.0, 1.0, 1.0, 40 / 60])


def _run(key: str, gpus: int, *, created: float, started: float | None, finished: float | None) -> PodRun:
    return PodRun(
        key=key, job=key, created=created, duration=None, requests={GPU: float(gpus)},
        started=started, finished=finished,
    )  # fmt: skip


def test_an_unfair_hour_is_told_queue_by_queue_with_what_ran_from_before_it() -> None:
    # Two hours at full demand: the big queue's 64 GPUs pending all along; a holds 40 GPUs from the start,
    # b 12 and c 12 (each asking 40): in each hour a deserves a third of the 64 they hold, 21.3, and holds
    # 40. In the first hour nothing ran before it; in the second a's 40 all did. b's second 4 GPUs start
    # at half past the second hour: 2 of b's mean there are new.
    runs = [_run(f"team-big/g-{i}", 8, created=0.0, started=None, finished=None) for i in range(8)]
    for q, held, asked in (("a", 10, 10), ("b", 3, 10), ("c", 3, 10)):
        runs += [_run(f"team-{q}/p-{i}", 4, created=0.0, started=0.0, finished=None) for i in range(held)]
        runs += [
            _run(f"team-{q}/w-{i}", 4, created=0.0, started=None, finished=None) for i in range(held, asked)
        ]
    runs.append(_run("team-b/late", 4, created=0.0, started=5_400.0, finished=None))
    result = SimpleNamespace(runs={r.key: r for r in runs}, start=0.0, sessions=1)
    figures = measure("t", result, horizon=7_200.0, wall=0.0)  # type: ignore[arg-type]
    assert (figures.busy_hours, figures.fair_hours) == (2, 0.0)
    first, second = figures.unfair
    assert (first.hour, second.hour) == (0, 1)
    assert first.held == pytest.approx({"a": 40.0, "b": 12.0, "c": 12.0})
    assert first.kept == pytest.approx({"a": 0.0, "b": 0.0, "c": 0.0})
    assert second.held == pytest.approx({"a": 40.0, "b": 14.0, "c": 12.0})
    assert second.kept == pytest.approx({"a": 40.0, "b": 12.0, "c": 12.0})
    assert second.deserved["a"] == pytest.approx(66 / 3)
    text = "\n".join(second.lines())
    assert "a: held  40.0 (from before the hour  40.0)" in text
    assert f"OFF by {40 - 22 - 4:.1f} past one pod" in text
    assert "    :00  big   0.0  idle  64.0  a  40.0/ 21.3/ 40.0" in text  # the pending gang's 64 GPUs idle
    assert "    :30  big   0.0  idle  60.0" in text  # b's late pod holds 4 of them
