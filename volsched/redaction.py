"""Credentials out of everything volsched prints: one helper for logs, events and metric labels.

:func:`redact` removes

* URL user-info (``http://user:pass@host`` -> ``http://***@host``),
* authorization material: ``Authorization:``/``Proxy-Authorization:`` header values, ``Basic``/``Bearer``
  tokens, and ``password=``/``token=``/``api_key=``-style pairs (in headers, query strings, JSON, reprs),
* every secret registered with :func:`register_secrets` or passed in, also in the forms it travels in
  (URL-quoted, and ``user:password`` base64-encoded as a Basic credential).

:class:`RedactingFilter` applies it to every log record a handler emits (message, arguments and
traceback), so a library that logs a URL or an error body cannot leak either; it also escapes the
message's line breaks and other control characters (one record, one line): a message quotes what tenants
write (an annotation may hold any text), which could otherwise forge log lines of its own. A traceback
keeps its lines, but the messages of its exceptions (the ``Type: message`` lines, which may quote the same
text) are escaped alike. :func:`error_summary`
turns an exception from a remote service into one short, redacted line: a response body is never
printed in full.

Pure, apart from the process-wide secret registry (a set behind a lock). No I/O.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
import traceback
from collections.abc import Generator, Iterable
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote, urlsplit

__all__ = [
    "MASK",
    "RedactingFilter",
    "error_summary",
    "format_exception",
    "hide_userinfo",
    "install_log_redaction",
    "one_line",
    "redact",
    "register_secrets",
    "url_secrets",
]

MASK = "***"

#: ``scheme://user:pass@`` (the password may itself hold an unencoded ``@``; a ``/`` ends the authority).
_USERINFO = re.compile(r"(?<=://)[^/\s?#'\"<>]*@")
#: ``Authorization: Basic abc``, ``'authorization': 'Bearer abc'``, ``authorization=abc``.
_AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?)(?:(?:basic|bearer|digest|token|negotiate)\s+)?"
    r"[^\s'\",;}&]+"
)
#: ``Basic dXNlcjpwYXNz`` / ``Bearer eyJ...`` anywhere.
_SCHEME_TOKEN = re.compile(
    r"(\b(?:Basic|Bearer|BASIC|BEARER|basic|bearer)\s+)(?=[A-Za-z0-9._~+/-]*[0-9=._~+/-])[A-Za-z0-9._~+/=-]{4,}"
)
#: ``password=x``, ``"token": "x"``, ``api_key: x`` (a key that names a secret, then its value).
_SECRET_PAIR = re.compile(
    r"(?i)(\b(?:password|passwd|pwd|secret|token|access_token|refresh_token|api[_-]?key|apikey)"
    r"['\"]?\s*[:=]\s*['\"]?)[^\s'\",;}&]+"
)

_lock = threading.Lock()
_registered: set[str] = set()


def _forms(secret: str) -> set[str]:
    return {secret, quote(secret, safe=""), quote(secret)}


def register_secrets(*secrets: str | None) -> None:
    """Remember secrets process-wide: :func:`redact` (and so every log line) masks them from now on.
    Strings shorter than 3 characters are not registered (masking them would garble text)."""
    with _lock:
        for secret in secrets:
            if secret and len(secret) >= 3:
                _registered.update(_forms(secret))


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials a URL carries in its user-info: the password (raw and decoded) and the Basic
    credential a client derives from it."""
    if not url:
        return ()
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return ()
    out: list[str] = []
    if password:
        out += [password, unquote(password)]
    if user is not None and (password or user):
        out.append(basic_credential(unquote(user), unquote(password or "")))
    return tuple(s for s in out if s)


def basic_credential(username: str, password: str) -> str:
    """The base64 part of ``Authorization: Basic ...`` for these credentials."""
    return base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


#: A scheme and the slashes after it (``http://``, ``ftp:/``): ``user:`` alone is no scheme.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/+")
#: Control characters a log message must not carry as they are (a tab may: it breaks no line).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\r": "\\r"}


def one_line(text: str) -> str:
    """``text`` with its line breaks and other control characters escaped (``\\n``, ``\\r``,
    ``\\x1b``, ``\\u2028``): what quotes a tenant's text cannot start a line, or move the cursor, of its own."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(
        lambda m: _ESCAPES.get(c := m.group(), f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"),
        text,
    )


def hide_userinfo(address: str) -> str:
    """``address``, that may not parse as a URL, with all it holds before its last ``@`` (past a scheme)
    masked: ``admin:pw@prom:9090`` -> ``***@prom:9090``, ``http:/u:pw@h`` -> ``http:/***@h``, where
    :func:`redact` finds no ``scheme://`` to know the user-info by. For quoting a bad address back."""
    if "@" not in address:
        return address
    scheme = _SCHEME.match(address)
    head = scheme.group(0) if scheme else ""
    return f"{head}{MASK}@{address.rpartition('@')[2]}"


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` without URL user-info, authorization material and known secrets."""
    with _lock:
        known = set(_registered)
    for secret in secrets:
        if secret and len(secret) >= 3:
            known |= _forms(secret)
    # Longest first, so a secret that contains another is masked whole.
    for secret in sorted(known, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    text = _USERINFO.sub(f"{MASK}@", text)
    text = _AUTH_HEADER.sub(rf"\g<1>{MASK}", text)
    text = _SCHEME_TOKEN.sub(rf"\g<1>{MASK}", text)
    return _SECRET_PAIR.sub(rf"\g<1>{MASK}", text)


def error_summary(exc: BaseException, *, limit: int = 200, secrets: Iterable[str | None] = ()) -> str:
    """One redacted line about an error from a remote service: ``HTTP 401 Unauthorized`` for an
    ApiException (never its headers or body), else the first line of the message, cut at ``limit``."""
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None)
    if isinstance(status, int) and hasattr(exc, "body"):
        text = f"HTTP {status} {reason or ''}".rstrip()
    else:
        text = " ".join(str(exc).split())
    if len(text) > limit:
        text = text[:limit] + "…"
    return redact(text, secrets)


class _OneLineMessages(traceback.TracebackException):
    """A traceback whose exceptions' messages are escaped with :func:`one_line` (each ``Type: message``
    line stays one line); its frames are formatted as the standard library does."""

    def format_exception_only(self, **kwargs: Any) -> Generator[str, None, None]:
        for text in super().format_exception_only(**kwargs):
            body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
            yield one_line(body) + end


def format_exception(
    exc_info: tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None],
) -> str:
    """What :meth:`logging.Formatter.formatException` writes for ``exc_info``, with the message of each
    exception in it (chained, grouped) kept to one line: an exception's message may quote a tenant's text,
    and a line break in it would start a log line of its own."""
    kind, value, tb = exc_info
    if kind is None or value is None:
        return logging.Formatter().formatException(exc_info)
    top = traceback.TracebackException(kind, value, tb, compact=True)
    seen: set[int] = set()
    todo = [top]
    while todo:  # every exception the traceback tells of: causes, contexts and a group's members
        te = todo.pop()
        if id(te) in seen:
            continue
        seen.add(id(te))
        te.__class__ = _OneLineMessages
        todo.extend(t for t in (te.__cause__, te.__context__) if t is not None)
        todo.extend(te.exceptions or ())
    return "".join(top.format()).removesuffix("\n")


class RedactingFilter(logging.Filter):
    """Redacts each record's final message and traceback before a handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it to logging's own error handling
            return True
        clean = one_line(redact(message))
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = format_exception(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Put a :class:`RedactingFilter` on every handler of ``logger`` (default: the root logger), so
    records from every library pass through it. Idempotent."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
