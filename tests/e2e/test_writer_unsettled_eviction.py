"""A victim marked as a disruption target whose eviction's outcome was not known at once is told the truth
once it is (note14 Found 6), on a real apiserver: a delete past a budget that the apiserver refused (here an
admission policy's 422) cannot land later, so the pod is set back to False at once; an eviction or a delete
whose answer was lost (the only stand-in: the request dropped before it reached the apiserver, or sent
after the lost answer, as one landing late) is looked at again once no request can act any more
(``WriterSettings.unknown_settles_after``, 0 here): still there, marked and not being deleted, it is set
back to False saying why, and no event says it was evicted; evicted or deleted meanwhile, it is not told
otherwise (a late delete writes no condition of its own: a False would lie), and its event is written
then. Should the replica lose the Lease before that look, the next holder looks in its stead: the Lease
hands the look over (``HANDOVER``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import Kube, pod, wait_for
from volsched.cycle import EVICTED, FAILED, FENCED, UNKNOWN
from volsched.framework.decisions import Evict, EvictionReason, SessionResult
from volsched.kube import status as render
from volsched.kube.lease import HANDOVER, LeaderLease, LeaseSettings
from volsched.kube.prune import prune_pod
from volsched.kube.rest import ResponseLost
from volsched.kube.writer import NOT_OWED, UNSETTLED_TARGET, KubeWriter, WriterSettings

pytestmark = pytest.mark.cluster


@pytest.fixture
def writer(mk: Kube) -> Iterator[KubeWriter]:
    w = KubeWriter(mk.api, WriterSettings(workers=1, unknown_settles_after=0.0))
    yield w
    w.close()


def _running(k: Kube, *, grace: int = 30) -> tuple[str, dict[str, Any]]:
    """A pod c of ours on node n1 (no kubelet: it terminates until its grace period is over, 30 s; with
    ``grace`` 0 an eviction deletes it at once)."""
    ns = k.namespace(f"unsettled-{uuid.uuid4().hex[:6]}")
    obj = pod("c")
    obj["spec"]["terminationGracePeriodSeconds"] = grace
    made = k.core.create_namespaced_pod(ns, obj)
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="c"), target=client.V1ObjectReference(kind="Node", name="n1")
    )
    k.core.create_namespaced_binding(ns, binding, _preload_content=False)
    k.core.patch_namespaced_pod_status("c", ns, {"status": {"phase": "Running"}})
    return ns, k.api.sanitize_for_serialization(made)


def _victim(ns: str, raw: dict[str, Any], *, deletes: bool) -> Evict:
    past = ("1 pod protected by PodDisruptionBudget keep",) if deletes else ()
    return Evict(
        pod=f"{ns}/c",
        uid=raw["metadata"]["uid"],
        node="n1",
        reason=EvictionReason(action="reclaim" if deletes else "preempt", past_budget=past),
    )


def _target(k: Kube, ns: str) -> Any:
    got = k.core.read_namespaced_pod("c", ns)
    [target] = [c for c in got.status.conditions or [] if c.type == "DisruptionTarget"]
    return got, target


def _events(k: Kube, ns: str) -> list[str]:
    """The reasons of the events about pod c."""
    return [e.reason for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "c"]


def _lost(writer: KubeWriter, monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    """``writer``'s next ``method`` request is lost before it reaches the apiserver: no answer comes."""
    send = writer.rest.request

    def request(m: str, path: str, *args: Any, **kwargs: Any) -> bytes:
        if m == method:
            monkeypatch.setattr(writer.rest, "request", send)
            raise ResponseLost(f"{m} {path}: no answer (TimeoutError)")
        return send(m, path, *args, **kwargs)

    monkeypatch.setattr(writer.rest, "request", request)


