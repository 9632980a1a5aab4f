"""A valid scheduler config without allocate loads but places nothing: the operator warns in its log,
/readyz stays 200 with a warning line, and the pending pod's event says why (real apiserver)."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for
from volsched.framework.config import DEFAULT_CONFIG_YAML

pytestmark = pytest.mark.cluster

GAP = "place no pod that requests resources: allocate is not among them"


def test_a_config_without_allocate_says_so_on_load_on_readyz_and_on_the_pod(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="8"))
    ns = k.namespace("noallocate")
    k.set_config(DEFAULT_CONFIG_YAML.replace("enqueue, allocate, backfill", "enqueue, backfill"))
    op = start_operator()
    k.pods(ns, pod("waits"))

    def said() -> str:
        events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "waits"]
        return next((e.message for e in events if e.reason == "FailedScheduling"), "")

    message = wait_for(said, 60, what="the pending pod's FailedScheduling event")
    assert message.startswith("the scheduler config's actions (enqueue, backfill) " + GAP), message
    status, body = op.readyz()
    assert status == 200 and body.startswith("ok\nwarning: "), body
    assert GAP in body
    assert GAP in op.log()
    assert f"{ns}/waits" not in k.bound(ns)
