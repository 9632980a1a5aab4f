"""volsched.records.dataclass: the standard library's dataclass, its __repr__, __eq__ and __hash__ made at their
first call: for a table of class shapes, each answer the same as the standard library's for the same class
(and the same method in place once called), the class's own methods kept, and volsched's classes made by it;
and the comparisons and hashes an arriving object's way calls made ahead (make_ahead)."""

from __future__ import annotations

import ast
import dataclasses
import math
import pathlib
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from volsched import records


def _shapes(dec: Callable[..., Any]) -> dict[str, tuple[type, list[tuple[Any, ...]]]]:
    """Class shapes made with ``dec``, each with the arguments of a few instances (some equal, some not)."""

    @dec
    class Plain:
        a: int
        b: str = "x"

    @dec(frozen=True)
    class Frozen:
        ns: str
        name: str
        n: int = 0

    @dec(frozen=True)
    class Options:
        a: int
        hidden: int = dataclasses.field(default=0, repr=False)
        ignored: int = dataclasses.field(default=0, compare=False)
        unhashed: int = dataclasses.field(default=0, hash=False)
        hashed_only: int = dataclasses.field(default=0, compare=False, hash=True)

    @dec(frozen=True)
    class One:
        x: float

    @dec(frozen=True)
    class Empty:
        pass

    @dec(eq=False)
    class NoEq:
        a: int

    @dec(repr=False, frozen=True)
    class NoRepr:
        a: int

    @dec(frozen=True, slots=True)
    class Slotted:
        a: int
        b: tuple[int, ...] = ()

    @dec(frozen=True)
    class Base:
        a: int

    @dec(frozen=True)
    class Child(Base):
        b: int = 0

    @dec(kw_only=True)
    class KwOnly:
        a: int
        c: ClassVar[int] = 3

    @dec
    class Nested:
        items: list[Any] = dataclasses.field(default_factory=list)

    @dec(order=True, frozen=True)
    class Ordered:
        a: int

    nan = math.nan
    return {
        "plain": (Plain, [(1,), (1,), (1, "y"), (2,)]),
        "frozen": (Frozen, [("a", "b"), ("a", "b"), ("a", "b", 1), ("b", "a")]),
        "options": (Options, [(1, 2, 3, 4, 5), (1, 9, 9, 9, 9), (1, 2, 3, 4, 6), (2,)]),
        "one field, nan": (One, [(nan,), (nan,), (1.0,), (-0.0,), (0.0,)]),
        "empty": (Empty, [(), ()]),
        "no eq": (NoEq, [(1,), (1,)]),
        "no repr": (NoRepr, [(1,), (1,)]),
        "slots": (Slotted, [(1, (1,)), (1, (1,)), (2,)]),
        "base": (Base, [(1,), (1,)]),
        "child": (Child, [(1, 2), (1, 2), (1, 3)]),
        "kw only": (KwOnly, []),
        "nested": (Nested, [([1],), ([1],), ([],)]),
        "ordered": (Ordered, [(1,), (2,)]),
    }


def _make(cls: type, args: tuple[Any, ...]) -> Any:
    return cls(a=args[0]) if cls.__name__ == "KwOnly" else cls(*args)


def _hash(obj: Any) -> int | str:
    if type(obj).__hash__ is object.__hash__:
        return "identity"
    try:
        return hash(obj)
    except TypeError as exc:
        return f"TypeError: {exc}"


