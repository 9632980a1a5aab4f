"""What the operator imports after ready (aiohttp, prometheus_client; kopf only with the webhooks on) is
imported at the sessions' first lull (without the webhooks) or at once (with them), stepping aside while
they work (``volsched.operator.aside``): nothing waits for it. A pod that arrives while that import is under way is bound; ``/metrics`` and ``/ui`` answer
once it ended (the health server's "starting" before), ``/metrics`` with what was counted before. The
cyclic collector is paused meanwhile, and what the imports made is frozen after (with the webhooks on, kopf's
registry too).
Real apiserver; the operator in-process, its import held open by a
module of the test's put first in its list (the unit tests: tests/unit/test_imports_step_aside.py)."""

from __future__ import annotations

import asyncio
import gc
import importlib.abc
import importlib.util
import re
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib.machinery import ModuleSpec
from types import ModuleType

import pytest

from tests.e2e.operator_fixtures import (
    OPERATOR_NS,
    Kube,
    free_port,
    node,
    operator_on_a_thread,
    pod,
    wait_for,
)
from volsched.operator import Operator, Settings
from volsched.operator.aside import Activity
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster

HELD = "volsched_test_held_after_ready"


class HeldImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The module :data:`HELD`, whose import begins (``entered``) and ends once ``release`` is set."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def find_spec(self, fullname: str, path: object, target: object = None) -> ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname == HELD else None

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        self.entered.set()
        assert self.release.wait(300)


def _get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()


@pytest.fixture
def held() -> Iterator[HeldImport]:
    finder = HeldImport()
    sys.meta_path.insert(0, finder)
    try:
        yield finder
    finally:
        finder.release.set()
        sys.meta_path.remove(finder)
        sys.modules.pop(HELD, None)


def test_a_pod_arriving_while_the_imports_after_ready_run_is_bound_and_metrics_and_ui_come_up_after(
    cluster: LocalControlPlane, k: Kube, held: HeldImport
) -> None:
    k.nodes(node("n1"))
    settings = Settings(kubeconfig=str(cluster.kubeconfig_path))
    settings.http.host, settings.http.port, settings.http.auth = "127.0.0.1", 0, "none"
    settings.lease.namespace = OPERATOR_NS
    op = Operator(settings)
    # No webhooks: kopf has nothing to do, and is not imported.
    assert op.after_ready == ["aiohttp.web", "prometheus_client"]
    op.after_ready.insert(0, HELD)
    with operator_on_a_thread(op):
        assert held.entered.wait(120)  # synced (ready), the sessions running, the import under way
        port = op.http_port or 0
        assert _get(port, "/healthz")[0] == 200 and _get(port, "/readyz")[0] == 200
        ns = k.namespace("meanwhile")
        k.pods(ns, pod("p1"))
        wait_for(lambda: k.bound(ns) == {f"{ns}/p1": "n1"}, 60, what="the pod bound during the import")
        assert not held.release.is_set() and not op.aio_ready.is_set()  # the import still held open
        assert gc.isenabled() is False  # the collector paused while the imports after ready run
        assert _get(port, "/metrics")[0] == 503 and _get(port, "/ui")[0] == 503  # "starting"

        held.release.set()
        wait_for(op.aio_ready.is_set, 120, what="the imports after ready ended, aiohttp's server up")
        wait_for(gc.isenabled, 60, what="the collector back on after the imports after ready")
        import aiohttp.web

        # What they made is frozen: no later collection walks it.
        assert not any(o is aiohttp.web.Application for o in gc.get_objects())
        status, body = _get(port, "/metrics")
        assert status == 200 and b"volsched_sessions_total" in body
        # Its first answer counts what came before the series were made: the session that bound p1, the
        # Lease it held, the pod it placed.
        text = body.decode()
        assert re.search(r"^volsched_sessions_total [1-9]", text, re.M), text
        assert re.search(r"^volsched_leader 1\.0$", text, re.M), text
        assert re.search(r'^volsched_schedule_attempts_total\{result="scheduled"\} [1-9]', text, re.M), text
        status, body = _get(port, "/ui")
        assert status == 200 and b"<html" in body.lower()
        assert _get(port, "/healthz")[0] == 200
        assert op.reads.get("/version", timeout=30)["major"]  # the reads through aiohttp's client now
        assert op.reads._aio.connects >= 1
        k.pods(ns, pod("p2"))  # and the replica goes on as before
        wait_for(lambda: len(k.bound(ns)) == 2, 60, what="a pod after the imports bound")


