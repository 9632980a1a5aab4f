"""Two operator replicas serve the admission webhooks behind one Service, with the certificate they share
through one Secret, on the real apiserver.

The apiserver reaches a webhook's Service as a cluster would, minus kube-proxy: with
``--enable-aggregator-routing`` it picks one of the Service's EndpointSlice addresses at random for each
call (its endpoint resolver, used for webhooks as for aggregated APIs). EndpointSlices refuse loopback, so
each replica listens on an address of its own: the host side of a veth pair (tests/e2e/netns.py), one
per replica, both in the EndpointSlice. Both replicas start at once: one creates the Secret, the other's
create is refused (409) and it reads that one; both serve the same certificate, the leader alone writes
the webhook configurations (their caBundle the Secret's CA), and every call succeeds whichever replica
the apiserver picks. With the leader stopped (and its address out of the EndpointSlice, as the
endpoint controller would take it out), the other replica leads and the webhooks still answer.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import signal
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from kubernetes import client
from kubernetes.client import ApiException

from tests.e2e.controlplanes import running
from tests.e2e.netns import NetnsHost, netns_host
from tests.e2e.operator_fixtures import (
    OPERATOR_NS,
    Kube,
    OperatorProcess,
    apply_crds,
    podgroup,
    queue,
    wait_for,
)
from tests.helmtool import CHART, helm
from volsched.kube.rest import LeanRest
from volsched.kube.secret import SecretStore
from volsched.model.vocabulary import API_GROUP
from volsched.operator.certs import Issued, SharedCerts, issue, parse, signed_by
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

SERVICE = "volsched-webhook"
SECRET = "volsched-webhook-certs"
PORT = 9443
DNS = f"{SERVICE}.{OPERATOR_NS}.svc"


@pytest.fixture(scope="module")
def aggregating() -> Iterator[LocalControlPlane]:
    """A control plane that routes to a Service's endpoints (no kube-proxy here), with the CRDs."""
    with running(LocalControlPlane(aggregation=True)) as cp:
        with cp.api_client() as api:
            apply_crds(api)
            client.CoreV1Api(api).create_namespace({"metadata": {"name": OPERATOR_NS}})
        yield cp


@pytest.fixture
def hosts() -> Iterator[tuple[NetnsHost, NetnsHost]]:
    with netns_host(207) as a, netns_host(208) as b:
        yield a, b


def _endpoint_slice(addresses: list[str]) -> dict[str, Any]:
    """The EndpointSlice of the webhooks' Service (no endpoint controller runs here), listing ``addresses``."""
    return {
        "metadata": {"name": f"{SERVICE}-1", "labels": {"kubernetes.io/service-name": SERVICE}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [a], "conditions": {"ready": True}} for a in addresses],
        "ports": [{"name": "webhook", "port": PORT, "protocol": "TCP"}],
    }


def _service(k: Kube, addresses: list[str]) -> None:
    """The webhooks' Service (no selector) and its EndpointSlice, listing ``addresses``."""
    core, discovery = k.core, client.DiscoveryV1Api(k.api)
    slice_ = _endpoint_slice(addresses)
    try:
        core.create_namespaced_service(
            OPERATOR_NS,
            {
                "metadata": {"name": SERVICE},
                "spec": {"ports": [{"name": "webhook", "port": 443, "targetPort": PORT}]},
            },
        )
        discovery.create_namespaced_endpoint_slice(OPERATOR_NS, slice_)
    except ApiException as exc:
        if exc.status != 409:
            raise
        discovery.replace_namespaced_endpoint_slice(f"{SERVICE}-1", OPERATOR_NS, slice_)


def _served_certificate(address: str, ca: bytes) -> bytes:
    """The certificate the webhook server at ``address`` presents, verified against ``ca`` for the
    Service's DNS name (as the apiserver verifies it)."""
    context = ssl.create_default_context(cadata=ca.decode())
    with (
        socket.create_connection((address, PORT), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=DNS) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


def _fenced(k: Kube) -> None:
    """Queue team-a, taking only namespaces labelled team=a, and namespace team-b (labelled team=b)."""
    k.queue(queue("team-a", namespaceSelector={"matchLabels": {"team": "a"}}))
    k.core.create_namespace({"metadata": {"name": "team-b", "labels": {"team": "b"}}})


def _refusal(k: Kube, name: str) -> str | None:
    """Create a PodGroup for a queue the namespace may not use: the refusal's message (None: let in,
    deleted again)."""
    try:
        k.podgroup("team-b", podgroup(name, 1, queue="team-a"))
    except ApiException as exc:
        return str(json.loads(exc.body or "{}").get("message") or exc.body)
    k.custom.delete_namespaced_custom_object(API_GROUP, "v1beta1", "team-b", "podgroups", name)
    return None


def _near_its_end(core: client.CoreV1Api, name: str) -> x509.Certificate:
    """Secret ``name``'s certificate replaced by one its CA issued 300 days ago (near its end): the one
    written."""
    secret = core.read_namespaced_secret(name, OPERATOR_NS)
    issued = parse({k: base64.b64decode(v) for k, v in secret.data.items()})
    assert issued is not None
    ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=300)
    cert, key = issue(issued.cas[0], issued.ca_key, [DNS], now=ago)
    ending = Issued(cas=issued.cas, ca_key=issued.ca_key, cert=cert, key=key).data()
    secret.data = {k: base64.b64encode(v).decode() for k, v in ending.items()}
    core.replace_namespaced_secret(name, OPERATOR_NS, secret)
    return cert


