"""API client settings: from a kubeconfig file, in-cluster, or the default kubeconfig.

:func:`load_configuration` reads them with :mod:`volsched.kube.kubeconfig` (no import of the Kubernetes
client) and falls back to the client's own loader for what that one declines (exec plugins, auth
providers...: it says which, at INFO). Either kind of settings serves volsched's HTTP path, which reads
the same attribute names of both; :func:`library_api_client` makes the client's own ``ApiClient`` for
the few edges that call the client's API (the custom metrics source).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import yaml

from volsched.kube.kubeconfig import Api, ClientConfig, in_cluster, read_kubeconfig
from volsched.model.errors import InputError

log = logging.getLogger("volsched.kube")

#: Where the client's loader looks when no kubeconfig is named and no service account is found.
DEFAULT_KUBECONFIG = "~/.kube/config"


def load_configuration(kubeconfig: str | None = None, *, pool_size: int = 16) -> Any:
    """Client settings (a :class:`~volsched.kube.kubeconfig.ClientConfig`, or the client's
    ``Configuration`` for a kubeconfig only the client reads): ``kubeconfig`` if given, else in-cluster,
    else ``$KUBECONFIG``/~/.kube/config."""
    cfg = _load(kubeconfig)
    cfg.connection_pool_maxsize = max(pool_size, 4)
    return cfg


def _load(kubeconfig: str | None) -> Any:
    loaded = read_configuration(kubeconfig)
    if isinstance(loaded, tuple):
        return _client_loader(loaded[0], why=loaded[1])
    return loaded


def read_configuration(kubeconfig: str | None) -> ClientConfig | tuple[str | None, str]:
    """The settings :mod:`~volsched.kube.kubeconfig` reads for ``kubeconfig`` (None: in-cluster, else the
    default kubeconfig), or what to hand the client's loader instead: (the kubeconfig, why). Raises
    :class:`InputError` when there is none to read (no ``kubeconfig``, no service account, and no file
    where ``$KUBECONFIG`` or ~/.kube/config says) or it cannot be read."""
    if not kubeconfig:
        cfg = in_cluster()
        if cfg is not None:
            return cfg
        named = os.environ.get("KUBECONFIG", "")
        if os.pathsep in named.strip(os.pathsep):  # several files, merged: the client's loader merges
            return None, "$KUBECONFIG names several files"
        kubeconfig = os.path.expanduser(named.strip(os.pathsep) or DEFAULT_KUBECONFIG)
        if not os.path.exists(kubeconfig):  # (the client's loader finds nothing either: it looks there)
            where = "$KUBECONFIG" if named.strip(os.pathsep) else DEFAULT_KUBECONFIG
            raise InputError(
                f"no kubeconfig: not in a pod with a service account, and no {kubeconfig} ({where}); "
                "name one with --kubeconfig FILE or $KUBECONFIG"
            )
    try:
        loaded = read_kubeconfig(kubeconfig)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"kubeconfig {kubeconfig}: cannot be read: {_why(exc)}") from None
    if isinstance(loaded, str):
        return kubeconfig, loaded
    return loaded


def _why(exc: Exception) -> str:
    """What went wrong reading a kubeconfig, in a line: the system's reason, or where the YAML breaks."""
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"not valid YAML at line {mark.line + 1}, column {mark.column + 1}: {exc.problem}"
    return f"not valid YAML or UTF-8 ({type(exc).__name__})"


def _default_named() -> str:
    """What the client's loader reads when no kubeconfig is named (and not in a pod): the files
    ``$KUBECONFIG`` names (merged), else ~/.kube/config. Said so in its lines: "(default)" said nothing of
    which files when ``$KUBECONFIG`` names several."""
    named = os.environ.get("KUBECONFIG", "").strip(os.pathsep)
    return f"$KUBECONFIG ({named})" if named else DEFAULT_KUBECONFIG


def _client_loader(kubeconfig: str | None, *, why: str) -> Any:
    """The Kubernetes client's loader (it imports the client): what :func:`read_kubeconfig` declines."""
    where = kubeconfig or _default_named()
    log.info("kubeconfig %s: %s; loaded by the Kubernetes client's loader", where, why)
    from kubernetes import client, config

    cfg = client.Configuration()
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            try:
                config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            except config.ConfigException:
                # $KUBECONFIG as it is now: the loader's own default is what it was at its import
                named = os.environ.get("KUBECONFIG", DEFAULT_KUBECONFIG)
                config.load_kube_config(config_file=named, client_configuration=cfg)  # type: ignore[no-untyped-call]
    except config.ConfigException as exc:  # what the loader refuses, said in a line (not a traceback)
        raise InputError(f"kubeconfig {where}: {exc}") from None
    return cfg


def new_api_client(cfg: Any) -> Any:
    """An API client on ``cfg`` for volsched's HTTP path (:class:`~volsched.kube.rest.LeanRest`, the
    Lease, the writer, the watches): no import of the Kubernetes client for settings read here."""
    if isinstance(cfg, ClientConfig):
        return Api(cfg)
    from kubernetes import client

    return client.ApiClient(cfg)


def library_api_client(cfg: Any) -> Any:
    """The Kubernetes client's own ``ApiClient`` on ``cfg`` (imports the client), for code that calls the
    client's API: settings read here are copied into a client ``Configuration``, the token read through
    them at each refresh (a rotated token file is followed)."""
    from kubernetes import client

    if not isinstance(cfg, ClientConfig):
        return client.ApiClient(cfg)
    theirs = client.Configuration()
    theirs.host = cfg.host
    theirs.ssl_ca_cert = cfg.ssl_ca_cert
    theirs.cert_file = cfg.cert_file
    theirs.key_file = cfg.key_file
    theirs.verify_ssl = cfg.verify_ssl
    theirs.tls_server_name = cfg.tls_server_name
    theirs.proxy = cfg.proxy
    theirs.connection_pool_maxsize = cfg.connection_pool_maxsize

    def refresh(conf: Any) -> None:
        header = cfg.get_api_key_with_prefix("BearerToken")
        if header:
            conf.api_key["BearerToken"] = header

    refresh(theirs)
    theirs.refresh_api_key_hook = refresh  # type: ignore[assignment]  # typed None, called when set
    return client.ApiClient(theirs)


def bearer_token(cfg: Any) -> str | None:
    """The bearer token a configuration sends, wherever this client version keeps it."""
    header: str | None = None
    for key in ("BearerToken", "authorization"):
        try:
            header = cfg.get_api_key_with_prefix(key) or None
        except Exception:  # pragma: no cover - older/newer clients
            header = None
        if header:
            break
    if not header:
        return None
    parts = header.split(" ", 1)
    return parts[-1]


def consume(resp: Any) -> bytes:
    """Read a ``_preload_content=False`` response to its end, then hand its connection back to the pool.

    A connection released with its body unread goes back to the pool with the body still on the wire;
    the next request on it (any call sharing the pool: writes, the Lease, the ConfigMap) then reads
    that body as its status line (``BadStatusLine``).
    """
    try:
        return bytes(resp.read())
    finally:
        resp.release_conn()
