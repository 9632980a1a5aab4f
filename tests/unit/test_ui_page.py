"""The dashboard page is one self-contained file, its data is the ``-o json`` document, embedded so no
name or message can end the script early, and the operator's live state keeps the recent evictions."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from volsched.cli import main as cli_main
from volsched.cycle import CycleReport, EvictOutcome
from volsched.framework.decisions import Evict, EvictionReason, QueueStatus, SessionResult
from volsched.ui import LiveState, page

DATA_TAG = re.compile(r'<script id="volsched-data" type="application/json">(.*?)</script>', re.S)


def run_cli(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(list(args)) == 0
    return out.getvalue()


@pytest.mark.parametrize("data", [None, {"sessions": 1, "queues": {}}], ids=["live", "embedded"])
def test_the_page_loads_nothing_from_elsewhere(data: dict[str, object] | None) -> None:
    html = page(data)
    assert not re.search(r"\b(src|href)\s*=", html), "no external scripts, styles or images"
    assert not re.search(r"https?://|@import|url\(|//cdn", html)
    assert html.count("<script") == 2 and html.count("<style") == 1


def test_simulate_html_embeds_exactly_the_json_document() -> None:
    as_json = json.loads(run_cli("simulate", "-o", "json"))
    html = run_cli("simulate", "-o", "html")
    (embedded,) = DATA_TAG.findall(html)
    assert json.loads(embedded) == as_json


def test_a_hostile_name_cannot_end_the_data_script() -> None:
    evil = "</script><script>alert(1)</script><!--"
    html = page({"queues": {evil: {"weight": 1}}, "events": [{"message": evil}]})
    assert html.count("</script>") == 2  # the data's and the renderer's own
    (embedded,) = DATA_TAG.findall(html)
    assert json.loads(embedded)["queues"] == {evil: {"weight": 1}}


def ev(pod: str, result: str) -> EvictOutcome:
    return EvictOutcome(
        Evict(
            pod=pod,
            uid="u",
            node="n1",
            reason=EvictionReason(action="reclaim", detail="queue q2 is owed cpu 1"),
        ),
        result,
    )


def test_live_state_serves_the_last_session_and_the_recent_evictions_in_the_json_shape() -> None:
    live = LiveState(keep=3)
    empty = live.state()
    assert (empty["sessions"], empty["queues"], empty["evictions"], empty["generatedAt"]) == (0, {}, [], None)
    result = SessionResult()
    result.queues["q1"] = QueueStatus(
        name="q1", state="Open", weight=2, allocated={"cpu": 3.0}, request={"cpu": 4.0}, guarantee={},
        capability=None, deserved={"cpu": 3.5}, share=0.857,
    )  # fmt: skip
    live.record(
        result, CycleReport(evictions=[ev("t/a", "evicted"), ev("t/b", "skipped"), ev("t/c", "blocked")])
    )
    live.record(
        result, CycleReport(evictions=[ev("t/d", "evicted"), ev("t/a", "gone"), ev("t/e", "evicted")])
    )
    state = live.state()
    assert state["source"] == "operator" and state["sessions"] == 2 and state["generatedAt"]
    assert state["queues"]["q1"]["allocated"] == {"cpu": 3} and state["queues"]["q1"]["deserved"] == {
        "cpu": 3.5
    }
    # Not-our-pod (skipped) and already-gone evictions are no news; the oldest fall off past ``keep``.
    assert [(e["pod"], e["result"]) for e in state["evictions"]] == [
        ("t/c", "blocked"),
        ("t/d", "evicted"),
        ("t/e", "evicted"),
    ]
    assert state["evictions"][0]["reason"] == "reclaim: t/c evicted on n1; queue q2 is owed cpu 1"
    simulated = json.loads(run_cli("simulate", "-o", "json"))
    assert set(simulated) - {"pods"} <= set(state)  # one renderer for both
    assert set(state["queues"]["q1"]) == set(next(iter(simulated["queues"].values())))


def test_the_evictions_left_out_are_the_writers_outcomes_that_did_nothing() -> None:
    from volsched.kube import writer
    from volsched.ui import NOT_NEWS

    assert frozenset({writer.SKIPPED, writer.GONE, writer.FENCED}) == NOT_NEWS


def test_the_live_state_shows_no_credential_a_message_carries() -> None:
    """Events are redacted where the writer sends them (volsched.kube.writer); the dashboard showed the same
    messages as the session made them: a rejected object's value, a URL with its user-info, a registered
    secret, in an event, a PodGroup's reason or an eviction's, reached anyone reading /ui/state.json."""
    from volsched.framework.decisions import Event, PodGroupStatus
    from volsched.redaction import register_secrets

    register_secrets("s3cr3t-t0ken")
    leak = "got 'password=hunter2' from https://user:pa55@metrics.example, s3cr3t-t0ken"
    result = SessionResult()
    result.events.append(Event("Pod", "t", "p", "InvalidAnnotation", f"bad annotation: {leak}"))
    result.podgroups["t/g"] = PodGroupStatus(
        phase="Pending", queue="q", min_member=1, running=0, succeeded=0, failed=0, pending=1, scheduled=0,
        rejections=(), owner="",
    )  # fmt: skip
    bad = EvictOutcome(
        Evict(
            pod="t/a", uid="u", node="n1", reason=EvictionReason(action="reclaim", detail=f"owed ({leak})")
        ),
        "evicted",
    )
    live = LiveState()
    live.record(result, CycleReport(evictions=[bad]))
    text = json.dumps(live.state())
    for secret in ("hunter2", "pa55", "s3cr3t-t0ken"):
        assert secret not in text, text
    assert "bad annotation: got 'password=***'" in text
