"""volsched's ``@dataclass``: the standard library's, with ``__repr__``, ``__eq__`` and ``__hash__`` made at their
first call (by the standard library, on a class of the same fields) rather than when the class is made;
``__init__`` (and a frozen class's ``__setattr__``/``__delattr__``) as before. The same answers and, once
called, the same methods; ``order=True`` or ``unsafe_hash=True`` go to the standard library whole. Not a
new kind of class: why, and what differs (``__dataclass_params__``), in docs/design/modules.md#records.
:func:`made_ahead` marks a class whose ``__eq__`` and ``__hash__`` an arriving object's way calls, and
:func:`make_ahead` makes those before one arrives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")

#: Each stand-in not yet replaced, and what makes its method (see :func:`make_now`).
_MAKERS: dict[Callable[..., Any], Callable[[], Callable[..., Any]]] = {}
#: The classes :func:`make_ahead` makes the methods of (see :func:`made_ahead`).
_AHEAD: list[type] = []


@overload
def dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def dataclass(
    *,
    init: bool = True,
    repr: bool = True,
    eq: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    frozen: bool = False,
    match_args: bool = True,
    kw_only: bool = False,
    slots: bool = False,
    weakref_slot: bool = False,
) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: Any = None, /, **options: Any) -> Any:
    """:func:`dataclasses.dataclass`, its ``__repr__``, ``__eq__`` and ``__hash__`` made at first use."""

    def wrap(c: type[_T]) -> type[_T]:
        return _lazy_dataclass(c, **options)

    return wrap if cls is None else wrap(cls)


def _lazy_dataclass(
    cls: type[_T],
    *,
    repr: bool = True,  # the standard library's name
    eq: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    frozen: bool = False,
    **options: Any,
) -> type[_T]:
    if order or unsafe_hash:
        return dataclasses.dataclass(
            cls, repr=repr, eq=eq, order=order, unsafe_hash=unsafe_hash, frozen=frozen, **options
        )
    own_repr, own_eq = "__repr__" in cls.__dict__, "__eq__" in cls.__dict__
    own_hash = cls.__dict__.get("__hash__", dataclasses.MISSING)
    # The standard library's rule: the __hash__ of None that Python sets on a class defining __eq__ is
    # not the class's own.
    explicit_hash = not (own_hash is dataclasses.MISSING or (own_hash is None and own_eq))
    made: type[_T] = dataclasses.dataclass(cls, repr=False, eq=False, frozen=frozen, **options)
    fields = dataclasses.fields(made)  # type: ignore[arg-type]
    if repr and not own_repr:
        _stand_in(made, "__repr__", [f.name for f in fields if f.repr], repr=True)
    if eq:
        if not own_eq:
            _stand_in(made, "__eq__", [f.name for f in fields if f.compare], eq=True)
        if not explicit_hash:
            if frozen:
                hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
                _stand_in(made, "__hash__", hashed, eq=False, unsafe_hash=True)
            else:
                made.__hash__ = None  # type: ignore[assignment]
    return made


def _stand_in(cls: type, name: str, names: list[str], **options: bool) -> None:
    """Put on ``cls`` a stand-in for its method ``name``: at its first call, the standard library makes the
    method (``options``) on a class of the fields ``names``, which replaces the stand-in on ``cls``."""

    def make() -> Callable[..., Any]:
        # A docstring of its own: the standard library writes one from the signature of a class without
        # (``inspect.signature``, at import; what it cost: docs/benchmarks, the fifteenth pass's start-up).
        shadow = type(cls.__name__, (), {"__annotations__": dict.fromkeys(names, "object"), "__doc__": name})
        shadow.__qualname__ = cls.__qualname__
        made: type = dataclasses.dataclass(
            shadow, **{"init": False, "repr": False, "eq": False, "match_args": False, **options}
        )
        method: Callable[..., Any] = made.__dict__[name]
        setattr(cls, name, method)
        _MAKERS.pop(stand_in, None)
        return method

    def stand_in(self: Any, *args: Any) -> Any:
        method = cls.__dict__[name]
        if method is stand_in:  # another thread may have made it meanwhile: the same method
            method = make()
        return method(self, *args)

    stand_in.__name__ = name
    stand_in.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, stand_in)
    _MAKERS[stand_in] = make


def make_now(*classes: type, names: tuple[str, ...] = ("__repr__", "__eq__", "__hash__")) -> None:
    """Make now the methods ``names`` of ``classes`` put off to their first call (a class not of this
    module's, or whose methods are made, is left as it is): where that first call would be on a path that
    waits, made ahead on a thread where it is in nobody's way."""
    for cls in classes:
        for name in names:
            method = cls.__dict__.get(name)
            make = _MAKERS.get(method) if callable(method) else None
            if make is not None:
                make()


def made_ahead(cls: type[_T]) -> type[_T]:
    """Mark a class (made by :func:`dataclass`) whose objects are compared or hashed on an arriving object's
    way: its watch event decoded and applied to the cache, its first session. :func:`make_ahead` makes
    those methods before such an object arrives."""
    _AHEAD.append(cls)
    return cls


def make_ahead() -> None:
    """Make now the ``__eq__`` and ``__hash__`` of every class marked :func:`made_ahead` (of the modules
    imported so far); their ``__repr__`` is left to its first call (a log line's)."""
    make_now(*_AHEAD, names=("__eq__", "__hash__"))


def copier(cls: type[_T]) -> Callable[[_T], _T]:
    """A function that copies an instance of dataclass ``cls`` field by field, written out from its
    fields (as dataclasses write their ``__init__``): ``object.__new__`` and one store per slot, faster
    than calling ``cls`` with every field (a task has fifty) and than ``copy.copy``."""
    body = "".join(f"    c.{f.name} = t.{f.name}\n" for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    exec(f"def copy(t):\n    c = new(cls)\n{body}    return c\n", namespace)
    copy: Callable[[_T], _T] = namespace["copy"]
    return copy
