"""The first session after a backlog decides what it decided before its per-job and per-pod costs were
cut: the same binds in the same order, the same admissions, the same refusals with the same words.

Each case is a backlog with what makes the orders and limits move during the session (queues refusing
pods past their share mid-session, namespaces of different weights, priorities, gangs that fit or not, pods
that fit nowhere, PodGroups the overcommit factor holds back), scheduled by one session with the default
configuration. Its decisions are compared with a digest of the decisions the engine made at 718a746,
before the first of those cuts (and since, on purpose: the pod no node can hold, which asks its queue no
share, is admitted without the votes and told why the nodes refuse it, instead of refused by overcommit's
room; and a gang whose minMember pods its queue's capability could never hold is not voted on, told
so instead of overcommit's room; every bind, admission and phase as before). A change that is meant to change decisions changes the digest: print
``decisions(...)`` of the case before and after, and check the difference is the intended one."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest

from tests.builders import node, pod, podgroup, priority_class, queue, quota
from volsched.cache.state import ClusterState
from volsched.framework.registry import load_config
from volsched.framework.runner import run_session

Obj = dict[str, Any]


def backlog(seed: int, *, nodes: int, jobs: int) -> list[Obj]:
    rng = random.Random(seed)
    objs: list[Obj] = [priority_class("low", 1), priority_class("high", 100)]
    objs += [
        node(f"n{i:03d}", cpu=rng.choice(["4", "8", "16"]), memory=rng.choice(["16Gi", "32Gi"]))
        for i in range(nodes)
    ]
    objs += [
        queue("a", weight=1),
        queue("b", weight=2, capability={"cpu": str(nodes * 2)}),
        queue("c", weight=1, capability={"cpu": str(nodes), "memory": f"{nodes * 4}Gi"}),
        queue(
            "d", weight=3, capability={"cpu": str(nodes)}
        ),  # 1-cpu pods admitted before, placed up to its share
    ]
    objs += [quota(f"ns{k}", 1 + k % 3) for k in range(5)]
    # queue d holds all but two cpu of its capability from before: full after its first two pods
    objs += [pod(f"held-{i}", ns="ns0", queue="d", node=f"n{i % nodes:03d}") for i in range(nodes - 2)]
    for j in range(jobs):
        ns, q = f"ns{rng.randrange(5)}", rng.choice("abcd")
        prio = rng.choice([None, None, "low", "high"])
        cpu = "1" if q == "d" else rng.choice(["500m", "1", "1", "2", "3"])
        memory = None if q == "d" else rng.choice([None, "1Gi", "2Gi", "6Gi"])
        created = f"2026-01-01T00:{j // 60 % 60:02d}:{j % 60:02d}Z"
        kind = rng.random()
        if q == "d":  # admitted before: placed up to the queue's share, then refused
            objs.append(
                podgroup(f"d-{j}", ns=ns, queue=q, min_member=1, phase="Inqueue", priority_class=prio)
            )
            objs.append(pod(f"d-{j}-0", ns=ns, cpu=cpu, group=f"d-{j}", priority_class=prio, created=created))
            continue
        if kind < 0.6:  # a pod standing alone
            objs.append(
                pod(f"solo-{j}", ns=ns, cpu=cpu, memory=memory, queue=q, priority_class=prio, created=created)
            )
            continue
        size = rng.randint(2, 6)
        phase = rng.choice(["Pending", "Pending", "Inqueue"])
        min_member = size if kind < 0.9 else size + 1  # one in four gangs can never be whole
        mins = (
            {"cpu": str(rng.choice([size, size * 8]))} if phase == "Pending" and rng.random() < 0.3 else None
        )
        objs.append(
            podgroup(
                f"g-{j}", ns=ns, queue=q, min_member=min_member, phase=phase, priority_class=prio,
                min_resources=mins,
            )
        )  # fmt: skip
        objs += [
            pod(
                f"g-{j}-{i}",
                ns=ns,
                cpu=cpu,
                memory=memory,
                group=f"g-{j}",
                priority_class=prio,
                created=created,
            )
            for i in range(size)
        ]
    objs.append(pod("huge", ns="ns0", cpu="64", queue="a"))  # fits no node
    return objs


def decisions(objects: list[Obj]) -> list[Any]:
    state = ClusterState()
    for obj in objects:
        state.apply(obj)
    result = run_session(state.snapshot(now=1.0), load_config(None))
    return [
        [(b.pod, b.node) for b in result.binds],
        [(a.job, a.phase) for a in result.admits],
        sorted((key, [s.render() for s in statuses]) for key, statuses in result.rejections.items()),
        sorted((key, pg.phase) for key, pg in result.podgroups.items()),
    ]


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


@pytest.mark.parametrize(
    ("seed", "nodes", "jobs", "binds", "expected"),
    [
        pytest.param(1, 12, 300, 59, "00d123a74f69d8bf", id="small-cluster-long-backlog"),
        pytest.param(2, 40, 400, 189, "3525a7eb29c56a84", id="room-for-most"),
        pytest.param(3, 6, 120, 35, "3005b99ae926ec95", id="tight-capabilities"),
    ],
)
def test_the_first_session_after_a_backlog_decides_as_before(
    seed: int, nodes: int, jobs: int, binds: int, expected: str
) -> None:
    out = decisions(backlog(seed, nodes=nodes, jobs=jobs))
    assert len(out[0]) == binds
    assert digest(out) == expected
