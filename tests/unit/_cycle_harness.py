"""What the unit tests of the cycle, the idle sessions and the doorbell share: a small scheduler config,
a settable clock, a fake port answering binds as scripted, a cache fed the way the watches feed it, and
a kubeconfig naming an apiserver nobody listens on (and an operator made on one, closed after)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.builders import Obj
from volsched.cache.feeder import Feeder
from volsched.cache.state import ClusterState
from volsched.cycle import BOUND, CONFLICT, EVICTED, BindOutcome, EvictOutcome, StatusReport
from volsched.framework.decisions import Bind, Evict, SessionResult
from volsched.framework.registry import load_config

if TYPE_CHECKING:
    from volsched.operator import Operator, Settings

CONFIG = load_config(
    text='actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
    "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]\n"
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakePort:
    """Answers each bind as scripted (``script[pod]``: one result per attempt, then BOUND), at once or,
    with ``late``, only from the next ``settle``. Keeps what the API would hold: pods bound, by node."""

    def __init__(self, script: Mapping[str, Sequence[str]] = {}, *, late: bool = False) -> None:
        self.script = {k: list(v) for k, v in script.items()}
        self.late = late
        self.bound: dict[str, str] = {}  # pod -> node, as the API has it
        self.sent: list[str] = []
        self.pending: list[BindOutcome] = []
        self.rv = 100

    def _answer(self, b: Bind, pod: Any) -> BindOutcome:
        self.sent.append(b.pod)
        todo = self.script.get(b.pod)
        result = todo.pop(0) if todo else BOUND
        if result == BOUND:
            assert b.pod not in self.bound, f"{b.pod} bound twice"
            self.bound[b.pod] = b.node
            return BindOutcome(b, BOUND)
        if result == CONFLICT:  # someone else bound it: the port reads it back
            self.rv += 1
            fresh = {**pod, "spec": {**pod["spec"], "nodeName": "n2"}}
            fresh["metadata"] = {**pod["metadata"], "resourceVersion": str(self.rv)}
            self.bound[b.pod] = "n2"
            return BindOutcome(b, CONFLICT, "already bound", fresh)
        return BindOutcome(b, result, "scripted")

    def bind(
        self, binds: Sequence[Bind], pods: Mapping[str, Any], *, lone: bool = False
    ) -> list[BindOutcome]:
        outcomes = [self._answer(b, pods[b.pod]) for b in binds]
        if self.late:
            self.pending.extend(outcomes)
            return []
        return outcomes

    def evict(self, evictions: Sequence[Evict], pods: Mapping[str, Any]) -> list[EvictOutcome]:
        return [EvictOutcome(e, EVICTED) for e in evictions]

    def settle(self) -> tuple[list[BindOutcome], list[EvictOutcome]]:
        done, self.pending = self.pending, []
        return done, []

    def write_status(self, result: SessionResult, feeder: Feeder) -> StatusReport:
        return StatusReport(writes=len(result.podgroups))


def cache(*objects: Obj, clock: Clock | None = None) -> Feeder:
    feeder = Feeder(ClusterState(), assume_ttl=30, clock=clock or Clock())
    for rv, obj in enumerate(objects, start=1):
        obj["metadata"].update(resourceVersion=str(rv), uid=f"uid-{obj['metadata']['name']}")
        assert feeder.apply(obj["kind"], obj)
    return feeder


def nodes_of(feeder: Feeder) -> dict[str, str | None]:
    return {key: t.node_name for key, t in sorted(feeder.state.tasks.items())}


def bound_event(feeder: Any, key: str, node_name: str, *, rv: int) -> Obj:
    """The watch event the API sends once the pod ``key`` is bound to ``node_name``."""
    raw = feeder.state.raw_pods[key]
    return {
        **raw,
        "spec": {**raw["spec"], "nodeName": node_name},
        "metadata": {**raw["metadata"], "resourceVersion": str(rv)},
    }


KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@contextmanager
def operator_at(
    tmp_path: Path, port: int = 9, *, configure: Callable[[Settings], object] | None = None
) -> Iterator[Operator]:
    """An Operator whose kubeconfig (in ``tmp_path``) names the apiserver at 127.0.0.1:``port`` (nobody,
    unless the test serves it), made on its settings as ``configure`` leaves them; its port, writer and
    clients closed afterwards."""
    from volsched.operator import Operator, Settings

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG.replace("127.0.0.1:9", f"127.0.0.1:{port}"))
    settings = Settings(kubeconfig=str(kubeconfig))
    if configure is not None:
        configure(settings)
    op = Operator(settings)
    try:
        yield op
    finally:
        op.port.close()
        op.writer.close()
        op.api.close()  # type: ignore[no-untyped-call]
        op.watch_api.close()  # type: ignore[no-untyped-call]
