"""Pruning a Pod or a Node as it arrives from the API: the scheduler reads the same from what is kept as
from the whole object, and what it never reads (managedFields, env, probes, conditions...) is gone."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import numpy as np
import pytest

from volsched.kube.prune import LAST_APPLIED, prune_node, prune_pod
from volsched.model.decode import build_node, build_task
from volsched.model.errors import InputError

MANAGED = [
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:containers": {}}},
    }
]


def full_pod(*, node: str | None = "n1") -> dict[str, Any]:
    """A pod as the apiserver returns it, with every scheduling feature the model reads."""
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "web-7d9c-abcde",
            "generateName": "web-7d9c-",
            "namespace": "team-a",
            "uid": "0b5f-uid",
            "resourceVersion": "4242",
            "creationTimestamp": "2026-11-22T10:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d9c"},
            "annotations": {
                "scheduling.volsched.io/queue-name": "q1",
                "scheduling.k8s.io/group-name": "web",
                LAST_APPLIED: json.dumps({"kind": "Pod", "spec": {"containers": [{"name": "x" * 500}]}}),
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-7d9c",
                    "uid": "rs",
                    "controller": True,
                }
            ],
            "managedFields": MANAGED,
        },
        "spec": {
            "schedulerName": "volsched",
            "priorityClassName": "high",
            "priority": 1000,
            "preemptionPolicy": "Never",
            "nodeName": node,
            "nodeSelector": {"disk": "ssd"},
            "overhead": {"cpu": "100m"},
            "resources": {"requests": {"cpu": "3"}, "limits": {"memory": "1Gi"}},  # pod-level
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": term}],
                },
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                },
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ],
            "initContainers": [
                {
                    "name": "init",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "2"}},
                    "command": ["x"],
                },
                {
                    "name": "sidecar",
                    "image": "envoy",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"memory": "64Mi"}},
                },
            ],
            "containers": [
                {
                    "name": "main",
                    "image": "nginx:1.27",
                    "resources": {
                        "requests": {"cpu": "500m", "memory": "256Mi"},
                        "limits": {"nvidia.com/gpu": "1"},
                    },
                    "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}],
                    "env": [{"name": f"VAR_{i}", "value": "v" * 40} for i in range(20)],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "livenessProbe": {"httpGet": {"path": "/", "port": 80}},
                    "terminationMessagePath": "/dev/termination-log",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
                {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi", "medium": "Memory"}},
                {
                    "name": "kube-api-access",
                    "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
                },
            ],
            "serviceAccountName": "default",
            "dnsPolicy": "ClusterFirst",
            "securityContext": {},
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-11-22T10:00:05Z",
            "hostIP": "10.0.0.1",
            "podIPs": [{"ip": "10.1.0.5"}],
            "qosClass": "Burstable",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-22T10:00:09Z"}],
            "containerStatuses": [
                {
                    "name": "main",
                    "restartCount": 2,
                    "image": "nginx:1.27",
                    "imageID": "sha256:abc",
                    "containerID": "containerd://abc",
                    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
                    "lastState": {"terminated": {"reason": "Error", "exitCode": 1}},
                }
            ],
            "initContainerStatuses": [
                {
                    "name": "init",
                    "restartCount": 1,
                    "state": {"terminated": {"reason": "Completed", "exitCode": 3, "message": "done"}},
                }
            ],
            "ephemeralContainerStatuses": [
                {"name": "debug", "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}
            ],
        },
    }


def full_node() -> dict[str, Any]:
    res = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "2"}
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": "n1",
            "uid": "node-uid",
            "resourceVersion": "77",
            "labels": {"kubernetes.io/hostname": "n1", "zone": "a"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            "managedFields": MANAGED,
        },
        "spec": {
            "taints": [{"key": "gpu", "effect": "NoSchedule"}],
            "unschedulable": False,
            "podCIDR": "10.1.0.0/24",
        },
        "status": {
            "capacity": res,
            "allocatable": res,
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "Hostname", "address": "n1"},
            ],
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "PLEG"},
            ],
            "images": [
                {"names": [f"registry/image-{i}@sha256:{'0' * 64}"], "sizeBytes": 1} for i in range(50)
            ],
            "nodeInfo": {"kubeletVersion": "v1.35.4"},
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


def _differences(a: Any, b: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(a) if not _same(getattr(a, f.name), getattr(b, f.name))]


PCS = {"high": 1000}


@pytest.mark.parametrize("node", ["n1", None], ids=["bound", "pending"])
def test_a_pruned_pod_reads_as_the_whole_pod_but_the_last_applied_annotation(node: str | None) -> None:
    whole = full_pod(node=node)
    task, pruned = build_task(whole, priority_classes=PCS), build_task(prune_pod(whole), priority_classes=PCS)
    assert _differences(task, pruned) == ["annotations"]
    assert pruned.annotations == {k: v for k, v in task.annotations.items() if k != LAST_APPLIED}
    assert pruned.runtime.container_reasons == ("CrashLoopBackOff",)  # the kubelet's reasons are kept
    assert pruned.claims == ("data-0",) and pruned.host_ports == (("TCP", 8080, "0.0.0.0"),)


# No Ready condition: not ready, as Kubernetes' IsPodReady (the disruption controller, the Eviction API).
@pytest.mark.parametrize(("ready", "unready"), [("True", False), ("False", True), (None, True)])
def test_a_pruned_pod_keeps_whether_it_is_ready(ready: str | None, unready: bool) -> None:
    whole = full_pod()
    whole["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}] + (
        [{"type": "Ready", "status": ready, "reason": "ContainersNotReady"}] if ready else []
    )
    assert build_task(prune_pod(whole), priority_classes=PCS).runtime.unready is unready
    assert build_task(whole, priority_classes=PCS).runtime.unready is unready


def test_a_pruned_node_reads_as_the_whole_node() -> None:
    whole = full_node()
    assert build_node(prune_node(whole)) == build_node(whole)
    assert build_node(prune_node(whole)).ready is False


def test_a_pods_inline_volumes_of_in_tree_plugins_migrated_to_csi_are_kept_by_their_id() -> None:
    """Attach limits count them (as kube-scheduler counts them, as their CSI driver's): the listing keeps
    each with the field naming its volume, and nothing else of it."""
    whole = full_pod()
    whole["spec"]["volumes"] += [
        {"name": "ebs", "awsElasticBlockStore": {"volumeID": "aws://eu-west-1a/vol-1", "fsType": "ext4"}},
        {"name": "pd", "gcePersistentDisk": {"pdName": "disk-1", "partition": 1, "readOnly": True}},
        {"name": "az", "azureDisk": {"diskName": "d", "diskURI": "/subs/x/d", "cachingMode": "None"}},
        {"name": "os", "cinder": {"volumeID": "c-1", "secretRef": {"name": "s"}}},
        {"name": "px", "portworxVolume": {"volumeID": "px-1", "fsType": "ext4"}},
        {"name": "nfs", "nfs": {"server": "s", "path": "/"}},
    ]
    assert prune_pod(whole)["spec"]["volumes"][2:] == [
        {"name": "ebs", "awsElasticBlockStore": {"volumeID": "aws://eu-west-1a/vol-1"}},
        {"name": "pd", "gcePersistentDisk": {"pdName": "disk-1"}},
        {"name": "az", "azureDisk": {"diskURI": "/subs/x/d"}},
        {"name": "os", "cinder": {"volumeID": "c-1"}},
        {"name": "px", "portworxVolume": {"volumeID": "px-1"}},
    ]


def test_what_the_scheduler_never_reads_is_gone_and_the_original_is_untouched() -> None:
    whole = full_pod()
    before = copy.deepcopy(whole)
    pruned = prune_pod(whole)
    assert whole == before
    assert "managedFields" not in pruned["metadata"] and "generateName" not in pruned["metadata"]
    assert set(pruned["spec"]["containers"][0]) == {"name", "image", "resources", "ports"}
    # Claims, and which volumes are node-local (what they hold is not read).
    assert pruned["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
        {"name": "scratch", "emptyDir": {}},
    ]
    assert set(pruned["status"]) == {
        "phase",
        "startTime",
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
        "conditions",
        "qosClass",
    }
    assert pruned["status"]["initContainerStatuses"][0]["state"] == {
        "terminated": {"reason": "Completed", "exitCode": 3}
    }
    assert pruned["status"]["conditions"] == [{"type": "Ready", "status": "True"}]  # what budgets count
    assert len(json.dumps(pruned)) < len(json.dumps(whole)) / 2
    node = prune_node(full_node())
    assert "images" not in node["status"] and "nodeInfo" not in node["status"]
    assert node["status"]["conditions"] == [{"type": "Ready", "status": "False"}]


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "containers"), "not a list"),
        (("spec", "containers"), [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]),
        (("spec", "tolerations"), {"not": "a list"}),
        (("spec",), "not a map"),
        (("metadata",), None),
    ],
)
def test_a_malformed_pod_is_still_refused_after_pruning(path: tuple[str, ...], value: Any) -> None:
    raw = full_pod()
    target = raw
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(InputError) as whole:
        build_task(raw, priority_classes=PCS)
    with pytest.raises(InputError) as pruned:
        build_task(prune_pod(raw), priority_classes=PCS)
    assert str(pruned.value) == str(whole.value)


def test_a_malformed_node_is_still_refused_after_pruning() -> None:
    raw = full_node()
    raw["spec"]["taints"] = [{"key": "gpu", "effect": "Sometimes"}]
    with pytest.raises(InputError) as whole:
        build_node(raw)
    with pytest.raises(InputError) as pruned:
        build_node(prune_node(raw))
    assert str(pruned.value) == str(whole.value)


@pytest.mark.parametrize("pending", [None, "Deferred", "Infeasible"])
def test_a_pruned_pod_being_resized_holds_what_the_whole_pod_holds(pending: str | None) -> None:
    """What the kubelet allocated and actuated is kept where it differs from the spec (all of it while the
    resize is Infeasible, and the condition saying so): the pod reads as the whole pod."""
    whole = full_pod()
    main = whole["status"]["containerStatuses"][0]
    main["allocatedResources"] = {"cpu": "500m", "memory": "512Mi", "nvidia.com/gpu": "1"}
    main["resources"] = {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"nvidia.com/gpu": "1"}}
    if pending:
        whole["status"]["conditions"].append(
            {"type": "PodResizePending", "status": "True", "reason": pending, "message": "m"}
        )
    pruned = prune_pod(whole)
    task = build_task(pruned, priority_classes=PCS)
    assert task.request_map == build_task(whole, priority_classes=PCS).request_map
    # The sidecar's 64Mi and the main container's 512Mi the kubelet allocated (its spec now asks 256Mi);
    # once Infeasible the specs count no more, and the sidecar reports nothing (as in Kubernetes).
    assert task.request_map["memory"] == (512 if pending == "Infeasible" else 576) * 2**20
    kept = pruned["status"]["containerStatuses"][0]
    assert kept["allocatedResources"] == main["allocatedResources"]
    if pending == "Infeasible":
        assert kept["resources"] == {"requests": main["resources"]["requests"]}  # no limits
    else:
        assert "resources" not in kept  # as the spec asks: nothing to keep
    conditions = pruned["status"]["conditions"]
    assert conditions[1:] == ([{"type": "PodResizePending", "reason": pending}] if pending else [])