def _answered(op: OperatorProcess) -> int:
    """Admission reviews this replica answered (the operator's line for each refusal)."""
    return op.log().count("create of PodGroup team-b/steal-")


def test_two_replicas_share_one_certificate_and_either_answers_the_apiserver(
    aggregating: LocalControlPlane, hosts: tuple[NetnsHost, NetnsHost], tmp_path: Path
) -> None:
    with aggregating.api_client() as api:
        k = Kube(api)
        k.queue(queue("default"))
        _fenced(k)
        addresses = [h.gateway for h in hosts]
        _service(k, addresses)
        args = [
            "--webhook-port", str(PORT),
            "--webhook-service", f"{OPERATOR_NS}/{SERVICE}",
            "--webhook-cert-secret", SECRET,
            "--log-level", "INFO,kopf=DEBUG",
        ]  # fmt: skip
        ops = [
            OperatorProcess(
                aggregating.kubeconfig_path, tmp_path / f"operator-{i}.log", *args, "--webhook-host", address
            )
            for i, address in enumerate(addresses)
        ]
        # Both at once: their creates of the Secret race.
        starts = [threading.Thread(target=op.start) for op in ops]
        for t in starts:
            t.start()
        for t in starts:
            t.join()
        try:
            for op in ops:
                op.check_running()
            wait_for(
                lambda: all("Listening for webhooks" in op.log() for op in ops),
                60,
                what="both serving webhooks",
            )

            # One Secret, made by one of them; both serve its certificate, valid for the Service's name.
            made = [op for op in ops if "webhook certificates: created Secret" in op.log()]
            assert len(made) == 1
            secret = k.core.read_namespaced_secret(SECRET, OPERATOR_NS)
            ca, cert = (base64.b64decode(secret.data[key]) for key in ("ca.crt", "tls.crt"))
            served = {_served_certificate(a, ca) for a in addresses}
            assert served == {ssl.PEM_cert_to_DER_cert(cert.decode())}

            # The apiserver's calls succeed whichever replica it picks: each refusal comes from a webhook.
            said = wait_for(lambda: _refusal(k, "probe"), 60, what="the webhooks in place")
            assert "queue team-a does not take jobs of namespace team-b" in said
            for i in range(40):
                said = _refusal(k, f"steal-{i}") or ""
                assert "denied the request: queue team-a does not take jobs of namespace team-b" in said
            assert all(_answered(op) > 0 for op in ops), [_answered(op) for op in ops]
            config = client.AdmissionregistrationV1Api(api).read_validating_webhook_configuration(
                "volsched.io"
            )
            bundles = {w.client_config.ca_bundle for w in config.webhooks}
            assert bundles == {base64.b64encode(ca).decode()}
            assert {w.client_config.service.name for w in config.webhooks} == {SERVICE}
            # Only the leader wrote the configurations.
            writers = [op for op in ops if "Reconfiguring the validating webhook" in op.log()]
            leader = client.CoordinationV1Api(api).read_namespaced_lease("volsched-scheduler", OPERATOR_NS)
            assert len(writers) == 1

            # A certificate near its end (same CA): a replica renews it before it expires, both serve the
            # renewed one (kopf's server reloads the files), and the apiserver's calls still succeed.
            ending_der = _near_its_end(k.core, SECRET).public_bytes(serialization.Encoding.DER)

            def renewed_and_served() -> bool:
                data = k.core.read_namespaced_secret(SECRET, OPERATOR_NS).data
                cert = base64.b64decode(data["tls.crt"])
                wanted = ssl.PEM_cert_to_DER_cert(cert.decode())
                if wanted == ending_der:
                    return False
                try:
                    return {_served_certificate(a, ca) for a in addresses} == {wanted}
                except ConnectionRefusedError:  # kopf's server stops and listens again to load the files
                    return False

            wait_for(renewed_and_served, 120, what="the certificate renewed and served by both replicas")
            for i in range(10):
                said = _refusal(k, f"renewed-{i}") or ""
                assert "denied the request: queue team-a does not take jobs of namespace team-b" in said

            # The leader stops (gracefully: kopf withdraws what it wrote) and leaves the EndpointSlice.
            gone = writers[0]
            rest = ops[1 - ops.index(gone)]
            assert leader.spec.holder_identity
            gone.stop(signal.SIGTERM)
            _service(k, [a for a, op in zip(addresses, ops, strict=True) if op is rest])
            said = wait_for(lambda: _refusal(k, "after"), 90, what="the other replica leading the webhooks")
            assert "queue team-a does not take jobs of namespace team-b" in said
            assert "Reconfiguring the validating webhook" in rest.log()
        finally:
            for op in ops:
                op.stop()


