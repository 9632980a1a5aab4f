"""The operator's start lists every kind once (each kind's ListWatch) before it watches: a kind whose
CRD is not installed is a warning that names it, and the start goes on; any other refusal of a listing
ends the start (the listings themselves are stubbed: what the start makes of their outcome)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit._cycle_harness import operator_at
from volsched.kube.watch import ApiError, ListWatch, Stopped
from volsched.model.errors import InputError
from volsched.operator import Operator


@pytest.fixture
def op(tmp_path: Path) -> Iterator[Operator]:
    with operator_at(tmp_path) as made:
        yield made


def _listings(op: Operator, monkeypatch: pytest.MonkeyPatch, failing: dict[str, int]) -> list[str]:
    """Every kind's first listing stubbed: ``failing`` kinds answered that status, the others listed."""
    listed: list[str] = []
    for kind, w in op.feed.lean.items():

        def first_list(*, kind: str = kind, throttle_retries: int = 10) -> str:
            if kind in failing:
                raise ApiError(failing[kind], "refused")
            listed.append(kind)
            return "1"

        monkeypatch.setattr(w, "first_list", first_list)
    return listed


def test_a_kind_whose_crd_is_not_installed_is_named_in_a_warning_and_the_start_goes_on(
    op: Operator, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    listed = _listings(op, monkeypatch, {"Queue": 404, "PodGroup": 404})
    with caplog.at_level(logging.WARNING):
        op.feed._prelist()
    assert {"Pod", "Node", "PriorityClass"} <= set(listed) and "Queue" not in listed
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("queues are not served" in m and "CRD" in m for m in warned)
    assert any("podgroups are not served" in m for m in warned)
    assert op.feed._prelisted.is_set()


@pytest.mark.parametrize("status", [403, 500])
def test_any_other_refusal_of_a_kinds_first_listing_ends_the_start(
    op: Operator, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    _listings(op, monkeypatch, {"PriorityClass": status})
    # a 4xx answer ends it in a line (volsched run exits 2 saying it), another failure as raised
    said = (
        r"the first listing of priorityclasses was refused \(403: refused\); " if status == 403 else "refused"
    )
    with pytest.raises(InputError if status == 403 else ApiError, match=said):
        op.feed._prelist()
    assert op.feed._prelisted.is_set()  # the pods' listing is not left waiting for it


@pytest.mark.parametrize("kind", ["Pod", "Namespace", "PriorityClass"])
def test_a_404_for_a_kind_every_apiserver_serves_ends_the_start_saying_not_served(
    op: Operator, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """note18 Found 9: a 404 for Pods ended the start as "refused", one for Namespaces or PriorityClasses
    was warned as a CRD not installed and the start went on without them. Every kube-apiserver serves
    them: the server is not one, or not at the kubeconfig's path."""
    _listings(op, monkeypatch, {kind: 404})
    plural = op.feed.lean[kind].kind.plural
    with pytest.raises(
        InputError, match=rf"^the first listing of {plural} found them not served \(404: refused\)"
    ):
        op.feed._prelist()
    assert op.feed._prelisted.is_set()


def test_a_small_kinds_refusal_ends_the_start_at_once_stopping_the_pods_listing(
    op: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pods' listing (a minute on a large cluster) is stopped at its next page, not waited for to
    its end before the refusal is raised (the stub lists "to the end" if it is not stopped in 30 s)."""
    _listings(op, monkeypatch, {"PriorityClass": 403})
    ended: dict[str, str] = {}
    for kind in ("Pod", "Node"):
        w = op.feed.lean[kind]

        def long_listing(*, w: ListWatch = w, kind: str = kind, throttle_retries: int = 10) -> str:
            ended[kind] = "stopped" if w._stop.wait(30) else "listed to the end"
            raise Stopped(kind)

        monkeypatch.setattr(w, "first_list", long_listing)
    with pytest.raises(InputError, match=r"priorityclasses was refused \(403: refused\)"):
        op.feed._prelist()
    op.feed.lean["Pod"]._stop.wait(30)  # told; the stub's thread records it
    assert all(op.feed.lean[k].stopped for k in ("Pod", "Node"))
    for t in [t for t in threading.enumerate() if t.name.startswith("volsched-list")]:
        t.join(30)
    assert ended == {"Pod": "stopped", "Node": "stopped"}


def test_with_no_small_kind_to_wait_for_the_pods_are_handed_over_at_once(
    op: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pods and Nodes wait for the small kinds (``_prelisted``) before handing anything over: with none
    to list, they wait for nothing (the stub gives up after 30 s)."""
    monkeypatch.setattr(op.feed, "lean", {k: w for k, w in op.feed.lean.items() if k in ("Pod", "Node")})
    waited: dict[str, bool] = {}
    for kind, w in op.feed.lean.items():

        def first_list(*, kind: str = kind, throttle_retries: int = 10) -> str:
            waited[kind] = op.feed._prelisted.wait(30)
            return "1"

        monkeypatch.setattr(w, "first_list", first_list)
    op.feed._prelist()
    assert waited == {"Pod": True, "Node": True}


def test_stopping_tells_every_watch_before_waiting_for_any(
    op: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, float]] = []
    for kind, w in op.feed.lean.items():

        def stop(timeout: float = 5.0, *, kind: str = kind) -> None:
            calls.append((kind, timeout))

        monkeypatch.setattr(w, "stop", stop)
    op.feed.stop()
    n = len(op.feed.lean)
    assert n >= 10 and len(calls) == 2 * n
    assert all(timeout == 0 for _, timeout in calls[:n])  # all told ...
    assert all(timeout > 0 for _, timeout in calls[n:])  # ... then each waited for
    assert {k for k, _ in calls[:n]} == set(op.feed.lean)


#: (when the Lease was acquired, how; whether the Pods' early pages are kept): they were asked for at 5.0.
EARLY_KEPT = [
    (0.0, "", True),  # a follower: a later take-over catches up
    (6.0, "created", True),  # nobody held it: no binds of another holder to miss
    (6.0, "released", False),  # taken over after the pages were asked for: listed again
    (6.0, "expired", False),
    (4.0, "expired", True),  # taken over before they were asked for
]


@pytest.mark.parametrize(("acquired_at", "how", "kept"), EARLY_KEPT)
def test_a_replica_taking_the_lease_over_at_start_lists_what_a_leader_writes_after_it(
    op: Operator, monkeypatch: pytest.MonkeyPatch, acquired_at: float, how: str, kept: bool
) -> None:
    from volsched.kube.early import EarlyListing
    from volsched.kube.kubeconfig import ClientConfig

    _listings(op, monkeypatch, {})
    early = {
        kind: EarlyListing(ClientConfig("https://127.0.0.1:1"), f"/{kind}")  # never started
        for kind in ("Pod", "Node", "PodGroup", "Queue", "ResourceClaim", "PriorityClass", "Namespace")
    }
    for kind, listing in early.items():
        op.feed.lean[kind]._early = listing
    op.early_listed_at = 5.0
    op.lease.acquired_at, op.lease.acquired_how = acquired_at, how
    op.prelist()
    for kind in ("Pod", "PodGroup", "Queue", "ResourceClaim"):  # what the last holder may have written
        assert (op.feed.lean[kind]._early is early[kind]) is kept, kind
    for kind in ("Node", "PriorityClass", "Namespace"):  # written by no scheduler
        assert op.feed.lean[kind]._early is early[kind], kind
    assert op.loop.pods_read_at >= 5.0
