"""The imports after ready step aside while the sessions work (``volsched.operator.aside``): an import
aside pauses at its modules' statements while the sessions are busy and goes on once they are quiet;
its pauses are bounded (each, one per busy stretch, and in all), so busy sessions never keep it from
ending; an import that fails raises as ``import`` does; the importing thread's trace function is put
back either way."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

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
    try:
        __import__(progress)
        yield stem, sys.modules[progress].done
    finally:
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
        target=lambda: (import_aside([name], activity, longest=3600, budget=3600), ended.set())
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


def test_the_pauses_end_with_their_budget(modules: tuple[str, list[int]]) -> None:
    name, done = modules
    activity = Activity()
    progress = sys.modules[f"{name}_progress"]
    progress.hook = lambda step: (activity.end(), activity.begin())  # quiet a moment after each step
    activity.begin()
    import_aside([name], activity, longest=0.01, budget=0.015)
    assert done == [1, 2, 3, 4, 5]
    assert 2 <= activity.pauses <= 5  # a pause before each step, while the budget lasted
    assert activity.paused >= 0.01


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
