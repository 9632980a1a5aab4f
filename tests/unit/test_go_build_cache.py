"""hack/*/build.sh and their shared hack/lib/gobuild.sh, with a stand-in ``go`` (``$VOLSCHED_GO``) that
writes empty executables and logs its calls, and each cache in a temporary directory: where the binaries
go (version and a hash of the inputs), that ``--print-dir`` builds nothing, that a cached build is not
redone, that other inputs get their own directory beside the first, ``--force``, and the exit statuses."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_GO = r"""#!/usr/bin/env bash
echo "$*" >>"$FAKE_GO_LOG"
if [[ "$1" == list ]]; then echo "$FAKE_GO_MODDIR"; exit 0; fi
shift
out=""; pkgs=()
while (($#)); do
  case "$1" in -o) out="$2"; shift 2 ;; -*) shift ;; *) pkgs+=("$1"); shift ;; esac
done
if [[ "$out" == */ ]]; then
  for p in "${pkgs[@]}"; do printf '#!/bin/sh\n' >"$out${p##*/}"; chmod +x "$out${p##*/}"; done
else
  printf '#!/bin/sh\n' >"$out"; chmod +x "$out"
fi
"""

# tool: (its cache variable, the option that only prints, the version directory's prefix, what it holds)
TOOLS = {
    "controlplane": (
        "VOLSCHED_BIN_CACHE",
        "--print-dir",
        "v1.37.",
        ["kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler"],
    ),
    "kwok": ("VOLSCHED_KWOK_CACHE", "--print-dir", "v0.", ["kwok"]),
    "kubeflow": (
        "VOLSCHED_KUBEFLOW_CACHE",
        "--print-dir",
        "v1.",
        ["training-operator", "crds/kubeflow.org_a.yaml"],
    ),
    "helm": ("VOLSCHED_HELM_CACHE", "--print-path", "v3.", ["helm"]),
}


class Env:
    def __init__(self, tmp: Path) -> None:
        self.cache = tmp / "cache"
        self.log = tmp / "go.log"
        self.go = tmp / "go"
        self.go.write_text(FAKE_GO)
        self.go.chmod(0o755)
        moddir = tmp / "module"
        (moddir / "manifests/base/crds").mkdir(parents=True)
        (moddir / "manifests/base/crds/kubeflow.org_a.yaml").write_text("kind: CustomResourceDefinition\n")
        self.vars = {"VOLSCHED_GO": str(self.go), "FAKE_GO_LOG": str(self.log), "FAKE_GO_MODDIR": str(moddir)}

    def run(self, script: Path, *args: str, cache_var: str, **extra: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **self.vars, cache_var: str(self.cache), **extra}
        return subprocess.run(
            ["bash", str(script), *args], capture_output=True, text=True, env=env, check=False
        )

    def go_calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def _last_line(proc: subprocess.CompletedProcess[str]) -> Path:
    assert proc.returncode == 0, proc.stderr
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_builds_once_into_the_directory_print_dir_names(env: Env, tool: str) -> None:
    cache_var, print_flag, prefix, produced = TOOLS[tool]
    script = ROOT / "hack" / tool / "build.sh"

    printed = _last_line(env.run(script, print_flag, cache_var=cache_var))
    directory = printed.parent if tool == "helm" else printed
    assert directory.parent == env.cache
    assert re.fullmatch(re.escape(prefix) + r"[0-9.]+-[0-9a-f]{12}", directory.name), directory.name
    assert not env.cache.exists() and env.go_calls() == []  # printing builds nothing

    assert _last_line(env.run(script, cache_var=cache_var)) == printed
    assert all(os.access(directory / name, os.R_OK) for name in produced)
    assert all(os.access(directory / name, os.X_OK) for name in produced if not name.endswith(".yaml"))
    builds = len(env.go_calls())
    assert builds >= 1

    assert _last_line(env.run(script, cache_var=cache_var)) == printed
    assert len(env.go_calls()) == builds  # cached: go is not run again

    assert _last_line(env.run(script, "--force", cache_var=cache_var)) == printed
    assert len(env.go_calls()) == 2 * builds
    assert sorted(p.name for p in env.cache.iterdir() if not p.name.startswith(".")) == [directory.name]


def test_other_inputs_build_beside_and_leave_the_first(env: Env, tmp_path: Path) -> None:
    """Two checkouts whose build inputs differ share one cache: each has its own directory."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "hack" / "lib", copy / "hack" / "lib")
    shutil.copytree(ROOT / "hack" / "kwok", copy / "hack" / "kwok")
    ours, theirs = ROOT / "hack/kwok/build.sh", copy / "hack/kwok/build.sh"
    first = _last_line(env.run(ours, cache_var="VOLSCHED_KWOK_CACHE"))
    assert _last_line(env.run(theirs, cache_var="VOLSCHED_KWOK_CACHE")) == first  # same inputs, same place

    with (copy / "hack/kwok/go.sum").open("a") as f:
        f.write("example.com/x v1.0.0 h1:changed=\n")
    second = _last_line(env.run(theirs, cache_var="VOLSCHED_KWOK_CACHE"))
    assert second != first and second.parent == first.parent
    assert second.name.split("-")[0] == first.name.split("-")[0]  # same version, another stamp
    assert (first / "kwok").is_file() and (second / "kwok").is_file()
    assert (first / ".stamp").read_text() != (second / ".stamp").read_text()
    calls = len(env.go_calls())
    assert _last_line(env.run(ours, cache_var="VOLSCHED_KWOK_CACHE")) == first
    assert len(env.go_calls()) == calls  # the first checkout still finds its own, untouched


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_exit_3_without_go_and_2_on_a_bad_argument(env: Env, tool: str) -> None:
    cache_var = TOOLS[tool][0]
    script = ROOT / "hack" / tool / "build.sh"
    proc = env.run(script, cache_var=cache_var, VOLSCHED_GO=str(env.go.parent / "no-go-here"))
    assert proc.returncode == 3, proc.stderr
    assert "no-go-here is not an executable" in proc.stderr
    assert proc.stdout == ""
    proc = env.run(script, "--bogus", cache_var=cache_var)
    assert proc.returncode == 2 and "unknown argument: --bogus" in proc.stderr
    assert env.go_calls() == []
