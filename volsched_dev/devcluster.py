"""A throw-away local Kubernetes control plane: a real etcd and a real kube-apiserver.

What it is
    :class:`LocalControlPlane` starts etcd and kube-apiserver (built from source by
    ``hack/controlplane/build.sh`` and cached outside the repository) on random free
    loopback ports in a temporary directory, with static-token authentication, RBAC
    authorization and service-account token signing, waits until ``/readyz`` passes,
    and writes a kubeconfig. It is meant for integration tests (``tests/e2e``) and for
    demos: ``python -m volsched_dev.devcluster up`` starts one and waits for Ctrl-C.
    With ``aggregation=True`` the apiserver is also an API aggregator (front-proxy CA
    and client certificate in the temporary directory, ``--requestheader-*`` and
    ``--proxy-client-*`` flags, ``--enable-aggregator-routing``), so an APIService can
    route a group to an extension server. The apiserver resolves the APIService's
    Service through its EndpointSlices, which nobody maintains here: create the Service
    (no selector) and an EndpointSlice yourself. EndpointSlice addresses may not be
    loopback, so the extension server must listen on a test host of your own (the e2e
    tests make one in a network namespace, tests/e2e/netns.py).

    With ``controllers`` it also runs kube-controller-manager with those controllers
    (:data:`REAL_CONTROLLERS`: Job, ReplicaSet, StatefulSet, garbage collector,
    disruption, namespace), and with ``kwok=True`` it runs kwok
    (``hack/kwok/build.sh``, stages in ``hack/kwok/stages.yaml``): nodes made with
    :meth:`LocalControlPlane.kwok_node` become Ready and keep beating, a pod bound to one
    runs, is Succeeded after the duration of its annotation
    ``pod-complete.stage.kwok.x-k8s.io/delay`` (runs for ever without one), and is gone
    once deleted. :meth:`LocalControlPlane.real` asks for both.

What it is not
    A cluster, by default. There is no kubelet, no kube-controller-manager and (unless you start
    one yourself) no kube-scheduler: nodes are plain API objects whose status you write,
    pods never run, nothing garbage-collects, no namespace controller finalizes deleted
    namespaces, no service-account controller creates ``default`` service accounts.
    For that reason the ``ServiceAccount``, ``TaintNodesByCondition`` and
    ``StorageObjectInUseProtection`` admission plugins are disabled by default (the
    first would reject every pod for lack of a ``default`` service account, the second
    would taint new nodes ``not-ready``, the third would add PVC/PV finalizers nobody
    removes). A pod bound to a node is deleted at once only when its grace period is 0
    (``terminationGracePeriodSeconds: 0`` or a delete with ``grace_period_seconds=0``);
    otherwise it stays, terminating, until someone deletes it with grace 0, because the
    kubelet that would confirm the termination does not exist. It is not hardened, not
    persistent and not for production.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

__all__ = [
    "ADMIN_USER",
    "DEFAULT_DISABLED_ADMISSION_PLUGINS",
    "FRONT_PROXY_CLIENT",
    "KWOK_NODE_ANNOTATION",
    "REAL_CONTROLLERS",
    "RUN_FOR",
    "TEST_USER",
    "ControlPlaneError",
    "LocalControlPlane",
    "TokenUser",
    "build_script",
    "ensure_binaries",
    "ensure_kwok",
    "main",
]

ADMIN_USER = "volsched-admin"
"""Static-token user in group ``system:masters`` (may do anything)."""

TEST_USER = "volsched-tester"
"""Static-token user with no groups besides ``system:authenticated``: RBAC denies it
everything (beyond discovery) until a Role or ClusterRole binding grants it."""

DEFAULT_DISABLED_ADMISSION_PLUGINS: tuple[str, ...] = (
    "ServiceAccount",
    "TaintNodesByCondition",
    "StorageObjectInUseProtection",
)

REAL_CONTROLLERS: tuple[str, ...] = (
    "job-controller",
    "replicaset-controller",
    "statefulset-controller",
    "garbage-collector-controller",
    "disruption-controller",
    "namespace-controller",
)
"""The kube-controller-manager controllers a "real" control plane runs (:meth:`LocalControlPlane.real`)."""

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
"""The annotation (value ``fake``) of the nodes kwok manages."""

RUN_FOR = "pod-complete.stage.kwok.x-k8s.io/delay"
"""A pod's annotation: how long it runs on a kwok node before it is Succeeded (``"5s"``, ``"2m"``)."""

