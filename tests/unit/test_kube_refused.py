"""volsched.kube.refused: an answer refusing a start's first request read alike from a listing's ApiError
and a read's ApiException, as the line the start ends in; a 429, a 5xx and an outage are not one."""

from __future__ import annotations

import json

import pytest

from volsched.kube.errors import ApiException
from volsched.kube.refused import CREDENTIALS, refused_at_start
from volsched.kube.watch import ApiError


def _said(answer: str) -> str:
    return f"it was refused ({answer})"


def _read(status: int, message: str) -> ApiException:
    return ApiException(
        status=status, reason="Reason", body=json.dumps({"kind": "Status", "message": message})
    )


@pytest.mark.parametrize(
    ("status", "why"), [(401, CREDENTIALS), (403, "the user needs get"), (404, None), (422, None)]
)
def test_a_refusal_reads_the_same_from_a_listing_and_from_a_read(status: int, why: str | None) -> None:
    expected = f"it was refused ({status}: no)" + (f"; {why}" if why else "")
    for exc in (ApiError(status, "no"), _read(status, "no")):
        refused = refused_at_start(exc, said=_said, rights="the user needs get")
        assert refused is not None and str(refused) == expected


def test_an_answer_without_a_message_says_its_reason() -> None:
    bare = ApiException(status=401, reason="Unauthorized")
    refused = refused_at_start(bare, said=_said, rights="")
    assert refused is not None and str(refused).startswith("it was refused (401: Unauthorized); ")


@pytest.mark.parametrize(
    "exc",
    [
        ApiError(429, "slow down"),
        _read(429, "slow down"),
        ApiError(500, "etcd"),
        _read(503, "etcd"),
        OSError("x"),
    ],
)
def test_a_throttling_answer_an_outage_and_no_answer_are_not_refusals(exc: BaseException) -> None:
    assert refused_at_start(exc, said=_said, rights="") is None
