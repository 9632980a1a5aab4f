"""``helm install`` of charts/volsched into a real kube-apiserver gives the operator all it needs: it
schedules a gang with only the chart's service account, reads the chart's scheduler config, follows a
``helm upgrade`` of it, and ``helm uninstall`` removes what the chart made (CRDs stay, as Helm does)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.controlplanes import running
from tests.e2e.operator_fixtures import GROUP, VERSION, Kube, OperatorProcess, node, pod, podgroup, wait_for
from tests.helmtool import CHART, helm
from volsched_dev.devcluster import LocalControlPlane

pytestmark = [pytest.mark.cluster, pytest.mark.helm]

NS = "volsched-system"


@pytest.fixture
def bare_cluster() -> Iterator[LocalControlPlane]:
    """A control plane without the CRDs or the namespace: the chart brings them."""
    with running(LocalControlPlane()) as cp:
        yield cp


def test_helm_install_gives_the_operator_everything_it_needs(
    bare_cluster: LocalControlPlane, tmp_path: Path
) -> None:
    kubeconfig = str(bare_cluster.kubeconfig_path)
    out = helm("install", "volsched", str(CHART), "-n", NS, "--create-namespace", "--kubeconfig", kubeconfig)
    assert "STATUS: deployed" in out.stdout
    status = json.loads(helm("status", "volsched", "-n", NS, "-o", "json", "--kubeconfig", kubeconfig).stdout)
    assert status["info"]["status"] == "deployed"

    with bare_cluster.api_client() as api:
        k = Kube(api)
        ext = client.ApiextensionsV1Api(api)
        for crd in ("queues.scheduling.volsched.io", "podgroups.scheduling.volsched.io"):
            assert ext.read_custom_resource_definition(crd).spec.group == GROUP
        spec = k.get_queue("default")["spec"]
        assert (spec["weight"], spec["reclaimable"]) == (1, True)
        deploy = client.AppsV1Api(api).read_namespaced_deployment("volsched", NS)
        assert deploy.metadata.labels["app.kubernetes.io/managed-by"] == "Helm"
        assert deploy.spec.template.spec.service_account_name == "volsched"

        # The operator with nothing but the chart's service account, RBAC and ConfigMap.
        token = bare_cluster.service_account_token(NS, "volsched", create=False)
        sa_kubeconfig = bare_cluster.write_kubeconfig(tmp_path / "sa.kubeconfig", token=token)
        op = OperatorProcess(sa_kubeconfig, tmp_path / "operator.log").start()
        try:
            k.nodes(node("n1", cpu="4"))
            ns = k.namespace("team")
            wait_for(lambda: _served(k), 30, what="podgroups served")
            k.podgroup(ns, podgroup("pair", 2))
            k.pods(ns, pod("pair-0", group="pair"), pod("pair-1", group="pair"))
            wait_for(lambda: len(k.bound(ns)) == 2, 30, what="the gang bound by the chart's service account")
            wait_for(lambda: (k.get_podgroup(ns, "pair").get("status") or {}).get("phase") == "Running", 20,
                     what="PodGroup status written")  # fmt: skip
            wait_for(lambda: "loaded scheduler config from ConfigMap volsched-system/volsched-scheduler-config"
                     in op.log(), 20, what="the chart's config loaded")  # fmt: skip

            # helm upgrade with another scheduler config: the running operator picks it up.
            values = tmp_path / "values.yaml"
            config = yaml.safe_load((CHART / "values.yaml").read_text())["schedulerConfig"]
            config["actions"] = "enqueue, allocate, reclaim, backfill"
            values.write_text(yaml.safe_dump({"schedulerConfig": config}))
            helm("upgrade", "volsched", str(CHART), "-n", NS, "-f", str(values), "--kubeconfig", kubeconfig)
            wait_for(lambda: "actions enqueue, allocate, reclaim, backfill" in op.log(), 30,
                     what="the upgraded config reloaded")  # fmt: skip
            log = op.log().lower()
            assert "forbidden" not in log and " 403" not in log
        finally:
            op.stop()

        helm("uninstall", "volsched", "-n", NS, "--kubeconfig", kubeconfig)
        rbac = client.RbacAuthorizationV1Api(api)
        with pytest.raises(ApiException) as gone:
            rbac.read_cluster_role("volsched")
        assert gone.value.status == 404
        assert ext.read_custom_resource_definition("queues.scheduling.volsched.io")  # Helm keeps CRDs


def _served(k: Kube) -> bool:
    try:
        k.custom.list_namespaced_custom_object(GROUP, VERSION, "team", "podgroups")
    except ApiException:
        return False
    return True
