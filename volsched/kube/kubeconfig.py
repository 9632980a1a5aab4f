"""The apiserver's address and credentials from a kubeconfig or the pod's service account, read without
the Kubernetes client.

Importing the client's loader imports the whole client package (oauthlib, requests, pydantic, urllib3,
its models' machinery): CPU on every start (docs/operating.md), for settings volsched's own HTTP path
(:mod:`volsched.kube.rest`) reads a dozen fields of. :func:`read_kubeconfig` reads the common forms
itself, with PyYAML; :func:`in_cluster` the service account's token and CA. Anything else (an exec
plugin, an auth provider, basic auth, impersonation, a field it does not know) it declines, saying
which: the caller (:func:`volsched.kube.client.load_configuration`) then loads that kubeconfig with the
client's own loader, as before, and pays the import.

Read here, as the client reads them: the current context's cluster (``server``; with https, the
``certificate-authority`` file or ``-data``, ``insecure-skip-tls-verify``, ``tls-server-name``,
``proxy-url``) and user (``token`` or ``tokenFile``; ``client-certificate`` and ``client-key``, file or
``-data``), relative paths from the kubeconfig's directory, ``-data`` preferred to a file. Data fields are
written to files of a private directory (the TLS settings and kopf take paths), removed at exit. A token
file (``tokenFile``, the service account's) is read again every :data:`TOKEN_REREAD` seconds, as
client-go does, so a rotated token is used. Every token read is registered with
:mod:`volsched.redaction`: no log line shows it, and :class:`ClientConfig`'s repr leaves it out.

It is not an HTTP client (that is :mod:`volsched.kube.rest`) and it never runs anything.
"""

from __future__ import annotations

import atexit
import base64
import os
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import yaml

from volsched.redaction import register_secrets

#: Seconds a token read from a file is used before the file is read again (client-go: one minute).
TOKEN_REREAD = 60.0
#: The service account's files in a pod, and the environment that says the pod runs in a cluster.
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
SERVICE_ACCOUNT_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
HOST_ENV, PORT_ENV = "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"
#: What volsched's requests say they are.
USER_AGENT = "volsched"

#: An API client as volsched's HTTP path reads it (``configuration``, ``default_headers``, ``close()``): an
#: :class:`Api`, or the Kubernetes client's ``ApiClient`` (untyped); and settings as it reads them: a
#: :class:`ClientConfig`, or the client's ``Configuration``.
AnyApi: TypeAlias = Any
AnySettings: TypeAlias = Any

#: Fields read here (the rest of the kubeconfig's fields make :func:`read_kubeconfig` decline it), and
#: fields neither loader acts on.
CLUSTER_FIELDS = frozenset(
    (
        "server",
        "certificate-authority",
        "certificate-authority-data",
        "insecure-skip-tls-verify",
        "tls-server-name",
        "proxy-url",
    )
)
USER_FIELDS = frozenset(
    ("token", "tokenFile", "client-certificate", "client-certificate-data", "client-key", "client-key-data")
)
IGNORED_FIELDS = frozenset(("extensions", "disable-compression"))


