"""Resource quantities and resource vectors.

A resource map from Kubernetes (``{"cpu": "500m", "memory": "4Gi"}``) becomes a numpy vector over a
:class:`ResourceSpace`, the ordered list of resource names a snapshot knows about. ``cpu`` is in cores,
``memory`` in bytes, everything else (``pods``, ``nvidia.com/gpu``, ...) in counts.

This module is pure computation: no I/O, no Kubernetes client. Quantities are read with Kubernetes'
grammar and arithmetic (apimachinery ``resource.Quantity``: a decimal, then a binary suffix ``Ki``..``Ei``
= 1024^k, a decimal suffix ``n``..``E`` = 1000^k, or a decimal exponent); the unit tests check every
result against ``kubernetes.utils.parse_quantity``, which is not imported here because it loads the whole
API client.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from volsched.model.errors import InputError

Vector = npt.NDArray[np.float64]

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
BASE_RESOURCES = (CPU, MEMORY, PODS)

#: Slack for float comparisons of resource amounts (a millicore is 1e-3; a byte is 1).
EPS = 1e-6

#: What an old kubelet reports in allocatable and no pod asks for (in-tree volume limits, which
#: kube-scheduler no longer reads): not placed by.
_IGNORED_PREFIX = "attachable-volumes-"
#: Node-local storage and huge pages: where a pod fits, as kube-scheduler's NodeResourcesFit reads them
#: (a pod past a node's allocatable of them is refused by its kubelet, OutOf<resource>), but no part of
#: a queue's fair share (as the ``pods`` count; Volcano's shares leave ephemeral-storage out too).
EPHEMERAL_STORAGE = "ephemeral-storage"


#: Kubernetes' quantity grammar (apimachinery ``resource.Quantity``; the CRDs' pattern is the same).
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE][+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))?$"
)
#: Suffix -> (base, exponent): the number is multiplied by base**exponent, as Kubernetes does.
_DECIMAL_SUFFIXES = {"n": -3, "u": -2, "m": -1, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_SUFFIXES: dict[str, tuple[int, int]] = {
    **{p + "i": (1024, k) for k, p in enumerate("KMGTPE", start=1)},
    **{p: (1000, k) for p, k in _DECIMAL_SUFFIXES.items()},
}
#: "No quantity may represent a number greater than 2^63-1 in magnitude" (resource.Quantity).
MAX_QUANTITY = 2**63 - 1
_RANGE = "a quantity must be finite, from 0 to 2^63-1"


class _OutOfRange(ValueError):
    pass


@lru_cache(maxsize=65536)
def _parse_cached(text: str) -> float:
    match = _QUANTITY.match(text) if len(text) <= 64 else None
    if match is None:
        raise ValueError("not a Kubernetes quantity like 500m, 4Gi, 1e3 or 2")
    scale = _SUFFIXES.get(match["suffix"] or "")
    if scale is None:  # no suffix, or a decimal exponent: the text is a decimal as it stands
        try:
            value = Decimal(text)
        except InvalidOperation:  # a fractional exponent (1e2.5): the grammar allows it, Kubernetes not
            raise ValueError("the exponent of a quantity is a whole number") from None
    else:
        base, exponent = scale
        value = Decimal(match["number"]) * Decimal(base) ** exponent
    if not 0 <= value <= MAX_QUANTITY:
        raise _OutOfRange(_RANGE)
    return float(value)


def parse_amount(value: Any, *, where: str) -> float:
    """Parse one Kubernetes quantity (``500m``, ``4Gi``, ``1e3``, ``2``) into a float.

    As Kubernetes validates them: the quantity grammar, finite, not negative and at most 2^63-1.
    ``where`` names the object and field for the error message, e.g. ``"Pod ns/p1: spec.containers[0]..."``.
    """
    if isinstance(value, bool) or value is None:
        raise InputError(f"{where}: expected a quantity, got {value!r}")
    if isinstance(value, int | float):
        if (isinstance(value, float) and not math.isfinite(value)) or not 0 <= value <= MAX_QUANTITY:
            raise InputError(f"{where}: {_RANGE}, got {value:.6g}")
        return float(value)
    if not isinstance(value, str):
        raise InputError(f"{where}: expected a quantity, got {type(value).__name__}")
    try:
        return _parse_cached(value)
    except _OutOfRange:
        raise InputError(f"{where}: {_RANGE}, got {value!r}") from None
    except (ValueError, ArithmeticError) as exc:
        raise InputError(f"{where}: malformed quantity {value[:64]!r} ({exc})") from None


def as_counted(name: str, amount: float) -> float:
    """``amount`` of ``name`` as Kubernetes' scheduler and kubelet count it: cpu in whole millicores,
    anything else in whole units, rounded up (resource.Quantity's MilliValue and Value). What a float
    sum made a hair over whole (0.1 + 0.2) is whole; past 2^52 every float is."""
    unit = 1000.0 if name == CPU else 1.0
    scaled = amount * unit
    whole = math.floor(scaled)
    if scaled - whole <= scaled * 1e-13:
        return amount if whole == scaled else whole / unit
    return (whole + 1) / unit


def parse_resource_map(raw: Any, *, where: str) -> dict[str, float]:
    """Parse a Kubernetes resource map into ``{name: amount}``; ``None`` is an empty map."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a map of resource quantities, got {type(raw).__name__}")
    out: dict[str, float] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"{where}: resource names must be non-empty strings, got {name!r}")
        out[name] = parse_amount(value, where=f"{where}.{name}")
    return out


