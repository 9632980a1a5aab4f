"""A Queue named ``root`` (volsched's or Volcano's) is refused, saying why: ``root`` is the top of the queue
tree, the whole cluster (a ``spec.parent`` of ``root`` means no parent). It was read as an ordinary leaf
beside the top queues: the queues naming it as their parent were not under it, its capability capped
nothing but its own jobs, and nothing said so. The other queues and their jobs go on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node, pod, queue
from tests.unit._cycle_harness import CONFIG, FakePort, cache
from volsched.cache.state import ClusterState
from volsched.cycle import run_cycle
from volsched.model.decode import build_queue
from volsched.model.errors import InputError
from volsched.operator.admission import Admission

WHY = "Queue root: the name root is the top of the queue tree, the whole cluster"


def _volcano(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "apiVersion": "scheduling.volcano.sh/v1beta1"}


def test_a_queue_named_root_does_not_decode() -> None:
    with pytest.raises(InputError, match=WHY):
        build_queue(queue("root", capability={"cpu": "4"}))


@pytest.mark.parametrize("api", ["volsched", "volcano"])
def test_the_cache_refuses_it_naming_why_and_the_other_queues_go_on(api: str) -> None:
    root = queue("root", capability={"cpu": "1"})
    root = _volcano(root) if api == "volcano" else root
    root["metadata"].update(resourceVersion="10", uid="uid-root")
    feeder = cache(node("n1", cpu="4"), queue("a", parent="root"), pod("p", queue="a", cpu="2"))
    assert not feeder.apply("Queue" if api == "volsched" else "VolcanoQueue", root)
    assert "root" not in {q.name for q in feeder.state.queue_specs()}
    (rejection,) = feeder.rejected.values()
    assert WHY in rejection.message
    report = run_cycle(feeder, CONFIG, FakePort(), now=5000.0)
    assert [b.pod for b in report.result.binds] == ["default/p"]  # queue a is a top queue, uncapped


def test_the_webhook_refuses_it() -> None:
    admission = Admission(ClusterState(), scheduler_names=frozenset({"volsched"}))
    assert WHY in (admission.queue(queue("root")) or "")
