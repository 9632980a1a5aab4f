"""An eviction whose answer was lost owes its event until the pod is looked at again; what a replica owes
so goes with its Lease (``HandsOver``: ``handover`` written with the Lease, ``inherited`` what it said
when this replica took it). The next holder looks in its stead when it was due, and writes the event of a
pod found evicted; what it cannot read is left, said in a warning, and stops nothing. (The real Lease and
apiserver: tests/e2e/test_writer_unsettled_eviction.py.)"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.fences import Fence
from tests.unit.test_writer_evict_outcomes import EVENTS, EVICT, LINGERING, MARKED, _sends
from volsched.cycle import UNKNOWN
from volsched.kube.prune import prune_pod
from volsched.kube.rest import ResponseLost
from volsched.kube.writer import HandsOver, KubeWriter, WriterSettings


class _Lease(Fence):
    def __init__(self, inherited: str = "") -> None:
        super().__init__()
        self.handover: str | None = None
        self.inherited = inherited


def test_what_is_owed_goes_with_the_lease_and_the_next_holder_tells_it(
    writer: KubeWriter, writer_settings: WriterSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = writer.fence = _Lease()
    assert isinstance(first, HandsOver)
    sent = _sends(writer, monkeypatch, {"POST": ResponseLost("lost")})
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: MARKED)
    before = time.time()
    assert writer.evict(EVICT, prune_pod(LINGERING)).result == UNKNOWN
    [note] = json.loads(first.handover or "")
    assert (note["pod"], note["uid"], note["reason"]) == ("ns/p", "u1", "Preempted")
    assert note["message"].startswith("preempt: ns/p ")
    assert before + writer_settings.unknown_settles_after - 0.001 <= note["due"]  # (to the ms)
    assert note["due"] <= time.time() + writer_settings.unknown_settles_after + 0.001

    # The next holder (this writer, restarted, say): it takes the look over, and its Lease says it too.
    heir = KubeWriter(writer.api, writer_settings, fence=_Lease(first.handover or ""))
    try:
        clock = [50.0]
        heir.clock = lambda: clock[0]
        sent = _sends(heir, monkeypatch, {})
        monkeypatch.setattr(heir, "read_pod", lambda ns, name: None)  # evicted after all: gone
        assert heir.withdraw_stale([prune_pod(MARKED)]) == 0  # left to the look handed over
        assert isinstance(heir.fence, HandsOver) and heir.fence.inherited == ""
        [again] = json.loads(heir.fence.handover or "")  # (its due again as wall-clock time, to the ms)
        assert {**again, "due": 0} == {**note, "due": 0} and abs(again["due"] - note["due"]) < 0.01
        assert sent == [] and not heir.unsettled_due()
        clock[0] += note["due"] - time.time() + 1
        assert heir.unsettled_due() and heir.withdraw_unsettled() == 0
        [(method, path, _, body)] = sent
        assert (method, path, body["reason"], body["message"]) == (
            "POST",
            EVENTS,
            "Preempted",
            note["message"],
        )
        assert heir.fence.handover == ""
    finally:
        heir.close()


@pytest.mark.parametrize(
    "said",
    ["not json", '{"pod": "ns/p"}', '[{"pod": "ns/p"}]', '[{"pod": "p", "uid": "u", "reason": "r", '
     '"message": "m", "at": "t", "why": "w", "due": 1}]', '[{"pod": "ns/p", "uid": "u", "reason": "r", '
     '"message": "m", "at": "t", "why": "w", "due": "NaN"}]', "[1]"],
)  # fmt: skip
def test_a_handover_that_cannot_be_read_is_left_and_stops_nothing(
    writer: KubeWriter, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, said: str
) -> None:
    writer.fence = lease = _Lease(said)
    sent: list[Any] = _sends(writer, monkeypatch, {})
    monkeypatch.setattr(writer, "read_pod", lambda ns, name: MARKED)
    assert writer.withdraw_stale([prune_pod(MARKED)]) == 1  # the pod marked: told at once, as before
    assert not writer.unsettled_due() and lease.handover == "" and lease.inherited == ""
    assert [s[0] for s in sent] == ["PATCH"]
    assert "handed over" in caplog.text or "handover" in caplog.text


def test_what_the_lease_hands_over_stays_within_a_bound_in_bytes(writer: KubeWriter) -> None:
    """A Lease's annotations hold 256 KiB in all (past that, every write of it is refused and the Lease
    lost), and a victim's message lists every disruption budget it goes past, which a tenant can multiply:
    the handover takes the first notes due that fit in 32 KiB of JSON, each message cut to 2,000
    characters (before: 64 notes whatever their length; the review's find)."""
    from volsched.kube.writer import EventTarget

    writer.fence = lease = _Lease()
    clock = [0.0]
    writer.clock = lambda: clock[0]
    for i in range(64):
        clock[0] = float(i)  # each due a second after the one before
        message = f"reclaim: ns/p{i} deleted on n1; past " + "; ".join(f"budget ns/b{j}" for j in range(3000))
        told = (EventTarget("Pod", "v1", "ns", f"p{i}", f"u{i}"), "Evicted", message, "t")
        writer._settle_unknown(f"ns/p{i}", f"u{i}", message, told)
    said = lease.handover or ""
    assert 0 < len(said.encode()) <= 32 * 1024
    notes = json.loads(said)
    assert [n["pod"] for n in notes] == [f"ns/p{i}" for i in range(len(notes))]  # the first due
    assert 10 <= len(notes) < 64
    assert all(len(n["message"]) == 2000 and n["message"].endswith("\u2026") for n in notes)
    assert notes[0]["message"].startswith("reclaim: ns/p0 deleted on n1; past budget ns/b0; ")
