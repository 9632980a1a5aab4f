"""A victim's condition and event, on the real apiserver, name no pod of another namespace: whoever reads
the victim's namespace read the beneficiary's namespace, pod and job there (another tenant's names, as
kube-scheduler's did before kubernetes#114882), and the beneficiary's anti-affinity term the victim kept
it out by. One of the victim's own namespace is named, and its term said."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.operator_fixtures import Kube
from tests.e2e.test_writer_unsettled_eviction import _running, _target
from volsched.cycle import EVICTED
from volsched.framework.decisions import KEEPS_OUT, Evict, EvictionReason
from volsched.framework.messages import OTHER_NAMESPACE, OTHER_TERM
from volsched.kube.writer import KubeWriter, WriterSettings

pytestmark = pytest.mark.cluster


@pytest.fixture
def writer(mk: Kube) -> Iterator[KubeWriter]:
    w = KubeWriter(mk.api, WriterSettings(workers=1))
    yield w
    w.close()


@pytest.mark.parametrize("other", [True, False], ids=["another namespace", "the same namespace"])
def test_a_victim_is_told_what_took_its_place_naming_no_pod_of_another_namespace(
    mk: Kube, writer: KubeWriter, other: bool
) -> None:
    ns, raw = _running(mk)
    beneficiary_ns = "team-b-secret" if other else ns
    reason = EvictionReason(
        action="preempt", victim_job=f"{ns}/c", priority=10, beneficiary=f"{beneficiary_ns}/project-x-0",
        beneficiary_job=f"{beneficiary_ns}/project-x", beneficiary_priority=1000, beneficiary_queue="qb",
        needs={"cpu": 1.0}, frees={"cpu": 1.0},
        facts=((KEEPS_OUT, "pod anti-affinity (app in (project-x,web), kubernetes.io/hostname)"),),
    )  # fmt: skip
    outcome = writer.evict(Evict(pod=f"{ns}/c", uid=raw["metadata"]["uid"], node="n1", reason=reason), raw)
    assert outcome.result == EVICTED, outcome.detail
    _, target = _target(mk, ns)  # (written once more after the Eviction API's own)
    [event] = [e for e in mk.core.list_namespaced_event(ns).items if e.involved_object.name == "c"]
    assert event.reason == "Preempted"
    for said in (target.message, event.message):
        if other:
            assert "team-b-secret" not in said and "project-x" not in said, said
            assert f"for {OTHER_NAMESPACE} (priority 1000, queue qb, needs cpu 1)" in said, said
            assert said.endswith(f"; keeps it out by pod anti-affinity ({OTHER_TERM})"), said
        else:
            assert f"for {ns}/project-x-0 (job {ns}/project-x, priority 1000, queue qb" in said, said
            assert said.endswith(
                "; keeps it out by pod anti-affinity (app in (project-x,web), kubernetes.io/hostname)"
            )
