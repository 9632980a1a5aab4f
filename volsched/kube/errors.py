"""The error an apiserver's answer raises in volsched's own HTTP path (:mod:`volsched.kube.rest`).

Its own class, not the Kubernetes client's ``ApiException``: importing that one imports the whole client
package (its kubeconfig loader, its models' machinery: pydantic, oauthlib, requests, urllib3), CPU on
every start (docs/operating.md), where volsched's reads and writes never go through the client. It keeps
the client's attributes (``status``, ``reason``, ``body``, ``headers``), so code reading them reads
either. :func:`is_api_error` says whether an exception is either class (the client's is raised only by
the few edges that still call it: custom metrics, kopf); :func:`status_message` reads what an answer's
Status says.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any


class ApiException(Exception):
    """An error answer (``status`` >= 400) from the apiserver: its status, reason, headers and body
    (the body as text). ``http_resp``: an answer with ``status``, ``reason``, ``data`` (bytes) and
    ``headers``, from which what was not given is taken."""

    def __init__(
        self,
        status: int | None = None,
        reason: str | None = None,
        http_resp: Any = None,
        *,
        body: str | None = None,
        data: Any = None,
    ) -> None:
        super().__init__(status, reason)
        self.status = status
        self.reason = reason
        self.body = body
        self.data = data
        self.headers: Mapping[str, str] | None = None
        if http_resp is not None:
            if self.status is None:
                self.status = http_resp.status
            if self.reason is None:
                self.reason = http_resp.reason
            if self.body is None:
                raw = getattr(http_resp, "data", None)
                if isinstance(raw, bytes | bytearray):
                    self.body = bytes(raw).decode("utf-8", errors="replace")
            self.headers = http_resp.headers

    def __str__(self) -> str:
        lines = [f"({self.status})", f"Reason: {self.reason}"]
        if self.headers:
            lines.append(f"HTTP response headers: {self.headers}")
        if self.body:
            lines.append(f"HTTP response body: {self.body}")
        return "\n".join(lines) + "\n"


def is_api_error(exc: BaseException) -> bool:
    """An apiserver's error answer, raised by volsched's HTTP path or by the Kubernetes client (checked
    only when something imported the client: this never imports it)."""
    if isinstance(exc, ApiException):
        return True
    theirs = sys.modules.get("kubernetes.client.exceptions")
    return theirs is not None and isinstance(exc, theirs.ApiException)


def status_message(body: bytes | str) -> str:
    """The ``message`` of an apiserver's Status answer (``""`` when it has none), or the body's first 200
    characters when it is not a Status."""
    try:
        return str(json.loads(body).get("message") or "")
    except Exception:
        return (body if isinstance(body, str) else body.decode("utf-8", "replace"))[:200]
