"""Reading the repository's lock files (constraints.txt for the image, constraints-dev.txt for the
development and test environment): exact ``name==version`` pins under a header that names the Python
they were resolved for."""

from __future__ import annotations

import re
from collections.abc import Collection
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
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


def walk_pinned_closure(requirements: list[Requirement], *, lock: str, leaves: Collection[str] = ()) -> int:
    """Walk the dependency closure of ``requirements`` through the installed distributions' metadata,
    on the Python ``lock`` was resolved for (a requirement whose marker does not hold there is left out),
    asserting that ``lock`` pins everything reached; ``leaves`` are not walked into. Returns how many
    (distribution, extra) were walked."""
    python, pins = read_lock(lock)
    env = {**default_environment(), "python_full_version": python, "python_version": python.rsplit(".", 1)[0]}
    todo = [(req, "") for req in requirements]
    seen: set[tuple[str, str]] = set()  # (distribution, extra) walked
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
            continue
        name = canonicalize_name(req.name)
        assert name in pins, f"{name} (needed through {req}) is not pinned in {lock}"
        if name in leaves:
            continue
        for wanted in ("", *sorted(req.extras)):
            if (name, wanted) in seen:
                continue
            seen.add((name, wanted))
            try:
                requires = metadata.requires(req.name) or []
            except metadata.PackageNotFoundError:
                pytest.fail(
                    f"{req.name} is not installed here; `make .venv/.installed` installs what {lock} pins"
                )
            todo.extend((Requirement(r), wanted) for r in requires)
    return len(seen)
