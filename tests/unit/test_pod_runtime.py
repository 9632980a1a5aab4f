"""What a pod's status says beyond its phase (restarts, reasons, images, owner kinds): read for the
rescheduling strategies, never an error when the kubelet's status is odd."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import pod
from volsched.model.decode import build_task, pod_runtime
from volsched.model.vocabulary import EMPTY_RUNTIME, PodRuntime


def _with_status(status: dict[str, Any], **kw: Any) -> dict[str, Any]:
    out = pod("p", node="n1", **kw)
    out["status"] = {"phase": "Running", **status}
    return out


def test_restarts_are_summed_over_containers_and_init_containers_apart():
    raw = _with_status(
        {
            "containerStatuses": [{"restartCount": 3}, {"restartCount": 4}],
            "initContainerStatuses": [{"restartCount": 2}],
        }
    )
    rt = build_task(raw, priority_classes={}).runtime
    assert (rt.restarts, rt.init_restarts) == (7, 2)


def test_reasons_come_from_the_pod_and_from_waiting_or_terminated_containers():
    raw = _with_status(
        {
            "phase": "Failed",
            "reason": "NodeAffinity",
            "containerStatuses": [
                {"state": {"waiting": {"reason": "CrashLoopBackOff"}}},
                {"state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}},
            ],
            "initContainerStatuses": [{"state": {"terminated": {"reason": "Error"}}}],
        }
    )
    rt = pod_runtime(raw)
    assert rt.reason == "NodeAffinity"
    assert rt.container_reasons == ("CrashLoopBackOff", "OOMKilled")
    assert rt.init_container_reasons == ("Error",)


def test_exit_codes_ephemeral_reasons_and_phase_unknown_are_read():
    raw = _with_status(
        {
            "phase": "Unknown",
            "containerStatuses": [
                {"state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}},
                {"state": {"terminated": {"exitCode": True}}},  # not a number: skipped
            ],
            "initContainerStatuses": [{"state": {"terminated": {"reason": "Error", "exitCode": 2}}}],
            "ephemeralContainerStatuses": [{"state": {"waiting": {"reason": "ImagePullBackOff"}}}],
        }
    )
    for rt in (pod_runtime(raw), build_task(raw, priority_classes={}).runtime):
        assert (rt.exit_codes, rt.init_exit_codes) == ((137,), (2,))
        assert rt.ephemeral_container_reasons == ("ImagePullBackOff",)
        assert rt.phase_unknown
    only_phase = _with_status({"phase": "Unknown"}, owner="ReplicaSet/p")
    assert build_task(only_phase, priority_classes={}).runtime.phase_unknown


@pytest.mark.parametrize(
    ("volumes", "local"),
    [
        ([{"name": "a", "emptyDir": {}}], True),
        ([{"name": "a", "hostPath": {"path": "/x"}}], True),
        ([{"name": "a", "persistentVolumeClaim": {"claimName": "c"}}, {"name": "b", "configMap": {}}], False),
        ([], False),
    ],
)
def test_local_storage_is_an_empty_dir_or_a_host_path(volumes: list[dict[str, Any]], local: bool):
    for owner in (None, "ReplicaSet/p"):  # (owned pods take another path to their runtime)
        raw = pod("p", owner=owner)
        raw["spec"]["volumes"] = volumes
        assert build_task(raw, priority_classes={}).runtime.local_storage is local


def test_a_pod_being_deleted_says_so_whatever_its_status():
    raw = pod("p", owner="ReplicaSet/p", phase="Failed")
    raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert build_task(raw, priority_classes={}).runtime.deleting
    assert not build_task(
        pod("p", owner="ReplicaSet/p", phase="Failed"), priority_classes={}
    ).runtime.deleting


def test_images_are_sorted_and_every_owner_kind_counts():
    raw = pod("p", owner="ReplicaSet/web")
    raw["spec"]["containers"].append({"name": "side", "image": "alpine"})
    raw["metadata"]["ownerReferences"].append({"kind": "Other", "name": "x"})
    rt = pod_runtime(raw)
    assert rt.images == ("alpine", "busybox")
    assert rt.owner_kinds == ("ReplicaSet", "Other")


@pytest.mark.parametrize(
    "status",
    [
        {"containerStatuses": "nonsense"},
        {"containerStatuses": [None, {"restartCount": "x"}, {"restartCount": True}]},
        {"containerStatuses": [{"state": {"waiting": "x"}}]},
        {"reason": 5},
    ],
)
def test_a_malformed_status_reads_as_nothing_reported(status: dict[str, Any]):
    rt = pod_runtime(_with_status(status))
    assert (rt.restarts, rt.reason, rt.container_reasons) == (0, "", ())


def test_a_plain_pod_shares_the_empty_runtime():
    raw = pod("p")
    raw["spec"]["containers"][0].pop("image")
    assert pod_runtime(raw) is EMPTY_RUNTIME
    assert isinstance(build_task(pod("q"), priority_classes={}).runtime, PodRuntime)


def _pending(**status: Any) -> dict[str, Any]:
    out = pod("p")
    out["status"] = {"phase": "Pending", **status}
    return out


def _no_status() -> dict[str, Any]:
    out = pod("p")
    out.pop("status", None)
    return out


def _owned() -> dict[str, Any]:
    return pod("p", owner="Job/train")


def _owned_twice() -> dict[str, Any]:
    out = pod("p", owner="ReplicaSet/web")
    out["metadata"]["ownerReferences"].append({"kind": "Other", "name": "x"})
    return out


def _running_unready() -> dict[str, Any]:
    return _with_status({})


def _other_images() -> dict[str, Any]:
    out = pod("p")
    out["spec"]["containers"][0]["image"] = "alpine"
    return out


@pytest.mark.parametrize(
    "make",
    [
        _no_status,
        _pending,
        lambda: _pending(reason="SchedulingGated"),
        lambda: _pending(conditions=[{"type": "Ready", "status": "False"}]),
        lambda: _pending(containerStatuses=[{"restartCount": 2}]),
        lambda: _pending(initContainerStatuses=[{"state": {"waiting": {"reason": "PodInitializing"}}}]),
        _owned,
        _owned_twice,
        lambda: {**_owned_twice(), "status": {"phase": "Pending"}},
        _running_unready,
        _other_images,
    ],
)
def test_a_task_takes_the_runtime_its_pod_reports_whatever_the_pods_of_its_spec_reported(make: Any):
    """A task's runtime is its pod's own, also when pods of the same spec (whose parse it shares) were
    parsed before it with a runtime of their own, or with none reported."""
    for first in (_no_status(), _pending(reason="Evicted"), _owned(), _owned_twice(), _running_unready()):
        build_task(first, priority_classes={})
        raw = make()
        assert build_task(raw, priority_classes={}).runtime == pod_runtime(raw)


@pytest.mark.parametrize(
    ("resources", "status_qos", "expected"),
    [
        ([{}], None, "BestEffort"),
        ([{"requests": {"nvidia.com/gpu": "1"}}], None, "BestEffort"),  # only cpu and memory count
        ([{"requests": {"cpu": "1"}}], None, "Burstable"),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}}], None, "Guaranteed"),  # requests default to limits
        (
            [{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}],
            None,
            "Guaranteed",
        ),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}], None, "Burstable"),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}}, {}], None, "Burstable"),  # every container must be
        ([{"requests": {"cpu": "lots"}}], None, "BestEffort"),  # malformed: counts as none, never an error
        ([{"requests": {"cpu": "1"}}], "Guaranteed", "Guaranteed"),  # the apiserver's word wins
    ],
)
def test_the_qos_class_is_the_apiservers_or_worked_out_as_kubernetes_does(
    resources: list[dict[str, Any]], status_qos: str | None, expected: str
):
    raw = pod("p", node="n1", cpu=None)
    raw["spec"]["containers"] = [
        {"name": f"c{i}", "image": "x", "resources": r} for i, r in enumerate(resources)
    ]
    if status_qos:
        raw["status"]["qosClass"] = status_qos
    assert pod_runtime(raw).qos == expected


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        ({"limits": {"cpu": "2", "memory": "1Gi"}}, "Guaranteed"),  # the pod's alone, its containers aside
        ({"requests": {"cpu": "1"}}, "Burstable"),
        ({"requests": {"hugepages-2Mi": "2Mi"}}, "Burstable"),  # no pod-level cpu or memory: the containers'
    ],
)
def test_with_pod_level_cpu_or_memory_the_qos_class_is_the_pods(level: dict[str, Any], expected: str) -> None:
    raw = pod("p", node="n1", cpu="1")
    raw["spec"]["resources"] = level
    assert pod_runtime(raw).qos == expected


def _running(status: dict[str, Any], *, owner: str | None = None, image: str | None = None) -> dict[str, Any]:
    out = _with_status(status, **({"owner": owner} if owner else {}))
    if image:
        out["spec"]["containers"][0]["image"] = image
    return out


#: Running pods of one spec (and one of other images) whose statuses differ in one thing the runtime reads
#: each, or in what it does not read (the start time, the IPs).
RUNNING = [
    lambda: _running({"conditions": [{"type": "Ready", "status": "True"}]}),
    lambda: _running(
        {
            "conditions": [{"type": "Ready", "status": "True"}],
            "startTime": "2026-11-30T01:00:00Z",
            "podIP": "1",
        }
    ),
    lambda: _running({"conditions": [{"type": "Ready", "status": "False"}]}),
    lambda: _running({}),
    lambda: _running({"conditions": [{"type": "Ready", "status": "True"}], "qosClass": "Guaranteed"}),
    lambda: _running({"conditions": [{"type": "Ready", "status": "True"}], "qosClass": "Odd"}),
    lambda: _running({"conditions": [{"type": "Ready", "status": "True"}], "reason": "Evicted"}),
    lambda: _running(
        {"conditions": [{"type": "Ready", "status": "True"}], "containerStatuses": [{"restartCount": 2}]}
    ),
    lambda: _running({"containerStatuses": [{"restartCount": 0, "state": {}}]}),
    lambda: _running({"containerStatuses": None}),
    lambda: _running({"containerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
    lambda: _running({"containerStatuses": [{"state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}),
    lambda: _running({"initContainerStatuses": [{"restartCount": 1}]}),
    lambda: _running({"ephemeralContainerStatuses": [{"state": {"waiting": {"reason": "Debug"}}}]}),
    lambda: _running({"phase": "Unknown"}),
    lambda: _running({"reason": {"not": "a string"}}),
    lambda: _running({"conditions": [{"type": "Ready", "status": "True"}]}, owner="ReplicaSet/web"),
    lambda: _running({"conditions": [{"type": "Ready", "status": "True"}]}, owner="Job/train"),
    lambda: _running({"conditions": [{"type": "Ready", "status": "True"}]}, image="alpine"),
    lambda: {
        **_running({}),
        "metadata": {**_running({})["metadata"], "deletionTimestamp": "2026-11-30T01:00:00Z"},
    },
]


def test_running_pods_reported_alike_share_one_runtime_and_each_is_its_pods_own() -> None:
    """The pods of one spec running alike share one runtime, made once; a pod whose status or owners read
    otherwise in anything the runtime reads has its own, whichever pods were built before it."""
    tasks = [build_task(make(), priority_classes={}) for make in RUNNING * 2]
    for make, task in zip(RUNNING * 2, tasks, strict=True):
        assert task.runtime == pod_runtime(make())
    assert tasks[0].runtime is tasks[1].runtime is tasks[len(RUNNING)].runtime  # start time and IPs not read
