"""Object metadata checked as the Kubernetes API server checks it (apimachinery's validation).

The operator's objects have passed the API server already; the simulator plays the API server for
objects read from files, so it checks them here: names, namespaces, label keys and values, annotation
keys and total size. Each check raises :class:`InputError` naming the field. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from volsched.model.errors import InputError

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
#: Total size of an object's annotations (keys and values), as the API server limits it.
ANNOTATIONS_MAX_BYTES = 256 * 1024
#: Kinds whose names are DNS labels (the others are DNS subdomains).
_LABEL_NAMED = frozenset({"Namespace"})


def _shown(value: Any) -> str:
    if isinstance(value, Mapping | list):  # never repr a structure: aliases may repeat it many times
        return f"a {'map' if isinstance(value, Mapping) else 'list'}"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**12:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _fail(field: str, value: Any, why: str) -> InputError:
    return InputError(f"{field}: {_shown(value)} is not valid: {why}")


def _dns_name(value: Any, *, field: str, pattern: re.Pattern[str], limit: int, rule: str) -> str:
    if not isinstance(value, str):
        raise _fail(field, value, "must be a string")
    if len(value) > limit or not pattern.fullmatch(value):
        raise _fail(field, value, rule)
    return value


def dns_label(value: Any, *, field: str) -> str:
    rule = (
        f"a DNS label: at most {DNS_LABEL_MAX} lower-case letters, digits and '-', "
        "starting and ending with a letter or digit"
    )
    return _dns_name(value, field=field, pattern=_DNS_LABEL, limit=DNS_LABEL_MAX, rule=rule)


def dns_subdomain(value: Any, *, field: str) -> str:
    rule = (
        f"a DNS subdomain: at most {DNS_SUBDOMAIN_MAX} characters, lower-case letters, "
        "digits, '-' and '.', starting and ending with a letter or digit"
    )
    return _dns_name(value, field=field, pattern=_DNS_SUBDOMAIN, limit=DNS_SUBDOMAIN_MAX, rule=rule)


@lru_cache(maxsize=4096)
def _key_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > DNS_SUBDOMAIN_MAX or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"the prefix before '/' must be a DNS subdomain of at most {DNS_SUBDOMAIN_MAX} characters"
    if not name or len(name) > DNS_LABEL_MAX or not _QUALIFIED_NAME.fullmatch(name):
        return (
            f"a qualified name: at most {DNS_LABEL_MAX} letters, digits, '-', '_' and '.', starting and "
            "ending with a letter or digit, with an optional DNS-subdomain prefix and '/'"
        )
    return None


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is no label key (a qualified name with an optional DNS-subdomain prefix), or None."""
    return _key_problem(key)


def label_value_ok(value: str) -> bool:
    """Whether ``value`` is a label value: at most 63 characters matching the label regex, or empty."""
    return _value_ok(value)


def qualified_name(value: Any, *, field: str) -> str:
    if not isinstance(value, str):
        raise _fail(field, value, "must be a string")
    problem = _key_problem(value)
    if problem:
        raise _fail(field, value, problem)
    return value


@lru_cache(maxsize=65536)
def _value_ok(value: str) -> bool:
    return len(value) <= LABEL_VALUE_MAX and _LABEL_VALUE.fullmatch(value) is not None


def label_map(raw: Any, *, field: str) -> None:
    """A label map: qualified-name keys, values of at most 63 characters matching the label regex."""
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise InputError(f"{field}: expected a map of strings, got {type(raw).__name__}")
    for key, value in raw.items():
        qualified_name(key, field=f"{field} key")
        if not isinstance(value, str):
            raise _fail(f"{field}[{key}]", value, "a label value must be a string")
        if not _value_ok(value):
            raise _fail(
                f"{field}[{key}]", value, f"a label value: at most {LABEL_VALUE_MAX} letters, digits, '-', '_' "
                "and '.', starting and ending with a letter or digit (or empty)",
            )  # fmt: skip


def annotation_map(raw: Any, *, field: str) -> None:
    """An annotation map: qualified-name keys, string values, at most 256 KiB in all."""
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise InputError(f"{field}: expected a map of strings, got {type(raw).__name__}")
    size = 0
    for key, value in raw.items():
        qualified_name(key, field=f"{field} key")
        if not isinstance(value, str):
            raise _fail(f"{field}[{key}]", value, "an annotation value must be a string")
        size += len(key) + len(value)
    if size > ANNOTATIONS_MAX_BYTES:
        raise InputError(f"{field}: {size} bytes in all; the limit is {ANNOTATIONS_MAX_BYTES}")


def metadata(obj: Mapping[str, Any], *, namespaced: bool) -> None:
    """``metadata.name``, ``namespace``, ``labels`` and ``annotations`` of one object."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        raise InputError("metadata must be a map")
    name = meta.get("name")
    if name is None or name == "":
        raise InputError("missing field metadata.name")
    if obj.get("kind") in _LABEL_NAMED:
        dns_label(name, field="metadata.name")
    else:
        dns_subdomain(name, field="metadata.name")
    if namespaced and meta.get("namespace") is not None:
        dns_label(meta["namespace"], field="metadata.namespace")
    label_map(meta.get("labels"), field="metadata.labels")
    annotation_map(meta.get("annotations"), field="metadata.annotations")


def bounded_int(value: Any, *, field: str, minimum: int, maximum: int) -> int:
    """An integer (not a bool, not a float) within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{field}: expected an integer from {minimum} to {maximum}, got {_shown(value)}")
    if not minimum <= value <= maximum:
        raise InputError(f"{field}: expected an integer from {minimum} to {maximum}, got {_shown(value)}")
    return value
