"""The rescheduling plugin and the shuffle action through the simulator: lowNodeUtilization on measured
load, the filtering and ordering strategies, the per-session limit, gangs, the interval, and pods not
going back to the node they were moved off."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import (
    LOW_NODE,
    Obj,
    config,
    first_evictions,
    node,
    pod,
    podgroup,
    priority_class,
    resched_config,
    rescheduling_refused,
    simulate_objects,
)
from volsched.model.errors import InputError
from volsched.plugins.rescheduling import LAST_RUN_KEY
from volsched.simulate import EPOCH, Document, Simulator, iso


def loaded(name: str, cpu: float, memory: float = 10, *, alloc_cpu: str = "10") -> Obj:
    return node(
        name, cpu=alloc_cpu, annotations={"volsched.io/usage": json.dumps({"cpu": cpu, "memory": memory})}
    )


def running(name: str, node_name: str = "hot", *, cpu: str = "2", owner: str | None = None, **kw: Any) -> Obj:
    return pod(name, cpu=cpu, node=node_name, owner=owner or f"ReplicaSet/{name}", **kw)


# --- lowNodeUtilization ---------------------------------------------------------------------------------


def test_pods_leave_an_overutilized_node_until_it_is_under_target():
    # hot: 90% of 10 cpu; each 2-cpu pod is 20%. Two leave (90 -> 70 -> 50, not over 50 any more).
    objs = [loaded("hot", 90), loaded("cold", 5), *(running(f"w{i}") for i in range(4))]
    evicted = first_evictions(objs, resched_config(interval="0s"))
    assert len(evicted) == 2
    assert all(e.startswith("default/w") for e in evicted)


def test_the_underutilized_nodes_room_bounds_what_moves():
    # cold (4 cpu at 5%) has room for 1.8 cpu up to 50%: after one 2-cpu pod the room is used.
    objs = [loaded("hot", 90), loaded("cold", 5, alloc_cpu="4"), *(running(f"w{i}") for i in range(4))]
    assert len(first_evictions(objs, resched_config(interval="0s"))) == 1


@pytest.mark.parametrize(
    ("hot", "cold", "why"),
    [
        (45, 5, "no node is over target"),
        (90, 30, "no node is under the thresholds"),
        (90, None, "the only other node has no usage data"),
    ],
)
def test_low_node_utilization_does_nothing_when_either_set_is_empty(hot: float, cold: float | None, why: str):
    cold_node = node("cold", cpu="10") if cold is None else loaded("cold", cold)
    objs = [loaded("hot", hot), cold_node, *(running(f"w{i}") for i in range(4))]
    assert first_evictions(objs, resched_config(interval="0s")) == [], why


def test_the_pods_threshold_is_the_pod_count_percentage():
    # Load is low but 6 of 10 max pods are used on hot (60% > 50%); cold has 0 pods.
    thresholds = {
        "name": "lowNodeUtilization",
        "params": {"thresholds": {"pods": 20}, "targetThresholds": {"pods": 50}},
    }
    hot = node("hot", cpu="10", pods="10", annotations={"volsched.io/usage": '{"cpu": 5, "memory": 5}'})
    cold = node("cold", cpu="10", pods="10", annotations={"volsched.io/usage": '{"cpu": 5, "memory": 5}'})
    objs = [hot, cold, *(running(f"w{i}", cpu="100m") for i in range(6))]
    assert len(first_evictions(objs, resched_config(thresholds, interval="0s"))) == 1


def test_standalone_and_critical_pods_are_never_moved():
    objs = [
        loaded("hot", 90),
        loaded("cold", 5),
        pod("bare", cpu="2", node="hot"),
        running("crit", priority_class="system-node-critical"),
        running("ok"),
    ]
    objs.append(priority_class("system-node-critical", 2000001000))
    assert first_evictions(objs, resched_config(interval="0s")) == ["default/ok"]


# --- strategies -----------------------------------------------------------------------------------------


def _started(obj: Obj, at: float) -> Obj:
    obj["status"]["startTime"] = iso(at)
    return obj


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        # Without an ordering strategy: lower priority, then name.
        (None, "default/a-low"),
        ("lowPriorityFirst", "default/a-low"),
        ("shortLifeTimeFirst", "default/c-young"),
        ("bigObjectFirst", "default/d-big"),
        ("moreReplicasFirst", "default/e-many-0"),
        ("offlineOnly", "default/b-offline"),
    ],
)
def test_each_strategy_picks_its_pod_first(strategy: str | None, expected: str):
    objs = [
        loaded("hot", 95, alloc_cpu="20"),
        loaded("cold", 5, alloc_cpu="20"),
        priority_class("low", 1),
        priority_class("high", 100),
        running("a-low", priority_class="low"),
        running(
            "b-offline", priority_class="high", annotations={"scheduling.volsched.io/preemptable": "true"}
        ),
        _started(running("c-young", priority_class="high"), EPOCH + 9_000),
        running("d-big", cpu="4", priority_class="high"),
        podgroup("many", min_member=1),
        *(running(f"e-many-{i}", owner="Job/many", group="many", priority_class="high") for i in range(3)),
    ]
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"] != "c-young":
            _started(obj, EPOCH + 1_000)
    strategies = [LOW_NODE] if strategy is None else [{"name": strategy}, LOW_NODE]
    evicted = first_evictions(objs, resched_config(*strategies, limit=1, interval="0s"))
    assert evicted == [expected]


def test_offline_only_moves_nothing_else_even_when_more_is_needed():
    objs = [
        loaded("hot", 95),
        loaded("cold", 5),
        running("on", annotations={"scheduling.volsched.io/preemptable": "true"}),
        running("off1"),
        running("off2"),
    ]
    conf = resched_config({"name": "offlineOnly"}, LOW_NODE, interval="0s")
    assert first_evictions(objs, conf) == ["default/on"]


def test_queue_and_label_selectors_narrow_the_candidates():
    objs = [
        loaded("hot", 95),
        loaded("cold", 5),
        running("a", labels={"business": "online"}),
        running("b", labels={"business": "offline"}),
    ]
    conf = resched_config(interval="0s", labelSelector={"business": "offline"})
    assert first_evictions(objs, conf) == ["default/b"]
    conf = resched_config(interval="0s", queueSelector=["batch"])
    assert first_evictions(objs, conf) == []


# --- shuffle: limit, gangs, interval, not back -------------------------------------------------------------


def test_shuffle_evicts_at_most_the_per_session_limit():
    objs = [
        loaded("hot", 100, alloc_cpu="20"),
        loaded("cold", 0, alloc_cpu="20"),
        *(running(f"w{i}") for i in range(8)),
    ]
    assert len(first_evictions(objs, resched_config(interval="0s"))) == 5  # default limit
    assert len(first_evictions(objs, resched_config(limit=2, interval="0s"))) == 2
    assert first_evictions(objs, resched_config(limit=0, interval="0s")) == []


def test_shuffle_never_takes_a_gang_below_min_member():
    objs = [
        loaded("hot", 100, alloc_cpu="20"),
        loaded("cold", 0, alloc_cpu="20"),
        podgroup("tight", min_member=3),
        *(running(f"tight-{i}", owner="Job/tight", group="tight") for i in range(3)),
        podgroup("loose", min_member=2),
        *(running(f"loose-{i}", owner="Job/loose", group="loose") for i in range(4)),
    ]
    evicted = first_evictions(objs, resched_config(interval="0s"))
    assert sorted(evicted) == ["default/loose-0", "default/loose-1"]


def test_the_plugin_answers_at_most_once_per_interval():
    # hot stays over target after each move (95 -> 75 -> 55); cold (40 cpu) stays under 20%.
    objs = [loaded("hot", 95), loaded("cold", 5, alloc_cpu="40"), *(running(f"w{i}") for i in range(4))]
    docs = [Document(f"test: document {i}", o) for i, o in enumerate(objs)]
    sim = Simulator(docs, resched_config(limit=1, interval="3s"))
    per_session = [len(sim.step()[0].evictions) for _ in range(7)]
    # The simulated clock moves one second per session.
    assert per_session == [1, 0, 0, 1, 0, 0, 1]


def test_a_moved_pod_is_not_placed_back_on_the_node_it_left():
    # binpack would put the replacement back on hot (fuller); it goes to cold instead.
    objs = [loaded("hot", 90), loaded("cold", 5, alloc_cpu="8"), *(running(f"w{i}") for i in range(4))]
    result = simulate_objects(objs, conf=resched_config(limit=1), sessions=10)
    assert [e.pod for e in result.evictions] == ["default/w0"]
    data_pods = {k: (v["spec"].get("nodeName")) for k, v in result.state.raw_pods.items()}
    assert data_pods["default/w0-moved-1"] == "cold"
    assert result.state.avoid == {"ReplicaSet/w0": ("hot",)}
    assert "node hot is overutilized (cpu 90% > target 50%)" in result.evictions[0].reason.detail


def test_the_avoided_node_is_free_again_after_the_expiry():
    objs = [loaded("hot", 90), loaded("cold", 5, alloc_cpu="8"), *(running(f"w{i}") for i in range(4))]
    docs = [Document(f"test: document {i}", o) for i, o in enumerate(objs)]
    sim = Simulator(docs, resched_config(limit=1))
    sim.step()
    assert sim.state.avoid == {"ReplicaSet/w0": ("hot",)}
    sim.clock += 601
    sim.state.snapshot(now=sim.clock)
    assert sim.state.avoid == {}


# --- arguments ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"strategies": [{"name": "lowNodeUsage"}]}, "unknown strategy 'lowNodeUsage'"),
        (
            {"strategies": [{"name": "offlineOnly"}]},
            "no strategy decides what to move (lowNodeUtilization, highNodeUtilization, ",
        ),
        ({"strategies": []}, "argument strategies: expected a non-empty list"),
        (
            {
                "strategies": [
                    {
                        "name": "lowNodeUtilization",
                        "params": {"thresholds": {"cpu": 60}, "targetThresholds": {"cpu": 50}},
                    }
                ]
            },
            "thresholds.cpu (60) is above targetThresholds.cpu (50)",
        ),
        (
            {
                "strategies": [
                    {
                        "name": "lowNodeUtilization",
                        "params": {"thresholds": {"gpu": 6}, "targetThresholds": {"cpu": 50}},
                    }
                ]
            },
            "thresholds (gpu) and targetThresholds (cpu) must name the same resources",
        ),
        ({"strategies": [LOW_NODE], "interval": "often"}, "argument interval: expected a duration >= 0"),
        ({"strategies": [LOW_NODE], "queueSelector": "default"}, "argument queueSelector: expected a list"),
        (
            {"strategies": [{"name": "offlineOnly", "params": {"x": 1}}, LOW_NODE]},
            "(offlineOnly): takes no params",
        ),
    ],
)
def test_bad_rescheduling_arguments_fail_at_load(arguments: dict[str, Any], message: str):
    assert message in rescheduling_refused(arguments, actions="allocate, shuffle")


@pytest.mark.parametrize(
    ("configurations", "message"),
    [
        (
            [{"name": "shuffle", "arguments": {"maxEvictionsPerSession": -1}}],
            "maxEvictionsPerSession: must be >= 0",
        ),
        ([{"name": "shuffle", "arguments": {"maxEvictionsPerSession": 1.5}}], "expected an integer"),
        ([{"name": "shuffle", "arguments": {"limit": 1}}], "unknown argument(s) limit"),
        ([{"name": "shufle"}], "configurations[0]: unknown action 'shufle'"),
    ],
)
def test_bad_shuffle_configuration_fails_at_load(configurations: list[Any], message: str):
    text = json.dumps(
        {
            "actions": "allocate, shuffle",
            "tiers": [{"plugins": [{"name": "gang"}]}],
            "configurations": configurations,
        }
    )
    with pytest.raises(InputError) as err:
        config(text)
    assert message in str(err.value)


def test_a_session_hands_its_carryover_back_and_leaves_the_caches_alone():
    objs = [loaded("hot", 90), loaded("cold", 5), *(running(f"w{i}") for i in range(4))]
    sim = Simulator([Document(f"test: document {i}", o) for i, o in enumerate(objs)], resched_config())
    kept = {"other": 1}
    sim.state.carryover = kept
    result, _ = sim.step()
    assert kept == {"other": 1}  # the cache's dict, untouched by the session
    assert result.carryover == {"other": 1, LAST_RUN_KEY: sim.clock}
    assert sim.state.carryover == result.carryover  # stored back by the driver
    # Shuffled pods do not come back to the node they left: the drivers record that from may_return.
    assert result.evictions and not any(e.may_return for e in result.evictions)
