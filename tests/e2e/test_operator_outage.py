"""An apiserver outage: a few clear log lines, and scheduling resumes once it is back (real apiserver)."""

from __future__ import annotations

import re

import pytest

from tests.e2e.operator_fixtures import Kube, OperatorProcess, Start, node, pod, wait_for
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

AFTER_READY = "after ready: about"
BOUND_ONE = re.compile(r"session \d+: 1 to bind, 1 bound,")
UNREACHABLE = "kube-apiserver unreachable"
BACK = "kube-apiserver reachable again after"


def _outage(op: OperatorProcess, since: int = 0) -> str:
    """The operators' log (both write to it) from line ``since`` on."""
    return "\n".join(op.log().splitlines()[since:])


def test_an_apiserver_outage_is_a_few_log_lines_and_scheduling_resumes(
    cluster: LocalControlPlane, k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1", cpu="8"))
    ns = k.namespace("outage")
    # The lines a user sees at the default level are counted: an INFO run whatever $VOLSCHED_LOG_LEVEL says
    # (with DEBUG exported to keep failed tests' logs, every retried request is a line of its own).
    leader = start_operator("--log-level", "INFO")
    follower = start_operator("--log-level", "INFO")  # shares the log file: both replicas' lines are counted
    k.pods(ns, pod("before"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/before"), 30, what="a pod bound before the outage")
    # The lines before the outage are all written: both replicas' last line after ready, and the line of
    # the session that bound the pod.
    wait_for(
        lambda: leader.log().count(AFTER_READY) >= 2 and BOUND_ONE.search(leader.log()),
        30,
        what="the lines of both replicas' start and of the bind",
    )
    lines_before = len(leader.log().splitlines())

    cluster.stop_apiserver()
    # Longer than the 4 s lease: the leader fences itself, both replicas keep retrying.
    wait_for(lambda: leader.metric("volsched_leader") == 0, 30, what="the leader fenced")
    wait_for(lambda: _outage(leader, lines_before).count(UNREACHABLE) >= 2, 30, what="both replicas retrying")
    cluster.start_apiserver()
    k.pods(ns, pod("after"))
    wait_for(lambda: k.bound(ns).get(f"{ns}/after"), 60, what="a pod bound after the outage")
    # The outage's end is said once an answer came 2 s (ApiHealth.settle) after the last failed call,
    # which can be after the pod is bound: by each replica, the last line the outage makes it write.
    wait_for(
        lambda: _outage(leader, lines_before).count(BACK) >= 2,
        30,
        what="both replicas' line that the apiserver is back",
    )

    during = leader.log().splitlines()[lines_before:]
    text = "\n".join(during)
    assert "kube-apiserver unreachable" in text and "kube-apiserver reachable again after" in text
    assert len(during) <= 12, f"{len(during)} log lines for one outage:\n{text[:6000]}"
    assert "Traceback" not in text
    assert follower.proc is not None and follower.proc.poll() is None
