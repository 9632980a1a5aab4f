"""The local control plane's readiness probe while kube-apiserver is still writing its own serving
certificate: a certificate file that exists but is empty or cut short is "not ready yet", asked again,
not an error that ends the start (seen as X509 NO_CERTIFICATE_OR_CRL_FOUND in a benchmark's start)."""

from __future__ import annotations

from pathlib import Path

import pytest

from volsched_dev.devcluster import LocalControlPlane


@pytest.mark.parametrize("content", [b"", b"-----BEGIN CERTIFICATE-----\nMIIB"])
def test_a_serving_certificate_being_written_is_not_ready_yet(tmp_path: Path, content: bytes) -> None:
    cp = LocalControlPlane()
    cp.ca_cert_path = tmp_path / "apiserver.crt"
    cp.ca_cert_path.write_bytes(content)
    cp.host = "https://127.0.0.1:1"
    assert cp._apiserver_ready() is False
