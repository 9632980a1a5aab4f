"""The operator on a real apiserver honours pod anti-affinity, topology spread, volume node affinity and
PodGroup topology."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.e2e.operator_fixtures import Kube, Start, node, pod, podgroup, wait_for

pytestmark = pytest.mark.cluster

ZONE = "topology.kubernetes.io/zone"


def labelled(obj: dict[str, Any], labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    obj["metadata"]["labels"] = labels
    obj["spec"].update(spec)
    return obj


def test_anti_affinity_spread_and_gang_topology_on_a_real_apiserver(k: Kube, start_operator: Start) -> None:
    zones = {"n-a1": "a", "n-a2": "a", "n-b1": "b", "n-b2": "b"}
    k.nodes(*(node(name, cpu="8", labels={ZONE: z}) for name, z in zones.items()))
    ns = k.namespace("constraints")
    one_per_node = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "worker"}}}
            ]
        }
    }
    k.pods(
        ns,
        *(labelled(pod(f"worker-{i}", "100m"), {"app": "worker"}, affinity=one_per_node) for i in range(5)),
    )
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    k.pods(
        ns,
        *(
            labelled(pod(f"web-{i}", "100m"), {"app": "web"}, topologySpreadConstraints=spread)
            for i in range(4)
        ),
    )
    # A gang that must share one zone: the apiserver's CRD schema takes spec.topology.
    gang = podgroup("rack", 2)
    gang["spec"]["topology"] = {"key": ZONE, "mode": "Required"}
    k.podgroup(ns, gang)
    k.pods(ns, *(pod(f"rack-{i}", "3", group="rack") for i in range(2)))
    # A pod on a claim bound to a local volume that only n-b2 reaches (pre-bound: no volume controller).
    k.core.create_persistent_volume(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "local-b2"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "local": {"path": "/mnt/data"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n-b2"]}
                                ]
                            }
                        ]
                    }
                },
            },
        }
    )
    k.core.create_namespaced_persistent_volume_claim(
        ns,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "volumeName": "local-b2",
                "storageClassName": "",
            },
        },
    )
    db = pod("db", "100m")
    db["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    k.pods(ns, db)
    start_operator()

    bound = wait_for(lambda: len(k.bound(ns)) == 11 and k.bound(ns), 40, what="eleven pods bound")
    assert bound[f"{ns}/db"] == "n-b2"
    workers = [n for p, n in bound.items() if "/worker-" in p]
    assert len(workers) == 4 and len(set(workers)) == 4  # one per node; the fifth waits
    assert Counter(zones[n] for p, n in bound.items() if "/web-" in p) == {"a": 2, "b": 2}
    assert len({zones[n] for p, n in bound.items() if "/rack-" in p}) == 1
    assert k.get_podgroup(ns, "rack")["spec"]["topology"] == {"key": ZONE, "mode": "Required"}

    def why_pending() -> str | None:
        pending = [p for p, n in k.placements(ns).items() if n is None]
        if len(pending) != 1:
            return None
        name = pending[0].split("/", 1)[1]
        events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == name]
        return events[0].message if events else None

    message = wait_for(why_pending, 30, what="a FailedScheduling event for the fifth worker")
    assert message == "0/4 nodes fit: 4 pod anti-affinity (app=worker, kubernetes.io/hostname)"
