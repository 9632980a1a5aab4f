"""What kopf does for the operator: its start and login (:func:`new_registry`), the admission webhooks on
its registry (:func:`register_webhooks`), its settings and the webhooks' server (:func:`kopf_settings`),
and, since kopf installs its own SIGTERM/SIGINT handlers as it starts, taking the operator's back
(:func:`take_signals_back`).

The only module of the operator that imports kopf: the operator imports it once the cache is synced, on a
thread of its own, so kopf's import (its CPU) is not on the way to ready.

Every replica serves the webhooks; only the leader hands kopf the client config (URL or Service, and the
CA bundle) that kopf writes into the webhook configurations (:func:`leader_gated`): replicas never write
them in turn, and a replica that never led leaves them alone when it stops. The leader hands it again
when it becomes leader and every :data:`REASSERT_EVERY` seconds (a no-op write while nothing changed),
so what a former leader withdrew as it stopped is put back.

kopf watches nothing here: every kind comes through ``volsched.kube.watch``; what the webhooks decide is
:mod:`~volsched.operator.admission`'s. A refusal is the webhook doing its job, not an error: it is logged
at INFO with the object and the reason (:class:`RefusalsAreNotErrors` drops the ERROR kopf logs for it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import kopf

from volsched.cache.volcano import VOLCANO_GROUP
from volsched.cache.workload import WORKLOAD_GROUP, WORKLOAD_VERSION
from volsched.model.raw import meta_of
from volsched.model.vocabulary import API_GROUP, QUEUE_ANNOTATION, VOLCANO_QUEUE_ANNOTATION
from volsched.operator.admission import Admission
from volsched.operator.settings import WebhookSettings, parse_service

if TYPE_CHECKING:
    from kopf._cogs.structs import reviews  # (kopf's own types of a webhook's client config)

    from volsched.operator.certs import WebhookCerts

T = TypeVar("T")


class ServiceWebhookServer(kopf.WebhookServer):
    """kopf's webhook server, whose webhook configurations reach it through a Service (``namespace``,
    ``name``, ``port``) rather than a URL: the apiserver of a cluster resolves Services, seldom the
    cluster's DNS names. :meth:`of` makes the class for one Service."""

    service: tuple[str, str, int] = ("", "", 443)

    @classmethod
    def of(cls, service: tuple[str, str, int]) -> type[ServiceWebhookServer]:
        return type("ServiceWebhookServer", (cls,), {"service": service})

    async def __call__(self, fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
        namespace, name, port = self.service
        async for config in super().__call__(fn):
            yield {
                "caBundle": config.get("caBundle"),
                "service": {"namespace": namespace, "name": name, "port": port, "path": ""},
            }


log = logging.getLogger("volsched.admission")

#: The ids of the validating webhooks (:func:`register_webhooks`): the only ones that refuse.
VALIDATING = frozenset(
    {"queue", "queue-in-use", "pod", *(f"podgroup-{g}" for g in (API_GROUP, VOLCANO_GROUP, WORKLOAD_GROUP))}
)


class RefusalsAreNotErrors(logging.Filter):
    """On kopf's object logger: drops the ERROR kopf logs when one of our validating webhooks refuses
    (``Webhook 'queue' failed permanently: <reason>``, the :class:`kopf.AdmissionError` it raised), which
    :func:`register_webhooks`' handlers have logged at INFO already. A webhook that fails otherwise (an
    exception of any other kind: a defect) is still logged by kopf as an ERROR, with its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.ERROR:
            return True
        head, sep, _ = record.getMessage().partition(" failed permanently: ")
        return not (sep and head.startswith("Webhook '") and head[len("Webhook '") : -1] in VALIDATING)


REFUSALS_ARE_NOT_ERRORS = RefusalsAreNotErrors()


def unchanged_access(review: Mapping[str, Any], *, spec_fields: tuple[str, ...]) -> bool:
    """Whether ``review`` (kopf's keyword arguments) is an update that changes nothing its queue's rules
    read (the queue annotations and ``spec_fields``): such an update is let through, so that an object
    whose queue's rules changed under it can still be written (a finalizer taken off, a label added)."""
    old = review.get("old")
    if str(review.get("operation") or "") != "UPDATE" or not isinstance(old, Mapping):
        return False
    body = review["body"]
    before, after = old.get("spec") or {}, body.get("spec") or {}
    if any(before.get(f) != after.get(f) for f in spec_fields):
        return False
    a, b = meta_of(old).get("annotations") or {}, meta_of(body).get("annotations") or {}
    return all(a.get(key) == b.get(key) for key in (QUEUE_ANNOTATION, VOLCANO_QUEUE_ANNOTATION))


def register_webhooks(registry: kopf.OperatorRegistry, admission: Admission, *, fail_open: bool) -> None:
    """The webhooks on ``registry`` (served by kopf's webhook server, configured by kopf as
    ``settings.admission.managed`` says)."""
    writes: list[Any] = ["CREATE", "UPDATE"]
    logging.getLogger("kopf.objects").addFilter(REFUSALS_ARE_NOT_ERRORS)  # (added once)

    def deny(message: str | None, kind: str, review: Mapping[str, Any]) -> None:
        """Refuse the request (``review``: kopf's keyword arguments) with ``message``; None admits it."""
        if not message:
            return
        ns, name = review.get("namespace"), review.get("name") or meta_of(review["body"]).get("generateName")
        operation = str(review.get("operation") or "request").lower()
        log.info("%s of %s %s refused: %s", operation, kind, f"{ns}/{name}" if ns else name, message)
        raise kopf.AdmissionError(message, code=403)

    @kopf.on.validate(API_GROUP, "v1beta1", "queues", id="queue", operations=writes,
                      ignore_failures=fail_open, registry=registry)  # fmt: skip
    def queue(**kw: Any) -> None:
        deny(admission.queue(dict(kw["body"])), "Queue", kw)

    @kopf.on.validate(API_GROUP, "v1beta1", "queues", id="queue-in-use", operations=["DELETE"],
                      ignore_failures=fail_open, registry=registry)  # fmt: skip
    def queue_in_use(**kw: Any) -> None:
        deny(admission.queue_deletion(str(kw.get("name") or "")), "Queue", kw)

    for group in (API_GROUP, VOLCANO_GROUP):

        @kopf.on.validate(group, "v1beta1", "podgroups", id=f"podgroup-{group}", operations=writes,
                          ignore_failures=fail_open, registry=registry)  # fmt: skip
        def podgroup(**kw: Any) -> None:
            if unchanged_access(kw, spec_fields=("queue", "priorityClassName")):
                return
            deny(admission.podgroup(dict(kw["body"]), str(kw.get("namespace") or "")), "PodGroup", kw)

        @kopf.on.mutate(group, "v1beta1", "podgroups", id=f"podgroup-queue-{group}", operations=["CREATE"],
                        ignore_failures=True, registry=registry)  # fmt: skip
        def podgroup_queue(body: Any, namespace: Any, patch: Any, **_: Any) -> None:
            named = admission.default_queue_patch(dict(body), str(namespace or ""), kind="PodGroup")
            if named:
                patch.spec["queue"] = named

    # Kubernetes' own PodGroups (the Workload API, when the apiserver serves it): checked as ours are, so
    # that a running gang's queue annotation cannot be moved to a queue that refuses it. Nothing filled in:
    # a group naming no queue goes to its namespace's anyway.
    @kopf.on.validate(WORKLOAD_GROUP, WORKLOAD_VERSION, "podgroups", id=f"podgroup-{WORKLOAD_GROUP}",
                      operations=writes, ignore_failures=fail_open, registry=registry)  # fmt: skip
    def workload_podgroup(**kw: Any) -> None:
        if unchanged_access(kw, spec_fields=("priorityClassName", "priority")):
            return
        deny(admission.workload_podgroup(dict(kw["body"]), str(kw.get("namespace") or "")), "PodGroup", kw)

    # Pods fail open whatever the setting: a webhook that cannot answer must not stop every pod of the
    # cluster (kube-system's too) from being created; the scheduler holds a pod that breaks a rule anyway.
    @kopf.on.validate(
        "", "v1", "pods", id="pod", operations=["CREATE"], ignore_failures=True, registry=registry
    )
    def pod(**kw: Any) -> None:
        deny(admission.pod(dict(kw["body"]), str(kw.get("namespace") or "")), "pod", kw)

    @kopf.on.mutate(
        "", "v1", "pods", id="pod-queue", operations=["CREATE"], ignore_failures=True, registry=registry
    )
    def pod_queue(body: Any, namespace: Any, patch: Any, **_: Any) -> None:
        named = admission.default_queue_patch(dict(body), str(namespace or ""), kind="Pod")
        if named:
            patch.metadata.setdefault("annotations", {})[QUEUE_ANNOTATION] = named


#: Seconds between the leader's client configs handed to kopf (each a patch of the configurations).
REASSERT_EVERY = 30.0
#: Seconds between looks at whether this replica leads.
LEADER_LOOK_EVERY = 0.5


def new_registry(
    *, on_started: asyncio.Event, credentials: Callable[[], kopf.ConnectionInfo]
) -> kopf.OperatorRegistry:
    """kopf's handlers: ``on_started`` set once kopf runs its startup handlers; ``credentials`` its login."""
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    async def started(**_: Any) -> None:
        on_started.set()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return credentials()

    return registry


async def gate(
    configs: AsyncIterator[T],
    is_leader: Callable[[], bool],
    *,
    look_every: float = LEADER_LOOK_EVERY,
    reassert_every: float = REASSERT_EVERY,
) -> AsyncIterator[T]:
    """``configs`` (a webhook server's client configs) passed on only while ``is_leader()``: the latest
    one again on becoming leader, each new one at once while leading, and the latest every
    ``reassert_every`` seconds while leading. The server behind ``configs`` serves all along."""
    loop = asyncio.get_running_loop()
    pending: asyncio.Future[T] = asyncio.ensure_future(anext(configs))
    latest: T | None = None
    have = False
    handed_at: float | None = None  # None: not handed over in this term of leading
    try:
        while True:
            if pending.done():
                try:
                    latest, have = pending.result(), True
                except StopAsyncIteration:
                    return
                pending = asyncio.ensure_future(anext(configs))
                handed_at = None if handed_at is None else -1e18  # new: hand it over now
            if not is_leader():
                handed_at = None
            elif have and (handed_at is None or loop.time() - handed_at >= reassert_every):
                handed_at = loop.time()
                yield latest  # type: ignore[misc]
                continue
            await asyncio.wait({pending}, timeout=look_every)
    finally:
        pending.cancel()
        with contextlib.suppress(BaseException):
            await pending
        aclose = getattr(configs, "aclose", None)
        if aclose is not None:
            await aclose()


def leader_gated(base: type[kopf.WebhookServer], is_leader: Callable[[], bool]) -> type[kopf.WebhookServer]:
    """``base`` (kopf's webhook server or a subclass) whose client configs pass through :func:`gate`."""

    class LeaderGated(base):  # type: ignore[valid-type, misc]
        async def __call__(self, fn: reviews.WebhookFn) -> AsyncIterator[reviews.WebhookClientConfig]:
            async for config in gate(super().__call__(fn), is_leader):
                yield config

    return LeaderGated


def kopf_settings(
    webhook: WebhookSettings,
    *,
    certs: WebhookCerts | None = None,
    is_leader: Callable[[], bool] = lambda: True,
) -> kopf.OperatorSettings:
    """kopf's settings: no events of its own, no scanning, patient retries; the webhooks' server when on
    (with ``certs``, else a directory's or a CA made now), whose configurations the leader keeps."""
    s = kopf.OperatorSettings()
    s.posting.enabled = False  # kopf's own events; ours go through volsched.kube
    s.scanning.disabled = True  # no CRD/namespace scanning: fewer permissions
    s.watching.server_timeout = 300
    s.watching.client_timeout = 330
    s.networking.request_timeout = 60
    # kopf watches nothing (every kind comes through volsched.kube.watch). Should it call the API, it
    # retries a failed call soon and then every second (kopf's default waits up to 21 s between
    # attempts), as long in total as kopf's default (about a minute): an apiserver that answers 5xx
    # while it starts must not exhaust them.
    s.networking.error_backoffs = (0.2, 0.4, 0.8, *([1.0] * 60))
    w = webhook
    if w.port:
        # Only with webhooks: cryptography costs a few hundred ms of import at every start.
        from volsched.operator.certs import from_dir, self_signed

        service = parse_service(w.service) if w.service else None
        url_host = f"{service[1]}.{service[0]}.svc" if service else (w.url_host or w.host)
        if certs is None:
            certs = from_dir(Path(w.cert_dir)) if w.cert_dir else self_signed([url_host, w.host])
        server_type = kopf.WebhookServer if service is None else ServiceWebhookServer.of(service)
        s.admission.server = leader_gated(server_type, is_leader)(
            addr=w.host,
            port=w.port,
            host=url_host,
            certfile=str(certs.certfile),
            pkeyfile=str(certs.pkeyfile),
            cafile=str(certs.cafile),
            file_check_interval=5.0,  # renewed files served (and their bundle handed over) within seconds
        )
        s.admission.managed = "volsched.io"  # kopf keeps the webhook configurations of this name
    return s


async def take_signals_back(started: asyncio.Event, stop: asyncio.Event | None) -> None:
    """kopf installs its own SIGTERM/SIGINT handlers as it starts (just before its startup handlers run);
    they would stop the watches, for seconds, before the Lease is released. Once kopf ``started``, take them back: ours set
    ``stop``, which hands the Lease over first and then stops kopf."""
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(started.wait(), timeout=60)
    await asyncio.sleep(0.05)
    if stop is not None and threading.current_thread() is threading.main_thread():
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
