"""The operator serves its dashboard at /ui on the metrics port: in a real headless Chromium the page
shows the queue's allocation and why a gang waits, and follows the cluster without a reload."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.browser import open_browser
from tests.e2e.operator_fixtures import (
    DESCHEDULE_CONFIG,
    OPERATOR_NS,
    Kube,
    Start,
    node,
    pod,
    podgroup,
    wait_for,
)

pytestmark = [pytest.mark.cluster, pytest.mark.browser]

ALLOCATED = (
    'document.querySelector(\'.bar-row[data-queue="default"][data-resource="cpu"] .allocated\')?.textContent'
)
WHY = "document.querySelector('tr[data-podgroup=\"team/wide\"] td.why')?.textContent"


def get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()


def test_the_dashboard_follows_the_cluster_live(k: Kube, start_operator: Start, tmp_path: Path) -> None:
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("team")
    k.podgroup(ns, podgroup("pair", 2))
    k.podgroup(ns, podgroup("wide", 2))
    k.pods(ns, pod("pair-0", group="pair"), pod("pair-1", group="pair"))
    k.pods(ns, pod("wide-0", cpu="2", group="wide"), pod("wide-1", cpu="2", group="wide"))
    op = start_operator()
    base = f"http://127.0.0.1:{op.port}"
    wait_for(lambda: len(k.bound(ns)) == 2, 30, what="the pair bound")

    def state() -> dict[str, Any]:
        return json.loads(get(f"{base}/ui/state.json")[2])  # type: ignore[no-any-return]

    # Settled: the pair's 2 cpu are in use, so the wide gang (2 x 2 cpu, which the empty node could hold) cannot
    # be admitted next to them.
    wait_for(lambda: "used 2" in ((state()["podgroups"].get("team/wide") or {}).get("reason") or ""), 20,
             what="why wide waits, with the pair running")  # fmt: skip
    reason = state()["podgroups"]["team/wide"]["reason"]
    assert "minResources cpu 4" in reason
    status, ctype, html = get(f"{base}/ui")
    assert status == 200 and ctype.startswith("text/html") and 'id="volsched-data"' in html

    async def browse() -> None:
        async with open_browser(tmp_path) as page:
            await page.goto(f"{base}/ui")
            await page.wait_for(f"{ALLOCATED} === '2'", what="default queue allocated cpu 2 on the page")
            await page.wait_for(f"{WHY} === {json.dumps(reason)}", what="why the wide gang waits, in numbers")
            await page.evaluate("window.samePage = true")
            k.pods(ns, pod("solo-0"), pod("solo-1"))  # two more 1-cpu pods: jobs of their own
            await page.wait_for(f"{ALLOCATED} === '4'", what="the page following the new binds")
            assert await page.evaluate("window.samePage === true")  # polled, not reloaded
            meta = await page.evaluate("document.getElementById('meta').textContent")
            assert meta.startswith("operator (live)")
            await page.screenshot(tmp_path / "operator-dashboard.png")

    asyncio.run(browse())
    assert (tmp_path / "operator-dashboard.png").stat().st_size > 10_000


EVICTIONS = "JSON.stringify([...document.querySelectorAll('#evictions tbody tr[data-pod]')].map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent)))"


def test_the_dashboard_lists_the_evictions_the_operator_carried_out_with_their_reasons(
    k: Kube, start_operator: Start, tmp_path: Path
) -> None:
    k.nodes(node("n1", cpu="4"))
    k.core.create_namespaced_config_map(
        OPERATOR_NS,
        {
            "metadata": {"name": "volsched-scheduler-config"},
            "data": {"volsched-scheduler.conf": DESCHEDULE_CONFIG},
        },
    )
    ns = k.namespace("deschedule")
    failed = pod("failed")
    failed["spec"]["nodeName"] = "n1"
    failed["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "uid-rs", "controller": True}
    ]
    k.pods(ns, failed)
    k.core.patch_namespaced_pod_status("failed", ns, {"status": {"phase": "Failed", "reason": "Evicted"}})
    op = start_operator()
    wait_for(
        lambda: "deschedule/failed" not in k.placements(ns),
        30,
        what=f"the failed pod evicted ({op.log_path})",
    )
    want = [
        "deschedule/failed",
        "n1",
        "shuffle",
        "shuffle: deschedule/failed evicted on n1; rescheduling (removeFailedPods): pod failed (Evicted) on node n1",
    ]

    async def browse() -> Any:
        async with open_browser(tmp_path) as page:
            await page.goto(f"http://127.0.0.1:{op.port}/ui")
            return await page.wait_for(f"{EVICTIONS}.includes({json.dumps(want[-1])}) && {EVICTIONS}")

    assert json.loads(asyncio.run(browse())) == [want]
    (served,) = json.loads(get(f"http://127.0.0.1:{op.port}/ui/state.json")[2])["evictions"]
    assert (served["pod"], served["result"], served["reason"]) == ("deschedule/failed", "evicted", want[-1])
