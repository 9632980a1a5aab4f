"""Lean JSON requests on the Kubernetes client's own connections, for the writer's hot path.

A bind through ``CoreV1Api`` builds ``V1Binding``/``V1ObjectMeta`` models, serialises them through the
client's generic sanitiser and walks its parameter machinery: most of the operator's CPU per bind.
:class:`LeanRest` sends the JSON body as it is, on the client's urllib3 pool (its TLS, its proxy, its
keep-alive connections) with the client's own credentials (read per request, so a refreshed token is
used), and reads every response to its end so a pooled connection is always clean for the next call.
An error status is raised as the client's :class:`ApiException`, so callers handle both the same way.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

JSON = "application/json"


class LeanRest:
    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.host = str(api.configuration.host).rstrip("/")
        self.pool: urllib3.PoolManager = api.rest_client.pool_manager
        self._base = {"Accept": JSON, **api.default_headers}

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = dict(self._base)
        if content_type:
            headers["Content-Type"] = content_type
        # The client's auth settings call its refresh hook (a rotated service-account token, an exec plugin).
        auth = self.api.configuration.auth_settings().get("BearerToken")
        if auth and auth.get("value"):
            headers[str(auth["key"])] = str(auth["value"])
        return headers

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str | None = JSON,
        timeout: float,
    ) -> bytes:
        """Send one request; return the response body (read to its end). Raises ApiException for an
        error status, urllib3/OSError for a failure to talk at all."""
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        resp = self.pool.request(
            method,
            self.host + path,
            body=data,
            headers=self._headers(content_type if data is not None else None),
            timeout=urllib3.Timeout(total=timeout),
            preload_content=True,  # the whole body is read and the connection handed back clean
        )
        if resp.status >= 400:
            raise ApiException(http_resp=resp)
        return bytes(resp.data)


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def event_path(namespace: str, name: str = "") -> str:
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/events"
    return f"{path}/{quote(name, safe='')}" if name else path


def custom_path(
    group: str, version: str, plural: str, name: str, *, namespace: str | None = None, sub: str = ""
) -> str:
    """A custom object's path (namespaced when ``namespace`` is given), optionally a subresource."""
    ns = f"/namespaces/{quote(namespace, safe='')}" if namespace else ""
    path = f"/apis/{group}/{version}{ns}/{plural}/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def custom_collection(group: str, version: str, plural: str, *, namespace: str) -> str:
    return f"/apis/{group}/{version}/namespaces/{quote(namespace, safe='')}/{plural}"
