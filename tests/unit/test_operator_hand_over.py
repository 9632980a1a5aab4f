"""Shutdown's hand-over is bounded: the session still running and the writes still in flight share one
deadline (the lease duration and a second: every write's timeout ends before the Lease could expire),
not one each, and the Lease is released after them only when both ended in time; else it is left to
expire (a successor never writes beside a write of ours still on its way)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit._cycle_harness import operator_at
from volsched.operator import Operator

#: Seconds the session still runs once shutdown begins (the stuck one runs on past the deadline).
SESSION = 0.3
DURATION = 1.0  # the lease duration: the deadline is 2 s after shutdown began


@pytest.fixture
def op(tmp_path: Path) -> Iterator[Operator]:
    with operator_at(tmp_path) as made:
        made.settings.lease.duration = DURATION
        yield made


#: (case, the session stuck past the deadline, the writes in flight end in time, released)
CASES: list[tuple[str, bool, bool, bool]] = [
    ("the session and its writes end in time: released", False, True, True),
    ("writes still in flight at the deadline: left to expire", False, False, False),
    ("the session stuck past the deadline: left to expire", True, True, False),
]


@pytest.mark.parametrize(("case", "stuck", "drained", "released"), CASES, ids=[c[0] for c in CASES])
def test_shutdown_gives_the_session_and_its_writes_one_deadline_then_releases_the_lease(
    op: Operator, monkeypatch: pytest.MonkeyPatch, case: str, stuck: bool, drained: bool, released: bool
) -> None:
    waits: list[float] = []
    done: list[str] = []
    monkeypatch.setattr(op.port, "drain", lambda timeout: waits.append(timeout) or drained)
    monkeypatch.setattr(op.lease, "release", lambda: done.append("released"))

    async def shutdown() -> None:
        session = asyncio.create_task(asyncio.sleep(60 if stuck else SESSION))
        await op._hand_over(session)
        session.cancel()

    asyncio.run(shutdown())
    assert op.lease.time_left() <= 0  # nothing is written from the start of shutdown
    assert done == (["released"] if released else [])
    if not stuck:
        # What the session took is not given to the writes again.
        assert len(waits) == 1 and waits[0] <= DURATION + 1.0 - SESSION
    else:
        assert waits == []
