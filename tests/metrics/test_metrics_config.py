"""Parsing of the scheduler config's ``metrics:`` section."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from volsched.metrics.config import (
    ENV_PASSWORD,
    ENV_USERNAME,
    MetricsConfig,
    MetricsConfigError,
    SourceType,
    format_duration,
    parse_duration,
    parse_metrics_config,
)

DOC_EXAMPLE = """
metrics:
  type: elasticsearch
  address: http://192.168.0.10:9090
  interval: 30s
  tls:
    insecureSkipVerify: "false"
  elasticsearch:
    index: "custom-index-name"
    username: ""
    password: ""
    hostnameFieldName: "host.hostname"
"""


def parse(raw: Any, env: dict[str, str] | None = None) -> MetricsConfig:
    config = parse_metrics_config(raw, env=env or {})
    assert config is not None
    return config


def test_reference_doc_example() -> None:
    config = parse(yaml.safe_load(DOC_EXAMPLE)["metrics"])
    assert config.type is SourceType.ELASTICSEARCH
    assert config.address == "http://192.168.0.10:9090"
    assert config.interval == 30
    assert config.period == 300
    assert config.stale_after == 90
    assert config.timeout == 10
    assert config.insecure_skip_verify is False and config.verify_tls is True
    assert config.es_index == "custom-index-name"
    assert config.es_hostname_field == "host.hostname"
    assert config.username is None and config.password is None and config.basic_auth is None


def test_defaults() -> None:
    config = parse({"address": "http://prom:9090/"})
    assert config.type is SourceType.PROMETHEUS
    assert config.address == "http://prom:9090"
    assert (config.interval, config.period, config.stale_after) == (30, 300, 90)
    assert config.es_index == "metricbeat-*"


@pytest.mark.parametrize("raw", [None, {}])
def test_absent_section_means_no_metrics(raw: Any) -> None:
    assert parse_metrics_config(raw, env={}) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("prometheus", SourceType.PROMETHEUS),
        ("prometheus_adaptor", SourceType.PROMETHEUS_ADAPTOR),
        ("prometheus_adapt", SourceType.PROMETHEUS_ADAPTOR),
        ("Elasticsearch", SourceType.ELASTICSEARCH),
    ],
)
def test_types_and_alias(value: str, expected: SourceType) -> None:
    assert parse({"type": value, "address": "https://x:1"}).type is expected


def test_adaptor_needs_no_address() -> None:
    config = parse({"type": "prometheus_adaptor", "interval": "1m"})
    assert config.address is None and config.interval == 60 and config.timeout == 10


def test_durations_and_tls_bool() -> None:
    config = parse(
        {
            "address": "http://p:9",
            "interval": "5s",
            "period": "1h30m",
            "staleAfter": "20s",
            "timeout": "500ms",
            "tls": {"insecureSkipVerify": True},
        }
    )
    assert (config.interval, config.period, config.stale_after, config.timeout) == (5, 5400, 20, 0.5)
    assert config.insecure_skip_verify is True and config.verify_tls is False
    assert parse({"address": "http://p:9", "tls": {"insecureSkipVerify": "TRUE"}}).insecure_skip_verify
    assert parse({"address": "http://p:9", "interval": 2}).timeout == 2  # timeout <= interval


@pytest.mark.parametrize(
    ("raw", "field", "allowed_contains"),
    [
        ({"type": "graphite", "address": "http://x"}, "metrics.type", "prometheus_adapt"),
        ({"type": 3, "address": "http://x"}, "metrics.type", "elasticsearch"),
        ({"type": "prometheus"}, "metrics.address", None),
        ({"type": "elasticsearch", "address": ""}, "metrics.address", None),
        ({"address": "prom:9090"}, "metrics.address", "http://…"),
        ({"address": "http://x", "interval": "soon"}, "metrics.interval", "5m"),
        ({"address": "http://x", "interval": "-5s"}, "metrics.interval", "5m"),
        ({"address": "http://x", "interval": "0s"}, "metrics.interval", None),
        ({"address": "http://x", "period": "5 minutes"}, "metrics.period", "1h"),
        ({"address": "http://x", "period": True}, "metrics.period", "30s"),
        ({"address": "http://x", "interval": "1m", "staleAfter": "30s"}, "metrics.staleAfter", None),
        (
            {"address": "http://x", "tls": {"insecureSkipVerify": "maybe"}},
            "metrics.tls.insecureSkipVerify",
            "true",
        ),
        ({"address": "http://x", "tls": "yes"}, "metrics.tls", None),
        ({"address": "http://x", "tls": {"insecure": True}}, "metrics.tls.insecure", "insecureSkipVerify"),
        ({"address": "http://x", "adress": "http://y"}, "metrics.adress", "address"),
        ({"address": "http://x", "elasticsearch": {"indx": "a"}}, "metrics.elasticsearch.indx", "index"),
        ({"address": "http://x", "elasticsearch": {"password": 123}}, "metrics.elasticsearch.password", None),
        ({"address": "http://x", "elasticsearch": {"index": ["a"]}}, "metrics.elasticsearch.index", None),
    ],
)
def test_errors_name_the_field(raw: dict[str, Any], field: str, allowed_contains: str | None) -> None:
    with pytest.raises(MetricsConfigError) as err:
        parse_metrics_config(raw, env={})
    assert isinstance(err.value, ValueError)
    assert err.value.field == field
    assert field in str(err.value)
    if allowed_contains is not None:
        assert err.value.allowed is not None
        assert "allowed:" in str(err.value) and allowed_contains in str(err.value)


def test_not_a_mapping() -> None:
    with pytest.raises(MetricsConfigError, match=r"^metrics: expected a mapping"):
        parse_metrics_config(["prometheus"], env={})  # type: ignore[arg-type]


def test_credentials_from_file_and_env_and_never_in_repr() -> None:
    raw = {
        "type": "elasticsearch",
        "address": "https://es:9200",
        "elasticsearch": {"username": "beat", "password": "file-pw"},
    }
    config = parse(raw, env={ENV_USERNAME: "env-user", ENV_PASSWORD: "env-pw"})
    assert (config.username, config.password) == ("beat", "file-pw")
    assert "file-pw" not in repr(config) and "file-pw" not in str(config)

    config = parse(
        {"type": "elasticsearch", "address": "https://es:9200", "elasticsearch": {"username": ""}},
        env={ENV_USERNAME: "env-user", ENV_PASSWORD: "env-pw"},
    )
    assert config.basic_auth == ("env-user", "env-pw")
    assert "env-pw" not in repr(config)


def test_environ_is_the_default_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_USERNAME, "u")
    monkeypatch.setenv(ENV_PASSWORD, "p")
    config = parse_metrics_config({"address": "http://x"})
    assert config is not None and config.basic_auth == ("u", "p")


def test_config_is_frozen() -> None:
    config = parse({"address": "http://x"})
    with pytest.raises(AttributeError):
        config.interval = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("1h30m", 5400),
        ("500ms", 0.5),
        ("2d", 172800),
        ("1.5m", 90),
        ("45", 45),
        (10, 10),
        (0.25, 0.25),
    ],
)
def test_parse_duration(text: Any, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_format_duration() -> None:
    assert format_duration(300) == "300s"
    assert format_duration(0.5) == "500ms"
    assert format_duration(20.0) == "20s"
