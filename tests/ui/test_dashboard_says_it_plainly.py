"""The dashboard says what kubectl and the demo say, the same way (real headless Chromium): pods told
the same thing make one "why pods wait" row with their count, every bar says what its full width stands
for, and "share" is explained where it is shown (see tests/browser.py; skipped, saying why, without
Chromium)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ui.test_dashboard_browser import png_size, render, simulate
from volsched.ui import page

pytestmark = pytest.mark.browser

CLUSTER = (
    """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: scheduling.volsched.io/v1beta1
kind: Queue
metadata: {name: a}
spec: {weight: 1}
---
apiVersion: scheduling.volsched.io/v1beta1
kind: Queue
metadata: {name: b}
spec: {weight: 1, capability: {cpu: "3"}}
---
apiVersion: scheduling.volsched.io/v1beta1
kind: PodGroup
metadata: {name: wide, namespace: team}
spec: {minMember: 4, queue: b}
"""
    + "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: wide-{i}, namespace: team, annotations: {{scheduling.k8s.io/group-name: wide}}}}
spec:
  schedulerName: volsched
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]
"""
        for i in range(4)
    )
    + "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: solo-{i}, namespace: team, annotations: {{scheduling.volsched.io/queue-name: a}}}}
spec:
  schedulerName: volsched
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "2500m"}}}}}}]
"""
        for i in range(5)
    )
)

SCRIPT = """JSON.stringify({
  waits: [...document.querySelectorAll('#events tbody tr')].map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent)),
  count: document.getElementById('events-count').textContent,
  scale: document.getElementById('scale').textContent,
  ends: [...document.querySelectorAll('.bar-row')].map(r => [r.dataset.queue, r.dataset.resource, r.querySelector('.track .end').textContent]),
  explain: document.getElementById('share-explain').textContent,
  shareTitle: document.querySelector('.qhead .share').title,
})"""


def test_why_pods_wait_is_grouped_with_a_count_and_bars_have_a_scale(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    data = json.loads(simulate("-f", str(cluster), "-o", "json"))
    seen = render(tmp_path, page(data), SCRIPT, screenshot="dashboard.png")
    # The gang's four pods are told one thing: one row, counted; the solo pods that wait, another.
    gang = [row for row in seen["waits"] if "team/wide-0" in row[2]]
    assert len(gang) == 1 and gang[0][:2] == ["team/wide", "4"], seen["waits"]
    assert gang[0][2] == "team/wide-0, team/wide-1, team/wide-2, … (+1)"
    assert gang[0][4].startswith(
        "can never run as it stands: its minMember pods ask cpu 4, more than queue b"
    )
    total = sum(int(row[1]) for row in seen["waits"])
    # pods of no PodGroup are grouped by what they are told, under no PodGroup (queue a deserves the whole
    # node: the gang that can never run asks no share, so three of the five fit and two wait)
    assert [row[:3] for row in seen["waits"] if "solo" in row[2]] == [
        ["\u2013", "2", "team/solo-3, team/solo-4"]
    ]
    assert seen["count"] == f"({total} pods, {len(seen['waits'])} reasons)"
    # A full bar is the largest figure of any queue, said once and on every bar's end.
    assert seen["scale"].startswith("a full bar is 8 cpu")
    assert all(end for _, _, end in seen["ends"]) and ["a", "cpu", "8"] in seen["ends"]
    assert (
        "share: allocated ÷ deserved" in seen["explain"] and "kubectl get queues -o wide" in seen["explain"]
    )
    assert seen["shareTitle"].startswith("allocated / deserved")
    assert png_size(tmp_path / "dashboard.png")[0] > 600
