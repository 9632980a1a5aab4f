"""The usage plugin through the simulator: thresholds, scores by measured load, estimates, stale data,
and the simulator's usage input (annotation and --usage file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.builders import (
    Obj,
    config,
    node,
    placed,
    pod,
    podgroup,
    pods,
    priority_class,
    simulate_objects,
    to_json,
)
from volsched.cli import main
from volsched.framework.config import SchedulerConfig
from volsched.model.errors import InputError
from volsched.plugins.usage import usage_score
from volsched.simulate import EPOCH, Document, Simulator, iso


def usage_config(
    arguments: dict[str, Any] | None = None, *, enable_predicate: bool | None = None
) -> SchedulerConfig:
    entry: dict[str, Any] = {"name": "usage", "arguments": arguments or {}}
    if enable_predicate is not None:
        entry["enablePredicate"] = enable_predicate
    return config(
        json.dumps(
            {
                "actions": "enqueue, allocate, backfill",
                "tiers": [
                    {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}, entry]},
                    {"plugins": [{"name": "drf"}, {"name": "predicates"}, {"name": "proportion"}]},
                ],
            }
        )
    )


def loaded(
    name: str, cpu: float | None = None, memory: float = 0, *, alloc_cpu: str = "10", **extra: Any
) -> Obj:
    """A node with measured usage (None: no usage data)."""
    annotations = {}
    if cpu is not None:
        annotations["volsched.io/usage"] = json.dumps({"cpu": cpu, "memory": memory, **extra})
    return node(name, cpu=alloc_cpu, annotations=annotations)


def run_usage(objs: list[Obj], conf: SchedulerConfig, sessions: int = 20) -> dict[str, Any]:
    return to_json(simulate_objects(objs, conf=conf, sessions=sessions))


def pending_message(data: dict[str, Any], pod_key: str) -> str:
    return next(e["message"] for e in data["events"] if e["object"] == f"Pod {pod_key}")


# --- predicate ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "thresholds", "expected"),
    [
        ([loaded("hot", 91), loaded("cold", 10)], {"cpu": 80}, "cold"),
        ([loaded("hot", 10, memory=75), loaded("cold", 10, memory=20)], {"mem": 70}, "cold"),
        ([loaded("hot", 10, memory=75), loaded("cold", 10, memory=20)], {"memory": 70}, "cold"),
        ([loaded("a", 79), loaded("b", 85)], {"cpu": 80}, "a"),
    ],
)
def test_a_node_over_a_usage_threshold_takes_no_new_pods(
    nodes: list[Obj], thresholds: dict[str, int], expected: str
):
    # The score alone would also prefer the cooler node; weight 0 leaves only the filter.
    data = run_usage([*nodes, pod("p", cpu="1")], usage_config({"usage.weight": 0, "thresholds": thresholds}))
    assert placed(data) == {"default/p": expected}


def test_when_every_node_is_over_the_threshold_the_reason_gives_the_numbers():
    conf = usage_config({"thresholds": {"cpu": 80}})
    data = run_usage([loaded("n1", 91), loaded("n2", 85), pod("p")], conf)
    assert (
        pending_message(data, "default/p")
        == "0/2 nodes fit: 2 node(s) over cpu usage threshold 80% (usage 85%-91%)"
    )
    data = run_usage([loaded("n1", 91), pod("p")], usage_config({"thresholds": {"cpu": 80, "mem": 50}}))
    assert (
        pending_message(data, "default/p")
        == "0/1 nodes fit: 1 node(s) over cpu usage threshold 80% (usage 91%)"
    )


def test_enable_predicate_false_keeps_scoring_but_never_filters():
    conf = usage_config({"thresholds": {"cpu": 80}}, enable_predicate=False)
    data = run_usage([loaded("n1", 91), loaded("n2", 85), pod("p")], conf)
    assert placed(data) == {"default/p": "n2"}


# --- score ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"cpu": 60, "memory": 60}, {"cpu": 20, "memory": 20}, "b"),
        ({"cpu": 20, "memory": 20}, {"cpu": 60, "memory": 60}, "a"),
        # Equal load: the steady node wins over the swinging one.
        (
            {"cpu": 50, "memory": 30, "cpuFluctuation": 30},
            {"cpu": 50, "memory": 30, "cpuFluctuation": 2},
            "b",
        ),
        # Slightly busier but steady beats slightly idler but swinging (the design doc's node1/node2).
        (
            {"cpu": 80, "memory": 20, "cpuFluctuation": 5},
            {"cpu": 78, "memory": 20, "cpuFluctuation": 40},
            "a",
        ),
        # Memory counts as much as cpu by default.
        ({"cpu": 30, "memory": 80}, {"cpu": 40, "memory": 20}, "b"),
    ],
)
def test_lower_and_steadier_usage_scores_higher(a: dict[str, float], b: dict[str, float], expected: str):
    nodes = [
        node("a", cpu="10", annotations={"volsched.io/usage": json.dumps(a)}),
        node("b", cpu="10", annotations={"volsched.io/usage": json.dumps(b)}),
    ]
    data = run_usage([*nodes, pod("p", cpu="1")], usage_config())
    assert placed(data) == {"default/p": expected}


def test_cpu_weight_zero_scores_by_memory_only():
    # The resource-dimension factor would weigh cpu again for this cpu-only pod: turned off here.
    nodes = [loaded("a", 10, memory=70), loaded("b", 60, memory=20)]
    data = run_usage([*nodes, pod("p")], usage_config({"cpu.weight": 0, "dimension.weight": 0}))
    assert placed(data) == {"default/p": "b"}


# --- estimates ------------------------------------------------------------------------------------------


def test_one_session_does_not_pile_every_pod_onto_the_idle_looking_node():
    # Each 2-cpu pod is 20% of a 10-cpu node. Without estimates all five that fit would go to n1.
    objs = [loaded("n1", 10), loaded("n2", 35), *pods("w", 6, cpu="2")]
    result = simulate_objects(objs, conf=usage_config(), sessions=1)
    by_node: dict[str, int] = {}
    for bind in result.history[0].binds:
        by_node[bind.node] = by_node.get(bind.node, 0) + 1
    assert by_node == {"n1": 4, "n2": 2}


def test_pods_placed_this_session_count_toward_the_threshold():
    # Each node takes one 2-cpu pod (+20%) and is then over 50%, though it has room by requests.
    objs = [loaded("n1", 40), loaded("n2", 45), *pods("w", 4, cpu="2")]
    conf = usage_config({"usage.weight": 0, "thresholds": {"cpu": 50}})
    data = run_usage(objs, conf)
    assert sorted(placed(data).values()) == ["n1", "n2"]
    assert pending_message(data, "default/w-3") == (
        "0/2 nodes fit: 2 node(s) over cpu usage threshold 50% (usage 60%-65%)"
    )


@pytest.mark.parametrize(("started", "expected"), [(EPOCH + 20_000, None), (EPOCH + 5_000, "n1")])
def test_a_pod_started_after_the_measurement_counts_one_started_before_does_not(
    started: float, expected: str | None
):
    # Measured 40%; the running 2-cpu pod is 20% more if the measurement cannot have seen it.
    running = pod("old", cpu="2", node="n1", owner="ReplicaSet/x")
    running["status"]["startTime"] = iso(started)
    data = run_usage([loaded("n1", 40), running, pod("p")], usage_config({"thresholds": {"cpu": 50}}))
    assert placed(data, "default/p").get("default/p") == expected


# --- missing and stale data -----------------------------------------------------------------------------


@pytest.mark.parametrize(("age", "expected"), [("10m", "n1"), ("1m", None), (0, None)])
def test_stale_usage_is_ignored(age: str | int, expected: str | None):
    conf = usage_config({"thresholds": {"cpu": 80}, "staleAfter": "5m"})
    data = run_usage([loaded("n1", 95, age=age), pod("p")], conf)
    assert placed(data).get("default/p") == expected


def test_a_node_without_data_is_never_filtered():
    conf = usage_config({"thresholds": {"cpu": 80}})
    data = run_usage([loaded("hot", 95), loaded("unknown"), pod("p")], conf)
    assert placed(data) == {"default/p": "unknown"}


def test_a_node_without_data_scores_as_the_average_of_the_others():
    # a=10%, b=70%: the unknown node counts as 40%. 2-cpu pods (20% each): a, a, then unknown; b never.
    objs = [loaded("a", 10), loaded("b", 70), loaded("u"), *pods("w", 3, cpu="2")]
    data = run_usage(objs, usage_config())
    counts: dict[str, int] = {}
    for n in placed(data).values():
        counts[n] = counts.get(n, 0) + 1
    assert counts == {"a": 2, "u": 1}


def test_without_any_usage_data_the_plugin_changes_nothing():
    data = run_usage([loaded("a"), loaded("b"), pod("p")], usage_config({"thresholds": {"cpu": 1}}))
    assert placed(data) == {"default/p": "a"}


# --- simulator input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        ("{cpu: 85", "Node n1: annotation volsched.io/usage: not valid JSON"),
        (
            '{"cpu": "lots", "memory": 1}',
            "Node n1: annotation volsched.io/usage: cpu: expected a percentage 0..100, got 'lots'",
        ),
        ('{"cpu": 150, "memory": 1}', "cpu: expected a percentage 0..100, got 150"),
        ('{"cpu": 15}', "Node n1: annotation volsched.io/usage: missing field memory"),
        ('{"cpu": 15, "memory": 1, "disk": 3}', "unknown field 'disk'"),
        ("[1, 2]", "expected a map with cpu and memory percentages"),
        ('{"cpu": 15, "memory": 1, "age": "soon"}', "age: expected a duration"),
    ],
)
def test_a_bad_usage_annotation_names_the_node_and_the_field(annotation: str, message: str):
    doc = Document("cluster.yaml: document 1", node("n1", annotations={"volsched.io/usage": annotation}))
    with pytest.raises(InputError) as err:
        Simulator([doc])
    assert message in str(err.value)
    assert str(err.value).startswith("cluster.yaml: document 1: ")


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("usage_text", "message"),
    [
        ("n9: {cpu: 1, memory: 1}\n", "usage.yaml: node 'n9' is not in the input (nodes: n1)"),
        ("n1: {cpu: -1, memory: 1}\n", "usage.yaml: node n1: cpu: expected a percentage 0..100, got -1"),
        ("n1: {cpu: 1}\n", "usage.yaml: node n1: missing field memory"),
        ("- n1\n", "usage.yaml: expected a map of node name to {cpu, memory, ...}"),
        ("n1: {cpu: [\n", "usage.yaml: document 1: not valid YAML at line 2"),
    ],
)
def test_a_bad_usage_file_exits_2_naming_the_file_and_field(
    tmp_path: Path, capsys: Any, usage_text: str, message: str
):
    cluster = _write(tmp_path, "cluster.yaml", json.dumps(node("n1")))
    usage = _write(tmp_path, "usage.yaml", usage_text)
    assert main(["simulate", "-f", cluster, "--usage", usage]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_a_missing_usage_file_exits_2(tmp_path: Path, capsys: Any):
    cluster = _write(tmp_path, "cluster.yaml", json.dumps(node("n1")))
    assert main(["simulate", "-f", cluster, "--usage", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: cannot read usage file" in capsys.readouterr().err


def test_the_usage_file_wins_over_the_annotation(tmp_path: Path, capsys: Any):
    objs = [loaded("n1", 95), loaded("n2", 10), pod("p")]
    cluster = _write(tmp_path, "cluster.yaml", "\n---\n".join(json.dumps(o) for o in objs))
    usage = _write(tmp_path, "usage.yaml", "n1: {cpu: 5, memory: 5}\nn2: {cpu: 90, memory: 90}\n")
    conf = _write(
        tmp_path,
        "conf.yaml",
        "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: usage\n    arguments: {thresholds: {cpu: 80}}\n"
        "  - name: predicates\n",
    )
    assert main(["simulate", "-f", cluster, "--usage", usage, "--config", conf, "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pods"]["default/p"]["node"] == "n1"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"thresholds": {"cpu": 120}}, "plugin usage: argument thresholds.cpu: must be <= 100, got 120"),
        ({"usage.weight": "heavy"}, "plugin usage: argument usage.weight: expected a number"),
        ({"staleAfter": "later"}, "plugin usage: argument staleAfter: expected a positive duration"),
        ({"thresholds": {"mem": 1, "memory": 2}}, "give thresholds.mem or thresholds.memory, not both"),
        ({"threshold": {"cpu": 1}}, "plugin usage: unknown argument(s) threshold.cpu"),
    ],
)
def test_bad_usage_arguments_fail_at_load(arguments: dict[str, Any], message: str):
    with pytest.raises(InputError) as err:
        usage_config(arguments)
    assert message in str(err.value)


# --- the resource-dimension factor ----------------------------------------------------------------------

# The design document's table: node1 is busy on cpu (80%) and idle on memory (20%), node2 the reverse.
NODE1 = {"cpu": 80, "memory": 20}
NODE2 = {"cpu": 20, "memory": 80}


@pytest.mark.parametrize(
    ("cpu", "memory", "dimension_weight", "expected"),
    [
        # Both nodes are 50% busy on average: the usage factor ties, the pod's shape decides.
        pytest.param("1", "256Mi", 1, "node2", id="compute-heavy-goes-where-cpu-is-free"),
        pytest.param("100m", "4Gi", 1, "node1", id="memory-heavy-goes-where-memory-is-free"),
        pytest.param("1", None, 1, "node2", id="cpu-only-pod"),
        pytest.param("2", "8Gi", 1, "node1", id="balanced-pod-ties-and-takes-the-first-name"),
        pytest.param("1", "256Mi", 0, "node1", id="weight-0-turns-the-factor-off"),
    ],
)
def test_the_resource_dimension_factor_matches_the_pods_shape_to_the_nodes_free_resource(
    cpu: str, memory: str | None, dimension_weight: float, expected: str
):
    nodes = [
        node("node1", cpu="8", memory="32Gi", annotations={"volsched.io/usage": json.dumps(NODE1)}),
        node("node2", cpu="8", memory="32Gi", annotations={"volsched.io/usage": json.dumps(NODE2)}),
    ]
    conf = usage_config({"dimension.weight": dimension_weight})
    data = run_usage([*nodes, pod("p", cpu=cpu, memory=memory)], conf)
    assert placed(data) == {"default/p": expected}


@pytest.mark.parametrize(
    ("free", "own", "weights", "dimension", "expected"),
    [
        # node1 / node2 free headroom (cpu, mem) for a compute-heavy pod (shape 0.8 / 0.2).
        ([[20, 80], [80, 20]], [[40, 10], [40, 10]], [1, 1], 1, [(20 + 80 + 32) / 3, (80 + 20 + 68) / 3]),
        # Weight 0: only the usage factor, equal for both.
        ([[20, 80], [80, 20]], [[40, 10], [40, 10]], [1, 1], 0, [50, 50]),
        # cpu.weight 0, memory 1, dimension 1: memory headroom and the shape.
        ([[20, 80], [80, 20]], [[40, 10], [40, 10]], [0, 1], 1, [(80 + 32) / 2, (20 + 68) / 2]),
        # A pod without cpu or memory requests has no shape: the factor is the usage factor.
        ([[20, 80], [80, 20]], [[0, 0], [0, 0]], [1, 1], 2, [50, 50]),
    ],
)
def test_usage_score_weights_the_factors_together(
    free: list[list[float]],
    own: list[list[float]],
    weights: list[float],
    dimension: float,
    expected: list[float],
):
    out = usage_score(
        np.array(free, dtype=float),
        np.array(own, dtype=float),
        weights=np.array(weights, dtype=float),
        dimension_weight=dimension,
    )
    assert out.tolist() == pytest.approx(expected)


# --- usage-aware preemption -----------------------------------------------------------------------------


def preempt_usage_config(arguments: dict[str, Any] | None = None, *, usage: bool = True) -> SchedulerConfig:
    first = [
        {"name": "priority", "enablePreemptable": False},
        {"name": "gang"},
        {"name": "conformance"},
        {"name": "drf"},
        {"name": "proportion"},
    ]
    if usage:
        first.append({"name": "usage", "arguments": arguments or {}})
    return config(
        json.dumps(
            {
                "actions": "enqueue, allocate, reclaim, preempt, backfill",
                "tiers": [{"plugins": first}, {"plugins": [{"name": "predicates"}, {"name": "nodeorder"}]}],
            }
        )
    )


def full_nodes(a: float | None, b: float | None) -> list[Obj]:
    """Nodes a and b (2 cpu each) with the given busy level, each full with a low-priority job of two
    pods (minMember 1, so one may go)."""
    objs: list[Obj] = [priority_class("low", 1), priority_class("high", 1000)]
    for name, level in (("a", a), ("b", b)):
        objs.append(loaded(name, level, memory=level or 0, alloc_cpu="2"))
        objs.append(podgroup(name, min_member=1, priority_class="low"))
        objs += [pod(f"{name}-{i}", node=name, group=name, priority_class="low") for i in range(2)]
    objs.append(pod("hi", priority_class="high"))
    return objs


def first_victims(objs: list[Obj], conf: SchedulerConfig) -> list[str]:
    result = simulate_objects(objs, conf=conf, sessions=1)
    return [f"{e.pod}@{e.node}" for e in result.history[0].evictions]


@pytest.mark.parametrize(
    ("a", "b", "arguments", "expected"),
    [
        pytest.param(20, 80, {}, ["default/b-1@b"], id="pods-on-the-busier-node-yield"),
        pytest.param(80, 20, {}, ["default/a-1@a"], id="and-the-other-way-round"),
        pytest.param(20, 80, {"preemptThreshold": 90}, [], id="no-node-busy-enough-no-victim"),
        pytest.param(
            None, 10, {"preemptThreshold": 50}, ["default/a-1@a"], id="a-node-without-data-never-protects"
        ),
        pytest.param(50, 50, {}, ["default/a-1@a"], id="equally-busy-nodes-both-qualify"),
    ],
)
def test_a_pending_pod_preempts_only_pods_on_nodes_at_least_as_busy_as_the_threshold(
    a: float | None, b: float | None, arguments: dict[str, Any], expected: list[str]
):
    assert first_victims(full_nodes(a, b), preempt_usage_config(arguments)) == expected


def test_without_the_usage_plugin_the_victim_is_on_the_first_node():
    # The baseline the usage answer changes: both nodes need the same freed, node a sorts first.
    assert first_victims(full_nodes(20, 80), preempt_usage_config(usage=False)) == ["default/a-1@a"]


def test_enable_preemptable_false_switches_the_usage_victim_answer_off():
    first = [
        {"name": "priority", "enablePreemptable": False},
        {"name": "gang"},
        {"name": "conformance"},
        {"name": "drf"},
        {"name": "proportion"},
        {"name": "usage", "enablePreemptable": False, "arguments": {"preemptThreshold": 90}},
    ]
    conf = config(
        json.dumps(
            {
                "actions": "enqueue, allocate, preempt",
                "tiers": [{"plugins": first}, {"plugins": [{"name": "predicates"}, {"name": "nodeorder"}]}],
            }
        )
    )
    assert first_victims(full_nodes(20, 80), conf) == ["default/a-1@a"]
