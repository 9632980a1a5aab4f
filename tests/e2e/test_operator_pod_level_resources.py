"""Pod-level resources through the operator on a real kube-apiserver 1.37: ``spec.resources`` (what the
pod asks as a whole, its containers asking nothing) is kept as the pod arrives and is its request, so
two pods of cpu 3 each do not share a node of 4; the second waits, told why on its events. Before, the
field was dropped as the pod arrived and both were bound to the node."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from tests.e2e.operator_fixtures import Kube, Start, node, pod, wait_for

pytestmark = pytest.mark.cluster


def _pod_level(name: str) -> dict[str, object]:
    out = pod(name)
    out["spec"]["containers"][0].pop("resources")
    out["spec"]["resources"] = {"requests": {"cpu": "3", "memory": "128Mi"}}
    return out


def test_pods_asking_at_pod_level_do_not_share_a_node_they_do_not_fit(k: Kube, start_operator: Start) -> None:
    k.nodes(node("n1", cpu="4"))
    ns = k.namespace("pod-level")
    k.pods(ns, _pod_level("a"), _pod_level("b"))
    stored = k.core.read_namespaced_pod("a", ns).spec.resources
    assert stored is not None and stored.requests["cpu"] == "3"  # the apiserver keeps the field
    start_operator()

    wait_for(lambda: len(k.bound(ns)) == 1, 40, what="one pod bound")

    def told() -> str | None:
        [waiting] = [p.split("/", 1)[1] for p, n in k.placements(ns).items() if n is None]
        events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == waiting]
        return events[0].message if events else None

    message = wait_for(told, 30, what="why the second pod waits, on its events")
    assert "cpu 3" in message or "needs 3" in message, message  # (held at admission, or at placement)
    assert len(k.bound(ns)) == 1


def test_claims_at_pod_level_never_reach_the_operator(k: Kube) -> None:
    """The apiserver refuses ``spec.resources.claims`` (a claim is named in the container that uses it): only
    hand-written input to the simulator can carry them, and the decoder refuses them there, naming them."""
    ns = k.namespace("pod-level-claims")
    p = _pod_level("c")
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu"}]
    p["spec"]["resources"]["claims"] = [{"name": "gpu"}]
    with pytest.raises(ApiException) as refused:
        k.core.create_namespaced_pod(ns, p)
    assert refused.value.status == 422 and "claims" in str(refused.value.body)
