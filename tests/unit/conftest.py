"""Fixtures shared by the writer's fault-injection tests: a scripted loopback apiserver and a writer
talking to it, a Lease fence and the test's clock (a port in the background on them:
``tests.unit._background_port``). A module with a server of its own defines its own ``server``
fixture, which overrides this one (for ``writer`` too)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

import volsched.kube.port as port_module
from tests.fences import Fence
from tests.unit._background_port import Clock
from tests.unit._scripted_server import ScriptedServer, loopback_config
from volsched.kube.writer import KubeWriter, WriterSettings


@pytest.fixture(autouse=True)
def answers_read_where_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lone pod's bind sent on the session's thread has its answer read there however long the loopback
    server takes (``port.INLINE_PATIENCE`` off): which thread reads it must not depend on the machine's
    load. The tests of the hand-over to a worker set the patience themselves."""
    monkeypatch.setattr(port_module, "INLINE_PATIENCE", None)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A loopback server answering scripted statuses per path (``server.script``) and recording what it
    received (``server.received``)."""
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def writer_settings() -> WriterSettings:
    """The ``writer``'s settings: one worker, so requests reach the server in the order they are made. A
    module overrides this fixture to change them."""
    return WriterSettings(workers=1)


@pytest.fixture
def writer(server: ScriptedServer, writer_settings: WriterSettings) -> Iterator[KubeWriter]:
    """A writer to ``server`` whose client retries nothing (the test sees every answer)."""
    with client.ApiClient(loopback_config(server.port, retries=False)) as api:
        w = KubeWriter(api, writer_settings)
        yield w
        w.close()


@pytest.fixture
def fence() -> Fence:
    """The writer's Lease, held (the test sets ``fence.open = False`` to lose it)."""
    return Fence()


@pytest.fixture
def clock() -> Clock:
    """The test's clock, at 100 s: it moves only when the test moves it."""
    return Clock()
