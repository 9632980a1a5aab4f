"""A minimal extension API server for ``custom.metrics.k8s.io/v1beta1``, behind the REAL kube-apiserver.

Test infrastructure, not part of volsched. It stands in for prometheus-adapter (building that from the Go
module proxy would pull a large dependency tree for one test source): it serves discovery
(``/apis``, ``/apis/custom.metrics.k8s.io``, ``/apis/custom.metrics.k8s.io/v1beta1``) and
``/apis/custom.metrics.k8s.io/v1beta1/nodes/*/<metric>`` as a ``MetricValueList`` from a table the test
sets (``server.values[metric][node] = "250m"``), over TLS with a throw-away self-signed certificate.

:func:`register` wires it into an aggregating :class:`~volsched_dev.devcluster.LocalControlPlane` the way a
cluster would, minus the controllers that do not run there: a Service without a selector, an
EndpointSlice (``kubernetes.io/service-name`` label, port name matching the Service's) that we maintain
ourselves, and an APIService (``insecureSkipTLSVerify``) pointing at the Service. With
``--enable-aggregator-routing`` the apiserver proxies to the EndpointSlice's address. EndpointSlices may
not hold loopback addresses, so the server listens on a test host of our own, in a network namespace
(tests/e2e/netns.py).

It does not authenticate the aggregator's client certificate or check the ``X-Remote-User`` headers
(it records them, so tests can see a request came through the aggregator).
"""

from __future__ import annotations

import datetime
import json
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.netns import NetnsHost, listen_in

GROUP = "custom.metrics.k8s.io"
VERSION = "v1beta1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
METRICS = ("node_cpu_usage_avg", "node_memory_usage_avg")
SERVICE = "custom-metrics"
PORT_NAME = "https"


def self_signed(host: str, directory: Path) -> tuple[Path, Path]:
    """A self-signed serving certificate for IP ``host`` (cert path, key path)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "custom-metrics-test-server")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "serving.crt", directory / "serving.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def _resource(metric: str) -> dict[str, Any]:
    return {
        "name": f"nodes/{metric}",
        "singularName": "",
        "namespaced": False,
        "kind": "MetricValueList",
        "verbs": ["get"],
    }


def _group() -> dict[str, Any]:
    gv = {"groupVersion": GROUP_VERSION, "version": VERSION}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [gv], "preferredVersion": gv}


def _status(code: int, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code}


@dataclass
class Seen:
    path: str
    user: str | None


class CustomMetricsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: NetnsHost, workdir: Path) -> None:
        super().__init__((host.address, 0), _Handler, bind_and_activate=False)
        self.socket.close()
        listening = listen_in(host)
        self.server_address = listening.getsockname()
        cert, key = self_signed(host.address, workdir)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.socket = ctx.wrap_socket(listening, server_side=True)
        self.host = host.address
        self.port = int(self.server_address[1])
        #: metric -> node -> quantity string (anything: malformed values are the point of some tests)
        self.values: dict[str, dict[str, Any]] = {m: {} for m in METRICS}
        self.seen: list[Seen] = []
        self.lock = threading.Lock()

    def answer(self, path: str, user: str | None) -> tuple[int, dict[str, Any]]:
        path = unquote(urlparse(path).path).rstrip("/")
        with self.lock:
            self.seen.append(Seen(path, user))
        if path == "/apis":
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group()]}
        if path == f"/apis/{GROUP}":
            return 200, _group()
        if path == f"/apis/{GROUP_VERSION}":
            return 200, {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": GROUP_VERSION,
                "resources": [_resource(m) for m in METRICS],
            }
        prefix = f"/apis/{GROUP_VERSION}/nodes/"
        if path.startswith(prefix):
            parts = path[len(prefix) :].split("/")
            if len(parts) == 2 and parts[1] in self.values:
                name, metric = parts
                with self.lock:
                    table = dict(self.values[metric])
                stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                items = [
                    {
                        "describedObject": {"kind": "Node", "name": node, "apiVersion": "/v1"},
                        "metricName": metric,
                        "timestamp": stamp,
                        "windowSeconds": 600,
                        "value": value,
                    }
                    for node, value in sorted(table.items())
                    if name in ("*", node)
                ]
                body = {
                    "kind": "MetricValueList",
                    "apiVersion": GROUP_VERSION,
                    "metadata": {},
                    "items": items,
                }
                return 200, body
        return 404, _status(404, f"not found: {path}")

    def set(self, metric: str, values: dict[str, Any]) -> None:
        with self.lock:
            self.values[metric] = dict(values)

    def requests_through_aggregator(self) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.user]


class _Handler(BaseHTTPRequestHandler):
    server: CustomMetricsServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        code, body = self.server.answer(self.path, self.headers.get("X-Remote-User"))
        data = json.dumps(body).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def custom_metrics_server(host: NetnsHost) -> Iterator[CustomMetricsServer]:
    """Serve on the test host ``host`` (in its own network namespace) at a free port until the block ends."""
    with tempfile.TemporaryDirectory(prefix="custom-metrics-") as tmp:
        server = CustomMetricsServer(host, Path(tmp))
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield server
        finally:
            server.shutdown()
            server.server_close()
            thread.join(5)


API_SERVICE = f"{VERSION}.{GROUP}"


def register(api: client.ApiClient, server: CustomMetricsServer, namespace: str) -> None:
    """Service (no selector) + EndpointSlice -> ``server``, and the APIService for the group."""
    core = client.CoreV1Api(api)
    try:
        core.create_namespace({"metadata": {"name": namespace}})
    except ApiException as exc:
        if exc.status != 409:
            raise
    core.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": SERVICE},
            "spec": {
                "type": "ClusterIP",
                "ports": [{"name": PORT_NAME, "port": 443, "targetPort": server.port}],
            },
        },
    )
    client.DiscoveryV1Api(api).create_namespaced_endpoint_slice(
        namespace,
        {
            "metadata": {"name": f"{SERVICE}-1", "labels": {"kubernetes.io/service-name": SERVICE}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [server.host], "conditions": {"ready": True}}],
            "ports": [{"name": PORT_NAME, "port": server.port, "protocol": "TCP"}],
        },
    )
    client.ApiregistrationV1Api(api).create_api_service(
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": API_SERVICE},
            "spec": {
                "group": GROUP,
                "version": VERSION,
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
                "insecureSkipTLSVerify": True,
                "service": {"namespace": namespace, "name": SERVICE, "port": 443},
            },
        }
    )


def available(api: client.ApiClient, name: str = API_SERVICE) -> tuple[bool, str]:
    """Whether the APIService's Available condition is True, and its reason/message."""
    svc = client.ApiregistrationV1Api(api).read_api_service(name)
    for cond in (svc.status.conditions if svc.status else None) or []:
        if cond.type == "Available":
            return cond.status == "True", f"{cond.reason}: {cond.message}"
    return False, "no Available condition yet"


def wait_available(api: client.ApiClient, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        ok, last = available(api)
        if ok:
            return
        time.sleep(0.25)
    raise TimeoutError(f"APIService {VERSION}.{GROUP} not Available after {timeout:.0f}s: {last}")
