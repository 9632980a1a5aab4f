"""The image's bytecode at start, checked without a Docker engine: which modules a start of the image
compiles from source (none, once its Dockerfile's compileall step runs).

The image's ``/usr/local`` is made again in a scratch directory from this machine's Python, which must be
the lock's (constraints.txt's header), as the Dockerfile makes it:

* the base, ``python:X.Y.Z-slim-<debian>``: the standard library with what docker-library/python's build
  deletes deleted (every ``test``, ``tests`` and ``idle_test`` directory, every ``.pyc`` and ``.pyo``,
  ``libpython*.a``), and the pip, setuptools and ``_distutils_hack`` it installs with ``--no-compile``;
* the build stage's ``pip install --prefix=/install '.[metrics]'``: volsched's package as its wheel
  has it (and a console script), compiled as pip compiles what it installs, and the distributions of
  its closure copied from this checkout's ``.venv`` by their RECORD with the bytecode pip compiled
  there, their times kept (as ``COPY --from`` keeps them); a version that differs from
  constraints.txt's is reported;
* the runtime stage: the Dockerfile's own ``RUN python -m compileall ...`` line, with ``/usr/local``
  read as the scratch directory, run as the build runs it (its exit status is the build's).

Then, as the image runs it: as a user who cannot write there (``nobody``), with the Dockerfile's ``ENV``
(``PYTHONDONTWRITEBYTECODE``), ``PYTHONVERBOSE`` on, counting the modules whose code came from a
``.py`` rather than its ``.pyc``: for the imports of ``volsched run`` to ready and after it, and with
``--cluster`` for a whole ``volsched run`` on a local control plane, from its start until the imports
after ready are done. Each twice: without the compileall step (the image before 9a5be0a) and with it.
The imports' CPU (least of ``--runs``) beside.

    python hack/image/bytecode.py [--cluster] [--runs 5] [--keep DIR]

What this cannot show: the base image's own files (read from its Dockerfile, not from the image), a
``COPY`` that did not keep times (the compileall step recompiles such files anyway), the image's
build itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534
#: What ``volsched run`` imports by ready (:mod:`volsched.cli`'s ``_run``) and after it (the operator's
#: ``after_ready``, with the webhooks' modules).
IMPORTS = (
    "import volsched.cli, volsched.gcpause, volsched.kube.early, volsched.operator; "
    "import aiohttp.web, volsched.operator.kopfrun, volsched.operator.certs"
)
TIMED = (
    "import gc, time; gc.disable(); t = time.thread_time(); "
    "import volsched.cli, volsched.gcpause, volsched.kube.early, volsched.operator; "
    "print(time.thread_time() - t)"
)
#: ``PYTHONVERBOSE``'s line for a module whose code was compiled from its source.
FROM_SOURCE = re.compile(r"^# code object from (/\S+\.py)$", re.M)


def _dockerfile() -> tuple[list[str], dict[str, str]]:
    """The runtime stage's RUN lines and the ENV it runs with."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    steps = [line.strip().partition(" ") for line in text.splitlines() if line.strip() and line[0] != "#"]
    final = max(i for i, (op, _, _) in enumerate(steps) if op.upper() == "FROM")
    runs = [rest for op, _, rest in steps[final:] if op.upper() == "RUN"]
    env: dict[str, str] = {}
    for op, _, rest in steps[final:]:
        if op.upper() == "ENV":
            env.update(pair.split("=", 1) for pair in rest.split())  # type: ignore[misc]
    return runs, env


def _closure() -> set[str]:
    """The distributions ``'.[metrics]'`` installs (canonical names), walked through this environment's
    metadata."""
    env: dict[str, Any] = dict(default_environment())
    todo = [(Requirement(r), "metrics") for r in metadata.requires("volsched") or []]
    seen: set[tuple[str, str]] = set()  # (distribution, extra) walked
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
            continue
        for wanted in ("", *sorted(req.extras)):
            if (canonicalize_name(req.name), wanted) not in seen:
                seen.add((canonicalize_name(req.name), wanted))
                todo.extend((Requirement(r), wanted) for r in metadata.requires(req.name) or [])
    return {name for name, _ in seen}


