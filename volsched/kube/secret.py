"""One Secret read and written whole (:class:`SecretStore`): read, create, replace with the
resourceVersion read. A create of one that exists, or a replace of one written since, raises
:class:`Conflict` (the apiserver's 409), so that writers racing each other can read the winner's. It
knows nothing of what the Secret holds (the webhook certificates: volsched.operator.certs)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from volsched.kube.errors import ApiException
from volsched.kube.rest import LeanRest, loads
from volsched.model.decode import parse_time
from volsched.model.errors import InputError


class Conflict(Exception):
    """The Secret exists already (create), or was written since it was read (replace)."""


#: Seconds one call about the Secret may take.
SECRET_TIMEOUT = 10.0


class SecretStore:
    """One Secret through ``rest``: read, create, replace (with the resourceVersion read)."""

    def __init__(self, rest: LeanRest, namespace: str, name: str, *, kind: str = "kubernetes.io/tls") -> None:
        self.rest = rest
        self.namespace, self.name = namespace, name
        #: Its ``type`` as created (the webhook certificates' ``kubernetes.io/tls``; ``Opaque`` else).
        self.kind = kind
        #: Its ``metadata.creationTimestamp`` as last read or written (Unix seconds; 0: not known).
        self.created = 0.0
        #: Its uid, resourceVersion and annotations as last read or written.
        self.uid = self.version = ""
        self.annotations: dict[str, str] = {}
        #: Whether this store made it (a create answered).
        self.made = False
        self._collection = f"/api/v1/namespaces/{namespace}/secrets"

    def read(self) -> tuple[dict[str, bytes], str] | None:
        """Its data and resourceVersion; None when it does not exist."""
        try:
            obj = self.rest.get(f"{self._collection}/{self.name}", timeout=SECRET_TIMEOUT)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return self._parsed(obj)

    def create(self, data: Mapping[str, bytes], *, annotations: Mapping[str, str] | None = None) -> str:
        """Create it (with ``annotations``); its resourceVersion. Raises :class:`Conflict` when it exists
        already."""
        body = self._body(data, resource_version=None, annotations=annotations)
        version = self._send("POST", self._collection, body)
        self.made = True
        return version

    def replace(
        self,
        data: Mapping[str, bytes],
        resource_version: str,
        *,
        annotations: Mapping[str, str] | None = None,
    ) -> str:
        """Replace it as read at ``resource_version`` (its annotations with ``annotations``, when given);
        :class:`Conflict` when it was written since."""
        body = self._body(data, resource_version=resource_version, annotations=annotations)
        return self._send("PUT", f"{self._collection}/{self.name}", body)

    def _send(self, method: str, path: str, body: dict[str, Any]) -> str:
        try:
            raw = self.rest.request(method, path, body, timeout=SECRET_TIMEOUT)
        except ApiException as exc:
            if exc.status == 409:
                raise Conflict(f"Secret {self.namespace}/{self.name}") from exc
            raise
        return self._parsed(loads(raw))[1]

    def _body(
        self,
        data: Mapping[str, bytes],
        *,
        resource_version: str | None,
        annotations: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": self.name,
            "namespace": self.namespace,
            "labels": {"app.kubernetes.io/managed-by": "volsched"},
        }
        if annotations:
            meta["annotations"] = dict(annotations)
        if resource_version:
            meta["resourceVersion"] = resource_version
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": self.kind,
            "metadata": meta,
            "data": {k: base64.b64encode(v).decode("ascii") for k, v in data.items()},
        }

    def _parsed(self, obj: Any) -> tuple[dict[str, bytes], str]:
        raw = (obj.get("data") or {}) if isinstance(obj, dict) else {}
        data = {str(k): base64.b64decode(str(v)) for k, v in raw.items()}
        meta = ((obj or {}).get("metadata") or {}) if isinstance(obj, dict) else {}
        try:
            self.created = parse_time(meta.get("creationTimestamp"), where=f"Secret {self.name}")
        except InputError:
            self.created = 0.0
        self.uid = str(meta.get("uid") or "")
        self.version = str(meta.get("resourceVersion") or "")
        notes = meta.get("annotations")
        self.annotations = {str(k): str(v) for k, v in notes.items()} if isinstance(notes, dict) else {}
        return data, str(meta.get("resourceVersion") or "")
