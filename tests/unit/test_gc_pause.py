"""Sections that pause the cyclic collector from different threads, overlapping in any order; and what such
a section made frozen at once."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit._cycle_harness import operator_at
from volsched import gcpause
from volsched.gcpause import (
    freeze_all,
    pause_collector,
    pause_from_start,
    resume_after_start,
    resume_collector,
)


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_overlapping_sections_keep_the_collector_off_until_the_last_one_leaves() -> None:
    pause_collector()  # a snapshot, say
    pause_collector()  # a YAML load on another thread
    resume_collector()  # the snapshot ends first
    assert not gc.isenabled()  # the load is still making objects
    resume_collector()
    assert gc.isenabled()


def test_a_section_that_found_the_collector_off_leaves_it_off() -> None:
    gc.disable()
    pause_collector()
    resume_collector()
    assert not gc.isenabled()


def test_the_operators_prelist_leaves_the_collector_off_while_another_section_is_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prelist pauses the collector through the same counted section as a snapshot taken meanwhile
    on another thread: ending first, it must not turn the collector back on under that snapshot."""
    with operator_at(tmp_path) as op:
        monkeypatch.setattr(op.feed, "_prelist", lambda: None)  # listed nothing
        try:
            pause_collector()  # a snapshot on another thread
            op.prelist()
            assert not gc.isenabled()
            resume_collector()
            assert gc.isenabled()
        finally:
            gc.unfreeze()


def test_the_section_from_the_start_is_opened_once_and_closed_once() -> None:
    pause_from_start()  # volsched run, before its imports
    pause_from_start()  # (a second call opens nothing more)
    assert not gc.isenabled()
    pause_collector()  # the first listing's own section
    resume_collector()
    assert not gc.isenabled()  # still the start's
    resume_after_start()
    assert gc.isenabled()
    resume_after_start()  # (closed already: nothing)
    assert gc.isenabled()
    pause_collector()
    assert not gc.isenabled()  # the count was not taken below zero
    resume_collector()


def test_the_operators_prelist_freezes_what_the_start_made_then_turns_the_collector_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``volsched run`` pauses the collector before its imports; the first listing's freeze takes what
    they made out of the collector's way with the cache, and only then is the collector on again."""
    with operator_at(tmp_path) as op:
        monkeypatch.setattr(op.feed, "_prelist", lambda: None)  # listed nothing
        try:
            pause_from_start()
            made = [[i] for i in range(1_000)]  # the imports' objects, say
            op.prelist()
            assert gc.isenabled() and not gcpause._from_start
            walked = {id(o) for o in gc.get_objects()}
            assert not any(id(o) in walked for o in made)  # frozen
        finally:
            resume_after_start()
            gc.unfreeze()


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_freeze_all_freezes_what_a_paused_section_made_with_no_collection() -> None:
    """What a paused section made, out of every later collection's way (in none of the collector's
    generations), at once: no collection first, so its cyclic garbage is kept (frozen) too."""
    pause_collector()
    try:
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        freed = weakref.finalize(a, lambda: None)
        del a, b  # garbage only the cyclic collector frees
        kept = [[i] for i in range(1_000)]
        frozen = freeze_all()
    finally:
        resume_collector()
    try:
        assert freed.alive  # no collection: the cycle is kept, frozen
        assert frozen >= len(kept)
        walked = {id(o) for o in gc.get_objects()}
        assert not any(id(o) in walked for o in kept)
        gc.collect()
        assert freed.alive  # no later collection walks it
    finally:
        gc.unfreeze()
        gc.collect()