def is_schedulable_resource(name: str) -> bool:
    return not name.startswith(_IGNORED_PREFIX)


def is_shared_resource(name: str) -> bool:
    """Whether ``name`` counts toward fair shares: all but the ``pods`` count, node-local storage and
    huge pages (they decide where a pod fits only)."""
    return name != PODS and name != EPHEMERAL_STORAGE and not name.startswith("hugepages-")


class ResourceSpace:
    """The ordered resource names of one snapshot; turns maps into vectors and back."""

    __slots__ = ("_index", "names", "share_dims", "share_mask")

    def __init__(self, extra: Iterable[str] = ()) -> None:
        names = list(BASE_RESOURCES)
        for name in sorted(set(extra)):
            if name not in names and is_schedulable_resource(name):
                names.append(name)
        self.names: tuple[str, ...] = tuple(names)
        self._index = {n: i for i, n in enumerate(self.names)}
        #: The dimensions that count toward fair shares (:func:`is_shared_resource`).
        self.share_mask = np.array([is_shared_resource(n) for n in self.names], dtype=bool)
        #: The same as indices, for loops over plain floats (``Vector.tolist()``) that skip the arrays.
        self.share_dims: tuple[int, ...] = tuple(d for d, n in enumerate(self.names) if is_shared_resource(n))

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        return self._index[name]

    def zeros(self) -> Vector:
        return np.zeros(len(self.names), dtype=np.float64)

    def vector(self, amounts: Mapping[str, float]) -> Vector:
        vec = self.zeros()
        for name, amount in amounts.items():
            i = self._index.get(name)
            if i is not None:
                vec[i] = amount
        return vec

    def to_dict(self, vec: Vector, *, keep_zero: bool = False) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, amount in zip(self.names, vec.tolist(), strict=True):
            if keep_zero or abs(amount) > EPS:
                out[name] = round(amount, 6)
        return out

    def describe(self, index: int | np.integer[Any], amount: float) -> str:
        """Render an amount of one dimension for people: ``2``, ``1.5``, ``4Gi``."""
        return format_amount(self.names[int(index)], float(amount))


#: Byte units, largest first: binary (what ``Gi`` requests are written in) and decimal (``3G``).
_BINARY = tuple((u, float(1 << (10 * (6 - i)))) for i, u in enumerate(("Ei", "Pi", "Ti", "Gi", "Mi", "Ki")))
_DECIMAL = tuple((u, 1000.0 ** (6 - i)) for i, u in enumerate(("E", "P", "T", "G", "M", "k")))


def is_bytes(name: str) -> bool:
    """Whether resource ``name`` is counted in bytes (memory, storage, huge pages)."""
    return name == MEMORY or name.endswith("storage") or name.startswith("hugepages-")


def format_amount(name: str, amount: float) -> str:
    """An amount of resource ``name`` for people, never in exponent notation: bytes in the unit that says
    them exactly in at most four characters (``3G``, ``1.5Gi``, ``1000Mi``, ``512``), else in binary
    units to three significant figures (``2.79Gi``, ``118Mi``); other resources in plain decimals to the thousandth
    (``2``, ``0.25``, ``1.5``, ``12000``; ``<0.001`` for less, not 0). The one formatter of the amounts in
    events, reasons and the simulator's tables (Kubernetes quantities for status are ``kube.status``'s)."""
    if amount < 0:
        return "-" + format_amount(name, -amount)
    if not math.isfinite(amount):
        return str(amount)
    if is_bytes(name):
        exact: list[str] = []
        for unit, size in (*_BINARY, *_DECIMAL):
            number = f"{round(amount / size, 2):.2f}".rstrip("0").rstrip(".")
            if amount >= size and abs(amount - round(amount / size, 2) * size) < 0.5 and len(number) <= 4:
                exact.append(number + unit)  # within a byte, in at most four characters
        if exact:  # the shortest: the unit it was most likely written in (binary first on a tie)
            return min(exact, key=len)
        for unit, size in _BINARY:
            if amount >= size:
                return _figures(amount / size) + unit
        return _figures(amount) if amount < 1 else f"{round(amount)}"
    text = f"{amount:.3f}".rstrip("0").rstrip(".")
    return "<0.001" if text == "0" and amount > 0 else text


def _figures(value: float) -> str:
    """``value`` (under 1024) to three significant figures, in plain decimals: ``2.79``, ``27.9``, ``279``."""
    digits = 2 if value < 10 else 1 if value < 100 else 0
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") if digits else f"{value:.0f}"


def stack_rows(vectors: Sequence[Vector], width: int) -> npt.NDArray[np.float64]:
    """``vectors`` (each ``width`` long) as the rows of one matrix: ``np.stack``'s result, without its
    three Python passes over the list (every session, over every job)."""
    if not vectors:
        return np.zeros((0, width))
    return np.concatenate(vectors).reshape(len(vectors), width)


def fits(request: Vector, available: Vector) -> bool:
    return bool(np.all(request <= available + EPS))
