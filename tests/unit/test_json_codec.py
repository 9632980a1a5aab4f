"""The watch decodes and the lean requests encode JSON with orjson, for its CPU: what they read and
send is what json reads and sends (json takes what orjson refuses), and a line that is not JSON fails
the watch's read as before."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from volsched.kube.rest import _dumps
from volsched.kube.rest import loads as _loads  # the watch's decoder too

POD_EVENT = (
    b'{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p1","namespace":"bench",'
    b'"uid":"35d0","resourceVersion":"202","generation":1,"labels":{"app":"bench"},"managedFields":[{"manager":'
    b'"x","fieldsV1":{"f:spec":{"k:{\\"name\\":\\"main\\"}":{".":{}}}}}]},"spec":{"nodeName":"n1","priority":0,'
    b'"tolerations":[{"key":"k","tolerationSeconds":300}],"containers":[{"name":"main","resources":{"requests":'
    b'{"cpu":"100m"}}}]},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","lastProbeTime":null}]}}}'
)

DECODED: dict[str, bytes | str] = {
    "a pod event": POD_EVENT,
    "escapes and non-ASCII": '{"a":"caf\\u00e9 \\"q\\" \\n","b":"naïve ☃"}'.encode(),
    "numbers at the int64 edges": b'{"max":9223372036854775807,"min":-9223372036854775808,"f":0.5,"e":1e3}',
    "a str, not bytes": '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}',
    "NaN (orjson refuses it, json takes it)": b'{"a":NaN}',
    "an empty object": b"{}",
}


@pytest.mark.parametrize("data", DECODED.values(), ids=DECODED.keys())
def test_the_watch_decodes_what_json_decodes(data: bytes | str) -> None:
    got, want = _loads(data), json.loads(data)
    if data == b'{"a":NaN}':
        assert math.isnan(got["a"])
    else:
        assert got == want and type(got) is type(want)


@pytest.mark.parametrize("data", [b'{"type":"ADDED","object":', b"not json", b'{"a":"\xff"}'])
def test_a_line_that_is_not_json_fails_the_read(data: bytes) -> None:
    with pytest.raises(ValueError):
        _loads(data)


ENCODED: dict[str, Any] = {
    "a binding": {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p1", "namespace": "ns", "uid": "u"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    },
    "a JSON patch with non-ASCII": [{"op": "add", "path": "/status", "value": {"msg": 'naïve ☃ "q"\n'}}],
    "keys that are not strings (json takes them)": {1: "a", 2.5: "b"},
    "an integer past 64 bits (json takes it)": {"n": 2**70},
}


@pytest.mark.parametrize("body", ENCODED.values(), ids=ENCODED.keys())
def test_a_request_body_is_the_json_json_would_send(body: Any) -> None:
    sent = _dumps(body)
    assert isinstance(sent, bytes)
    assert json.loads(sent) == json.loads(json.dumps(body))
