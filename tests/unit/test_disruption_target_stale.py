"""A pod marked as a disruption target for an eviction that never happened (its scheduler stopped between
the condition and the eviction) is told otherwise by the next holder of the Lease: the pruned pod keeps
the condition's status and reason, and the writer sets each such pod of ours back to False, on the pod
as the apiserver has it then (note13 Found 8). The e2e test: tests/e2e/test_operator_stale_disruption.py."""

from __future__ import annotations

import time
from typing import Any

import pytest

from volsched.kube import status as render
from volsched.kube.prune import prune_pod
from volsched.kube.writer import STALE_TARGET, KubeWriter
from volsched.model.scalars import rfc3339
from volsched.model.vocabulary import SCHEDULER_NAME


def _pod(
    name: str, *, reason: str = "PreemptionByScheduler", status: str = "True", scheduler: str = SCHEDULER_NAME
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": "3"},
        "spec": {"schedulerName": scheduler, "nodeName": "n1"},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "DisruptionTarget", "status": status, "reason": reason, "message": "preempt: ..."},
            ],
        },
    }


def _terminating(pod: dict[str, Any]) -> dict[str, Any]:
    return {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "2026-11-30T00:00:00Z"}}


def test_the_pruned_pod_keeps_the_conditions_status_and_reason() -> None:
    conditions = prune_pod(_pod("a"))["status"]["conditions"]
    assert conditions == [
        {"type": "Ready", "status": "True"},
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
    ]


@pytest.mark.parametrize(
    ("pod", "marked"),
    [
        (_pod("a"), True),
        (_pod("a", reason="ReclaimByScheduler"), True),
        (_pod("a", reason="EvictionByScheduler"), True),
        (_pod("a", reason="EvictionByEvictionAPI"), False),  # the apiserver's, as it evicts: not ours
        (_pod("a", reason="DeletionByTaintManager"), False),
        (_pod("a", status="False", reason="NotEvicted"), False),
        (_terminating(_pod("a")), False),  # evicted after all
        ({"metadata": {}, "status": {"conditions": None}}, False),
        ({"metadata": {}, "status": "odd"}, False),
    ],
)
def test_what_counts_as_marked_by_a_scheduler(pod: dict[str, Any], marked: bool) -> None:
    assert render.marked_by_scheduler(prune_pod(pod)) is marked


def test_the_next_holder_sets_back_only_our_pods_still_marked_and_not_being_deleted(
    writer: KubeWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = {
        "stale": _pod("stale"),
        "evicted-since": _pod("evicted-since"),  # the cache has not seen the eviction yet
        "made-again": _pod("made-again"),  # another pod by that name since
        "terminating": _terminating(_pod("terminating")),
        "not-ours": _pod("not-ours", scheduler="default-scheduler"),
        "apiserver's": _pod("apiserver's", reason="EvictionByEvictionAPI"),
        "set-back": _pod("set-back", status="False", reason="NotEvicted"),
    }
    fresh = {
        **cached,
        "stale": {**cached["stale"], "metadata": {**cached["stale"]["metadata"], "resourceVersion": "9"}},
        "evicted-since": _terminating(cached["evicted-since"]),
        "made-again": {
            **cached["made-again"],
            "metadata": {**cached["made-again"]["metadata"], "uid": "u-2"},
        },
    }
    sent: list[tuple[str, str, Any]] = []

    def send(method: str, path: str, body: Any, **_: Any) -> bytes:
        sent.append((method, path, body))
        return b"{}"

    monkeypatch.setattr(writer, "_send", send)
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: fresh[name])
    assert writer.withdraw_stale(prune_pod(p) for p in cached.values()) == 1
    [(method, path, body)] = sent
    assert (method, path) == ("PATCH", "/api/v1/namespaces/ns/pods/stale/status")
    assert body["metadata"] == {"uid": "u-stale", "resourceVersion": "9"}  # the version read, not the cache's
    [condition] = body["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionTarget",
        "False",
        "NotEvicted",
    )
    assert condition["message"] == f"not evicted ({STALE_TARGET})"


