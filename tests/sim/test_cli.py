"""`volsched simulate`: the JSON contract, and exit status 2 with a located message for bad input."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.builders import node, pod, podgroup, queue
from volsched.cli import main


def _write(tmp_path, objs, name="in.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objs) if isinstance(objs, list) else objs)
    return str(path)


def test_json_output_follows_the_contract(tmp_path, capsys):
    f = _write(
        tmp_path,
        [
            node("n1", cpu="2"),
            node("n2", cpu="2"),
            queue("q1", capability={"cpu": "4"}),
            podgroup("g", queue="q1"),
            pod("a", group="g"),
            pod("b", cpu="3"),
        ],
    )
    assert main(["simulate", "-f", f, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"sessions", "pods", "podgroups", "queues", "namespaces", "events", "evictions"}
    assert data["pods"]["default/a"] == {"node": "n1", "phase": "Running"}
    assert data["pods"]["default/b"] == {"node": None, "phase": "Pending"}
    assert data["podgroups"]["default/g"] == {
        "phase": "Running",
        "queue": "q1",
        "minMember": 1,
        "scheduled": 1,
        "reason": None,  # running: nothing to say
        "owner": None,  # a PodGroup object, not one standing for a controller owner
    }
    q1 = data["queues"]["q1"]
    assert set(q1) >= {
        "weight",
        "deserved",
        "allocated",
        "request",
        "guarantee",
        "capability",
        "realCapability",
        "share",
    }
    assert q1["capability"] == {"cpu": 4}
    assert q1["allocated"] == {"cpu": 1, "pods": 1}
    assert data["queues"]["default"]["capability"] is None
    assert data["namespaces"]["default"]["weight"] == 1
    assert {
        "object": "Pod default/b",
        "reason": "FailedScheduling",
        "message": "can never run as it stands: none of the 2 ready node(s) could hold it, even were they"
        " empty (it asks cpu 3); 0/2 nodes fit: 2 insufficient cpu (needs 3, most idle 2); set aside, as the nodes could"
        " not hold it even empty: tried again once a node joins, leaves or changes, the pod or its queue"
        " changes, or in 5m; the figures here are those of its last try",
    } in data["events"]


def test_table_output_shows_queues_and_placement(tmp_path, capsys):
    f = _write(tmp_path, [node("n1"), pod("a")])
    assert main(["simulate", "-f", f]) == 0
    out = capsys.readouterr().out
    assert "Queues" in out and "Placement" in out and "n1" in out


def test_bundled_example_runs(capsys):
    assert main(["simulate", "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["podgroups"]["robotics/resnet"]["phase"] == "Running"
    assert data["podgroups"]["spark/huge"]["phase"] == "Pending"


BAD = [
    ("kind: Node\nmetadata: {name: [unclosed\n", r"in.yaml: document 1: not valid YAML at line \d+"),
    (
        [{"kind": "Gadget", "metadata": {"name": "g"}}],
        r"in.yaml: document 1: Gadget g: unknown kind 'Gadget'; known kinds: .*Job",
    ),
    (
        [{"kind": "Node", "metadata": {"name": "n1"}, "status": {}}],
        r"document 1: Node n1: missing field status.allocatable",
    ),
    (
        [node("n1"), pod("p", cpu="2c")],
        r"document 2: Pod default/p: spec.containers\[0\].resources.requests.cpu: malformed quantity '2c'",
    ),
    (
        [podgroup("g", queue="nope")],
        r"document 1: PodGroup default/g: spec.queue names queue 'nope', which is not in the input",
    ),
    ([queue("q", weight=0)], r"Queue q: spec.weight: expected an integer >= 1, got 0"),
    ([podgroup("g", min_member=0)], r"PodGroup default/g: spec.minMember: expected an integer >= 1, got 0"),
    ([pod("p", node="ghost")], r"Pod default/p: spec.nodeName names node 'ghost'"),
    ([{"kind": "Pod", "metadata": {"name": "p"}}], r"Pod default/p: missing field spec"),
]


@pytest.mark.parametrize(("content", "message"), BAD)
def test_bad_input_exits_2_with_a_located_message(tmp_path, capsys, content, message):
    f = _write(tmp_path, content)
    assert main(["simulate", "-f", f]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("volsched simulate: ")
    import re

    assert re.search(message, err), err


def test_bad_config_exits_2(tmp_path, capsys):
    f = _write(tmp_path, [node("n1")])
    conf = tmp_path / "conf.yaml"
    conf.write_text('actions: "allocate, dance"\ntiers: [{plugins: [{name: gang}]}]\n')
    assert main(["simulate", "-f", f, "--config", str(conf)]) == 2
    assert "unknown action 'dance'" in capsys.readouterr().err


def test_a_pod_of_a_missing_podgroup_gets_an_event(tmp_path, capsys):
    f = _write(tmp_path, [node("n1"), pod("p", group="ghost")])
    assert main(["simulate", "-f", f, "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {
        "object": "Pod default/p",
        "reason": "PodGroupNotFound",
        "message": "pod group ghost does not exist",
    } in data["events"]