def test_replicas_racing_to_create_or_renew_the_secret_end_up_with_one_and_the_same(
    aggregating: LocalControlPlane,
) -> None:
    """Eight at once against the real apiserver: one create wins (the others' are refused with 409 and
    they read the winner's); then, with the certificate near its end, one renewal wins (the others'
    replace is refused, they read the winner's)."""
    name = "race-certs"
    with aggregating.api_client() as api:
        rest = LeanRest(api, direct=False)
        shared = [SharedCerts(SecretStore(rest, OPERATOR_NS, name), [DNS]) for _ in range(8)]
        barrier = threading.Barrier(len(shared))
        got: list[dict[str, bytes] | None] = [None] * len(shared)

        def sync(i: int) -> None:
            barrier.wait()
            got[i] = shared[i].sync()

        def all_at_once() -> None:
            threads = [threading.Thread(target=sync, args=(i,)) for i in range(len(shared))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        all_at_once()
        assert got[0] is not None and all(g == got[0] for g in got)
        first = parse(got[0])
        assert first is not None

        # Near its end: renewed once, by the same CA.
        cert = _near_its_end(client.CoreV1Api(api), name)
        all_at_once()
        assert got[0] is not None and all(g == got[0] for g in got)
        second = parse(got[0])
        assert second is not None
        assert second.cert != cert and second.cas == first.cas and signed_by(second.cert, first.cas[0])
        stored = client.CoreV1Api(api).read_namespaced_secret(name, OPERATOR_NS).data
        assert base64.b64decode(stored["tls.crt"]) == got[0]["tls.crt"]


@pytest.fixture
def bare_aggregating() -> Iterator[LocalControlPlane]:
    """A control plane that routes to a Service's endpoints, without the CRDs: the chart brings them."""
    with running(LocalControlPlane(aggregation=True)) as cp:
        yield cp


@pytest.mark.helm
def test_the_charts_webhooks_run_with_the_charts_rights_and_flags(
    bare_aggregating: LocalControlPlane, tmp_path: Path
) -> None:
    """``helm install --set webhook.enabled=true``: the operator, with the chart's service account (its
    RBAC: the shared Secret's create/get/update, the configurations') and the chart's webhook flags,
    makes the Secret, fills in the configurations the chart owns, and answers through the chart's
    Service; ``helm uninstall`` removes the configurations."""
    kubeconfig = str(bare_aggregating.kubeconfig_path)
    helm("install", "volsched", str(CHART), "-n", OPERATOR_NS, "--create-namespace", "--kubeconfig", kubeconfig,
         "--set", "webhook.enabled=true")  # fmt: skip
    with netns_host(209) as host, bare_aggregating.api_client() as api:
        k = Kube(api)
        deploy = client.AppsV1Api(api).read_namespaced_deployment("volsched", OPERATOR_NS)
        args = deploy.spec.template.spec.containers[0].args
        flags = [
            a
            for i, a in enumerate(args)
            if a.startswith("--webhook-") or args[i - 1].startswith("--webhook-")
        ]
        assert flags[flags.index("--webhook-cert-secret") + 1] == SECRET
        flags[flags.index("--webhook-host") + 1] = host.gateway  # the pod's address, here
        client.DiscoveryV1Api(api).create_namespaced_endpoint_slice(
            OPERATOR_NS, _endpoint_slice([host.gateway])
        )
        _fenced(k)
        token = bare_aggregating.service_account_token(OPERATOR_NS, "volsched", create=False)
        sa = bare_aggregating.write_kubeconfig(tmp_path / "sa.kubeconfig", token=token)
        op = OperatorProcess(sa, tmp_path / "operator.log", *flags).start()
        try:
            said = wait_for(
                lambda: _refusal(k, "probe"), 60, what="the chart's webhooks answering", operator=op
            )
            assert "queue team-a does not take jobs of namespace team-b" in said
            assert k.core.read_namespaced_secret(SECRET, OPERATOR_NS).type == "kubernetes.io/tls"
            admission = client.AdmissionregistrationV1Api(api)
            config = admission.read_validating_webhook_configuration("volsched.io")
            assert config.metadata.labels["app.kubernetes.io/managed-by"] == "Helm" and config.webhooks
            log = op.log().lower()
            assert "forbidden" not in log and " 403" not in log
        finally:
            op.stop()
        helm("uninstall", "volsched", "-n", OPERATOR_NS, "--kubeconfig", kubeconfig)
        for read in (
            admission.read_validating_webhook_configuration,
            admission.read_mutating_webhook_configuration,
        ):
            with pytest.raises(ApiException) as gone:
                read("volsched.io")
            assert gone.value.status == 404
