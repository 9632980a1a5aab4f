"""bench/starvation.py's fairness measure, worked by hand: a queue deserves, minute by minute, its weight's
part of what the small queues hold, no more than it asks then (the rest goes to the others); an hour is
fair when each queue's mean holding is within one of its pods of its mean deserved part."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from starvation import deserved_over, fair_hour, spread


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
