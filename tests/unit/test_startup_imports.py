"""What starting the operator imports: libraries only some clusters need stay off the path to the first
session (each costs a few hundred ms of import under load, at every start)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Imported only when used: CEL (DRA selectors; its package imports its command line: prompt_toolkit,
#: typer, rich) and cryptography (the admission webhooks' certificates); kopf, imported once the
#: cache is synced (the operator's start, login and webhooks come after ready); and the Kubernetes client
#: with what its package imports (its kubeconfig loader's oauthlib and requests, its models' pydantic,
#: its HTTP pool's urllib3): volsched reads the kubeconfig itself and sends its own requests, and only
#: a kubeconfig it leaves to the client's loader (an exec plugin, say) or the custom metrics source
#: imports it; and aiohttp (its server and client, and their yarl and multidict), imported once the
#: cache is synced: the health answers and the reads before that go through the standard library; and
#: the usage collector.
LATER = (
    "cel", "prompt_toolkit", "typer", "cryptography", "kopf",
    "kubernetes", "pydantic", "oauthlib", "requests", "urllib3",
    "aiohttp", "yarl", "multidict",
    "volsched.metrics.collector",
)  # fmt: skip


@pytest.mark.parametrize("module", ["volsched.operator", "volsched.cli"])
def test_starting_the_operator_imports_no_library_only_some_clusters_need(module: str) -> None:
    probe = f"import sys, {module}; print(' '.join(m for m in {LATER!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == []


#: Imported after ready, at the sessions' first lull (the operator's ``after_ready``): prometheus_client
#: (the series are made then: what is counted before is kept by their stand-ins), and what only it
#: imports (wsgiref, its exposition's server).
AFTER_READY = ("prometheus_client", "wsgiref")


def test_making_the_operator_imports_nothing_it_imports_after_ready(tmp_path: Path) -> None:
    from tests.unit._cycle_harness import KUBECONFIG

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    probe = (
        "import sys, volsched.cli; from volsched.operator import Operator, Settings; "
        f"op = Operator(Settings(kubeconfig={str(kubeconfig)!r})); "
        "assert 'prometheus_client' in op.after_ready; "
        f"print(' '.join(m for m in {AFTER_READY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == []


#: Not imported before ``volsched run`` asks for the first pages (:mod:`volsched.kube.early`), on top of
#: those above: numpy and the operator itself, and tempfile, shutil (with bz2 and lzma) and
#: importlib.resources, which only a kubeconfig's ``-data`` fields and the bundled example need; the
#: operator's own import brings the first two later (http.server; prometheus_client, with its
#: urllib.request), off that path.
BEFORE_FIRST_PAGES = (
    *LATER,
    "prometheus_client",
    "urllib.request",
    "numpy",
    "volsched.operator",
    "tempfile",
    "shutil",
    "bz2",
    "lzma",
    "importlib.resources",
)


def test_volsched_run_asks_for_the_first_pages_before_importing_what_it_does_not_need_for_them() -> None:
    probe = (
        "import sys, volsched.cli; from volsched.kube import early; "
        f"print(' '.join(m for m in {BEFORE_FIRST_PAGES!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == []


def test_a_cel_selector_still_compiles_and_matches_once_used() -> None:
    from volsched.model.devices import compile_selector

    program = compile_selector('device.driver == "gpu.example.com"')
    assert not isinstance(program, str)
    assert isinstance(compile_selector("device.driver =="), str)  # the compile error's text


def test_volsched_commands_start_numpy_without_openblas_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """volsched asks numpy for no linear algebra: its commands set OpenBLAS to one thread (no threads
    made and spinning at numpy's import) before anything imports numpy, and keep a value already set."""
    from volsched import cli

    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "")  # undone after the test: unset again if it was
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    cli.main(["check-config", "/nonexistent/volsched.conf"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    cli.main(["check-config", "/nonexistent/volsched.conf"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
