"""Scalars written by users in config and object fields: Go-style durations (``30s``, ``5m``, ``1h30m``,
``500ms``) as seconds, and booleans; and a time as an object's timestamps say it (RFC 3339, to the second,
or to the microsecond as a MicroTime).
The one parser (and writer) of each for the whole tree; callers word their own errors. Pure, no I/O.
Not the reading of an object's times (:func:`volsched.model.decode.parse_time`)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from volsched.model.errors import InputError

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration_seconds(value: object) -> float | None:
    """Seconds for a duration string or a plain number of seconds; None if it is neither (or not finite).

    Range checks (positive, non-zero) are the caller's, so each can word its own error.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            pos, seconds = 0, 0.0
            for match in _PART.finditer(text):
                if match.start() != pos:
                    break
                seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
                pos = match.end()
            if pos != len(text):
                return None
    else:
        return None
    return seconds if math.isfinite(seconds) else None


def parse_duration(value: object, *, where: str, allow_zero: bool = False) -> float:
    """A duration field of a config or input file, as seconds; :class:`InputError` naming ``where`` unless
    it is a duration > 0 (>= 0 with ``allow_zero``)."""
    seconds = duration_seconds(value)
    if seconds is None or seconds < 0 or (seconds == 0 and not allow_zero):
        kind = "a duration >= 0" if allow_zero else "a positive duration"
        raise InputError(f"{where}: expected {kind} like 30s, 5m or 1h, got {value!r}")
    return seconds


def human_duration(seconds: float) -> str:
    """Seconds as people read them, to the second: ``45s``, ``12m``, ``1h5m``, ``2d3h``."""
    total = max(0, round(seconds))
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if total >= size or (unit == "s" and not parts):
            count, total = divmod(total, size)
            if count:
                parts.append(f"{count}{unit}")
    return "".join(parts[:2]) or "0s"


#: The latest instant :func:`rfc3339` can write (the year 9999's last second).
LATEST_RFC3339 = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


def rfc3339(ts: float, *, micro: bool = False) -> str:
    """Unix seconds as an object's timestamp (``creationTimestamp``, ``startTime``): UTC, to the second;
    with ``micro``, as a MicroTime (a Lease's ``renewTime``), to the microsecond, as the apiserver writes it."""
    return datetime.fromtimestamp(ts, tz=UTC).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ"
    )


def boolean_value(value: object) -> bool | None:
    """A YAML boolean, or the string ``true``/``false`` in any case (a quoted annotation or flag); None if
    it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "false"):
            return word == "true"
    return None
