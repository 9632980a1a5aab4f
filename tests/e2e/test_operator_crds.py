"""The CRDs' OpenAPI schemas reject bad Queues and PodGroups and fill in defaults (real apiserver)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.e2e.operator_fixtures import GROUP, VERSION, Kube, podgroup, queue

pytestmark = pytest.mark.cluster


def _rejected(fn: Any, *args: Any) -> str:
    with pytest.raises(ApiException) as info:
        fn(*args)
    assert info.value.status == 422, info.value.body
    return str(info.value.body)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"weight": 0}, "spec.weight"),
        ({"weight": -3}, "spec.weight"),
        ({"weight": "heavy"}, "spec.weight"),
        ({"state": "Paused"}, "spec.state"),
        ({"reclaimable": "maybe"}, "spec.reclaimable"),
        ({"capability": {"cpu": "lots"}}, "spec.capability"),
        ({"capability": "4 cpus"}, "spec.capability"),
        ({"weight": 2147483648}, "spec.weight"),
        ({"parent": 7}, "spec.parent"),
        (
            {"capability": {"cpu": "4", "memory": "8Gi"}, "guarantee": {"resource": {"cpu": "4500m"}}},
            "spec.guarantee.resource",
        ),
        (
            {"capability": {"memory": "8Gi"}, "guarantee": {"resource": {"memory": 9 * 2**30}}},
            "spec.guarantee",
        ),
        ({"guarantee": {"resource": {"cpu": "101%"}}}, "spec.guarantee.resource.cpu"),
        ({"guarantee": {"resource": {"cpu": "-5%"}}}, "spec.guarantee.resource.cpu"),
        ({"guarantee": {"resource": {"memory": "lots%"}}}, "spec.guarantee.resource.memory"),
    ],
)
def test_bad_queue_is_rejected(mk: Kube, spec: dict[str, Any], field: str) -> None:
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", "metadata": {"name": "bad"}, "spec": spec}
    message = _rejected(mk.custom.create_cluster_custom_object, GROUP, VERSION, "queues", body)
    assert field in message


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"minMember": 0}, "spec.minMember"),
        ({"minMember": "three"}, "spec.minMember"),
        ({"minMember": 1.5}, "spec.minMember"),
        ({"queue": 7}, "spec.queue"),
        ({"queue": ""}, "spec.queue"),
        ({"minResources": {"memory": "a lot"}}, "spec.minResources"),
    ],
)
def test_bad_podgroup_is_rejected(mk: Kube, spec: dict[str, Any], field: str) -> None:
    ns = mk.namespace("crd-bad")
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup", "metadata": {"name": "bad"}, "spec": spec}
    message = _rejected(mk.custom.create_namespaced_custom_object, GROUP, VERSION, ns, "podgroups", body)
    assert field in message


def test_a_guarantee_above_capability_is_refused_by_the_validation_rule(mk: Kube) -> None:
    body = queue("over", 1, capability={"nvidia.com/gpu": 2}, guarantee={"resource": {"nvidia.com/gpu": "3"}})
    message = _rejected(mk.custom.create_cluster_custom_object, GROUP, VERSION, "queues", body)
    assert "a guarantee must not exceed the queue's capability" in message


@pytest.mark.parametrize(
    "spec",
    [
        {"weight": 2147483647},
        {"parent": "area", "weight": 1},
        {"capability": {"cpu": "4"}, "guarantee": {"resource": {"cpu": "4", "memory": "1Gi"}}},
        {"capability": {"cpu": 4}, "guarantee": {"resource": {"cpu": "3500m"}}},
    ],
    ids=["int32-max-weight", "parent", "guarantee-equal-to-capability", "guarantee-below-capability"],
)
def test_good_queue_edge_cases_are_accepted(mk: Kube, spec: dict[str, Any]) -> None:
    name = f"ok-{abs(hash(repr(spec))) % 10**8}"
    created = mk.queue(
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", "metadata": {"name": name}, "spec": spec}
    )
    for key, value in spec.items():
        assert created["spec"][key] == value


def test_missing_spec_is_rejected(mk: Kube) -> None:
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", "metadata": {"name": "nospec"}}
    assert "spec" in _rejected(mk.custom.create_cluster_custom_object, GROUP, VERSION, "queues", body)


def test_defaults_are_filled_in(mk: Kube) -> None:
    q = mk.queue(
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Queue", "metadata": {"name": "plain"}, "spec": {}}
    )
    assert q["spec"] == {
        "weight": 1,
        "reclaimable": True,
        "state": "Open",
        "priority": 0,
        "allowNotPreemptable": False,
    }
    ns = mk.namespace("crd-defaults")
    pg = mk.podgroup(
        ns, {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup", "metadata": {"name": "pg"}, "spec": {}}
    )
    assert pg["spec"] == {"minMember": 1, "queue": "default"}


def test_quantities_accept_ints_and_strings(mk: Kube) -> None:
    q = mk.queue(
        queue("capped", 2, capability={"cpu": 8, "memory": "16Gi"}, guarantee={"resource": {"cpu": "500m"}})
    )
    assert q["spec"]["capability"] == {"cpu": 8, "memory": "16Gi"}


def test_guarantees_accept_percentages_of_the_cluster(mk: Kube) -> None:
    resource = {"cpu": "25%", "memory": "12.5%", "nvidia.com/gpu": "100%", "pods": 3}
    q = mk.queue(queue("pct", 1, guarantee={"resource": resource}))
    assert q["spec"]["guarantee"]["resource"] == resource


def test_status_is_a_subresource_with_printer_columns(mk: Kube) -> None:
    from kubernetes import client

    ns = mk.namespace("crd-status")
    created = mk.podgroup(ns, podgroup("pg", 2))
    created["status"] = {"phase": "Running"}
    mk.custom.replace_namespaced_custom_object(GROUP, VERSION, ns, "podgroups", "pg", created)
    assert "status" not in mk.get_podgroup(ns, "pg")  # only /status writes status
    ext = client.ApiextensionsV1Api(mk.api)
    columns = {
        name: [
            c.name
            for c in ext.read_custom_resource_definition(name).spec.versions[0].additional_printer_columns
        ]
        for name in ("queues.scheduling.volsched.io", "podgroups.scheduling.volsched.io")
    }
    assert {"Parent", "Weight", "State", "Deserved", "Allocated", "Pending PodGroups", "Share"} <= set(
        columns["queues.scheduling.volsched.io"]
    )
    assert {"Phase", "MinMember", "Scheduled", "Running", "Queue"} <= set(
        columns["podgroups.scheduling.volsched.io"]
    )
    crd = ext.read_custom_resource_definition("queues.scheduling.volsched.io")
    assert "q" in crd.spec.names.short_names
    assert (
        "pg" in ext.read_custom_resource_definition("podgroups.scheduling.volsched.io").spec.names.short_names
    )
