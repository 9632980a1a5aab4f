"""Reads the scheduler config from its ConfigMap (one GET of one named object); what its watch lists and
watches (:data:`CONFIG_MAP`, :func:`name_selector`: that one object, through
:class:`~volsched.kube.watch.ListWatch`).

The GET is plain JSON through :class:`~volsched.kube.rest.LeanRest` on the client's pooled connections:
the client's ``CoreV1Api`` would import every core model (about a second of CPU at start) to read one
ConfigMap. Errors are the client's: a 404 is no ConfigMap, any other status an :class:`ApiException`
(a 403 the reloader reports), a failure to talk at all an ``OSError``/urllib3 error.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from volsched.kube.errors import ApiException
from volsched.kube.lister import WatchedKind
from volsched.kube.rest import LeanRest
from volsched.records import dataclass

#: The kind the scheduler config's watch lists and watches, in its namespace, by its name alone.
CONFIG_MAP = WatchedKind("ConfigMap", "", "v1", "configmaps", True)


def name_selector(name: str) -> str:
    """The field selector of the one object named ``name`` (RBAC grants a list or watch with it by the
    object's name, as a get)."""
    return f"metadata.name={name}"


#: Seconds one read may take (the reloader reads again every poll; the session waits on it).
READ_TIMEOUT = 10.0


@dataclass(frozen=True)
class ConfigMapText:
    """The scheduler config's text as a ConfigMap holds it, with its version and uid."""

    resource_version: str
    uid: str
    text: str | None  # None: the key is missing


def config_map_path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/configmaps/{quote(name, safe='')}"


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse_config_map(body: Any, key: str) -> ConfigMapText:
    """A ConfigMap's JSON (as the apiserver sends it) -> its text under ``key`` and what identifies the
    version read. A value that is not a string (never from an apiserver) counts as missing."""
    obj: dict[str, Any] = body if isinstance(body, dict) else {}
    meta = _mapping(obj.get("metadata"))
    text = _mapping(obj.get("data")).get(key)
    return ConfigMapText(
        resource_version=str(meta.get("resourceVersion") or ""),
        uid=str(meta.get("uid") or ""),
        text=text if isinstance(text, str) else None,
    )


#: How many throttled answers (429 with Retry-After) the read at start waits out. A poll waits out none:
#: it runs on the session loop's thread between Lease renewals, and the next poll is its retry.
START_THROTTLE_RETRIES = 10


def read_config_map(
    rest: LeanRest, namespace: str, name: str, key: str, *, at_start: bool = False
) -> ConfigMapText | None:
    """The ConfigMap's text under ``key``; None when the ConfigMap does not exist. Only the read
    ``at_start`` waits out a throttled answer (an apiserver just started throttles); a poll's 429 is
    raised, for the reloader to report, so a poll never holds the session loop (and the Lease's
    renewal) through minutes of Retry-After."""
    retries = START_THROTTLE_RETRIES if at_start else 0
    try:
        body = rest.get(config_map_path(namespace, name), timeout=READ_TIMEOUT, throttle_retries=retries)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return parse_config_map(body, key)
