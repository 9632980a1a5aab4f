"""A strategy's ``params``, read as the descheduler names them: :class:`Params` (one typed read a key;
an unknown key is refused with the known ones named), :class:`PodFilter` (the per-strategy ``namespaces``
and ``labelSelector``) and ``excludeOwnerKinds``.

Not what a strategy does with them (``strategies/``), and not the plugin's own arguments (``__init__.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from volsched.framework.plugin import NUMBER_LIMIT
from volsched.model.errors import InputError
from volsched.model.vocabulary import Task
from volsched.records import dataclass

#: A resource name as Kubernetes writes one (``cpu``, ``nvidia.com/gpu``, ``hugepages-2Mi``).
_RESOURCE_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


class Params:
    """A strategy's ``params`` map, read key by key; unknown keys are an error naming the known ones."""

    def __init__(self, raw: Mapping[str, Any], where: str) -> None:
        self.raw = raw
        self.where = where
        self.read: set[str] = set()

    def error(self, key: str, message: str) -> InputError:
        return InputError(f"{self.where}.params.{key}: {message}")

    def get(self, key: str) -> Any:
        self.read.add(key)
        return self.raw.get(key)

    def number(self, key: str, default: float | None, *, minimum: float = 0, integer: bool = False) -> float:
        value = self.get(key)
        if value is None:
            if default is None:
                raise InputError(f"{self.where}: params.{key} is required")
            return default
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not minimum <= value <= NUMBER_LIMIT
        ):
            raise self.error(key, f"expected a number >= {minimum:g} and <= {NUMBER_LIMIT:g}, got {value!r}")
        if integer and value != int(value):
            raise self.error(key, f"expected an integer, got {value!r}")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.error(key, f"expected a list of strings, got {value!r}")
        return tuple(value)

    def states(self, key: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
        """A list of strings, each one of ``allowed``."""
        out = self.strings(key)
        unknown = [v for v in out if v not in allowed]
        if unknown:
            raise self.error(key, f"unknown {', '.join(unknown)}; known: {', '.join(allowed)}")
        return out

    def integers(self, key: str) -> tuple[int, ...]:
        value = self.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and abs(v) <= 2**31 for v in value
        ):
            raise self.error(key, f"expected a list of integers, got {value!r}")
        return tuple(value)

    def thresholds(self, key: str) -> dict[str, float]:
        """A required map of resource names (cpu, memory or mem, pods, an extended resource such as
        ``nvidia.com/gpu``) to percentages; only the resources it names are looked at."""
        raw = self.get(key)
        at = f"{self.where}.params.{key}"
        if not isinstance(raw, Mapping) or not raw:
            raise InputError(f"{at}: expected a map of resources (cpu, memory, pods, ...) to percentages")
        out: dict[str, float] = {}
        for name, value in raw.items():
            resource = "memory" if name == "mem" else str(name)
            if not _RESOURCE_NAME.fullmatch(resource):
                raise InputError(f"{at}: {name!r} is not a resource name")
            if resource in out:
                raise InputError(f"{at}: {resource} is given twice")
            if isinstance(value, str):
                try:
                    value = float(value.rstrip("%"))
                except ValueError:
                    raise InputError(f"{at}.{name}: expected a percentage 0..100, got {value!r}") from None
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
                raise InputError(f"{at}.{name}: expected a percentage 0..100, got {value!r}")
            out[resource] = float(value)
        return dict(sorted(out.items()))

    def done(self) -> None:
        unknown = sorted(set(map(str, self.raw)) - self.read)
        if unknown:
            raise InputError(
                f"{self.where}: unknown param(s) {', '.join(unknown)}; known: {', '.join(sorted(self.read))}"
            )


@dataclass(frozen=True)
class PodFilter:
    """The descheduler's per-strategy ``namespaces`` ({include: [...]} or {exclude: [...]}) and
    ``labelSelector`` (matchLabels, matchExpressions with In, NotIn, Exists, DoesNotExist)."""

    include: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[tuple[str, str, frozenset[str]], ...] = ()

    @classmethod
    def parse(cls, params: Params, *, labels: bool = True) -> PodFilter:
        ns = params.get("namespaces")
        include: frozenset[str] | None = None
        exclude: frozenset[str] = frozenset()
        if ns is not None:
            if not isinstance(ns, Mapping) or set(ns) - {"include", "exclude"}:
                raise params.error("namespaces", "expected a map with include or exclude (a list of names)")
            if ns.get("include") and ns.get("exclude"):
                raise params.error("namespaces", "give include or exclude, not both")
            for part in ("include", "exclude"):
                names = ns.get(part)
                if names is not None and (
                    not isinstance(names, list) or not all(isinstance(n, str) for n in names)
                ):
                    raise params.error(f"namespaces.{part}", f"expected a list of namespaces, got {names!r}")
            include = frozenset(ns["include"]) if ns.get("include") else None
            exclude = frozenset(ns.get("exclude") or ())
        if not labels:
            return cls(include, exclude)
        selector = params.get("labelSelector")
        if selector is None:
            return cls(include, exclude)
        if not isinstance(selector, Mapping) or set(selector) - {"matchLabels", "matchExpressions"}:
            raise params.error("labelSelector", "expected a map with matchLabels and/or matchExpressions")
        match = selector.get("matchLabels") or {}
        if not isinstance(match, Mapping):
            raise params.error("labelSelector.matchLabels", "expected a map of labels")
        exprs = []
        for i, e in enumerate(selector.get("matchExpressions") or []):
            op = e.get("operator") if isinstance(e, Mapping) else None
            if op not in ("In", "NotIn", "Exists", "DoesNotExist") or not isinstance(e.get("key"), str):
                raise params.error(
                    f"labelSelector.matchExpressions[{i}]",
                    "needs a key and an operator In, NotIn, Exists or DoesNotExist",
                )
            values = e.get("values") or []
            if op in ("In", "NotIn") and not values:
                raise params.error(f"labelSelector.matchExpressions[{i}]", f"operator {op} needs values")
            exprs.append((str(e["key"]), str(op), frozenset(str(v) for v in values)))
        return cls(
            include,
            exclude,
            tuple(sorted((str(k), str(v)) for k, v in match.items())),
            tuple(exprs),
        )

    def admits(self, task: Task) -> bool:
        if self.include is not None and task.namespace not in self.include:
            return False
        if task.namespace in self.exclude:
            return False
        if any(task.labels.get(k) != v for k, v in self.match_labels):
            return False
        for key, op, values in self.expressions:
            present = key in task.labels
            if op == "In" and not (present and task.labels[key] in values):
                return False
            if op == "NotIn" and present and task.labels[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
        return True


def owner_kinds_excluded(task: Task, kinds: tuple[str, ...]) -> bool:
    """Whether ``task`` is owned by one of ``kinds`` (the ``excludeOwnerKinds`` param)."""
    return bool(kinds) and any(k in kinds for k in task.runtime.owner_kinds)