FRONT_PROXY_CLIENT = "front-proxy-client"
"""Common name of the client certificate the aggregator presents to extension servers."""

SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"

_LOG_TAIL_LINES = 40
_BUILD_TIMEOUT_S = 60 * 60


class ControlPlaneError(RuntimeError):
    """The binaries could not be built or found, or the control plane did not start."""


@dataclass(frozen=True)
class TokenUser:
    """One line of the apiserver's static token file."""

    name: str
    token: str
    groups: tuple[str, ...] = ()
    uid: str = ""

    def csv_line(self) -> str:
        for value in (self.name, self.token, self.uid, *self.groups):
            if any(c in value for c in ',"\n'):
                raise ValueError(f"token-file values may not contain ',', '\"' or newlines: {value!r}")
        line = f"{self.token},{self.name},{self.uid or self.name}"
        if self.groups:
            line += ',"' + ",".join(self.groups) + '"'
        return line


# --------------------------------------------------------------------------- binaries


_HACK = Path(__file__).resolve().parent.parent / "hack"


def build_script() -> Path | None:
    """``hack/controlplane/build.sh`` of the source checkout this module lives in, if any."""
    script = _HACK / "controlplane" / "build.sh"
    return script if script.is_file() else None


def _has_binaries(directory: Path, names: Sequence[str]) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in names)


