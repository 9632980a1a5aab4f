"""A session whose status writes have nothing to do is not handed to the status thread: an arriving pod's
session, bound, in a cluster without Queue or PodGroup objects, copied the cache's tables into a job,
woke the status thread and ran the job to find nothing, at every pod. Whatever the writes would do still
makes them run (fault injection: a scripted server; the cycle is the real one)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.builders import node, pod, podgroup, queue
from tests.fences import Fence
from tests.unit._background_port import background_port
from tests.unit._cycle_harness import CONFIG, cache
from tests.unit.test_kube_port_background import HOLD, GatedServer
from volsched.cache.feeder import Feeder
from volsched.cycle import BOUND, run_cycle
from volsched.kube.port import KubePort


@pytest.fixture
def server() -> Iterator[GatedServer]:
    s = GatedServer()
    s.gate.set()  # binds answered at once
    yield s
    s.httpd.shutdown()


@pytest.fixture
def port(server: GatedServer, fence: Fence) -> Iterator[KubePort]:
    with background_port(server, fence, workers=2) as p:
        yield p
        p.drain(HOLD)


def _runs(port: KubePort, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The status writes run, one entry per session whose writes ran."""
    ran: list[str] = []
    write = port._write_status

    def counted(*args: Any, **kwargs: Any) -> Any:
        ran.append("ran")
        return write(*args, **kwargs)

    monkeypatch.setattr(port, "_write_status", counted)
    return ran


def _arrive(feeder: Feeder, *objects: dict[str, Any], rv: int = 100) -> None:
    for i, obj in enumerate(objects):
        obj["metadata"].update(resourceVersion=str(rv + i), uid=f"uid-{obj['metadata']['name']}")
        feeder.apply(obj["kind"], obj)  # (False: refused, as the refused Queue below)


def _cycle(feeder: Feeder, port: KubePort) -> list[tuple[str, str]]:
    report = run_cycle(feeder, CONFIG, port, now=5000.0)
    assert port.drain(HOLD)
    return [(o.bind.pod, o.result) for o in report.binds]


def test_an_arriving_pods_session_with_nothing_to_write_runs_no_status_writes(
    server: GatedServer, port: KubePort, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = _runs(port, monkeypatch)
    feeder = cache(node("n1", cpu="4"), pod("a"))
    assert _cycle(feeder, port) == [("default/a", BOUND)]
    assert ran == ["ran"]  # the first under this holding of the Lease: nominated nodes read
    first = len(server.sent(""))
    for i, name in enumerate(("b", "c", "d")):
        _arrive(feeder, pod(name), rv=100 + i)
        assert _cycle(feeder, port) == [(f"default/{name}", BOUND)]
    assert ran == ["ran"]
    assert port.status_jobs == 1
    assert [r.path.rsplit("/", 1)[-1] for r in server.sent("")[first:]] == ["binding"] * 3  # nothing else


#: What a later session's status writes have to do, each made so after a first session with nothing
#: to write: (what changed, the request it makes).
DUE: dict[str, tuple[Callable[[Feeder, Fence], None], str]] = {
    "a pod that never fits (its condition)": (
        lambda feeder, _: _arrive(feeder, pod("big", cpu="8")),
        "/pods/big/status",
    ),
    "a Queue object the session reports on": (
        lambda feeder, _: _arrive(feeder, queue("default"), pod("b")),
        "/queues/default/status",
    ),
    "a PodGroup object the session reports on": (
        lambda feeder, _: _arrive(
            feeder, podgroup("pg"), pod("b", annotations={"scheduling.k8s.io/group-name": "pg"})
        ),
        "/podgroups/pg/status",
    ),
    "an object the cache refused (its event)": (
        lambda feeder, _: _arrive(feeder, queue("bad", weight=-1), pod("b")),
        "/events",
    ),
}


@pytest.mark.parametrize("case", sorted(DUE))
def test_a_session_whose_status_writes_have_something_to_do_runs_them(
    case: str, server: GatedServer, port: KubePort, fence: Fence, monkeypatch: pytest.MonkeyPatch
) -> None:
    change, request = DUE[case]
    feeder = cache(node("n1", cpu="4"), pod("a"))
    _cycle(feeder, port)
    ran = _runs(port, monkeypatch)
    _arrive(feeder, pod("z"), rv=90)
    _cycle(feeder, port)
    assert ran == []  # nothing to write yet
    change(feeder, fence)
    _cycle(feeder, port)
    assert ran == ["ran"]
    assert server.sent(request), f"no {request} among {[r.path for r in server.sent('')]}"


def test_a_later_holding_of_the_lease_runs_the_status_writes(
    server: GatedServer, port: KubePort, fence: Fence, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a new holding, what the writer remembers of the last one is forgotten and the nominated
    nodes read again: the writes run."""
    feeder = cache(node("n1", cpu="4"), pod("a"))
    _cycle(feeder, port)
    ran = _runs(port, monkeypatch)
    fence.acquired_at = 2.0
    port.plan_under(2.0)
    _arrive(feeder, pod("b"))
    assert _cycle(feeder, port) == [("default/b", BOUND)]
    assert ran == ["ran"]


def test_status_writes_owed_run_again_whatever_the_session(
    server: GatedServer, port: KubePort, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A status write that failed is owed: the next session's writes run even with nothing new."""
    server.script["/pods/big/status"] = [(500, {}, {"kind": "Status", "message": "etcd timeout"})]
    feeder = cache(node("n1", cpu="4"), pod("big", cpu="8"))
    _cycle(feeder, port)
    assert port.owes()
    ran = _runs(port, monkeypatch)
    _arrive(feeder, {**pod("big", cpu="8"), "kind": "Pod"}, rv=100)  # the same pod again
    _cycle(feeder, port)
    assert ran == ["ran"]
    assert len(server.sent("/pods/big/status")) == 2
