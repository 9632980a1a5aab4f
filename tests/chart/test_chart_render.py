"""The Helm chart (charts/volsched) renders, with default values, the same objects as crds/ and
manifests/, and its values change what they say they change (the real helm, see tests/helmtool.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helmtool import CHART, ROOT, helm, template

pytestmark = pytest.mark.helm

#: Labels the chart adds to every object's metadata (Helm's conventions); manifests/ has at most the name.
CHART_LABELS = {
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "helm.sh/chart",
}
CONFIG_KEY = "volsched-scheduler.conf"

Key = tuple[str, str, str, str]


def _key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (obj["apiVersion"], obj["kind"], meta.get("namespace") or "", meta["name"])


def _normal(obj: dict[str, Any]) -> dict[str, Any]:
    """What must agree: everything but the chart's own labels; the scheduler config by meaning (YAML)."""
    obj = json.loads(json.dumps(obj))
    meta = obj["metadata"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in CHART_LABELS}
    meta.pop("labels", None)
    if labels:
        meta["labels"] = labels
    if obj["kind"] == "ConfigMap" and CONFIG_KEY in (obj.get("data") or {}):
        obj["data"][CONFIG_KEY] = yaml.safe_load(obj["data"][CONFIG_KEY])
    return obj


def _files(*dirs: Path) -> dict[Key, dict[str, Any]]:
    objs = {}
    for d in dirs:
        for path in sorted(d.glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc:
                    objs[_key(doc)] = doc
    return objs


def _by_key(objs: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    return {_key(o): o for o in objs}


def _named(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [found] = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


def _container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    return _one(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def _config(objs: list[dict[str, Any]]) -> dict[str, Any]:
    return yaml.safe_load(_one(objs, "ConfigMap")["data"][CONFIG_KEY])  # type: ignore[no-any-return]


def test_default_values_render_the_objects_of_crds_and_manifests_one_by_one() -> None:
    expected = _files(ROOT / "crds", ROOT / "manifests")
    # The namespace is the release's (helm install -n volsched-system --create-namespace), not the chart's.
    namespaces = [k for k in expected if k[1] == "Namespace"]
    assert namespaces == [("v1", "Namespace", "", "volsched-system")]
    del expected[namespaces[0]]
    rendered = _by_key(template("--include-crds"))
    assert sorted(rendered) == sorted(expected), "objects the chart and manifests/ do not both have"
    for key, obj in expected.items():
        assert _normal(rendered[key]) == _normal(obj), (
            f"{key} differs between charts/volsched and manifests/ or crds/: change the chart too "
            "(CRDs: cp crds/*.yaml charts/volsched/crds/)"
        )


def test_every_object_carries_the_chart_labels_except_crds() -> None:
    for obj in template():
        labels = obj["metadata"].get("labels") or {}
        assert set(labels) >= CHART_LABELS, _key(obj)
        assert labels["app.kubernetes.io/managed-by"] == "Helm"


def _secret_rules(objs: list[dict[str, Any]]) -> list[tuple[list[str], list[str] | None]]:
    """The Role's rules on Secrets: (verbs, resourceNames)."""
    return [
        (r["verbs"], r.get("resourceNames"))
        for r in _one(objs, "Role")["rules"]
        if r["resources"] == ["secrets"]
    ]


def _webhook_configurations(objs: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """The webhook configurations the chart renders (named volsched.io, as kopf names them), by kind:
    their annotations. They hold no webhooks: kopf fills them in."""
    out = {}
    for o in objs:
        if o["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            assert o["metadata"]["name"] == "volsched.io" and "webhooks" not in o
            out[o["kind"]] = o["metadata"].get("annotations") or {}
    return out


def _podgroup_verbs(objs: list[dict[str, Any]]) -> list[list[str]]:
    """The ClusterRole's verbs on volsched's PodGroups beyond reading them."""
    return [
        r["verbs"]
        for r in _one(objs, "ClusterRole")["rules"]
        if r["apiGroups"] == ["scheduling.volsched.io"]
        and r["resources"] == ["podgroups"]
        and r["verbs"] != ["list", "watch"]
    ]


def _volcano_object_patch(objs: list[dict[str, Any]]) -> list[list[str]]:
    """The ClusterRole's rules granting patch on Volcano's objects themselves (not a subresource)."""
    return [
        r["resources"]
        for r in _one(objs, "ClusterRole")["rules"]
        if r["apiGroups"] == ["scheduling.volcano.sh"]
        and "patch" in r["verbs"]
        and not any("/" in x for x in r["resources"])
    ]


CASES: list[tuple[str, list[str], Any]] = [
    ("image repository and tag", ["--set", "image.repository=reg.local/vs", "--set", "image.tag=9.9"],
     lambda o: _container(o)["image"] == "reg.local/vs:9.9" and "imagePullPolicy" not in _container(o)),
    ("pull policy", ["--set", "image.pullPolicy=Always"], lambda o: _container(o)["imagePullPolicy"] == "Always"),
    ("replicas", ["--set", "replicas=3"], lambda o: _one(o, "Deployment")["spec"]["replicas"] == 3),
    ("period", ["--set", "period=2.5"],
     lambda o: _container(o)["args"][-2:] == ["--period", "2.5"]),
    ("minimum gap between woken sessions", ["--set", "minGap=0.05"],
     lambda o: _container(o)["args"][-4:] == ["--min-gap", "0.05", "--period", "1"]),
    ("longest idle stretch", ["--set", "maxIdle=2.5"],
     lambda o: _container(o)["args"][-6:] == ["--max-idle", "2.5", "--min-gap", "0.02", "--period", "1"]),
    ("never skip a session", ["--set", "maxIdle=0"],
     lambda o: _container(o)["args"][-6:-4] == ["--max-idle", "0"]),
    ("http port", ["--set", "httpPort=9090"],
     lambda o: _container(o)["args"][-2:] == ["--metrics-port", "9090"]
     and _container(o)["ports"] == [{"name": "http", "containerPort": 9090}]
     and _one(o, "Deployment")["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == "9090"),
    ("metrics source becomes the config's metrics section",
     ["--set", "metrics.source.type=prometheus", "--set", "metrics.source.address=http://prom:9090"],
     lambda o: _config(o)["metrics"] == {"type": "prometheus", "address": "http://prom:9090"}
     and _config(o)["actions"] == "enqueue, allocate, backfill"),
    ("existing Secret for the metrics credentials",
     ["--set", "metrics.existingSecret=prom-creds", "--set", "metrics.usernameKey=user"],
     lambda o: {e["name"]: e.get("valueFrom", {}).get("secretKeyRef") for e in _container(o)["env"]}
     == {"VOLSCHED_SCHEDULER_NAMES": None,
         "VOLSCHED_METRICS_USERNAME": {"name": "prom-creds", "key": "user", "optional": True},
         "VOLSCHED_METRICS_PASSWORD": {"name": "prom-creds", "key": "password", "optional": True},
         "POD_IP": None}),
    ("no metrics Secret", ["--set", "metrics.existingSecret="],
     lambda o: [e["name"] for e in _container(o)["env"]] == ["VOLSCHED_SCHEDULER_NAMES", "POD_IP"]),
    ("listens on the pod's IP", [],
     lambda o: _container(o)["args"][5:7] == ["--metrics-host", "$(POD_IP),127.0.0.1"]
     and _container(o)["env"][-1] == {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}),
    ("metrics and dashboard open to anyone", ["--set", "httpAuth=false"],
     lambda o: _container(o)["args"][-2:] == ["--http-auth", "none"]),
    ("webhooks with a self-signed CA shared through a Secret", ["--set", "webhook.enabled=true"],
     lambda o: _container(o)["args"][-10:] == ["--webhook-port", "9443", "--webhook-host", "0.0.0.0",
                                               "--webhook-service", "volsched-system/volsched-webhook",
                                               "--webhook-failure-policy", "Fail",
                                               "--webhook-cert-secret", "volsched-webhook-certs"]
     and _one(o, "Service")["spec"]["ports"] == [{"name": "webhook", "port": 443, "targetPort": "webhook"}]
     and {"protocol": "TCP", "port": 9443} in _one(o, "NetworkPolicy")["spec"]["ingress"][0]["ports"]
     and any("validatingwebhookconfigurations" in r["resources"] for r in _one(o, "ClusterRole")["rules"])
     and _secret_rules(o)
     == [(["create"], None), (["get", "list", "watch", "update"], ["volsched-record-key"]), (["get", "update"], ["volsched-webhook-certs"])]
     and _webhook_configurations(o) == {"ValidatingWebhookConfiguration": {}, "MutatingWebhookConfiguration": {}}
     and not [x for x in o if x["kind"] in ("Certificate", "Issuer")]),
    ("webhooks with cert-manager and an issuer of the cluster",
     ["--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true",
      "--set", "webhook.certManager.issuer.kind=ClusterIssuer", "--set", "webhook.certManager.issuer.name=ca",
      "--set", "webhook.failurePolicy=Ignore"],
     lambda o: _container(o)["args"][-4:] == ["--webhook-failure-policy", "Ignore",
                                              "--webhook-cert-dir", "/var/run/volsched/webhook-certs"]
     and _one(o, "Certificate")["spec"]["issuerRef"] == {"kind": "ClusterIssuer", "name": "ca"}
     and _one(o, "Certificate")["spec"]["dnsNames"][0] == "volsched-webhook.volsched-system.svc"
     and _secret_rules(o) == [(["create"], None), (["get", "list", "watch", "update"], ["volsched-record-key"])]  # (the records' key alone)
     and not [x for x in o if x["kind"] == "Issuer"]),
    ("no webhooks by default", [],
     lambda o: not [x for x in o if x["kind"] in ("Service", "Certificate")]
     and not any("validatingwebhookconfigurations" in r["resources"] for r in _one(o, "ClusterRole")["rules"])),
    ("Volcano objects patched by default: PodGroups only (their CRD has no status subresource)", [],
     lambda o: _volcano_object_patch(o) == [["podgroups"]]),
    ("Volcano Queues patched as objects too (a CRD without a status subresource)",
     ["--set-json", 'rbac.volcanoPatchObjects=["podgroups","queues"]'],
     lambda o: _volcano_object_patch(o) == [["podgroups", "queues"]]),
    ("no Volcano object patched", ["--set-json", "rbac.volcanoPatchObjects=[]"],
     lambda o: _volcano_object_patch(o) == []),
    ("PodGroups created and deleted by default", [],
     lambda o: _podgroup_verbs(o) == [["create", "delete"]]),
    ("PodGroups created, none deleted", ["--set", "rbac.deleteLeftBehindPodGroups=false"],
     lambda o: _podgroup_verbs(o) == [["create"]]),
    ("PodGroups neither created nor deleted",
     ["--set", "rbac.deleteLeftBehindPodGroups=false", "--set", "rbac.createOwnerPodGroups=false"],
     lambda o: _podgroup_verbs(o) == []),
    ("no NetworkPolicy", ["--set", "networkPolicy.enabled=false"],
     lambda o: not [x for x in o if x["kind"] == "NetworkPolicy"]),
    ("NetworkPolicy peers", ["--set-json", 'networkPolicy.from=[{"namespaceSelector": {"matchLabels": {"x": "y"}}}]'],
     lambda o: _one(o, "NetworkPolicy")["spec"]["ingress"][0]["from"]
     == [{"namespaceSelector": {"matchLabels": {"x": "y"}}}]),
    ("scheduler names", [],
     lambda o: _container(o)["env"][0] == {"name": "VOLSCHED_SCHEDULER_NAMES", "value": "volsched"}),
    ("pods' queue annotations fixed for every scheduler name",
     ["--set-json", 'schedulerNames=["volsched","volcano"]'],
     lambda o: _named(o, "ValidatingAdmissionPolicy", "volsched-pod-queue-fixed")["spec"]["matchConditions"][0]
     ["expression"] == "object.spec.schedulerName in ['volsched', 'volcano']"
     and _named(o, "ValidatingAdmissionPolicyBinding", "volsched-pod-queue-fixed")["spec"]["policyName"]
     == "volsched-pod-queue-fixed"),
    ("pods' queue annotations left unchecked", ["--set", "podQueueFixed=false"],
     lambda o: sorted(x["metadata"]["name"] for x in o if x["kind"].startswith("ValidatingAdmissionPolicy"))
     == ["volsched-podgroup-fixed"] * 2 + ["volsched-workload-podgroup-fixed"] * 2),
    ("a PodGroup's phase and queue left to whoever writes them", ["--set", "podGroupFixed=false"],
     lambda o: [x["metadata"]["name"] for x in o if x["kind"].startswith("ValidatingAdmissionPolicy")]
     == ["volsched-pod-queue-fixed"] * 2),
    ("a PodGroup's phase is the release's service account's", [],
     lambda o: all(
         "'system:serviceaccount:volsched-system:volsched'"
         in _named(o, "ValidatingAdmissionPolicy", name)["spec"]["matchConditions"][0]["expression"]
         for name in ("volsched-podgroup-fixed", "volsched-workload-podgroup-fixed")
     )),
    ("no default queue", ["--set", "defaultQueue.create=false"], lambda o: not [x for x in o if x["kind"] == "Queue"]),
    ("default queue weight", ["--set", "defaultQueue.weight=4"],
     lambda o: _one(o, "Queue")["spec"] == {"weight": 4, "reclaimable": True}),
]  # fmt: skip


@pytest.mark.parametrize(("what", "args", "check"), CASES, ids=[c[0] for c in CASES])
def test_values_change_what_they_name(what: str, args: list[str], check: Any) -> None:
    assert check(template(*args)), what


def test_a_scheduler_config_from_a_values_file_replaces_the_default(tmp_path: Path) -> None:
    config = {
        "actions": "enqueue, allocate, reclaim, backfill",
        "tiers": [{"plugins": [{"name": "gang"}, {"name": "proportion"}]}],
    }
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"schedulerConfig": config}))
    assert _config(template("-f", str(values))) == config


def test_another_release_name_and_namespace_keep_the_names_consistent() -> None:
    objs = template(release="batch", namespace="sched")
    by_kind = {o["kind"]: o for o in objs if o["kind"] not in ("CustomResourceDefinition",)}
    cm = by_kind["ConfigMap"]["metadata"]
    assert cm == {**cm, "name": "batch-volsched-scheduler-config", "namespace": "sched"}
    args = _container(objs)["args"]
    assert args[:5] == ["run", "--namespace", "sched", "--config-map", "batch-volsched-scheduler-config"]
    role_rules = by_kind["Role"]["rules"]
    assert role_rules[0]["resourceNames"] == ["batch-volsched-scheduler-config"]
    assert by_kind["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "batch-volsched", "namespace": "sched"}
    ]
    assert by_kind["Deployment"]["spec"]["template"]["spec"]["serviceAccountName"] == "batch-volsched"
    for name in ("batch-volsched-podgroup-fixed", "batch-volsched-workload-podgroup-fixed"):
        policy = _named(objs, "ValidatingAdmissionPolicy", name)
        assert (
            "'system:serviceaccount:sched:batch-volsched'"
            in policy["spec"]["matchConditions"][0]["expression"]
        )


def test_the_scheduler_names_reach_the_operator_comma_separated() -> None:
    objs = template("--set", "schedulerNames={volsched,volcano}")
    env = {e["name"]: e.get("value") for e in _container(objs)["env"]}
    assert env["VOLSCHED_SCHEDULER_NAMES"] == "volsched,volcano"


def test_the_grafana_dashboard_configmap_holds_the_dashboard_json() -> None:
    assert not [o for o in template() if o["metadata"]["name"].endswith("grafana-dashboard")]
    objs = template("--set", "grafanaDashboard.enabled=true")
    cm = next(o for o in objs if o["metadata"]["name"] == "volsched-grafana-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["volsched.json"]) == json.loads(
        (CHART / "dashboards" / "volsched.json").read_text()
    )


def test_helm_lint_passes() -> None:
    proc = helm("lint", str(CHART), "--strict")
    assert "0 chart(s) failed" in proc.stdout


BAD_VALUES = [
    (["--set", "replica=3"], "additional properties 'replica' not allowed"),  # a typo is not ignored
    (["--set", "period=0"], "/period"),
    (["--set", "period=abc"], "/period"),
    (["--set", "minGap=-1"], "/minGap"),
    (["--set", "minGap=soon"], "/minGap"),
    (["--set", "maxIdle=-1"], "/maxIdle"),
    (["--set", "maxIdle=never"], "/maxIdle"),
    (["--set", "httpPort=70000"], "/httpPort"),
    (["--set", "image.pullPolicy=Sometimes"], "/image/pullPolicy"),
    (["--set", "defaultQueue.weight=0"], "/defaultQueue/weight"),
    (["--set", "replicas=two"], "/replicas"),
    (["--set", "schedulerNames[0]=Volsched_Scheduler"], "/schedulerNames/0"),  # no pod can name it
    (["--set", "webhook.enabled=true,webhook.port=8080"], "webhook.port 8080 is httpPort's too"),
    (
        ["--set", "webhook.enabled=true,webhook.port=9000,httpPort=9000"],
        "webhook.port 9000 is httpPort's too",
    ),
]


@pytest.mark.parametrize(("args", "message"), BAD_VALUES, ids=[a[1] for a, _ in BAD_VALUES])
def test_bad_values_are_refused_naming_the_value(args: list[str], message: str) -> None:
    proc = helm("template", "volsched", str(CHART), *args, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr


def test_the_rendered_scheduler_config_passes_check_config(tmp_path: Path) -> None:
    """What the chart renders loads as the operator loads it (volsched check-config, as a CI step would
    run it on ``helm template``); a values file with a bad plugin argument fails it, naming the line."""
    from volsched.configcheck import check

    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(helm("template", "volsched", str(CHART)).stdout)
    assert check(str(rendered)) == []
    assert check(str(CHART / "values.yaml")) == []
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {"schedulerConfig": {"actions": "enqueue, allocate", "tiers": [{"plugins": [
                {"name": "nodeorder", "arguments": {"leastrequested.weight": -1}}]}]}}
        )
    )  # fmt: skip
    [problem] = check(str(values))
    assert "argument leastrequested.weight: must be >= 0" in problem
    rendered.write_text(helm("template", "volsched", str(CHART), "-f", str(values)).stdout)
    [problem] = check(str(rendered))
    assert problem.startswith(f"{rendered}:") and "leastrequested.weight: must be >= 0" in problem


def test_with_cert_manager_the_certificate_is_for_the_service_and_injected_into_the_webhooks() -> None:
    """cert-manager cannot run here: the rendered objects are checked against each other. The Certificate
    (signed by the self-signed Issuer the chart makes when no issuer is named) names the Service the
    webhook configurations' clients reach, its Secret is the one mounted where --webhook-cert-dir points,
    and both webhook configurations carry cainjector's annotation naming that Certificate."""
    o = template("--set", "webhook.enabled=true", "--set", "webhook.certManager.enabled=true",
                 release="night", namespace="batch")  # fmt: skip
    cert, issuer, service = _one(o, "Certificate"), _one(o, "Issuer"), _one(o, "Service")
    assert issuer["spec"] == {"selfSigned": {}}
    assert cert["spec"]["issuerRef"] == {"kind": "Issuer", "name": issuer["metadata"]["name"]}
    assert cert["metadata"]["namespace"] == issuer["metadata"]["namespace"] == "batch"
    svc = service["metadata"]["name"]
    assert f"{svc}.batch.svc" in cert["spec"]["dnsNames"]
    args = _container(o)["args"]
    assert args[args.index("--webhook-service") + 1] == f"batch/{svc}"
    mount = next(m for m in _container(o)["volumeMounts"] if m["name"] == "webhook-certs")
    assert args[args.index("--webhook-cert-dir") + 1] == mount["mountPath"]
    assert "--webhook-cert-secret" not in args
    volumes = _one(o, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert (
        next(v for v in volumes if v["name"] == "webhook-certs")["secret"]["secretName"]
        == cert["spec"]["secretName"]
    )
    inject = {"cert-manager.io/inject-ca-from": f"batch/{cert['metadata']['name']}"}
    assert _webhook_configurations(o) == {
        "ValidatingWebhookConfiguration": inject,
        "MutatingWebhookConfiguration": inject,
    }
