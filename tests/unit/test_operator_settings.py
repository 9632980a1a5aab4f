"""``volsched run``'s in-flight settings: binds and the writer's other requests apart, and the client's
connection pool sized for both."""

from __future__ import annotations

import logging

import pytest

from volsched.operator.settings import build_parser, parse_log_levels, settings_from_args


@pytest.mark.parametrize(
    ("argv", "bind_workers", "workers", "pool"),
    [
        ([], 128, 32, 164),  # the defaults: 128 binds in flight, 32 other writes, 4 for the reads
        (["--bind-workers", "32"], 32, 32, 68),  # the old default's connections
        (["--bind-workers", "1", "--workers", "1"], 1, 1, 6),
        (["--bind-workers", "0", "--workers", "0"], 0, 0, 6),  # at least one of each runs anyway
    ],
    ids=["defaults", "fewer-binds", "one-each", "zero"],
)
def test_bind_workers_and_writer_workers_are_set_apart_and_size_the_pool(
    argv: list[str], bind_workers: int, workers: int, pool: int
) -> None:
    s = settings_from_args(build_parser().parse_args(argv)).writer
    assert (s.bind_workers, s.workers, s.pool_size()) == (bind_workers, workers, pool)


@pytest.mark.parametrize(
    ("text", "levels"),
    [
        ("INFO", {"": logging.INFO}),
        ("debug", {"": logging.DEBUG}),
        ("WARNING,volsched.latency=DEBUG", {"": logging.WARNING, "volsched.latency": logging.DEBUG}),
        ("volsched.latency=DEBUG", {"": logging.INFO, "volsched.latency": logging.DEBUG}),
        ("LOUD,volsched.latency=NOISY", {"": logging.INFO}),  # names logging does not know
    ],
)
def test_log_level_sets_the_root_then_named_loggers(text: str, levels: dict[str, int]) -> None:
    assert parse_log_levels(text) == levels
