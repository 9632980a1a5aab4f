"""Reading the repository's lock files (constraints.txt for the image, constraints-dev.txt for the
development and test environment): exact ``name==version`` pins under a header that names the Python
they were resolved for."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def read_lock(name: str) -> tuple[str, dict[str, str]]:
    """(the Python the lock was resolved for, {canonical name: version})."""
    text = (ROOT / name).read_text()
    python = re.search(r"resolution for\s*#?\s*python (\d+\.\d+\.\d+)", text)
    assert python, f"{name} says which Python it was resolved for"
    pins: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)", line)
        assert match, f"{name}: {line!r} is not an exact pin name==version"
        key = canonicalize_name(match.group(1))
        assert key not in pins, f"{name} pins {key} twice"
        pins[key] = match.group(2)
    return python.group(1), pins
