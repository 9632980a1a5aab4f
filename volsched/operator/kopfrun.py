"""What kopf does for the operator: its start and login (:func:`new_registry`), its settings and the
admission webhooks' server (:func:`kopf_settings`), and, since kopf installs its own SIGTERM/SIGINT
handlers as it starts, taking the operator's back (:func:`take_signals_back`).

kopf watches nothing here: every kind comes through ``volsched.kube.watch``; what the webhooks decide is
:mod:`~volsched.operator.admission`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kopf

from volsched.operator.admission import ServiceWebhookServer, parse_service
from volsched.operator.settings import WebhookSettings


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


def kopf_settings(webhook: WebhookSettings) -> kopf.OperatorSettings:
    """kopf's settings: no events of its own, no scanning, patient retries; the webhooks' server when on."""
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
        certs = from_dir(Path(w.cert_dir)) if w.cert_dir else self_signed([url_host, w.host])
        server_type = kopf.WebhookServer if service is None else ServiceWebhookServer.of(service)
        s.admission.server = server_type(
            addr=w.host,
            port=w.port,
            host=url_host,
            certfile=str(certs.certfile),
            pkeyfile=str(certs.pkeyfile),
            cafile=str(certs.cafile),
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
