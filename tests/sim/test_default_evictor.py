"""The rescheduling plugin's default evictor (through the simulator): the pods the descheduler never
evicts stay where they are whatever a strategy says, unless an option allows them; the options that
protect more, nodeFit and nodeSelector, and the per-node, per-namespace and total limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.builders import (
    Obj,
    first_evictions,
    namespace,
    node,
    pdb,
    pod,
    resched_config,
    rescheduling_refused,
)
from volsched.simulate import EPOCH, iso

#: Every pod in these tests is older than this: podLifeTime names them all.
EVERY_POD = {"name": "podLifeTime", "params": {"maxPodLifeTimeSeconds": 60}}
FAILED_PODS = {"name": "removeFailedPods"}


def owned(name: str = "p", node_name: str = "n1", **kw: Any) -> Obj:
    return pod(name, node=node_name, owner=kw.pop("owner", f"ReplicaSet/{name}"), **kw)


def with_spec(obj: Obj, **fields: Any) -> Obj:
    obj["spec"].update(fields)
    return obj


def with_meta(obj: Obj, **fields: Any) -> Obj:
    obj["metadata"].update(fields)
    return obj


def failed(obj: Obj) -> Obj:
    obj["status"] = {"phase": "Failed", "reason": "Evicted"}
    return obj


STATIC = {"kubernetes.io/config.source": "file"}
MIRRORED = {"kubernetes.io/config.mirror": "abc", **STATIC}


def mirror(*, node_owner: str = "n1", api_version: str = "v1") -> Obj:
    """The mirror of a static pod on n1 as its kubelet writes it (or with its owner changed)."""
    ref = {"apiVersion": api_version, "kind": "Node", "name": node_owner, "uid": "u", "controller": True}
    return with_meta(pod("p", node="n1", annotations=MIRRORED), ownerReferences=[ref])


def daemonset_pod() -> Obj:
    return owned(owner="DaemonSet/agent")


def local(volume: dict[str, Any]) -> Callable[[], Obj]:
    return lambda: with_spec(owned(), volumes=[{"name": "scratch", **volume}])


def started(seconds_ago: float) -> Callable[[], Obj]:
    def make() -> Obj:
        obj = owned()
        obj["status"]["startTime"] = iso(EPOCH + 10_001 - seconds_ago)
        return obj

    return make


def evicted(objs: list[Obj], *strategies: dict[str, Any], **arguments: Any) -> list[str]:
    conf = resched_config(*(strategies or [EVERY_POD]), interval="0s", limit=20, **arguments)
    return sorted(first_evictions([node("n1"), node("n2"), *objs], conf))


# Each case: the pod, the plugin's arguments, whether podLifeTime's pick is evicted.
PROTECTED: list[tuple[str, Callable[[], Obj], dict[str, Any], bool]] = [
    ("a plain ReplicaSet pod moves", owned, {}, True),
    ("a DaemonSet pod comes back on its node", daemonset_pod, {}, False),
    ("unless allowed", daemonset_pod, {"evictDaemonSetPods": True}, True),
    ("a static pod's mirror", mirror, {}, False),
    # A tenant may write the kubelet's annotations on its own pods: they exempt nothing.
    ("a tenant's pod calling itself static", lambda: owned(annotations=STATIC), {}, True),
    ("a mirror annotation without its Node", lambda: owned(annotations=MIRRORED), {}, True),
    ("a mirror naming another node", lambda: mirror(node_owner="n2"), {}, True),
    ("a mirror whose Node is no core Node", lambda: mirror(api_version="example.io/v1"), {}, True),
    ("a pod the apiserver made", lambda: owned(annotations={"kubernetes.io/config.source": "api"}), {}, True),
    ("an emptyDir is lost", local({"emptyDir": {}}), {}, False),
    ("a hostPath too", local({"hostPath": {"path": "/data"}}), {}, False),
    ("unless allowed", local({"emptyDir": {}}), {"evictLocalStoragePods": True}, True),
    ("a configMap volume is no local storage", local({"configMap": {"name": "c"}}), {}, True),
    ("system-critical by priority", lambda: with_spec(owned(), priority=2_000_000_000), {}, False),
    (
        "unless allowed",
        lambda: with_spec(owned(), priority=2_000_000_000),
        {"evictSystemCriticalPods": True},
        True,
    ),
    ("a bare pod is lost", lambda: pod("p", node="n1"), {}, False),
    ("even with evictFailedBarePods", lambda: pod("p", node="n1"), {"evictFailedBarePods": True}, False),
    ("a PVC pod moves by default", lambda: owned(claims=["data"]), {}, True),
    ("not with ignorePvcPods", lambda: owned(claims=["data"]), {"ignorePvcPods": True}, False),
    (
        "priority below the threshold",
        lambda: with_spec(owned(), priority=99),
        {"priorityThreshold": {"value": 100}},
        True,
    ),
    (
        "priority at the threshold",
        lambda: with_spec(owned(), priority=100),
        {"priorityThreshold": {"value": 100}},
        False,
    ),
    (
        "evictSystemCriticalPods drops the threshold, as the descheduler does",
        lambda: with_spec(owned(), priority=100),
        {"priorityThreshold": {"value": 100}, "evictSystemCriticalPods": True},
        True,
    ),
    ("started long enough ago", started(600), {"minPodAge": "5m"}, True),
    ("started too recently", started(60), {"minPodAge": "5m"}, False),
    ("never started", owned, {"minPodAge": "5m"}, False),
    ("no budget covers it", owned, {"ignorePodsWithoutPDB": True}, False),
    (
        "labels match",
        lambda: owned(labels={"tier": "batch"}),
        {"labelSelector": {"matchLabels": {"tier": "batch"}}},
        True,
    ),
    (
        "labels do not match",
        lambda: owned(labels={"tier": "web"}),
        {"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["batch"]}]}},
        False,
    ),
    (
        "the evict annotation overrides every protection",
        lambda: with_spec(
            owned(owner="DaemonSet/agent", annotations={"descheduler.alpha.kubernetes.io/evict": ""}),
            volumes=[{"name": "scratch", "emptyDir": {}}],
        ),
        {},
        True,
    ),
    ("on a node nodeSelector selects", owned, {"nodeSelector": "pool=batch"}, False),
    # The descheduler's newer form of the same switches.
    (
        "DaemonSetPods disabled",
        daemonset_pod,
        {"podProtections": {"defaultDisabled": ["DaemonSetPods"]}},
        True,
    ),
    (
        "PodsWithLocalStorage disabled",
        local({"emptyDir": {}}),
        {"podProtections": {"defaultDisabled": ["PodsWithLocalStorage"]}},
        True,
    ),
    (
        "other protections stay",
        local({"emptyDir": {}}),
        {"podProtections": {"defaultDisabled": ["DaemonSetPods"]}},
        False,
    ),
    (
        "PodsWithPVC enabled",
        lambda: owned(claims=["data"]),
        {"podProtections": {"extraEnabled": ["PodsWithPVC"]}},
        False,
    ),
    ("PodsWithoutPDB enabled", owned, {"podProtections": {"extraEnabled": ["PodsWithoutPDB"]}}, False),
    (
        "PodsWithResourceClaims enabled",
        lambda: with_spec(owned(), resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}]),
        {"podProtections": {"extraEnabled": ["PodsWithResourceClaims"]}},
        False,
    ),
    (
        "a pod claiming devices moves by default",
        lambda: with_spec(owned(), resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}]),
        {},
        True,
    ),
    (
        "prefer-no-eviction, Mandatory",
        lambda: owned(annotations={"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}),
        {"noEvictionPolicy": "Mandatory"},
        False,
    ),
    (
        "prefer-no-eviction, Preferred: only later",
        lambda: owned(annotations={"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}),
        {"noEvictionPolicy": "Preferred"},
        True,
    ),
]


@pytest.mark.parametrize(("why", "make", "arguments", "moves"), PROTECTED, ids=[c[0] for c in PROTECTED])
def test_the_default_evictor_protects_what_the_descheduler_protects(
    why: str, make: Callable[[], Obj], arguments: dict[str, Any], moves: bool
):
    assert evicted([make()], **arguments) == (["default/p"] if moves else []), why


def test_a_budget_covering_the_pod_lets_it_move_with_ignore_pods_without_pdb():
    objs = [owned(labels={"app": "web"}), pdb("web", {"matchLabels": {"app": "web"}}, maxUnavailable=1)]
    assert evicted(objs, ignorePodsWithoutPDB=True) == ["default/p"]


def test_namespace_label_selector_picks_the_namespaces_whose_pods_move():
    objs = [
        namespace("batch", labels={"tier": "batch"}),
        namespace("web", labels={"tier": "web"}),
        owned("a", ns="batch"),
        owned("b", ns="web"),
        owned("c"),  # default: no labels
    ]
    selector = {"matchLabels": {"tier": "batch"}}
    assert evicted(objs, namespaceLabelSelector=selector) == ["batch/a"]
    selector = {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["batch"]}]}
    assert evicted(objs, namespaceLabelSelector=selector) == ["default/c", "web/b"]


def test_prefer_no_eviction_goes_last_among_its_equals():
    annotated = owned("a", annotations={"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""})
    conf = resched_config(EVERY_POD, interval="0s", limit=20)
    assert first_evictions([node("n1"), node("n2"), annotated, owned("b")], conf) == [
        "default/b",
        "default/a",
    ]


def test_node_selector_picks_the_nodes_processed():
    objs = [node("n3", labels={"pool": "batch"}), owned("a", "n3"), owned("b", "n1")]
    assert evicted(objs, nodeSelector="pool=batch") == ["default/a"]
    assert evicted(objs, nodeSelector="pool!=batch") == ["default/b"]
    assert evicted(objs, nodeSelector="pool in (batch, web)") == ["default/a"]
    assert evicted(objs, nodeSelector="!pool") == ["default/b"]


@pytest.mark.parametrize(
    ("owner_pods", "min_replicas", "expected"),
    [(2, 3, []), (3, 3, ["default/w-0", "default/w-1", "default/w-2"]), (1, 1, ["default/w-0"])],
)
def test_min_replicas_protects_pods_of_small_owners(owner_pods: int, min_replicas: int, expected: list[str]):
    objs = [owned(f"w-{i}", owner="ReplicaSet/w") for i in range(owner_pods)]
    assert evicted(objs, minReplicas=min_replicas) == expected


@pytest.mark.parametrize(
    ("obj", "arguments", "expected"),
    [
        (failed(owned()), {}, ["default/p"]),
        (failed(pod("p", node="n1")), {}, []),  # bare: deleting it loses it
        (failed(pod("p", node="n1")), {"evictFailedBarePods": True}, ["default/p"]),
        # Already being deleted: nothing to do (the kubelet or the garbage collector is on it).
        (with_meta(failed(owned()), deletionTimestamp=iso(EPOCH + 9_000)), {}, []),
    ],
)
def test_failed_pods_bare_or_being_deleted(obj: Obj, arguments: dict[str, Any], expected: list[str]):
    assert evicted([obj], FAILED_PODS, **arguments) == expected


@pytest.mark.parametrize(
    ("other_cpu", "other_labels", "arguments", "expected"),
    [
        ("4", {}, {}, ["default/p"]),
        ("500m", {}, {}, ["default/p"]),  # without nodeFit, whether it fits elsewhere is not asked
        ("4", {}, {"nodeFit": True}, ["default/p"]),
        ("500m", {}, {"nodeFit": True}, []),  # n2 is too small for its 1 cpu
        ("4", {"pool": "web"}, {"nodeFit": True, "nodeSelector": "pool=batch"}, []),  # n2 not selected
    ],
)
def test_node_fit_asks_for_another_node_with_room(
    other_cpu: str, other_labels: dict[str, str], arguments: dict[str, Any], expected: list[str]
):
    objs = [node("n1", labels={"pool": "batch"}), node("n2", cpu=other_cpu, labels=other_labels), owned()]
    conf = resched_config(EVERY_POD, interval="0s", limit=20, **arguments)
    assert sorted(first_evictions(objs, conf)) == expected


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, 6),
        ({"maxNoOfPodsToEvictPerNode": 1}, 2),  # one from n1, one from n2
        ({"maxPodsToEvictPerNode": 2}, 4),
        ({"maxNoOfPodsToEvictPerNamespace": 1}, 2),  # one from each namespace
        ({"maxNoOfPodsToEvictTotal": 3}, 3),
        ({"maxNoOfPodsToEvictPerNode": 2, "maxNoOfPodsToEvictTotal": 3}, 3),
    ],
)
def test_limits_count_the_pods_of_one_answer(arguments: dict[str, Any], expected: int):
    objs = [
        *(owned(f"a{i}", "n1", ns="a") for i in range(2)),
        owned("b0", "n1", ns="b"),
        *(owned(f"b{i}", "n2", ns="b") for i in range(1, 4)),
    ]
    assert len(evicted(objs, **arguments)) == expected


def test_limits_span_the_strategies():
    crashing = owned("c")
    crashing["status"]["containerStatuses"] = [{"name": "main", "restartCount": 50}]
    restarts = {"name": "removePodsHavingTooManyRestarts", "params": {"podRestartThreshold": 5}}
    # podLifeTime takes the one pod n1 may give; the crashing pod on n1 waits for the next answer.
    assert evicted([owned("a"), crashing], EVERY_POD, restarts, maxNoOfPodsToEvictPerNode=1) == ["default/a"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"evictDaemonSetPods": "sometimes"}, "argument evictDaemonSetPods: expected true or false"),
        ({"nodeFit": 1}, "argument nodeFit: expected true or false"),
        ({"minReplicas": -1}, "argument minReplicas: must be >= 0"),
        ({"minReplicas": 1.5}, "argument minReplicas: expected a whole number"),
        ({"minPodAge": "soon"}, "argument minPodAge: expected a duration"),
        ({"maxNoOfPodsToEvictPerNode": "many"}, "argument maxNoOfPodsToEvictPerNode: expected a number"),
        (
            {"maxNoOfPodsToEvictPerNode": 1, "maxPodsToEvictPerNode": 2},
            "argument maxPodsToEvictPerNode: the same limit as maxNoOfPodsToEvictPerNode",
        ),
        ({"priorityThreshold": {"value": "high"}}, "argument priorityThreshold.value: expected an integer"),
        ({"priorityThreshold": {"name": "high"}}, "argument priorityThreshold.name: not supported"),
        ({"priorityThreshold": {"level": 3}}, "argument priorityThreshold: expected a map with value"),
        ({"nodeSelector": {"pool": "batch"}}, "argument nodeSelector: expected a label selector string"),
        ({"nodeSelector": "pool=batch,,x"}, "argument nodeSelector: empty requirement"),
        ({"nodeSelector": "pool=~batch"}, "argument nodeSelector: cannot read 'pool=~batch'"),
        (
            {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Is"}]}},
            "argument labelSelector.matchExpressions[0].operator",
        ),
        (
            {"labelSelector": {"matchLabels": {"a": "b"}, "tier": "c"}},
            "argument labelSelector.tier: a selector with matchLabels or matchExpressions takes nothing else",
        ),
        ({"evictLocalStoragePod": True}, "unknown argument"),
        (
            {"podProtections": {"defaultDisabled": ["PodsWithPVC"]}},
            "argument podProtections.defaultDisabled: unknown PodsWithPVC; known: PodsWithLocalStorage",
        ),
        (
            {"podProtections": {"extraEnabled": ["PodsWithPVC", "PodsWithPVC"]}},
            "argument podProtections.extraEnabled: lists a protection twice",
        ),
        (
            {"podProtections": {"extraEnabled": ["PodsWithPVC"]}, "evictDaemonSetPods": True},
            "argument podProtections: not with the older options (evictDaemonSetPods)",
        ),
        (
            {"podProtections": {"config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "x"}]}}}},
            "argument podProtections.config.PodsWithPVC.protectedStorageClasses: not supported",
        ),
        ({"podProtections": {"enabled": ["x"]}}, "argument podProtections.enabled: unknown field"),
        ({"noEvictionPolicy": "Always"}, "argument noEvictionPolicy: expected one of Preferred, Mandatory"),
        (
            {"namespaceLabelSelector": {"tier": "batch"}},
            "argument namespaceLabelSelector.tier: unknown field",
        ),
    ],
)
def test_bad_evictor_options_fail_at_load_naming_the_field(arguments: dict[str, Any], message: str):
    assert message in rescheduling_refused({"strategies": [EVERY_POD], **arguments})
