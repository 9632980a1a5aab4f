"""The README's first job, as a new user runs it: the file it shows, applied as it is on a real apiserver
with the operator, binds its pods; ``kubectl get`` and ``describe`` show what the README says they show
(the columns read through the apiserver's Table, the column definitions kubectl prints); and the account
the README makes for the dashboard sees the job there through the token gate."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, dynamic

from tests.e2e.operator_fixtures import GROUP, VERSION, Kube, Start, node, wait_for
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
EXAMPLE = ROOT / "examples" / "first-job.yaml"


def _block_after(text: str, command: str) -> list[str]:
    """The lines of the README's fenced block that starts with ``$ <command>``, the command line left out."""
    match = re.search(r"```[a-z]*\n\$ " + re.escape(command) + r"\n(.*?)```", text, re.S)
    assert match, f"the README shows no block starting with $ {command}"
    return match.group(1).splitlines()


def _kubectl_tables(lines: list[str]) -> dict[str, dict[str, str]]:
    """What the README shows ``kubectl get`` printing: row by kind/name, cell by column header."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in lines:
        if not line.strip():
            header = []
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] == "NAME":
            header = cells
            continue
        assert header and len(cells) == len(header), f"a README row not under a header: {line!r}"
        rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows


def _table(k: Kube, path: str) -> dict[str, dict[str, Any]]:
    """What kubectl get prints: the apiserver's Table of the resource, row by name, cell by column."""
    host = k.api.configuration.host
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    k.api.update_params_for_auth(headers, None, ["BearerToken"], f"{host}{path}", "GET", None)
    response = k.api.call_api("GET", f"{host}{path}", header_params=headers)
    response.read()
    answer = json.loads(response.data)
    names = [c["name"] for c in answer["columnDefinitions"] if c["priority"] == 0]
    wide = len(names)
    return {row["cells"][0]: dict(zip(names, row["cells"][:wide], strict=True)) for row in answer["rows"]}


def test_the_readme_first_job_runs_as_shown(
    k: Kube, cluster: LocalControlPlane, start_operator: Start
) -> None:
    readme = README.read_text()
    shown = re.search(r"```yaml\n(.*?)```\n+```sh\nkubectl apply -f examples/first-job.yaml\n", readme, re.S)
    assert shown and shown.group(1) == EXAMPLE.read_text(), (
        "the README shows examples/first-job.yaml as it is"
    )
    k.nodes(node("node-1"), node("node-2"))
    resources = dynamic.DynamicClient(k.api).resources

    def apply(path: Path) -> None:  # kubectl apply -f: the file as it is, each object through its resource
        for doc in yaml.safe_load_all(path.read_text()):
            kind = resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
            kind.create(body=doc, namespace=doc["metadata"].get("namespace"))

    apply(ROOT / "manifests" / "40-default-queue.yaml")  # what helm install brings besides the operator
    op = start_operator("--http-auth", "kubernetes")  # as the chart runs it: the dashboard asks who you are
    apply(EXAMPLE)

    pods = {"first-job-0", "first-job-1"}
    wait_for(lambda: {f"default/{p}" for p in pods} <= set(k.bound("default")), 60, what="bound", operator=op)
    ready = [{"type": "Ready", "status": "True"}]
    for name in sorted(pods):  # the kubelet's part: the pods start
        k.core.patch_namespaced_pod_status(
            name, "default", {"status": {"phase": "Running", "conditions": ready}}
        )

    def shown() -> bool:
        status = k.get_podgroup("default", "first-job").get("status", {})
        return status.get("phase") == "Running" and status.get("running") == 2

    wait_for(shown, 60, what="the first job's PodGroup Running with 2 scheduled", operator=op)

    expected = _kubectl_tables(_block_after(readme, "kubectl get queues,podgroups"))
    assert expected, "the README shows no rows"

    def as_shown() -> dict[str, dict[str, str]]:
        """Every row kubectl get would print, as it prints it (cells as text, AGE left out)."""
        rows = {}
        for kind, path in (
            ("queue.scheduling.volsched.io", f"/apis/{GROUP}/{VERSION}/queues"),
            ("podgroup.scheduling.volsched.io", f"/apis/{GROUP}/{VERSION}/namespaces/default/podgroups"),
        ):
            for name, row in _table(k, path).items():
                cells = {col.upper(): "<none>" if v is None else str(v) for col, v in row.items()}
                rows[f"{kind}/{name}"] = {col: v for col, v in cells.items() if col not in ("NAME", "AGE")}
        return rows

    shown_rows = {
        name: {c: v for c, v in cells.items() if c not in ("NAME", "AGE")} for name, cells in expected.items()
    }
    wait_for(
        lambda: as_shown() == shown_rows,
        30,
        what=f"kubectl get as the README shows it: {shown_rows}",
        operator=op,
    )

    # kubectl describe podgroup first-job: the status fields and the Scheduled event the README shows
    described = _block_after(readme, "kubectl describe podgroup first-job")
    status = k.get_podgroup("default", "first-job")["status"]
    fields = dict(
        re.findall(
            r"^  (Phase|Scheduled|Running|Pending|Failed|Succeeded):\s+(\S+)$", "\n".join(described), re.M
        )
    )
    assert fields, "the README's describe block shows no status fields"
    assert fields == {key: str(status[key[0].lower() + key[1:]]) for key in fields}
    [shown_event] = [
        line.split(None, 4)[4] for line in described if line.split()[:2] == ["Normal", "Scheduled"]
    ]
    events = k.core.list_namespaced_event("default", field_selector="involvedObject.name=first-job").items
    assert shown_event in [e.message for e in events if e.reason == "Scheduled" and e.type == "Normal"]

    # Open the dashboard: the account the README makes (its kubectl commands, through the API) sees the job.
    assert "kubectl create clusterrole volsched-dashboard --verb=get --non-resource-url=/ui" in readme
    assert "kubectl create clusterrole volsched-dashboard-pods --verb=list --resource=pods" in readme
    token = cluster.service_account_token("volsched-system", "dashboard-viewer")
    rbac = client.RbacAuthorizationV1Api(k.api)
    for name, rule in (
        ("volsched-dashboard", {"nonResourceURLs": ["/ui"], "verbs": ["get"]}),
        ("volsched-dashboard-pods", {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}),
    ):
        rbac.create_cluster_role({"metadata": {"name": name}, "rules": [rule]})
        rbac.create_cluster_role_binding(
            {
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [
                    {"kind": "ServiceAccount", "name": "dashboard-viewer", "namespace": "volsched-system"}
                ],
            }
        )
    assert op.get("/ui")[0] == 200  # the page, to anyone
    assert op.get("/ui/state.json")[0] == 401  # its data, not without a token

    def on_the_dashboard() -> bool:
        status, body = op.get("/ui/state.json", token)
        return status == 200 and "default/first-job" in json.loads(body)["podgroups"]

    wait_for(
        on_the_dashboard, 30, what="the first job on the dashboard, for the README's account", operator=op
    )