def _no_deletes_in(mk: Kube, ns: str) -> None:
    """A ValidatingAdmissionPolicy refusing every pod delete in ``ns`` (422), in force once it returns."""
    adm = client.AdmissionregistrationV1Api(mk.api)
    name = f"no-deletes-{ns}"
    rules = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["pods"]}]
    adm.create_validating_admission_policy(
        {
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": rules},
                "validations": [{"expression": "false", "message": "deletes are frozen here"}],
            },
        }
    )
    adm.create_validating_admission_policy_binding(
        {
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}},
            },
        }
    )

    def refused() -> bool:
        try:
            mk.core.delete_namespaced_pod("c", ns, dry_run="All")
        except client.ApiException as exc:
            return "deletes are frozen here" in str(exc.body)
        return False

    wait_for(refused, 30, what="the policy refusing deletes")


def test_a_delete_past_a_budget_that_was_refused_is_set_back_at_once(mk: Kube, writer: KubeWriter) -> None:
    """Before: kept marked (a delete that lands late writes no condition), though a 422 cannot land."""
    ns, raw = _running(mk)
    _no_deletes_in(mk, ns)
    outcome = writer.evict(_victim(ns, raw, deletes=True), raw)
    assert outcome.result == FAILED and outcome.detail.startswith("delete: 422: "), outcome.detail
    got, target = _target(mk, ns)
    assert got.metadata.deletion_timestamp is None
    assert (target.status, target.reason) == ("False", "NotEvicted")
    assert target.message.startswith("not evicted (delete: 422: "), target.message
    assert "deletes are frozen here" in target.message
    assert not writer.unsettled_due()  # nothing left to look at


@pytest.mark.parametrize("deletes", [False, True], ids=["eviction", "delete past a budget"])
def test_a_victim_whose_answer_was_lost_and_that_was_not_evicted_is_told_so_once_that_is_known(
    mk: Kube, writer: KubeWriter, monkeypatch: pytest.MonkeyPatch, deletes: bool
) -> None:
    """Before: left marked until the next holding of the Lease (or the disruption controller, which this
    control plane does not run)."""
    ns, raw = _running(mk)
    _lost(writer, monkeypatch, "DELETE" if deletes else "POST")
    outcome = writer.evict(_victim(ns, raw, deletes=deletes), raw)
    assert outcome.result == UNKNOWN, outcome.detail
    _, target = _target(mk, ns)
    assert (target.status, target.reason) == (
        "True",
        "ReclaimByScheduler" if deletes else "PreemptionByScheduler",
    )
    assert writer.unsettled_due()
    assert writer.withdraw_unsettled() == 1
    got, target = _target(mk, ns)
    assert got.metadata.deletion_timestamp is None
    assert (target.status, target.reason) == ("False", "NotEvicted")
    assert _events(mk, ns) == []  # it was not evicted: no event says it was
    said = UNSETTLED_TARGET.format(0.0)
    assert target.message.startswith(f"not evicted ({said}): {'reclaim' if deletes else 'preempt'}: {ns}/c ")
    assert writer.withdraw_unsettled() == 0  # once


@pytest.mark.parametrize("deletes", [False, True], ids=["eviction", "delete past a budget"])
def test_a_victim_whose_answer_was_lost_and_that_went_after_all_is_not_told_otherwise(
    mk: Kube, writer: KubeWriter, monkeypatch: pytest.MonkeyPatch, deletes: bool
) -> None:
    """The request lands after the pod was read back (here it is sent then, by hand): the pod terminates,
    and its condition is the one it was evicted under, never a False."""
    ns, raw = _running(mk)

    def late() -> None:
        if deletes:
            mk.core.delete_namespaced_pod("c", ns)
        else:
            mk.core.create_namespaced_pod_eviction("c", ns, client.V1Eviction(metadata={"name": "c"}))

    _lost(writer, monkeypatch, "DELETE" if deletes else "POST")
    read = writer.read_pod
    reads: list[int] = []

    def read_pod(namespace: str, name: str) -> Any:
        got = read(namespace, name)
        if not reads:  # the read back after the lost answer: the request lands just after it
            late()
        reads.append(1)
        return got

    monkeypatch.setattr(writer, "read_pod", read_pod)
    outcome = writer.evict(_victim(ns, raw, deletes=deletes), raw)
    assert outcome.result == UNKNOWN, outcome.detail
    assert _events(mk, ns) == []  # not known yet
    assert writer.withdraw_unsettled() == 0
    assert _events(mk, ns) == ["Evicted" if deletes else "Preempted"]  # known now
    got, target = _target(mk, ns)
    assert got.metadata.deletion_timestamp is not None
    assert target.status == "True"
    assert target.reason == ("ReclaimByScheduler" if deletes else "EvictionByEvictionAPI")


