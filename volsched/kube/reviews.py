"""Who is asking, and may they: TokenReview and SubjectAccessReview on the apiserver (as
kube-rbac-proxy asks them), for the operator's HTTP endpoints.

:class:`AccessReviews` sends one review per call and caches nothing (the caller's gate caches the
answers briefly); a token goes in a review's body only, never in a log line, an error message or a
metric. Blocking calls: the HTTP server runs them on a thread.
"""

from __future__ import annotations

from typing import Any

import orjson

from volsched.kube.rest import LeanRest
from volsched.records import dataclass

#: Seconds one review may take.
REVIEW_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller: what a SubjectAccessReview asks about."""

    user: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


class AccessReviews:
    """TokenReview (``authenticate``) and SubjectAccessReview (``may``) through ``rest``, a client whose
    own identity may create both (the ``system:auth-delegator`` ClusterRole grants it)."""

    def __init__(self, rest: LeanRest, *, audiences: tuple[str, ...] = ()) -> None:
        self.rest = rest
        self.audiences = audiences

    def authenticate(self, token: str) -> Caller | None:
        """The caller ``token`` stands for, or None when the apiserver does not take it."""
        spec: dict[str, Any] = {"token": token}
        if self.audiences:
            spec["audiences"] = list(self.audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        out = self._post("/apis/authentication.k8s.io/v1/tokenreviews", body)
        status = out.get("status") or {}
        if not status.get("authenticated"):
            return None
        user = status.get("user") or {}
        name = user.get("username")
        if not isinstance(name, str) or not name:
            return None
        extra = user.get("extra") or {}
        return Caller(
            user=name,
            groups=tuple(str(g) for g in user.get("groups") or ()),
            uid=str(user.get("uid") or ""),
            extra=tuple(sorted((str(k), tuple(str(x) for x in v or ())) for k, v in extra.items())),
        )

    def may(self, caller: Caller, attributes: dict[str, Any]) -> bool:
        """Whether ``caller`` may do what ``attributes`` say: ``{"nonResourceAttributes": {...}}`` or
        ``{"resourceAttributes": {...}}``, as in a SubjectAccessReview's spec."""
        spec: dict[str, Any] = {"user": caller.user, "groups": list(caller.groups), **attributes}
        if caller.uid:
            spec["uid"] = caller.uid
        if caller.extra:
            spec["extra"] = {k: list(v) for k, v in caller.extra}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        out = self._post("/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
        return bool((out.get("status") or {}).get("allowed"))

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        raw = self.rest.request("POST", path, body, timeout=REVIEW_TIMEOUT)
        out = orjson.loads(raw)
        return out if isinstance(out, dict) else {}


def self_may(rest: LeanRest, *, verb: str, group: str, resource: str, subresource: str = "") -> bool:
    """Whether ``rest``'s own identity may ``verb`` ``resource`` (its ``subresource``) in every namespace: a
    SelfSubjectAccessReview, which every authenticated user may create."""
    attributes: dict[str, Any] = {"verb": verb, "group": group, "resource": resource}
    if subresource:
        attributes["subresource"] = subresource
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    raw = rest.request(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body, timeout=REVIEW_TIMEOUT
    )
    out = orjson.loads(raw)
    status = out.get("status") if isinstance(out, dict) else None
    if not isinstance(status, dict):
        raise ValueError("a SelfSubjectAccessReview answered without a status")
    return bool(status.get("allowed"))
