"""The operator makes aiohttp's two default TLS contexts while its cache is listed, and aiohttp's import
after ready takes them (its log line says so); aiohttp's server and the replica work as before (real
apiserver; how they are handed over: tests/unit/test_tls_contexts_made_ahead.py)."""

from __future__ import annotations

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for

pytestmark = pytest.mark.cluster


def test_aiohttps_import_after_ready_takes_the_tls_contexts_made_ahead(
    k: Kube, start_operator: Start
) -> None:
    k.nodes(node("n1"))
    op = start_operator()
    line = wait_for(
        lambda: next(
            (x for x in op.log().splitlines() if "imported aiohttp.web" in x and "after ready" in x), None
        ),
        60,
        what="aiohttp imported after ready",
    )
    assert line.endswith("; its TLS contexts made ahead"), line
    ns = k.namespace("tlsahead")
    k.pods(ns, pod("p1"))
    wait_for(lambda: k.bound(ns) == {f"{ns}/p1": "n1"}, 60, what="the pod bound")
    assert op.metric("volsched_sessions_total") >= 1  # aiohttp's server answers /metrics
