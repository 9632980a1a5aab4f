"""A victim is told what took its place, but not the name of a pod of another namespace: its condition
and event (the writer's, read by whoever reads its namespace) and the dashboard of a caller who may list
only its namespace's pods named the beneficiary, its job, and so another tenant's pod names (as
kube-scheduler did before kubernetes#114882). Said now: "a pod of another namespace", with its priority,
queue and needs; a beneficiary of the victim's own namespace is named as before, and the whole reason is
the operator's log's, the simulator's and the dashboard's of a caller who may list every pod."""

from __future__ import annotations

import json
from dataclasses import replace

from volsched.cycle import CycleReport, EvictOutcome
from volsched.framework.decisions import KEEPS_OUT, Evict, EvictionReason, SessionResult
from volsched.framework.messages import OTHER_NAMESPACE, OTHER_TERM, render_eviction, render_eviction_told
from volsched.ui import LiveState


def _evict(victim: str, beneficiary: str) -> Evict:
    job = beneficiary.rsplit("-", 1)[0]
    return Evict(
        pod=victim,
        uid="u",
        node="n1",
        reason=EvictionReason(
            action="preempt", victim_job=victim.rsplit("-", 1)[0], priority=10, beneficiary=beneficiary,
            beneficiary_job=job, beneficiary_priority=1000, beneficiary_queue="qb", needs={"cpu": 1.0},
            frees={"cpu": 1.0}, holder=f"job {victim.rsplit('-', 1)[0]}", holds_before={"cpu": 2.0},
            holds_after={"cpu": 1.0},
        ),
    )  # fmt: skip


def test_a_victim_is_told_of_a_pod_of_another_namespace_without_its_name() -> None:
    e = _evict("team-a/a-0", "team-b/secret-project-0")
    told = render_eviction_told(e)
    assert "team-b" not in told and "secret-project" not in told, told
    assert told == (
        f"preempt: team-a/a-0 (job team-a/a, priority 10) evicted on n1 for {OTHER_NAMESPACE} (priority 1000, "
        "queue qb, needs cpu 1); frees cpu 1; job team-a/a holds cpu 2 -> cpu 1"
    )
    assert "team-b/secret-project-0 (job team-b/secret-project" in render_eviction(e)  # the whole, as before


def test_a_beneficiary_of_the_victims_own_namespace_is_named() -> None:
    e = _evict("team-a/a-0", "team-a/b-0")
    assert render_eviction_told(e) == render_eviction(e)
    assert "for team-a/b-0 (job team-a/b, priority 1000" in render_eviction_told(e)
    shuffled = Evict(pod="team-a/a-0", uid="u", node="n1", reason=EvictionReason(action="shuffle"))
    assert render_eviction_told(shuffled) == render_eviction(shuffled)


def test_the_dashboard_tells_a_caller_of_one_namespace_what_its_victims_are_told() -> None:
    live = LiveState()
    e = _evict("team-a/a-0", "team-b/secret-project-0")
    live.record(SessionResult(), CycleReport(evictions=[EvictOutcome(e, "evicted")]))
    narrowed = json.loads(live.document(frozenset({"team-a"})))
    [shown] = narrowed["evictions"]
    assert shown["reason"] == render_eviction_told(e) and "told" not in shown
    assert "secret-project" not in json.dumps(narrowed)
    [whole] = json.loads(live.document())["evictions"]
    assert whole["reason"] == render_eviction(e) and "told" not in whole
    assert json.loads(live.document(frozenset({"team-b"})))["evictions"] == []


def test_a_victim_is_not_told_the_term_of_a_pod_of_another_namespace() -> None:
    own = (KEEPS_OUT, "pod anti-affinity (app in (team-b-secret,web), kubernetes.io/hostname)")
    spread = (KEEPS_OUT, "pod topology spread (app=team-b-secret, zone): zone=a has 2 matching pod(s)")
    theirs = (KEEPS_OUT, "existing pods' anti-affinity (app=web, kubernetes.io/hostname)")
    e = _evict("team-a/a-0", "team-b/secret-project-0")
    e = replace(e, reason=replace(e.reason, facts=(own, spread, theirs, ("frees", "a volume"))))
    told = render_eviction_told(e)
    assert "team-b" not in told and "secret" not in told, told
    assert told.endswith(
        f"; keeps it out by pod anti-affinity ({OTHER_TERM}); keeps it out by pod topology spread "
        f"({OTHER_TERM}); keeps it out by existing pods' anti-affinity (app=web, kubernetes.io/hostname)"
        "; frees a volume"
    ), told
    assert own[1] in render_eviction(e)  # the whole, as before
    same = replace(e, pod="team-b/a-0")
    assert render_eviction_told(same) == render_eviction(same)
