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


#: The lines a replica writes as it stops (at the signal), and the Lease's as the leader gives it up (or
#: why it does not).
STOPPING = re.compile(
    r"volsched\.operator: stopping \(signal\)$|volsched\.lease: lease \S+: released by "
    r"|(a session still runs|writes still in flight) after \d+s; not releasing the lease$"
)


def _stopping(line: str) -> bool:
    return bool(STOPPING.search(line))


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

    assert follower.proc is not None and follower.proc.poll() is None
    # Every line the outage made either replica write is in the log once both have stopped: a line it
    # writes later than the "reachable again" lines comes before its end, and it ends here. The lines of
    # their stop (after the signal) are told apart by what they say. How they exit is not this test's.
    at_stop = len(leader.log().splitlines())
    leader.stop()  # (each waits for its process to end: killed past 20 s, its lines are all written still)
    follower.stop()
    stopping = leader.log().splitlines()[at_stop:]
    assert sum("stopping (signal)" in line for line in stopping) == 2, "\n".join(stopping)
    during = leader.log().splitlines()[lines_before:at_stop] + [x for x in stopping if not _stopping(x)]
    text = "\n".join(during)
    assert "kube-apiserver unreachable" in text and "kube-apiserver reachable again after" in text
    assert len(during) <= 12, f"{len(during)} log lines for one outage:\n{text[:6000]}"
    assert "Traceback" not in text
