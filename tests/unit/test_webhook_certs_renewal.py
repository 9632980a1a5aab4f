"""What the webhook certificates' shared Secret holds over time (volsched.operator.certs.renewed): made
when missing or unusable, left alone while good, the server certificate renewed with a third of its life
left or a host name missing, a CA with a third of its life left followed by a new one that first only
joins the bundle and signs certificates once CA_GRACE has passed; expired CAs leave the bundle.

Shared by two operator processes on the real apiserver: tests/e2e/test_operator_webhook_replicas.py."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509

from volsched.operator import certs
from volsched.operator.certs import CA_GRACE, Issued, hosts_of, issue, new_ca, parse, renewed, signed_by

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SVC = ["hooks.ns.svc", "hooks.ns.svc.cluster.local"]


def made(
    *,
    ca_for: dt.timedelta = certs.CA_VALID_FOR,
    cert_for: dt.timedelta = certs.VALID_FOR,
    hosts: list[str] = SVC,
) -> dict[str, bytes]:
    ca, ca_key = new_ca(T0, ca_for)
    cert, key = issue(ca, ca_key, hosts, now=T0, valid_for=cert_for)
    return Issued(cas=(ca,), ca_key=ca_key, cert=cert, key=key).data()


def read(data: dict[str, bytes] | None) -> Issued:
    assert data is not None
    out = parse(data)
    assert out is not None
    return out


@pytest.mark.parametrize(
    "data",
    [None, {}, {"tls.crt": b"x", "tls.key": b"y", "ca.crt": b"z", "ca.key": b"w"}],
    ids=["no Secret", "empty", "garbage"],
)
def test_nothing_usable_gets_a_new_ca_and_a_certificate_for_the_hosts(data: dict[str, bytes] | None) -> None:
    out = read(renewed(data, SVC, now=T0))
    assert len(out.cas) == 1 and signed_by(out.cert, out.cas[0])
    assert hosts_of(out.cert) == SVC
    assert out.cert.not_valid_after_utc - T0 == certs.VALID_FOR
    assert out.cas[0].not_valid_after_utc - T0 == certs.CA_VALID_FOR


def test_another_replicas_key_pair_not_matching_is_unusable() -> None:
    a, b = made(), made()
    assert parse({**a, "tls.key": b["tls.key"]}) is None
    assert parse({**a, "ca.key": b["ca.key"]}) is None


@pytest.mark.parametrize(
    ("days", "renews"),
    [(0, False), (200, False), (243, False), (244, True), (400, True)],
    ids=["new", "200 days", "just over a third left", "under a third left", "expired"],
)
def test_the_certificate_is_renewed_with_a_third_of_its_life_left_by_the_same_ca(
    days: int, renews: bool
) -> None:
    data = made()
    now = T0 + dt.timedelta(days=days)
    out = renewed(data, SVC, now=now)
    if not renews:
        assert out is None
        return
    new, old = read(out), read(data)
    assert new.cas == old.cas and new.cert != old.cert and signed_by(new.cert, old.cas[0])
    assert new.cert.not_valid_after_utc == now + certs.VALID_FOR


def test_a_missing_host_gets_a_certificate_for_both_the_old_hosts_and_the_new() -> None:
    data = made(hosts=["a.ns.svc"])
    out = read(renewed(data, ["b.ns.svc"], now=T0 + dt.timedelta(hours=1)))
    assert hosts_of(out.cert) == ["b.ns.svc", "a.ns.svc"]
    assert renewed(out.data(), ["a.ns.svc"], now=T0 + dt.timedelta(hours=2)) is None  # no fight


def test_a_ca_near_its_end_is_followed_first_in_the_bundle_then_signs_after_the_grace() -> None:
    data = made(ca_for=dt.timedelta(days=30), cert_for=dt.timedelta(days=30))
    old = read(data)
    # 21 days in: the CA has under a third of its life left (the certificate too: the CA step comes first).
    now = T0 + dt.timedelta(days=21)
    step1 = read(renewed(data, SVC, now=now))
    assert len(step1.cas) == 2 and step1.cas[1] == old.cas[0]  # new first, old kept
    assert step1.cert == old.cert  # still served: replicas need the new bundle first
    # Within the grace: nothing more.
    assert renewed(step1.data(), SVC, now=now + CA_GRACE / 2) is None
    # After it: a certificate signed by the new CA.
    later = now + CA_GRACE + dt.timedelta(seconds=1)
    step2 = read(renewed(step1.data(), SVC, now=later))
    assert step2.cas == step1.cas and signed_by(step2.cert, step1.cas[0])
    assert not signed_by(step2.cert, old.cas[0])
    # The old CA expired: it leaves the bundle.
    step3 = read(renewed(step2.data(), SVC, now=T0 + dt.timedelta(days=31)))
    assert step3.cas == (step1.cas[0],) and step3.cert == step2.cert


def test_an_expired_ca_and_certificate_are_replaced_at_once() -> None:
    data = made(ca_for=dt.timedelta(days=1), cert_for=dt.timedelta(days=1))
    out = read(renewed(data, SVC, now=T0 + dt.timedelta(days=2)))
    assert len(out.cas) == 1 and signed_by(out.cert, out.cas[0])
    assert out.cert.not_valid_after_utc > T0 + dt.timedelta(days=2)


def test_the_bundle_holds_every_ca_as_pem() -> None:
    data = made(ca_for=dt.timedelta(days=30))
    out = renewed(data, SVC, now=T0 + dt.timedelta(days=21))
    assert out is not None
    assert len(x509.load_pem_x509_certificates(out["ca.crt"])) == 2


def test_the_files_kopf_reads_hold_the_secret_and_the_key_stays_private() -> None:
    f = certs._private_files()
    first = renewed(None, SVC, now=T0)
    assert first is not None
    certs.write_files(f, first)
    second = renewed(None, SVC, now=T0)  # another Secret: replaced whole
    assert second is not None
    certs.write_files(f, second)
    assert sorted(p.name for p in f.certfile.parent.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    assert (f.certfile.read_bytes(), f.pkeyfile.read_bytes(), f.cafile.read_bytes()) == (
        second["tls.crt"], second["tls.key"], second["ca.crt"],
    )  # fmt: skip
    assert f.pkeyfile.stat().st_mode & 0o077 == 0 and f.certfile.parent.stat().st_mode & 0o077 == 0
