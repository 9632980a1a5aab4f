"""``volsched run`` against a server that answers 404 listing a kind every kube-apiserver serves (Pods,
Namespaces: :data:`volsched.kube.lister.SERVED_EVERYWHERE`): not a kube-apiserver, or the kubeconfig's
address has a path it should not. The start ends in one line saying the kind is not served there, exit 2
(real apiserver, behind a proxy answering that kind's listings 404: fault injection). The defects (note18
Found 9): a 404 for Pods said "refused", and one for Namespaces was warned as "is the CRD installed?" and
the start went on, synced without them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.faultproxy import Answer, FaultProxy, status
from tests.e2e.operator_fixtures import OPERATOR_NS
from tests.e2e.slowproxy import kubeconfig_via
from volsched_dev.devcluster import LocalControlPlane

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("path", ["/api/v1/pods", "/api/v1/namespaces"])
def test_a_start_whose_first_listing_finds_a_core_kind_not_served_exits_2_saying_so(
    module_cluster: LocalControlPlane, tmp_path: Path, path: str
) -> None:
    def not_found(method: str, asked: str) -> Answer | None:
        if method == "GET" and asked.startswith(f"{path}?") and "watch=" not in asked:
            return 404, {}, status(404, "NotFound", "the server could not find the requested resource")
        return None

    proxy = FaultProxy(module_cluster.kubeconfig_path, not_found)
    try:
        kubeconfig = kubeconfig_via(module_cluster.kubeconfig_path, proxy.url, tmp_path / "config")
        argv = ["run", "--kubeconfig", str(kubeconfig), "--namespace", OPERATOR_NS]
        argv += ["--metrics-host", "127.0.0.1", "--metrics-port", "0"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "volsched", *argv], stderr=subprocess.PIPE, text=True, cwd=tmp_path
        )
        assert proc.stderr is not None
        lines: list[str] = []
        try:
            for line in proc.stderr:  # until it ends, or syncs without the kind (the defect: it went on)
                lines.append(line)
                if "cache synced" in line:
                    break
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    finally:
        proxy.close()
    said = "".join(lines)
    assert proc.returncode == 2, said
    assert "Traceback" not in said, said
    plural = path.rsplit("/", 1)[-1]
    last = said.rstrip("\n").rsplit("\n", 1)[-1]
    assert last == (
        f"volsched run: the first listing of {plural} found them not served (404: the server could not find "
        f"the requested resource) at {path}: every kube-apiserver serves them; is the kubeconfig's server a "
        "kube-apiserver, its address without a path?"
    ), said
    assert proxy.faulted, said  # (the listing was answered 404 by the proxy)
