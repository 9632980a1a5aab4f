"""A pod standing alone that finished (succeeded or failed, still in the cache until it is deleted, as a
Job controller's pods stay) is a job done: it claims nothing of its queue's admissions, and the next pod
of that queue is admitted and placed as on an empty cluster."""

from __future__ import annotations

import pytest

from tests.builders import node, pod
from tests.unit._cycle_harness import FakePort, cache
from volsched.cycle import run_cycle
from volsched.framework.registry import load_config
from volsched.model.vocabulary import PodGroupPhase


@pytest.mark.parametrize("finished", ["Succeeded", "Failed"])
@pytest.mark.parametrize("owner", [None, "job-a"])
def test_a_finished_pod_standing_alone_claims_no_admission_in_its_queue(
    finished: str, owner: str | None
) -> None:
    config = load_config()
    feeder = cache(node("n1", cpu="64"))
    port = FakePort()
    feeder.state.apply(pod("a", cpu="2", owner=owner))
    run_cycle(feeder, config, port, now=1.0)
    assert port.bound == {"default/a": "n1"}
    feeder.state.apply(pod("a", cpu="2", owner=owner, node="n1", phase="Running"))
    run_cycle(feeder, config, port, now=2.0)
    feeder.state.apply(pod("a", cpu="2", owner=owner, node="n1", phase=finished))
    feeder.state.apply(pod("b", cpu="1"))
    report = run_cycle(feeder, config, port, now=3.0)
    assert port.bound == {"default/a": "n1", "default/b": "n1"}, [e.message for e in report.result.events]
    assert feeder.state.snapshot(now=4.0).jobs["default/a"].phase is PodGroupPhase.COMPLETED