def test_a_pod_marked_moments_before_a_holding_began_is_told_once_no_request_for_it_can_act(
    mk: Kube, writer: KubeWriter
) -> None:
    """At the start of a holding of the Lease, a pod the holder before marked moments ago (its delete,
    sent just before it stopped, may still land, and writes no condition of its own) is set back only once
    ``unknown_settles_after`` (here 2 s) has passed since it was marked; before, at once."""
    ns, _ = _running(mk)
    now = render.now_rfc3339()
    marked = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "ReclaimByScheduler",
        "lastTransitionTime": now,
    }
    mk.core.patch_namespaced_pod_status("c", ns, {"status": {"conditions": [marked]}})
    writer.settings.unknown_settles_after = 2.0
    cached = mk.api.sanitize_for_serialization(mk.core.read_namespaced_pod("c", ns))
    assert writer.withdraw_stale([prune_pod(cached)]) == 0
    _, target = _target(mk, ns)
    assert (target.status, target.reason) == ("True", "ReclaimByScheduler")
    wait_for(lambda: writer.withdraw_unsettled() == 1, 30, what="the pod set back once 2 s passed")
    _, target = _target(mk, ns)
    assert (target.status, target.reason) == ("False", "NotEvicted")


def _lease(k: Kube, ns: str, identity: str) -> LeaderLease:
    """A Lease of 6 s in ``ns`` (long enough that a loaded machine's round trips do not end it between two
    calls, as test_operator_leader's)."""
    settings = LeaseSettings(namespace=ns, name="handover", duration=6.0, retry_every=0.0)
    settings.normalise()
    return LeaderLease(k.api, settings, identity)


def _handed_over(k: Kube, ns: str) -> str:
    """What the Lease in ``ns`` says under ``HANDOVER`` now ("" nothing)."""
    lease = client.CoordinationV1Api(k.api).read_namespaced_lease("handover", ns)
    return str((lease.metadata.annotations or {}).get(HANDOVER) or "")


def _event_counts(k: Kube, ns: str) -> list[tuple[str, int]]:
    return [
        (e.reason, e.count) for e in k.core.list_namespaced_event(ns).items if e.involved_object.name == "c"
    ]