def _build(script: Path, names: Sequence[str], *, verbose: bool) -> Path:
    """Run a ``build.sh`` (it prints its binary directory last) and check it holds ``names``."""
    cmd = ["bash", str(script)]
    try:
        proc = subprocess.run(
            cmd,
            stdout=subprocess.PIPE,
            stderr=None if verbose else subprocess.PIPE,
            text=True,
            timeout=_BUILD_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ControlPlaneError(f"{script} did not finish within {_BUILD_TIMEOUT_S}s") from exc
    if proc.returncode != 0:
        output = (proc.stderr or "") + (proc.stdout or "")
        raise ControlPlaneError(
            f"{' '.join(cmd)} failed with exit code {proc.returncode}:\n{_tail_text(output)}"
        )
    lines = proc.stdout.strip().splitlines()
    directory = Path(lines[-1]) if lines else Path()
    if not lines or not _has_binaries(directory, names):
        raise ControlPlaneError(f"{script} succeeded but {directory} does not hold {', '.join(names)}")
    return directory


def ensure_kwok(*, verbose: bool = False) -> Path:
    """The ``kwok`` binary: ``$VOLSCHED_KWOK_BIN`` when set (nothing is built), else the one
    ``hack/kwok/build.sh`` finds in its cache or builds (a minute or two cold)."""
    override = os.environ.get("VOLSCHED_KWOK_BIN")
    if override:
        if not os.access(override, os.X_OK):
            raise ControlPlaneError(f"VOLSCHED_KWOK_BIN={override} is not an executable")
        return Path(override)
    script = _HACK / "kwok" / "build.sh"
    if not script.is_file():
        raise ControlPlaneError("hack/kwok/build.sh not found; set VOLSCHED_KWOK_BIN to a kwok binary")
    return _build(script, ["kwok"], verbose=verbose) / "kwok"


def ensure_kubeflow(*, verbose: bool = False) -> Path:
    """The directory holding the Kubeflow training operator (``training-operator``, v1: PyTorchJob and
    friends) and its kinds' CRDs (``crds/``), which ``hack/kubeflow/build.sh`` finds in its cache or builds
    (several minutes cold); ``$VOLSCHED_KUBEFLOW_DIR`` when set (nothing is built)."""
    override = os.environ.get("VOLSCHED_KUBEFLOW_DIR")
    if override:
        if not _has_binaries(Path(override), ["training-operator"]):
            raise ControlPlaneError(f"VOLSCHED_KUBEFLOW_DIR={override} holds no executable training-operator")
        return Path(override)
    script = _HACK / "kubeflow" / "build.sh"
    if not script.is_file():
        raise ControlPlaneError("hack/kubeflow/build.sh not found; set VOLSCHED_KUBEFLOW_DIR")
    return _build(script, ["training-operator"], verbose=verbose)


def ensure_binaries(*, verbose: bool = False) -> Path:
    """Return a directory holding ``kube-apiserver`` and ``etcd`` (``build.sh`` also
    builds ``kube-scheduler``, which a ``VOLSCHED_CONTROLPLANE_BIN_DIR`` may lack).

    ``$VOLSCHED_CONTROLPLANE_BIN_DIR``, when set, is used as is (nothing is built).
    Otherwise ``hack/controlplane/build.sh`` is run; it returns at once when the
    binaries are already in its cache and builds them (several minutes) otherwise.
    With ``verbose`` the build's progress goes to stderr; otherwise it is captured and
    only shown, in the :class:`ControlPlaneError`, when the build fails.
    """
    names = ["kube-apiserver", "etcd"]
    override = os.environ.get("VOLSCHED_CONTROLPLANE_BIN_DIR")
    if override:
        directory = Path(override)
        if not _has_binaries(directory, names):
            raise ControlPlaneError(
                f"VOLSCHED_CONTROLPLANE_BIN_DIR={override} does not hold executable {', '.join(names)}"
            )
        return directory
    script = build_script()
    if script is None:
        raise ControlPlaneError(
            "hack/controlplane/build.sh not found (volsched is not run from a source checkout); "
            "set VOLSCHED_CONTROLPLANE_BIN_DIR to a directory with kube-apiserver and etcd"
        )
    return _build(script, names, verbose=verbose)


# --------------------------------------------------------------------------- helpers


def _tail_text(text: str, lines: int = _LOG_TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _tail_file(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        data = path.read_bytes()[-64 * 1024 :]
    except OSError as exc:
        return f"<cannot read {path}: {exc}>"
    return _tail_text(data.decode("utf-8", errors="replace"), lines)


def _free_ports(count: int) -> list[int]:
    """Distinct free loopback TCP ports (free when probed; the caller retries on a race)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _write_rsa_key(path: Path) -> None:
    """Write a fresh PKCS#8 PEM RSA private key (service-account token signing key)."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
    except ImportError:
        openssl = shutil.which("openssl")
        if openssl is None:
            raise ControlPlaneError(
                "need the 'cryptography' package or the openssl CLI to make a service-account key"
            ) from None
        subprocess.run(
            [openssl, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(path)],
            check=True,
            capture_output=True,
        )
        return
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_front_proxy_certs(certs: Path) -> tuple[Path, Path, Path]:
    """A front-proxy CA and a client certificate (CN ``FRONT_PROXY_CLIENT``) signed by it, for API
    aggregation. Returns (ca cert, client cert, client key)."""
    import datetime

    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError:
        raise ControlPlaneError("aggregation=True needs the 'cryptography' package") from None

    now = datetime.datetime.now(datetime.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("volsched-front-proxy-ca"))
        .issuer_name(name("volsched-front-proxy-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(FRONT_PROXY_CLIENT))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = (
        certs / "front-proxy-ca.crt",
        certs / "front-proxy-client.crt",
        certs / "front-proxy-client.key",
    )
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_path.chmod(0o600)
    return ca_path, cert_path, key_path


def _set_pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Have Linux SIGTERM the child if the process that started it dies (no orphans)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


# --------------------------------------------------------------------------- control plane


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]


@dataclass
class LocalControlPlane:
    """etcd + kube-apiserver on loopback, as a context manager.

    >>> with LocalControlPlane() as cp:          # doctest: +SKIP
    ...     v1 = kubernetes.client.CoreV1Api(cp.api_client())
    ...     tester = cp.api_client(user=TEST_USER)  # forbidden until RBAC allows it

    ``users`` maps extra static-token user names to their groups; their tokens are
    generated (see :meth:`token_for`). Users must be known before :meth:`start`: the
    apiserver reads its token file once. For users created while it runs, use
    :meth:`service_account_token`. ``bin_dir`` skips :func:`ensure_binaries`.
    ``base_dir`` is where the temporary directory is made; ``keep_dir`` keeps it after
    :meth:`stop` (logs, kubeconfig). ``kube-scheduler`` is built alongside but never
    started (see :attr:`scheduler_binary`).
    """

    users: Mapping[str, Sequence[str]] = field(default_factory=lambda: {TEST_USER: ()})
    bin_dir: Path | None = None
    base_dir: Path | None = None
    keep_dir: bool = False
    disable_admission_plugins: Sequence[str] = DEFAULT_DISABLED_ADMISSION_PLUGINS
    extra_apiserver_args: Sequence[str] = ()
    startup_timeout: float = 90.0
    verbose_build: bool = False
    #: Serve as an API aggregator for extension servers (APIService); see the module docstring.
    aggregation: bool = False
    #: kube-controller-manager's controllers to run (none: it is not started); see REAL_CONTROLLERS.
    controllers: Sequence[str] = ()
    #: kube-controller-manager's flags beyond the usual ones (e.g. ``--feature-gates=...``).
    extra_controller_manager_args: Sequence[str] = ()
    #: Run kwok: fake nodes (:meth:`kwok_node`) whose pods run and finish.
    kwok: bool = False

    # Set by start().
    workdir: Path = field(init=False, default=Path())
    host: str = field(init=False, default="")
    ca_cert_path: Path = field(init=False, default=Path())
    kubeconfig_path: Path = field(init=False, default=Path())
    etcd_url: str = field(init=False, default="")
    etcd_log_path: Path = field(init=False, default=Path())
    apiserver_log_path: Path = field(init=False, default=Path())
    controller_manager_log_path: Path = field(init=False, default=Path())
    kwok_log_path: Path = field(init=False, default=Path())
    #: With ``aggregation``: the CA that signed the aggregator's client certificate (extension
    #: servers may use it to authenticate the apiserver's proxied requests).
    front_proxy_ca_path: Path | None = field(init=False, default=None)
    _tokens: dict[str, TokenUser] = field(init=False, default_factory=dict)
    _procs: list[_Proc] = field(init=False, default_factory=list)
    _started: bool = field(init=False, default=False)
    _aggregation_args: list[str] = field(init=False, default_factory=list)
    _apiserver_argv: list[str] = field(init=False, default_factory=list)

    @classmethod
    def real(cls, **kwargs: Any) -> LocalControlPlane:
        """A control plane that behaves like a cluster: kube-controller-manager with
        :data:`REAL_CONTROLLERS` and kwok (other fields as given)."""
        return cls(controllers=REAL_CONTROLLERS, kwok=True, **kwargs)

    def __post_init__(self) -> None:
        self._tokens = {ADMIN_USER: TokenUser(ADMIN_USER, secrets.token_hex(24), ("system:masters",))}
        for name, groups in self.users.items():
            self.add_user(name, groups)

    # ----------------------------------------------------------------- users

    def add_user(self, name: str, groups: Sequence[str] = (), token: str | None = None) -> str:
        """Declare a static-token user (before :meth:`start`); returns its token."""
        if self._started:
            raise ControlPlaneError(
                "static-token users must be added before start(); "
                "use service_account_token() for a running control plane"
            )
        if name == ADMIN_USER:
            raise ValueError(f"{ADMIN_USER} is reserved for the admin")
        user = TokenUser(name, token or secrets.token_hex(24), tuple(groups))
        user.csv_line()  # validate now, not at start()
        self._tokens[name] = user
        return user.token

    @property
    def admin_token(self) -> str:
        return self._tokens[ADMIN_USER].token

    def token_for(self, user: str) -> str:
        """Bearer token of a static-token user (``ADMIN_USER``, ``TEST_USER``, ``users``)."""
        try:
            return self._tokens[user].token
        except KeyError:
            raise KeyError(f"no static-token user {user!r}; known: {sorted(self._tokens)}") from None

    @property
    def user_names(self) -> list[str]:
        return sorted(self._tokens)

    # ----------------------------------------------------------------- lifecycle

    def __enter__(self) -> LocalControlPlane:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._started and all(p.popen.poll() is None for p in self._procs)

    def start(self) -> None:
        """Start etcd and kube-apiserver and wait until the apiserver is ready."""
        if self._started:
            raise ControlPlaneError("already started")
        bin_dir = self.bin_dir or ensure_binaries(verbose=self.verbose_build)
        self.bin_dir = bin_dir
        self.workdir = Path(tempfile.mkdtemp(prefix="volsched-cp-", dir=self.base_dir))
        self._started = True
        try:
            self._prepare_files()
            last: ControlPlaneError | None = None
            for _attempt in range(3):  # a probed free port may be taken before we bind it
                try:
                    self._start_processes(bin_dir)
                    return
                except _PortRace as exc:
                    last = ControlPlaneError(str(exc))
                    self._stop_processes()
            assert last is not None
            raise last
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the processes (SIGTERM, wait, SIGKILL) and remove the temporary directory."""
        self._stop_processes()
        if self._started and not self.keep_dir and self.workdir != Path():
            shutil.rmtree(self.workdir, ignore_errors=True)
        self._started = False

    # ----------------------------------------------------------------- clients

    def api_client(self, user: str | None = None, *, token: str | None = None) -> ApiClient:
        """A ``kubernetes.client.ApiClient`` for the admin, a static-token ``user`` or a ``token``."""
        from kubernetes import client

        self._require_started()
        cfg = client.Configuration()
        cfg.host = self.host
        cfg.ssl_ca_cert = str(self.ca_cert_path)
        cfg.verify_ssl = True
        cfg.api_key = {"authorization": token or self.token_for(user or ADMIN_USER)}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        return client.ApiClient(configuration=cfg)

    def kubeconfig(self, user: str | None = None, *, token: str | None = None) -> dict[str, Any]:
        """A kubeconfig (as a dict) for the admin, a static-token ``user`` or a ``token``."""
        self._require_started()
        name = "volsched-dev"
        user_name = user or (ADMIN_USER if token is None else "token-user")
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {"server": self.host, "certificate-authority": str(self.ca_cert_path)},
                }
            ],
            "users": [{"name": user_name, "user": {"token": token or self.token_for(user_name)}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": user_name}}],
            "current-context": name,
            "preferences": {},
        }

    def write_kubeconfig(
        self, path: Path | str, user: str | None = None, *, token: str | None = None
    ) -> Path:
        """Write :meth:`kubeconfig` to ``path`` (mode 0600) and return it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(self.kubeconfig(user, token=token), f, sort_keys=False)
        return path

    def service_account_token(
        self, namespace: str, name: str, *, create: bool = True, expiration_seconds: int = 3600
    ) -> str:
        """A bound token (TokenRequest API) for service account ``namespace/name``.

        Its user name is ``system:serviceaccount:<namespace>:<name>``. The namespace
        and the service account are created when missing and ``create`` is true.
        """
        from kubernetes import client
        from kubernetes.client import ApiException

        with self.api_client() as api:
            v1 = client.CoreV1Api(api)
            if create:
                try:
                    v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
                except ApiException as exc:
                    if exc.status != 409:
                        raise
                try:
                    v1.create_namespaced_service_account(
                        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=name))
                    )
                except ApiException as exc:
                    if exc.status != 409:
                        raise
            request = client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=expiration_seconds)
            )
            resp = v1.create_namespaced_service_account_token(name, namespace, request)
            if resp.status is None or not resp.status.token:
                raise ControlPlaneError(f"TokenRequest for {namespace}/{name} returned no token")
            return str(resp.status.token)

    @property
    def scheduler_binary(self) -> Path | None:
        """``kube-scheduler`` next to the other binaries, if there is one."""
        if self.bin_dir is None:
            return None
        path = self.bin_dir / "kube-scheduler"
        return path if os.access(path, os.X_OK) else None

    def logs(self) -> str:
        """Tails of the etcd and kube-apiserver logs (for error messages)."""
        parts = []
        for label, path in (
            ("etcd", self.etcd_log_path),
            ("kube-apiserver", self.apiserver_log_path),
            ("kube-controller-manager", self.controller_manager_log_path),
            ("kwok", self.kwok_log_path),
        ):
            if path != Path():
                parts.append(f"--- {label} log ({path}), last {_LOG_TAIL_LINES} lines:\n{_tail_file(path)}")
        return "\n".join(parts)

    # ----------------------------------------------------------------- internals

    def _require_started(self) -> None:
        if not self._started or not self.host:
            raise ControlPlaneError("the control plane is not running; use start() or a with-block")

    def _prepare_files(self) -> None:
        (self.workdir / "certs").mkdir()
        (self.workdir / "etcd").mkdir(mode=0o700)
        _write_rsa_key(self.workdir / "sa.key")
        token_file = self.workdir / "tokens.csv"
        token_file.write_text("".join(u.csv_line() + "\n" for u in self._tokens.values()))
        token_file.chmod(0o600)
        self.etcd_log_path = self.workdir / "etcd.log"
        self.apiserver_log_path = self.workdir / "kube-apiserver.log"
        self.ca_cert_path = self.workdir / "certs" / "apiserver.crt"
        self.kubeconfig_path = self.workdir / "kubeconfig"
        if self.aggregation:
            self._aggregation_args = self._prepare_aggregation()

    def _prepare_aggregation(self) -> list[str]:
        ca, cert, key = _write_front_proxy_certs(self.workdir / "certs")
        self.front_proxy_ca_path = ca
        return [
            f"--requestheader-client-ca-file={ca}",
            f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-username-headers=X-Remote-User",
            f"--proxy-client-cert-file={cert}",
            f"--proxy-client-key-file={key}",
            # Route to the Service's endpoints (its EndpointSlices), not its ClusterIP: no kube-proxy.
            "--enable-aggregator-routing=true",
        ]

    def _spawn(self, name: str, argv: list[str], log_path: Path) -> _Proc:
        log_file = open(log_path, "ab")  # noqa: SIM115 - closed in _stop_processes
        log_file.write(f"+ {' '.join(argv)}\n".encode())
        log_file.flush()
        in_main = threading.current_thread() is threading.main_thread()
        popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            start_new_session=True,  # a terminal's Ctrl-C reaches only us; we stop them in order
            preexec_fn=_set_pdeathsig if in_main and sys.platform == "linux" else None,
        )
        proc = _Proc(name, popen, log_path, log_file)
        self._procs.append(proc)
        return proc

    def _start_processes(self, bin_dir: Path) -> None:
        etcd_port, peer_port, api_port = _free_ports(3)
        self.etcd_url = f"http://127.0.0.1:{etcd_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        data_dir = self.workdir / "etcd" / f"data-{etcd_port}"
        etcd = self._spawn(
            "etcd",
            [
                str(bin_dir / "etcd"),
                "--name=volsched-dev",
                f"--data-dir={data_dir}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=volsched-dev={peer_url}",
                "--initial-cluster-state=new",
                "--unsafe-no-fsync",  # throw-away data: don't pay for fsync
                "--log-level=warn",
            ],
            self.etcd_log_path,
        )
        deadline = time.monotonic() + self.startup_timeout
        self._wait_for(etcd, deadline, self._etcd_healthy)

        self.host = f"https://127.0.0.1:{api_port}"
        argv = [
            str(bin_dir / "kube-apiserver"),
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={api_port}",
            f"--cert-dir={self.workdir / 'certs'}",
            f"--token-auth-file={self.workdir / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={self.workdir / 'sa.key'}",
            f"--service-account-signing-key-file={self.workdir / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--allow-privileged=true",
            # The "kubernetes" Service cannot get a loopback endpoint; don't keep trying.
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            "--v=1",
        ]
        if self.disable_admission_plugins:
            argv.append(f"--disable-admission-plugins={','.join(self.disable_admission_plugins)}")
        argv.extend(self._aggregation_args)
        argv.extend(self.extra_apiserver_args)
        self._apiserver_argv = argv
        apiserver = self._spawn("kube-apiserver", argv, self.apiserver_log_path)
        self._wait_for(apiserver, deadline, self._apiserver_ready)
        self.write_kubeconfig(self.kubeconfig_path)
        if self.controllers:
            self._start_controller_manager(bin_dir, deadline)
        if self.kwok:
            self._start_kwok()

    def _start_controller_manager(self, bin_dir: Path, deadline: float) -> None:
        binary = bin_dir / "kube-controller-manager"
        if not os.access(binary, os.X_OK):
            raise ControlPlaneError(
                f"{bin_dir} holds no kube-controller-manager (hack/controlplane/build.sh builds it)"
            )
        (port,) = _free_ports(1)
        kubeconfig = str(self.kubeconfig_path)
        self.controller_manager_log_path = self.workdir / "kube-controller-manager.log"
        argv = [
            str(binary),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--controllers={','.join(self.controllers)}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={self.workdir / 'certs' / 'kcm'}",
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            "--v=1",
            *self.extra_controller_manager_args,
        ]
        proc = self._spawn("kube-controller-manager", argv, self.controller_manager_log_path)
        self._wait_for(proc, deadline, lambda: self._healthy(f"https://127.0.0.1:{port}/healthz"))

    def _start_kwok(self) -> None:
        binary = ensure_kwok(verbose=self.verbose_build)
        self.kwok_log_path = self.workdir / "kwok.log"
        argv = [
            str(binary),
            f"--kubeconfig={self.kubeconfig_path}",
            f"--config={_HACK / 'kwok' / 'stages.yaml'}",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
        ]
        self._spawn("kwok", argv, self.kwok_log_path)

    def kwok_node(
        self,
        name: str,
        *,
        cpu: str = "4",
        memory: str = "8Gi",
        pods: str = "110",
        labels: Mapping[str, str] | None = None,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Create a node kwok manages (it runs the pods bound to it); with ``wait``, return once kwok
        has made it Ready. Needs ``kwok=True``."""
        from kubernetes import client

        if not self.kwok:
            raise ControlPlaneError("kwok_node() needs a control plane started with kwok=True")
        amounts = {"cpu": cpu, "memory": memory, "pods": pods}
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {KWOK_NODE_ANNOTATION: "fake"},
                "labels": {"kubernetes.io/hostname": name, "type": "kwok", **(labels or {})},
            },
            "status": {"capacity": amounts, "allocatable": amounts},
        }
        with self.api_client() as api:
            v1 = client.CoreV1Api(api)
            v1.create_node(body)  # type: ignore[arg-type]  # (it sends a dict as it is)
            deadline = time.monotonic() + self.startup_timeout
            while wait:
                status = v1.read_node(name).status
                conditions = (status.conditions if status is not None else None) or ()
                if any(c.type == "Ready" and c.status == "True" for c in conditions):
                    break
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"kwok did not make node {name} Ready\n{self.logs()}")
                self._check_alive()
                time.sleep(0.2)
        return body

    def processes(self) -> dict[str, int]:
        """The running components and their process ids (etcd, kube-apiserver, and with them
        kube-controller-manager and kwok), for measuring them."""
        return {p.name: p.popen.pid for p in self._procs if p.popen.poll() is None}

    def _check_alive(self) -> None:
        for proc in self._procs:
            code = proc.popen.poll()
            if code is not None:
                raise ControlPlaneError(f"{proc.name} exited with code {code}\n{_tail_file(proc.log_path)}")

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver only (an outage: clients get connection refused); etcd keeps the data."""
        self._require_started()
        for proc in [p for p in self._procs if p.name == "kube-apiserver"]:
            if proc.popen.poll() is None:
                proc.popen.terminate()
                try:
                    proc.popen.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.popen.kill()
                    proc.popen.wait(timeout=15)
            proc.log_file.close()
            self._procs.remove(proc)

    def start_apiserver(self) -> None:
        """Start kube-apiserver again after :meth:`stop_apiserver`: same port, certificates and data."""
        self._require_started()
        if any(p.name == "kube-apiserver" for p in self._procs):
            raise ControlPlaneError("kube-apiserver is running")
        apiserver = self._spawn("kube-apiserver", self._apiserver_argv, self.apiserver_log_path)
        self._wait_for(apiserver, time.monotonic() + self.startup_timeout, self._apiserver_ready)

    def _wait_for(self, proc: _Proc, deadline: float, ready: Callable[[], bool]) -> None:
        while True:
            code = proc.popen.poll()
            if code is not None:
                tail = _tail_file(proc.log_path)
                if "address already in use" in tail:
                    raise _PortRace(f"{proc.name} lost a port race:\n{tail}")
                raise ControlPlaneError(f"{proc.name} exited with code {code} during startup\n{self.logs()}")
            if ready():
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{proc.name} not ready within {self.startup_timeout:.0f}s\n{self.logs()}"
                )
            time.sleep(0.2)

    def _etcd_healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.etcd_url}/health", timeout=2) as resp:
                return b'"health":"true"' in resp.read()
        except (OSError, urllib.error.URLError):
            return False

    def _healthy(self, url: str) -> bool:
        """Whether ``url`` (a component's /healthz over its self-signed certificate) answers 200."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        try:
            with urllib.request.urlopen(url, timeout=5, context=ctx) as resp:
                return bool(resp.status == 200)
        except (OSError, urllib.error.URLError, ssl.SSLError):
            return False

    def _apiserver_ready(self) -> bool:
        if not self.ca_cert_path.is_file():
            return False
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        try:  # the apiserver may be writing its certificate still: a cut-short one is "not yet"
            ctx = ssl.create_default_context(cafile=str(self.ca_cert_path))
            for path in ("/readyz", "/api/v1/namespaces/default"):
                req = urllib.request.Request(self.host + path, headers=headers)
                with urllib.request.urlopen(req, timeout=5, context=ctx) as resp:
                    if resp.status != 200:
                        return False
        except (OSError, urllib.error.URLError, ssl.SSLError):
            return False
        return True

    def _stop_processes(self) -> None:
        # Apiserver first, then etcd (reverse start order).
        for proc in reversed(self._procs):
            if proc.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.popen.terminate()
                try:
                    proc.popen.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        proc.popen.kill()
                    proc.popen.wait(timeout=15)
            proc.log_file.close()
        self._procs.clear()


class _PortRace(ControlPlaneError):
    """A port probed free was taken before the process bound it; start() retries."""


# --------------------------------------------------------------------------- CLI


def _cmd_build(args: argparse.Namespace) -> int:
    try:
        directory = ensure_binaries(verbose=True)
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(directory)
    return 0


def _cmd_up(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    users = {name: () for name in args.user}
    users.setdefault(TEST_USER, ())
    try:
        make = LocalControlPlane.real if args.real else LocalControlPlane
        with make(users=users, keep_dir=args.keep, verbose_build=True) as cp:
            for i in range(args.kwok_nodes if args.real else 0):
                cp.kwok_node(f"kwok-{i}", cpu=args.kwok_cpu)
            kubeconfig = cp.kubeconfig_path
            if args.kubeconfig:
                kubeconfig = cp.write_kubeconfig(args.kubeconfig)
            print(f"kube-apiserver: {cp.host}", flush=True)
            print(f"kubeconfig:     {kubeconfig}", flush=True)
            for name in cp.user_names:
                print(f"token {name}: {cp.token_for(name)}", flush=True)
            print(f"logs:           {cp.workdir}", flush=True)
            print(f"\nexport KUBECONFIG={kubeconfig}\nCtrl-C to stop.", flush=True)
            while not stop.wait(1.0):
                if not cp.running:
                    print(f"a control-plane process exited\n{cp.logs()}", file=sys.stderr)
                    return 1
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m volsched_dev.devcluster",
        description="Local etcd + kube-apiserver for volsched tests and demos.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser(
        "build", help="build (or find in the cache) the binaries and print their directory"
    )
    p_build.set_defaults(func=_cmd_build)
    p_up = sub.add_parser("up", help="start a control plane, print its kubeconfig path, wait for Ctrl-C")
    p_up.add_argument("--kubeconfig", type=Path, help="also write the admin kubeconfig here")
    p_up.add_argument("--user", action="append", default=[], help="extra static-token user (repeatable)")
    p_up.add_argument("--keep", action="store_true", help="keep the temporary directory (logs) on exit")
    p_up.add_argument(
        "--real",
        action="store_true",
        help="also run kube-controller-manager (Job, ReplicaSet, ... controllers) and kwok, with kwok nodes",
    )
    p_up.add_argument(
        "--kwok-nodes", type=int, default=4, help="with --real: how many kwok nodes (default 4)"
    )
    p_up.add_argument("--kwok-cpu", default="8", help="with --real: each kwok node's cpu (default 8)")
    p_up.set_defaults(func=_cmd_up)
    args = parser.parse_args(argv)
    rc: int = args.func(args)
    return rc


if __name__ == "__main__":
    sys.exit(main())
