"""The reads at start as plain JSON: the scheduler ConfigMap (parsed without the client's models, a 404 as
no ConfigMap, any other error status raised for the reloader to report), a 429 waited out, and the
Lease's times as the apiserver writes them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from kubernetes import client

from volsched.kube.configsource import ConfigMapText, config_map_path, parse_config_map, read_config_map
from volsched.kube.errors import ApiException
from volsched.kube.lease import _ts
from volsched.kube.rest import LeanRest
from volsched.model.scalars import rfc3339


def _cm(data: Any = None, **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", **meta}}
    if data is not None:
        body["data"] = data
    return body


@pytest.mark.parametrize(
    ("body", "want"),
    [
        (
            _cm({"k": "actions: enqueue"}, resourceVersion="7", uid="u1"),
            ConfigMapText("7", "u1", "actions: enqueue"),
        ),
        (_cm({"other": "x"}, resourceVersion="8", uid="u1"), ConfigMapText("8", "u1", None)),
        (_cm(None, resourceVersion="9", uid="u2"), ConfigMapText("9", "u2", None)),  # no data at all
        (_cm({"k": ""}, resourceVersion="10", uid="u2"), ConfigMapText("10", "u2", "")),  # empty, not missing
        (_cm({"k": None}, resourceVersion="11"), ConfigMapText("11", "", None)),
        ({"metadata": None, "data": None}, ConfigMapText("", "", None)),
        ([], ConfigMapText("", "", None)),
    ],
    ids=["text", "key-missing", "no-data", "empty-text", "null-value", "null-fields", "not-an-object"],
)
def test_a_config_map_body_gives_its_text_under_the_key_and_its_version(
    body: Any, want: ConfigMapText
) -> None:
    assert parse_config_map(body, "k") == want


def test_the_path_quotes_namespace_and_name() -> None:
    assert config_map_path("ns", "a b") == "/api/v1/namespaces/ns/configmaps/a%20b"


class _Answer:
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.status, self.reason, self.data, self.headers = status, "x", b'{"kind":"Status"}', headers or {}


class _Rest:
    """Answers one GET with a body or an error status (what LeanRest raises for one)."""

    def __init__(self, *, body: Any = None, status: int = 200) -> None:
        self.body, self.status = body, status
        self.asked: list[tuple[str, str]] = []

    def get(self, path: str, *, timeout: float, throttle_retries: int = 10) -> Any:
        self.asked.append(("GET", path))
        if self.status >= 400:
            raise ApiException(http_resp=_Answer(self.status))
        return self.body


def test_reading_gets_the_named_config_map_and_parses_it() -> None:
    rest = _Rest(body=_cm({"k": "text"}, resourceVersion="3", uid="u"))
    assert read_config_map(rest, "volsched-system", "cfg", "k") == ConfigMapText("3", "u", "text")  # type: ignore[arg-type]
    assert rest.asked == [("GET", "/api/v1/namespaces/volsched-system/configmaps/cfg")]


def test_a_missing_config_map_reads_as_none_and_other_errors_are_raised() -> None:
    assert read_config_map(_Rest(status=404), "ns", "cfg", "k") is None  # type: ignore[arg-type]
    for status in (401, 403, 500):
        with pytest.raises(ApiException) as err:
            read_config_map(_Rest(status=status), "ns", "cfg", "k")  # type: ignore[arg-type]
        assert err.value.status == status


class _Throttled(LeanRest):
    """LeanRest whose requests are answered from a script: 429s with Retry-After, then a body."""

    def __init__(self, answers: list[int], *, retry_after: str | None = "1") -> None:
        cfg = client.Configuration()
        cfg.host = "http://127.0.0.1:1"  # never connected to: request is scripted
        self.slept: list[float] = []
        super().__init__(client.ApiClient(cfg), direct=False, sleep=self.slept.append)
        self.answers = answers
        self.headers = {"Retry-After": retry_after} if retry_after is not None else {}

    def request(self, method: str, path: str, body: Any = None, **_: Any) -> bytes:
        status = self.answers.pop(0)
        if status >= 400:
            raise ApiException(http_resp=_Answer(status, self.headers))
        return b'{"kind": "ConfigMap"}'


@pytest.mark.parametrize(
    ("answers", "retry_after", "slept", "ok"),
    [
        ([429, 429, 200], "1", [1.0, 1.0], True),  # a CRD's storage starting, APF's queues full
        ([429, 200], None, [], False),  # no Retry-After: an answer, raised
        ([403, 200], "1", [], False),
        ([429] * 11 + [200], "2", [2.0] * 10, False),  # ten more tries, then raised
    ],
    ids=["waited-out", "no-retry-after", "forbidden", "gives-up"],
)
def test_a_read_waits_out_a_429_with_retry_after(
    answers: list[int], retry_after: str | None, slept: list[float], ok: bool
) -> None:
    rest = _Throttled(answers, retry_after=retry_after)
    if ok:
        assert rest.get("/x", timeout=1) == {"kind": "ConfigMap"}
    else:
        with pytest.raises(ApiException):
            rest.get("/x", timeout=1)
    assert rest.slept == slept


@pytest.mark.parametrize(("at_start", "slept"), [(True, [1.0, 1.0]), (False, [])], ids=["start", "poll"])
def test_only_the_read_at_start_waits_out_a_throttled_config_map(at_start: bool, slept: list[float]) -> None:
    """A poll runs between the Lease's renewals: its 429 is raised (the next poll retries), never slept on."""
    rest = _Throttled([429, 429, 200])
    if at_start:
        assert read_config_map(rest, "ns", "cfg", "k", at_start=True) == ConfigMapText("", "", None)
    else:
        with pytest.raises(ApiException) as err:
            read_config_map(rest, "ns", "cfg", "k")
        assert err.value.status == 429
    assert rest.slept == slept


@pytest.mark.parametrize("ts", [0.0, 1_700_000_000.123456, 1_800_000_000.5])
def test_a_lease_time_is_written_as_the_apiservers_micro_time_and_read_back(ts: float) -> None:
    text = rfc3339(ts, micro=True)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", text)
    assert _ts(text) == pytest.approx(ts, abs=1e-6)
    assert _ts(None) == _ts("") == 0.0