class ClientConfig:
    """Where the apiserver is and how to talk to it: the attribute names of the Kubernetes client's
    ``Configuration`` that volsched's HTTP path and kopf's login read, and its ``auth_settings()``."""

    def __init__(
        self,
        host: str,
        *,
        ssl_ca_cert: str | None = None,
        cert_file: str | None = None,
        key_file: str | None = None,
        verify_ssl: bool = True,
        tls_server_name: str | None = None,
        proxy: str | None = None,
        token: str | None = None,
        token_file: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host = host
        self.ssl_ca_cert = ssl_ca_cert
        self.cert_file = cert_file
        self.key_file = key_file
        self.verify_ssl = verify_ssl
        self.tls_server_name = tls_server_name
        self.proxy = proxy
        # What the client's Configuration has and nothing here sets.
        self.ca_cert_data: str | None = None
        self.proxy_headers: Mapping[str, str] | None = None
        self.assert_hostname: bool | None = None
        self.socket_options: Any = None
        self.username = ""
        self.password = ""
        self.connection_pool_maxsize = 4
        self._token = token
        self._token_file = token_file
        self._clock = clock
        self._read_at = -float("inf")
        self._lock = threading.Lock()
        register_secrets(token)

    def __repr__(self) -> str:
        how = "token file" if self._token_file else "token" if self._token else "no token"
        return f"ClientConfig(host={self.host!r}, {how}, client certificate: {bool(self.cert_file)})"

    def token(self) -> str | None:
        """The bearer token: the one given, or the token file's, read again when :data:`TOKEN_REREAD`
        seconds old (a file that cannot be read then keeps the last token)."""
        if self._token_file is None:
            return self._token
        with self._lock:
            now = self._clock()
            if self._token is None or now - self._read_at >= TOKEN_REREAD:
                try:
                    token = _read_token(self._token_file)
                except OSError:
                    if self._token is None:
                        raise
                else:
                    register_secrets(token)
                    self._token = token
                self._read_at = now
            return self._token

    def auth_settings(self) -> dict[str, dict[str, str]]:
        """The credentials header, as the client's ``Configuration.auth_settings()`` gives it."""
        token = self.token()
        if not token:
            return {}
        return {
            "BearerToken": {
                "type": "api_key",
                "in": "header",
                "key": "authorization",
                "value": f"Bearer {token}",
            }
        }

    def get_api_key_with_prefix(self, identifier: str, alias: str | None = None) -> str | None:
        """The credentials header's value (``Bearer ...``), as the client's Configuration answers it."""
        return self.auth_settings().get("BearerToken", {}).get("value")


class Api:
    """What volsched's HTTP path reads of an API client: its configuration and default headers."""

    def __init__(self, configuration: ClientConfig) -> None:
        self.configuration = configuration
        self.default_headers = {"User-Agent": USER_AGENT}

    def close(self) -> None:
        """Nothing to close: the connections are :class:`~volsched.kube.rest.LeanRest`'s."""


#: The TLS contexts made, by what each was made of (:func:`_made_of`), shared by every connection made
#: with the same settings: each connection made its own, reading the CA and the client's certificate
#: and key again, where an SSLContext is made to be shared. Emptied at :data:`_CONTEXTS_MAX` entries.
_CONTEXTS: dict[tuple[Any, ...], ssl.SSLContext] = {}
_CONTEXTS_MAX = 16
_contexts_lock = threading.Lock()


def _file_state(path: str | None) -> tuple[Any, ...]:
    """A file's path and what says it was rewritten (its size, times and inode), or the path alone if
    it cannot be read: a certificate rotated on disk is read anew."""
    if not path:
        return (path,)
    try:
        st = os.stat(path)
    except OSError:
        return (path,)
    return (path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _made_of(cfg: AnySettings, check_hostname: bool) -> tuple[Any, ...]:
    """Everything :func:`tls_context` reads of ``cfg``, the files' states included."""
    data = cfg.ca_cert_data
    return (
        _file_state(cfg.ssl_ca_cert),
        data,
        _file_state(cfg.cert_file),
        _file_state(cfg.key_file),
        bool(cfg.verify_ssl),
        check_hostname,
    )


def tls_context(cfg: AnySettings, *, check_hostname: bool = True) -> ssl.SSLContext:
    """The TLS settings of a configuration (either kind): CA file or data, client cert and key,
    verification; ``check_hostname`` False: the certificate is checked, not the name it is for (as
    urllib3 reads ``assert_hostname: false``). One context for the same settings and files, shared by
    every connection made with them: a caller must not change it. A file rewritten since (a rotated
    certificate) makes a new one. Made under the lock: threads that ask at once (the early listings'
    at start) wait for the one being made rather than each making its own (a few ms of CPU each)."""
    key = _made_of(cfg, check_hostname)
    with _contexts_lock:
        found = _CONTEXTS.get(key)
        if found is not None:
            return found
        ctx = _new_tls_context(cfg)
        if not check_hostname and ctx.check_hostname:
            ctx.check_hostname = False
        if len(_CONTEXTS) >= _CONTEXTS_MAX:
            _CONTEXTS.clear()
        _CONTEXTS[key] = ctx
        return ctx


def _new_tls_context(cfg: AnySettings) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
    if cfg.ca_cert_data:
        data = cfg.ca_cert_data
        ctx.load_verify_locations(cadata=data.decode() if isinstance(data, bytes) else data)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _read_token(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


def in_cluster(
    environ: Mapping[str, str] = os.environ,
    *,
    token_path: str = SERVICE_ACCOUNT_TOKEN,
    ca_path: str = SERVICE_ACCOUNT_CA,
    clock: Callable[[], float] = time.monotonic,
) -> ClientConfig | None:
    """The pod's service account, or None when this is not a pod (no service environment, no token or CA
    file), as the client's ``load_incluster_config`` finds it."""
    host, port = environ.get(HOST_ENV), environ.get(PORT_ENV)
    if not host or not port or not os.path.isfile(token_path) or not os.path.isfile(ca_path):
        return None
    if ":" in host or "%" in host:
        host = f"[{host}]"
    cfg = ClientConfig(f"https://{host}:{port}", ssl_ca_cert=ca_path, token_file=token_path, clock=clock)
    if not cfg.token():
        return None  # an empty token file: not a service account the client would use either
    return cfg


class _DataFiles:
    """Files for a kubeconfig's ``-data`` fields, in one private directory removed at exit."""

    _dir: str | None = None
    _lock = threading.Lock()

    @classmethod
    def write(cls, content: bytes) -> str:
        import shutil  # (a ``-data`` field's only: they, with bz2 and lzma, are kept off
        import tempfile  # the way to the first pages, kube/early.py)

        with cls._lock:
            if cls._dir is None:
                cls._dir = tempfile.mkdtemp(prefix="volsched-kubeconfig-")  # mode 0700
                atexit.register(shutil.rmtree, cls._dir, True)
            fd, path = tempfile.mkstemp(dir=cls._dir)  # mode 0600
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        return path


def _named(entries: Any, name: Any) -> dict[str, Any] | None:
    """The entry named ``name`` of a kubeconfig list (None: no list, none or several)."""
    if not isinstance(entries, list):
        return None
    found = [e for e in entries if isinstance(e, dict) and e.get("name") == name]
    return found[0] if len(found) == 1 else None


def read_kubeconfig(path: str, *, clock: Callable[[], float] = time.monotonic) -> ClientConfig | str:
    """The current context's settings, or why this loader leaves the file to the client's (a field it
    does not read, by name only, never by value; a form it does not expect)."""
    with open(path, encoding="utf-8") as f:
        doc = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(doc, dict):
        return "not a mapping"
    context = _named(doc.get("contexts"), doc.get("current-context"))
    if context is None or not isinstance(context.get("context"), dict):
        return "no single current context"
    entry = _named(doc.get("clusters"), context["context"].get("cluster"))
    cluster = entry.get("cluster") if entry else None
    if not isinstance(cluster, dict) or not isinstance(cluster.get("server"), str):
        return "no cluster with a server for the current context"
    user: dict[str, Any] = {}
    if context["context"].get("user"):
        entry = _named(doc.get("users"), context["context"]["user"])
        if entry is None or not isinstance(entry.get("user") or {}, dict):
            return "no single user of the current context's name"
        user = entry.get("user") or {}
    unread = sorted((set(cluster) - CLUSTER_FIELDS | set(user) - USER_FIELDS) - IGNORED_FIELDS)
    if unread:
        return f"it uses {', '.join(unread)}"
    base = os.path.dirname(os.path.abspath(path))

    def as_file(fields: dict[str, Any], key: str) -> str | None:
        """``key``'s file (relative to the kubeconfig) or ``key-data`` written to one; "" if missing."""
        data = fields.get(f"{key}-data")
        if data:
            return _DataFiles.write(base64.standard_b64decode(str(data)))
        if fields.get(key):
            file = os.path.normpath(os.path.join(base, str(fields[key])))
            return file if os.path.isfile(file) else ""
        return None

    host = cluster["server"].rstrip("/")
    ca = cert = key = None
    if host.startswith("https"):
        ca, cert, key = (
            as_file(cluster, "certificate-authority"),
            as_file(user, "client-certificate"),
            as_file(user, "client-key"),
        )
        if "" in (ca, cert, key):
            return "a file it names does not exist"
    token = user.get("token") or None
    token_file = None
    if token is None and user.get("tokenFile"):
        token_file = os.path.normpath(os.path.join(base, str(user["tokenFile"])))
    cfg = ClientConfig(
        host,
        ssl_ca_cert=ca,
        cert_file=cert,
        key_file=key,
        verify_ssl=not cluster.get("insecure-skip-tls-verify", False),
        tls_server_name=cluster.get("tls-server-name"),
        proxy=cluster.get("proxy-url"),
        token=str(token) if token is not None else None,
        token_file=token_file,
        clock=clock,
    )
    if token_file is not None:
        cfg.token()  # read now: a missing file is the caller's error at start, not a request's later
    return cfg
