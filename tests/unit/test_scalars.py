"""The one boolean parser and the one duration parser every config and object field goes through, and the
one writer of an object's timestamp."""

from __future__ import annotations

import pytest

from volsched.model.scalars import boolean_value, duration_seconds, rfc3339


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("TRUE", True),
        (" False ", False),
        ("yes", None),
        ("1", None),
        ("", None),
        (1, None),
        (None, None),
    ],
)
def test_a_boolean_is_true_or_false_in_any_case_and_nothing_else(raw: object, expected: bool | None) -> None:
    assert boolean_value(raw) is expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("30s", 30.0),
        ("1h30m", 5400.0),
        ("500ms", 0.5),
        (" 2d ", 172800.0),
        (15, 15.0),
        ("2.5", 2.5),
        ("5 m", None),
        ("5x", None),
        ("", None),
        (True, None),
        (float("inf"), None),
    ],
)
def test_a_duration_is_seconds_or_go_style_units(raw: object, expected: float | None) -> None:
    assert duration_seconds(raw) == expected


@pytest.mark.parametrize(
    ("ts", "expected"),
    [
        (0, "1970-01-01T00:00:00Z"),
        (1_767_225_600.0, "2026-01-01T00:00:00Z"),
        (1_767_225_600.999, "2026-01-01T00:00:00Z"),  # to the second, cut, as the apiserver writes it
        (253_402_300_799, "9999-12-31T23:59:59Z"),
    ],
)
def test_a_timestamp_is_utc_to_the_second(ts: float, expected: str) -> None:
    assert rfc3339(ts) == expected


@pytest.mark.parametrize(
    ("ts", "expected"),
    [
        (0, "1970-01-01T00:00:00.000000Z"),
        (1_767_225_600.25, "2026-01-01T00:00:00.250000Z"),
        (253_402_300_799, "9999-12-31T23:59:59.000000Z"),
    ],
)
def test_a_micro_time_is_utc_to_the_microsecond(ts: float, expected: str) -> None:
    assert rfc3339(ts, micro=True) == expected