@pytest.mark.parametrize("shape", list(_shapes(dataclasses.dataclass)))
def test_every_answer_is_the_standard_librarys(shape: str) -> None:
    ours_cls, arguments = _shapes(records.dataclass)[shape]
    theirs_cls, _ = _shapes(dataclasses.dataclass)[shape]
    assert (ours_cls.__hash__ is None) is (theirs_cls.__hash__ is None)
    if shape == "kw only":
        arguments = [(1,), (1,), (2,)]
    if shape == "one field, nan":  # the same nan object twice: equal by identity inside the fields' tuple
        shared = float("nan")
        arguments = [*arguments, (shared,), (shared,)]
    ours = [_make(ours_cls, a) for a in arguments]
    theirs = [_make(theirs_cls, a) for a in arguments]
    for o, t in zip(ours, theirs, strict=True):
        if shape == "no repr":  # object's: the address differs
            assert repr(o).startswith(f"<{ours_cls.__module__}.{ours_cls.__qualname__} object at ")
        else:
            assert repr(o) == repr(t)
        assert _hash(o) == _hash(t)
    for i in range(len(ours)):
        for j in range(len(ours)):
            assert (ours[i] == ours[j]) is (theirs[i] == theirs[j]), (i, j)
            assert (ours[i] != ours[j]) is (theirs[i] != theirs[j]), (i, j)
        assert ours[i].__eq__(object()) is theirs[i].__eq__(object())  # NotImplemented both, or the same
        assert ours[i] != theirs[i]  # another class: not equal


def test_the_standard_librarys_method_takes_the_stand_ins_place_at_the_first_call() -> None:
    ours_cls, _ = _shapes(records.dataclass)["frozen"]
    theirs_cls, _ = _shapes(dataclasses.dataclass)["frozen"]
    stand_ins = {name: ours_cls.__dict__[name] for name in ("__repr__", "__eq__", "__hash__")}
    a, b = ours_cls("a", "b"), ours_cls("a", "b")
    assert a == b and hash(a) == hash(b) and repr(a).endswith(".Frozen(ns='a', name='b', n=0)")
    for name, stand_in in stand_ins.items():
        method = ours_cls.__dict__[name]
        assert method is not stand_in, name
        wrapped = getattr(method, "__wrapped__", method)  # __repr__: under the recursion guard
        theirs = theirs_cls.__dict__[name]
        assert wrapped.__code__.co_code == getattr(theirs, "__wrapped__", theirs).__code__.co_code, name


@pytest.mark.parametrize("shape", list(_shapes(dataclasses.dataclass)))
def test_make_now_puts_the_standard_librarys_methods_in_place_before_any_call(shape: str) -> None:
    ours_cls, arguments = _shapes(records.dataclass)[shape]
    theirs_cls, _ = _shapes(dataclasses.dataclass)[shape]
    names = ("__repr__", "__eq__", "__hash__")
    records.make_now(ours_cls)
    for name in names:  # the standard library's method in place, none called yet (a stand-in's code differs)
        method, theirs = ours_cls.__dict__.get(name), theirs_cls.__dict__.get(name)
        if theirs is None or not callable(theirs):  # none made (eq=False), or __hash__ = None
            assert method is theirs, name
            continue
        wrapped = getattr(method, "__wrapped__", method)
        assert wrapped.__code__.co_code == getattr(theirs, "__wrapped__", theirs).__code__.co_code, name
    made = {name: ours_cls.__dict__.get(name) for name in names}
    records.make_now(ours_cls, theirs_cls, int)  # made already, or not ours: left as they are
    assert {name: ours_cls.__dict__.get(name) for name in names} == made
    ours = [_make(ours_cls, a) for a in (arguments if shape != "kw only" else [(1,), (1,), (2,)])]
    theirs_all = [_make(theirs_cls, a) for a in (arguments if shape != "kw only" else [(1,), (1,), (2,)])]
    assert [_hash(o) for o in ours] == [_hash(t) for t in theirs_all]


def test_a_recursive_structure_is_shown_as_the_standard_library_shows_it() -> None:
    ours_cls, _ = _shapes(records.dataclass)["nested"]
    theirs_cls, _ = _shapes(dataclasses.dataclass)["nested"]
    ours, theirs = ours_cls(), theirs_cls()
    ours.items.append(ours)
    theirs.items.append(theirs)
    assert repr(ours) == repr(theirs) == f"{ours_cls.__qualname__}(items=[...])"


