"""Kubernetes client configuration: from a kubeconfig file, in-cluster, or the default kubeconfig."""

from __future__ import annotations

from typing import Any

from kubernetes import client, config


def load_configuration(kubeconfig: str | None = None, *, pool_size: int = 16) -> client.Configuration:
    """A client Configuration: ``kubeconfig`` if given, else in-cluster, else ``$KUBECONFIG``/~/.kube/config."""
    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)  # type: ignore[no-untyped-call]
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except config.ConfigException:
            config.load_kube_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    cfg.connection_pool_maxsize = max(pool_size, 4)
    return cfg


def new_api_client(cfg: client.Configuration) -> client.ApiClient:
    """An ApiClient on ``cfg``: how code outside ``volsched.kube`` gets one without importing the client."""
    return client.ApiClient(cfg)


def bearer_token(cfg: client.Configuration) -> str | None:
    """The bearer token a Configuration sends, wherever this client version keeps it."""
    header = None
    for key in ("BearerToken", "authorization"):
        try:
            header = cfg.get_api_key_with_prefix(key)
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
