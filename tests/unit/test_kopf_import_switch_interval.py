"""While kopf is imported on a thread beside the first sessions, the interpreter hands the GIL over
often: the session thread and a bind's answer wait at most that long for it, then the interval is what
it was."""

from __future__ import annotations

import sys

import pytest

from volsched.operator import IMPORT_SWITCH_INTERVAL, _switching_often


def test_the_switch_interval_is_short_meanwhile_and_restored_after() -> None:
    before = sys.getswitchinterval()
    with _switching_often():
        assert sys.getswitchinterval() == pytest.approx(IMPORT_SWITCH_INTERVAL)
        assert before > IMPORT_SWITCH_INTERVAL
    assert sys.getswitchinterval() == before


def test_the_switch_interval_is_restored_when_the_import_fails() -> None:
    before = sys.getswitchinterval()
    with pytest.raises(ImportError), _switching_often():
        raise ImportError("kopf")
    assert sys.getswitchinterval() == before


def test_a_shorter_interval_set_already_is_kept() -> None:
    before = sys.getswitchinterval()
    sys.setswitchinterval(IMPORT_SWITCH_INTERVAL / 2)
    try:
        with _switching_often():
            assert sys.getswitchinterval() == pytest.approx(IMPORT_SWITCH_INTERVAL / 2)
        assert sys.getswitchinterval() == pytest.approx(IMPORT_SWITCH_INTERVAL / 2)
    finally:
        sys.setswitchinterval(before)