def test_a_refused_patch_is_no_error_and_is_tried_again_a_while_later(
    writer: KubeWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A patch refused (409: the pod changed since it was read) or unsent is looked at again 10 s later
    (``KubeWriter.withdraw_unsettled``), on the pod read then; before, the pod was left marked until the
    next holding of the Lease (note14 Found 6)."""
    from volsched.kube.errors import ApiException

    clock = [0.0]
    writer.clock = lambda: clock[0]
    sent: list[str] = []

    def send(method: str, path: str, body: Any, **_: Any) -> bytes:
        sent.append(path)
        if len(sent) == 1:
            raise ApiException(status=409, reason="Conflict")
        return b"{}"

    monkeypatch.setattr(writer, "_send", send)
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: _pod(name))
    assert writer.withdraw_stale([prune_pod(_pod("a"))]) == 0
    clock[0] += 10
    assert writer.withdraw_unsettled() == 1
    assert sent == ["/api/v1/namespaces/ns/pods/a/status"] * 2


def _alone(pod: dict[str, Any]) -> dict[str, Any]:
    """``pod`` with its DisruptionTarget condition alone (no Ready: a pod the kubelet never reported)."""
    return {**pod, "status": {**pod["status"], "conditions": pod["status"]["conditions"][1:]}}


def test_the_look_over_every_cached_pod_passes_over_only_pods_that_cannot_be_marked(
    writer: KubeWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look at the start of a holding walks every cached pod, so it passes over, cheaply, a pod whose
    conditions cannot hold a DisruptionTarget (none, or one of another type); a marked pod is set back
    whatever its other conditions, and a pod of another shape is looked at whole (note14 Found 6)."""
    ready = {
        **_pod("ready"),
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }
    cached = [
        prune_pod(ready),
        {**prune_pod(ready), "status": {"phase": "Pending"}},
        {"metadata": {"name": "odd"}, "spec": {"schedulerName": SCHEDULER_NAME}, "status": "odd"},
        prune_pod(_alone(_pod("alone"))),
        prune_pod(_pod("with-ready")),
        _pod("unpruned"),  # (every other condition kept)
    ]
    looked: list[str] = []
    monkeypatch.setattr(
        writer, "_withdraw_unless_evicted", lambda ns, name, *_, **__: looked.append(name) or True
    )
    assert writer.withdraw_stale(cached) == 3
    assert looked == ["alone", "with-ready", "unpruned"]


def test_a_pod_marked_moments_before_the_look_is_looked_at_again_once_no_request_for_it_can_act(
    writer: KubeWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the start of a holding, a pod marked moments ago (a leader's last eviction or delete, sent just
    before it stopped, may still land; a delete writes no condition of its own) is not set back then, but
    once ``unknown_settles_after`` has passed since it was marked, on the pod read then; one marked long
    ago, or at no time it says, is set back at once (note14 Found 6)."""
    clock = [0.0]
    writer.clock = lambda: clock[0]
    settle = writer.settings.unknown_settles_after

    def marked(name: str, ago: float | None) -> dict[str, Any]:
        obj = _pod(name)
        if ago is not None:
            obj["status"]["conditions"][1]["lastTransitionTime"] = rfc3339(time.time() - ago)
        return obj

    fresh = {
        "moments": marked("moments", 5),
        "long": marked("long", settle + 60),
        "untimed": marked("untimed", None),
    }
    sent: list[str] = []

    def send(method: str, path: str, body: Any, **_: Any) -> bytes:
        sent.append(path.split("/")[-2])
        return b"{}"

    monkeypatch.setattr(writer, "_send", send)
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: fresh[name])
    assert writer.withdraw_stale(prune_pod(p) for p in fresh.values()) == 2
    assert sent == ["long", "untimed"]
    clock[0] += settle - 10  # (5 s ago when read: due 65 s after)
    assert not writer.unsettled_due()
    clock[0] += 6
    assert writer.withdraw_unsettled() == 1
    assert sent[2:] == ["moments"]


def test_a_look_tried_again_after_a_failed_read_still_waits_for_a_mark_made_moments_ago(
    writer: KubeWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look at the start of a holding whose read failed is tried again 10 s later, and then too a pod
    marked moments before is set back only once no request for it can act."""
    clock = [0.0]
    writer.clock = lambda: clock[0]
    obj = _pod("a")
    obj["status"]["conditions"][1]["lastTransitionTime"] = rfc3339(time.time() - 1)
    reads: list[int] = []

    def read_pod(ns: str, name: str) -> Any:
        reads.append(1)
        if len(reads) == 1:
            raise ConnectionRefusedError()
        return obj

    sent: list[str] = []
    monkeypatch.setattr(writer, "_send", lambda method, path, body, **_: sent.append(path) or b"{}")
    monkeypatch.setattr(writer, "read_pod", read_pod)
    assert writer.withdraw_stale([prune_pod(obj)]) == 0
    clock[0] += 10
    assert writer.withdraw_unsettled() == 0 and len(reads) == 2 and sent == []  # read: marked 11 s ago
    clock[0] += writer.settings.unknown_settles_after
    assert writer.withdraw_unsettled() == 1 and len(sent) == 1
