"""Starting a local control plane (volsched_dev/devcluster.py) for a fixture: one way, shared by every
fixture that starts its own. Not the fixtures themselves (conftest.py and operator_fixtures.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from volsched_dev.devcluster import ControlPlaneError, LocalControlPlane


@contextlib.contextmanager
def running(cp: LocalControlPlane) -> Iterator[LocalControlPlane]:
    """``cp`` started, stopped when the block ends. A control plane that does not start FAILS the test
    (never skips it): a missing control plane is a broken environment, not an optional feature."""
    try:
        cp.start()
    except ControlPlaneError as exc:
        pytest.fail(f"could not start the local control plane: {exc}", pytrace=False)
    try:
        yield cp
    finally:
        cp.stop()
