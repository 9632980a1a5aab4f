"""The development and test environment is pinned (constraints-dev.txt), the same on every machine: the
Makefile installs under the lock, the lock covers everything the tests install and agrees with the
image's (constraints.txt), and the environment these tests run in is the locked one."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.locks import ROOT, read_lock, walk_pinned_closure

BUILD_TOOLS = {"pip", "setuptools", "wheel"}  # pinned for the install itself, not imported by the tests


def _dev_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    reqs = [
        *project["project"]["dependencies"],
        *project["project"]["optional-dependencies"]["dev"],
        *project["build-system"]["requires"],
        "pip",
    ]
    return [Requirement(r) for r in reqs]


def _install_recipe() -> str:
    """The Makefile's rule for the .venv stamp: its prerequisites line and recipe lines."""
    text = (ROOT / "Makefile").read_text()
    match = re.search(r"^\$\(STAMP\):(.*)\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert match, "the Makefile has a rule for $(STAMP)"
    return match.group(1) + "\n" + match.group(2)


def test_the_makefile_installs_pip_and_the_dev_extra_under_the_dev_lock():
    prerequisites, recipe = _install_recipe().split("\n", 1)
    assert "constraints-dev.txt" in prerequisites.split(), "a changed lock reinstalls .venv"
    installs = [line for line in recipe.splitlines() if "pip install" in line]
    assert any(re.search(r"pip install (-q )?pip$", line) for line in installs), installs
    assert any(".[dev]" in line for line in installs), installs
    for line in installs:
        assert "--upgrade" not in line and "-U " not in line, f"{line.strip()}: upgrades past the lock"
        assert re.search(r"PIP_CONSTRAINT=\S*constraints-dev\.txt", line), (
            f"{line.strip()}: installs without the dev lock (PIP_CONSTRAINT also pins the isolated build)"
        )


def test_every_dev_requirement_is_pinned_and_satisfies_pyproject():
    _, pins = read_lock("constraints-dev.txt")
    for req in _dev_requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is not pinned in constraints-dev.txt"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"{name}=={pins[name]} does not satisfy {req}"
        )


def test_the_dev_lock_covers_the_dependency_closure_of_the_dev_extra():
    # The build backend lives in pip's isolated build, not in .venv: its dependencies are not walked.
    assert walk_pinned_closure(_dev_requirements(), lock="constraints-dev.txt", leaves=BUILD_TOOLS) > 20


def test_the_image_runs_the_versions_the_tests_ran():
    dev_python, dev = read_lock("constraints-dev.txt")
    image_python, image = read_lock("constraints.txt")
    assert dev_python == image_python
    assert set(image) <= set(dev), f"pinned for the image only: {sorted(set(image) - set(dev))}"
    differ = {name: (version, dev[name]) for name, version in image.items() if dev[name] != version}
    assert not differ, f"image pin vs dev pin: {differ}; `make constraints` resolves one under the other"


def test_the_environment_running_these_tests_is_the_locked_one():
    _, pins = read_lock("constraints-dev.txt")
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    stale = {
        name: (installed[name], version)
        for name, version in pins.items()
        if name not in BUILD_TOOLS - {"pip"} and installed.get(name, version) != version
    }
    missing = sorted(name for name in pins if name not in installed and name not in BUILD_TOOLS)
    if stale or missing:
        pytest.fail(
            f"installed vs locked: {stale}, not installed: {missing}; `make .venv/.installed` installs the lock"
        )
