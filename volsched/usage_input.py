"""Node usage as simulator input: a Node annotation or a ``--usage`` file, parsed into NodeUsage.

On a Node::

    metadata:
      annotations:
        volsched.io/usage: '{"cpu": 85, "memory": 40, "cpuFluctuation": 5}'

In a file given to ``volsched simulate --usage FILE`` (it wins over annotations)::

    n1: {cpu: 85, memory: 40, cpuFluctuation: 5, memFluctuation: 2}
    n2: {cpu: 10, memory: 20, age: 10m}

``cpu`` and ``memory`` are required percentages 0..100; the fluctuations (standard deviation in
percentage points) default to 0; ``age`` (a duration, default 0) says how long before the simulation
starts the values were measured, to try stale data. Errors name the file or node and the field.
No I/O here besides reading the file when asked to.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from volsched.model.errors import InputError
from volsched.model.scalars import parse_duration
from volsched.model.usage import NodeUsage
from volsched.model.yamlload import load_one

USAGE_ANNOTATION = "volsched.io/usage"
_FIELDS = {
    "cpu": "cpu",
    "memory": "memory",
    "mem": "memory",
    "cpuFluctuation": "cpu_fluctuation",
    "memFluctuation": "mem_fluctuation",
    "memoryFluctuation": "mem_fluctuation",
    "age": "age",
}


def parse_usage(raw: Any, *, where: str, now: float) -> NodeUsage:
    """One node's usage map; ``where`` prefixes every error (``"usage.yaml: node n1"``)."""
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a map with cpu and memory percentages, got {raw!r}")
    values: dict[str, float] = {}
    for key, value in raw.items():
        name = _FIELDS.get(str(key))
        if name is None:
            raise InputError(f"{where}: unknown field {key!r}; known: {', '.join(sorted(_FIELDS))}")
        if name in values:
            raise InputError(f"{where}: field {key!r} is given twice (under another name)")
        if name == "age":
            values[name] = parse_duration(value, where=f"{where}: age", allow_zero=True)
            continue
        number: float | None = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value.strip().rstrip("%"))
            except ValueError:
                number = None
        if number is None or not math.isfinite(number) or not 0 <= number <= 100:
            raise InputError(f"{where}: {key}: expected a percentage 0..100, got {value!r}")
        values[name] = number
    for required in ("cpu", "memory"):
        if required not in values:
            raise InputError(f"{where}: missing field {required}")
    return NodeUsage(
        cpu=values["cpu"],
        memory=values["memory"],
        measured_at=now - values.get("age", 0.0),
        cpu_fluctuation=values.get("cpu_fluctuation", 0.0),
        mem_fluctuation=values.get("mem_fluctuation", 0.0),
    )


def usage_from_annotations(
    nodes: Iterable[tuple[str, Mapping[str, str], str]], *, now: float
) -> dict[str, NodeUsage]:
    """``nodes`` are (name, annotations, source) triples."""
    out: dict[str, NodeUsage] = {}
    for name, node_annotations, source in nodes:
        text = node_annotations.get(USAGE_ANNOTATION)
        if text is None:
            continue
        where = f"Node {name}: annotation {USAGE_ANNOTATION}"
        try:
            raw = load_one(text, source=where)
        except InputError as exc:
            raise InputError(f"{where}: not valid JSON: {exc.message}", source=source) from None
        try:
            out[name] = parse_usage(raw, where=where, now=now)
        except InputError as exc:
            raise InputError(exc.message, source=source) from None
    return out


def load_usage_file(path: str | Path, *, nodes: Iterable[str], now: float) -> dict[str, NodeUsage]:
    """A YAML map ``node -> {cpu, memory, ...}``; every node must be in the input."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read usage file: {exc.strerror}", source=source) from None
    raw = load_one(data, source=source)
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError("expected a map of node name to {cpu, memory, ...}", source=source)
    known = set(nodes)
    out: dict[str, NodeUsage] = {}
    for name, entry in raw.items():
        if str(name) not in known:
            raise InputError(
                f"node {name!r} is not in the input (nodes: {', '.join(sorted(known)) or 'none'})",
                source=source,
            )
        try:
            out[str(name)] = parse_usage(entry, where=f"node {name}", now=now)
        except InputError as exc:
            raise InputError(exc.message, source=source) from None
    return out
