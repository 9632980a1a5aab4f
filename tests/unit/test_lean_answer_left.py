"""A write sent on the direct path whose answer has not begun within the caller's patience is left to
another thread (:class:`~volsched.kube.rest.Detached`): its answer is read there as the request would have
read it, and the connection is then parked for the next thread that opens one, not lost. A read is never
left (it is asked again when its answer is lost)."""

from __future__ import annotations

import os
import resource
import threading
from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.unit._scripted_server import OK, ScriptedServer
from volsched.kube import parked
from volsched.kube.errors import ApiException
from volsched.kube.rest import Detached, LeanRest

#: How long the server holds a request at most if the test never lets it go (the test then fails).
HOLD = 20.0
PATH = "/api/v1/namespaces/ns/pods/p/binding"


class HeldServer(ScriptedServer):
    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.arrived = threading.Semaphore(0)

    def before_answer(self, path: str) -> None:
        if path.endswith("/binding"):
            self.arrived.release()
            self.gate.wait(HOLD)


@pytest.fixture
def server() -> Iterator[HeldServer]:
    parked.close_all()
    with HeldServer() as s:
        yield s
        s.gate.set()
    parked.close_all()


def _rest(server: ScriptedServer) -> LeanRest:
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{server.port}"
    return LeanRest(client.ApiClient(cfg), direct=True)


def _on_a_thread(call: object) -> object:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(call()))  # type: ignore[operator]
    thread.start()
    thread.join(HOLD)
    return out[0]


@pytest.mark.parametrize("status", [200, 500])
def test_an_answer_not_begun_within_the_patience_is_read_on_another_thread(
    server: HeldServer, status: int
) -> None:
    if status != 200:
        server.script[PATH] = [(status, {}, {"kind": "Status", "message": "etcd timeout"}), OK]
    rest = _rest(server)
    with pytest.raises(Detached) as left:
        rest.request("POST", PATH, {"kind": "Binding"}, timeout=HOLD, patience=0.005)
    assert server.arrived.acquire(timeout=HOLD)  # sent once, held by the server
    server.gate.set()

    def answer() -> object:
        try:
            return left.value.pending.answer()
        except ApiException as exc:
            return exc.status

    assert _on_a_thread(answer) == (b"{}" if status == 200 else 500)
    assert len(server.sent("/binding")) == 1
    # The connection went with the answer and was parked: the next request (another thread's) takes it.
    connects = rest.connects
    assert _on_a_thread(lambda: rest.request("POST", PATH, {"kind": "Binding"}, timeout=HOLD)) is not None
    assert rest.connects == connects and rest.adopted == 1


def test_an_answer_begun_within_the_patience_is_read_here(server: HeldServer) -> None:
    server.gate.set()
    rest = _rest(server)
    assert rest.request("POST", PATH, {"kind": "Binding"}, timeout=HOLD, patience=HOLD) is not None
    assert rest.request("POST", PATH, {"kind": "Binding"}, timeout=HOLD) is not None
    assert rest.connects == 1  # this thread's connection kept


def test_a_read_is_never_left_to_another_thread(server: HeldServer) -> None:
    with pytest.raises(ValueError):
        _rest(server).request("GET", "/api/v1/pods", timeout=HOLD, patience=0.005)


def test_a_connection_past_select_s_limit_is_waited_on_all_the_same(server: HeldServer) -> None:
    """A process with many files open gets descriptors past FD_SETSIZE (1024), which ``select`` refuses
    (ValueError, after the write was sent): the wait for the answer must work there too, else a bind
    sent and taken is reported as failed and its answer left on the connection for the next request."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        pytest.skip(f"RLIMIT_NOFILE {soft}: cannot open past 1024 descriptors")
    fillers = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        rest = _rest(server)
        server.gate.set()  # answered at once
        assert rest.request("POST", PATH, {"kind": "Binding"}, timeout=HOLD, patience=HOLD) == b"{}"
        assert rest.request("POST", PATH, {"kind": "Binding"}, timeout=HOLD, patience=HOLD) == b"{}"
        assert len(server.sent("/binding")) == 2
        assert rest.connects == 1  # the kept-alive connection was not taken for dropped
    finally:
        for fd in fillers:
            os.close(fd)
