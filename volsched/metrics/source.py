"""What every metrics source has in common: the protocol, node matching and sample checks.

A *source* turns one metrics backend (Prometheus, the custom metrics API, Elasticsearch) into
``dict[node name, NodeUsage]`` with one blocking call, :meth:`UsageSource.fetch`. Sources raise
:class:`SourceError` (or anything else) when the backend is unreachable or answers garbage as a
whole; the collector catches that. A single bad node (NaN, negative, missing series) is dropped by
the source, without spoiling the others, using the helpers here.

This module is not the collector (no threads, no caching, no staleness): see
:mod:`volsched.metrics.collector`.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from volsched.model.usage import NodeUsage

__all__ = [
    "PERCENT_TOLERANCE",
    "NodeIndex",
    "NodeTargets",
    "SourceError",
    "UsageSource",
    "clean_percent",
    "strip_port",
    "summarize",
]

log = logging.getLogger(__name__)

#: Node names to fetch, or node name -> addresses it is also known by (InternalIP, hostname).
#: ``None`` means "every node the source knows, keyed by the source's own host identifier".
NodeTargets = Sequence[str] | Mapping[str, Collection[str]] | None

#: Percentages slightly outside 0..100 (rate() jitter) are clamped; further out they are garbage.
PERCENT_TOLERANCE = 1.0


class SourceError(RuntimeError):
    """The backend could not be asked, or its answer as a whole is unusable."""


@runtime_checkable
class UsageSource(Protocol):
    """One metrics backend. ``fetch`` blocks (the collector runs it in a thread)."""

    name: str

    def fetch(self, nodes: NodeTargets = None) -> dict[str, NodeUsage]:
        """Usage of the requested nodes that the backend has data for (missing nodes are absent)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def strip_port(instance: str) -> str:
    """``10.0.0.1:9100`` -> ``10.0.0.1``; ``[fd00::1]:9100`` -> ``fd00::1``; ``node-a`` unchanged."""
    text = instance.strip()
    if text.startswith("["):
        end = text.find("]")
        return text[1:end] if end > 0 else text
    if text.count(":") == 1:
        return text.split(":", 1)[0]
    return text


class NodeIndex:
    """Maps identifiers a backend reports (node label, instance host, hostname) to node names."""

    def __init__(self, nodes: NodeTargets) -> None:
        self.wanted: frozenset[str] | None
        self._by_address: dict[str, str] = {}
        if nodes is None:
            self.wanted = None
            return
        if isinstance(nodes, Mapping):
            pairs: Iterable[tuple[str, Collection[str]]] = nodes.items()
        else:
            pairs = ((name, ()) for name in nodes)
        names = []
        for name, addresses in pairs:
            names.append(name)
            for address in addresses:
                self._by_address.setdefault(strip_port(address).lower(), name)
        # A node's own name always wins over another node's address.
        for name in names:
            self._by_address[name.lower()] = name
        self.wanted = frozenset(names)

    def resolve(self, *identifiers: str | None) -> str | None:
        """The node name of the first identifier that matches (all when no node list was given)."""
        for ident in identifiers:
            if not ident:
                continue
            host = strip_port(ident)
            if self.wanted is None:
                return host
            name = self._by_address.get(host.lower()) or self._by_address.get(ident.lower())
            if name is not None:
                return name
        return None


def clean_percent(value: object) -> float | None:
    """A usable percentage 0..100 from ``value``, or ``None`` for NaN/inf/non-numeric/out of range."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    elif isinstance(value, int | float):
        number = float(value)
    else:
        return None
    if not math.isfinite(number) or number < -PERCENT_TOLERANCE or number > 100 + PERCENT_TOLERANCE:
        return None
    return min(100.0, max(0.0, number))


def summarize(samples: Iterable[object]) -> tuple[float, float] | None:
    """Mean and population standard deviation of the usable percentage samples, or ``None``.

    Unusable samples (NaN, non-numeric) are skipped; if any sample is outside 0..100 (beyond
    :data:`PERCENT_TOLERANCE`) the whole series is considered garbage and ``None`` is returned.
    """
    values: list[float] = []
    for raw in samples:
        if isinstance(raw, float) and math.isnan(raw):
            continue
        if isinstance(raw, str) and raw.strip().lower() in ("nan", "+nan", "-nan"):
            continue
        clean = clean_percent(raw)
        if clean is None:
            return None
        values.append(clean)
    if not values:
        return None
    mean = statistics.fmean(values)
    std = statistics.pstdev(values, mu=mean) if len(values) > 1 else 0.0
    return mean, std
