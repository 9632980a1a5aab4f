"""What a tenant writes cannot forge a line of the operator's log (real apiserver): a pod's group
annotation may hold any text, a line break too, and the session's warning about the pod quotes it
("pod group ... does not exist"). Written as it was, the annotation's second line stood in the log as a
line of its own, under a time, a level and a logger of the tenant's choosing. A record's line breaks and
other control characters are now escaped: one record, one line."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for

pytestmark = pytest.mark.cluster

FORGED = "2026-11-30 12:00:00,000 ERROR volsched.operator: forged by a tenant"


def test_a_tenants_line_break_does_not_forge_a_log_line(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("team")
    k.pods(ns, pod("p", group=f"missing\n{FORGED}\r\x1b[2K"))
    op = start_operator()
    line = wait_for(
        lambda: next((x for x in op.log().splitlines() if "PodGroupNotFound" in x), None),
        30,
        what="the warning about the pod whose PodGroup does not exist",
    )
    assert "missing\\n2026-11-30" in line, line
    assert "\\r\\x1b[2K" in line, line
    assert not [x for x in op.log().splitlines() if x.startswith(FORGED)]
