"""``volsched demo`` tells its five stories on a real control plane (controllers and kwok nodes: the Jobs'
pods really run, and the last Job finishes), and each reaches its outcome."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from volsched_dev.demo import run_phases

pytestmark = pytest.mark.cluster


def test_the_demo_shows_borrowing_taking_back_a_waiting_gang_a_guarantee_and_a_job_finishing() -> None:
    out = io.StringIO()
    borrow, take_back, gang, guarantee, finish = run_phases(Console(file=out, width=120), period=0.3)
    text = out.getvalue()

    assert borrow.reached and borrow.look.bound == {"sweep": 32}
    assert borrow.look.queues["research"].deserved == 32

    assert take_back.reached and take_back.look.bound == {"sweep": 16, "serve": 16}
    assert (take_back.look.queues["research"].deserved, take_back.look.queues["prod"].deserved) == (16, 16)
    assert len(take_back.evictions) == 16
    assert all("reclaim:" in e and "queue research holds" in e for e in take_back.evictions)

    assert gang.reached and gang.look.bound.get("mpi", 0) == 0
    assert "minResources cpu 16 > room" in gang.look.waiting["mpi"]

    assert guarantee.reached and guarantee.look.bound["hotfix"] == 4
    assert guarantee.look.queues["urgent"].deserved == 4
    assert guarantee.evictions  # the full cluster made room

    assert finish.reached and finish.look.succeeded["hotfix"] == 4
    assert finish.look.phases["hotfix"] == "Completed"

    for title in (borrow.title, take_back.title, gang.title, guarantee.title, finish.title):
        assert text.count(title) == 1
    assert "/ui" in text.splitlines()[-2]  # the dashboard's address, before the goodbye
