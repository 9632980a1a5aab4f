"""The writer's patches of a pod's status on a real apiserver name the pod's uid: a pod made again under
its name refuses them (the uid is immutable), so neither a nominated node, nor its clearing, nor a
victim's DisruptionTarget condition lands on a pod it was not decided for (and that pod is not evicted).
``status.nominatedNodeName`` is set and cleared on the pod it was meant for, and the apiserver clears it
as it binds the pod (ClearingNominatedNodeNameAfterBinding, on by default since 1.35). A victim whose
eviction a disruption budget refused, or an admission policy, keeps running, and neither its condition
nor an event says otherwise."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import Kube, pod, wait_for
from volsched.cycle import BLOCKED, CONFLICT, FAILED
from volsched.framework.decisions import Evict, EvictionReason, SessionResult
from volsched.kube.writer import KubeWriter, WriterSettings
from volsched.model.raw import Raw

pytestmark = pytest.mark.cluster


@pytest.fixture
def writer(mk: Kube) -> Iterator[KubeWriter]:
    w = KubeWriter(mk.api, WriterSettings(workers=1))
    yield w
    w.close()


def _lingering() -> dict[str, Any]:
    """Pod c, which terminates for a while once evicted."""
    obj = pod("c")
    obj["spec"]["terminationGracePeriodSeconds"] = 30
    return obj


def _fresh(k: Kube, *, lingering: bool = False) -> tuple[str, dict[str, Any]]:
    ns = k.namespace(f"pod-status-{uuid.uuid4().hex[:6]}")
    made = k.core.create_namespaced_pod(ns, _lingering() if lingering else pod("c"))
    return ns, k.api.sanitize_for_serialization(made)


def _write(writer: KubeWriter, ns: str, nominated: dict[str, str], pods: dict[str, Raw]) -> None:
    def pods_now(keys: Iterable[str] | None) -> Mapping[str, Raw]:
        return pods if keys is None else {key: pods[key] for key in keys if key in pods}

    _, _, errors = writer.write_status(
        SessionResult(nominated=nominated), queues=[], podgroups=[], pods={}, pods_now=pods_now
    )
    assert errors == []


def _says(k: Kube, ns: str) -> str | None:
    return k.core.read_namespaced_pod_status("c", ns).status.nominated_node_name  # type: ignore[no-any-return]


def test_set_and_cleared_on_the_pod_it_was_meant_for(mk: Kube, writer: KubeWriter) -> None:
    ns, raw = _fresh(mk)
    key = f"{ns}/c"
    _write(writer, ns, {key: "n1"}, {key: raw})
    assert _says(mk, ns) == "n1"
    _write(writer, ns, {}, {key: raw})
    assert _says(mk, ns) is None


def test_a_pod_made_again_under_its_name_refuses_the_patch(mk: Kube, writer: KubeWriter) -> None:
    ns, raw = _fresh(mk)
    key = f"{ns}/c"
    mk.core.delete_namespaced_pod("c", ns, grace_period_seconds=0)
    mk.core.create_namespaced_pod(ns, pod("c"))  # another uid: the cache (raw) still has the old pod
    _write(writer, ns, {key: "n1"}, {key: raw})
    assert _says(mk, ns) is None


def test_the_apiserver_clears_it_as_it_binds_the_pod(mk: Kube, writer: KubeWriter) -> None:
    ns, raw = _fresh(mk)
    key = f"{ns}/c"
    _write(writer, ns, {key: "n1"}, {key: raw})
    assert _says(mk, ns) == "n1"
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="c"), target=client.V1ObjectReference(kind="Node", name="n2")
    )
    mk.core.create_namespaced_binding(ns, binding, _preload_content=False)
    bound = mk.core.read_namespaced_pod("c", ns)
    assert (bound.spec.node_name, bound.status.nominated_node_name) == ("n2", None)


def test_a_victim_made_again_under_its_name_is_not_marked_nor_evicted(mk: Kube, writer: KubeWriter) -> None:
    ns, raw = _fresh(mk, lingering=True)  # (one the eviction deletes at once gets no condition)
    mk.core.delete_namespaced_pod("c", ns, grace_period_seconds=0)
    mk.core.create_namespaced_pod(ns, _lingering())  # a StatefulSet's way: the cache has the old pod
    eviction = Evict(
        pod=f"{ns}/c", uid=raw["metadata"]["uid"], node="n1", reason=EvictionReason(action="preempt")
    )
    assert writer.evict(eviction, raw).result == CONFLICT
    again = mk.core.read_namespaced_pod("c", ns)
    assert again.metadata.deletion_timestamp is None
    assert not [c for c in again.status.conditions or [] if c.type == "DisruptionTarget"]


def test_a_victim_whose_eviction_a_budget_refused_is_not_left_marked_nor_said_preempted(
    mk: Kube, writer: KubeWriter
) -> None:
    ns, raw = _fresh(mk, lingering=True)
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="c"), target=client.V1ObjectReference(kind="Node", name="n1")
    )
    mk.core.create_namespaced_binding(ns, binding, _preload_content=False)
    mk.core.patch_namespaced_pod_status(
        "c", ns, {"status": {"phase": "Running"}}
    )  # (a pending one has no budget)
    budget = client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name="keep"),
        spec=client.V1PodDisruptionBudgetSpec(max_unavailable=0, selector=client.V1LabelSelector()),
    )
    client.PolicyV1Api(mk.api).create_namespaced_pod_disruption_budget(ns, budget)
    eviction = Evict(
        pod=f"{ns}/c", uid=raw["metadata"]["uid"], node="n1", reason=EvictionReason(action="preempt")
    )
    outcome = writer.evict(eviction, raw)
    assert outcome.result == BLOCKED, outcome.detail
    still = mk.core.read_namespaced_pod("c", ns)
    assert still.metadata.deletion_timestamp is None
    [target] = [c for c in still.status.conditions or [] if c.type == "DisruptionTarget"]
    assert (target.status, target.reason) == ("False", "NotEvicted")
    assert target.message.startswith("not evicted (Cannot evict pod as it would violate"), target.message
    assert f"preempt: {ns}/c " in target.message  # what it was told before
    events = mk.core.list_namespaced_event(ns).items
    assert [e.reason for e in events if e.involved_object.name == "c"] == []


def _no_evictions_in(mk: Kube, ns: str) -> None:
    """A ValidatingAdmissionPolicy that refuses every eviction in ``ns`` (as a policy engine freezing a
    namespace would): the Eviction API answers 422, no budget involved. Waits until it is in force."""
    adm = client.AdmissionregistrationV1Api(mk.api)
    adm.create_validating_admission_policy(
        {
            "metadata": {"name": f"no-evictions-{ns}"},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["pods/eviction"],
                        }
                    ]
                },
                "validations": [{"expression": "false", "message": "evictions are frozen here"}],
            },
        }
    )
    adm.create_validating_admission_policy_binding(
        {
            "metadata": {"name": f"no-evictions-{ns}"},
            "spec": {
                "policyName": f"no-evictions-{ns}",
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}},
            },
        }
    )

    def refused() -> bool:
        dry = client.V1Eviction(
            metadata=client.V1ObjectMeta(name="c", namespace=ns),
            delete_options=client.V1DeleteOptions(dry_run=["All"]),
        )
        try:
            mk.core.create_namespaced_pod_eviction("c", ns, dry)
        except client.ApiException as exc:
            return "evictions are frozen here" in str(exc.body)
        return False

    wait_for(refused, 30, what="the policy refusing evictions")


def test_a_victim_whose_eviction_failed_otherwise_is_not_left_marked(mk: Kube, writer: KubeWriter) -> None:
    """An eviction refused otherwise than by a budget (here an admission policy's 422) did not happen:
    the pod, read back still there and marked, is set back to False saying why (before: left marked
    until the disruption controller cleared it, minutes later; note13 Found 8)."""
    ns, raw = _fresh(mk, lingering=True)
    _no_evictions_in(mk, ns)
    eviction = Evict(
        pod=f"{ns}/c", uid=raw["metadata"]["uid"], node="n1", reason=EvictionReason(action="preempt")
    )
    outcome = writer.evict(eviction, raw)
    assert outcome.result == FAILED and outcome.detail.startswith("422: "), outcome.detail
    still = mk.core.read_namespaced_pod("c", ns)
    assert still.metadata.deletion_timestamp is None
    [target] = [c for c in still.status.conditions or [] if c.type == "DisruptionTarget"]
    assert (target.status, target.reason) == ("False", "NotEvicted")
    assert target.message.startswith("not evicted (422: "), target.message
    assert "evictions are frozen here" in target.message
    assert f"preempt: {ns}/c " in target.message  # what it was told before
    events = mk.core.list_namespaced_event(ns).items
    assert [e.reason for e in events if e.involved_object.name == "c"] == []
