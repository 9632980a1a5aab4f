"""The real ``helm`` CLI for the chart tests: built from its Go module by hack/helm/build.sh (cached in
~/.cache/volsched/helm), or taken from ``$VOLSCHED_HELM``. Without a Go toolchain the tests that need it
skip and say so; any other build failure fails them."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "volsched"
BUILD = ROOT / "hack" / "helm" / "build.sh"
NO_GO = 3  # build.sh's exit status when there is no Go toolchain


@functools.cache
def _build() -> tuple[int, str]:
    proc = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, check=False)
    out = proc.stdout.strip().splitlines()
    return proc.returncode, out[-1] if proc.returncode == 0 and out else proc.stderr[-2000:]


def helm_binary() -> Path:
    """The helm binary; skips the test when no Go toolchain can build it."""
    given = os.environ.get("VOLSCHED_HELM")
    if given:
        return Path(given)
    rc, out = _build()
    if rc == NO_GO:
        pytest.skip(f"helm is not available and cannot be built: {out.strip()}")
    if rc != 0:
        pytest.fail(f"hack/helm/build.sh failed (exit {rc}):\n{out}", pytrace=False)
    return Path(out)


def helm(
    *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # HELM_* dirs in a throwaway place: no repository config or cache of the user's is read or written.
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"volsched-helm-home-{os.getuid()}"
    dirs = {
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    proc = subprocess.run(
        [str(helm_binary()), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **dirs, **(env or {})},
        timeout=300,
    )
    if check and proc.returncode != 0:
        pytest.fail(f"helm {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}", pytrace=False)
    return proc


def template(
    *args: str, release: str = "volsched", namespace: str = "volsched-system"
) -> list[dict[str, Any]]:
    """``helm template`` of the chart, as objects."""
    out = helm("template", release, str(CHART), "--namespace", namespace, *args).stdout
    return [d for d in yaml.safe_load_all(out) if d]
