"""Pod-level resources (``spec.resources``, on by default since Kubernetes 1.34): the cpu and memory
(and hugepages) a pod asks as a whole stand for its containers' sum, as Kubernetes' PodRequests reads
them, plus ``spec.overhead``; a pod-level limit stands in for a request no container makes, as the
apiserver defaults it. volsched read the containers only: two pods asking cpu 3 each at pod level, their
containers nothing, both went to a node of 4 cpu (the kubelet then refuses one, OutOfcpu). A resource the
apiserver takes at pod level for no other is refused, never dropped."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import Obj, node, pod, run
from volsched.model.decode import pod_request
from volsched.model.errors import InputError


def _pod(name: str, resources: dict[str, Any], *, cpu: str | None = None, **spec: Any) -> Obj:
    out = pod(name, cpu=cpu)
    out["spec"]["resources"] = resources
    out["spec"].update(spec)
    return out


def test_pods_asking_at_pod_level_do_not_go_past_a_nodes_allocatable() -> None:
    data = run([node("n1", cpu="4"), *(_pod(f"p{i}", {"requests": {"cpu": "3"}}) for i in range(2))])
    assert sorted(p["node"] or "" for p in data["pods"].values()) == ["", "n1"]
    assert data["queues"]["default"]["allocated"]["cpu"] == 3


@pytest.mark.parametrize(
    ("resources", "spec", "cpu", "memory"),
    [
        # The pod-level request stands for the containers' sum (the container asks 1, the pod 3).
        ({"requests": {"cpu": "3"}}, {}, 3.0, 0.0),
        # A pod-level limit is the request of a resource no container asks (the apiserver's defaulting).
        ({"limits": {"cpu": "2", "memory": "1Gi"}}, {"containers": [{"name": "c"}]}, 2.0, 2.0**30),
        # ... but not of one a container asks: that container's request stands.
        ({"limits": {"cpu": "2"}}, {}, 1.0, 0.0),
        # Overhead is added to the pod-level request.
        ({"requests": {"cpu": "3"}}, {"overhead": {"cpu": "250m"}}, 3.25, 0.0),
    ],
    ids=["request", "limit-for-none-asked", "limit-beside-a-container-request", "overhead"],
)
def test_the_pods_request_is_kubernetes_pod_requests(
    resources: dict[str, Any], spec: dict[str, Any], cpu: float, memory: float
) -> None:
    obj = _pod("p", resources, cpu="1", **spec)
    request = pod_request(obj, where="Pod default/p")
    assert (request.get("cpu", 0.0), request.get("memory", 0.0)) == (cpu, memory)


def test_a_resource_not_taken_at_pod_level_is_refused_naming_it() -> None:
    obj = _pod("p", {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}})
    with pytest.raises(InputError, match=r"spec\.resources\.requests: nvidia\.com/gpu is not a pod-level"):
        pod_request(obj, where="Pod default/p")


def test_claims_at_pod_level_are_refused_naming_them() -> None:
    """The apiserver refuses ``spec.resources.claims`` (claims are named per container); hand-written input
    to the simulator had them dropped silently (the defect), as if the pod asked no device."""
    obj = _pod("p", {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]})
    with pytest.raises(InputError, match=r"spec\.resources\.claims: .*container"):
        pod_request(obj, where="Pod default/p")
