"""Every connection made with the same TLS settings shares one SSLContext (each made its own, reading the
CA, the client's certificate and key again: about thirty before the cache is synced); a setting or a
file rewritten since (a rotated certificate) makes another, and the context of ``assert_hostname:
false`` is another than the shared one, which keeps checking the name."""

from __future__ import annotations

import datetime
import os
import ssl
import threading
from pathlib import Path

import pytest

from volsched.kube import kubeconfig
from volsched.kube.kubeconfig import AnySettings, ClientConfig, tls_context
from volsched.kube.rest import _Aio
from volsched.operator import certs

NOW = datetime.datetime.now(datetime.UTC)


def write_ca(path: Path) -> None:
    """A new CA's certificate (rewritten at once, the file's time may not have moved: its size and
    inode may not either, so the time is moved on by hand, as a rotation a second later would)."""
    before = os.stat(path).st_mtime_ns if path.exists() else 0
    cert, _ = certs.new_ca(NOW)
    path.write_bytes(certs._pem(cert))
    after = max(os.stat(path).st_mtime_ns, before + 1_000_000_000)
    os.utime(path, ns=(after, after))


def subjects(ctx: ssl.SSLContext) -> list[object]:
    return [c["serialNumber"] for c in ctx.get_ca_certs()]


def test_the_same_settings_share_one_context_and_other_settings_get_their_own(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    write_ca(ca)
    first = tls_context(ClientConfig("https://127.0.0.1:6443", ssl_ca_cert=str(ca)))
    again = tls_context(ClientConfig("https://127.0.0.1:6443", ssl_ca_cert=str(ca)))
    assert again is first
    assert first.check_hostname and first.verify_mode is ssl.CERT_REQUIRED
    assert len(first.get_ca_certs()) == 1  # the configuration's CA, not the system's

    unverified = tls_context(ClientConfig("https://127.0.0.1:6443", ssl_ca_cert=str(ca), verify_ssl=False))
    assert unverified is not first
    assert unverified.verify_mode is ssl.CERT_NONE and not unverified.check_hostname
    assert first.verify_mode is ssl.CERT_REQUIRED

    by_certificate = tls_context(
        ClientConfig("https://127.0.0.1:6443", ssl_ca_cert=str(ca)), check_hostname=False
    )
    assert by_certificate is not first and not by_certificate.check_hostname
    assert first.check_hostname  # the shared context is never changed


def test_a_ca_file_rewritten_makes_a_new_context_that_trusts_the_new_ca(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    write_ca(ca)
    cfg = ClientConfig("https://127.0.0.1:6443", ssl_ca_cert=str(ca))
    old = tls_context(cfg)
    write_ca(ca)
    new = tls_context(cfg)
    assert new is not old
    assert subjects(new) != subjects(old)
    assert tls_context(cfg) is new


def test_a_missing_ca_file_fails_every_time(tmp_path: Path) -> None:
    cfg = ClientConfig("https://127.0.0.1:6443", ssl_ca_cert=str(tmp_path / "gone.crt"))
    for _ in range(2):
        with pytest.raises(OSError):
            tls_context(cfg)


def test_assert_hostname_false_checks_the_certificate_but_not_the_name_and_leaves_the_shared_one(
    tmp_path: Path,
) -> None:
    ca = tmp_path / "ca.crt"
    write_ca(ca)
    cfg = ClientConfig("https://127.0.0.1:6443", ssl_ca_cert=str(ca))
    cfg.assert_hostname = False
    aio = _Aio(cfg, cfg.host)  # the client through aiohttp, which reads assert_hostname
    assert aio.tls is not None
    assert not aio.tls.check_hostname and aio.tls.verify_mode is ssl.CERT_REQUIRED
    shared = tls_context(ClientConfig("https://127.0.0.1:6443", ssl_ca_cert=str(ca)))
    assert shared.check_hostname and shared is not aio.tls


def test_threads_asking_at_once_share_the_context_being_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The early listings' threads start together: one context is made for them all (each made its own,
    a few ms of CPU each, while the operator imports)."""
    ca = tmp_path / "ca.crt"
    write_ca(ca)
    cfg = ClientConfig("https://127.0.0.1:6443", ssl_ca_cert=str(ca))
    making, go = threading.Event(), threading.Event()
    made: list[ssl.SSLContext] = []
    new = kubeconfig._new_tls_context

    def held(c: AnySettings) -> ssl.SSLContext:
        making.set()
        assert go.wait(60)
        made.append(new(c))
        return made[-1]

    monkeypatch.setattr(kubeconfig, "_new_tls_context", held)
    got: list[ssl.SSLContext] = []
    first = threading.Thread(target=lambda: got.append(tls_context(cfg)))
    first.start()
    try:
        assert making.wait(60)
        # While one is made, a thread asking for it waits for it (the lock is held through the making).
        assert kubeconfig._contexts_lock.locked()
        second = threading.Thread(target=lambda: got.append(tls_context(cfg)))
        second.start()
    finally:
        go.set()
    first.join(60)
    second.join(60)
    assert len(made) == 1 and len(got) == 2 and got[0] is got[1] is made[0]
