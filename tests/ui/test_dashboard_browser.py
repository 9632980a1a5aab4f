"""The dashboard page in a real headless Chromium: what ``volsched simulate -o html`` writes renders the
run's numbers as text and as bar lengths, a queue tree when queues name a parent, and the data only ever
as text (see tests/browser.py; skipped, saying why, without Chromium)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from tests.browser import open_browser
from volsched.cli import main as cli_main
from volsched.ui import page

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NONE = "\u2013"  # what the page shows for a figure that is not set (an en dash)
EXAMPLES = ROOT / "examples"

#: Every bar row as the user sees it: the numbers' text and the bars' geometry in pixels.
BARS = """JSON.stringify([...document.querySelectorAll('.bar-row')].map(r => {
  const track = r.querySelector('.track').getBoundingClientRect();
  const at = (sel, w) => { const e = r.querySelector(sel); if (!e) return null;
    const b = e.getBoundingClientRect(); return w ? b.width : b.left - track.left + b.width / 2; };
  const txt = (c) => r.querySelector('.nums .' + c).textContent;
  return {queue: r.dataset.queue, resource: r.dataset.resource, track: track.width,
          allocated: txt('allocated'), deserved: txt('deserved'), guarantee: txt('guarantee'),
          capability: txt('capability'), fill: at('.fill', true), guar: at('.guar', true),
          deservedAt: at('.mark.deserved'), capAt: at('.mark.cap')};
}))"""
ROWS = """JSON.stringify([...document.querySelectorAll('#%s tbody tr')].map(
  tr => [...tr.querySelectorAll('td')].map(td => td.textContent)))"""


def simulate(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["simulate", *args]) == 0
    return out.getvalue()


def render(tmp_path: Path, html: str, script: str, *, screenshot: str | None = None) -> Any:
    path = tmp_path / "dashboard.html"
    path.write_text(html)

    async def go() -> Any:
        async with open_browser(tmp_path) as p:
            await p.goto(path.as_uri())
            await p.wait_for("document.body.dataset.rendered === '1'", what="the page rendered its data")
            value = await p.evaluate(script)
            if screenshot:
                await p.screenshot(tmp_path / screenshot)
            return json.loads(value)

    return asyncio.run(go())


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_the_what_if_page_shows_the_runs_numbers_as_text_and_as_bar_lengths(tmp_path: Path) -> None:
    run = (
        "-f", str(EXAMPLES / "guarantee-30gpu-before.yaml"), "--then", str(EXAMPLES / "guarantee-30gpu-queue4.yaml"),
        "--config", str(EXAMPLES / "reclaim-preempt-scheduler.yaml"),
    )  # fmt: skip
    html = simulate(*run, "-o", "html")
    data = json.loads(simulate(*run, "-o", "json"))
    script = f"JSON.stringify([{BARS}, {ROWS % 'podgroups'}, {ROWS % 'evictions'}, JSON.stringify(document.getElementById('meta').textContent)])"
    bars, groups, evictions, meta = (
        json.loads(x) for x in render(tmp_path, html, script, screenshot="dashboard.png")
    )
    gpu = {b["queue"]: b for b in bars if b["resource"] == "nvidia.com/gpu"}
    got = {q: (b["allocated"], b["deserved"], b["guarantee"], b["capability"]) for q, b in gpu.items()}
    assert got == {
        "queue1": ("10", "6.667", "5", NONE),
        "queue2": ("9", "6.667", NONE, NONE),
        "queue3": ("9", "6.667", NONE, "10"),
        "queue4": ("2", "10", "10", NONE),
    }
    mem = next(b for b in bars if b["queue"] == "queue1" and b["resource"] == "memory")
    assert (mem["allocated"], mem["deserved"]) == ("40Gi", "40Gi")
    # Bar lengths: every bar of a resource is drawn to one scale, so lengths compare as the numbers do.
    q4, q1, q3 = gpu["queue4"], gpu["queue1"], gpu["queue3"]
    assert q4["deservedAt"] == pytest.approx(5 * q4["fill"], abs=2)  # deserved 10, allocated 2
    assert q4["guar"] == pytest.approx(5 * q4["fill"], abs=2)  # guarantee 10
    assert q1["fill"] == pytest.approx(5 * q4["fill"], abs=2)  # allocated 10 vs 2
    assert q1["guar"] == pytest.approx(q4["guar"] / 2, abs=2)  # guarantee 5 vs 10
    assert q3["capAt"] == pytest.approx(q1["fill"], abs=2)  # capability 10 = allocated 10
    assert q1["deservedAt"] == pytest.approx(q1["fill"] * 6.667 / 10, abs=2)
    assert q1["capAt"] is None and gpu["queue2"]["guar"] is None  # none set: nothing drawn
    assert [(g[0], g[2], g[4]) for g in groups] == [
        ("team1/train", "Running", "10"),
        ("team2/train", "Running", "9"),
        ("team3/train", "Running", "9"),
        ("team4/finetune", "Running", "2"),
    ]
    assert [e[0] for e in evictions] == ["team2/train-2", "team3/train-2"]  # latest first
    # Each with the engine's reason, word for word.
    assert evictions == [[e["pod"], e["node"], e["action"], e["reason"]] for e in reversed(data["evictions"])]
    assert all(e[2] == "reclaim" and e[3].startswith(f"reclaim: {e[0]} ") for e in evictions)
    assert meta.startswith("simulate (what-if) · 5 session(s) · 30/32 pods placed")
    width, height = png_size(tmp_path / "dashboard.png")
    assert width == 1280 and height > 900


def test_a_pending_gang_shows_why_it_waits(tmp_path: Path) -> None:
    cluster = tmp_path / "gang.yaml"
    cluster.write_text(
        """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: scheduling.volsched.io/v1beta1
