"""A pod's build makes a field's name for its message only where the field needs a look: a plain map
(its labels, annotations, status) is taken as it is and a creation time parsed lately is looked up,
with no message string made and no checking function called for them (a pod listed at start made five
such strings for nothing). What the pod is built into, and each bad field's refusal naming it, are as
before."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from volsched.model import decode
from volsched.model.decode import build_task
from volsched.model.errors import InputError

CREATED = datetime(2026, 11, 29, 22, 36, 13, tzinfo=UTC).timestamp()


def pod(name: str, **fields: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"u-{name}",
            "creationTimestamp": "2026-11-29T22:36:13Z",
            "labels": {"app": "bench"},
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {"phase": "Pending"},
    }
    for path, value in fields.items():
        where, _, field = path.partition("__")
        obj[where] = {**obj[where], field: value}
    return obj


def build(obj: dict[str, Any]) -> Any:
    return build_task(obj, priority_classes={})


def test_plain_maps_and_a_known_time_are_taken_without_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[str] = []
    for name in ("parse_time", "_shared_map", "_map_value"):
        real = getattr(decode, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            called.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(decode, name, counted)
    build(pod("first"))  # its time parsed (or found) once
    called.clear()
    tasks = [build(pod(f"p{i}")) for i in range(20)]
    assert called == []
    assert {t.creation for t in tasks} == {CREATED}
    assert tasks[3].labels == {"app": "bench"} and tasks[3].annotations == {} and tasks[3].start_time == 0.0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"metadata__labels": "app=bench"}, r"Pod ns/p: metadata\.labels must be a map"),
        ({"metadata__annotations": ["a"]}, r"Pod ns/p: metadata\.annotations must be a map"),
        ({"status__startTime": "yesterday"}, r"Pod ns/p: status\.startTime: expected an RFC 3339 time"),
        ({"metadata__creationTimestamp": "soon"}, r"Pod ns/p: metadata\.creationTimestamp: expected an RFC"),
        ({"metadata__creationTimestamp": float("nan")}, r"metadata\.creationTimestamp: expected an RFC"),
    ],
)
def test_a_bad_field_is_refused_naming_it(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        build(pod("p", **fields))


def test_a_status_that_is_no_map_is_refused_and_other_forms_are_read_as_before() -> None:
    obj = pod("p")
    obj["status"] = ["Pending"]
    with pytest.raises(InputError, match=r"Pod ns/p: status must be a map"):
        build(obj)
    obj["status"] = None
    assert build(obj).start_time == 0.0
    started = build(pod("s", status__startTime="2026-11-29T22:40:00Z", status__phase="Running"))
    assert started.start_time == datetime(2026, 11, 29, 22, 40, tzinfo=UTC).timestamp()
    assert build(pod("e", metadata__creationTimestamp="")).creation == 0.0
    assert build(pod("n", metadata__creationTimestamp=int(CREATED))).creation == CREATED
