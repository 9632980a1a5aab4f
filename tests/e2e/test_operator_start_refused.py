"""``volsched run`` whose first requests the kube-apiserver refuses (real apiserver): credentials it does not
accept (401), a user not allowed to read or make the records' key Secret (403, the first request of a start)
or one allowed that but not to list what volsched watches (403) end the start in one line saying what was
refused and why, exit 2. The defects: the listing's ApiError ended the start in a traceback (exit 1), and so
did the key Secret's, once the start read it before the listing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.operator_fixtures import Kube, grant
from volsched_dev.devcluster import TEST_USER, LocalControlPlane

pytestmark = pytest.mark.cluster

#: The namespace whose Secrets the test user may read and make (in no other may it do anything).
KEYED = "refused-listing"


def _may_keep_the_key(mk: Kube) -> None:
    """The test user may get and create Secrets in :data:`KEYED`, and nothing else."""
    rules = [client.V1PolicyRule(api_groups=[""], resources=["secrets"], verbs=["get", "create"])]
    grant(mk.api, mk.namespace(KEYED), user=TEST_USER, name="record-key", rules=rules)


@pytest.mark.parametrize(
    "case", ["credentials not accepted", "not allowed to read the key", "not allowed to list"]
)
def test_a_start_whose_first_requests_are_refused_exits_2_saying_why(
    module_cluster: LocalControlPlane, mk: Kube, tmp_path: Path, case: str
) -> None:
    namespace = "volsched-system"
    if case == "credentials not accepted":
        kubeconfig = module_cluster.write_kubeconfig(tmp_path / "config", token="not-a-token-it-knows")
        starts = f"volsched run: the records' key, Secret {namespace}/volsched-record-key, could not be read"
        said = "(refused, 401: Unauthorized); the kubeconfig's credentials (or the service account's token)"
    elif case == "not allowed to read the key":  # (the test user has no RBAC)
        kubeconfig = module_cluster.write_kubeconfig(tmp_path / "config", TEST_USER)
        starts = f"volsched run: the records' key, Secret {namespace}/volsched-record-key, could not be read"
        said = f'User "{TEST_USER}" cannot get resource "secrets"'
    else:
        _may_keep_the_key(mk)
        namespace = KEYED
        kubeconfig = module_cluster.write_kubeconfig(tmp_path / "config", TEST_USER)
        starts = "volsched run: the first listing of "
        said = f'is forbidden: User "{TEST_USER}" cannot list resource'
    argv = ["run", "--kubeconfig", str(kubeconfig), "--namespace", namespace]
    argv += ["--metrics-host", "127.0.0.1", "--metrics-port", "0"]
    done = subprocess.run(
        [sys.executable, "-m", "volsched", *argv], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.rstrip("\n").rsplit("\n", 1)[-1]
    assert last.startswith(starts) and said in last, last
    if case == "not allowed to list":  # the key was made, and the start went on to the listing
        secret = mk.core.read_namespaced_secret("volsched-record-key", KEYED)
        assert secret.data and secret.data.get("key")
