"""A pod's bound-under record (``volsched.model.admitted.BOUND_UNDER``) that no bind wrote is read as no
record, whatever its text, and costs the cache no more than a record does.

The defect: the record was parsed with ``json.loads`` catching ``ValueError`` only, and kept in an
``lru_cache`` by its text. A record nested deeper than the interpreter's recursion limit (a few thousand
``[``, well within an annotation's 256 KiB) raised ``RecursionError`` out of the cache's ``apply``: the
watch passed the event over with a traceback, leaving the pod half taken (its task in the table, its doorbell
not rung, its version forgotten, so each relist raised again). And each such text up to 256 KiB was kept
alive by the cache of 1,024 entries. Who may write it: the admission policy refuses it to tenants, but
without the policy (Kubernetes before 1.30, ``podQueueFixed: false``) a pod standing alone keeps what it
was created with through its bind (which writes no record for it)."""

from __future__ import annotations

from tests.builders import node, pod, queue
from volsched.cache.state import ClusterState
from volsched.model import admitted
from volsched.model.admitted import BOUND_UNDER

RECORD = admitted.bound_under(uid="uid-1", queue="qa", priority_class="low", priority=10, min_member=2)


def test_a_record_nested_past_the_recursion_limit_is_no_record() -> None:
    for text in ("[" * 100_000, '{"a":' * 100_000, "[" * 100_000 + "]" * 100_000):
        assert admitted.read_bound(text) is None


def test_a_record_longer_than_any_bind_writes_is_no_record_and_not_kept() -> None:
    longest = admitted.bound_under(
        uid="u" * 36, queue="q" * 253, priority_class="c" * 253, priority=-(2**31), min_member=2**31 - 1
    )
    assert admitted.read_bound(longest) is not None  # what a bind writes, at its longest
    padded = RECORD[:-1] + ',"pad":"' + "x" * 200_000 + '"}'
    assert admitted.read_bound(padded) is None  # valid JSON, but longer than any bind writes: not read


def test_a_pod_holding_a_node_with_a_hostile_record_is_taken_as_a_pod_without_one() -> None:
    state = ClusterState()
    for obj in (node("n1", cpu="8"), queue("qa")):
        state.apply(obj)
    before = state.changes
    hostile = pod("x", ns="ns", node="n1")
    hostile["metadata"].setdefault("annotations", {})[BOUND_UNDER] = "[" * 100_000
    state.apply(hostile)  # on main: RecursionError
    assert state.tasks["ns/x"].node_name == "n1"
    assert state.changes > before
    state.apply(pod("y", ns="ns", node="n1"))  # the next pod as ever
    assert "ns/y" in state.tasks
