"""The image's Python dependencies, checked without a Docker engine: the Dockerfile installs the
metrics extra under constraints.txt on a base image of the exact Python the lock was resolved for,
every pin is exact and satisfies pyproject.toml, and the lock covers the whole dependency closure and
every third-party import of the operator and its metrics sources."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.locks import read_lock, walk_pinned_closure

ROOT = Path(__file__).resolve().parents[2]


def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


def _lock() -> tuple[str, dict[str, str]]:
    return read_lock("constraints.txt")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _image_requirements() -> list[Requirement]:
    project = _pyproject()
    reqs = [*project["project"]["dependencies"], *project["project"]["optional-dependencies"]["metrics"]]
    return [Requirement(r) for r in reqs]


def test_both_stages_use_the_exact_python_the_lock_was_resolved_for():
    python, _ = _lock()
    bases = [rest.split()[0] for op, rest in _instructions() if op == "FROM"]
    assert len(bases) == 2 and len(set(bases)) == 1, bases
    match = re.fullmatch(r"python:(\d+\.\d+\.\d+)-slim-[a-z]+(@sha256:[0-9a-f]{64})?", bases[0])
    assert match, f"{bases[0]} is not an exact python:X.Y.Z-slim-<debian> tag (optionally @sha256:...)"
    assert match.group(1) == python


def test_the_image_installs_the_metrics_extra_under_the_constraints():
    steps = _instructions()
    copies = " ".join(rest for op, rest in steps if op == "COPY")
    env = " ".join(rest for op, rest in steps if op == "ENV")
    installs = [rest for op, rest in steps if op == "RUN" and "pip install" in rest]
    assert len(installs) == 1, installs
    assert re.search(r"""(^|\s)['"]?\.\[metrics\]['"]?(\s|$)""", installs[0]), installs[0]
    constrained = re.search(r"PIP_CONSTRAINT=(\S+)", env) or re.search(
        r"(?:-c|--constraint)[ =](\S+)", installs[0]
    )
    assert constrained, "pip install runs without constraints"
    assert Path(constrained.group(1)).name == "constraints.txt" and "constraints.txt" in copies


def test_every_pin_satisfies_pyproject_and_the_build_backend_is_pinned():
    _, pins = _lock()
    build = [Requirement(r) for r in _pyproject()["build-system"]["requires"]]
    for req in [*_image_requirements(), *build]:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is not pinned"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"{name}=={pins[name]} does not satisfy {req}"
        )


def test_the_lock_covers_the_dependency_closure_of_the_metrics_extra():
    """Walks the installed distributions' metadata (the dev environment installs the metrics extra)."""
    assert walk_pinned_closure(_image_requirements(), lock="constraints.txt")


def test_every_third_party_import_of_the_image_is_pinned():
    _, pins = _lock()
    modules: dict[str, str] = {}
    for path in sorted((ROOT / "volsched").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in (
                    "volsched",
                    "volsched_dev",
                    "__future__",
                ):
                    modules.setdefault(top, str(path.relative_to(ROOT)))
    assert {"prometheus_api_client", "elasticsearch", "kopf"} <= set(modules)
    providers = metadata.packages_distributions()
    for module, where in sorted(modules.items()):
        dists = providers.get(module)
        assert dists, f"{where} imports {module}, which no installed distribution provides"
        assert any(canonicalize_name(d) in pins for d in dists), (
            f"{where} imports {module} ({dists}): not pinned"
        )


def test_the_runtime_stage_compiles_the_standard_librarys_bytecode_before_dropping_root():
    """The python:*-slim base images delete every ``.pyc`` under /usr/local as they are built (the standard
    library ships as source), and the operator runs with PYTHONDONTWRITEBYTECODE as a user who cannot
    write there: without a compile step of its own, every start of the image compiled each standard
    library module it imports from source. The final stage compiles /usr/local/lib/pythonX.Y (the
    installed packages too, where a copy's timestamps made theirs stale) before it drops root."""
    python, _ = _lock()
    steps = _instructions()
    final = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    user = next(i for i, (op, _) in enumerate(steps) if op == "USER" and i > final)
    minor = ".".join(python.split(".")[:2])
    compiles = [
        rest
        for op, rest in steps[final:user]
        if op == "RUN"
        and re.search(rf"-m compileall\b.*\s/usr/local/lib/python{re.escape(minor)}(\s|$)", rest)
    ]
    assert compiles, f"the runtime stage does not compile /usr/local/lib/python{minor} before USER"
