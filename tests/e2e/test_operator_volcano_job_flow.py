"""Volcano's job flow through the operator (real apiserver): a controller written here, as Volcano's job
controller behaves, makes each job's PodGroup first (minMember and minResources set, no pod) and makes
the job's pods only once the scheduler moved the PodGroup out of Pending. volsched must admit such a
group on its minResources (its jobs start), and say on the group why when it does not.

Volcano's own controller is not built here (its module pulls a whole other Kubernetes); this one does
what it does to the objects the scheduler reads, and nothing else."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.operator_fixtures import VV, Kube, Start, V, install_volcano_crds, node, pod, wait_for

pytestmark = pytest.mark.cluster


class VolcanoLikeController:
    """Makes a job's PodGroup, then its pods once the PodGroup is Inqueue (or further): Volcano's
    job controller's order. Polls the PodGroups of one namespace (a list is all it needs here)."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.jobs: dict[str, tuple[int, str]] = {}  # name -> (pods, cpu of each)
        self.made: set[str] = set()
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def submit(self, name: str, *, pods: int, cpu: str) -> None:
        total = f"{float(cpu) * pods:g}"
        self.jobs[name] = (pods, cpu)
        # minResources as Volcano's job controller writes it: the minMember pods' quota usage
        # (GetPodQuotaUsage), each request under two names, and the pod counts.
        usage = {"cpu": total, "requests.cpu": total, "pods": str(pods), "count/pods": str(pods)}
        self.custom.create_namespaced_custom_object(
            V, VV, self.namespace, "podgroups",
            {"apiVersion": f"{V}/{VV}", "kind": "PodGroup", "metadata": {"name": name},
             "spec": {"minMember": pods, "queue": "default", "minResources": usage}},
        )  # fmt: skip

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self._sync()
            except (
                ApiException
            ) as exc:  # a transient answer (throttled, unavailable): the next pass tries again
                if exc.status is not None and exc.status < 500 and exc.status != 429:
                    self.errors.append(exc)
            except BaseException as exc:  # shown by the test
                self.errors.append(exc)
                return

    def _sync(self) -> None:
        groups = self.custom.list_namespaced_custom_object(V, VV, self.namespace, "podgroups")["items"]
        for group in groups:
            name = group["metadata"]["name"]
            phase = (group.get("status") or {}).get("phase") or "Pending"
            if name in self.made or name not in self.jobs or phase == "Pending":
                continue
            count, cpu = self.jobs[name]
            for i in range(count):
                body = pod(f"{name}-{i}", cpu, scheduler="volcano")
                body["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": name}
                self.core.create_namespaced_pod(self.namespace, body)
            self.made.add(name)

    def __enter__(self) -> VolcanoLikeController:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@pytest.fixture
def controller(k: Kube) -> Iterator[VolcanoLikeController]:
    install_volcano_crds(k.api)
    ns = k.namespace("vcjob")
    with VolcanoLikeController(k.api, ns) as ctl:
        yield ctl
    assert not ctl.errors, ctl.errors


def _conditions(k: Kube, ns: str, name: str) -> list[dict[str, Any]]:
    group = k.custom.get_namespaced_custom_object(V, VV, ns, "podgroups", name)
    return list((group.get("status") or {}).get("conditions") or [])


def test_jobs_whose_pods_come_after_admission_start_and_the_one_left_out_is_told_why(
    k: Kube, start_operator: Start, controller: VolcanoLikeController
) -> None:
    k.nodes(node("n1", cpu="2"), node("n2", cpu="2"))
    ns = controller.namespace
    for name in ("a", "b", "c"):  # 2 cpu each: two fit the 4 cpu (x 1.2 overcommit), the third does not
        controller.submit(name, pods=2, cpu="1")
    op = start_operator("--scheduler-names", "volsched,volcano")

    bound = wait_for(
        lambda: len(k.bound(ns)) >= 4 and k.bound(ns), 60, what="two jobs' pods bound", operator=op
    )
    started = {key.split("/")[1].rsplit("-", 1)[0] for key in bound}
    assert len(started) == 2 and started == controller.made, (started, controller.made)
    (left,) = {"a", "b", "c"} - started

    def told() -> list[str]:
        return [
            c.get("message", "") for c in _conditions(k, ns, left) if "minResources" in c.get("message", "")
        ]

    why = wait_for(told, 30, what=f"why {left} is not admitted, on its PodGroup", operator=op)
    assert "room" in why[0] and left not in controller.made
    group = k.custom.get_namespaced_custom_object(V, VV, ns, "podgroups", left)
    assert (group.get("status") or {}).get("phase", "Pending") == "Pending"
    events = [e for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == left]
    assert any("minResources" in (e.message or "") for e in events)
