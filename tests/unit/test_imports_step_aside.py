"""The imports after ready step aside while the sessions work (``volsched.operator.aside``): an import
aside pauses at its modules' statements while the sessions are busy and goes on once they are quiet;
its pauses are bounded (each, one per busy stretch, and in all), so busy sessions never keep it from
ending; an import that fails raises as ``import`` does; the importing thread's trace function is put
back either way."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from volsched.operator import aside
from volsched.operator.aside import Activity, import_aside

#: A module of five statements, each one a call of a Python function made by the module's own body (a
#: pause point).
BODY = """
import {progress} as progress
progress.step(1)
progress.step(2)
progress.step(3)
progress.step(4)
progress.step(5)
"""


@pytest.fixture
def modules(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, list[int]]]:
    """A fresh module to import (its name) and the list its body appends to, statement by statement."""
    stem = f"aside_{request.node.name.replace('[', '_').replace(']', '_')}"
    progress = f"{stem}_progress"
    (tmp_path / f"{progress}.py").write_text(
        "done = []\nhook = None\n\ndef step(i):\n    done.append(i)\n    if hook is not None:\n        hook(i)\n"
    )
    (tmp_path / f"{stem}.py").write_text(BODY.format(progress=progress))
    (tmp_path / f"{stem}_broken.py").write_text("import no_such_module_anywhere_volsched\n")
    sys.path.insert(0, str(tmp_path))
    traced = sys.gettrace()
    sys.settrace(None)  # (under coverage or a debugger, the import aside would not pause)
    try:
        __import__(progress)
        yield stem, sys.modules[progress].done
    finally:
        sys.settrace(traced)
        sys.path.remove(str(tmp_path))
        for name in (stem, progress, f"{stem}_broken"):
            sys.modules.pop(name, None)


def test_an_import_pauses_while_the_sessions_work_and_goes_on_once_they_are_quiet(
    modules: tuple[str, list[int]],
) -> None:
    name, done = modules
    activity = Activity()
    paused = threading.Event()
    activity.on_pause = paused.set
    activity.begin()  # a pod arrived: the sessions work
    ended = threading.Event()
    thread = threading.Thread(
        target=lambda: (
            sys.settrace(None),  # as the fixture: a thread started under coverage is traced
            import_aside([name], activity, longest=3600, budget=3600),
            ended.set(),
        )
    )
    thread.start()
    assert paused.wait(60)
    assert done == [] and not ended.is_set()  # paused inside the module's body, waiting
    pauses = activity.pauses
    activity.end()  # quiet again
    thread.join(60)
    assert ended.is_set() and done == [1, 2, 3, 4, 5] and name in sys.modules
    assert activity.pauses == pauses  # quiet: no pause more


def test_quiet_sessions_make_no_pause(modules: tuple[str, list[int]]) -> None:
    name, done = modules
    activity = Activity()
    import_aside([name], activity)
    assert done == [1, 2, 3, 4, 5] and activity.pauses == 0


def test_sessions_busy_without_a_break_keep_the_import_back_one_pause(modules: tuple[str, list[int]]) -> None:
    """A session that waits for a module the paused import holds half-made (its import lock) keeps the
    sessions busy: the import pauses once, then goes on until it has seen them quiet."""
    name, done = modules
    activity = Activity()
    activity.begin()  # and never quiet again
    import_aside([name], activity, longest=0.01, budget=3600)
    assert done == [1, 2, 3, 4, 5]
    assert activity.pauses == 1


def test_once_quiet_again_the_import_pauses_again_when_the_sessions_are_busy(
    modules: tuple[str, list[int]],
) -> None:
    name, done = modules
    activity = Activity()
    progress = sys.modules[f"{name}_progress"]

    def sessions(step: int) -> None:  # what the sessions do as the module's body runs
        if step == 2:
            activity.end()  # quiet: seen at the next call
        elif step == 3:
            activity.begin()  # a pod arrived: the import pauses before step 4

    progress.hook = sessions
    activity.begin()
    import_aside([name], activity, longest=0.01, budget=3600)
    assert done == [1, 2, 3, 4, 5]
    assert activity.pauses == 2  # before step 1 (outwaited), and before step 4 after quiet was seen


class _Outwaited(Activity):
    """Sessions that stay busy through every pause, each pause lasting exactly what it may (a clock of
    its own, moved by the pauses alone: the budget's arithmetic, not the machine's timing)."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def wait_quiet(self, timeout: float) -> bool:
        self.now += timeout
        return self.quiet()


def test_the_pauses_end_with_their_budget(
    modules: tuple[str, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, done = modules
    activity = _Outwaited()
    monkeypatch.setattr(aside.time, "monotonic", activity.clock)
    progress = sys.modules[f"{name}_progress"]
    progress.hook = lambda step: (activity.end(), activity.begin())  # quiet a moment after each step
    activity.begin()
    import_aside([name], activity, longest=0.01, budget=0.015)
    assert done == [1, 2, 3, 4, 5]
    assert activity.pauses == 2  # 0.01 s, then the 0.005 s left of the budget: none after
    assert activity.paused == pytest.approx(0.015)


def test_an_import_that_fails_raises_and_the_thread_is_traced_as_before(
    modules: tuple[str, list[int]],
) -> None:
    name, _ = modules
    activity = Activity()
    activity.begin()
    before = sys.gettrace()
    with pytest.raises(ModuleNotFoundError, match="no_such_module_anywhere_volsched"):
        import_aside([f"{name}_broken"], activity, longest=0.001, budget=0.01)
    assert sys.gettrace() is before


def test_a_trace_function_already_on_the_thread_is_kept_and_sees_the_modules_lines(
    modules: tuple[str, list[int]],
) -> None:
    """A debugger's or coverage's trace function on the importing thread: the import aside steps back
    (imports without pausing) rather than replace it, so the top-level lines of the modules it imports are
    traced as any other's."""
    name, done = modules
    activity = Activity()
    activity.begin()  # busy: an import aside of its own would pause
    lines: list[int] = []

    def tracer(frame: FrameType, event: str, _arg: Any) -> Callable[..., Any] | None:
        if frame.f_code.co_filename.endswith(f"{name}.py") and frame.f_code.co_name == "<module>":
            return local
        return None

    def local(frame: FrameType, event: str, _arg: Any) -> Callable[..., Any]:
        if event == "line":
            lines.append(frame.f_lineno)
        return local

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        import_aside([name], activity, longest=0.01, budget=0.05)
        kept = sys.gettrace()
    finally:
        sys.settrace(before)
    assert kept is tracer
    assert lines == [2, 3, 4, 5, 6, 7]  # each of the module's statements, seen by the tracer
    assert done == [1, 2, 3, 4, 5] and activity.pauses == 0  # stepped back: no pause


def test_a_trace_function_set_during_the_import_is_kept_after_it(modules: tuple[str, list[int]]) -> None:
    """A debugger that attaches while the import aside runs (it sets its trace function on every thread)
    keeps tracing that thread once the import ends: only the aside's own trace function is taken off."""
    name, done = modules
    progress = sys.modules[f"{name}_progress"]

    def debugger(frame: FrameType, event: str, _arg: Any) -> None:
        return None

    progress.hook = lambda step: sys.settrace(debugger) if step == 3 else None
    try:
        import_aside([name], Activity())
        after = sys.gettrace()
    finally:
        sys.settrace(None)
    assert done == [1, 2, 3, 4, 5]
    assert after is debugger
