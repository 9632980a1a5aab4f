"""volsched.redaction: no credential survives into a log line, an event or a metric label."""

from __future__ import annotations

import logging
import sys

import pytest

from volsched.metrics.config import parse_metrics_config
from volsched.redaction import (
    RedactingFilter,
    basic_credential,
    error_summary,
    format_exception,
    redact,
    register_secrets,
    url_secrets,
)

CASES = [
    ("url user-info", "GET http://user:pa55@prom:9090/api", "GET http://***@prom:9090/api", "pa55"),
    ("user-info with an @ in it", "http://u:p@ss-word@h/x", "http://***@h/x", "ss-word"),
    (
        "user-info in a repr",
        "not an http(s) URL: 'ftp://u:hunter22@h'",
        "not an http(s) URL: 'ftp://***@h'",
        "hunter22",
    ),
    ("authorization header", "Authorization: Basic dXNlcjpwYXNz", "Authorization: ***", "dXNlcjpwYXNz"),
    (
        "authorization in json",
        '{"authorization": "Bearer abc.def.123"}',
        '{"authorization": "***"}',
        "abc.def",
    ),
    ("bearer token alone", "sent Bearer eyJhbGciOi.J9x", "sent Bearer ***", "eyJhbGciOi"),
    ("password pair", "login failed password=topsecret&x=1", "login failed password=***&x=1", "topsecret"),
    ("token in json", '{"token": "t0k3n-value"}', '{"token": "***"}', "t0k3n-value"),
]


@pytest.mark.parametrize(("case", "text", "want", "secret"), CASES, ids=[c[0] for c in CASES])
def test_credentials_are_masked(case: str, text: str, want: str, secret: str) -> None:
    got = redact(text)
    assert got == want
    assert secret not in got


