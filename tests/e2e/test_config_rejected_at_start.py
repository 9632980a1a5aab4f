"""A scheduler config rejected at start, with none of the user's loaded before: the built-in default
runs in its place, and the operator is not ready (/readyz 503 saying why, volsched_ready 0) until a
config of the user's loads (real apiserver)."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for
from volsched.framework.config import DEFAULT_CONFIG_YAML

pytestmark = pytest.mark.cluster


def test_a_config_rejected_at_start_is_not_ready_until_one_of_the_users_loads(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="8"))
    ns = k.namespace("rejectedstart")
    k.set_config("actions: enqueue, allocate, teleport\ntiers: []\n")
    op = start_operator()
    wait_for(lambda: op.metric("volsched_config_reloads_total", result="rejected") >= 1, 30, what="rejection")
    status, body = op.readyz()
    assert status == 503, body
    assert "scheduler config rejected (ConfigMap" in body and "teleport" in body
    assert "the built-in default runs until a config of yours loads" in body
    assert op.metric("volsched_ready") == 0
    assert "not ready: the built-in default config runs in place of the rejected one" in op.log()
    # The default runs meanwhile: a pod is placed (as before), only readiness tells the user.
    k.pods(ns, pod("placed"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/placed"), 30, what="pod bound under the built-in default")

    k.set_config(DEFAULT_CONFIG_YAML)  # the user's own config loads: ready
    wait_for(lambda: op.readyz()[0] == 200, 30, what="/readyz 200 once the user's config loads")
    # /metrics serves the text it made up to a second ago (the watch loads a config within that)
    wait_for(lambda: op.metric("volsched_ready") == 1, 10, what="volsched_ready 1")
    assert "ready: the scheduler config in force is ConfigMap" in op.log()
