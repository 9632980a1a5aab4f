"""proportion's check that a queue's smallest pending pod fits some ready node right now
(``some_node_fits``) asks first the node that had the room last time: its answer is the whole walk's
(``(idle >= floor).all(axis=1).any()`` over the ready nodes), whatever node the witness names."""

from __future__ import annotations

import random
from typing import Any, cast

import numpy as np

from volsched.model.cluster import NodeTable
from volsched.plugins import proportion


class Table:
    """What ``some_node_fits`` reads of a node table: its idle room, readiness and memo."""

    def __init__(self, idle: np.ndarray, ready: np.ndarray) -> None:
        self.idle, self.ready = idle, ready
        self.memo: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.idle)


def walked(table: Table, floor: list[float]) -> bool:
    return bool((table.idle[table.ready] >= np.array(floor)).all(axis=1).any())


def test_the_node_asked_first_never_changes_the_answer() -> None:
    rng = random.Random(3)
    values = [0.0, 0.5, 1.0, 2.0, 4.0, -1.0, 1e-9, np.nan, np.inf]
    for _ in range(4000):
        n, r = rng.randint(1, 6), rng.randint(1, 3)
        table = Table(
            np.array([[rng.choice(values) for _ in range(r)] for _ in range(n)]),
            np.array([rng.random() < 0.7 for _ in range(n)]),
        )
        for _ in range(3):  # the witness of the last ask, a node of another table's size, or none
            if rng.random() < 0.3:
                table.memo[proportion._FIT_WITNESS] = rng.randrange(8)
            floor = [rng.choice([-np.inf, 0.0, 0.5, 1.0, 3.0, 1e-9 - 1e-9]) for _ in range(r)]
            assert proportion.some_node_fits(cast(NodeTable, table), floor) is walked(table, floor)
            if rng.random() < 0.5:  # the room moves between two sessions
                table.idle = table.idle - rng.choice([0.0, 0.5, 1.0])


def test_the_node_that_had_room_is_kept_and_asked_first() -> None:
    table = Table(np.array([[0.0], [1.0], [3.0]]), np.array([True, False, True]))
    assert proportion.some_node_fits(cast(NodeTable, table), [1.0])
    assert table.memo[proportion._FIT_WITNESS] == 2  # the first ready node with the room
    table.idle = np.array([[5.0], [0.5], [np.nan]])  # (the witness has no room now: the walk finds node 0)
    assert proportion.some_node_fits(cast(NodeTable, table), [1.0])
    assert table.memo[proportion._FIT_WITNESS] == 0
    table.ready = np.array([False, True, True])
    assert not proportion.some_node_fits(cast(NodeTable, table), [1.0])
