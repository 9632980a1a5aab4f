"""The ``metrics:`` section of the scheduler configuration, parsed and validated.

This module turns the raw mapping (as loaded from the scheduler's YAML) into a frozen
:class:`MetricsConfig`, filling in defaults and credentials from the environment. It does no I/O
besides reading the environment mapping it is given, and it knows nothing about how a source talks
to its server: that lives in :mod:`volsched.metrics.prometheus`, :mod:`volsched.metrics.custom_metrics`
and :mod:`volsched.metrics.elasticsearch`.

Accepted shape (all keys optional except ``address`` for ``prometheus`` and ``elasticsearch``)::

    metrics:
      type: prometheus            # prometheus | prometheus_adaptor (alias prometheus_adapt) | elasticsearch
      address: http://10.0.0.10:9090
      interval: 30s               # how often the collector polls the source
      period: 5m                  # the averaging window of the usage and its fluctuation
      staleAfter: 90s             # drop a node's usage older than this (default 3 x interval)
      timeout: 10s                # one request's timeout (default min(10s, interval))
      tls:
        insecureSkipVerify: "false"
      elasticsearch:
        index: metricbeat-*
        username: ""
        password: ""
        hostnameFieldName: host.hostname

Credentials left empty in the file are taken from ``VOLSCHED_METRICS_USERNAME`` and
``VOLSCHED_METRICS_PASSWORD`` (the operator can mount a Secret as these variables). The password is
never part of ``repr()``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import field
from enum import StrEnum
from typing import Any

from volsched.model.scalars import boolean_value, duration_seconds
from volsched.records import dataclass
from volsched.redaction import basic_credential, hide_userinfo, url_secrets

__all__ = [
    "ENV_PASSWORD",
    "ENV_USERNAME",
    "MetricsConfig",
    "MetricsConfigError",
    "SourceType",
    "format_duration",
    "parse_duration",
    "parse_metrics_config",
]

ENV_USERNAME = "VOLSCHED_METRICS_USERNAME"
ENV_PASSWORD = "VOLSCHED_METRICS_PASSWORD"

DEFAULT_INTERVAL = 30.0
DEFAULT_PERIOD = 300.0
DEFAULT_TIMEOUT_CAP = 10.0
DEFAULT_ES_INDEX = "metricbeat-*"
DEFAULT_ES_HOSTNAME_FIELD = "host.hostname"
STALE_INTERVALS = 3


class SourceType(StrEnum):
    """Where node usage comes from."""

    PROMETHEUS = "prometheus"
    PROMETHEUS_ADAPTOR = "prometheus_adaptor"
    ELASTICSEARCH = "elasticsearch"


_TYPE_ALIASES: dict[str, SourceType] = {
    "prometheus": SourceType.PROMETHEUS,
    "prometheus_adaptor": SourceType.PROMETHEUS_ADAPTOR,
    "prometheus_adapt": SourceType.PROMETHEUS_ADAPTOR,
    "elasticsearch": SourceType.ELASTICSEARCH,
}

_TOP_KEYS = ("type", "address", "interval", "period", "staleAfter", "timeout", "tls", "elasticsearch")
_TLS_KEYS = ("insecureSkipVerify",)
_ES_KEYS = ("index", "username", "password", "hostnameFieldName")


class MetricsConfigError(ValueError):
    """A bad value in the ``metrics:`` section; ``field`` is its dotted path, e.g. ``metrics.type``."""

    def __init__(self, field_path: str, problem: str, allowed: tuple[str, ...] | None = None) -> None:
        self.field = field_path
        self.allowed = allowed
        message = f"{field_path}: {problem}"
        if allowed:
            message += f" (allowed: {', '.join(allowed)})"
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """Validated metrics settings. Durations are in seconds."""

    type: SourceType = SourceType.PROMETHEUS
    address: str | None = None
    interval: float = DEFAULT_INTERVAL
    period: float = DEFAULT_PERIOD
    stale_after: float = DEFAULT_INTERVAL * STALE_INTERVALS
    timeout: float = DEFAULT_TIMEOUT_CAP
    insecure_skip_verify: bool = False
    es_index: str = DEFAULT_ES_INDEX
    es_hostname_field: str = DEFAULT_ES_HOSTNAME_FIELD
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def verify_tls(self) -> bool:
        """Whether server certificates are checked (the inverse of ``insecureSkipVerify``)."""
        return not self.insecure_skip_verify

    @property
    def secrets(self) -> tuple[str, ...]:
        """What must never be printed: the password, the address's user-info and the Basic credential
        a client builds from either (see :mod:`volsched.redaction`)."""
        out = list(url_secrets(self.address))
        if self.password:
            out += [self.password, basic_credential(self.username or "", self.password)]
        return tuple(out)

    @property
    def basic_auth(self) -> tuple[str, str] | None:
        """``(username, password)`` when a username is set, else ``None``."""
        if not self.username:
            return None
        return (self.username, self.password or "")


def parse_duration(value: object, field_path: str = "duration") -> float:
    """Parse a Go-style duration (``30s``, ``5m``, ``1h30m``, ``500ms``) or a number of seconds.

    Raises :class:`MetricsConfigError` naming ``field_path`` unless the result is finite and > 0.
    """
    seconds = duration_seconds(value)
    if seconds is None:
        if isinstance(value, str):
            raise MetricsConfigError(
                field_path, f"not a duration: {value!r}", ("e.g. 30s", "5m", "1h", "1h30m", "500ms")
            )
        raise MetricsConfigError(field_path, f"expected a duration, got {value!r}", ("e.g. 30s", "5m", "1h"))
    if seconds <= 0:
        raise MetricsConfigError(field_path, f"must be a positive duration, got {value!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """Render seconds as a PromQL/Elasticsearch duration (``300s``, ``1500ms``)."""
    if seconds >= 1 and float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{max(1, round(seconds * 1000))}ms"


def _parse_bool(value: object, field_path: str) -> bool:
    parsed = boolean_value(value)
    if parsed is None:
        raise MetricsConfigError(field_path, f"not a boolean: {value!r}", ("true", "false"))
    return parsed


def _mapping(value: object, field_path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MetricsConfigError(field_path, f"expected a mapping, got {type(value).__name__}")
    return value


def _check_keys(section: Mapping[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    for key in section:
        if key not in allowed:
            raise MetricsConfigError(f"{prefix}.{key}", "unknown setting", allowed)


def _opt_str(value: object, field_path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MetricsConfigError(field_path, f"expected a string, got {type(value).__name__}")
    return value.strip() or None


def parse_metrics_config(
    raw: Mapping[str, Any] | None, env: Mapping[str, str] | None = None
) -> MetricsConfig | None:
    """Build a :class:`MetricsConfig` from the raw ``metrics:`` mapping.

    Returns ``None`` when the section is absent or empty (usage-based scheduling has no source).
    ``env`` defaults to ``os.environ``; it supplies credentials the file leaves empty.
    Raises :class:`MetricsConfigError` (a ``ValueError``) naming the offending field.
    """
    if raw is None:
        return None
    section = _mapping(raw, "metrics")
    if not section:
        return None
    environ: Mapping[str, str] = os.environ if env is None else env
    _check_keys(section, _TOP_KEYS, "metrics")

    type_raw = section.get("type")
    allowed_types = tuple(_TYPE_ALIASES)
    if type_raw is None or (isinstance(type_raw, str) and not type_raw.strip()):
        source_type = SourceType.PROMETHEUS
    elif isinstance(type_raw, str) and type_raw.strip().lower() in _TYPE_ALIASES:
        source_type = _TYPE_ALIASES[type_raw.strip().lower()]
    else:
        raise MetricsConfigError("metrics.type", f"unknown source type {type_raw!r}", allowed_types)

    address = _opt_str(section.get("address"), "metrics.address")
    if address is not None and not re.match(r"^https?://[^/\s]+", address):
        raise MetricsConfigError(
            "metrics.address", f"not an http(s) URL: {hide_userinfo(address)!r}", ("http://…", "https://…")
        )
    if address is None and source_type in (SourceType.PROMETHEUS, SourceType.ELASTICSEARCH):
        raise MetricsConfigError("metrics.address", f"required for type {source_type.value}")

    interval = (
        parse_duration(section["interval"], "metrics.interval")
        if section.get("interval") not in (None, "")
        else DEFAULT_INTERVAL
    )
    period = (
        parse_duration(section["period"], "metrics.period")
        if section.get("period") not in (None, "")
        else DEFAULT_PERIOD
    )
    stale_after = (
        parse_duration(section["staleAfter"], "metrics.staleAfter")
        if section.get("staleAfter") not in (None, "")
        else interval * STALE_INTERVALS
    )
    if stale_after < interval:
        raise MetricsConfigError(
            "metrics.staleAfter", f"must be at least metrics.interval ({interval:g}s), got {stale_after:g}s"
        )
    timeout = (
        parse_duration(section["timeout"], "metrics.timeout")
        if section.get("timeout") not in (None, "")
        else min(DEFAULT_TIMEOUT_CAP, interval)
    )

    tls = _mapping(section.get("tls"), "metrics.tls")
    _check_keys(tls, _TLS_KEYS, "metrics.tls")
    insecure = _parse_bool(tls.get("insecureSkipVerify", False), "metrics.tls.insecureSkipVerify")

    es = _mapping(section.get("elasticsearch"), "metrics.elasticsearch")
    _check_keys(es, _ES_KEYS, "metrics.elasticsearch")
    index = _opt_str(es.get("index"), "metrics.elasticsearch.index") or DEFAULT_ES_INDEX
    hostname_field = (
        _opt_str(es.get("hostnameFieldName"), "metrics.elasticsearch.hostnameFieldName")
        or DEFAULT_ES_HOSTNAME_FIELD
    )
    username = _opt_str(es.get("username"), "metrics.elasticsearch.username") or (
        environ.get(ENV_USERNAME, "").strip() or None
    )
    password_raw = es.get("password")
    if password_raw is not None and not isinstance(password_raw, str):
        raise MetricsConfigError("metrics.elasticsearch.password", "expected a string")
    password = password_raw or environ.get(ENV_PASSWORD) or None

    return MetricsConfig(
        type=source_type,
        address=address.rstrip("/") if address else None,
        interval=interval,
        period=period,
        stale_after=stale_after,
        timeout=timeout,
        insecure_skip_verify=insecure,
        es_index=index,
        es_hostname_field=hostname_field,
        username=username,
        password=password,
    )
