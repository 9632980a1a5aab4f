"""The replay's HTML report (``volsched simulate --replay -o html``) in a real headless Chromium: one file
that loads nothing from the network, draws every plot (utilisation, held against deserved, waits per
queue and per class), and whose table says what ``-o json`` says (see tests/browser.py; skipped, saying
why, without Chromium)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.browser import open_browser
from tests.builders import node, pod, queue
from tests.sim.test_replay_clock import at
from volsched.cli import main as cli_main
from volsched.simulate.annotations import CLASS_ANNOTATION, DURATION_ANNOTATION

pytestmark = pytest.mark.browser

PLOTS = """JSON.stringify([...document.querySelectorAll('.plotly-graph-div')].map(p => ({
  title: p._fullLayout.title.text, traces: p.data.length,
  points: p.data.reduce((n, t) => n + (t.y ? t.y.length : 0), 0),
  drawn: p.querySelectorAll('.scatterlayer .trace, .boxlayer .trace').length})))"""
ROWS = """JSON.stringify([...document.querySelectorAll('#queues tbody tr')].map(
  tr => [...tr.querySelectorAll('td')].map(td => td.textContent)))"""
#: Anything the page would fetch: a script, style or image from elsewhere.
FETCHES = """JSON.stringify([...document.querySelectorAll('script[src], link[href], img[src]')].map(e => e.outerHTML)
  .concat(performance.getEntriesByType('resource').map(e => e.name)))"""


def _workload(tmp_path: Path) -> str:
    objs: list[dict[str, Any]] = [node("n0", cpu="4"), queue("a"), queue("b")]
    for i in range(6):
        for q, cls in (("a", "batch"), ("b", "interactive")):
            ann = {DURATION_ANNOTATION: "10m" if cls == "batch" else "2m", CLASS_ANNOTATION: cls}
            objs.append(pod(f"{q}{i}", queue=q, created=at(60 * i), annotations=ann, cpu="1"))
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)


def _simulate(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["simulate", *args]) == 0
    return out.getvalue()


def test_the_report_page_draws_every_plot_offline_and_its_table_matches_the_json(tmp_path: Path) -> None:
    workload = _workload(tmp_path)
    page = tmp_path / "report.html"
    page.write_text(_simulate("--replay", "-f", workload, "-o", "html"))
    report = json.loads(_simulate("--replay", "-f", workload, "-o", "json"))["report"]

    async def go() -> list[Any]:
        async with open_browser(tmp_path) as p:
            await p.goto(page.as_uri())
            await p.wait_for("document.body.dataset.rendered === '1'", timeout=120, what="every plot drawn")
            values = [json.loads(await p.evaluate(script)) for script in (PLOTS, ROWS, FETCHES)]
            await p.screenshot(tmp_path / "report.png")
            return values

    plots, rows, fetches = asyncio.run(go())
    assert fetches == []  # self-contained: plotly.js is in the page
    assert [p["title"] for p in plots] == [
        "Utilisation of every resource over time",
        "Held (solid) against deserved (dotted) cpu per queue",
        "Wait times per queue",
        "Wait times per job class",
    ]
    assert all(p["drawn"] == p["traces"] > 0 and p["points"] > 0 for p in plots), plots
    assert plots[1]["traces"] == 4  # held and deserved of a and b
    assert plots[2]["points"] == 12  # one wait per job
    by_queue = {r[0]: r for r in rows}
    for q in ("a", "b"):
        g = report["queues"][q]
        assert by_queue[q][2:5] == [str(g["jobs"]), str(g["finished"]), str(g["waiting"])]
        assert float(by_queue[q][8]) == pytest.approx(g["wait"]["max"], rel=1e-2)
    assert (tmp_path / "report.png").stat().st_size > 10_000
