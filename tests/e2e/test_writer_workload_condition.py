"""A Kubernetes PodGroup's ``PodGroupInitiallyScheduled`` condition is terminal once True, as
kube-scheduler keeps it (real apiserver, with the Workload API served): a gang placed once and then
waiting again (its pods deleted and made anew, too large for the nodes) is not told ``False``. A writer
kept that only from its own memory of what it wrote: a replica that restarted, or took the Lease over
from another, wrote ``False`` over the ``True`` another replica (or its earlier self) had written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import WORKLOAD_API, Kube, fresh_control_plane
from tests.fences import Fence
from volsched.cache.workload import WORKLOAD_GROUP, WORKLOAD_VERSION
from volsched.framework.decisions import PodGroupStatus, SessionResult
from volsched.kube.writer import KubeWriter, WriterSettings
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

G, V = WORKLOAD_GROUP, WORKLOAD_VERSION
NS = "gangs"


@pytest.fixture(scope="module")
def workload_cluster() -> Iterator[LocalControlPlane]:
    with fresh_control_plane(apiserver_args=WORKLOAD_API) as cp:
        yield cp


@pytest.fixture
def wk(workload_cluster: LocalControlPlane) -> Iterator[Kube]:
    with workload_cluster.api_client() as api:
        yield Kube(api)


def _status(scheduled: int, *, phase: str) -> PodGroupStatus:
    return PodGroupStatus(
        phase=phase, queue="default", min_member=2, running=0, succeeded=0, failed=0,
        pending=2 - scheduled, scheduled=scheduled,
    )  # fmt: skip


def _write(writer: KubeWriter, key: str, status: PodGroupStatus) -> tuple[int, list[str]]:
    result = SessionResult(podgroups={key: status})
    writes, _events, errors = writer.write_status(result, queues=[], podgroups={key: G}, pods={})
    return writes, errors


def _condition(wk: Kube, name: str) -> dict[str, Any]:
    pg = wk.custom.get_namespaced_custom_object(G, V, NS, "podgroups", name)
    [cond] = [
        c
        for c in (pg.get("status") or {}).get("conditions") or []
        if c["type"] == "PodGroupInitiallyScheduled"
    ]
    return cond  # type: ignore[no-any-return]


def test_initially_scheduled_stays_true_whichever_replica_writes_next(
    wk: Kube, workload_cluster: LocalControlPlane
) -> None:
    wk.namespace(NS)
    for name in ("train", "fresh"):
        wk.custom.create_namespaced_custom_object(
            G, V, NS, "podgroups",
            {
                "apiVersion": f"{G}/{V}", "kind": "PodGroup", "metadata": {"name": name},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
            },
        )  # fmt: skip
    key = f"{NS}/train"
    first = KubeWriter(wk.api, WriterSettings(workers=1), fence=Fence())
    try:
        assert _write(first, key, _status(2, phase="Running")) == (1, [])
        assert _condition(wk, "train")["status"] == "True"
        assert _write(first, key, _status(0, phase="Inqueue")) == (0, [])  # terminal: not told False
    finally:
        first.close()
    fence = Fence()
    # Restarted, it remembers nothing; and it has the operator's rights on these PodGroups (manifests/
    # 10-rbac.yaml): list and watch them, patch their status, no get.
    rbac = client.RbacAuthorizationV1Api(wk.api)
    rules = [
        {"apiGroups": [G], "resources": ["podgroups"], "verbs": ["list", "watch"]},
        {"apiGroups": [G], "resources": ["podgroups/status"], "verbs": ["patch"]},
    ]
    rbac.create_namespaced_role(NS, {"metadata": {"name": "operator"}, "rules": rules})
    rbac.create_namespaced_role_binding(
        NS,
        {
            "metadata": {"name": "operator"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "operator"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "operator"}],
        },
    )
    as_operator = workload_cluster.api_client()
    as_operator.set_default_header("Impersonate-User", "operator")
    second = KubeWriter(as_operator, WriterSettings(workers=1), fence=fence)
    try:
        assert _write(second, key, _status(0, phase="Inqueue")) == (0, [])
        assert _condition(wk, "train")["status"] == "True"
        fence.acquired_at = 2.0  # and after taking the Lease over again
        assert _write(second, key, _status(0, phase="Inqueue")) == (0, [])
        assert _condition(wk, "train")["status"] == "True"
        # A gang never placed is told why it waits, then that it was placed.
        assert _write(second, f"{NS}/fresh", _status(0, phase="Inqueue")) == (1, [])
        assert _condition(wk, "fresh")["status"] == "False"
        assert _write(second, f"{NS}/fresh", _status(2, phase="Running")) == (1, [])
        assert _condition(wk, "fresh")["status"] == "True"
    finally:
        second.close()
        as_operator.close()  # type: ignore[no-untyped-call]
