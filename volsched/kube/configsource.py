"""Reads the scheduler config from its ConfigMap (one GET of one named object, no list or watch)."""

from __future__ import annotations

from dataclasses import dataclass

from kubernetes import client
from kubernetes.client.exceptions import ApiException


@dataclass(frozen=True)
class ConfigMapText:
    resource_version: str
    uid: str
    text: str | None  # None: the key is missing


def read_config_map(api: client.ApiClient, namespace: str, name: str, key: str) -> ConfigMapText | None:
    """The ConfigMap's text under ``key``; None when the ConfigMap does not exist."""
    try:
        cm = client.CoreV1Api(api).read_namespaced_config_map(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    data = cm.data or {}
    meta = cm.metadata or client.V1ObjectMeta()
    return ConfigMapText(
        resource_version=str(meta.resource_version or ""),
        uid=str(meta.uid or ""),
        text=data.get(key),
    )
