"""What the status writer's fault-injection tests set up alike: a KubePort in the background whose writer
talks to the test's loopback server under the test's fence, and a clock the test moves (the writer's,
so what falls within a bound does not depend on the machine's load)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kubernetes import client

from tests.fences import Fence
from tests.unit._scripted_server import ScriptedServer, loopback_config
from volsched.kube.port import KubePort
from volsched.kube.writer import KubeWriter, WriterSettings


class Clock:
    """A clock that moves only when the test moves it (``now``, in seconds)."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@contextmanager
def background_port(
    server: ScriptedServer,
    fence: Fence,
    *,
    settings: WriterSettings | None = None,
    workers: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    pool_size: int = 8,
    on_failed: Callable[[], None] | None = None,
    queue_status_every: float = 1.0,
    left_behind: bool = True,
) -> Iterator[KubePort]:
    """A background KubePort whose writer (``settings``, or the defaults with ``workers`` bind workers)
    talks to ``server`` through a client that retries nothing (``pool_size`` connections), under
    ``fence``, on ``clock``; closed with its writer and client. Without ``left_behind`` its pass over
    the PodGroups left behind is taken as done (not what the test is about)."""
    if settings is None:
        settings = WriterSettings() if workers is None else WriterSettings(bind_workers=workers)
    api = client.ApiClient(loopback_config(server.port, retries=False, pool_size=pool_size))
    writer = KubeWriter(api, settings, fence=fence, clock=clock)
    port = KubePort(writer, background=True, on_failed=on_failed, queue_status_every=queue_status_every)
    if not left_behind:
        port.left_behind.done = True
    try:
        yield port
    finally:
        port.close()
        writer.close()
        api.close()  # type: ignore[no-untyped-call]
