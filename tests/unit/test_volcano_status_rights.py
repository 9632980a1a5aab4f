"""The operator's rights to write a Volcano kind's status, against what its CRD has (a status subresource
or not): what is missing is a warning naming the right and the chart value, what is wider an INFO line.

On the real apiserver (the manifests' ClusterRole, Volcano's CRDs): tests/e2e/test_operator_rbac.py."""

from __future__ import annotations

import logging

import pytest

from volsched.kube.lister import VOLCANO_WATCHED
from volsched.operator.volcano import status_rights_problem

PODGROUPS = next(k for k in VOLCANO_WATCHED if k.plural == "podgroups")
QUEUES = next(k for k in VOLCANO_WATCHED if k.plural == "queues")

CASES = [
    # kind, has_status, may_status, may_object -> level, words in the message
    (QUEUES, True, True, False, None, ()),
    (PODGROUPS, False, True, True, None, ()),
    (PODGROUPS, False, False, True, None, ()),
    (PODGROUPS, False, True, False, logging.WARNING,
     ("PodGroup CRD has no status subresource", "patch on podgroups.scheduling.volcano.sh", "rbac.volcanoPatchObjects")),
    (QUEUES, True, False, False, logging.WARNING, ("may not patch queues/status", "will not be written")),
    (QUEUES, True, False, True, logging.WARNING, ("may not patch queues/status",)),
    (QUEUES, True, True, True, logging.INFO, ("does not need", "remove queues from")),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "has_status", "may_status", "may_object", "level", "words"), CASES)
def test_rights_against_the_crd(
    kind: object,
    has_status: bool,
    may_status: bool,
    may_object: bool,
    level: int | None,
    words: tuple[str, ...],
) -> None:
    out = status_rights_problem(
        kind,  # type: ignore[arg-type]
        has_status=has_status,
        may_status=may_status,
        may_object=may_object,
    )
    if level is None:
        assert out is None
        return
    assert out is not None and out[0] == level
    for w in words:
        assert w in out[1]
