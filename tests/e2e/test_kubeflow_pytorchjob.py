"""The Kubeflow training operator's gang path under volsched: a PyTorchJob (a master and workers) made by
the real training operator (v1, built by hack/kubeflow/build.sh, run with ``--gang-scheduler-name=volcano``
as its users run it) on kwok's nodes. The training operator makes the job's Volcano PodGroup first (its
minMember the job's replicas, its minResources theirs) and its pods only once the PodGroup is Inqueue;
volsched admits it when the gang fits, binds master and workers together, kwok runs them to completion,
and the training operator marks the job Succeeded.

Each wait is for the event that proves the outcome, never for time."""

from __future__ import annotations

import datetime
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.e2e.operator_fixtures import (
    Kube,
    Start,
    apply_file,
    free_port,
    install_volcano_crds,
    real_cluster,
    wait_for,
)
from volsched_dev.devcluster import RUN_FOR, LocalControlPlane, ensure_kubeflow

pytestmark = pytest.mark.cluster
SLOW = 180
KF, KFV = "kubeflow.org", "v1"
#: Where the training operator reads its webhook server's certificate (a fixed path in its code, where a
#: Secret is mounted in a cluster); the apiserver never calls its webhooks here (none is registered).
CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")


@pytest.fixture
def cluster() -> Iterator[LocalControlPlane]:
    yield from real_cluster()


def _serving_cert() -> None:
    """A self-signed key pair where the training operator waits for its mounted certificate."""
    if (CERT_DIR / "tls.crt").is_file() and (CERT_DIR / "tls.key").is_file():
        return
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "training-operator.kubeflow.svc")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    CERT_DIR.mkdir(parents=True, exist_ok=True)
    pem = {
        "tls.key": key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ),
        "tls.crt": cert.public_bytes(serialization.Encoding.PEM),
    }
    for file, data in pem.items():  # each file whole or not at all (another run may read them)
        tmp = CERT_DIR / f".{file}.{os.getpid()}"
        tmp.write_bytes(data)
        tmp.replace(CERT_DIR / file)


@pytest.fixture
def training_operator(cluster: LocalControlPlane, k: Kube, tmp_path: Path) -> Iterator[Path]:
    """The training operator running with volcano as its gang scheduler (its log's path)."""
    directory = ensure_kubeflow()
    with cluster.api_client() as api:
        install_volcano_crds(api)
        apply_file(api, directory / "crds" / "kubeflow.org_pytorchjobs.yaml")
    k.namespace("kubeflow")
    # Its certificate rotator keeps the webhook certificate in this Secret (made empty, as its manifests do).
    k.core.create_namespaced_secret("kubeflow", {"metadata": {"name": "training-operator-webhook-cert"}})
    _serving_cert()
    wait_for(
        lambda: k.custom.list_cluster_custom_object(KF, KFV, "pytorchjobs") is not None,
        30,
        what="PyTorchJob CRD",
    )
    log = tmp_path / "training-operator.log"
    argv = [
        str(directory / "training-operator"),
        f"--kubeconfig={cluster.kubeconfig_path}",
        "--gang-scheduler-name=volcano",
        "--enable-scheme=pytorchjob",
        f"--webhook-server-port={free_port()}",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
    ]
    env = {**os.environ, "MY_POD_NAMESPACE": "kubeflow"}
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        wait_for(
            lambda: proc.poll() is not None or "registering controllers" in log.read_text(),
            SLOW, what="the training operator's controllers",
        )  # fmt: skip
        assert proc.poll() is None, log.read_text()[-3000:]
        yield log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _replica(replicas: int, *, cpu: str, run_for: str) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "restartPolicy": "Never",
        "template": {
            "metadata": {"annotations": {RUN_FOR: run_for}},
            "spec": {
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "pytorch", "image": "pytorch/pytorch", "resources": {"requests": {"cpu": cpu}}}
                ],
            },
        },
    }


def test_a_pytorchjob_is_gang_scheduled_by_volsched_runs_and_succeeds(
    cluster: LocalControlPlane, k: Kube, start_operator: Start, training_operator: Path
) -> None:
    cluster.kwok_node("kwok-1", cpu="2")
    ns = k.namespace("train")
    job = {
        "apiVersion": f"{KF}/{KFV}",
        "kind": "PyTorchJob",
        "metadata": {"name": "mnist"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": _replica(1, cpu="1", run_for="5s"),
                "Worker": _replica(2, cpu="1", run_for="5s"),
            }
        },
    }
    k.custom.create_namespaced_custom_object(KF, KFV, ns, "pytorchjobs", job)
    # As its users run it: the pods it makes name "volcano" as their scheduler.
    op = start_operator("--scheduler-names", "volsched,volcano")

    def podgroup() -> dict[str, Any]:
        return k.custom.get_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", ns, "podgroups", "mnist"
        )  # type: ignore[no-any-return]

    pg = wait_for(podgroup, SLOW, what="the training operator's Volcano PodGroup", operator=op)
    assert pg["spec"]["minMember"] == 3, pg["spec"]  # master + 2 workers
    assert pg["spec"]["minResources"]["cpu"] in ("3", 3), pg["spec"]
    # Three cpu asked, two on the cluster: volsched does not admit the gang, and says why on it.
    waiting = wait_for(
        lambda: [c for c in (podgroup().get("status") or {}).get("conditions") or [] if c.get("status") == "False"],
        SLOW, what="why the gang waits, on its PodGroup", operator=op,
    )  # fmt: skip
    assert (podgroup().get("status") or {}).get("phase") in (None, "Pending"), waiting
    assert k.core.list_namespaced_pod(ns).items == []  # the training operator waits for Inqueue

    cluster.kwok_node("kwok-2", cpu="2")  # room for the gang now
    pods = ["mnist-master-0", "mnist-worker-0", "mnist-worker-1"]
    bound = wait_for(
        lambda: all(k.bound(ns).get(f"{ns}/{p}") for p in pods) and k.bound(ns),
        SLOW, what="master and workers bound", operator=op,
    )  # fmt: skip
    assert len(bound) == 3
    for p in pods:
        meta = k.core.read_namespaced_pod(p, ns).metadata
        assert meta.annotations["scheduling.k8s.io/group-name"] == "mnist"

    def succeeded() -> bool:
        status = (
            k.custom.get_namespaced_custom_object(KF, KFV, ns, "pytorchjobs", "mnist").get("status") or {}
        )
        return any(c["type"] == "Succeeded" and c["status"] == "True" for c in status.get("conditions") or [])

    wait_for(succeeded, SLOW, what="the PyTorchJob Succeeded (its pods run and finish on kwok)", operator=op)
    assert {k.core.read_namespaced_pod(p, ns).spec.scheduler_name for p in pods} == {"volcano"}

    def podgroup_gone() -> bool:
        try:
            podgroup()
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for(
        podgroup_gone, SLOW, what="the training operator deletes the finished job's PodGroup", operator=op
    )
