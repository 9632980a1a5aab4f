"""volsched.model.raw: the metadata reads the edges make on a raw object before decoding it."""

from __future__ import annotations

from typing import Any

import pytest

from volsched.model.raw import meta_of, uid_of, version_of

CASES: list[tuple[str, dict[str, Any], dict[str, Any], str, str]] = [
    # (case, object, metadata, uid, resourceVersion)
    ("no metadata", {"kind": "Pod"}, {}, "", ""),
    ("null metadata", {"metadata": None}, {}, "", ""),
    ("empty metadata", {"metadata": {}}, {}, "", ""),
    (
        "null fields",
        {"metadata": {"uid": None, "resourceVersion": None}},
        {"uid": None, "resourceVersion": None},
        "",
        "",
    ),
    (
        "set",
        {"metadata": {"uid": "u1", "resourceVersion": "42"}},
        {"uid": "u1", "resourceVersion": "42"},
        "u1",
        "42",
    ),
    ("a number as version", {"metadata": {"resourceVersion": 7}}, {"resourceVersion": 7}, "", "7"),
]


@pytest.mark.parametrize(("obj", "meta", "uid", "version"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_metadata_reads(obj: dict[str, Any], meta: dict[str, Any], uid: str, version: str) -> None:
    assert meta_of(obj) == meta
    assert uid_of(obj) == uid
    assert version_of(obj) == version