def test_with_the_webhooks_on_kopf_its_certificates_and_its_registry_come_under_the_pause_and_are_frozen(
    cluster: LocalControlPlane, k: Kube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kopf (and cryptography, which its settings' certificates import) imported after ready with the
    others, the collector paused; kopf's registry made before the freeze: none of it walked again."""
    k.nodes(node("n1"))
    settings = Settings(kubeconfig=str(cluster.kubeconfig_path))
    settings.http.host, settings.http.port, settings.http.auth = "127.0.0.1", 0, "none"
    settings.lease.namespace = OPERATOR_NS
    settings.webhook.port = free_port()
    op = Operator(settings)
    assert op.after_ready == [
        "aiohttp.web",
        "prometheus_client",
        "volsched.operator.kopfrun",
        "volsched.operator.certs",
    ]
    made: list[object] = []
    registry = op._kopf_registry

    def recorded() -> object:
        made.append(registry())
        return made[-1]

    monkeypatch.setattr(op, "_kopf_registry", recorded)
    with operator_on_a_thread(op):
        wait_for(op._kopf_started.is_set, 120, what="kopf started (its registry made, its settings read)")
        wait_for(gc.isenabled, 60, what="the collector back on after the imports after ready")
        import volsched.operator.certs

        assert len(made) == 1
        walked = gc.get_objects()
        assert not any(o is made[0] for o in walked)  # made under the pause, before the freeze
        assert not any(o is volsched.operator.certs.SharedCerts for o in walked)
        ns = k.namespace("after")
        k.pods(ns, pod("p1"))
        wait_for(lambda: k.bound(ns) == {f"{ns}/p1": "n1"}, 60, what="a pod bound with the webhooks on")


def test_a_stop_during_the_wait_for_a_lull_imports_nothing_after_ready(
    cluster: LocalControlPlane, k: Kube, held: HeldImport, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop (SIGTERM) while what comes after ready waits for the sessions' first lull: the operator
    stops there. Before, the wait ended and the imports after ready (aiohttp, prometheus_client) ran
    all the same, for the shutdown alone. The wait is held until the stop (no lull found), and the module
    put first in the imports' list says whether they began."""
    import volsched.operator

    k.nodes(node("n1"))
    settings = Settings(kubeconfig=str(cluster.kubeconfig_path))
    settings.http.host, settings.http.port, settings.http.auth = "127.0.0.1", 0, "none"
    settings.lease.namespace = OPERATOR_NS
    op = Operator(settings)
    op.after_ready.insert(0, HELD)
    held.release.set()  # (its import, should it begin, is not held open)
    waiting, ended = threading.Event(), threading.Event()
    until_idle = volsched.operator.until_idle

    async def no_lull_until_the_stop(activity: Activity, stop: asyncio.Event, **_: float) -> bool:
        waiting.set()
        return await until_idle(activity, stop, quiet=3600, at_most=3600)

    monkeypatch.setattr(volsched.operator, "until_idle", no_lull_until_the_stop)
    run = op.run

    async def run_to_its_end(stop: asyncio.Event) -> None:
        try:
            await run(stop)
        finally:
            ended.set()

    monkeypatch.setattr(op, "run", run_to_its_end)
    with operator_on_a_thread(op):
        assert waiting.wait(120)  # synced (ready), the sessions running, waiting for a lull
    assert ended.is_set()  # (stopped, its shutdown done)
    assert not held.entered.is_set()  # before: the imports after ready began once stopped
    assert not op.aio_ready.is_set()
