"""The type of a raw Kubernetes object (a decoded JSON or YAML map) as the edges pass it around, and the
few metadata reads the edges (cache, watches, writer, simulator) make on one before it is decoded.

Not decoding: building the scheduler's specs out of a raw object is :mod:`volsched.model.decode`'s job.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

#: A raw object as read: a watch event's, a YAML document's, a patch's body.
Raw = Mapping[str, Any]
#: A raw object being built or trimmed in place (the watch's pruned copies).
RawDict = dict[str, Any]


def meta_of(obj: Raw) -> Raw:
    """``metadata``, or an empty map when the object has none."""
    return obj.get("metadata") or {}


def uid_of(obj: Raw) -> str:
    """``metadata.uid`` as a string ("" when unset)."""
    return str(meta_of(obj).get("uid") or "")


def version_of(obj: Raw) -> str:
    """``metadata.resourceVersion`` as a string ("" when unset)."""
    return str(meta_of(obj).get("resourceVersion") or "")


# --- shared read-only parts ---------------------------------------------------------------------------------


def _refused(self: object, *args: object, **kwargs: object) -> None:
    raise TypeError(f"a {type(self).__name__} is shared by many objects and read-only: copy it to change it")


class FrozenMap(dict[str, Any]):
    """A map many raw objects share (the spec of the pods of one template, :mod:`volsched.kube.prune`):
    read as a dict is (a dict subclass: ``isinstance(m, dict)``, JSON encoders take it), refusing every
    change in place with a ``TypeError``, so that one object's change cannot reach the others; a copy
    (``dict(m)``, ``{**m}``, :mod:`copy`, pickle) is a plain dict that may be changed. ``memo``: what a
    reader made of it once (the model's parse of a pod's spec), kept with it for the others. ``of``: the
    shared map this one is, but for fields its object has of its own (:func:`over`), else None."""

    __slots__ = ("memo", "of")
    memo: Any
    of: FrozenMap | None

    __setitem__ = __delitem__ = __ior__ = _refused  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _refused  # type: ignore[assignment]

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class FrozenList(list[Any]):
    """A list many raw objects share, read-only as :class:`FrozenMap` is (a copy is a plain list)."""

    __slots__ = ()

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refused  # type: ignore[assignment]
    append = extend = insert = pop = remove = clear = sort = reverse = _refused

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(v, memo) for v in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def freeze(value: Any) -> Any:
    """``value`` (decoded JSON: maps, lists, scalars) with every map a :class:`FrozenMap` and every list a
    :class:`FrozenList`, nested (new objects; ``value`` is left as it is); a ``memo`` of None."""
    if isinstance(value, dict):
        out = FrozenMap({k: freeze(v) for k, v in value.items()})
        out.memo = out.of = None
        return out
    if isinstance(value, list):
        return FrozenList([freeze(v) for v in value])
    return value


def over(shared: FrozenMap, **own: Any) -> FrozenMap:
    """``shared`` with the fields ``own`` of one object's own (a bound pod's node) set, read-only as it
    is: its other fields are ``shared``'s (the same objects), and it is ``of`` ``shared``, whose ``memo``
    keeps what a reader makes of the fields they share."""
    out = FrozenMap({**shared, **own})
    out.memo = None
    out.of = shared
    return out