kind: Queue
metadata: {name: default}
spec: {weight: 1}
---
apiVersion: scheduling.volsched.io/v1beta1
kind: PodGroup
metadata: {name: wide, namespace: team}
spec: {minMember: 3, queue: default}
"""
        + "".join(
            f"""---
apiVersion: v1
kind: Pod
metadata: {{name: wide-{i}, namespace: team, annotations: {{scheduling.k8s.io/group-name: wide}}}}
spec:
  schedulerName: volsched
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "2"}}}}}}]
"""
            for i in range(3)
        )
    )
    data = json.loads(simulate("-f", str(cluster), "-o", "json"))
    reason = data["podgroups"]["team/wide"]["reason"]
    # three pods of 2 cpu on one 4-cpu node: it can never run, and says so in numbers
    assert "its minMember pods ask cpu 6, more than all the ready nodes have (cpu 4)" in reason
    groups = render(tmp_path, page(data), ROWS % "podgroups")
    # in line: the first (and only) job waiting in its queue
    assert groups == [
        ["team/wide", "default", data["podgroups"]["team/wide"]["phase"], "3", "0", "#1", reason]
    ]


def queues_json(parents: dict[str, str | None]) -> dict[str, Any]:
    def q(name: str, parent: str | None, cpu: int) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "weight": 1, "state": "Open", "deserved": {"cpu": cpu}, "allocated": {"cpu": cpu // 2},
            "request": {"cpu": cpu}, "guarantee": {}, "capability": None, "realCapability": {"cpu": 16},
            "share": 0.5,
        }  # fmt: skip
        if parent is not None or "parent" in "".join(str(v) for v in parents.values()):
            entry["parent"] = parent
        return entry

    queues = {name: q(name, parent, 2 + 2 * i) for i, (name, parent) in enumerate(parents.items())}
    return {
        "sessions": 1,
        "pods": {},
        "podgroups": {},
        "queues": queues,
        "namespaces": {},
        "events": [],
        "evictions": [],
    }


TREE = "JSON.stringify([...document.querySelectorAll('#queues > .queue')].map(q => [q.dataset.queue, Number(q.dataset.depth), q.querySelector('.qname').getBoundingClientRect().left]))"


@pytest.mark.parametrize(
    ("parents", "expected"),
    [
        pytest.param(
            {"root": None, "ops": "root", "eng": "root", "web": "eng", "ml": "eng", "zzz": None},
            [("root", 0), ("eng", 1), ("ml", 2), ("web", 2), ("ops", 1), ("zzz", 0)],
            id="tree when queues name a parent",
        ),
        pytest.param(
            {"b": None, "a": None, "c": None}, [("a", 0), ("b", 0), ("c", 0)], id="flat without parents"
        ),
        pytest.param(
            {"x": "y", "y": "x", "z": None}, [("z", 0), ("x", 0), ("y", 1)], id="a cycle stays visible"
        ),
    ],
)
def test_queues_render_as_a_tree_when_they_name_a_parent(
    tmp_path: Path, parents: dict[str, str | None], expected: list[tuple[str, int]]
) -> None:
    rows = render(tmp_path, page(queues_json(parents)), TREE)
    assert [(name, depth) for name, depth, _ in rows] == expected
    left = {depth: x for _, depth, x in rows}
    assert all(left[d] > left[d - 1] for d in left if d > 0)  # children are indented under their parent


def test_names_and_messages_are_shown_as_text_never_run(tmp_path: Path) -> None:
    evil = '</script><img src=x onerror="document.body.dataset.pwned=1"><b>bold</b>'
    data = queues_json({"q": None})
    data["events"] = [{"object": "Pod team/p", "reason": "FailedScheduling", "message": evil}]
    data["evictions"] = [{"pod": "team/p", "node": "n1", "action": "reclaim", "reason": evil}]
    data["podgroups"] = {
        "team/" + evil: {"phase": "Pending", "queue": "q", "minMember": 1, "scheduled": 0, "reason": evil}
    }
    script = "JSON.stringify([document.body.dataset.pwned || null, document.querySelectorAll('main img').length + [...document.querySelectorAll('main b')].filter(b => b.textContent === 'bold').length, document.querySelector('#events tbody td.msg').textContent, document.querySelector('#podgroups tbody td.why').textContent])"
    pwned, elements, message, why = render(tmp_path, page(data), script)
    assert (pwned, elements, message, why) == (None, 0, evil, evil)


def test_the_hierarchy_example_renders_as_a_tree_with_each_levels_numbers(tmp_path: Path) -> None:
    html = simulate(
        "-f", str(EXAMPLES / "hierarchy-slides.yaml"), "--then", str(EXAMPLES / "hierarchy-slides-services.yaml"),
        "--config", str(EXAMPLES / "reclaim-preempt-scheduler.yaml"), "-o", "html",
    )  # fmt: skip
    tree, bars = (json.loads(x) for x in render(tmp_path, html, f"JSON.stringify([{TREE}, {BARS}])"))
    assert [(name, depth) for name, depth, _ in tree] == [
        ("bigdata", 0), ("hadoop", 1), ("spark", 1), ("default", 0), ("services", 0),
    ]  # fmt: skip
    cpu = {b["queue"]: (b["allocated"], b["deserved"]) for b in bars if b["resource"] == "cpu"}
    # services took their half back: big data's 16 split between Hadoop and Spark.
    assert cpu == {
        "bigdata": ("16", "16"),
        "hadoop": ("8", "8"),
        "spark": ("8", "8"),
        "services": ("16", "16"),
    }
    # One scale for every level: the cluster's 32 cpu (realCapability) is the whole track, at any depth.
    bar = {b["queue"]: b for b in bars if b["resource"] == "cpu"}
    assert len({round(b["track"]) for b in bar.values()}) == 1
    assert bar["bigdata"]["fill"] == pytest.approx(bar["bigdata"]["track"] / 2, abs=2)
    assert bar["hadoop"]["fill"] == pytest.approx(bar["bigdata"]["fill"] / 2, abs=2)
