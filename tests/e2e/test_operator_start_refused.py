"""``volsched run`` whose first listing the kube-apiserver refuses (real apiserver): credentials it does not
accept (401) or a user not allowed to list what volsched watches (403) end the start in one line saying
which listing and why, exit 2. The defect: the listing's ApiError ended the start in a traceback (exit 1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from volsched_dev.devcluster import TEST_USER, LocalControlPlane

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("case", ["credentials not accepted", "not allowed to list"])
def test_a_start_whose_first_listing_is_refused_exits_2_saying_why(
    module_cluster: LocalControlPlane, tmp_path: Path, case: str
) -> None:
    if case == "credentials not accepted":
        kubeconfig = module_cluster.write_kubeconfig(tmp_path / "config", token="not-a-token-it-knows")
        said = (
            "was refused (401: Unauthorized); the kubeconfig's credentials (or the service account's token)"
        )
    else:  # (the test user has no RBAC)
        kubeconfig = module_cluster.write_kubeconfig(tmp_path / "config", TEST_USER)
        said = f'is forbidden: User "{TEST_USER}" cannot list resource'
    argv = ["run", "--kubeconfig", str(kubeconfig), "--metrics-host", "127.0.0.1", "--metrics-port", "0"]
    done = subprocess.run(
        [sys.executable, "-m", "volsched", *argv], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.rstrip("\n").rsplit("\n", 1)[-1]
    assert last.startswith("volsched run: the first listing of ") and said in last, last
