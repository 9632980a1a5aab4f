"""A pod's request and a node's allocatable are counted as Kubernetes counts them: cpu in whole
millicores and anything else in whole units, the pod's total rounded up (resource.Quantity's MilliValue
and Value, which kube-scheduler's fit and the kubelet's admission read). volsched counted the decimals:
three pods asking cpu 0.5m (or 100u) went to a node of 2m, where Kubernetes counts each as 1m, so two
fit and the kubelet refuses the third (OutOfcpu). What is already whole is left as it is."""

from __future__ import annotations

import pytest

from tests.builders import Obj, node, pod, run
from volsched.model.decode import build_node, pod_request


def _pod(name: str, cpu: str, memory: str | None = None) -> Obj:
    return pod(name, cpu=cpu, memory=memory)


def test_pods_asking_less_than_a_millicore_fill_a_node_as_kubernetes_counts_them() -> None:
    data = run([node("n1", cpu="2m"), _pod("a", "0.5m"), _pod("b", "0.5m"), _pod("c", "100u")])
    assert sum(1 for p in data["pods"].values() if p["node"]) == 2


@pytest.mark.parametrize(
    ("cpus", "memory", "expected"),
    [
        (["0.5m", "0.5m"], None, (0.001, 0.0)),  # the pod's total, rounded up: 1m, not 2m
        (["0.0001m"], "1500m", (0.001, 2.0)),  # 1.5 bytes count 2
        (["100m", "200m"], "1Gi", (0.3, 2.0**30)),  # whole already: as they were (0.1 + 0.2 is not 0.3)
        (["3"], "0.5Gi", (3.0, 2.0**29)),
    ],
)
def test_a_pods_request_is_counted_in_whole_millicores_and_units(
    cpus: list[str], memory: str | None, expected: tuple[float, float]
) -> None:
    obj = _pod("p", cpus[0], memory)
    obj["spec"]["containers"] += [
        {"name": f"c{i}", "resources": {"requests": {"cpu": c}}} for i, c in enumerate(cpus[1:])
    ]
    request = pod_request(obj, where="Pod default/p")
    assert (request["cpu"], request.get("memory", 0.0)) == expected


def test_a_nodes_allocatable_is_counted_so_too() -> None:
    n = node("n1", cpu="1.5m", memory="1.5")
    assert build_node(n).allocatable["cpu"] == 0.002 and build_node(n).allocatable["memory"] == 2.0