def test_a_classs_own_methods_are_kept() -> None:
    @records.dataclass(frozen=True)
    class Own:
        a: int

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 7

    @records.dataclass
    class EqOnly:
        a: int

        def __eq__(self, other: object) -> bool:
            return False

    assert repr(Own(1)) == "own" and Own(1) == Own(2) and hash(Own(1)) == 7
    assert EqOnly.__hash__ is None and not EqOnly(1) == EqOnly(1)  # noqa: SIM201  # its own __eq__


def test_frozen_fields_stay_frozen_and_threads_share_one_method() -> None:
    ours_cls, _ = _shapes(records.dataclass)["frozen"]
    obj = ours_cls("a", "b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        obj.n = 1
    seen: list[int] = []
    threads = [threading.Thread(target=lambda: seen.append(hash(ours_cls("x", "y")))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1 and seen[0] == hash(("x", "y", 0))


def test_volscheds_dataclasses_are_made_by_it() -> None:
    root = pathlib.Path(records.__file__).parent
    direct = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p != pathlib.Path(records.__file__)
        and re.search(
            r"^from dataclasses import .*\bdataclass\b|dataclasses\.dataclass\(", p.read_text(), re.M
        )
    ]
    assert direct == [], (
        "volsched's dataclasses come from volsched.records (`from volsched.records import dataclass`)"
    )


#: Cluster files whose objects (pods, PodGroups, Volcano's kinds, claims of devices) the cache and the
#: sessions take: what an arriving object's way compares or hashes.
ARRIVING = ("first-job.yaml", "volcano-spark.yaml", "dra-gpus.yaml")


def test_what_an_arriving_objects_way_compares_or_hashes_is_made_ahead() -> None:
    """After make_ahead (the operator calls it after ready, before the first pod arrives), the cache's
    applies and the sessions of the examples make no __eq__ or __hash__ at its first call: the first
    pod, PodGroup or claim after ready never pays for one. In a fresh interpreter: this one's tests made
    some already."""
    root = pathlib.Path(records.__file__).parent.parent
    code = textwrap.dedent(
        """
        import contextlib, io, sys
        import volsched.operator  # what the operator has imported by ready
        from volsched import records
        from volsched.cli import main
        records.make_ahead()
        left = {f: f.__qualname__ for f in records._MAKERS if f.__name__ in ("__eq__", "__hash__")}
        for path in sys.argv[1:]:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                main(["simulate", "-f", path, "--sessions", "20"])
        print(sorted(name for f, name in left.items() if f not in records._MAKERS))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *(str(root / "examples" / name) for name in ARRIVING)],
        capture_output=True, text=True, cwd=root, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_volscheds_dataclasses_have_a_docstring_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard library writes a docstring from the signature of a dataclass without one, with
    ``inspect.signature`` as the class is made (about 0.15 ms a class at import, on the way to ready):
    every volsched dataclass has its own, and so do the classes its stand-ins make their methods on."""
    root = pathlib.Path(records.__file__).parent
    missing = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            named = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
            dataclass = any(isinstance(d, ast.Name) and d.id == "dataclass" for d in named)
            if dataclass and not ast.get_docstring(node):
                missing.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    assert missing == [], (
        "give each a docstring (one line: what it is); without one the standard library writes it from "
        "inspect.signature as the class is made, on volsched run's way to ready"
    )
    signatures: list[object] = []
    real = dataclasses.inspect.signature  # type: ignore[attr-defined]
    monkeypatch.setattr(
        dataclasses.inspect, "signature", lambda *a, **k: signatures.append(a) or real(*a, **k)
    )

    @records.dataclass(frozen=True)
    class Documented:
        """Its own."""

        a: int

    obj = Documented(1)
    assert obj == Documented(1) and hash(obj) == hash((1,)) and repr(obj).endswith("Documented(a=1)")
    assert signatures == []
