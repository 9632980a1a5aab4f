"""Amounts in events, reasons and the simulator's tables are written for people: bytes in the unit they
were most likely written in, or to three figures in binary units, and never in exponent notation."""

from __future__ import annotations

import pytest

from volsched.framework.messages import amounts
from volsched.model.resources import format_amount

GI, MI, KI = 1 << 30, 1 << 20, 1 << 10


@pytest.mark.parametrize(
    ("name", "amount", "text"),
    [
        ("memory", 3e9, "3G"),  # was 2.92969e+06Ki
        ("memory", 3 * GI, "3Gi"),
        ("memory", 2.79 * GI, "2.79Gi"),
        ("memory", 3e9 - 1, "2.79Gi"),  # not 3G: a byte short
        ("memory", 1.5 * GI, "1.5Gi"),
        ("memory", 1000 * MI, "1000Mi"),
        ("memory", 256 * MI, "256Mi"),
        ("memory", 1500e6, "1.5G"),
        ("memory", 250e6, "250M"),
        ("memory", 123456789, "118Mi"),  # was 1.23457e+08
        ("memory", 1234567890, "1.15Gi"),  # not 1234567.89k
        ("memory", 0.1 * GI, "102Mi"),
        ("memory", 1e12, "1T"),
        ("memory", 1e15, "1P"),  # was 9.76562e+11Ki
        ("memory", 64 * GI * 1024, "64Ti"),
        ("memory", 1000, "1k"),
        ("memory", 512, "512"),
        ("memory", 100 * KI + 1, "100Ki"),
        ("memory", 0, "0"),
        ("memory", -2 * GI, "-2Gi"),
        ("ephemeral-storage", 20 * GI, "20Gi"),
        ("hugepages-2Mi", 4 * MI, "4Mi"),
        ("cpu", 2, "2"),
        ("cpu", 0.25, "0.25"),
        ("cpu", 1.5, "1.5"),
        ("cpu", 12.3456, "12.346"),
        ("cpu", 1234567, "1234567"),  # was 1.23457e+06
        ("cpu", 1e9, "1000000000"),  # was 1e+09
        ("cpu", 0.0004, "<0.001"),  # not 0: something is asked
        ("cpu", -1.5, "-1.5"),
        ("nvidia.com/gpu", 8, "8"),
        ("pods", 110, "110"),
    ],
)
def test_an_amount_is_written_for_people(name: str, amount: float, text: str) -> None:
    assert format_amount(name, amount) == text
    assert "e+" not in text and "e-" not in text


def test_messages_say_amounts_with_it() -> None:
    assert amounts({"memory": 3e9, "cpu": 2.0, "pods": 1.0}) == "cpu 2, memory 3G"