def _base(prefix: Path) -> None:
    """The base image's /usr/local: this Python, less what docker-library/python's build deletes."""
    base = Path(sys.base_prefix)
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    (prefix / "bin").mkdir(parents=True)
    shutil.copy2(base / "bin" / minor, prefix / "bin" / minor)
    (prefix / "lib").mkdir()
    for lib in (base / "lib").glob("libpython*.so*"):
        shutil.copy2(lib, prefix / "lib" / lib.name, follow_symlinks=True)
    deleted = shutil.ignore_patterns(
        "test", "tests", "idle_test", "*.pyc", "*.pyo", "__pycache__", "site-packages"
    )
    shutil.copytree(base / "lib" / minor, prefix / "lib" / minor, ignore=deleted, symlinks=True)
    site = prefix / "lib" / minor / "site-packages"
    site.mkdir()
    source = base / "lib" / minor / "site-packages"
    for name in ("pip", "setuptools", "pkg_resources", "_distutils_hack"):  # installed with --no-compile
        shutil.copytree(source / name, site / name, ignore=deleted, symlinks=True)
    shutil.copy2(source / "distutils-precedence.pth", site)


def _install(install: Path, prefix: Path) -> list[str]:
    """The build stage's /install, then copied over /usr/local (times kept). Returns the versions that
    differ from constraints.txt's."""
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = install / "lib" / minor / "site-packages"
    # volsched as its wheel installs it (the package with its data; the Dockerfile copies volsched/ alone),
    # its console script, and its bytecode compiled as pip compiles what it installs.
    shutil.copytree(
        ROOT / "volsched", site / "volsched", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    (install / "bin").mkdir(parents=True)
    script = install / "bin" / "volsched"
    script.write_text(
        "#!/usr/local/bin/python\nimport sys\nfrom volsched.cli import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(site / "volsched")], check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""}, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    pins = dict(
        line.split("==", 1)
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    pins = {canonicalize_name(k): v for k, v in pins.items()}
    differ = []
    for name in sorted(_closure()):
        dist = metadata.distribution(name)
        if pins.get(name) != dist.version:
            differ.append(f"{name} {dist.version} (constraints.txt: {pins.get(name)})")
        for file in dist.files or []:
            src = Path(str(dist.locate_file(file)))
            if file.parts[0] == ".." or not src.is_file():
                continue  # scripts outside site-packages: not imported
            dst = site / file
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    subprocess.run(["cp", "-a", f"{install}/.", str(prefix)], check=True)
    return differ


def _compileall(prefix: Path, runs: list[str]) -> tuple[int, int]:
    """The runtime stage's compileall line run over ``prefix``: (exit status, .pyc files after)."""
    line = next(r for r in runs if "compileall" in r)
    argv = line.replace("/usr/local", str(prefix)).split()
    assert argv[0] == "python", line
    argv[0] = str(prefix / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}")
    done = subprocess.run(argv, env=_env(prefix, {}), capture_output=True, text=True)
    if done.returncode:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
    return done.returncode, sum(1 for _ in prefix.rglob("*.pyc"))


def _env(prefix: Path, image_env: dict[str, str]) -> dict[str, str]:
    return {
        "PATH": f"{prefix}/bin:/usr/bin:/bin",
        "LD_LIBRARY_PATH": str(prefix / "lib"),  # the image's python finds it by its rpath
        "HOME": "/nonexistent",
        **image_env,
    }


def _as_nobody(argv: list[str]) -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]


def _from_source(text: str, prefix: Path) -> dict[str, list[str]]:
    """The modules compiled from source, by where they live."""
    out: dict[str, list[str]] = {"standard library": [], "installed": [], "elsewhere": []}
    lib = f"{prefix}/lib/python{sys.version_info.major}.{sys.version_info.minor}/"
    for path in FROM_SOURCE.findall(text):
        where = (
            "installed" if path.startswith(lib + "site-packages/")
            else "standard library" if path.startswith(lib) else "elsewhere"
        )  # fmt: skip
        out[where].append(path)
    return out


def _imports(prefix: Path, image_env: dict[str, str], runs: int) -> tuple[dict[str, list[str]], list[float]]:
    python = str(prefix / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}")
    env = _env(prefix, image_env)
    done = subprocess.run(
        _as_nobody([python, "-c", IMPORTS]), env={**env, "PYTHONVERBOSE": "1"}, capture_output=True,
        text=True, check=True, cwd="/",
    )  # fmt: skip
    cpu = [
        float(subprocess.run(_as_nobody([python, "-c", TIMED]), env=env, capture_output=True, text=True,
                             check=True, cwd="/").stdout)
        for _ in range(runs)
    ]  # fmt: skip
    return _from_source(done.stderr, prefix), cpu


def _healthz(log: Path) -> bool:
    m = re.search(r"serving /healthz.* on [\d.]+:(\d+)", log.read_text(errors="replace"))
    if m is None:
        return False
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/healthz", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def _run(prefix: Path, image_env: dict[str, str], kubeconfig: Path, work: Path) -> dict[str, list[str]]:
    """``volsched run`` as the image runs it, from its start until the imports after ready are done."""
    python = str(prefix / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}")
    log = work / f"run-{time.monotonic_ns()}.log"
    argv = [
        python, str(prefix / "bin" / "volsched"), "run", "--kubeconfig", str(kubeconfig),
        "--namespace", "volsched-system", "--metrics-host", "127.0.0.1", "--metrics-port", "0",
    ]  # fmt: skip
    with log.open("w") as out:
        os.chown(log, NOBODY, NOBODY)
        proc = subprocess.Popen(
            _as_nobody(argv), env={**_env(prefix, image_env), "PYTHONVERBOSE": "1"}, stdout=out,
            stderr=subprocess.STDOUT, cwd="/",
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"volsched run ended ({proc.returncode}): {log}")
            text = log.read_text(errors="replace")
            if "after ready in" in text and _healthz(log):
                break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"volsched run not ready with its imports after ready in 120 s: {log}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return _from_source(log.read_text(errors="replace"), prefix)


@contextlib.contextmanager
def _cluster(work: Path) -> Iterator[Path]:
    """A local control plane with the operator's namespace and volsched's CRDs; its admin kubeconfig,
    copied where ``nobody`` can read it (removed with ``work``)."""
    sys.path.insert(0, str(ROOT))
    from kubernetes import client, utils

    from volsched_dev.devcluster import LocalControlPlane

    with LocalControlPlane() as cp:
        api = cp.api_client()
        core: Any = client.CoreV1Api(api)  # (given dicts: the client serialises them)
        core.create_namespace({"metadata": {"name": "volsched-system"}})
        for path in sorted((ROOT / "crds").glob("*.yaml")):
            utils.create_from_yaml(api, str(path))  # type: ignore[no-untyped-call]
        kubeconfig = work / "kubeconfig"
        text = cp.kubeconfig_path.read_text()
        ca = work / "ca.crt"
        shutil.copy2(cp.ca_cert_path, ca)
        kubeconfig.write_text(text.replace(str(cp.ca_cert_path), str(ca)))
        for path in (kubeconfig, ca):
            os.chown(path, NOBODY, NOBODY)
            path.chmod(0o600)
        yield kubeconfig


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cluster", action="store_true", help="also run volsched run on a local control plane")
    p.add_argument("--runs", type=int, default=5, help="timed imports of each (least and median shown)")
    p.add_argument("--keep", type=Path, default=None, help="make the trees here and keep them")
    args = p.parse_args()
    runs, image_env = _dockerfile()
    lock = re.search(r"python (\d+\.\d+\.\d+)", (ROOT / "constraints.txt").read_text())
    assert lock and lock.group(1) == ".".join(map(str, sys.version_info[:3])), "not the lock's Python"
    work = Path(tempfile.mkdtemp(prefix="volsched-image-", dir=args.keep))
    work.chmod(0o755)
    report: dict[str, object] = {"python": sys.version.split()[0], "image env": image_env}
    try:
        prefixes = {}
        for stage in ("without compileall", "with compileall"):
            prefix = work / stage.replace(" ", "-") / "usr" / "local"
            _base(prefix)
            report["versions differing from constraints.txt"] = _install(prefix.parent / "install", prefix)
            if stage == "with compileall":
                status, pycs = _compileall(prefix, runs)
                report["compileall"] = {"exit status": status, "pyc files after": pycs}
            prefixes[stage] = prefix
        for stage, prefix in prefixes.items():
            found, cpu = _imports(prefix, image_env, args.runs)
            cpu.sort()
            report[f"imports, {stage}"] = {
                "compiled from source": {k: len(v) for k, v in found.items()},
                "first of them": {k: v[:5] for k, v in found.items() if v},
                "CPU s to ready's imports, least and median": [
                    round(cpu[0], 3),
                    round(cpu[len(cpu) // 2], 3),
                ],
            }
        if args.cluster:
            with _cluster(work) as kubeconfig:
                for stage, prefix in prefixes.items():
                    found = _run(prefix, image_env, kubeconfig, work)
                    report[f"volsched run, {stage}"] = {
                        "compiled from source": {k: len(v) for k, v in found.items()},
                        "first of them": {k: v[:5] for k, v in found.items() if v},
                    }
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
