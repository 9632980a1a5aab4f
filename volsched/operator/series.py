"""What the operator's parts count into: a counter or a gauge of its metrics, labelled or not
(:class:`CounterSeries`, :class:`GaugeSeries`), as prometheus_client's ``Counter`` and ``Gauge`` are and
as their stand-ins before it is imported (:class:`~volsched.operator.metrics.EarlySeries`) are.

Types only: the series themselves, and what is counted into them, are :mod:`volsched.operator.metrics`'.
Here, below the parts that count (the config reloader, the sessions, the metrics), so that each names the
type without importing prometheus_client or another part.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class CounterSeries(Protocol):
    """A counter, or one labelled child of it."""

    def inc(self, amount: float = 1, /) -> None: ...

    def labels(self, *labels: str) -> CounterSeries: ...

    def remove(self, *labels: str) -> None: ...


class GaugeSeries(CounterSeries, Protocol):
    """A gauge, or one labelled child of it: also set to a value, or asked its value when scraped."""

    def set(self, value: float, /) -> None: ...

    def set_function(self, function: Callable[[], float], /) -> None: ...

    def labels(self, *labels: str) -> GaugeSeries: ...
