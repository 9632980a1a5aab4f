"""Who may read the operator's ``/metrics`` and dashboard data, and how often (see docs/tenancy.md).

* :class:`Gate`: the caller's bearer token is checked with a TokenReview, then what it asks with a
  SubjectAccessReview (``get`` on the non-resource path, as kube-rbac-proxy does); the dashboard's data
  is narrowed to the namespaces whose pods the caller may list. Answers are cached for ``ttl`` seconds
  (by the token's SHA-256, never the token), so a dashboard polling every 2 s costs the apiserver a few
  reviews a minute. Without reviews (``--http-auth none``) everything is open to whoever reaches the port.
* :class:`RateLimit`: a token bucket per client address and one for all, so no number of viewers takes
  the session's CPU.

No token reaches a log line, an error, a metric or the dashboard: failures are logged by kind only.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from volsched.kube.reviews import AccessReviews, Caller

log = logging.getLogger("volsched.operator")

#: Seconds an answer of the apiserver is kept.
REVIEW_TTL = 30.0
#: At most this many answers kept (past it, they start over).
KEPT = 4096


class Refused(Exception):
    """The caller may not have what it asked: ``status`` 401 (who are you), 403 (not you) or 503 (the
    apiserver could not say)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class _Kept:
    """Answers kept for ``ttl`` seconds, at most :data:`KEPT` of them."""

    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self.ttl, self.clock = ttl, clock
        self._table: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> tuple[bool, Any]:
        hit = self._table.get(key)
        if hit is None or hit[0] <= self.clock():
            return False, None
        return True, hit[1]

    def put(self, key: Any, value: Any) -> None:
        if len(self._table) >= KEPT:
            self._table.clear()
        self._table[key] = (self.clock() + self.ttl, value)


class Gate:
    """``await caller(header)``, ``await check(caller, path)``, ``await namespaces(caller, names)``.

    ``reviews`` None: no check (every caller may read everything)."""

    def __init__(
        self,
        reviews: AccessReviews | None,
        *,
        ttl: float = REVIEW_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.reviews = reviews
        self._callers = _Kept(ttl, clock)
        self._answers = _Kept(ttl, clock)

    @property
    def open(self) -> bool:
        return self.reviews is None

    async def caller(self, authorization: str | None) -> Caller | None:
        """Who the ``Authorization`` header says is asking (None when the gate is open)."""
        if self.reviews is None:
            return None
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Refused(401, "a bearer token is required (Authorization: Bearer <token>)")
        key = hashlib.sha256(token.encode()).digest()
        found, who = self._callers.get(key)
        if not found:
            who = await self._ask(self.reviews.authenticate, token)
            self._callers.put(key, who)
        if who is None:
            raise Refused(401, "the token was not accepted")
        return who  # type: ignore[no-any-return]

    async def check(self, caller: Caller | None, path: str) -> None:
        """Raise :class:`Refused` unless ``caller`` may ``get`` the non-resource ``path``."""
        if caller is None:
            return
        if not await self._may(caller, {"nonResourceAttributes": {"path": path, "verb": "get"}}):
            raise Refused(403, f"{caller.user} may not get {path}")

    async def namespaces(self, caller: Caller | None, names: Iterable[str]) -> frozenset[str] | None:
        """Of ``names``, the namespaces whose pods ``caller`` may list; None: every namespace (the
        caller may list pods cluster-wide, or the gate is open)."""
        if caller is None:
            return None
        every = {"resourceAttributes": {"verb": "list", "resource": "pods"}}
        if await self._may(caller, every):
            return None
        out = []
        for ns in names:
            if await self._may(
                caller, {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": ns}}
            ):
                out.append(ns)
        return frozenset(out)

    async def _may(self, caller: Caller, attributes: dict[str, Any]) -> bool:
        assert self.reviews is not None
        key = (caller, repr(sorted(attributes.items())))
        found, allowed = self._answers.get(key)
        if not found:
            allowed = await self._ask(self.reviews.may, caller, attributes)
            self._answers.put(key, allowed)
        return bool(allowed)

    async def _ask(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args)
        except Exception as exc:  # the apiserver could not say: nothing is let through
            status = getattr(exc, "status", None)
            log.warning("access review failed (%s%s)", type(exc).__name__, f" {status}" if status else "")
            raise Refused(503, "the apiserver could not review the request; try again") from None


class RateLimit:
    """Token buckets: ``rate`` requests a second, bursts of ``burst``, per client address, and
    ``total_rate`` a second over all clients. ``take(peer)`` is False when the request must wait."""

    def __init__(
        self,
        *,
        rate: float = 5.0,
        burst: float = 10.0,
        total_rate: float = 50.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate, self.burst, self.total_rate, self.clock = rate, burst, total_rate, clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._total = (total_rate, clock())

    def _drawn(self, level: float, at: float, rate: float, burst: float, now: float) -> tuple[float, bool]:
        level = min(burst, level + (now - at) * rate)
        if level < 1.0:
            return level, False
        return level - 1.0, True

    def take(self, peer: str) -> bool:
        now = self.clock()
        level, at = self._buckets.get(peer, (self.burst, now))
        mine, ok = self._drawn(level, at, self.rate, self.burst, now)
        if not ok:
            self._buckets[peer] = (mine, now)
            return False
        total, ok = self._drawn(*self._total, self.total_rate, self.total_rate, now)
        self._total = (total, now)
        if not ok:
            return False
        if len(self._buckets) >= KEPT:
            self._buckets.clear()
        self._buckets[peer] = (mine, now)
        return True