@pytest.mark.parametrize(
    "case", ["evicted after all", "not evicted", "told before it stopped"], ids=lambda c: c.replace(" ", "-")
)
def test_a_victim_whose_answer_was_lost_is_told_by_the_next_holder_of_the_lease_should_the_first_stop(
    mk: Kube, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Replica a's eviction's answer is lost, and a stops before it could look at the pod again (here it
    stops writing, and its Lease expires). Replica b takes the Lease over and looks in a's stead, from what
    the Lease handed over: the event of a pod evicted after all is written, once (also when a wrote it
    itself after its last write of the Lease); a pod not evicted is set back saying its answer was lost.
    Before, the event waited in a's memory and was lost with it (note15 Found 4)."""
    ns, raw = _running(mk)
    a_lease, b_lease = _lease(mk, ns, "a"), _lease(mk, ns, "b")
    assert a_lease.ensure()
    a = KubeWriter(mk.api, WriterSettings(workers=1, unknown_settles_after=0.0), fence=a_lease)
    b = KubeWriter(mk.api, WriterSettings(workers=1, unknown_settles_after=0.0), fence=b_lease)
    try:
        _lost(a, monkeypatch, "POST")
        assert a.evict(_victim(ns, raw, deletes=False), raw).result == UNKNOWN
        wait_for(
            lambda: a_lease.ensure() and f'"pod":"{ns}/c"' in _handed_over(mk, ns),
            30,
            what="a's Lease saying the look it owes",
        )
        if a_lease._behind is not None:  # no renewal of a's in flight from here on
            a_lease._behind.join()
        if case != "not evicted":  # the eviction lands late
            mk.core.create_namespaced_pod_eviction("c", ns, client.V1Eviction(metadata={"name": "c"}))
        if case == "told before it stopped":  # a looks, and stops before its Lease says so
            monkeypatch.setattr(a_lease, "hand_over_soon", lambda: None)  # (its prompt write not made)
            assert a.withdraw_unsettled() == 0
            assert _event_counts(mk, ns) == [("Preempted", 1)]
            assert f'"pod":"{ns}/c"' in _handed_over(mk, ns)
        a_lease.stop_writing()

        wait_for(b_lease.ensure, 30, what="b taking the Lease over")
        cached = prune_pod(mk.api.sanitize_for_serialization(mk.core.read_namespaced_pod("c", ns)))
        assert b.withdraw_stale([cached]) == 0  # left to the look handed over, due now
        assert b.unsettled_due()
        assert b.withdraw_unsettled() == (1 if case == "not evicted" else 0)
        got, target = _target(mk, ns)
        if case == "not evicted":
            assert got.metadata.deletion_timestamp is None
            assert (target.status, target.reason) == ("False", "NotEvicted")
            said = UNSETTLED_TARGET.format(0.0)
            assert target.message.startswith(f"not evicted ({said}): preempt: {ns}/c "), target.message
            assert _events(mk, ns) == []
        else:
            assert got.metadata.deletion_timestamp is not None
            assert _event_counts(mk, ns) == [("Preempted", 1)]  # told once
        assert not b.unsettled_due() and b.withdraw_unsettled() == 0
        wait_for(  # b's Lease no longer hands the look over
            lambda: b_lease.ensure() and _handed_over(mk, ns) == "", 30, what="b's Lease saying nothing owed"
        )
    finally:
        a.close()
        b.close()


def _lost_after_evicting(writer: KubeWriter, lease: LeaderLease, monkeypatch: pytest.MonkeyPatch) -> None:
    """``writer``'s replica loses the Lease (stops writing) as its next eviction is answered: the
    eviction went through, and nothing it writes after is sent."""
    send = writer.rest.request

    def request(m: str, path: str, *args: Any, **kwargs: Any) -> bytes:
        answer = send(m, path, *args, **kwargs)
        if m == "POST" and path.endswith("/eviction"):
            monkeypatch.setattr(writer.rest, "request", send)
            lease.stop_writing()
        return answer

    monkeypatch.setattr(writer.rest, "request", request)


@pytest.mark.parametrize("grace", [30, 0], ids=["terminating", "gone at once"])
def test_the_event_of_an_eviction_that_went_through_is_told_by_the_next_holder_should_the_lease_be_lost_first(
    mk: Kube, monkeypatch: pytest.MonkeyPatch, grace: int
) -> None:
    """Replica a's eviction goes through, and a loses the Lease before it tells the pod (here it stops
    writing as the eviction is answered; a pod gone at once waits for the session's status writes, which
    then are not sent either). Replica b takes the Lease over, and tells the pod's event in a's stead: a's
    Lease said the look the eviction owes before the eviction was sent. Before, the event was held in a's
    memory and lost with the Lease (note16 Found 4)."""
    ns, raw = _running(mk, grace=grace)
    a_lease, b_lease = _lease(mk, ns, "a"), _lease(mk, ns, "b")
    assert a_lease.ensure()
    a = KubeWriter(mk.api, WriterSettings(workers=1, unknown_settles_after=0.0), fence=a_lease)
    b = KubeWriter(mk.api, WriterSettings(workers=1, unknown_settles_after=0.0), fence=b_lease)
    try:
        _lost_after_evicting(a, a_lease, monkeypatch)
        assert a.evict(_victim(ns, raw, deletes=False), raw).result == EVICTED
        assert a.write_status(SessionResult(), queues=(), podgroups=(), pods={}) == (0, 0, [])  # (fenced)
        assert _events(mk, ns) == []
        assert f'"pod":"{ns}/c"' in _handed_over(mk, ns)
        wait_for(b_lease.ensure, 30, what="b taking the Lease over")
        b.withdraw_stale([])
        assert b.unsettled_due() and b.withdraw_unsettled() == 0
        assert _event_counts(mk, ns) == [("Preempted", 1)]
        wait_for(  # b's Lease no longer hands the look over
            lambda: b_lease.ensure() and _handed_over(mk, ns) == "", 30, what="b's Lease saying nothing owed"
        )
    finally:
        a.close()
        b.close()


def test_a_look_owed_is_on_the_lease_at_once_and_gone_from_it_once_told(
    mk: Kube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A look owed changes what the Lease hands over: written at once, on the renewal's thread, not at the
    next renewal due (up to ``renew_every``, 2 s here, later: nobody asks for one here at all). Before,
    an eviction's answer lost was on the Lease only once a renewal came due (note16 Found 4)."""
    ns, raw = _running(mk)
    lease = _lease(mk, ns, "a")
    assert lease.ensure()
    a = KubeWriter(mk.api, WriterSettings(workers=1, unknown_settles_after=0.0), fence=lease)
    try:
        _lost(a, monkeypatch, "POST")
        assert a.evict(_victim(ns, raw, deletes=False), raw).result == UNKNOWN
        said = UNSETTLED_TARGET.format(0.0)
        wait_for(lambda: said in _handed_over(mk, ns), 30, what="the Lease saying the look owed")
        mk.core.create_namespaced_pod_eviction("c", ns, client.V1Eviction(metadata={"name": "c"}))
        assert a.withdraw_unsettled() == 0  # evicted after all: told
        assert _event_counts(mk, ns) == [("Preempted", 1)]
        wait_for(lambda: _handed_over(mk, ns) == "", 30, what="the Lease saying nothing owed")
    finally:
        a.close()


def _lease_write_fails(lease: LeaderLease, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``lease``'s next write (a PUT) fails before it reaches the apiserver (fault injection: the
    connection reset); the writes after go through. Returns the writes that failed."""
    send, failed = lease.rest.request, []

    def request(m: str, path: str, *args: Any, **kwargs: Any) -> bytes:
        if m == "PUT" and not failed:
            failed.append(path)
            raise ConnectionResetError(104, "Connection reset by peer")
        return send(m, path, *args, **kwargs)

    monkeypatch.setattr(lease.rest, "request", request)
    return failed


@pytest.mark.parametrize("batch", [False, True], ids=["evict", "evict_all"])
def test_a_writer_whose_lease_cannot_say_what_its_evictions_owe_does_not_evict(
    mk: Kube, monkeypatch: pytest.MonkeyPatch, batch: bool
) -> None:
    """The write of the Lease that says the look an eviction owes, made before it is sent, fails (the
    connection reset): the eviction is not sent (FENCED: this replica may have lost the Lease; this call's
    evictions are withheld, a later one asks again), the pod is neither marked nor evicted, and no look
    is owed for it. Before, the
    eviction was sent all the same, the look it owes on no Lease until a renewal wrote it (note17 Found 4)."""
    ns, raw = _running(mk)
    lease = _lease(mk, ns, "a")
    assert lease.ensure()
    a = KubeWriter(mk.api, WriterSettings(workers=1, unknown_settles_after=0.0), fence=lease)
    try:
        failed = _lease_write_fails(lease, monkeypatch)
        victim = _victim(ns, raw, deletes=False)
        [outcome] = a.evict_all([victim], {victim.pod: raw}) if batch else [a.evict(victim, raw)]
        assert failed, "the Lease's write was not made"
        assert (outcome.result, outcome.detail) == (FENCED, NOT_OWED)
        got = mk.core.read_namespaced_pod("c", ns)
        assert got.metadata.deletion_timestamp is None
        assert [c.type for c in got.status.conditions or [] if c.type == "DisruptionTarget"] == []
        assert _events(mk, ns) == []
        assert not a.unsettled_due() and a.withdraw_unsettled() == 0  # no look owed
        assert lease.ensure() and _handed_over(mk, ns) == ""
        # The Lease written again, the next eviction goes.
        assert a.evict(victim, raw).result == EVICTED
        wait_for(lambda: _events(mk, ns) == ["Preempted"], 30, what="the eviction told")
    finally:
        a.close()
