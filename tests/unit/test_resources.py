"""Quantities and the Kubernetes effective request of a pod."""

from __future__ import annotations

import numpy as np
import pytest

from volsched.model.decode import build_task, pod_request, quota_weight
from volsched.model.errors import InputError
from volsched.model.resources import parse_amount, stack_rows


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", 0.5),
        ("2", 2.0),
        ("4Gi", 4 * 2**30),
        ("1e3", 1000.0),
        ("1.5", 1.5),
        ("128974848", 128974848.0),
        (3, 3.0),
    ],
)
def test_quantities_parse_the_kubernetes_way(text, value):
    assert parse_amount(text, where="x") == pytest.approx(value)


@pytest.mark.parametrize(
    "bad",
    [
        "NaN",
        "Infinity",
        "inf",
        "1e400",
        "9223372036854775808",  # 2^63: over Kubernetes' bound
        " 1",
        "1_000",
        "0x10",
        "1" * 100,
        float("nan"),
        float("inf"),
        float("-inf"),
        10**30,
        1e300,
        -0.5,
    ],
)
def test_a_quantity_kubernetes_would_refuse_is_refused(bad):
    with pytest.raises(
        InputError, match=r"^status.allocatable.cpu: (malformed quantity|a quantity must be finite)"
    ):
        parse_amount(bad, where="status.allocatable.cpu")


_AGREED = [
    *(f"{n}{suffix}" for n in ("1", "0", "1.5", ".5", "3.", "+2", "123456789") for suffix in
      ("", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")),
    *("1e3", "1E3", "2.5e-3", "7e+2", "1e18", "8E", "7Ei", "9223372036854775807", "100000000000000000000m"),
]  # fmt: skip


@pytest.mark.parametrize("text", _AGREED)
def test_quantities_read_as_the_kubernetes_client_reads_them(text):
    """The model reads quantities without importing the API client; this holds it to the client's own
    parser (kubernetes.utils.parse_quantity) wherever that parser's result is in Kubernetes' range."""
    from kubernetes.utils import parse_quantity

    expected = parse_quantity(text)
    if 0 <= expected <= 2**63 - 1:
        assert parse_amount(text, where="x") == float(expected)
    else:
        with pytest.raises(InputError, match="a quantity must be finite"):
            parse_amount(text, where="x")


@pytest.mark.parametrize("bad", ["1e2.5", "1K", "1ki", "5e", "1.2.3", "Gi", "1 Gi"])
def test_a_string_outside_the_quantity_grammar_is_malformed(bad):
    with pytest.raises(InputError, match=r"^x: malformed quantity"):
        parse_amount(bad, where="x")


def test_the_largest_quantity_kubernetes_allows_is_accepted():
    assert parse_amount("9223372036854775807", where="x") == pytest.approx(2.0**63)
    assert parse_amount(2**63 - 1, where="x") == pytest.approx(2.0**63)


@pytest.mark.parametrize("bad", ["2c", "lots", "-1", "", None, True, [1]])
def test_a_malformed_quantity_names_where_it_is(bad):
    with pytest.raises(InputError, match=r"Pod ns/p: spec.containers\[0\]"):
        parse_amount(bad, where="Pod ns/p: spec.containers[0].resources.requests.cpu")


def _pod(spec):
    return {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


def _c(requests=None, limits=None, restart=None):
    c = {"name": "c", "resources": {}}
    if requests:
        c["resources"]["requests"] = requests
    if limits:
        c["resources"]["limits"] = limits
    if restart:
        c["restartPolicy"] = restart
    return c


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"containers": [_c({"cpu": "1"}), _c({"cpu": "500m", "memory": "1Gi"})]},
            {"cpu": 1.5, "memory": 2**30, "pods": 1},
        ),
        ({"containers": [_c(limits={"cpu": "2"})]}, {"cpu": 2.0, "pods": 1}),
        ({"containers": [_c({"cpu": "1"}, {"cpu": "4"})]}, {"cpu": 1.0, "pods": 1}),
        ({"containers": [_c({"cpu": "1"})], "initContainers": [_c({"cpu": "3"})]}, {"cpu": 3.0, "pods": 1}),
        ({"containers": [_c({"cpu": "1"})], "overhead": {"cpu": "250m"}}, {"cpu": 1.25, "pods": 1}),
        (
            {
                "containers": [_c({"cpu": "1"})],
                "initContainers": [_c({"cpu": "1"}, restart="Always"), _c({"cpu": "1.5"})],
            },
            {"cpu": 2.5, "pods": 1},
        ),
        ({"containers": [_c()]}, {"pods": 1}),
    ],
    ids=[
        "sum-of-containers",
        "limit-stands-in",
        "request-wins-over-limit",
        "init-max",
        "overhead",
        "sidecar",
        "none",
    ],
)
def test_effective_pod_request(spec, expected):
    got = pod_request(_pod(spec), where="Pod ns/p")
    assert {k: pytest.approx(v) for k, v in expected.items()} == got


def test_a_bad_quantity_in_a_pod_names_pod_and_field():
    with pytest.raises(
        InputError, match=r"Pod ns/p: spec.containers\[0\].resources.requests.cpu: malformed quantity '2c'"
    ):
        build_task(_pod({"containers": [_c({"cpu": "2c"})]}), priority_classes={})


@pytest.mark.parametrize(
    ("hard", "weight"),
    [
        ({"volsched.io/namespace.weight": "3"}, 3),
        ({"volcano.sh/namespace.weight": "2"}, 2),
        ({"volsched.io/namespace.weight": "2", "volcano.sh/namespace.weight": "5"}, 5),
        ({"volsched.io/namespace.weight": "0"}, 1),
        ({"volsched.io/namespace.weight": "1.5"}, 1),
        ({"volsched.io/namespace.weight": "heavy"}, 1),
        ({"limits.memory": "2Gi"}, 1),
    ],
)
def test_namespace_weight_from_a_resource_quota(hard, weight):
    assert quota_weight({"spec": {"hard": hard}}) == weight


@pytest.mark.parametrize("count", [0, 1, 5])
def test_stack_rows_is_what_np_stack_makes(count: int) -> None:
    vectors = [np.array([0.1 * i, 1.0 + i, 3.0]) for i in range(count)]
    rows = stack_rows(vectors, 3)
    assert rows.shape == (count, 3)
    if vectors:
        assert rows.tobytes() == np.stack(vectors).tobytes()