@pytest.mark.parametrize(
    "text",
    [
        "basic scheduling of pod ns/p on node n1",
        "bind ns/p -> n1: conflict (pod is already bound)",
        "queue prod holds cpu 4 -> cpu 2",
        "see https://example.com/docs#x",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_secrets_are_masked_in_every_form_they_travel_in() -> None:
    secrets = url_secrets("http://alice:p%40ss w0rd@h:1")
    assert "p%40ss w0rd" in secrets and "p@ss w0rd" in secrets
    assert basic_credential("alice", "p@ss w0rd") in secrets
    body = f"401 for alice / p@ss w0rd (header Basic {basic_credential('alice', 'p@ss w0rd')})"
    out = redact(body, secrets)
    assert "p@ss w0rd" not in out and basic_credential("alice", "p@ss w0rd") not in out


def test_registered_secrets_are_masked_everywhere() -> None:
    register_secrets("registered-s3cret-xyz")
    assert redact("an error echoing registered-s3cret-xyz back") == "an error echoing *** back"


def test_metrics_config_names_its_secrets() -> None:
    config = parse_metrics_config(
        {"address": "http://bob:urlpass1@prom:9090"}, env={"VOLSCHED_METRICS_PASSWORD": "envpass1"}
    )
    assert config is not None
    assert {"urlpass1", "envpass1"} <= set(config.secrets)
    assert "envpass1" not in repr(config)


class _ApiError(Exception):
    def __init__(self) -> None:
        super().__init__(
            "(401)\nReason: Unauthorized\nHTTP response headers: {'Www-Authenticate': 'x'}\n"
            "HTTP response body: password=leaked1"
        )
        self.status, self.reason, self.body = 401, "Unauthorized", "password=leaked1"


def test_error_summary_never_prints_a_response_body() -> None:
    assert error_summary(_ApiError()) == "HTTP 401 Unauthorized"
    long = RuntimeError("HTTP Status Code 500 (b'" + "x" * 500 + " Authorization: Basic Zm9vOmJhcg==')")
    out = error_summary(long, limit=100)
    assert len(out) <= 101 and "Zm9vOmJhcg" not in out


def test_log_filter_redacts_message_arguments_and_tracebacks() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "collector at %s", ("http://u:pw99@h",), None)
    try:
        raise ValueError("boom http://u:pw99@h")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    assert RedactingFilter().filter(record)
    text = logging.Formatter().format(record)
    assert "pw99" not in text and "http://***@h" in text


def test_log_filter_keeps_a_record_on_one_line_whatever_its_arguments_say() -> None:
    """A message quoting what a tenant wrote (a pod's annotation may hold any text) cannot forge a log
    line: its line breaks and other control characters are escaped; a tab, and a traceback, are kept."""
    forged = "2026-11-30 12:00:00,000 ERROR volsched.operator: forged"
    record = logging.LogRecord(
        "t",
        logging.WARNING,
        __file__,
        1,
        "Pod %s: %s",
        ("ns/p", f"group g\n{forged}\r\x1b[2K\u2028\tok"),
        None,
    )
    assert RedactingFilter().filter(record)
    text = logging.Formatter("%(levelname)s %(message)s").format(record)
    assert text == f"WARNING Pod ns/p: group g\\n{forged}\\r\\x1b[2K\\u2028\tok"
    assert len(text.splitlines()) == 1
    plain = logging.LogRecord("t", logging.INFO, __file__, 1, "session %d: %s", (3, "bound"), None)
    assert RedactingFilter().filter(plain)
    assert (plain.msg, plain.args) == ("session %d: %s", (3, "bound"))  # nothing to escape: left as it was


def _raised(exc: BaseException) -> tuple[type[BaseException], BaseException, object]:
    try:
        raise exc
    except BaseException:
        kind, value, tb = sys.exc_info()
        assert kind is not None and value is not None
        return kind, value, tb


def test_a_traceback_keeps_each_exceptions_message_on_one_line() -> None:
    """An exception's message may quote a tenant's text too (a name, an annotation, an error body): in a
    logged traceback its line breaks are escaped as the message's are, in chained exceptions and a group's
    members alike; the traceback's own lines are kept as the standard library writes them."""
    forged = "2026-11-30 12:00:00,000 ERROR volsched.operator: forged"

    def failing() -> None:
        try:
            raise ValueError(f"group g\n{forged}")
        except ValueError as exc:
            raise ExceptionGroup("session", [RuntimeError(f"bind\r\n{forged}"), exc]) from exc

    try:
        failing()
    except ExceptionGroup:
        exc_info = sys.exc_info()
    record = logging.LogRecord("t", logging.ERROR, __file__, 1, "session failed", (), exc_info)
    assert RedactingFilter().filter(record)
    text = logging.Formatter("%(levelname)s %(message)s").format(record)
    lines = text.splitlines()
    assert not [line for line in lines if line.lstrip(" |+-").startswith("2026-")], text
    assert f"ValueError: group g\\n{forged}" in lines
    assert any(line.endswith(f"RuntimeError: bind\\r\\n{forged}") for line in lines), text
    assert lines[:3] == ["ERROR session failed", "Traceback (most recent call last):", lines[2]]
    assert "The above exception was the direct cause of the following exception:" in lines
    plain = _raised(KeyError("a\tb"))  # nothing to escape: exactly what logging writes
    assert format_exception(plain) == logging.Formatter().formatException(plain)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        ("admin:s3cret-pw@prom:9090", "'***@prom:9090'"),  # the scheme left out
        ("http:/admin:s3cret-pw@prom:9090", "'http:/***@prom:9090'"),  # one slash
        ("ftp://admin:s3cret-pw@prom", "'ftp://***@prom'"),
    ],
)
def test_a_bad_metrics_address_is_quoted_without_its_credentials(address: str, shown: str) -> None:
    """The defect: an address that is no http(s) URL was quoted whole in the error, which reaches the
    operator's log and the ConfigMap's event; with no 'scheme://' in front, redact could not tell its
    user-info, and the password went out as written."""
    with pytest.raises(ValueError) as refused:
        parse_metrics_config({"address": address})
    message = str(refused.value)
    assert "s3cret-pw" not in message and "admin" not in message
    assert f"not an http(s) URL: {shown}" in message
